// SPDX-License-Identifier: MIT
// The collective interface every backend implements (MPI with a one-node shared-memory fast
// path, single rank), the move-only Handle of a non-blocking collective, and link emulation.
#pragma once
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "comm/peer_blocks.hpp"
#include "comm/safety.hpp"
#include "core/bf16.hpp"
#include "core/step_log.hpp"
#include "core/types.hpp"

namespace fsdp::comm {

// Reductions are deterministic by contract, whatever the backend or message size:
//   Sum: out[i] = ((x_0[i] + x_1[i]) + x_2[i]) + ... + x_{n-1}[i], in RANK ORDER, starting
//        from rank 0's value (not from 0.0f), in float;
//   Avg: that sum divided by float(n) (a correctly rounded division, not a multiply by 1/n).
// Bitwise-reproducible training relies on this: a run gives the same bits whichever path
// (shared memory, MPI fallback, chunked or not) moved the data.
enum class ReduceOp { Sum, Avg };

// A slower link than the real one, to measure prefetch overlap on a CPU: a collective issued at
// t completes no earlier than t + latency + bus_bytes / bandwidth, where bus_bytes is
// (n-1)/n of the full buffer for all-gather and reduce-scatter, 2(n-1)/n of it for all-reduce,
// the buffer for broadcast, what this rank sends the others for all-to-all-v, and the plain
// buffer size when n == 1. Data still moves at issue; wait() sleeps until the emulated
// completion.
struct LinkEmulation {
  double latency_us = 0;
  double gbps = 0;  // GB/s (1e9 bytes/s) of bus bandwidth; 0 = unlimited
  bool active() const { return latency_us > 0 || gbps > 0; }
  double seconds(double bus_bytes) const;
};

using Clock = std::chrono::steady_clock;
// Seconds on the steady clock since its epoch: the same scale as fsdp::now_s() in io/trace.hpp.
double to_seconds(Clock::time_point t);

namespace detail {
// Data movement still in flight (an MPI request and the local work that follows it).
class Pending {
 public:
  virtual ~Pending() = default;
  virtual bool test() = 0;  // makes progress; true once the data is in place
  virtual void wait() = 0;
  // When the data was in place, for a transport that knows (a progress thread); otherwise the
  // handle uses the time it saw test() or wait() return.
  virtual bool landed_at(Clock::time_point* t) const {
    (void)t;
    return false;
  }
};
}  // namespace detail

// A non-blocking collective. Move-only; destroying or overwriting a handle whose data is still
// in flight waits for the data (the buffers must not be reused under MPI) but not for the
// emulated link. A default-constructed handle is complete.
class Handle {
 public:
  Handle() = default;
  Handle(const char* op, std::size_t bytes, Clock::time_point issued, Clock::time_point emulated,
         std::unique_ptr<detail::Pending> pending);
  Handle(Handle&& other) noexcept;
  Handle& operator=(Handle&& other) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle();

  void wait();  // data in place, then sleeps until the emulated completion
  bool test();  // true once both have happened
  bool done() const { return done_; }

  const char* op() const { return op_; }        // "all_gather", "reduce_scatter", ...
  std::size_t bytes() const { return bytes_; }  // the full buffer (as nccl-tests' size)
  double issue_time() const { return to_seconds(issued_); }
  // max(when the data was seen in place, the emulated completion); negative until done().
  double completion_time() const { return done_ ? to_seconds(completed_) : -1.0; }

 private:
  void data_landed(Clock::time_point t);

  const char* op_ = "none";
  std::size_t bytes_ = 0;
  Clock::time_point issued_{}, emulated_{}, landed_{}, completed_{};
  std::unique_ptr<detail::Pending> pending_;
  bool done_ = true;
};

// Counts come from view extents (all-to-all-v: from PeerBlocks checked against them);
// inconsistent extents are fatal. Buffers must be host accessible (Serial/OpenMP Kokkos; device
// communicators take device buffers) and must not overlap, except an in-place all-gather whose
// send is recv's own block (send.data() == recv.data() + rank() * send.extent(0)).
class Communicator {
 public:
  Communicator(int rank, int size, std::string name, LinkEmulation link);
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& name() const { return name_; }  // the group: "world", "shard", ...
  virtual const char* backend() const = 0;           // "mpi+shm", "mpi", "single"
  // False for a group that moves nothing (comm/null_communicator.hpp): its views may point at
  // memory a counting tracker never made, so their addresses are not compared.
  virtual bool moves_data() const { return true; }
  const LinkEmulation& link() const { return link_; }
  // A blocking collective of `bytes` (what this rank sends) that code which computes nothing
  // in the planner's counted run would have issued from inside its compute (the experts' token
  // exchanges, in a model that is not run there): a group that moves nothing logs it
  // (comm/null_communicator.hpp); a real one has nothing to do.
  virtual void declare_blocking(Transfer op, double bytes) {
    (void)op;
    (void)bytes;
  }

