// SPDX-License-Identifier: MIT
// Run-deck loading: the shipped decks, overrides, one-line errors for every kind of bad input,
// the resolved deck reproducing its config, and help text covering the whole schema.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "config/load_config.hpp"
#include "config/schema.hpp"

using namespace fsdp;

namespace {

std::string deck_path(const std::string& name) {
#ifdef FSDP_SOURCE_DIR
  return std::string(FSDP_SOURCE_DIR) + "/inputs/" + name;
#else
  return "inputs/" + name;
#endif
}

// The ConfigError text, or "" when loading succeeds (so a test sees which case failed to fail).
std::string error_of(const std::string& deck, const std::vector<std::string>& overrides = {},
                     const std::string& source = "x.toml") {
  try {
    load_config_from_string(deck, source, overrides);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool same_config(const RunConfig& a, const RunConfig& b) {
  for (const KeySpec& k : config_schema())
    if (k.get(a) != k.get(b)) return false;
  return true;
}

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    path = (std::filesystem::temp_directory_path() / "fsdp_test_config_deck.toml").string();
    std::ofstream(path) << text;
  }
  ~TempFile() { std::filesystem::remove(path); }
};

}  // namespace

TEST_CASE("config: default deck loads with its values and schema defaults elsewhere") {
  RunConfig c = load_config(deck_path("default.toml"));
  CHECK(c.model.n_layer == 4);
  CHECK(c.model.n_embd == 128);
  CHECK(c.model.vocab_size == 256);
  CHECK(c.model.block_size == 64);
  CHECK(c.train.steps == 300);
  CHECK(c.train.batch_size == 16);
  CHECK(c.train.micro_batch_size == 8);
  CHECK(c.train.lr == 3e-3);
  CHECK(c.train.min_lr == 3e-4);
  CHECK(c.train.warmup_steps == 30);
  CHECK(c.train.seed == 1337u);
  CHECK(c.data.format == "text");
  CHECK(c.eval.every == 100);
  CHECK(c.fsdp.strategy == "zero3");
  CHECK(c.train.beta2 == RunConfig{}.train.beta2);  // not in the deck
  CHECK(c.checkpoint.dir == RunConfig{}.checkpoint.dir);
}

TEST_CASE("config: every shipped deck validates") {
  RunConfig small = load_config(deck_path("bench_small.toml"));
  CHECK(small.model.n_embd == 256);
  CHECK(small.model.block_size == 128);
  CHECK(small.fsdp.strategy == "ddp");
  CHECK(small.eval.sequences == 0);
  RunConfig gpt2 = load_config(deck_path("gpt2_124m.toml"));
  CHECK(gpt2.model.n_layer == 12);
  CHECK(gpt2.model.vocab_size == 50257);
  CHECK(gpt2.model.block_size == 1024);
  CHECK(gpt2.data.format == "llmc");
  RunConfig bench = load_config(deck_path("bench_124m.toml"));
  CHECK(bench.model.n_embd == 768);
  CHECK(bench.model.block_size == 64);
  CHECK(bench.train.steps == 6);
  CHECK(bench.eval.sequences == 0);
}

TEST_CASE("config: overrides apply in order and parse as TOML values") {
  RunConfig c = load_config(
      deck_path("default.toml"),
      {"train.lr=1e-2", "train.steps = 5", "data.train=builtin:val", "data.val=\"my file.bin\"",
       "fsdp.strategy=ddp", "train.min_lr=0", "memory.device_budget=512MiB",
       "train.deterministic=true", "checkpoint.dir=2024", "train.steps=7", "train.grad_clip=2"});
  CHECK(c.train.lr == 1e-2);
  CHECK(c.train.steps == 7);
  CHECK(c.data.train == "builtin:val");
  CHECK(c.data.val == "my file.bin");
  CHECK(c.fsdp.strategy == "ddp");
  CHECK(c.train.min_lr == 0.0);
  CHECK(c.memory.device_budget == 512LL << 20);
  CHECK(c.train.deterministic);
  CHECK(c.checkpoint.dir == "2024");
  CHECK(c.train.grad_clip == 2.0);  // an integer where a float is expected
}

TEST_CASE("config: byte counts") {
  CHECK(parse_byte_size("1GiB") == std::int64_t{1} << 30);
  CHECK(parse_byte_size("2GB") == 2000000000);
  CHECK(parse_byte_size("1.5 gib") == 3 * (std::int64_t{1} << 29));
  CHECK(parse_byte_size("4096") == 4096);
  CHECK_FALSE(parse_byte_size("-1GiB"));
  CHECK_FALSE(parse_byte_size("1.3B"));
  CHECK_FALSE(parse_byte_size("GiB"));
  CHECK_FALSE(parse_byte_size("12 parsecs"));
  CHECK_FALSE(parse_byte_size("16EiB"));
  CHECK(load_config_from_string("[memory]\ndevice_budget = \"2GB\"", "m.toml", {})
            .memory.device_budget == 2000000000);
}

