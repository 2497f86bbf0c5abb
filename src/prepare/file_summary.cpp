// SPDX-License-Identifier: MIT
#include "prepare/file_summary.hpp"

#include <algorithm>
#include <climits>
#include <filesystem>

#include "data/token_file.hpp"
#include "data/trained_mask.hpp"

namespace fsdp::prepare {
namespace {

// Every id is accepted here (INT_MAX as the vocabulary): info reports the largest instead.
TokenFile read_tokens(const std::string& path) { return TokenFile::load(path, "llmc", INT_MAX, 1); }

std::int32_t document_end(const std::string& path, std::int32_t eos_id, bool* has_mask,
                          std::int64_t tokens, std::int64_t* trained) {
  const std::string m = TrainedMask::path_for(path);
  if (!std::filesystem::exists(m)) return eos_id;
  const TrainedMask mask = TrainedMask::load(m, tokens);
  if (has_mask) *has_mask = true;
  if (trained) *trained = mask.trained_count();
  return mask.eos_id() >= 0 ? mask.eos_id() : eos_id;
}

}  // namespace

FileSummary summarize_token_file(const std::string& path, std::int32_t eos_id) {
  const TokenFile f = read_tokens(path);
  FileSummary s;
  s.tokens = f.size();
  s.trained = s.tokens;
  s.eos_id = document_end(path, eos_id, &s.has_mask, s.tokens, &s.trained);
  for (std::int32_t t : f.tokens()) s.max_id = std::max(s.max_id, t);
  if (s.eos_id >= 0) s.documents = std::count(f.tokens().begin(), f.tokens().end(), s.eos_id);
  return s;
}

std::vector<std::int32_t> tokens_in_range(const std::string& path, std::int64_t begin,
                                          std::int64_t end, bool by_document, std::int32_t eos_id) {
  const TokenFile f = read_tokens(path);
  const std::vector<std::int32_t>& t = f.tokens();
  const auto n = std::int64_t(t.size());
  if (!by_document) {
    end = std::min(end, n);
    if (begin < 0 || begin >= end)
      throw DataError(path + ": tokens " + std::to_string(begin) + ":" + std::to_string(end) +
                      " hold nothing (the file has " + std::to_string(n) + ")");
    return {t.begin() + begin, t.begin() + end};
  }
  const std::int32_t eos = document_end(path, eos_id, nullptr, n, nullptr);
  if (eos < 0)
    throw DataError(path + ": no mask beside it records the document end id: give --eos");
  // Document d runs from just after the d-th end id to its own end id, inclusive.
  std::int64_t doc = 0, from = -1, to = -1;
  for (std::int64_t i = 0; i < n && to < 0; ++i) {
    if (doc == begin && from < 0) from = i;
    if (t[std::size_t(i)] == eos && ++doc == end) to = i + 1;
  }
  if (from >= 0 && to < 0) to = n;  // a last document without its end id
  if (begin < 0 || begin >= end || from < 0) {
    // The whole file's count, not how far the search above went (issue 63).
    std::int64_t all = std::count(t.begin(), t.end(), eos);
    if (n > 0 && t.back() != eos) ++all;  // a last document without its end id
    throw DataError(path + ": documents " + std::to_string(begin) + ":" + std::to_string(end) +
                    " hold nothing (the file has " + std::to_string(all) + ")");
  }
  return {t.begin() + from, t.begin() + to};
}

bool parse_range(const std::string& s, std::int64_t& begin, std::int64_t& end) {
  const auto number = [](const std::string& x, std::int64_t& v) {
    if (x.empty() || x.size() > 18 || x.find_first_not_of("0123456789") != std::string::npos)
      return false;
    v = std::stoll(x);
    return true;
  };
  const std::size_t colon = s.find(':');
  if (colon == std::string::npos) {
    if (!number(s, begin)) return false;
    end = begin + 1;
    return true;
  }
  const std::string a = s.substr(0, colon), b = s.substr(colon + 1);
  begin = 0;
  end = INT64_MAX;
  return (a.empty() || number(a, begin)) && (b.empty() || number(b, end));
}

}  // namespace fsdp::prepare
