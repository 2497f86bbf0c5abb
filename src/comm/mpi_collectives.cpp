// SPDX-License-Identifier: MIT
// A collective here is a short list of stages: each stage does its local work (a rank-ordered
// sum) and may start one MPI request; the next stage runs when that request completes. The
// blocking form runs the same stages with the blocking MPI calls.
#include "comm/mpi_collectives.hpp"

#include <climits>
#include <functional>
#include <vector>

#include "comm/rank_order_sum.hpp"
#include "core/check.hpp"

namespace fsdp::comm::mpi {
namespace {

class StagedOp final : public detail::Pending {
 public:
  StagedOp(MPI_Comm comm, bool blocking) : comm(comm), blocking(blocking) {}

  // Starts the first stage; a blocking op also finishes and returns nullptr.
  static std::unique_ptr<detail::Pending> launch(std::unique_ptr<StagedOp> op) {
    op->advance();
    if (op->blocking) {
      op->wait();
      return nullptr;
    }
    return op;
  }

  bool test() override {
    for (;;) {
      if (req_ != MPI_REQUEST_NULL) {
        int flag = 0;
        FSDP_MPI_CHECK(MPI_Test(&req_, &flag, MPI_STATUS_IGNORE));
        if (!flag) return false;
      }
      if (next_ == stages.size()) return true;
      advance();
    }
  }

  void wait() override {
    for (;;) {
      if (req_ != MPI_REQUEST_NULL) FSDP_MPI_CHECK(MPI_Wait(&req_, MPI_STATUS_IGNORE));
      if (next_ == stages.size()) return;
      advance();
    }
  }

  // Starts a collective either way; the blocking form leaves no request behind.
  template <class Blocking, class NonBlocking>
  MPI_Request start(Blocking b, NonBlocking nb) const {
    MPI_Request r = MPI_REQUEST_NULL;
    if (blocking)
      b();
    else
      nb(&r);
    return r;
  }

  MPI_Comm comm;
  bool blocking;
  std::vector<std::function<MPI_Request()>> stages;
  std::vector<float> staging;  // blocks from every rank, summed in rank order
  std::vector<std::uint16_t> staging_bf16;
  std::vector<int> send_counts, send_displs, recv_counts, recv_displs;

 private:
  void advance() { req_ = stages[next_++](); }

  std::size_t next_ = 0;
  MPI_Request req_ = MPI_REQUEST_NULL;
};

int comm_size(MPI_Comm comm) {
  int n = 0;
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &n));
  return n;
}

int comm_rank(MPI_Comm comm) {
  int r = 0;
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &r));
  return r;
}

// Points src at the n blocks of `count` elements that staging holds, in rank order.
std::vector<const float*> blocks(const std::vector<float>& staging, int n, std::size_t count) {
  std::vector<const float*> src(static_cast<std::size_t>(n));
  for (int q = 0; q < n; ++q) src[std::size_t(q)] = staging.data() + std::size_t(q) * count;
  return src;
}

}  // namespace

int checked_count(std::size_t n, const char* op) {
  if (n > std::size_t(INT_MAX))
    fatal(std::string("comm::") + op + ": " + std::to_string(n) +
          " elements exceed MPI's int count on the MPI path");
  return int(n);
}

std::unique_ptr<detail::Pending> all_gather(MPI_Comm comm, const float* send, float* recv,
                                            std::size_t count, bool in_place, bool blocking) {
  const int c = checked_count(count, "all_gather");
  auto op = std::make_unique<StagedOp>(comm, blocking);
  const void* s = in_place ? MPI_IN_PLACE : static_cast<const void*>(send);
  op->stages.push_back([o = op.get(), s, recv, c] {
    return o->start(
        [&] { FSDP_MPI_CHECK(MPI_Allgather(s, c, MPI_FLOAT, recv, c, MPI_FLOAT, o->comm)); },
        [&](MPI_Request* r) {
          FSDP_MPI_CHECK(MPI_Iallgather(s, c, MPI_FLOAT, recv, c, MPI_FLOAT, o->comm, r));
        });
  });
  return StagedOp::launch(std::move(op));
}

