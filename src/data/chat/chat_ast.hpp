// SPDX-License-Identifier: MIT
// The parsed chat template: expressions and statements as Jinja2's parser builds them
// (jinja2/nodes.py), reduced to the constructs this renderer supports.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/chat/chat_value.hpp"

namespace fsdp::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    literal,  // value
    name,     // name
    list,     // args: the items; name "tuple" for (a, b)
    dict,     // args: key, value, key, value, ...
    attr,     // args[0].name
    item,     // args[0][args[1]]
    slice,    // args[0][args[1]:args[2]:args[3]], a missing bound is nullptr
    call,     // args[0](args[1..], kwargs): a function's name, or a method (args[0] an attr)
    filter,   // args[0] | name(args[1..], kwargs)
    test,     // args[0] is [not] name(args[1..])
    neg,      // -args[0]
    pos,      // +args[0]
    not_,     // not args[0]
    binary,   // args[0] name args[1]: + - * / // % ** ~ and or
    compare,  // args[0] ops[0] args[1] ops[1] args[2] ... (chained, as Python)
    cond,     // args[1] if args[0] else args[2] (args[2] nullptr: undefined)
  };
  Kind kind;
  int line = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::string> kwnames;  // keyword arguments' names, kwargs in the same order
  std::vector<ExprPtr> kwargs;
  std::vector<std::string> ops;  // compare: "==", "!=", "<", "<=", ">", ">=", "in", "notin"
  bool negated = false;          // test: "is not"
};

struct Stmt {
  enum class Kind {
    text,       // text
    output,     // {{ expr }}
    if_,        // if expr: body, else else_body (an elif is an if alone in else_body)
    for_,       // for targets in expr [if filter]: body, else else_body
    set,        // set targets[0] = expr
    set_attr,   // set targets[0].targets[1] = expr (a namespace's attribute)
    set_block,  // set targets[0]: body's output
    break_,
    continue_,
    block,      // body (transformers' {% generation %}: rendered as is)
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr, filter;
  std::vector<std::string> targets;
  std::vector<Stmt> body, else_body;
};

}  // namespace fsdp::chat