  // recv.extent(0) == size() * send.extent(0); rank q's block lands at q * send.extent(0).
  void all_gather(ConstVec send, Vec recv);
  // send.extent(0) == size() * recv.extent(0); this rank gets block rank() of the reduction.
  void reduce_scatter(ConstVec send, Vec recv, ReduceOp op);
  void all_reduce(Vec buf, ReduceOp op);
  void broadcast(Vec buf, int root);
  // send.extent(0) == recv.extent(0) == size() * c: block q of send goes to rank q, and rank
  // p's block for this rank lands at p * c. Moves bits, adds nothing (deterministic mode).
  void all_to_all(ConstVec send, Vec recv);
  virtual void barrier() = 0;

  // All-to-all with a block of its own size per peer (MPI_Alltoallv), e.g. tokens to experts:
  // block q of send (send_blocks.counts[q] elements at send_blocks.displs[q]) goes to rank q,
  // and rank p's block for this rank lands at recv_blocks.displs[p]; recv elements outside the
  // blocks keep their values. Moves the bytes sent, adds nothing: the result cannot depend on
  // timing, transport or chunking. recv_blocks.counts[p] must be what rank p sends this rank
  // (exchange_counts tells it). Checked before anything moves, fatal with one line: one count
  // and displacement per rank, none negative, every block inside its buffer, recv blocks
  // disjoint, send and recv apart, this rank's count for itself the same on both sides. Counts
  // that disagree between a sender and its receiver are fatal too: always on the shared-memory
  // and MPI paths (the receiver sees the sender's count), on every backend with
  // debug.check_collectives (NCCL cannot tell; a mismatch there hangs or truncates).
  // Non-blocking handles may be waited in any order; the blocks are copied at issue.
  void all_to_all_v(ConstVec send, const PeerBlocks& send_blocks, Vec recv,
                    const PeerBlocks& recv_blocks);
  Handle iall_to_all_v(ConstVec send, const PeerBlocks& send_blocks, Vec recv,
                       const PeerBlocks& recv_blocks);
  // All-to-all of one count per peer: send_counts[q] goes to rank q; returns, per rank p, what p
  // passed for this rank (the recv counts of the matching all_to_all_v). Blocking, on the host.
  std::vector<std::int64_t> exchange_counts(const std::vector<std::int64_t>& send_counts);

  Handle iall_gather(ConstVec send, Vec recv);
  Handle ireduce_scatter(ConstVec send, Vec recv, ReduceOp op);
  Handle iall_reduce(Vec buf, ReduceOp op);

  // bf16 payloads (fsdp.mixed_precision, fsdp.reduce_dtype), half the bytes on the wire. The
  // all-gather moves the bits unchanged; per-rank counts must be even (whole 4-byte words).
  // The reduce-scatter sums the widened bf16 blocks in float, in rank order as above, and
  // leaves that float sum in recv: one rounding (the sender's cast), not one per hop.
  void all_gather(ConstBf16Vec send, Bf16Vec recv);
  Handle iall_gather(ConstBf16Vec send, Bf16Vec recv);
  void reduce_scatter(ConstBf16Vec send, Vec recv, ReduceOp op);
  Handle ireduce_scatter(ConstBf16Vec send, Vec recv, ReduceOp op);
  // The bits move as 4-byte words on every backend: counts and displacements must be even.
  void all_to_all_v(ConstBf16Vec send, const PeerBlocks& send_blocks, Bf16Vec recv,
                    const PeerBlocks& recv_blocks);
  Handle iall_to_all_v(ConstBf16Vec send, const PeerBlocks& send_blocks, Bf16Vec recv,
                       const PeerBlocks& recv_blocks);

  // debug.check_collectives: before each collective the ranks compare fingerprints (op, group,
  // dtype, count, call site) and a mismatch fails every rank with both sides' descriptions.
  void set_check_collectives(bool on) { check_ = on; }

  // Small all-reduces for norms and flags; sums are in rank order like the view collectives.
  double all_reduce_sum(double v);
  void all_reduce_sum(double* v, int n);
  double all_reduce_max(double v);
  int all_reduce_max(int v);

