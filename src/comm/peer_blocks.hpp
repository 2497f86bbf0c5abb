// SPDX-License-Identifier: MIT
// Where each peer's block sits in an all-to-all-v buffer (MPI_Alltoallv's counts and
// displacements), and the argument checks every backend relies on before it moves a byte.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fsdp::comm {

// Peer p's block is elements [displs[p], displs[p] + counts[p]) of the buffer. Signed, so a
// negative count computed by a caller is reported as such rather than wrapping to a huge one.
struct PeerBlocks {
  std::vector<std::int64_t> counts;
  std::vector<std::int64_t> displs;

  // Blocks back to back in rank order: displs is the exclusive prefix sum of counts.
  static PeerBlocks packed(std::vector<std::int64_t> counts);
  std::int64_t total() const;  // the sum of counts
  // The smallest buffer that holds every block: max(displs[p] + counts[p]). An empty block
  // counts too: like a pointer, its displacement may be the buffer's end but not past it.
  std::int64_t extent() const;
};

// What the checks below name in their messages: "comm::all_to_all_v on 'shard' (size 4)".
struct BlocksContext {
  std::string where;
  int size;  // the group's: one count and one displacement per rank
  int rank;
};

// fatal() with a one-line message unless both sides have one non-negative count and
// displacement per rank, every block lies inside its buffer (send_extent, recv_extent elements),
// no two receive blocks overlap (each element is written once; send blocks are only read, so
// they may share elements, as in MPI), and this rank sends itself what it expects from itself.
void check_all_to_all_v(const BlocksContext& c, const PeerBlocks& send, std::size_t send_extent,
                        const PeerBlocks& recv, std::size_t recv_extent);

// fatal() unless what rank `from` sends rank `to` is what `to` expects (in `unit`s: a
// backend that moves words reports bytes, which mean the same whatever the element type).
void check_sent_matches(const std::string& where, int from, int to, std::int64_t sent,
                        std::int64_t expected, const char* unit);

// fatal() naming the first disagreeing peer unless recv.counts[p] == sent_to_me[p] for every
// rank p, where sent_to_me[p] is what rank p says it sends this rank (exchange_counts).
void check_counts_agree(const BlocksContext& c, const std::vector<std::int64_t>& sent_to_me,
                        const PeerBlocks& recv);

}  // namespace fsdp::comm