TEST_CASE("config: every rejection is one line naming the source, the key and the value") {
  struct Case {
    std::string deck;
    std::vector<std::string> overrides;
    std::vector<std::string> expect;  // substrings of what()
  };
  const std::vector<Case> cases = {
      {"[model]\nn_layr = 4", {}, {"x.toml:2:", "model.n_layr", "unknown key", "n_layer, n_head"}},
      {"[optimizer]\nlr = 1.0", {}, {"x.toml:", "optimizer", "unknown section", "model, train"}},
      {"steps = 3", {}, {"x.toml:", "steps", "[section]"}},
      {"[train]\nbatch_size = \"8\"", {}, {"x.toml:2:", "train.batch_size", "string \"8\""}},
      {"[train]\nlr = true", {}, {"train.lr", "expected a float > 0, got boolean true"}},
      {"[train]\nsteps = 2.5", {}, {"train.steps", "got float 2.5"}},
      {"[train]\nbatch_size = -3",
       {},
       {"x.toml:2:", "train.batch_size: expected an integer >= 1, got -3"}},
      {"[train]\nbeta1 = 1.0", {}, {"train.beta1", "in [0, 1)", "got 1.0"}},
      {"[train]\nlr = nan", {}, {"train.lr", "got nan"}},
      {"[train]\nseed = -1", {}, {"train.seed", ">= 0"}},
      {"[model]\nn_layer = 4294967296", {}, {"model.n_layer", "[1, 10000]", "4294967296"}},
      {"[model]\nvocab_size = 2097152", {}, {"model.vocab_size", "[2, 1048576]"}},
      {"[model]\nblock_size = [64]", {}, {"model.block_size", "got an array"}},
      {"[fsdp]\nprefetch = 65", {}, {"fsdp.prefetch", "65"}},
      {"[fsdp]\nstrategy = \"zero4\"", {}, {"fsdp.strategy", "\"zero4\"", "\"zero3\""}},
      {"[checkpoint]\nkeep = 0", {}, {"checkpoint.keep", ">= 1"}},
      {"[memory]\ndevice_budget = \"lots\"", {}, {"memory.device_budget", "\"lots\""}},
      {"[model]\nn_head = 3", {}, {"x.toml:2:", "model.n_embd", "model.n_head = 3", "128"}},
      {"[train]\nlr = 1e-3\nmin_lr = 1e-2", {}, {"x.toml:3:", "train.min_lr", "train.lr"}},
      {"", {"model.n_head=5"}, {"--set model.n_head=5", "model.n_embd", "multiple"}},
      {"",
       {"train.lr=abc"},
       {"--set train.lr=abc: train.lr: expected a float > 0, got string \"abc\""}},
      {"", {"train.lr"}, {"--set train.lr", "section.key=value"}},
      {"", {"lr=1"}, {"--set lr=1", "section.key=value"}},
      {"", {"train.lrr=1"}, {"--set train.lrr=1", "train.lrr", "unknown key"}},
      {"", {"optim.lr=1"}, {"--set optim.lr=1", "optim.lr", "unknown section"}},
      {"", {"fsdp.strategy=zero9"}, {"--set fsdp.strategy=zero9", "fsdp.strategy", "\"zero9\""}},
      {"[model\nn_layer = 4", {}, {"x.toml:1:", "TOML syntax error"}},
  };
  for (const Case& c : cases) {
    const std::string msg = error_of(c.deck, c.overrides);
    INFO("deck: " << c.deck << "\nerror: " << msg);
    REQUIRE_FALSE(msg.empty());
    CHECK(msg.find('\n') == std::string::npos);
    for (const std::string& part : c.expect) CHECK(msg.find(part) != std::string::npos);
  }
}

TEST_CASE("config: file errors name the file") {
  const std::string missing = deck_path("no_such_deck.toml");
  try {
    load_config(missing);
    FAIL("a missing file loaded");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()).find(missing) != std::string::npos);
  }
  TempFile bad("[train]\nsteps = = 3\n");
  try {
    load_config(bad.path);
    FAIL("a deck with a syntax error loaded");
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find(bad.path + ":2:") != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
  TempFile typo("[train]\nstesp = 3\n");
  CHECK_THROWS_WITH(load_config(typo.path),
                    Catch::Contains(typo.path) && Catch::Contains("train.stesp"));
}

TEST_CASE("config: resolved deck reproduces the config exactly") {
  RunConfig c = load_config(
      deck_path("default.toml"),
      {"train.lr=0.1", "train.eps=1e-8", "train.min_lr=0.030000000000000002",
       "data.train=\"dir with \\\"quotes\\\" and \\\\ slash\"", "memory.device_budget=1.5GiB",
       "train.seed=9007199254740993", "fsdp.reshard_after_forward=false", "comm.emulate_gbps=12.5",
       "data.val=\"tab\\there\""});
  CHECK(c.data.train == "dir with \"quotes\" and \\ slash");
  CHECK(c.train.seed == 9007199254740993u);
  CHECK(c.data.val == "tab\there");
  RunConfig again = load_config_from_string(c.resolved_toml, "checkpoint", {});
  CHECK(same_config(c, again));
  CHECK(again.resolved_toml == c.resolved_toml);
  // Every key is written, so the resolved deck does not depend on today's defaults.
  for (const KeySpec& k : config_schema())
    CHECK(c.resolved_toml.find("\n" + k.key + " = ") != std::string::npos);
}

TEST_CASE("config: validate_config checks configs built in code") {
  CHECK_NOTHROW(validate_config(RunConfig{}, "defaults"));
  RunConfig c;
  c.train.micro_batch_size = 0;
  CHECK_THROWS_WITH(validate_config(c, "code"), Catch::Contains("code: train.micro_batch_size"));
  c = RunConfig{};
  c.model.n_embd = 130;
  CHECK_THROWS_WITH(validate_config(c, "code"), Catch::Contains("model.n_embd"));
}

TEST_CASE("config: help text lists every key with its default and meaning") {
  const std::string help = config_help();
  const RunConfig defaults;
  for (const std::string& section : config_sections())
    CHECK(help.find("[" + section + "]") != std::string::npos);
  for (const KeySpec& k : config_schema()) {
    INFO(k.name());
    CHECK(help.find("  " + k.key + " = " + toml_literal(k.get(defaults))) != std::string::npos);
    CHECK(help.find(k.meaning) != std::string::npos);
  }
}