 protected:
  // Backends move the data and return what is still in flight (nullptr: already in place).
  // `blocking` lets a backend use its blocking call; it must then return nullptr.
  virtual std::unique_ptr<detail::Pending> start_all_gather(ConstVec send, Vec recv,
                                                            bool blocking) = 0;
  virtual std::unique_ptr<detail::Pending> start_reduce_scatter(ConstVec send, Vec recv,
                                                                ReduceOp op, bool blocking) = 0;
  virtual std::unique_ptr<detail::Pending> start_all_reduce(Vec buf, ReduceOp op,
                                                            bool blocking) = 0;
  // The default widens send to a float copy and reduces that (correct, but float on the wire);
  // backends that can move bf16 override it.
  virtual std::unique_ptr<detail::Pending> start_reduce_scatter_bf16(ConstBf16Vec send, Vec recv,
                                                                     ReduceOp op, bool blocking);
  virtual void do_broadcast(Vec buf, int root) = 0;
  // The default is size() broadcasts of each rank's whole send buffer (any backend can do it,
  // at size() times the bytes); host MPI overrides it with MPI_Alltoall.
  virtual void do_all_to_all(ConstVec send, Vec recv);
  // Blocks checked by the base class (see all_to_all_v), in floats (bf16 arrives as words). A
  // non-blocking backend copies what it still needs of the blocks: they die with the call.
  virtual std::unique_ptr<detail::Pending> start_all_to_all_v(ConstVec send,
                                                              const PeerBlocks& send_blocks,
                                                              Vec recv,
                                                              const PeerBlocks& recv_blocks,
                                                              bool blocking) = 0;
  // recv (size() * bytes) gets every rank's `bytes` in rank order: the base of the scalar helpers.
  virtual void all_gather_bytes(const void* send, void* recv, std::size_t bytes) = 0;
  // Host bytes, `bytes` per peer: send's block q goes to rank q, rank p's lands at p * bytes
  // (exchange_counts and the pairwise count check).
  virtual void all_to_all_bytes(const void* send, void* recv, std::size_t bytes) = 0;

  // Called before a collective reads what the compute wrote: host backends wait for the compute
  // instance (not the whole device); device backends order their comm stream after the compute
  // stream with an event instead, and override this to do nothing.
  virtual void order_after_compute();

  // Set by backends that can publish arrivals (one-node MPI); the watchdog reads it.
  const ArrivalBoard* board_ = nullptr;
  // Counts the collective, publishes the arrival and compares fingerprints when asked to.
  std::uint64_t enter(const char* op, const char* dtype, std::uint64_t count);
  std::string watch_label(const char* op, std::uint64_t count) const;

 private:
  // send and recv in 4-byte words; `dtype` and `elem_bytes` describe the elements they carry.
  Handle gather(ConstVec send, Vec recv, bool blocking, const char* dtype = "float",
                std::size_t elem_bytes = 4);
  Handle gather_bf16(ConstBf16Vec send, Bf16Vec recv, bool blocking);
  Handle scatter(ConstVec send, Vec recv, ReduceOp op, bool blocking);
  Handle scatter_bf16(ConstBf16Vec send, Vec recv, ReduceOp op, bool blocking);
  // Extent and overlap checks, fingerprint, watchdog and timing around a reduce-scatter whose
  // send holds send_count elements of elem_bytes each; start() moves the data.
  template <class Start>
  Handle scatter_checked(const void* send, std::size_t send_count, std::size_t elem_bytes,
                         const char* dtype, Vec recv, const Start& start);
  Handle reduce(Vec buf, ReduceOp op, bool blocking);
  // An all-to-all-v of elements of elem_bytes (4 or 2): the checks in elements, fingerprint,
  // watchdog and timing; the backend moves 4-byte words.
  Handle exchange(const void* send, std::size_t send_extent, const PeerBlocks& send_blocks,
                  void* recv, std::size_t recv_extent, const PeerBlocks& recv_blocks, bool blocking,
                  const char* dtype, std::size_t elem_bytes);
  Handle issued(const char* op, std::size_t bytes, double bus_bytes, Clock::time_point t0,
                std::unique_ptr<detail::Pending> pending) const;
  template <class T>
  std::vector<T> gather_scalars(const T* v, int n);

  int rank_, size_;
  std::string name_;
  LinkEmulation link_;
  std::uint64_t seq_ = 0;
  bool check_ = false;
};

}  // namespace fsdp::comm
