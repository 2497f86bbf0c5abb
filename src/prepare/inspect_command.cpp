// SPDX-License-Identifier: MIT
#include "prepare/inspect_command.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/check.hpp"
#include "core/exit_codes.hpp"
#include "prepare/eos_token.hpp"
#include "prepare/file_summary.hpp"
#include "data/tokenizer.hpp"

namespace fsdp::prepare {
namespace {

int failed(const std::string& what, int code) {
  std::fprintf(stderr, "fsdp-data: %s\n", one_line(what).c_str());
  return code;
}

}  // namespace

int run_info(const InspectOptions& o) {
  std::optional<Tokenizer> tok;
  std::int64_t vocab = o.vocab;
  std::int32_t eos = -1;
  try {
    if (!o.tokenizer_dir.empty()) {
      tok.emplace(Tokenizer::load(o.tokenizer_dir));
      if (vocab == 0) vocab = std::int64_t(tok->vocab_size());
      if (!o.eos.empty() || tok->eos_id() >= 0) eos = resolve_eos(*tok, o.eos);
    } else if (!o.eos.empty()) {
      if (o.eos.find_first_not_of("0123456789") != std::string::npos || o.eos.size() > 9)
        return failed("--eos: without --tokenizer, give the id as a number", exit_code::kBadConfig);
      eos = std::int32_t(std::stol(o.eos));
    }
  } catch (const DataError& e) {
    return failed(e.what(), exit_code::kBadData);
  }
  FileSummary s;
  try {
    s = summarize_token_file(o.file, eos);
  } catch (const DataError& e) {
    return failed(e.what(), exit_code::kBadData);
  }
  const bool fits = vocab > 0 && s.max_id < vocab;
  if (o.json) {
    nlohmann::json j = {{"file", o.file},           {"tokens", s.tokens},
                        {"trained_tokens", s.trained}, {"max_id", s.max_id},
                        {"mask", s.has_mask}};
    j["documents"] = s.documents >= 0 ? nlohmann::json(s.documents) : nlohmann::json();
    j["eos_id"] = s.eos_id >= 0 ? nlohmann::json(s.eos_id) : nlohmann::json();
    j["vocab_size"] = vocab > 0 ? nlohmann::json(vocab) : nlohmann::json();
    j["fits_vocab"] = vocab > 0 ? nlohmann::json(fits) : nlohmann::json();
    std::printf("%s\n", j.dump().c_str());
    return exit_code::kDone;
  }
  std::printf("%s\n", o.file.c_str());
  if (s.documents >= 0)
    std::printf("  documents       %lld (ended by id %d%s)\n", (long long)s.documents, s.eos_id,
                s.has_mask ? ", from the mask" : "");
  else
    std::printf("  documents       unknown (no mask, no --eos or --tokenizer)\n");
  std::printf("  tokens          %lld\n", (long long)s.tokens);
  std::printf("  trained tokens  %lld%s\n", (long long)s.trained,
              s.has_mask ? "" : " (no mask: all)");
  std::printf("  largest id      %d", s.max_id);
  if (vocab > 0)
    std::printf(fits ? " (fits the vocabulary of %lld)\n" : " (PAST the vocabulary of %lld)\n",
                (long long)vocab);
  else
    std::printf("\n");
  return exit_code::kDone;
}

int run_decode(const InspectOptions& o) {
  std::int64_t begin = 0, end = 1;
  const bool by_tokens = !o.tokens.empty();
  if (!parse_range(by_tokens ? o.tokens : (o.documents.empty() ? "0" : o.documents), begin, end))
    return failed(std::string(by_tokens ? "--tokens" : "--documents") +
                      ": expected A:B (token or document indices, B exclusive)",
                  exit_code::kBadConfig);
  if (begin >= end)
    return failed(std::string(by_tokens ? "--tokens " + o.tokens : "--documents " + o.documents) +
                      ": an empty range (B must be greater than A)",
                  exit_code::kBadConfig);
  try {
    const Tokenizer tok = Tokenizer::load(o.tokenizer_dir);
    const std::int32_t eos = o.eos.empty() && tok.eos_id() < 0 ? -1 : resolve_eos(tok, o.eos);
    const std::string text = tok.decode(tokens_in_range(o.file, begin, end, !by_tokens, eos));
    std::fwrite(text.data(), 1, text.size(), stdout);  // exactly the text: no newline added
  } catch (const DataError& e) {
    return failed(e.what(), exit_code::kBadData);
  }
  return exit_code::kDone;
}

}  // namespace fsdp::prepare
