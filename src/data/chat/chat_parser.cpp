// SPDX-License-Identifier: MIT
// Jinja2's recursive-descent grammar, lowest precedence first:
//   a if c else b  <  or  <  and  <  not  <  comparisons, in, not in  <  + -  <  ~
//   <  * / // %  <  **  <  unary - +  <  primary with .attr [item] (call)  then | filter, is test
// (a filter binds tighter than any operator: 'a' + x | trim is 'a' + (x | trim)).
// Over 450 lines, as one file: the grammar is one recursive-descent class whose statement and
// expression rules call each other and share the token cursor; cut in two, its private state
// would have to move into a header that only these two files read.
#include "data/chat/chat_parser.hpp"

#include <initializer_list>

#include "data/chat/chat_builtins.hpp"
#include "data/nesting.hpp"

namespace fsdp::chat {
namespace {

using K = Token::Kind;

class Parser {
 public:
  explicit Parser(const std::vector<Token>& t) : t_(t) {}

  std::vector<Stmt> run() {
    std::vector<Stmt> body = parse_body({}).first;
    return body;
  }

 private:
  const Token& cur() const { return t_[i_]; }
  const Token& peek(std::size_t n = 1) const { return t_[std::min(i_ + n, t_.size() - 1)]; }
  bool is_op(const char* o) const { return cur().kind == K::op && cur().value == o; }
  bool is_name(const char* n) const { return cur().kind == K::name && cur().value == n; }
  const Token& next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("syntax error at line " + std::to_string(cur().line) + ": " + what);
  }
  // The depth of the tree being built (data/nesting.hpp): one level per rule that recurses (a
  // nested block, expression, `not`, unary sign) and per link of the chains the loops build
  // (a + b + c, x | f | g, a.b[c]), since the evaluator and the destructors recurse over both.
  // A Level gives back what it added when its rule returns.
  class Level {
   public:
    explicit Level(Parser& p) : p_(p) {}
    Level(const Level&) = delete;
    Level& operator=(const Level&) = delete;
    ~Level() { p_.depth_ -= n_; }
    void add() {
      ++n_;
      if (++p_.depth_ > kMaxNesting)
        throw Error(nested_too_deep() + " at line " + std::to_string(p_.cur().line));
    }

   private:
    Parser& p_;
    int n_ = 0;
  };

  [[noreturn]] static void refuse(const std::string& construct, int line) {
    throw Error(construct + " at line " + std::to_string(line) + " is not supported");
  }
  std::string describe() const {
    switch (cur().kind) {
      case K::eof: return "end of template";
      case K::block_end: return "end of statement block";
      case K::var_end: return "end of print statement";
      case K::text: return "template text";
      default: return "'" + cur().value + "'";
    }
  }
  void expect_op(const char* o) {
    if (!is_op(o)) fail(std::string("expected '") + o + "', got " + describe());
    next();
  }
  std::string expect_name() {
    if (cur().kind != K::name) fail("expected a name, got " + describe());
    return next().value;
  }
  void expect_block_end() {
    if (cur().kind != K::block_end) fail("expected end of statement block, got " + describe());
    next();
  }

  // Statements up to one of end_tags ({% name ... ): the tag's name is consumed, its rest not.
  std::pair<std::vector<Stmt>, std::string> parse_body(std::initializer_list<const char*> ends) {
    Level level(*this);
    level.add();
    std::vector<Stmt> body;
    for (;;) {
      const Token& tok = cur();
      if (tok.kind == K::eof) {
        if (ends.size() == 0) return {std::move(body), ""};
        fail(std::string("unexpected end of template, expected '") + *ends.begin() + "'");
      }
      next();
      if (tok.kind == K::text) {
        Stmt s = stmt(Stmt::Kind::text, tok.line);
        s.text = tok.value;
        body.push_back(std::move(s));
      } else if (tok.kind == K::var_begin) {
        Stmt s = stmt(Stmt::Kind::output, tok.line);
        s.expr = parse_expression();
        if (is_op(",")) refuse("a tuple", cur().line);
        if (cur().kind != K::var_end) fail("expected end of print statement, got " + describe());
        next();
        body.push_back(std::move(s));
      } else if (tok.kind == K::block_begin) {
        std::string name = expect_name();
        for (const char* e : ends)
          if (name == e) return {std::move(body), name};
        body.push_back(statement(name, tok.line));
      } else {
        fail("unexpected " + describe());
      }
    }
  }

