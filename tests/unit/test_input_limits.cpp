// SPDX-License-Identifier: MIT
// The two bounds on what a hostile input can make fsdp do (issue 63, docs/reliability.md): the
// nesting limit (data/nesting.hpp) on JSON documents and chat templates, and a chat template
// render's work and size budget (data/chat/chat_budget.hpp). Each case below crashed (stack
// overflow), ran for hours or ended in std::bad_alloc before; each now ends within seconds in
// one line naming the limit. Python's Jinja2 refuses the deep ones too (RecursionError, or
// "too many levels of indentation" past 100 nested blocks), so no real template is refused:
// the depths that work are checked beside the ones that do not.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include "data/chat/chat_template.hpp"
#include "data/nesting.hpp"
#include "data/tokenizer.hpp"
#include "prepare/document.hpp"

namespace {

using fsdp::ChatTemplate;
using fsdp::DataError;

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int k = 0; k < n; ++k) out += s;
  return out;
}

std::string render(const std::string& source) {
  const auto messages = nlohmann::ordered_json::parse(
      R"([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}])");
  fsdp::ChatVariables vars;
  return ChatTemplate::parse(source, "t.jinja").render_text(messages, vars);
}

// Throws the DataError within `seconds` of CPU time (not wall time: the suite shares its
// cores), its message holding `what`.
void refused(const std::string& source, const std::string& what, double seconds = 10) {
  const std::clock_t t0 = std::clock();
  CHECK_THROWS_WITH(render(source), Catch::Contains("t.jinja: chat_template: ") && Catch::Contains(what));
  CHECK(double(std::clock() - t0) / CLOCKS_PER_SEC < seconds);
}

}  // namespace

TEST_CASE("nesting: JSON deeper than the limit is found before parsing", "[limits]") {
  const int n = fsdp::kMaxNesting;
  CHECK(fsdp::json_too_deep_at(repeat("[", n) + repeat("]", n)) == std::string::npos);
  CHECK(fsdp::json_too_deep_at(repeat("[", n + 1) + repeat("]", n + 1)) == std::size_t(n));
  // Brackets inside strings, escaped quotes included, do not count.
  CHECK(fsdp::json_too_deep_at("{\"a\\\"" + repeat("[", 2 * n) + "\": 1}") == std::string::npos);
  CHECK(fsdp::json_too_deep_at("[" + repeat("{\"k\":", n) + "1" + repeat("}", n) + "]") == std::size_t(1 + 5 * (n - 1)));
}

TEST_CASE("nesting: a JSONL line nested 20,000 deep or with a number past double is one error", "[limits]") {
  using fsdp::prepare::DocumentError;
  const std::string deep = R"({"messages": [{"role": "user", "content": "x", "k": )" + repeat("[", 20000) +
                           repeat("]", 20000) + "}]}";
  CHECK_THROWS_WITH(fsdp::prepare::read_jsonl_line(deep), Catch::Contains("JSON nested too deep (limit 256) at byte"));
  CHECK_THROWS_WITH(fsdp::prepare::read_jsonl_line(R"({"text": "a", "meta": 1e999999})"),
                    Catch::Contains("not usable JSON") && Catch::Contains("out_of_range.406"));
  // At the limit a chat line still renders (its message values nest as deep as the line).
  const std::string ok = R"({"messages": [{"role": "user", "content": "x", "k": )" + repeat("[", 250) +
                         repeat("]", 250) + "}]}";
  const auto d = fsdp::prepare::read_jsonl_line(ok);
  fsdp::ChatVariables vars;
  CHECK(ChatTemplate::parse("{{ messages[0].k|length }}{{ messages[0].content }}", "t")
            .render_text(d.messages, vars) == "1x");
}

TEST_CASE("nesting: tokenizer.json's Sequence parts nested 20,000 deep", "[limits]") {
  // The normalizer's case runs through every program in tests/e2e/hostile_limits.sh.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("fsdp_test_limits_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer_config.json") << "{}";
  for (const char* part : {"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [",
                           "post_processor\": {\"type\": \"Sequence\", \"processors\": ["}) {
    std::ofstream(dir / "tokenizer.json") << "{\"" << part << repeat("{\"type\": \"Sequence\", \"x\": [", 20000)
                                          << repeat("]}", 20001) << ", \"model\": {}}";
    CHECK_THROWS_WITH(fsdp::Tokenizer::load(dir.string()),
                      Catch::Contains("tokenizer.json: nested too deep (limit 256) at byte"));
  }
  fs::remove_all(dir);
}