std::unique_ptr<detail::Pending> reduce_scatter(MPI_Comm comm, const float* send, float* recv,
                                                std::size_t count, ReduceOp op_kind,
                                                bool blocking) {
  const int n = comm_size(comm);
  const int c = checked_count(count, "reduce_scatter");
  auto op = std::make_unique<StagedOp>(comm, blocking);
  op->staging.resize(std::size_t(n) * count);
  StagedOp* o = op.get();
  op->stages.push_back([o, send, c] {
    float* st = o->staging.data();
    return o->start(
        [&] { FSDP_MPI_CHECK(MPI_Alltoall(send, c, MPI_FLOAT, st, c, MPI_FLOAT, o->comm)); },
        [&](MPI_Request* r) {
          FSDP_MPI_CHECK(MPI_Ialltoall(send, c, MPI_FLOAT, st, c, MPI_FLOAT, o->comm, r));
        });
  });
  op->stages.push_back([o, recv, count, n, op_kind] {
    sum_in_rank_order(blocks(o->staging, n, count).data(), n, recv, count, op_kind);
    return MPI_Request(MPI_REQUEST_NULL);
  });
  return StagedOp::launch(std::move(op));
}

std::unique_ptr<detail::Pending> reduce_scatter(MPI_Comm comm, const std::uint16_t* send,
                                                float* recv, std::size_t count, ReduceOp op_kind,
                                                bool blocking) {
  const int n = comm_size(comm);
  const int c = checked_count(count, "reduce_scatter");
  auto op = std::make_unique<StagedOp>(comm, blocking);
  op->staging_bf16.resize(std::size_t(n) * count);
  StagedOp* o = op.get();
  op->stages.push_back([o, send, c] {
    std::uint16_t* st = o->staging_bf16.data();
    return o->start(
        [&] { FSDP_MPI_CHECK(MPI_Alltoall(send, c, MPI_UINT16_T, st, c, MPI_UINT16_T, o->comm)); },
        [&](MPI_Request* r) {
          FSDP_MPI_CHECK(MPI_Ialltoall(send, c, MPI_UINT16_T, st, c, MPI_UINT16_T, o->comm, r));
        });
  });
  op->stages.push_back([o, recv, count, n, op_kind] {
    std::vector<const std::uint16_t*> src(static_cast<std::size_t>(n));
    for (int q = 0; q < n; ++q)
      src[std::size_t(q)] = o->staging_bf16.data() + std::size_t(q) * count;
    sum_in_rank_order(src.data(), n, recv, count, op_kind);
    return MPI_Request(MPI_REQUEST_NULL);
  });
  return StagedOp::launch(std::move(op));
}

std::unique_ptr<detail::Pending> all_reduce(MPI_Comm comm, float* buf, std::size_t count,
                                            ReduceOp op_kind, bool blocking) {
  const int n = comm_size(comm), me = comm_rank(comm);
  checked_count(count, "all_reduce");
  auto op = std::make_unique<StagedOp>(comm, blocking);
  StagedOp* o = op.get();
  // Rank q reduces elements [lo(q), lo(q+1)): a reduce-scatter then an all-gather, both with
  // uneven parts because count need not divide by n.
  auto lo = [&](int q) { return int(count * std::size_t(q) / std::size_t(n)); };
  const int mine = lo(me + 1) - lo(me);
  for (int q = 0; q < n; ++q) {
    op->send_counts.push_back(lo(q + 1) - lo(q));
    op->send_displs.push_back(lo(q));
    op->recv_counts.push_back(mine);
    op->recv_displs.push_back(q * mine);
  }
  op->staging.resize(std::size_t(n) * std::size_t(mine));
  op->stages.push_back([o, buf] {
    float* st = o->staging.data();
    const int *sc = o->send_counts.data(), *sd = o->send_displs.data();
    const int *rc = o->recv_counts.data(), *rd = o->recv_displs.data();
    return o->start(
        [&] {
          FSDP_MPI_CHECK(MPI_Alltoallv(buf, sc, sd, MPI_FLOAT, st, rc, rd, MPI_FLOAT, o->comm));
        },
        [&](MPI_Request* r) {
          FSDP_MPI_CHECK(MPI_Ialltoallv(buf, sc, sd, MPI_FLOAT, st, rc, rd, MPI_FLOAT, o->comm, r));
        });
  });
  const int first = lo(me);
  op->stages.push_back([o, buf, n, mine, first, op_kind] {
    sum_in_rank_order(blocks(o->staging, n, std::size_t(mine)).data(), n, buf + first,
                      std::size_t(mine), op_kind);
    // The part sizes are what each rank reduced: the send counts of the first stage.
    const int *counts = o->send_counts.data(), *displs = o->send_displs.data();
    return o->start(
        [&] {
          FSDP_MPI_CHECK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs,
                                        MPI_FLOAT, o->comm));
        },
        [&](MPI_Request* r) {
          FSDP_MPI_CHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs,
                                         MPI_FLOAT, o->comm, r));
        });
  });
  return StagedOp::launch(std::move(op));
}

}  // namespace fsdp::comm::mpi