  Stmt statement(const std::string& name, int line) {
    if (name == "if") return parse_if(line);
    if (name == "for") return parse_for(line);
    if (name == "set") return parse_set(line);
    if (name == "break" || name == "continue") {
      if (loops_ == 0) fail("'" + name + "' outside a loop");
      expect_block_end();
      return stmt(name == "break" ? Stmt::Kind::break_ : Stmt::Kind::continue_, line);
    }
    if (name == "generation") {
      expect_block_end();
      Stmt s = stmt(Stmt::Kind::block, line);
      s.body = parse_body({"endgeneration"}).first;
      expect_block_end();
      return s;
    }
    refuse("tag '" + name + "'", line);
  }

  Stmt parse_if(int line) {
    Stmt s = stmt(Stmt::Kind::if_, line);
    s.expr = parse_expression();
    expect_block_end();
    auto [body, tag] = parse_body({"elif", "else", "endif"});
    s.body = std::move(body);
    if (tag == "elif") {  // nests in else_body: a level, like the block it stands for
      Level level(*this);
      level.add();
      s.else_body.push_back(parse_if(cur().line));
      return s;
    }
    expect_block_end();
    if (tag == "else") {
      s.else_body = parse_body({"endif"}).first;
      expect_block_end();
    }
    return s;
  }

  Stmt parse_for(int line) {
    Stmt s = stmt(Stmt::Kind::for_, line);
    bool paren = is_op("(");
    if (paren) next();
    s.targets.push_back(expect_name());
    while (is_op(",")) {
      next();
      s.targets.push_back(expect_name());
    }
    if (paren) expect_op(")");
    if (!is_name("in")) fail("expected 'in', got " + describe());
    next();
    s.expr = parse_or();
    if (is_op(",")) refuse("a tuple", cur().line);
    if (is_name("if")) {
      next();
      s.filter = parse_expression();
    }
    if (is_name("recursive")) refuse("a recursive for loop", line);
    expect_block_end();
    ++loops_;
    auto [body, tag] = parse_body({"else", "endfor"});
    --loops_;
    s.body = std::move(body);
    expect_block_end();
    if (tag == "else") {
      s.else_body = parse_body({"endfor"}).first;
      expect_block_end();
    }
    return s;
  }

  Stmt parse_set(int line) {
    Stmt s = stmt(Stmt::Kind::set, line);
    s.targets.push_back(expect_name());
    if (is_op(".")) {
      next();
      s.kind = Stmt::Kind::set_attr;
      s.targets.push_back(expect_name());
    }
    if (is_op(",")) refuse("a set of several names", line);
    if (cur().kind == K::block_end && s.kind == Stmt::Kind::set) {
      next();
      s.kind = Stmt::Kind::set_block;
      s.body = parse_body({"endset"}).first;
      expect_block_end();
      return s;
    }
    if (is_op("|")) refuse("a filtered set block", line);
    expect_op("=");
    s.expr = parse_expression();
    if (is_op(",")) refuse("a tuple", cur().line);
    expect_block_end();
    return s;
  }

