// SPDX-License-Identifier: MIT
// How fsdp-data prepare splits its inputs over the ranks: the inputs are one byte stream in
// command-line order, rank r owns the bytes [r*T/N, (r+1)*T/N), and a document belongs to the
// rank that owns its first byte (a .txt file's first byte, a JSONL line's first byte). So the
// shares are balanced by bytes, cut only at line or file starts, and the same for any reader.
#pragma once
#include <cstdint>
#include <string_view>

namespace fsdp::prepare {

// A half-open byte range [begin, end) of the concatenated inputs.
struct ByteRange {
  std::uint64_t begin = 0, end = 0;
};

// Rank `rank`'s share of `total` bytes over `nranks` ranks. The last rank's end is `total`;
// shares differ by at most one byte.
ByteRange byte_share(std::uint64_t total, int nranks, int rank);

// Whether a document starting at global byte `at` belongs to `share`, the share of rank
// `rank` of `nranks`. A document at the very end (an empty last file) belongs to the last rank.
bool owns(const ByteRange& share, std::uint64_t at, std::uint64_t total, bool last_rank);

// The first line start at or after `from` in `text` (a line starts at 0 or just after '\n');
// text.size() when there is none.
std::size_t line_start_at_or_after(std::string_view text, std::size_t from);

// The 1-based line of byte `at` in `text`: one more than the newlines before it.
std::uint64_t line_of(std::string_view text, std::size_t at);

}  // namespace fsdp::prepare
