// SPDX-License-Identifier: MIT
// libFuzzer target for the run-deck parser: arbitrary bytes as a TOML deck plus `--set`
// overrides. Only ConfigError may leave the loader; anything else (another exception, a crash,
// a sanitizer report) is a bug. A deck that loads must survive its own round trip: the
// resolved deck (stored in every checkpoint) reloads to the same config.
//
// Input: the deck, then any number of "\n--set <override>" chunks, each one override, e.g.
//   [train]\nsteps = 5\n--set model.n_layer=2\n--set data.train=x.bin
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "config/load_config.hpp"

namespace {

constexpr const char* kSep = "\n--set ";
constexpr std::size_t kMaxOverrides = 16;

[[noreturn]] void bug(const std::string& what, const std::string& deck) {
  std::fprintf(stderr, "fuzz_config: %s\n--- deck ---\n%s\n------------\n", what.c_str(),
               deck.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::size_t at = input.find(kSep);
  const std::string deck = input.substr(0, at);
  std::vector<std::string> overrides;
  while (at != std::string::npos && overrides.size() < kMaxOverrides) {
    const std::size_t begin = at + std::char_traits<char>::length(kSep);
    at = input.find(kSep, begin);
    overrides.push_back(input.substr(begin, at == std::string::npos ? at : at - begin));
  }

  fsdp::RunConfig cfg;
  try {
    cfg = fsdp::load_config_from_string(deck, "fuzz.toml", overrides);
  } catch (const fsdp::ConfigError&) {
    return 0;  // the one clean rejection
  } catch (const std::exception& e) {
    bug(std::string("escaped exception (not ConfigError): ") + e.what(), input);
  } catch (...) {
    bug("escaped a non-std exception", input);
  }

  // Accepted: the resolved deck must reload, unchanged, and pass validation on its own.
  try {
    fsdp::validate_config(cfg, "validate");
    const fsdp::RunConfig again = fsdp::load_config_from_string(cfg.resolved_toml, "resolved");
    if (again.resolved_toml != cfg.resolved_toml)
      bug("resolved deck does not reproduce itself:\n" + cfg.resolved_toml +
              "\n--- reloaded ---\n" + again.resolved_toml,
          input);
  } catch (const std::exception& e) {
    bug(std::string("accepted deck fails its round trip: ") + e.what() + "\n--- resolved ---\n" +
            cfg.resolved_toml,
        input);
  }
  return 0;
}
