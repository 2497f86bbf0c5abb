// SPDX-License-Identifier: MIT
// fsdp::ChatTemplate on small inline templates: the whitespace rules (trim_blocks,
// lstrip_blocks, "-" and "+"), each supported construct, undefined values, the trained segments,
// and each refusal as one line. Every expected render below is python3-jinja2's output for the
// same template (configured as transformers configures it, tests/reference/chat_render.py),
// with messages = [system "S", user "hi", assistant "ok"], bos_token "<s>", eos_token "</s>".
// The real Llama 3 and Qwen3 templates are tests/e2e/chat_template.sh.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/chat/chat_template.hpp"

namespace {

using fsdp::ChatTemplate;
using fsdp::DataError;
using nlohmann::json;

const json kMessages = json::parse(R"([{"role": "system", "content": "S"},
  {"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}])");

fsdp::ChatVariables vars(bool generation_prompt = false) {
  fsdp::ChatVariables v;
  v.bos_token = "<s>";
  v.eos_token = "</s>";
  v.add_generation_prompt = generation_prompt;
  return v;
}

std::string render(const std::string& source, const nlohmann::ordered_json& messages = kMessages) {
  return ChatTemplate::parse(source, "t").render_text(messages, vars());
}

// The segments as "text" with trained ones in [[ ]].
std::string segments(const std::string& source, const nlohmann::ordered_json& messages) {
  std::string out;
  for (const fsdp::ChatSegment& s : ChatTemplate::parse(source, "t").render(messages, vars()))
    out += s.trained ? "[[" + s.text + "]]" : s.text;
  return out;
}

// The DataError's message of parsing and rendering `source`.
std::string error_of(const std::string& source) {
  try {
    render(source);
  } catch (const DataError& e) {
    return e.what();
  }
  return "no error";
}

struct Case {
  const char* name;
  const char* source;
  const char* expected;  // python3-jinja2's render
};

const Case kCases[] = {
    {"trim_blocks drops the newline after a block tag",
     "{% if true %}\nyes\n{% endif %}\nafter",
     "yes\nafter"},
    {"lstrip_blocks drops the indentation before a block tag",
     "  {% if true %}\n  x\n  {% endif %}\ny",
     "  x\ny"},
    {"a dash strips all whitespace on its side",
     "a  \n  {%- if true -%}  \n b {%- endif %}c",
     "abc"},
    {"a dash in a print tag",
     "a \n {{- 'x' -}} \n b",
     "axb"},
    {"lstrip_blocks leaves print tags alone",
     "  {{ 'x' }}\n  {{ 'y' }}",
     "  x\n  y"},
    {"a plus keeps the whitespace",
     "  {%+ if true %}\nx{% endif +%}\ny",
     "  x\ny"},
    {"comments leave nothing and trim like blocks",
     "a\n  {# c #}\nb{#- c -#}  c",
     "a\nbc"},
    {"one trailing newline of the template is dropped",
     "x\n\n",
     "x\n"},
    {"CRLF newlines become LF",
     "a\r\nb\r{% if true %}\r\nc{% endif %}",
     "a\nb\nc"},
    {"no lstrip after a print tag on the same line",
     "{{ 'a' }}  {% if true %}b{% endif %}",
     "a  b"},
    {"lstrip at the start of the template",
     "  {% if true %}b{% endif %}",
     "b"},
    {"loop variables",
     "{% for x in ['a','b','c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.previtem }}{{ loop.nextitem }},{% endfor %}",
     "10TrueFalse332b,21FalseFalse321ac,32FalseTrue310b,"},
    {"for else and a loop filter",
     "{% for x in [] %}x{% else %}empty{% endfor %}|{% for x in [1,2,3,4] if x is even %}{{ x }}{{ loop.index }}{% endfor %}",
     "empty|2142"},
    {"break and continue",
     "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x > 4 %}{% break %}{% endif %}{{ x }}{% endfor %}",
     "0134"},
    {"a set inside a loop is gone after each iteration",
     "{% set y = 1 %}{% for i in [1,2] %}{% if i == 1 %}{% set y = 5 %}{% endif %}{{ y }}{% endfor %}{{ y }}",
     "511"},
    {"a namespace carries values out of a loop",
     "{% set ns = namespace(n=0, last='') %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% set ns.last = m.role %}{% endfor %}{{ ns.n }} {{ ns.last }}",
     "3 assistant"},
    {"a set block",
     "{% set x %}a{{ 1 + 1 }}b{% endset %}[{{ x }}]",
     "[a2b]"},
    {"if elif else",
     "{% for v in [1, 2, 3] %}{% if v == 1 %}one{% elif v == 2 %}two{% else %}many{% endif %} {% endfor %}",
     "one two many "},
    {"literals",
     "{{ 'a\\n\\t\\x41\\u00e9' }}|{{ \"d'q\" }}|{{ 1.5 }}|{{ 1e3 }}|{{ 1e20 }}|{{ True }}{{ none }}|{{ [1, 'a', none, \"it's\"] }}|{{ {'k': [1.0, false]} }}|{{ 'a' 'b' }}",
     "a\n\tA\xc3""\xa9""|d'q|1.5|1000.0|1e+20|TrueNone|[1, 'a', None, \"it's\"]|{'k': [1.0, False]}|ab"},
    {"attributes and subscripts",
     "{{ messages[0].role }}{{ messages[0]['content'] }}|{{ messages[0].missing }}|{{ messages[5] }}|{{ messages[-1].role }}|{{ messages.0.role }}",
     "systemS|||assistant|system"},
    {"slices",
     "{{ messages[1:] | length }}|{{ 'h\xc3""\xa9""llo'[1:4] }}|{{ [1,2,3,4][::-2] }}|{{ 'abc'[-1] }}|{{ [1,2,3][:-1] }}|{{ 'abc'[5:] }}",
     "2|\xc3""\xa9""ll|[4, 2]|c|[1, 2]|"},
    {"arithmetic",
     "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 1 / 4 }} {{ 2 ** 8 }} {{ 'a' ~ 1 ~ none }} {{ 'ab' * 2 }} {{ [1] + [2] }} {{ 1 + 2.5 }} {{ true + 1 }} {{ -(3) }} {{ 0.1 + 0.2 }}",
     "3 -4 1 2 0.25 256 a1None abab [1, 2] 3.5 2 -3 0.30000000000000004"},
    {"comparisons and logic",
     "{{ 1 < 2 < 3 }} {{ 'a' in 'cat' }} {{ 'x' not in ['y'] }} {{ 'k' in {'k': 1} }} {{ 1 == 1.0 }} {{ not none }} {{ none or 'd' }} {{ 0 and 1 }} {{ [1, 2] == [1, 2] }} {{ 'b' > 'a' }}",
     "True True True True True True d 0 True True"},
    {"conditional expressions",
     "{{ 'y' if messages else 'n' }}|{{ 'y' if none }}|{{ 'a' if false else 'b' if true else 'c' }}",
     "y||b"},
    {"filters",
     "{{ '  x  ' | trim }}|{{ 'xxaxx' | trim('x') }}|{{ 'h\xc3""\xa9""' | length }}|{{ messages | length }}|{{ 'ABC' | lower }}{{ 'abc' | upper }}|{{ x | default('d') }}{{ '' | default('e', true) }}|{{ [3,4] | first }}{{ [3,4] | last }}|{{ ['a','b'] | join(', ') }}|{{ 'aXbX' | replace('X', '-') }}|{{ 'hello WORLD' | capitalize }}|{{ {'a': 1} | items | list }}|{{ 42 | string }}|{{ 'ab' | list }}|{{ [1, 2] | reverse | list }}|{{ '3' | int + 1 }}|{{ -2 | abs }}",
     "x|a|2|3|abcABC|de|34|a, b|a-b-|Hello world|[('a', 1)]|42|['a', 'b']|[2, 1]|4|2"},
    {"a filter binds tighter than an operator",
     "{{ 'a' + ' b ' | trim + 'c' }}|{{ -3 | abs }}",
     "abc|3"},
    {"tojson as transformers defines it",
     "{{ {'a': [1, 2.5, none, true], '\xc3""\xa9""': 'x\"\\n<\\u0001'} | tojson }}|{{ [1, {'b': 2}, []] | tojson(indent=2) }}|{{ {'a': 1, 'b': 2} | tojson(separators=(',', ':')) }}|{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}|{{ '\xc3""\xa9""' | tojson(ensure_ascii=true) }}",
     "{\"a\": [1, 2.5, null, true], \"\xc3""\xa9""\": \"x\\\"\\n<\\u0001\"}|[\n  1,\n  {\n    \"b\": 2\n  },\n  []\n]|{\"a\":1,\"b\":2}|{\"a\": 2, \"b\": 1}|\"\\u00e9\""},
    {"selectattr rejectattr and map",
     "{{ messages | selectattr('role', 'equalto', 'user') | list | length }}|{{ messages | rejectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') }}|{{ messages | selectattr('content') | list | length }}",
     "1|S,ok|3"},
    {"tests",
     "{{ x is defined }}{{ x is undefined }}{{ none is none }}{{ 'a' is string }}{{ 1 is number }}{{ true is number }}{{ {} is mapping }}{{ [] is iterable }}{{ 'a' is sequence }}{{ true is true }}{{ false is false }}{{ 1 is boolean }}{{ 3 is equalto 3 }}{{ 2 is not equalto 3 }}{{ 4 is divisibleby(2) }}{{ 1 is integer }}{{ x is iterable }}",
     "FalseTrueTrueTrueTrueTrueTrueTrueTrueTrueTrueFalseTrueTrueTrueTrueTrue"},
    {"string methods",
     "{{ 'abc'.startswith('a') }}{{ 'abc'.endswith(('x', 'c')) }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}|{{ '\\n\\nx\\n'.strip('\\n') }}|{{ 'xxa'.lstrip('x') }}|{{ 'axx'.rstrip('x') }}|{{ '  a '.strip() }}|{{ 'ab'.upper() }}{{ 'AB'.lower() }}|{{ 'a-b-c'.replace('-', '+', 1) }}|{{ 'hello wORLD'.title() }}|{{ 'abcb'.find('b') }}{{ 'abcb'.count('b') }}|{{ '-'.join(['a', 'b']) }}",
     "TrueTrue|['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']|x|a|a|a|ABab|a+b-c|Hello World|12|a-b"},
    {"dict methods",
     "{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}|{{ {'a': 1}.keys() | list }}|{{ {'a': 1}.values() | list }}|{{ {'a': 1}.get('a') }}{{ {'a': 1}.get('z') }}{{ {'a': 1}.get('z', 'd') }}",
     "a=1;b=2;|['a']|[1]|1Noned"},
    {"undefined names",
     "[{{ nothing }}]{{ nothing is defined }}{% if not nothing %}F{% endif %}{{ nothing | length }}{% for x in nothing %}x{% endfor %}{{ nothing == nothing }}{{ nothing | trim }}|{{ tools is none }}{{ tools is defined }}{{ enable_thinking is defined }}",
     "[]FalseF0True|TrueTrueFalse"},
    {"Unicode whitespace is Python's",
     "[{{ '\xc2""\xa0""\xe3""\x80""\x80""x\xe2""\x80""\x83""\xe2""\x80""\x8b""' | trim }}]{% if true -%} \xe3""\x80""\x80""\n {%- endif %}]",
     "[x\xe2""\x80""\x83""\xe2""\x80""\x8b""]]"},
};

}  // namespace

TEST_CASE("chat templates render as python3-jinja2 renders them", "[chat]") {
  for (const Case& c : kCases) {
    DYNAMIC_SECTION(c.name) { CHECK(render(c.source) == c.expected); }
  }
}

TEST_CASE("chat template trained segments follow the assistant turns", "[chat]") {
  const std::string llama_like =
      "{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</s>{% endfor %}"
      "{% if add_generation_prompt %}<assistant>{% endif %}";
  // The role header is not trained, the content and the end-of-turn text after it are.
  CHECK(segments(llama_like, kMessages) == "<system>S</s><user>hi</s><assistant>[[ok</s>]]");
  const json two = json::parse(R"([{"role": "user", "content": "a"},
    {"role": "assistant", "content": " b "}, {"role": "user", "content": "c"},
    {"role": "assistant", "content": "d"}])");
  CHECK(segments(llama_like, two) ==
        "<user>a</s><assistant>[[b</s>]]<user>c</s><assistant>[[d</s>]]");
  // The mark survives split, index and strip; text the template writes before it is not trained.
  const std::string split_like =
      "{% for m in messages %}{% if m.role == 'assistant' %}A:<t>"
      "{{ m.content.split('|')[1].strip() }}{% else %}{{ m.content }}{% endif %}.{% endfor %}";
  CHECK(segments(split_like, json::parse(R"([{"role": "user", "content": "q"},
    {"role": "assistant", "content": "x| y |z"}])")) == "q.A:<t>[[y.]]");
  // An empty answer has nothing marked, so nothing is trained.
  CHECK(segments(llama_like, json::parse(R"([{"role": "user", "content": "q"},
    {"role": "assistant", "content": ""}])")) == "<user>q</s><assistant></s>");
  // Assistant text printed outside a loop over the messages is not a turn.
  CHECK(segments("{{ messages[2].content }}", kMessages) == "ok");
  // reasoning_content and tool_calls are the turn's own text too (tojson of them marked whole).
  CHECK(segments("{% for m in messages %}[{{ m.reasoning_content }}|{{ m.tool_calls | tojson }}]"
                 "{% endfor %}",
                 json::parse(R"([{"role": "assistant", "reasoning_content": "r",
                   "tool_calls": [{"name": "f"}]}])")) ==
        "[[[r|[{\"name\": \"f\"}]]]]");
}

TEST_CASE("chat template refusals and errors are one line naming the construct", "[chat]") {
  CHECK(error_of("{{ 'a' | wordwrap }}") ==
        "t: chat_template: filter 'wordwrap' at line 1 is not supported");
  CHECK(error_of("\n\n{% macro f() %}{% endmacro %}") ==
        "t: chat_template: tag 'macro' at line 3 is not supported");
  CHECK(error_of("{{ now('%d %b %Y') }}") ==
        "t: chat_template: function 'now' at line 1 is not supported");
  CHECK(error_of("{{ 1 is sameas 1 }}") ==
        "t: chat_template: test 'sameas' at line 1 is not supported");
  CHECK(error_of("{% raw %}x{% endraw %}") ==
        "t: chat_template: tag 'raw' at line 1 is not supported");
  CHECK(error_of("\n{{ 'a {}'.format(1) }}") ==
        "t: chat_template: method 'format' of a string at line 2 is not supported");
  CHECK(error_of("{{ messages.append(1) }}") ==
        "t: chat_template: method 'append' of a list at line 1 is not supported");
  CHECK(error_of("{{ messages[0].items }}") ==
        "t: chat_template: method 'items' used without a call at line 1 is not supported");
  CHECK(error_of("{{ '\xc3\xa9' | upper }}") ==
        "t: chat_template: filter 'upper' of non-ASCII letters at line 1 is not supported");
  CHECK(error_of("{{ 'a %s' % 1 }}") ==
        "t: chat_template: string formatting with % at line 1 is not supported");
  CHECK(error_of("{% for m in messages recursive %}{% endfor %}") ==
        "t: chat_template: a recursive for loop at line 1 is not supported");
  // raise_exception: the template's own message.
  CHECK(error_of("{% if messages[0].role != 'user' %}{{ raise_exception('Conversations must "
                 "start with a user message') }}{% endif %}") ==
        "t: chat_template: Conversations must start with a user message");
  // Errors Jinja2 raises too: an undefined value used, a bad operand, bad syntax.
  CHECK(error_of("{{ nothing.attr }}") == "t: chat_template: line 1: 'nothing' is undefined");
  CHECK(error_of("\n{{ 'a' + 1 }}") ==
        "t: chat_template: line 2: can only concatenate str (not \"int\") to str");
  CHECK(error_of("{% if true %}x") ==
        "t: chat_template: syntax error at line 1: unexpected end of template, expected 'elif'");
  CHECK(error_of("{{ 1 + }}") ==
        "t: chat_template: syntax error at line 1: unexpected end of print statement");
  CHECK(error_of("{% break %}") == "t: chat_template: syntax error at line 1: 'break' outside a loop");
}

TEST_CASE("chat template load reads tokenizer_config.json or chat_template.jinja", "[chat]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("fsdp_test_chat_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string config = (dir / "tokenizer_config.json").string();
  auto write = [](const fs::path& p, const std::string& text) { std::ofstream(p) << text; };

  write(config, R"({"eos_token": "</s>"})");
  CHECK_THROWS_WITH(ChatTemplate::load(dir.string()),
                    config + ": chat_template: missing (this model has no chat template)");
  write(config, R"({"chat_template": [{"name": "tool_use", "template": "T"},
                                      {"name": "default", "template": "D{{ eos_token }}"}]})");
  CHECK(ChatTemplate::load(config).render_text(kMessages, vars()) == "D</s>");
  // With tools (an empty list too) transformers picks "tool_use".
  fsdp::ChatVariables with_tools = vars();
  with_tools.tools = nlohmann::ordered_json::array();
  CHECK(ChatTemplate::load(config).render_text(kMessages, with_tools) == "T");
  write(config, R"({"chat_template": [{"name": "tool_use", "template": "T"}]})");
  CHECK(ChatTemplate::load(config).render_text(kMessages, with_tools) == "T");
  CHECK_THROWS_WITH(ChatTemplate::load(dir.string()).render_text(kMessages, vars()),
                    config + ": chat_template: no template named \"default\", for a chat without tools (it has: tool_use)");
  write(config, R"({"chat_template": [{"name": "other", "template": "O"}]})");
  CHECK_THROWS_WITH(ChatTemplate::load(dir.string()),
                    config + ": chat_template: no template named \"default\" (it has: other)");
  write(config, R"({"chat_template": "C"})");
  CHECK(ChatTemplate::load(dir.string()).render_text(kMessages, vars()) == "C");
  write(dir / "chat_template.jinja", "J{{ messages | length }}\n");
  CHECK(ChatTemplate::load(dir.string()).render_text(kMessages, vars()) == "J3");
  write(dir / "chat_template.jinja", "{{ x | wordwrap }}");
  CHECK_THROWS_WITH(ChatTemplate::load(dir.string()),
                    (dir / "chat_template.jinja").string() +
                        ": chat_template: filter 'wordwrap' at line 1 is not supported");
  fs::remove_all(dir);
}