  static Stmt stmt(Stmt::Kind k, int line) {
    Stmt s;
    s.kind = k;
    s.line = line;
    return s;
  }
  static ExprPtr node(Expr::Kind k, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line;
    return e;
  }
  static ExprPtr binary(const std::string& op, ExprPtr a, ExprPtr b, int line) {
    ExprPtr e = node(Expr::Kind::binary, line);
    e->name = op;
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr parse_expression() {
    Level level(*this);
    level.add();
    ExprPtr e = parse_or();
    while (is_name("if")) {
      level.add();
      int line = next().line;
      ExprPtr c = node(Expr::Kind::cond, line);
      c->args.push_back(parse_or());
      c->args.push_back(std::move(e));
      if (is_name("else")) {
        next();
        c->args.push_back(parse_expression());
      } else {
        c->args.push_back(nullptr);
      }
      e = std::move(c);
    }
    return e;
  }

  ExprPtr parse_or() {
    Level level(*this);
    ExprPtr e = parse_and();
    while (is_name("or")) {
      level.add();
      int line = next().line;
      e = binary("or", std::move(e), parse_and(), line);
    }
    return e;
  }
  ExprPtr parse_and() {
    Level level(*this);
    ExprPtr e = parse_not();
    while (is_name("and")) {
      level.add();
      int line = next().line;
      e = binary("and", std::move(e), parse_not(), line);
    }
    return e;
  }
  ExprPtr parse_not() {
    if (is_name("not")) {
      Level level(*this);
      level.add();
      ExprPtr e = node(Expr::Kind::not_, next().line);
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    int line = cur().line;
    ExprPtr first = parse_math1();
    ExprPtr e = node(Expr::Kind::compare, line);
    e->args.push_back(std::move(first));
    for (;;) {
      if (cur().kind == K::op && (cur().value == "==" || cur().value == "!=" || cur().value == "<" ||
                                  cur().value == "<=" || cur().value == ">" || cur().value == ">=")) {
        e->ops.push_back(next().value);
      } else if (is_name("in")) {
        next();
        e->ops.push_back("in");
      } else if (is_name("not") && peek().kind == K::name && peek().value == "in") {
        next();
        next();
        e->ops.push_back("notin");
      } else {
        break;
      }
      e->args.push_back(parse_math1());
    }
    if (e->ops.empty()) return std::move(e->args[0]);
    return e;
  }

  // One left-associative level of binary operators.
  template <typename Next>
  ExprPtr left_assoc(std::initializer_list<const char*> ops, Next next_level) {
    Level level(*this);
    ExprPtr e = (this->*next_level)();
    for (;;) {
      const char* found = nullptr;
      for (const char* o : ops)
        if (is_op(o)) found = o;
      if (!found) return e;
      level.add();
      int line = next().line;
      e = binary(found, std::move(e), (this->*next_level)(), line);
    }
  }
  ExprPtr parse_math1() { return left_assoc({"+", "-"}, &Parser::parse_concat); }
  ExprPtr parse_concat() { return left_assoc({"~"}, &Parser::parse_math2); }
  ExprPtr parse_math2() { return left_assoc({"*", "/", "//", "%"}, &Parser::parse_pow); }
  ExprPtr parse_pow() { return left_assoc({"**"}, &Parser::parse_unary_filtered); }
  ExprPtr parse_unary_filtered() { return parse_unary(true); }

  ExprPtr parse_unary(bool with_filter) {
    Level level(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      level.add();
      Expr::Kind k = is_op("-") ? Expr::Kind::neg : Expr::Kind::pos;
      e = node(k, next().line);
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (!with_filter) return e;
    for (;;) {
      if (is_op("|") || is_name("is") || is_op("(")) level.add();
      if (is_op("|")) e = parse_filter(std::move(e));
      else if (is_name("is")) e = parse_test(std::move(e));
      else if (is_op("(")) e = parse_call(std::move(e));
      else return e;
    }
  }

  ExprPtr parse_primary() {
    const Token& tok = cur();
    int line = tok.line;
    if (tok.kind == K::name) {
      next();
      ExprPtr e = node(Expr::Kind::literal, line);
      const std::string& n = tok.value;
      if (n == "true" || n == "True") e->value = Value::boolean(true);
      else if (n == "false" || n == "False") e->value = Value::boolean(false);
      else if (n == "none" || n == "None") e->value = Value::none();
      else e->kind = Expr::Kind::name, e->name = n;
      return e;
    }
    if (tok.kind == K::string) {
      std::string s;
      while (cur().kind == K::string) s += next().value;  // adjacent literals join
      ExprPtr e = node(Expr::Kind::literal, line);
      e->value = Value::string(Text(s));
      return e;
    }
    if (tok.kind == K::integer || tok.kind == K::floating) {
      next();
      ExprPtr e = node(Expr::Kind::literal, line);
      e->value = tok.kind == K::integer ? Value::integer(tok.integer) : Value::floating(tok.floating);
      return e;
    }
    if (is_op("(")) {
      next();
      if (is_op(")")) {
        next();
        ExprPtr t = node(Expr::Kind::list, line);
        t->name = "tuple";
        return t;
      }
      ExprPtr e = parse_expression();
      if (is_op(",")) {
        ExprPtr t = node(Expr::Kind::list, line);
        t->name = "tuple";
        t->args.push_back(std::move(e));
        while (is_op(",")) {
          next();
          if (is_op(")")) break;
          t->args.push_back(parse_expression());
        }
        e = std::move(t);
      }
      expect_op(")");
      return e;
    }
    if (is_op("[") || is_op("{")) {
      bool is_dict = is_op("{");
      next();
      ExprPtr e = node(is_dict ? Expr::Kind::dict : Expr::Kind::list, line);
      const char* close = is_dict ? "}" : "]";
      while (!is_op(close)) {
        if (!e->args.empty()) expect_op(",");
        if (is_op(close)) break;
        e->args.push_back(parse_expression());
        if (is_dict) {
          expect_op(":");
          e->args.push_back(parse_expression());
        }
      }
      next();
      return e;
    }
    fail("unexpected " + describe());
  }

  ExprPtr parse_postfix(ExprPtr e) {
    Level level(*this);
    for (;;) {
      int line = cur().line;
      if (is_op(".") || is_op("[") || is_op("(")) level.add();
      if (is_op(".")) {
        next();
        ExprPtr a;
        if (cur().kind == K::integer) {
          a = node(Expr::Kind::item, line);
          ExprPtr index = node(Expr::Kind::literal, line);
          index->value = Value::integer(next().integer);
          a->args.push_back(std::move(e));
          a->args.push_back(std::move(index));
        } else {
          a = node(Expr::Kind::attr, line);
          a->name = expect_name();
          a->args.push_back(std::move(e));
        }
        e = std::move(a);
      } else if (is_op("[")) {
        next();
        e = parse_subscript(std::move(e), line);
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  // After "[": an index or a slice a:b:c, then "]".
  ExprPtr parse_subscript(ExprPtr target, int line) {
    ExprPtr bounds[3];
    bool is_slice = false;
    if (!is_op(":")) bounds[0] = parse_expression();
    if (is_op(":")) {
      is_slice = true;
      next();
      if (!is_op("]") && !is_op(",") && !is_op(":")) bounds[1] = parse_expression();
      if (is_op(":")) {
        next();
        if (!is_op("]") && !is_op(",")) bounds[2] = parse_expression();
      }
    }
    if (is_op(",")) refuse("a tuple subscript", line);
    expect_op("]");
    ExprPtr e = node(is_slice ? Expr::Kind::slice : Expr::Kind::item, line);
    e->args.push_back(std::move(target));
    e->args.push_back(std::move(bounds[0]));
    if (is_slice) {
      e->args.push_back(std::move(bounds[1]));
      e->args.push_back(std::move(bounds[2]));
    }
    return e;
  }

  // "(" arguments ")" into e's args (after those it has) and kwargs.
  void parse_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (is_op("*") || is_op("**")) refuse("a call with *args or **kwargs", cur().line);
      if (cur().kind == K::name && peek().kind == K::op && peek().value == "=") {
        e.kwnames.push_back(next().value);
        next();
        e.kwargs.push_back(parse_expression());
      } else {
        if (!e.kwargs.empty()) fail("a positional argument after a keyword argument");
        e.args.push_back(parse_expression());
      }
    }
    next();
  }

  ExprPtr parse_call(ExprPtr callee) {
    int line = cur().line;
    if (callee->kind == Expr::Kind::name && !known_function(callee->name))
      refuse("function '" + callee->name + "'", line);
    if (callee->kind != Expr::Kind::name && callee->kind != Expr::Kind::attr)
      refuse("a call of an expression", line);
    ExprPtr e = node(Expr::Kind::call, line);
    e->args.push_back(std::move(callee));
    parse_args(*e);
    return e;
  }

  ExprPtr parse_filter(ExprPtr input) {
    int line = next().line;
    ExprPtr e = node(Expr::Kind::filter, line);
    e->name = expect_name();
    if (is_op(".")) refuse("a dotted filter name", line);
    if (!known_filter(e->name)) refuse("filter '" + e->name + "'", line);
    e->args.push_back(std::move(input));
    if (is_op("(")) parse_args(*e);
    return e;
  }

  ExprPtr parse_test(ExprPtr input) {
    int line = next().line;
    ExprPtr e = node(Expr::Kind::test, line);
    if (is_name("not")) {
      next();
      e->negated = true;
    }
    e->name = expect_name();
    if (is_op(".")) refuse("a dotted test name", line);
    if (!known_test(e->name)) refuse("test '" + e->name + "'", line);
    e->args.push_back(std::move(input));
    K k = cur().kind;
    if (is_op("(")) {
      parse_args(*e);
    } else if ((k == K::name || k == K::string || k == K::integer || k == K::floating ||
                is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail("you cannot chain multiple tests with is");
      e->args.push_back(parse_postfix(parse_primary()));
    }
    return e;
  }

  const std::vector<Token>& t_;
  std::size_t i_ = 0;
  int loops_ = 0;
  int depth_ = 0;
};

}  // namespace

std::vector<Stmt> parse(const std::vector<Token>& tokens) { return Parser(tokens).run(); }

}  // namespace fsdp::chat
