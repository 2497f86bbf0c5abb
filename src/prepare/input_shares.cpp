// SPDX-License-Identifier: MIT
#include "prepare/input_shares.hpp"

#include <algorithm>
#include <cstring>

namespace fsdp::prepare {

ByteRange byte_share(std::uint64_t total, int nranks, int rank) {
  // 128-bit products: total * rank overflows 64 bits only past 2^64 / nranks bytes, but the
  // cost of never thinking about it is nil.
  using u128 = unsigned __int128;
  const auto at = [&](int r) { return std::uint64_t(u128(total) * u128(r) / u128(nranks)); };
  return {at(rank), at(rank + 1)};
}

bool owns(const ByteRange& share, std::uint64_t at, std::uint64_t total, bool last_rank) {
  if (at >= total) return last_rank;
  return at >= share.begin && at < share.end;
}

std::size_t line_start_at_or_after(std::string_view text, std::size_t from) {
  if (from == 0) return 0;
  if (from > text.size()) return text.size();
  if (text[from - 1] == '\n') return from;
  const void* nl = std::memchr(text.data() + from, '\n', text.size() - from);
  return nl ? std::size_t(static_cast<const char*>(nl) - text.data()) + 1 : text.size();
}

std::uint64_t line_of(std::string_view text, std::size_t at) {
  at = std::min(at, text.size());
  return 1 + std::uint64_t(std::count(text.begin(), text.begin() + std::ptrdiff_t(at), '\n'));
}

}  // namespace fsdp::prepare
