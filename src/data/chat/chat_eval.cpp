// SPDX-License-Identifier: MIT
// Statements and expressions of a parsed chat template, evaluated as Jinja2 evaluates them.
// Which output is trained (the SFT mask): strings read from an assistant message's content,
// reasoning_content and tool_calls are marked per byte (from_json), and the mark survives the
// string operations. Within one iteration of a for loop whose item is a message with role
// "assistant", the output from the first marked byte to the end of that iteration is trained:
// the role header the template writes first is not, the content and the end-of-turn token
// after it are. Output written into a `{% set x %}` block is not tracked (only its marks are).
#include "data/chat/chat_eval.hpp"

#include <algorithm>
#include <ctime>

#include "data/chat/chat_budget.hpp"
#include "data/chat/chat_builtins.hpp"
#include "data/chat/chat_operators.hpp"
#include "data/nesting.hpp"

namespace fsdp::chat {

const Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent_) {
    auto it = s->vars_.find(name);
    if (it != s->vars_.end()) return &it->second;
  }
  return nullptr;
}

namespace {

enum class Flow { normal, break_, continue_ };

bool is_assistant_message(const Value& v) {
  if (!v.is(Value::Kind::dict)) return false;
  const Value* role = v.find("role");
  return role && role->is(Value::Kind::string) && role->text.s == "assistant";
}

class Evaluator {
 public:
  Flow exec(const std::vector<Stmt>& body, Scope& scope, Output& out) {
    for (const Stmt& s : body) {
      Flow f = exec(s, scope, out);
      if (f != Flow::normal) return f;
    }
    return Flow::normal;
  }

  int line() const { return line_; }

 private:
  Flow exec(const Stmt& s, Scope& scope, Output& out) {
    line_ = s.line;
    spend(1);  // the render's work budget (chat_budget.hpp)
    switch (s.kind) {
      case Stmt::Kind::text: out.text.append(s.text); return Flow::normal;
      case Stmt::Kind::output: out.text.append(to_text(eval(*s.expr, scope))); return Flow::normal;
      case Stmt::Kind::if_:
        return exec(truthy(eval(*s.expr, scope)) ? s.body : s.else_body, scope, out);
      case Stmt::Kind::for_: return exec_for(s, scope, out);
      case Stmt::Kind::set: scope.set(s.targets[0], eval(*s.expr, scope)); return Flow::normal;
      case Stmt::Kind::set_attr: {
        const Value* ns = scope.find(s.targets[0]);
        if (!ns || !ns->is(Value::Kind::ns))
          throw Error("cannot assign attribute on non-namespace object '" + s.targets[0] + "'");
        check_namespace_name(s.targets[1]);
        Value v = eval(*s.expr, scope);
        // A namespace is the one value that changes after it is built: one held in another
        // could come to hold itself, and printing or freeing it would recurse without end.
        if (holds_namespace(v)) throw Unsupported("a namespace stored in a namespace");
        for (auto& [k, item] : *ns->dict)
          if (k.s == s.targets[1]) {
            item = std::move(v);
            return Flow::normal;
          }
        ns->dict->emplace_back(Text(s.targets[1]), std::move(v));
        return Flow::normal;
      }
      case Stmt::Kind::set_block: {
        Output captured;
        Scope inner(&scope);
        exec(s.body, inner, captured);
        scope.set(s.targets[0], Value::string(std::move(captured.text)));
        return Flow::normal;
      }
      case Stmt::Kind::break_: return Flow::break_;
      case Stmt::Kind::continue_: return Flow::continue_;
      case Stmt::Kind::block: return exec(s.body, scope, out);
    }
    return Flow::normal;
  }

  void bind(Scope& scope, const std::vector<std::string>& targets, const Value& item) {
    if (targets.size() == 1) {
      scope.set(targets[0], item);
      return;
    }
    if (!item.is(Value::Kind::list) && !item.is(Value::Kind::string))
      throw Error("cannot unpack non-iterable " + type_name(item) + " object");
    List parts = iterate(item);
    if (parts.size() != targets.size())
      throw Error("cannot unpack " + std::to_string(parts.size()) + " values into " +
                  std::to_string(targets.size()) + " names");
    for (std::size_t k = 0; k < targets.size(); ++k) scope.set(targets[k], parts[k]);
  }

