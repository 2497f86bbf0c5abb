// SPDX-License-Identifier: MIT
// The all-to-all with variable counts, as every backend shares it: argument checks before any
// data moves, the fingerprint (whose count is the number of blocks: the element counts differ
// from rank to rank by design), the pairwise count check of debug.check_collectives, timing and
// link emulation. bf16 travels as 4-byte words, so the backends only ever move floats.
#include <cstdint>
#include <cstring>

#include "comm/communicator.hpp"
#include "core/check.hpp"

namespace fsdp::comm {
namespace {

// Counts and displacements in 4-byte words, for elements of 4 / per_word bytes (checked even).
PeerBlocks in_words(const PeerBlocks& b, std::int64_t per_word) {
  PeerBlocks w = b;
  for (std::size_t p = 0; p < w.counts.size(); ++p) {
    w.counts[p] /= per_word;
    w.displs[p] /= per_word;
  }
  return w;
}

void check_whole_words(const BlocksContext& c, const void* buf, const PeerBlocks& b,
                       const char* side) {
  if (reinterpret_cast<std::uintptr_t>(buf) % 4 != 0)
    fatal(c.where + ": the " + side + " buffer is not 4-byte aligned; bf16 moves as words");
  for (std::size_t p = 0; p < b.counts.size(); ++p)
    if (b.counts[p] % 2 != 0 || b.displs[p] % 2 != 0)
      fatal(c.where + ": " + side + " block for rank " + std::to_string(p) + " has count " +
            std::to_string(b.counts[p]) + " at " + std::to_string(b.displs[p]) +
            "; bf16 all-to-alls move whole 4-byte words, so both must be even");
}

}  // namespace

Handle Communicator::exchange(const void* send, std::size_t send_extent,
                              const PeerBlocks& send_blocks, void* recv, std::size_t recv_extent,
                              const PeerBlocks& recv_blocks, bool blocking, const char* dtype,
                              std::size_t elem_bytes) {
  const BlocksContext ctx{
      "comm::all_to_all_v of " + std::string(dtype) + " on communicator '" + name_ + "'", size_,
      rank_};
  check_all_to_all_v(ctx, send_blocks, send_extent, recv_blocks, recv_extent);
  const std::int64_t per_word = std::int64_t(4 / elem_bytes);
  if (per_word > 1) {
    check_whole_words(ctx, send, send_blocks, "send");
    check_whole_words(ctx, recv, recv_blocks, "recv");
  }
  const char* s0 = static_cast<const char*>(send);
  const char* r0 = static_cast<const char*>(recv);
  if (send_extent > 0 && recv_extent > 0 && moves_data() && s0 < r0 + recv_extent * elem_bytes &&
      r0 < s0 + send_extent * elem_bytes)
    fatal(ctx.where + ": send and recv overlap (an all-to-all-v is never in place)");

  const std::int64_t sent = send_blocks.total();
  const std::uint64_t seq = enter("all_to_all_v", dtype, std::uint64_t(size_));
  Watch watch([&] { return watch_label("all_to_all_v", std::uint64_t(sent)); }, board_, seq);
  if (check_ && size_ > 1) {
    std::vector<std::int64_t> sent_to_me(std::size_t(size_), 0);
    all_to_all_bytes(send_blocks.counts.data(), sent_to_me.data(), sizeof(std::int64_t));
    check_counts_agree(ctx, sent_to_me, recv_blocks);
  }
  order_after_compute();
  const auto t0 = Clock::now();
  const ConstVec sw(static_cast<const float*>(send), send_extent / std::size_t(per_word));
  const Vec rw(static_cast<float*>(recv), recv_extent / std::size_t(per_word));
  auto pending = per_word == 1 ? start_all_to_all_v(sw, send_blocks, rw, recv_blocks, blocking)
                               : start_all_to_all_v(sw, in_words(send_blocks, per_word), rw,
                                                    in_words(recv_blocks, per_word), blocking);
  const std::size_t bytes = std::size_t(sent) * elem_bytes;
  const double to_others =
      double(sent - send_blocks.counts[std::size_t(rank_)]) * double(elem_bytes);
  return issued("all_to_all_v", bytes, size_ == 1 ? double(bytes) : to_others, t0,
                std::move(pending));
}

void Communicator::all_to_all_v(ConstVec send, const PeerBlocks& send_blocks, Vec recv,
                                const PeerBlocks& recv_blocks) {
  exchange(send.data(), send.extent(0), send_blocks, recv.data(), recv.extent(0), recv_blocks, true,
           "float", sizeof(float))
      .wait();
}

Handle Communicator::iall_to_all_v(ConstVec send, const PeerBlocks& send_blocks, Vec recv,
                                   const PeerBlocks& recv_blocks) {
  return exchange(send.data(), send.extent(0), send_blocks, recv.data(), recv.extent(0),
                  recv_blocks, false, "float", sizeof(float));
}

void Communicator::all_to_all_v(ConstBf16Vec send, const PeerBlocks& send_blocks, Bf16Vec recv,
                                const PeerBlocks& recv_blocks) {
  exchange(send.data(), send.extent(0), send_blocks, recv.data(), recv.extent(0), recv_blocks, true,
           "bf16", sizeof(std::uint16_t))
      .wait();
}

Handle Communicator::iall_to_all_v(ConstBf16Vec send, const PeerBlocks& send_blocks, Bf16Vec recv,
                                   const PeerBlocks& recv_blocks) {
  return exchange(send.data(), send.extent(0), send_blocks, recv.data(), recv.extent(0),
                  recv_blocks, false, "bf16", sizeof(std::uint16_t));
}

std::vector<std::int64_t> Communicator::exchange_counts(
    const std::vector<std::int64_t>& send_counts) {
  if (send_counts.size() != std::size_t(size_))
    fatal("comm::exchange_counts on communicator '" + name_ + "': " +
          std::to_string(send_counts.size()) + " counts for a group of " + std::to_string(size_));
  const std::uint64_t seq = enter("exchange_counts", "i64", std::uint64_t(size_));
  Watch watch([&] { return watch_label("exchange_counts", std::uint64_t(size_)); }, board_, seq);
  const auto t0 = Clock::now();
  std::vector<std::int64_t> got(std::size_t(size_), 0);
  all_to_all_bytes(send_counts.data(), got.data(), sizeof(std::int64_t));
  const std::size_t bytes = send_counts.size() * sizeof(std::int64_t);
  issued("exchange_counts", bytes, double(bytes), t0, nullptr).wait();
  return got;
}

}  // namespace fsdp::comm
