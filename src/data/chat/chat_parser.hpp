// SPDX-License-Identifier: MIT
// The chat template's parser: tokens to statements, following Jinja2's grammar and operator
// precedence (jinja2/parser.py). A construct the renderer does not support is refused here
// with chat::Error "<construct> at line L is not supported".
#pragma once
#include <vector>

#include "data/chat/chat_ast.hpp"
#include "data/chat/chat_lexer.hpp"

namespace fsdp::chat {

std::vector<Stmt> parse(const std::vector<Token>& tokens);

}  // namespace fsdp::chat