  Flow exec_for(const Stmt& s, Scope& scope, Output& out) {
    List items = iterate(eval(*s.expr, scope));
    if (s.filter) {  // "for x in xs if cond": the loop sees only the items that pass
      List kept;
      for (const Value& item : items) {
        Scope test(&scope);
        bind(test, s.targets, item);
        if (truthy(eval(*s.filter, test))) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      Scope inner(&scope);
      return exec(s.else_body, inner, out);  // a break here belongs to an enclosing loop
    }
    const auto n = static_cast<std::int64_t>(items.size());
    for (std::int64_t k = 0; k < n; ++k) {
      // An iteration builds `loop` (a dict of 11) and copies its item, and the previous and
      // next ones into it: 16 units, so three nested range(99999) loops end after 2M empty
      // iterations, in 3 s here (1.5 us each).
      spend(16);
      for (std::int64_t j = std::max<std::int64_t>(k - 1, 0); j <= k + 1 && j < n; ++j)
        copy_value(items[j]);
      Scope inner(&scope);
      bind(inner, s.targets, items[k]);
      Value none = Value::undefined("there is no previous or next item");
      inner.set("loop", Value::make_dict({
                            {"index", Value::integer(k + 1)},
                            {"index0", Value::integer(k)},
                            {"revindex", Value::integer(n - k)},
                            {"revindex0", Value::integer(n - k - 1)},
                            {"first", Value::boolean(k == 0)},
                            {"last", Value::boolean(k == n - 1)},
                            {"length", Value::integer(n)},
                            {"depth", Value::integer(1)},
                            {"depth0", Value::integer(0)},
                            {"previtem", k > 0 ? items[k - 1] : none},
                            {"nextitem", k + 1 < n ? items[k + 1] : none},
                        }));
      std::size_t start = out.text.s.size();
      Flow f = exec(s.body, inner, out);
      if (is_assistant_message(items[k])) mark_trained(out, start);
      if (f == Flow::break_) break;
    }
    return Flow::normal;
  }

  static void mark_trained(Output& out, std::size_t start) {
    const Text& t = out.text;
    for (std::size_t b = start; b < t.s.size(); ++b)
      if (t.marked(b)) {
        out.trained.emplace_back(b, t.s.size());
        return;
      }
  }

  Args eval_args(const Expr& e, std::size_t first, Scope& scope) {
    Args a;
    for (std::size_t k = first; k < e.args.size(); ++k) a.positional.push_back(eval(*e.args[k], scope));
    for (std::size_t k = 0; k < e.kwargs.size(); ++k)
      a.keyword.emplace_back(e.kwnames[k], eval(*e.kwargs[k], scope));
    return a;
  }

  // Every expression costs a step, and its value what copying it costs; a value whose lists and
  // dicts nest past the limit (built in a loop: `set ns.x = [ns.x]`) is refused before anything
  // recurses over it.
  Value eval(const Expr& e, Scope& scope) {
    spend(1);
    Value v = eval_node(e, scope);
    copy_value(v);
    if (v.depth > kMaxNesting) {
      line_ = e.line;
      throw Error("a value " + nested_too_deep());
    }
    return v;
  }

  // transformers 5's namespace refuses underscore-prefixed names (a sandbox guard); so does this.
  static void check_namespace_name(const std::string& name) {
    if (!name.empty() && name[0] == '_')
      throw Error("chat templates cannot store underscore-prefixed attributes on a namespace, but got '" +
                  name + "' (transformers refuses it too)");
  }

  static bool holds_namespace(const Value& v) {
    if (v.is(Value::Kind::ns)) return true;
    if (v.is(Value::Kind::list))
      for (const Value& item : *v.list)
        if (holds_namespace(item)) return true;
    if (v.is(Value::Kind::dict))
      for (const auto& [k, item] : *v.dict)
        if (holds_namespace(item)) return true;
    return false;
  }

  Value eval_node(const Expr& e, Scope& scope) {
    line_ = e.line;
    using EK = Expr::Kind;
    switch (e.kind) {
      case EK::literal: return e.value;
      case EK::name: {
        const Value* v = scope.find(e.name);
        if (v) return *v;
        // A function is defined (Llama 3.2 asks `strftime_now is defined`); it prints as Python's.
        if (known_function(e.name)) return Value::string(Text("<function " + e.name + ">"));
        return Value::undefined("'" + e.name + "' is undefined");
      }
      case EK::list: {
        List items;
        for (const ExprPtr& a : e.args) items.push_back(eval(*a, scope));
        return e.name == "tuple" ? Value::make_tuple(std::move(items)) : Value::make_list(std::move(items));
      }
      case EK::dict: {
        Dict items;
        for (std::size_t k = 0; k + 1 < e.args.size(); k += 2) {
          Value key = eval(*e.args[k], scope);
          if (!key.is(Value::Kind::string))
            throw Error("a dict key of type " + type_name(key) + " is not supported");
          Value v = eval(*e.args[k + 1], scope);
          bool replaced = false;
          for (auto& [existing, item] : items)
            if (existing.s == key.text.s) item = v, replaced = true;
          if (!replaced) items.emplace_back(key.text, std::move(v));
        }
        return Value::make_dict(std::move(items));
      }
      case EK::attr: return get_attr(eval(*e.args[0], scope), e.name);
      case EK::item: return get_item(eval(*e.args[0], scope), eval(*e.args[1], scope));
      case EK::slice: {
        Value missing = Value::none();
        Value obj = eval(*e.args[0], scope);
        return slice(obj, e.args[1] ? eval(*e.args[1], scope) : missing,
                     e.args[2] ? eval(*e.args[2], scope) : missing,
                     e.args[3] ? eval(*e.args[3], scope) : missing);
      }
      case EK::call: return call(e, scope);
      case EK::filter: {
        Value input = eval(*e.args[0], scope);
        Args a = eval_args(e, 1, scope);
        line_ = e.line;
        return apply_filter(e.name, input, a);
      }
      case EK::test: {
        Value input = eval(*e.args[0], scope);
        Args a = eval_args(e, 1, scope);
        line_ = e.line;
        return Value::boolean(apply_test(e.name, input, a) != e.negated);
      }
      case EK::neg: return negate(eval(*e.args[0], scope));
      case EK::pos: return binary_op("+", Value::integer(0), eval(*e.args[0], scope));
      case EK::not_: return Value::boolean(!truthy(eval(*e.args[0], scope)));
      case EK::binary: {
        Value a = eval(*e.args[0], scope);
        if (e.name == "and") return truthy(a) ? eval(*e.args[1], scope) : a;
        if (e.name == "or") return truthy(a) ? a : eval(*e.args[1], scope);
        Value b = eval(*e.args[1], scope);
        line_ = e.line;
        return binary_op(e.name, a, b);
      }
      case EK::compare: {
        Value left = eval(*e.args[0], scope);
        for (std::size_t k = 0; k < e.ops.size(); ++k) {
          Value right = eval(*e.args[k + 1], scope);
          line_ = e.line;
          if (!compare_one(e.ops[k], left, right)) return Value::boolean(false);
          left = std::move(right);
        }
        return Value::boolean(true);
      }
      case EK::cond:
        if (truthy(eval(*e.args[0], scope))) return eval(*e.args[1], scope);
        return e.args[2] ? eval(*e.args[2], scope) : Value::undefined("the condition was false");
    }
    return Value::none();
  }

  static bool compare_one(const std::string& op, const Value& a, const Value& b) {
    if (op == "==") return equal(a, b);
    if (op == "!=") return !equal(a, b);
    if (op == "in") return contains(b, a);
    if (op == "notin") return !contains(b, a);
    if (a.is(Value::Kind::undefined)) fail_undefined(a);
    if (b.is(Value::Kind::undefined)) fail_undefined(b);
    int c = compare(a, b);
    return op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
  }

  Value call(const Expr& e, Scope& scope) {
    const Expr& callee = *e.args[0];
    if (callee.kind == Expr::Kind::attr) {
      Value self = eval(*callee.args[0], scope);
      Args a = eval_args(e, 1, scope);
      line_ = e.line;
      if (self.is(Value::Kind::undefined)) fail_undefined(self);
      return call_method(self, callee.name, a);
    }
    Args a = eval_args(e, 1, scope);
    line_ = e.line;
    const std::string& f = callee.name;
    if (f == "raise_exception") {
      const Value* msg = a.get(0, "message");
      throw Raised(msg ? to_text(*msg).s : "");
    }
    if (f == "strftime_now") {  // transformers: datetime.now().strftime(format), local time
      const Value* format = a.get(0, "format");
      if (!format || !format->is(Value::Kind::string)) throw Error("strftime_now takes a format");
      std::time_t now = std::time(nullptr);
      std::tm local{};
      localtime_r(&now, &local);
      // strftime's 0 means "did not fit" or "empty": a character appended to the format makes
      // it only the former, and the buffer grows until the date fits (issue 63: past 255 bytes
      // the date was rendered as "").
      if (format->text.s.find('\0') != std::string::npos)
        throw Error("strftime_now: the format holds a NUL byte");
      const std::string fmt = format->text.s + "|";
      for (std::size_t size = 256; size <= (std::size_t(1) << 20); size *= 4) {
        std::string buf(size, '\0');
        const std::size_t n = std::strftime(buf.data(), size, fmt.c_str(), &local);
        if (n > 0) return Value::string(Text(buf.substr(0, n - 1)));
      }
      throw Error("strftime_now: the formatted date is over 1 MiB");
    }
    if (f == "namespace" || f == "dict") {
      Dict d;
      if (!a.positional.empty()) {
        if (!a.positional[0].is(Value::Kind::dict))
          throw Error(f + "() takes a dict as its positional argument");
        d = *a.positional[0].dict;
      }
      for (const auto& [k, v] : a.keyword) {
        bool replaced = false;
        for (auto& [existing, item] : d)
          if (existing.s == k) item = v, replaced = true;
        if (!replaced) d.emplace_back(Text(k), v);
      }
      if (f == "namespace")
        for (const auto& [k, v] : d) check_namespace_name(k.s);
      return f == "dict" ? Value::make_dict(std::move(d)) : Value::make_namespace(std::move(d));
    }
    // range(stop), range(start, stop[, step])
    std::int64_t bounds[3] = {0, 0, 1};
    std::size_t n = a.positional.size();
    if (n < 1 || n > 3 || !a.keyword.empty()) throw Error("range() takes 1 to 3 arguments");
    for (std::size_t k = 0; k < n; ++k) {
      const Value& v = a.positional[k];
      if (!v.is(Value::Kind::integer) && !v.is(Value::Kind::boolean))
        throw Error("range() takes integers, not " + type_name(v));
      bounds[n == 1 ? 1 : k] = v.is(Value::Kind::boolean) ? v.b : v.i;
    }
    if (bounds[2] == 0) throw Error("range() arg 3 must not be zero");
    List items;
    for (std::int64_t v = bounds[0]; bounds[2] > 0 ? v < bounds[1] : v > bounds[1]; v += bounds[2]) {
      if (items.size() >= 100000) throw Error("range() of more than 100000 items (Jinja2's limit)");
      items.push_back(Value::integer(v));
    }
    return Value::make_list(std::move(items));
  }

  int line_ = 0;
};

}  // namespace

void execute(const std::vector<Stmt>& body, Scope& globals, Output& out) {
  Evaluator ev;
  RenderBudget budget;
  try {
    ev.exec(body, globals, out);
  } catch (const Raised&) {
    throw;
  } catch (const Unsupported& e) {
    throw Error(std::string(e.what()) + " at line " + std::to_string(ev.line()) + " is not supported");
  } catch (const Error& e) {
    throw Error("line " + std::to_string(ev.line()) + ": " + e.what());
  }
}

}  // namespace fsdp::chat
