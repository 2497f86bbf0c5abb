// SPDX-License-Identifier: MIT
// The chat template's evaluator: runs the parsed statements over Jinja2's scoping rules (a for
// loop's body gets a fresh scope each iteration, so a `set` inside it is gone after; `if` makes
// none; a namespace is how a value leaves a loop) and records which output is trained.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "data/chat/chat_ast.hpp"

namespace fsdp::chat {

// What a render writes: the text, and the byte ranges of it that are trained.
struct Output {
  Text text;
  std::vector<std::pair<std::size_t, std::size_t>> trained;
};

// raise_exception(message) in the template: the message is the user's error.
class Raised : public Error {
 public:
  using Error::Error;
};

class Scope {
 public:
  explicit Scope(const Scope* parent) : parent_(parent) {}
  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value v) { vars_[name] = std::move(v); }

 private:
  const Scope* parent_;
  std::map<std::string, Value> vars_;
};

// Runs `body` with the variables in `globals`, appending to `out`. Throws chat::Raised for
// raise_exception, chat::Error "line L: ..." for other runtime errors.
void execute(const std::vector<Stmt>& body, Scope& globals, Output& out);

}  // namespace fsdp::chat