TEST_CASE("nesting: templates nested past the limit are refused when parsed", "[limits]") {
  const std::string deep = "nested too deep (limit 256) at line 1";
  refused("{{ " + repeat("(", 6000) + "1" + repeat(")", 6000) + " }}", deep);
  refused("{{ 1" + repeat(" + 1", 10000) + " }}", deep);
  refused(repeat("{% if true %}", 2000) + repeat("{% endif %}", 2000), deep);
  refused(repeat("{% for i in [1] %}", 2000) + repeat("{% endfor %}", 2000), deep);
  refused("{% if false %}" + repeat("{% elif false %}", 2000) + "{% endif %}", deep);
  refused("{{ " + repeat("[", 100000) + repeat("]", 100000) + " }}", deep);
  refused("{{ " + repeat("not ", 100000) + "true }}", deep);
  refused("{{ " + repeat("-", 100000) + "1 }}", deep);
  refused("{{ 'a'" + repeat("|trim", 2000) + " }}", deep);
  refused("{{ 'a'" + repeat(".strip()", 2000) + " }}", deep);
  // Well inside the limit (and past what Jinja2 itself renders for parentheses, ~80) all work.
  CHECK(render("{{ " + repeat("(", 200) + "7" + repeat(")", 200) + " }}") == "7");
  CHECK(render("{{ 0" + repeat(" + 1", 200) + " }}") == "200");
  CHECK(render(repeat("{% for i in [1] %}", 90) + "x" + repeat("{% endfor %}", 90)) == "x");
  CHECK(render("{{ " + repeat("not ", 200) + "true }}") == "True");
}

TEST_CASE("nesting: values built past the limit, and a namespace in a namespace, are refused", "[limits]") {
  refused("{% set ns = namespace(x=1) %}{% for i in range(99999) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}",
          "a value nested too deep (limit 256)");
  refused("{% set ns = namespace(x=1) %}{% set ns.x = [ns] %}{{ ns }}",
          "a namespace stored in a namespace at line 1 is not supported");
}

TEST_CASE("budget: a render's work and size are bounded", "[limits]") {
  refused("{% for i in range(99999) %}{% for j in range(99999) %}{% for k in range(99999) %}"
          "{% endfor %}{% endfor %}{% endfor %}",
          "the template's work budget is spent", 20);
  refused("{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
          "a string past the template's size budget (64 MiB)");
  refused("{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s.replace('a', ns.s) %}{% endfor %}",
          "a string past the template's size budget (64 MiB)");
  refused("{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
          "a list or dict past the template's size budget (64 MiB)");
  refused("{{ 'abcd' * 4611686018427387904 }}", "a string past the template's size budget (64 MiB)");
  refused("{{ [[1, 2], [3]]|tojson(indent=100000000) }}", "a string past the template's size budget (64 MiB)");
  refused("{% set big = 'x' * 60000000 %}{% for i in range(1000) %}{{ big }}{% endfor %}",
          "a string past the template's size budget (64 MiB)");
}

TEST_CASE("fuzz_chat_template's findings", "[limits]") {
  // Bytes that are not UTF-8 in a template read past the source's end (heap overflow, ASan).
  CHECK_THROWS_WITH(render("{% if true %}\xff\xff\xff{% endif %}"), Catch::Contains("t.jinja: chat_template: not UTF-8 at byte 14"));
  CHECK_THROWS_WITH(render("{{ 'a' }}\xe2\x82"), Catch::Contains("not UTF-8 at byte 10"));
}

TEST_CASE("budget: numbers past double's range read as Python reads them", "[limits]") {
  CHECK(render("{{ 1e999 }} {{ -1e999 }} {{ 1e-999 }}") == "inf -inf 0.0");  // Jinja2's output
  CHECK_THROWS_WITH(render("{{ 0xffffffffffffffffffff }}"), Catch::Contains("is too large"));
}
