// SPDX-License-Identifier: MIT
// The checks run on the calling rank before any data moves, so a bad count or displacement is
// one clear line naming the side, the peer and the numbers instead of a corrupted buffer.
#include "comm/peer_blocks.hpp"

#include <algorithm>
#include <numeric>

#include "core/check.hpp"

namespace fsdp::comm {
namespace {

std::string prefix(const BlocksContext& c) {
  return c.where + " (size " + std::to_string(c.size) + ")";
}

std::string range(std::int64_t lo, std::int64_t n) {
  return "[" + std::to_string(lo) + ", " + std::to_string(lo + n) + ")";
}

void check_side(const BlocksContext& c, const PeerBlocks& b, std::size_t extent, const char* side) {
  const std::size_t n = std::size_t(c.size);
  if (b.counts.size() != n || b.displs.size() != n)
    fatal(prefix(c) + ": " + side + " blocks have " + std::to_string(b.counts.size()) +
          " counts and " + std::to_string(b.displs.size()) + " displacements, need one per rank");
  for (std::size_t p = 0; p < n; ++p) {
    const std::int64_t count = b.counts[p], displ = b.displs[p];
    const std::string peer = " for rank " + std::to_string(p);
    if (count < 0)
      fatal(prefix(c) + ": " + side + " count" + peer + " is negative: " + std::to_string(count));
    if (displ < 0)
      fatal(prefix(c) + ": " + side + " displacement" + peer +
            " is negative: " + std::to_string(displ));
    // Written as a subtraction: displ + count may overflow for garbage values.
    if (std::uint64_t(displ) > extent || std::uint64_t(count) > extent - std::uint64_t(displ))
      fatal(prefix(c) + ": " + side + " block" + peer + " " + range(displ, count) +
            " is outside the " + side + " buffer of " + std::to_string(extent) + " elements");
  }
}

void check_disjoint(const BlocksContext& c, const PeerBlocks& b, const char* side) {
  std::vector<std::size_t> order(b.counts.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  order.erase(std::remove_if(order.begin(), order.end(),
                             [&](std::size_t p) {
                               return b.counts[p] == 0;  // an empty block overlaps nothing
                             }),
              order.end());
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t q) { return b.displs[a] < b.displs[q]; });
  for (std::size_t i = 1; i < order.size(); ++i) {
    const std::size_t a = order[i - 1], q = order[i];
    if (b.displs[a] + b.counts[a] > b.displs[q])
      fatal(prefix(c) + ": " + side + " blocks for ranks " + std::to_string(a) + " " +
            range(b.displs[a], b.counts[a]) + " and " + std::to_string(q) + " " +
            range(b.displs[q], b.counts[q]) + " overlap");
  }
}

}  // namespace

PeerBlocks PeerBlocks::packed(std::vector<std::int64_t> counts) {
  PeerBlocks b;
  b.displs.resize(counts.size());
  std::exclusive_scan(counts.begin(), counts.end(), b.displs.begin(), std::int64_t(0));
  b.counts = std::move(counts);
  return b;
}

std::int64_t PeerBlocks::total() const {
  return std::accumulate(counts.begin(), counts.end(), std::int64_t(0));
}

std::int64_t PeerBlocks::extent() const {
  std::int64_t end = 0;
  for (std::size_t p = 0; p < counts.size() && p < displs.size(); ++p)
    end = std::max(end, displs[p] + counts[p]);
  return end;
}

void check_all_to_all_v(const BlocksContext& c, const PeerBlocks& send, std::size_t send_extent,
                        const PeerBlocks& recv, std::size_t recv_extent) {
  check_side(c, send, send_extent, "send");
  check_side(c, recv, recv_extent, "recv");
  check_disjoint(c, recv, "recv");
  const std::size_t me = std::size_t(c.rank);
  if (send.counts[me] != recv.counts[me])
    fatal(prefix(c) + ": rank " + std::to_string(c.rank) + " sends itself " +
          std::to_string(send.counts[me]) + " elements but expects " +
          std::to_string(recv.counts[me]) + " from itself");
}

void check_sent_matches(const std::string& where, int from, int to, std::int64_t sent,
                        std::int64_t expected, const char* unit) {
  if (sent != expected)
    fatal(where + ": rank " + std::to_string(from) + " sends rank " + std::to_string(to) + " " +
          std::to_string(sent) + " " + unit + " but rank " + std::to_string(to) + " expects " +
          std::to_string(expected));
}

void check_counts_agree(const BlocksContext& c, const std::vector<std::int64_t>& sent_to_me,
                        const PeerBlocks& recv) {
  for (std::size_t p = 0; p < sent_to_me.size(); ++p)
    check_sent_matches(prefix(c), int(p), c.rank, sent_to_me[p], recv.counts[p], "elements");
}

}  // namespace fsdp::comm
