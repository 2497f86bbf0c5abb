// SPDX-License-Identifier: MIT
// Run-deck text found by fuzzing (tests/fuzz/fuzz_config.cpp): non-ASCII characters where
// toml++ 3.3 would reach undefined behaviour are one ConfigError line; the same characters in
// strings and comments load; --set text that is not UTF-8 is refused, so the resolved deck
// always reloads.
#include <catch2/catch.hpp>

#include "config/load_config.hpp"

using namespace fsdp;

TEST_CASE("config: non-ASCII outside strings and comments is a one-line error, not UB") {
  using namespace std::string_literals;
  const std::string bad[] = {
      "[model]\nn_l\xd2\x92\x61yer = 2\n"s,                 // in a bare key
      "[train]\nsteps = 0x\"\0\0\xd2\x8a\"\n"s,             // after a quote inside a bare value
      "x =[2toi[model.\"\"\"\xc2\xa7\"\"\"\n"s,             // ... and inside an array
      "[data]\ntrain = \"\"\"\\\n  \xc2\xa7\"\"\"\n"s,      // after a line-ending backslash
      "[data]\ntrain = \"\"\"a\"\"\"\" \xc2\xa7\"\n"s,      // after a closing \"\"\" plus a quote
      "ry.\"=\" \xc2\xa7\""s,                                // after a quoted part of a dotted key
  };
  for (const std::string& deck : bad) {
    CAPTURE(deck);
    REQUIRE_THROWS_AS(load_config_from_string(deck, "deck.toml"), ConfigError);
    try {
      load_config_from_string(deck, "deck.toml");
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      CHECK(what.rfind("deck.toml:", 0) == 0);
      CHECK(what.find('\n') == std::string::npos);
      CHECK(what.find("non-ASCII character") != std::string::npos);
    }
  }
}

TEST_CASE("config: non-ASCII in strings and comments loads") {
  const RunConfig c = load_config_from_string(
      "\xef\xbb\xbf# caf\xc3\xa9\n[data]\ntrain=\"donn\xc3\xa9\x65s.bin\" # \xc2\xa7\n"
      "val = '''\xc2\xa7'''\n",
      "deck.toml");
  CHECK(c.data.train == "donn\xc3\xa9\x65s.bin");
  CHECK(c.data.val == "\xc2\xa7");
  CHECK(load_config_from_string(c.resolved_toml, "resolved").resolved_toml == c.resolved_toml);
}

TEST_CASE("config: --set text must be UTF-8 so the resolved deck reloads") {
  REQUIRE_THROWS_WITH(load_config_from_string("", "deck.toml", {"data.val=\xff\xfe raw"}),
                      Catch::Contains("--set data.val=") && Catch::Contains("in UTF-8"));
  const RunConfig c = load_config_from_string("", "deck.toml", {"data.val=caf\xc3\xa9"});
  CHECK(load_config_from_string(c.resolved_toml, "resolved").data.val == "caf\xc3\xa9");
}
