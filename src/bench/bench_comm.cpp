// SPDX-License-Identifier: MIT
// Each (op, size) is timed for raw MPI first, then our implementations (buffers: Buffers):
// warm-up, then `iters` calls between barriers (by default as many as fill min_time_s, sized
// from the warm-up on the slowest rank); the slowest rank's mean time is reported. A separate
// call on a known integer pattern (exact in any summation order) counts wrong elements.
#include "bench/bench_comm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "comm/mpi_communicator.hpp"
#include "core/check.hpp"
#include "core/memory.hpp"
#include "core/types.hpp"

namespace fsdp::comm {
namespace {

enum class Op { AllGather, ReduceScatter, AllReduce };

const char* op_name(Op op) {
  switch (op) {
    case Op::AllGather:
      return "all_gather";
    case Op::ReduceScatter:
      return "reduce_scatter";
    default:
      return "all_reduce";
  }
}

// nccl-tests' bus bandwidth factors (doc/PERFORMANCE.md).
double bus_factor(Op op, int n) {
  const double f = double(n - 1) / double(n);
  return op == Op::AllReduce ? 2 * f : f;
}

struct Row {
  std::size_t bytes, count;
  Op op;
  std::string impl;
  double time_us, algbw, busbw;
  long wrong;
  double ratio;  // mpi time / this time (= busbw ratio); NaN on the mpi row
  int iters;
};

// One (op, size)'s buffers, sized from the full buffer of `count` elements. all_reduce works
// in place on `recv`.
// MPI's buffers are ordinary memory, as its users' are; ours are tracked buffers, as the
// engine's are: in the shared arena where there is one (core/shared_arena.hpp), which a peer
// reads directly. FSDP_SHARED_ARENA=0 times ours on ordinary memory too.
struct Buffers {
  Buffers(Op op, std::size_t count, int n, bool tracked)
      : op(op),
        n(n),
        send_n(op == Op::AllGather   ? count / std::size_t(n)
               : op == Op::AllReduce ? 0
                                     : count),
        recv_n(op == Op::ReduceScatter ? count / std::size_t(n) : count) {
    if (tracked) {
      send_buf = TrackedBuffer(tracker, "bench::send", std::int64_t(send_n),
                               MemCategory::CommBuffers);
      recv_buf = TrackedBuffer(tracker, "bench::recv", std::int64_t(recv_n),
                               MemCategory::CommBuffers);
      send = send_buf.vec();
      recv = recv_buf.vec();
    } else {
      send_plain = FlatView(Kokkos::view_alloc(Kokkos::WithoutInitializing, "bench::send"), send_n);
      recv_plain = FlatView(Kokkos::view_alloc(Kokkos::WithoutInitializing, "bench::recv"), recv_n);
      send = Vec(send_plain.data(), send_n);
      recv = Vec(recv_plain.data(), recv_n);
    }
  }

  // Small integers: every summation order gives the same float.
  static float ag(int rank, std::size_t i) { return float((std::size_t(rank) * 7 + i) % 251); }
  static float rs(int rank, std::size_t j) { return float(std::size_t(rank + 1) * (j % 97)); }
  float summed(std::size_t j) const { return float((j % 97) * std::size_t(n * (n + 1) / 2)); }

  void fill(int rank) {
    for (std::size_t i = 0; i < send.extent(0); ++i)
      send(i) = op == Op::AllGather ? ag(rank, i) : rs(rank, i);
    for (std::size_t i = 0; i < recv.extent(0); ++i)
      recv(i) = op == Op::AllReduce ? rs(rank, i) : -1.0f;
  }

  long wrong(int rank) const {
    long bad = 0;
    const std::size_t c = recv.extent(0);
    for (std::size_t i = 0; i < c; ++i) {
      float want = 0;
      if (op == Op::AllGather) {
        const std::size_t block = send.extent(0);
        want = ag(int(i / block), i % block);
      } else {
        want = summed(op == Op::ReduceScatter ? std::size_t(rank) * c + i : i);
      }
      bad += recv(i) != want ? 1 : 0;
    }
    return bad;
  }

