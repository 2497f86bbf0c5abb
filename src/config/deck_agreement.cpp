// SPDX-License-Identifier: MIT
#include "config/deck_agreement.hpp"

#include <xxhash.h>

#include <map>
#include <sstream>
#include <vector>

#include "core/check.hpp"
#include "comm/agree.hpp"

namespace fsdp {
namespace {

// section.key -> value, in order of appearance.
std::vector<std::pair<std::string, std::string>> keys_of(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(text);
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const std::size_t eq = line.find(" = ");
    if (eq == std::string::npos) out.emplace_back(section + ".(line)", line);
    else out.emplace_back(section + "." + line.substr(0, eq), line.substr(eq + 3));
  }
  return out;
}

}  // namespace

std::string first_difference(const std::string& a, const std::string& b, int rank_a, int rank_b) {
  if (a == b) return {};
  const auto ka = keys_of(a), kb = keys_of(b);
  std::map<std::string, std::string> mb(kb.begin(), kb.end());
  auto said = [&](const std::string& key, const std::string& va, const std::string& vb) {
    return key + " is " + one_line(va, 120) + " on rank " + std::to_string(rank_a) + " but " +
           one_line(vb, 120) + " on rank " + std::to_string(rank_b);
  };
  for (const auto& [key, va] : ka) {
    const auto it = mb.find(key);
    if (it == mb.end()) return said(key, va, "(absent)");
    if (it->second != va) return said(key, va, it->second);
  }
  std::map<std::string, std::string> ma(ka.begin(), ka.end());
  for (const auto& [key, vb] : kb)
    if (!ma.count(key)) return said(key, "(absent)", vb);
  return "the deck text differs (order or comments) between rank " + std::to_string(rank_a) +
         " and rank " + std::to_string(rank_b);
}

std::string deck_disagreement(MPI_Comm comm, const std::string& deck) {
  int rank = 0;
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  unsigned long long h[2];
  h[0] = XXH3_64bits(deck.data(), deck.size());
  h[1] = ~h[0];  // max of h and of ~h: min and max of h in one reduction
  FSDP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, h, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm));
  if (h[0] == ~h[1]) return {};
  const std::string reference = broadcast_string(comm, deck, 0);
  const std::string mine = first_difference(reference, deck, 0, rank);
  const std::string first = agree_on_error(comm, mine);
  return first.empty() ? std::string() : "the run deck differs between ranks: " + first;
}

Agreed agree_on_start(MPI_Comm comm, const std::string& error, int code, const std::string& deck) {
  Agreed failed = agree_on_failure(comm, error, code);
  if (failed.rank > 0) failed.message = "rank " + std::to_string(failed.rank) + ": " + failed.message;
  if (failed.rank >= 0) return failed;
  const std::string differs = deck_disagreement(comm, deck);
  if (!differs.empty()) failed = {differs, 0, 2};
  return failed;
}

}  // namespace fsdp
