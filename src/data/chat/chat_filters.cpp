// SPDX-License-Identifier: MIT
// Jinja2's filters and tests (jinja2/filters.py, jinja2/tests.py) that chat templates use, with
// transformers' tojson in place of Jinja2's. Anything else is refused by name at parse time.
#include <cmath>
#include <set>

#include "data/chat/chat_budget.hpp"
#include "data/chat/chat_builtins.hpp"
#include "data/chat/chat_lexer.hpp"
#include "data/chat/chat_operators.hpp"

namespace fsdp::chat {
namespace {

using K = Value::Kind;

const std::set<std::string>& filters() {
  static const std::set<std::string> names = {
      "abs", "capitalize", "count", "d", "default", "first", "float", "int", "items", "join",
      "last", "length", "list", "lower", "map", "reject", "rejectattr", "replace", "reverse",
      "select", "selectattr",
      "string", "tojson", "trim", "upper"};
  return names;
}

const std::set<std::string>& tests() {
  static const std::set<std::string> names = {
      "boolean", "defined", "divisibleby", "eq", "equalto", "even", "false", "float", "ge", "gt",
      "greaterthan", "in", "integer", "iterable", "le", "lessthan", "lt", "mapping", "ne", "none",
      "number", "odd", "sequence", "string", "true", "undefined"};
  return names;
}

std::int64_t length(const Value& v) {
  switch (v.kind) {
    case K::undefined: return 0;
    case K::string: return static_cast<std::int64_t>(code_point_starts(v.text.s).size()) - 1;
    case K::list: return static_cast<std::int64_t>(v.list->size());
    case K::dict: return static_cast<std::int64_t>(v.dict->size());
    default: throw Error("object of type '" + type_name(v) + "' has no len()");
  }
}

// Jinja2's make_attrgetter: "a.b.0" looked up part by part as items.
Value attribute_of(const Value& item, const std::string& path) {
  Value v = item;
  std::size_t from = 0;
  for (;;) {
    std::size_t dot = path.find('.', from);
    std::string part = path.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
    bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    v = get_item(v, digits ? Value::integer(std::stoll(part)) : Value::string(Text(part)));
    if (dot == std::string::npos) return v;
    from = dot + 1;
  }
}

JsonStyle json_style(const Args& args) {
  JsonStyle style;
  if (const Value* a = args.get(0, "ensure_ascii")) style.ensure_ascii = truthy(*a);
  if (const Value* indent = args.get(1, "indent"); indent && !indent->is(K::none)) {
    style.indented = true;
    if (indent->is(K::string)) style.indent = indent->text.s;
    else if (indent->is(K::integer)) {
      const std::uint64_t n = indent->i > 0 ? indent->i : 0;
      grow_string(0, n);  // the render's budget, before allocating
      style.indent = std::string(n, ' ');
    } else throw Error("tojson's indent must be an int or a string");
  }
  if (const Value* sep = args.get(2, "separators"); sep && !sep->is(K::none)) {
    if (!sep->is(K::list) || sep->list->size() != 2 || !(*sep->list)[0].is(K::string) ||
        !(*sep->list)[1].is(K::string))
      throw Error("tojson's separators must be two strings");
    style.has_separators = true;
    style.item_sep = (*sep->list)[0].text.s;
    style.key_sep = (*sep->list)[1].text.s;
  }
  if (const Value* s = args.get(3, "sort_keys")) style.sort_keys = truthy(*s);
  return style;
}

Value first_or_last(const Value& v, bool first) {
  List items = iterate(v);
  if (items.empty()) return Value::undefined("no first or last item: the sequence is empty");
  return first ? items.front() : items.back();
}

Value to_int(const Value& v, const Args& args) {
  const Value* fallback = args.get(0, "default");
  Value dflt = fallback ? *fallback : Value::integer(0);
  if (v.is(K::integer) || v.is(K::boolean)) return Value::integer(v.is(K::boolean) ? v.b : v.i);
  if (v.is(K::floating)) {
    if (!std::isfinite(v.f) || std::fabs(v.f) >= 9.2e18) return dflt;
    return Value::integer(static_cast<std::int64_t>(v.f));
  }
  if (!v.is(K::string)) return dflt;
  std::string s = strip(v.text, nullptr, true, true).s;
  if (args.get(1, "base")) throw Unsupported("int with a base");
  try {
    std::size_t used = 0;
    long long i = std::stoll(s, &used, 10);
    if (used == s.size()) return Value::integer(i);
    double d = std::stod(s, &used);
    if (used == s.size() && std::isfinite(d)) return Value::integer(static_cast<std::int64_t>(d));
  } catch (const std::exception&) {
  }
  return dflt;
}

}  // namespace

bool known_filter(const std::string& name) { return filters().count(name) > 0; }
bool known_test(const std::string& name) { return tests().count(name) > 0; }
bool known_function(const std::string& name) {
  return name == "raise_exception" || name == "namespace" || name == "range" || name == "dict" ||
         name == "strftime_now";
}

Value apply_filter(const std::string& name, const Value& v, const Args& args) {
  if (name == "default" || name == "d") {
    const Value* fallback = args.get(0, "default_value");
    const Value* boolean = args.get(1, "boolean");
    bool use = v.is(K::undefined) || (boolean && truthy(*boolean) && !truthy(v));
    return use ? (fallback ? *fallback : Value::string(Text())) : v;
  }
  if (name == "tojson") return Value::string(to_json(v, json_style(args)));
  if (name == "length" || name == "count") return Value::integer(length(v));
  if (name == "string") return Value::string(to_text(v));
  if (name == "trim") return Value::string(strip(to_text(v), args.get(0, "chars"), true, true));
  if (name == "lower" || name == "upper" || name == "capitalize")
    return Value::string(change_case(to_text(v), name[0], "filter '" + name + "'"));
  if (name == "first" || name == "last") return first_or_last(v, name == "first");
  if (name == "list") return Value::make_list(iterate(v));
  if (name == "reverse") {
    List items = iterate(v);
    if (v.is(K::string)) {
      Text t;
      for (auto it = items.rbegin(); it != items.rend(); ++it) t.append(it->text);
      return Value::string(std::move(t));
    }
    return Value::make_list(List(items.rbegin(), items.rend()));
  }
  if (name == "items") {
    if (v.is(K::undefined)) return Value::make_list({});
    if (!v.is(K::dict)) throw Error("items filter: can only get item pairs from a mapping");
    return call_method(v, "items", Args{});
  }
  if (name == "join") {
    const Value* sep = args.get(0, "d");
    const Value* attr = args.get(1, "attribute");
    Text out;
    bool first = true;
    for (const Value& item : iterate(v)) {
      if (!first && sep) out.append(to_text(*sep));
      first = false;
      out.append(to_text(attr ? attribute_of(item, to_text(*attr).s) : item));
    }
    return Value::string(std::move(out));
  }
  if (name == "replace") {
    Args m;
    m.positional = {Value::string(to_text(args.positional.size() > 0 ? args.positional[0] : Value())),
                    Value::string(to_text(args.positional.size() > 1 ? args.positional[1] : Value()))};
    if (const Value* count = args.get(2, "count"); count && !count->is(K::none)) m.positional.push_back(*count);
    if (args.positional.size() < 2) throw Error("replace takes old and new");
    return call_method(Value::string(to_text(v)), "replace", m);
  }
  if (name == "selectattr" || name == "rejectattr") {
    if (args.positional.empty()) throw Error(name + " takes an attribute name");
    std::string path = to_text(args.positional[0]).s;
    Args test_args;
    test_args.positional.assign(args.positional.begin() + std::min<std::size_t>(2, args.positional.size()),
                                args.positional.end());
    List kept;
    for (const Value& item : iterate(v)) {
      Value a = attribute_of(item, path);
      bool pass = args.positional.size() > 1
                      ? apply_test(to_text(args.positional[1]).s, a, test_args)
                      : truthy(a);
      if (pass == (name == "selectattr")) kept.push_back(item);
    }
    return Value::make_list(std::move(kept));
  }
  if (name == "select" || name == "reject") {  // items passing a test (or truthy)
    Args test_args;
    if (args.positional.size() > 1)
      test_args.positional.assign(args.positional.begin() + 1, args.positional.end());
    List kept;
    for (const Value& item : iterate(v)) {
      bool pass = args.positional.empty() ? truthy(item)
                                          : apply_test(to_text(args.positional[0]).s, item, test_args);
      if (pass == (name == "select")) kept.push_back(item);
    }
    return Value::make_list(std::move(kept));
  }
  if (name == "map") {
    const Value* attr = args.get(99, "attribute");
    List out;
    for (const Value& item : iterate(v)) {
      if (attr) {
        Value a = attribute_of(item, to_text(*attr).s);
        const Value* dflt = args.get(99, "default");
        out.push_back(a.is(K::undefined) && dflt ? *dflt : a);
      } else {
        if (args.positional.empty()) throw Error("map takes a filter name or attribute=");
        std::string f = to_text(args.positional[0]).s;
        if (!known_filter(f)) throw Unsupported("filter '" + f + "' in map");
        Args rest;
        rest.positional.assign(args.positional.begin() + 1, args.positional.end());
        rest.keyword = args.keyword;
        out.push_back(apply_filter(f, item, rest));
      }
    }
    return Value::make_list(std::move(out));
  }
  if (name == "int") return to_int(v, args);
  if (name == "float") {
    if (v.is_number()) return Value::floating(v.is(K::floating) ? v.f : v.is(K::boolean) ? v.b : v.i);
    if (v.is(K::string)) {  // Python's float() of a plain decimal; "inf", "1_0" and such refused
      std::string s = strip(v.text, nullptr, true, true).s;
      if (!s.empty() && s.find_first_not_of("0123456789.eE+-") == std::string::npos) {
        try {
          std::size_t used = 0;
          double d = std::stod(s, &used);
          if (used == s.size()) return Value::floating(d);
        } catch (const std::exception&) {
        }
      } else if (s.find_first_not_of("0123456789.eE+-") != std::string::npos &&
                 s.find_first_of("iInN_") != std::string::npos) {
        throw Unsupported("filter 'float' of \"" + s + "\"");
      }
    }
    const Value* fallback = args.get(0, "default");
    return fallback ? *fallback : Value::floating(0);
  }
  if (name == "abs") {
    if (v.is(K::floating)) return Value::floating(std::fabs(v.f));
    if (!v.is_number()) throw Error("bad operand type for abs(): '" + type_name(v) + "'");
    std::int64_t i = v.is(K::boolean) ? v.b : v.i;
    return i < 0 ? negate(Value::integer(i)) : Value::integer(i);
  }
  throw Unsupported("filter '" + name + "'");
}

bool apply_test(const std::string& name, const Value& v, const Args& args) {
  const Value* other = args.get(0, "other");
  auto need_other = [&]() -> const Value& {
    if (!other) throw Error("test '" + name + "' takes an argument");
    return *other;
  };
  if (name == "defined") return !v.is(K::undefined);
  if (name == "undefined") return v.is(K::undefined);
  if (name == "none") return v.is(K::none);
  if (name == "string") return v.is(K::string);
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is(K::integer);
  if (name == "float") return v.is(K::floating);
  if (name == "boolean") return v.is(K::boolean);
  if (name == "true") return v.is(K::boolean) && v.b;
  if (name == "false") return v.is(K::boolean) && !v.b;
  if (name == "mapping") return v.is(K::dict);
  if (name == "iterable" || name == "sequence")
    return v.is(K::string) || v.is(K::list) || v.is(K::dict) || v.is(K::undefined);
  if (name == "eq" || name == "equalto") return equal(v, need_other());
  if (name == "ne") return !equal(v, need_other());
  if (name == "in") return contains(need_other(), v);
  if (name == "lt" || name == "lessthan") return compare(v, need_other()) < 0;
  if (name == "le") return compare(v, need_other()) <= 0;
  if (name == "gt" || name == "greaterthan") return compare(v, need_other()) > 0;
  if (name == "ge") return compare(v, need_other()) >= 0;
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (!v.is(K::integer) && !v.is(K::boolean)) throw Error("test '" + name + "' takes an int");
    std::int64_t i = v.is(K::boolean) ? v.b : v.i;
    if (name == "odd") return i % 2 != 0;
    if (name == "even") return i % 2 == 0;
    const Value& d = need_other();
    if (!d.is(K::integer) || d.i == 0) throw Error("divisibleby takes a nonzero int");
    return i % d.i == 0;
  }
  throw Unsupported("test '" + name + "'");
}

}  // namespace fsdp::chat