  Op op;
  int n;
  std::size_t send_n, recv_n;
  MemoryTracker tracker;
  TrackedBuffer send_buf, recv_buf;
  FlatView send_plain, recv_plain;
  Vec send, recv;  // host accessible: MpiCommunicator requires it
};

using Run = std::function<void(Buffers&)>;

Run raw_mpi(Op op, MPI_Comm comm) {
  return [op, comm](Buffers& b) {
    float* s = b.send.data();
    float* r = b.recv.data();
    const int c = int(b.send.extent(0)), rc = int(b.recv.extent(0));
    switch (op) {
      case Op::AllGather:
        FSDP_MPI_CHECK(MPI_Allgather(s, c, MPI_FLOAT, r, c, MPI_FLOAT, comm));
        break;
      case Op::ReduceScatter:
        FSDP_MPI_CHECK(MPI_Reduce_scatter_block(s, r, rc, MPI_FLOAT, MPI_SUM, comm));
        break;
      case Op::AllReduce:
        FSDP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, r, rc, MPI_FLOAT, MPI_SUM, comm));
        break;
    }
  };
}

Run ours(Op op, Communicator& c) {
  return [op, &c](Buffers& b) {
    const Vec s(b.send.data(), b.send.extent(0)), r(b.recv.data(), b.recv.extent(0));
    switch (op) {
      case Op::AllGather:
        c.all_gather(s, r);
        break;
      case Op::ReduceScatter:
        c.reduce_scatter(s, r, ReduceOp::Sum);
        break;
      case Op::AllReduce:
        c.all_reduce(r, ReduceOp::Sum);
        break;
    }
  };
}

double slowest_rank(MPI_Comm comm, double mine) {
  double slowest = 0;
  FSDP_MPI_CHECK(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm));
  return slowest;
}

struct Timing {
  double us = 0;  // the slowest rank's mean time per call
  int iters = 0;
};

Timing time_calls(MPI_Comm comm, const Run& run, Buffers& b, const CommBenchOptions& o) {
  FSDP_MPI_CHECK(MPI_Barrier(comm));
  double t0 = MPI_Wtime();
  for (int i = 0; i < o.warmup; ++i) run(b);
  Timing t;
  t.iters = o.iters;
  if (t.iters == 0) {  // every rank must agree on the count: size it from the slowest
    const double per_call = slowest_rank(comm, (MPI_Wtime() - t0) / std::max(1, o.warmup));
    t.iters = int(std::clamp(std::ceil(o.min_time_s / std::max(per_call, 1e-9)), 20.0, 1e6));
  }
  FSDP_MPI_CHECK(MPI_Barrier(comm));
  t0 = MPI_Wtime();
  for (int i = 0; i < t.iters; ++i) run(b);
  t.us = slowest_rank(comm, (MPI_Wtime() - t0) / t.iters * 1e6);
  return t;
}

long count_wrong(MPI_Comm comm, const Run& run, Buffers& b, int rank) {
  b.fill(rank);
  run(b);
  long mine = b.wrong(rank), all = 0;
  FSDP_MPI_CHECK(MPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, comm));
  return all;
}

std::string iters_text(const CommBenchOptions& o) {
  if (o.iters > 0) return std::to_string(o.iters);
  char buf[64];
  std::snprintf(buf, sizeof buf, "at least 20 and %g s of", o.min_time_s);
  return buf;
}

void print_header(const CommBenchOptions& o, int n, const MpiCommunicator& c) {
  std::printf(
      "# fsdp-bench comm: %d ranks, backend %s, window %zu B/rank, step %zu B, single-copy "
      "reads up to %zu B (%s), %s timed calls after %d warm-up\n"
      "# size, count: the full buffer on each rank (all-gather output, reduce-scatter input, "
      "all-reduce buffer), float32\n"
      "# time: mean per call of the slowest rank; algbw = size/time; busbw = algbw*(n-1)/n "
      "(all-gather, reduce-scatter), *2(n-1)/n (all-reduce)\n"
      "#\n# %12s %11s %15s %9s %11s %12s %12s %7s %9s %8s\n",
      n, c.backend(), o.window_bytes, o.step_bytes, o.single_copy_max_bytes,
      c.uses_single_copy() ? "available" : "unavailable", iters_text(o).c_str(), o.warmup,
      "size(B)", "count", "op", "impl", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong",
      "ours/mpi", "iters");
}