// strftime_now past 255 bytes (issue 63): rendered whole, not as "". The year from the C
// library's own clock is the independent check (a render across New Year's midnight aside).
TEST_CASE("chat template strftime_now renders a date of any length", "[chat]") {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  const std::string year = std::to_string(local.tm_year + 1900);
  std::string format, expected;
  for (int i = 0; i < 100; ++i) format += "%Y-", expected += year + "-";
  CHECK(render("{{ strftime_now('" + format + "') }}") == expected);
  CHECK(render("{{ strftime_now('') }}").empty());
  CHECK(render("{{ strftime_now('%Y') }}") == year);
}

// Messages and tools reach the template as apply_chat_template (transformers 5.23) passes them:
// keys in the caller's order, null values dropped, reasoning under all three of its names, a
// special token the tokenizer lacks undefined. Expected renders are transformers'.
TEST_CASE("chat template messages are prepared as apply_chat_template prepares them", "[chat]") {
  using ojson = nlohmann::ordered_json;
  const ojson messages = ojson::parse(R"([{"role": "user", "content": "q", "name": null},
    {"role": "assistant", "content": "a", "tool_calls": null, "reasoning": "r"}])");
  CHECK(render("{% for m in messages %}{{ m | tojson }}|{% endfor %}", messages) ==
        R"({"role": "user", "content": "q"}|{"thinking": "r", "role": "assistant", "content": "a", )"
        R"("reasoning": "r", "reasoning_content": "r"}|)");
  // A message's own "thinking" keeps its value (and first place); reasoning_content wins the copy.
  CHECK(render("{{ messages[0] | tojson }}",
               ojson::parse(R"([{"role": "assistant", "reasoning_content": "x", "thinking": "y"}])")) ==
        R"({"thinking": "y", "role": "assistant", "reasoning_content": "x"})");
  CHECK(render("{{ 'tool_calls' in messages[1] }}", messages) == "False");
  // The reasoning's copies are the turn's own text, trained like reasoning_content.
  CHECK(segments("{% for m in messages %}<{{ m.thinking }}>{% endfor %}", messages) == "<><[[r>]]");
  fsdp::ChatVariables v = vars();
  v.bos_token.clear();
  v.tools = ojson::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2}}}])");
  CHECK(ChatTemplate::parse("{{ bos_token is defined }}|{{ tools | tojson }}|{{ tools[0].function.name }}", "t")
            .render_text(messages, v) ==
        R"(False|[{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2}}}]|f)");
  CHECK(render("{{ tools is none }}") == "True");
  // transformers 5's namespace refuses underscore-prefixed names.
  CHECK(error_of("{% set ns = namespace(_x=1) %}") ==
        "t: chat_template: line 1: chat templates cannot store underscore-prefixed attributes on a "
        "namespace, but got '_x' (transformers refuses it too)");
  CHECK(error_of("{% set ns = namespace() %}{% set ns._y = 1 %}").find("but got '_y'") != std::string::npos);
}
