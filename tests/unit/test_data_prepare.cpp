// SPDX-License-Identifier: MIT
// fsdp-data prepare's pieces with logic of their own: the byte shares (every line owned by
// exactly one rank, in order, at any number of ranks), the JSONL reader's shapes and errors,
// and decode's range syntax. The whole program is tested by tests/e2e/fsdp_data.sh.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "prepare/document.hpp"
#include "prepare/file_summary.hpp"
#include "prepare/input_shares.hpp"

namespace {

using namespace fsdp::prepare;

// The line starts each rank would process in `text` (one file), in rank order, as tokenize_share
// walks them: from the first line start in its share to the last one before its end.
std::vector<std::size_t> lines_by_ranks(const std::string& text, int nranks) {
  std::vector<std::size_t> starts;
  for (int r = 0; r < nranks; ++r) {
    const ByteRange s = byte_share(text.size(), nranks, r);
    const std::size_t end = r == nranks - 1 ? text.size() : s.end;
    for (std::size_t at = line_start_at_or_after(text, s.begin); at < end;) {
      REQUIRE(owns(s, at, text.size(), r == nranks - 1));
      starts.push_back(at);
      const std::size_t nl = text.find('\n', at);
      at = nl == std::string::npos ? text.size() : nl + 1;
    }
  }
  return starts;
}

std::string error_of(const std::string& line) {
  try {
    read_jsonl_line(line);
  } catch (const DocumentError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("fsdp_data prepare: byte shares cover the input once, balanced to a byte", "[fsdp_data]") {
  for (std::uint64_t total : {0ull, 1ull, 7ull, 1000003ull, (1ull << 62) + 5}) {
    for (int n = 1; n <= 7; ++n) {
      std::uint64_t at = 0, lo = ~0ull, hi = 0;
      for (int r = 0; r < n; ++r) {
        const ByteRange s = byte_share(total, n, r);
        CHECK(s.begin == at);
        at = s.end;
        lo = std::min(lo, s.end - s.begin);
        hi = std::max(hi, s.end - s.begin);
      }
      CHECK(at == total);
      CHECK(hi - lo <= 1);
    }
  }
  // A document at the very end (an empty last file) is the last rank's, no one else's.
  CHECK(owns(byte_share(10, 3, 2), 10, 10, true));
  CHECK_FALSE(owns(byte_share(10, 3, 1), 10, 10, false));
}

TEST_CASE("fsdp_data prepare: every line is read by exactly one rank, in input order", "[fsdp_data]") {
  const std::vector<std::string> texts = {
      "", "\n", "a", "a\n", "\n\n\n", "one\ntwo\nthree", "one\ntwo\nthree\n",
      "a long first line that spans several shares\nb\nc\n", "x\n\ny\n\n\nz"};
  for (const std::string& t : texts) {
    const std::vector<std::size_t> one = lines_by_ranks(t, 1);
    for (int n = 2; n <= 9; ++n) CHECK(lines_by_ranks(t, n) == one);
  }
  CHECK(lines_by_ranks("one\ntwo\nthree", 1) == std::vector<std::size_t>{0, 4, 8});
  CHECK(line_start_at_or_after("ab\ncd", 1) == 3);
  CHECK(line_start_at_or_after("ab\ncd", 3) == 3);
  CHECK(line_start_at_or_after("ab\ncd", 4) == 5);
  CHECK(line_of("ab\ncd\nef", 0) == 1);
  CHECK(line_of("ab\ncd\nef", 3) == 2);
  CHECK(line_of("ab\ncd\nef", 7) == 3);
}

TEST_CASE("fsdp_data prepare: the three JSONL shapes", "[fsdp_data]") {
  const Document t = read_jsonl_line(R"({"text": "h\u00e9llo", "id": 7})");
  CHECK(t.kind == DocumentKind::Text);
  CHECK(t.text == "h\xc3\xa9llo");
  const Document p = read_jsonl_line(R"({"prompt": "Q", "completion": "A"})");
  CHECK(p.kind == DocumentKind::PromptCompletion);
  CHECK(p.prompt == "Q");
  CHECK(p.completion == "A");
  const Document m =
      read_jsonl_line(R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})");
  CHECK(m.kind == DocumentKind::Messages);
  CHECK(m.messages.size() == 2);
  CHECK(is_blank(" \t\r"));
  CHECK_FALSE(is_blank(" x"));
}

TEST_CASE("fsdp_data prepare: each malformed JSONL line has its own message", "[fsdp_data]") {
  CHECK(error_of("not json") == "not JSON (a syntax error at byte 2)");
  CHECK(error_of(R"({"text": "a")") .find("not JSON") == 0);
  CHECK(error_of("[1, 2]") == "a JSON array, not an object");
  CHECK(error_of(R"({"text": 5})") == "\"text\" is a number, not a string");
  CHECK(error_of(R"({"prompt": "Q"})") == "\"completion\" is missing");
  CHECK(error_of(R"({"completion": "A"})") == "\"prompt\" is missing");
  CHECK(error_of(R"({"foo": "x"})") ==
        "an object with none of \"text\", \"prompt\"/\"completion\" or \"messages\"");
  CHECK(error_of(R"({"text": "a", "messages": []})").find("an object with more than one of") == 0);
  CHECK(error_of(R"({"messages": "hi"})") == "\"messages\" is a string, not an array");
  CHECK(error_of(R"({"messages": []})") == "\"messages\" is empty");
  CHECK(error_of(R"({"messages": [{"role": "user"}]})") == "\"messages\"[0]: \"content\" is missing");
  CHECK(error_of(R"({"messages": [{"role": 1, "content": "x"}]})") ==
        "\"messages\"[0]: \"role\" is a number, not a string");
  CHECK(error_of("{\"text\": \"a\xff\"}") == "invalid UTF-8 at byte 12 of the line");
  CHECK(error_of(R"({"text": "\ud800"})").find("not JSON") == 0);  // a lone surrogate
  try {
    read_text_file("ok\n\xc3\x28");
    FAIL("no error");
  } catch (const DocumentError& e) {
    CHECK(e.at == 3);
  }
}

TEST_CASE("fsdp_data prepare: a chat's own tools, kept in the line's key order", "[fsdp_data]") {
  const std::string chat = R"({"messages": [{"role": "user", "content": "hi"}], )";
  const Document d = read_jsonl_line(
      chat + R"("tools": [{"type": "function", "function": {"name": "f", "parameters": {"z": 1, "a": 2}}},)"
             R"( {"name": "g", "description": "bare"}]})");
  REQUIRE(d.tools.size() == 2);
  CHECK(d.tools[0].dump() == R"({"type":"function","function":{"name":"f","parameters":{"z":1,"a":2}}})");
  CHECK(d.messages[0].begin().key() == "role");
  CHECK(read_jsonl_line(chat + R"("tools": null})").tools.is_null());
  CHECK(read_jsonl_line(chat + R"("tools": []})").tools.is_array());
  CHECK(error_of(chat + R"("tools": "[]"})") ==
        "\"tools\" is a string, not an array of function definitions (a JSON string: decode it into the line)");
  CHECK(error_of(chat + R"("tools": [1]})") == "\"tools\"[0] is a number, not an object");
  CHECK(error_of(chat + R"("tools": [{"type": "code"}]})") == "\"tools\"[0]: \"type\" is not \"function\"");
  CHECK(error_of(chat + R"("tools": [{"type": "function"}]})") == "\"tools\"[0]: \"function\" is missing");
  CHECK(error_of(chat + R"("tools": [{"type": "function", "function": {}}]})") ==
        "\"tools\"[0].function: \"name\" is missing");
  CHECK(error_of(chat + R"("tools": [{"name": ""}]})") == "\"tools\"[0]: \"name\" is empty");
  CHECK(error_of(chat + R"("tools": [{"name": "f", "description": 2}]})") ==
        "\"tools\"[0]: \"description\" is a number, not a string");
  CHECK(error_of(chat + R"("tools": [{"name": "f", "parameters": []}]})") ==
        "\"tools\"[0]: \"parameters\" is an array, not an object (a JSON schema)");
}

TEST_CASE("fsdp_data prepare: decode's A:B ranges", "[fsdp_data]") {
  std::int64_t a = -1, b = -1;
  CHECK(parse_range("3:7", a, b));
  CHECK((a == 3 && b == 7));
  CHECK(parse_range("5", a, b));
  CHECK((a == 5 && b == 6));
  CHECK(parse_range(":2", a, b));
  CHECK((a == 0 && b == 2));
  CHECK(parse_range("4:", a, b));
  CHECK((a == 4 && b == INT64_MAX));
  CHECK_FALSE(parse_range("x:2", a, b));
  CHECK_FALSE(parse_range("-1:2", a, b));
  CHECK_FALSE(parse_range("", a, b));
}
