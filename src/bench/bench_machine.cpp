// SPDX-License-Identifier: MIT
#include "bench/bench_machine.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <vector>

#include "comm/process_groups.hpp"
#include "core/check.hpp"
#include "io/trace.hpp"
#include "plan/machine.hpp"
#include "train/trainer.hpp"

namespace fsdp::bench {
namespace {

// Median over ranks of each rank's median over repeats: one slow rank or one noisy repeat does
// not decide the figure.
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double time_median(int iters, comm::Communicator& c, F&& f) {
  f();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    c.barrier();
    const double t0 = now_s();
    f();
    t.push_back(now_s() - t0);
  }
  // The slowest rank's time is the collective's time.
  return c.all_reduce_max(median(t));
}

double triad_bandwidth() {
  const std::size_t n = std::size_t(16) << 20;  // 64 MiB per array: far beyond the caches
  FlatView a("bench::a", n), b("bench::b", n), c("bench::c", n);
  Kokkos::deep_copy(b, 1.f);
  Kokkos::deep_copy(c, 2.f);
  std::vector<double> t;
  for (int rep = 0; rep < 5; ++rep) {
    Kokkos::fence();
    const double t0 = now_s();
    Kokkos::parallel_for(
        "bench::triad", Kokkos::RangePolicy<ExecSpace>(0, n),
        KOKKOS_LAMBDA(const int64_t i) { a(i) = b(i) + 3.f * c(i); });
    Kokkos::fence();
    t.push_back(now_s() - t0);
  }
  return 3.0 * n * sizeof(float) / median(t);
}

}  // namespace

int run_machine_bench(MPI_Comm world, const MachineBenchOptions& o) {
  comm::ProcessGroups g = comm::make_process_groups(world, 0, {});
  comm::Communicator& c = *g.world;
  const int n = c.size();
  plan::Machine m;
  m.name = "measured: " + host_name();
  m.ranks_per_node = g.ranks_per_node;

  c.barrier();
  m.peak_flops_fp32 = c.all_reduce_sum(measure_gemm_flops()) / n;  // all ranks at once
  m.gemm_efficiency = 1.0;
  c.barrier();
  m.mem_bandwidth = c.all_reduce_sum(triad_bandwidth()) / n;
  m.host_mem_bandwidth = m.mem_bandwidth;

  const std::size_t full = std::size_t(o.comm_bytes / sizeof(float)) / n * n;
  FlatView big("bench::full", full), shard("bench::shard", full / n);
  const Vec fullv(big.data(), full), shardv(shard.data(), full / n);
  const double factor = n > 1 ? double(n - 1) / n : 1.0;
  const double bytes = double(full) * sizeof(float);
  const double t_ag = time_median(o.iters, c, [&] { c.all_gather(shardv, fullv); });
  const double t_rs =
      time_median(o.iters, c, [&] { c.reduce_scatter(fullv, shardv, comm::ReduceOp::Sum); });
  const double t_ar = time_median(o.iters, c, [&] { c.all_reduce(fullv, comm::ReduceOp::Sum); });
  m.intra_allgather_busbw = factor * bytes / t_ag;
  m.intra_reducescatter_busbw = factor * bytes / t_rs;
  m.intra_allreduce_busbw = 2 * factor * bytes / t_ar;
  FlatView tiny("bench::tiny", n), one("bench::one", 1);
  m.latency_s = time_median(4 * o.iters, c, [&] {
    c.all_gather(Vec(one.data(), 1), Vec(tiny.data(), n));
  });
  m.pcie_bandwidth = 0.0;  // host and device are one memory in a CPU build
  m.comm_overlaps_compute = false;
  m.notes = "fsdp-bench machine on " + std::to_string(n) + " ranks; busbw at " +
            std::to_string(int(bytes / (1 << 20))) + " MiB per rank";

  if (c.rank() == 0) {
    std::ofstream f(o.out);
    if (!f) fatal(o.out + ": cannot write the machine file");
    f << plan::machine_to_json(m) << "\n";
    std::printf("# fsdp-bench machine, %d ranks (%d per node)\n", n, m.ranks_per_node);
    std::printf("%-30s %14s\n", "gemm GFLOP/s per rank", std::to_string(m.peak_flops_fp32 / 1e9).c_str());
    std::printf("%-30s %14.2f\n", "all_gather busbw GB/s", m.intra_allgather_busbw / 1e9);
    std::printf("%-30s %14.2f\n", "reduce_scatter busbw GB/s", m.intra_reducescatter_busbw / 1e9);
    std::printf("%-30s %14.2f\n", "all_reduce busbw GB/s", m.intra_allreduce_busbw / 1e9);
    std::printf("%-30s %14.1f\n", "latency us", m.latency_s * 1e6);
    std::printf("%-30s %14.2f\n", "memory bandwidth GB/s", m.mem_bandwidth / 1e9);
    std::printf("written: %s\n", o.out.c_str());
  }
  return 0;
}

}  // namespace fsdp::bench