void print_row(const Row& r) {
  char ratio[32] = "";
  if (!std::isnan(r.ratio)) std::snprintf(ratio, sizeof(ratio), "%9.2f", r.ratio);
  std::printf("  %12zu %11zu %15s %9s %11.1f %12.3f %12.3f %7ld %9s %8d\n", r.bytes, r.count,
              op_name(r.op), r.impl.c_str(), r.time_us, r.algbw, r.busbw, r.wrong, ratio,
              r.iters);
  std::fflush(stdout);
}

void write_json(const std::string& path, const CommBenchOptions& o, int n, const Communicator& c,
                const std::vector<Row>& rows) {
  nlohmann::json j;
  j["ranks"] = n;
  j["backend"] = c.backend();
  j["iters"] = o.iters;  // 0: sized per figure (each result's "iters")
  j["min_time_s"] = o.min_time_s;
  j["warmup"] = o.warmup;
  j["window_bytes"] = o.window_bytes;
  j["step_bytes"] = o.step_bytes;
  for (const Row& r : rows)
    j["results"].push_back({{"size_bytes", r.bytes},
                            {"count", r.count},
                            {"op", op_name(r.op)},
                            {"impl", r.impl},
                            {"time_us", r.time_us},
                            {"algbw_gbps", r.algbw},
                            {"busbw_gbps", r.busbw},
                            {"wrong", r.wrong},
                            {"iters", r.iters},
                            {"ratio_to_mpi", std::isnan(r.ratio) ? nlohmann::json(nullptr)
                                                                 : nlohmann::json(r.ratio)}});
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out) fatal("fsdp-bench comm: cannot write " + path);
}

}  // namespace

int run_comm_bench(MPI_Comm comm, const CommBenchOptions& o) {
  if (o.min_bytes == 0 || o.max_bytes < o.min_bytes || o.factor < 2 || o.iters < 0 ||
      o.warmup < 0 || !(o.min_time_s > 0))
    fatal("fsdp-bench comm: need 0 < min-bytes <= max-bytes, factor >= 2, iters >= 0, "
          "min-time > 0");
  int rank = 0, n = 0;
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &n));

  MpiOptions mo;
  mo.window_bytes = o.window_bytes;
  mo.shm.step_bytes = o.step_bytes;
  mo.shm.single_copy_max_bytes = o.single_copy_max_bytes;
  MpiCommunicator fast(comm, mo);
  mo.shared_memory = false;
  std::unique_ptr<MpiCommunicator> fallback;
  if (o.fallback) fallback = std::make_unique<MpiCommunicator>(comm, mo);

  if (rank == 0) print_header(o, n, fast);
  std::vector<Row> rows;
  long total_wrong = 0;
  for (Op op : {Op::AllGather, Op::ReduceScatter, Op::AllReduce}) {
    for (std::size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= std::size_t(o.factor)) {
      const std::size_t count = bytes / sizeof(float) / std::size_t(n) * std::size_t(n);
      if (count == 0) continue;
      Buffers plain(op, count, n, false), tracked(op, count, n, true);
      std::vector<std::pair<std::string, Run>> impls = {{"mpi", raw_mpi(op, comm)},
                                                        {"ours", ours(op, fast)}};
      if (fallback) impls.emplace_back("ours-mpi", ours(op, *fallback));
      double mpi_us = 0;
      for (auto& [name, run] : impls) {
        Buffers& b = name == "mpi" ? plain : tracked;
        b.fill(rank);
        Row r{count * sizeof(float), count, op, name, 0, 0, 0, 0, NAN, 0};
        const Timing t = time_calls(comm, run, b, o);
        r.time_us = t.us;
        r.iters = t.iters;
        r.algbw = double(r.bytes) / (r.time_us * 1e-6) / 1e9;
        r.busbw = r.algbw * bus_factor(op, n);
        r.wrong = count_wrong(comm, run, b, rank);
        if (name == "mpi")
          mpi_us = r.time_us;
        else
          r.ratio = mpi_us / r.time_us;
        total_wrong += r.wrong;
        if (rank == 0) print_row(r);
        rows.push_back(r);
      }
    }
  }
  if (rank == 0 && !o.json_path.empty()) write_json(o.json_path, o, n, fast, rows);
  if (rank == 0 && total_wrong > 0)
    std::printf("# FAILED: %ld wrong elements in total\n", total_wrong);
  return total_wrong > 0 ? 1 : 0;
}

}  // namespace fsdp::comm
