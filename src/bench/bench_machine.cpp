// SPDX-License-Identifier: MIT
#include "bench/bench_machine.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <vector>

#include "bench/disk_bench.hpp"
#include "comm/process_groups.hpp"
#include "config/load_config.hpp"
#include "model/gemm/bf16_gemm.hpp"
#include "core/check.hpp"
#include "fsdp/schedule.hpp"
#include "io/trace.hpp"
#include "model/architecture.hpp"
#include "model/gemm/gemm_peak.hpp"
#include "plan/machine.hpp"
#include "plan/memory_model.hpp"

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

// The cores the ranks on this node may run on: the union of their affinity masks (a launcher
// that binds each rank to one core still leaves the node's cores to the job as a whole).
int node_cores(MPI_Comm world) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return int(sysconf(_SC_NPROCESSORS_ONLN));
  MPI_Comm node = MPI_COMM_NULL;
  FSDP_MPI_CHECK(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  cpu_set_t all;
  CPU_ZERO(&all);
  FSDP_MPI_CHECK(MPI_Allreduce(&set, &all, int(sizeof set), MPI_BYTE, MPI_BOR, node));
  FSDP_MPI_CHECK(MPI_Comm_free(&node));
  return CPU_COUNT(&all);
}

// One micro-batch's forward and backward of a deck's model on this rank, with the engine's
// kernels and every unit's parameters resident (no communication).
class DeckPass {
 public:
  explicit DeckPass(const RunConfig& cfg)
      : arch_(architecture_of(cfg.model)),
        head_unit_(arch_.head_unit(cfg.model, model_choices(cfg))),
        model_(arch_.build(cfg.model, options(cfg), tracker_)) {
    for (const auto& u : model_->units()) {
      std::vector<float> full(std::size_t(u.numel));
      init_model_unit(cfg.model, u, full.data(), cfg.train.seed);
      params_.emplace_back(tracker_, u.name, u.numel, MemCategory::ParamShard);
      Kokkos::deep_copy(params_.back().vec(),
                        HostConstVec(full.data(), full.size()));
      grads_.emplace_back(tracker_, u.name + "::grads", u.numel, MemCategory::Grads);
    }
    std::vector<std::int32_t> tokens(std::size_t(model_->tokens_per_micro_batch()) + 1);
    std::mt19937 gen(7);
    for (auto& t : tokens) t = std::int32_t(gen() % std::uint32_t(cfg.model.vocab_size));
    model_->set_batch(tokens.data(), tokens.data() + 1);
  }

  static DecoderOptions options(const RunConfig& cfg) {
    DecoderOptions o;
    o.micro_batch = cfg.train.micro_batch_size;
    o.choices = model_choices(cfg);
    return o;
  }

  // The median of `iters` passes after one warm-up, on the slowest rank.
  double seconds(int iters, comm::Communicator& c) {
    return time_median(iters, c, [&] { pass(); });
  }
  // What the pass recomputes under activation checkpointing, as its layers declare it.
  double recompute_flops() const {
    double f = 0.0;
    for (const UnitFlops& u : model_->unit_flops()) f += u.recompute;
    return f;
  }

 private:
  void pass() {
    const auto p = [&](int u) { return params_[std::size_t(u)].cvec(); };
    const auto g = [&](int u) { return grads_[std::size_t(u)].vec(); };
    const int U = int(params_.size());
    for (const Stage& s : forward_stages(U, head_unit_)) {  // the engine's stages (schedule.hpp)
      if (s.head) model_->head_forward(p(s.unit));
      else model_->forward_unit(s.unit, p(s.unit));
    }
    for (const Stage& s : backward_stages(U, head_unit_)) {
      if (s.head) model_->head_backward(p(s.unit), g(s.unit), 1.f);
      else model_->backward_unit(s.unit, p(s.unit), g(s.unit));
    }
    Kokkos::fence();
  }

  const Architecture& arch_;
  int head_unit_;
  MemoryTracker tracker_;
  std::unique_ptr<Decoder> model_;
  std::vector<TrackedBuffer> params_, grads_;
};

struct BusRates {
  double allgather = 0, reducescatter = 0, allreduce = 0, latency = 0;
};

// nccl-tests-style busbw of every collective over `c`, every rank of c taking part, while every
// other group like c runs the same at the same time (a node's network is shared by its ranks).
// The slowest group's figure over `world`.
BusRates measure_bus(comm::Communicator& c, comm::Communicator& world, double comm_bytes,
                     int iters) {
  const int n = c.size();
  const std::size_t full =
      std::max<std::size_t>(std::size_t(comm_bytes / sizeof(float)) / n * n, n);
  FlatView big("bench::full", full), shard("bench::shard", full / n);
  const Vec fullv(big.data(), full), shardv(shard.data(), full / n);
  const double factor = n > 1 ? double(n - 1) / n : 1.0;
  const double bytes = double(full) * sizeof(float);
  auto slowest = [&](double t) { return world.all_reduce_max(t); };
  const double t_ag = slowest(time_median(iters, c, [&] { c.all_gather(shardv, fullv); }));
  const double t_rs =
      slowest(time_median(iters, c, [&] { c.reduce_scatter(fullv, shardv, comm::ReduceOp::Sum); }));
  const double t_ar =
      slowest(time_median(iters, c, [&] { c.all_reduce(fullv, comm::ReduceOp::Sum); }));
  FlatView tiny("bench::tiny", n), one("bench::one", 1);
  BusRates r;
  r.allgather = factor * bytes / t_ag;
  r.reducescatter = factor * bytes / t_rs;
  r.allreduce = 2 * factor * bytes / t_ar;
  r.latency = slowest(
      time_median(4 * iters, c, [&] { c.all_gather(Vec(one.data(), 1), Vec(tiny.data(), n)); }));
  return r;
}

}  // namespace

int run_machine_bench(MPI_Comm world, const MachineBenchOptions& o) {
  const std::unique_ptr<comm::Communicator> made = comm::make_communicator(world, {});
  comm::Communicator& c = *made;
  const int n = c.size();
  // Nodes: the ranks that share memory, or groups of --ranks-per-node consecutive ranks (to
  // measure a node boundary that the launcher does not show, or to emulate one).
  const int rpn = o.ranks_per_node > 0 ? o.ranks_per_node : comm::ranks_per_node(world);
  if (n % rpn != 0)
    fatal("fsdp-bench machine: " + std::to_string(n) + " ranks are not whole nodes of " +
          std::to_string(rpn) + " ranks");
  const int nodes = n / rpn;
  plan::Machine m;
  m.name = "measured: " + host_name();
  m.ranks_per_node = rpn;
  m.cores_per_node = node_cores(world);

  // The deck's pass is timed in three rounds spread over the run (first, between the rates, last)
  // and the median round kept: a burst of noise from a neighbour on a shared machine then moves
  // one round, not the calibration.
  std::unique_ptr<DeckPass> deck;
  std::vector<double> rounds;
  RunConfig deck_cfg;
  if (!o.calibrate.empty()) {
    deck_cfg = load_config(o.calibrate);
    deck = std::make_unique<DeckPass>(deck_cfg);
    rounds.push_back(deck->seconds(o.iters, c));
  }
  c.barrier();
  m.peak_flops_fp32 = c.all_reduce_sum(measure_gemm_flops()) / n;  // all ranks at once
  // Where the bf16 GEMMs widen to fp32 (a CPU without bf16 kernels), they run at the fp32 rate.
  m.peak_flops_bf16 = kernels::gemm_bf16_computes()
                          ? c.all_reduce_sum(measure_gemm_flops(true)) / n
                          : m.peak_flops_fp32;
  m.gemm_efficiency = 1.0;
  c.barrier();
  m.mem_bandwidth = c.all_reduce_sum(triad_bandwidth()) / n;
  m.host_mem_bandwidth = m.mem_bandwidth;

  if (deck) rounds.push_back(deck->seconds(o.iters, c));
  // Intra-node: each node's ranks together, all nodes at once.
  MPI_Comm node_raw = MPI_COMM_NULL;
  FSDP_MPI_CHECK(MPI_Comm_split(world, c.rank() / rpn, c.rank(), &node_raw));
  comm::MpiOptions node_options;
  node_options.name = "node";
  auto node = comm::make_communicator(node_raw, node_options);
  FSDP_MPI_CHECK(MPI_Comm_free(&node_raw));
  const BusRates intra = measure_bus(*node, c, o.comm_bytes, o.iters);
  m.intra_allgather_busbw = intra.allgather;
  m.intra_reducescatter_busbw = intra.reducescatter;
  m.intra_allreduce_busbw = intra.allreduce;
  m.latency_s = intra.latency;
  // Inter-node: every rank of every node in one group, as FULL_SHARD over the job runs.
  if (nodes > 1) {
    const BusRates inter = measure_bus(c, c, o.comm_bytes, o.iters);
    m.inter_node_busbw = std::min(inter.allgather, inter.reducescatter);
    m.inter_node_latency_s = std::max(0.0, (inter.latency - intra.latency) / (nodes - 1));
  }
  bool disk_direct = true;
  if (!o.offload_path.empty()) {
    const DiskRates d = measure_disk(*node, c, o.offload_path, std::int64_t(o.disk_bytes));
    m.disk_read_bandwidth = d.read;
    m.disk_write_bandwidth = d.write;
    disk_direct = d.direct;
  }
  m.pcie_bandwidth = 0.0;  // host and device are one memory in a CPU build
  m.comm_overlaps_compute = false;
  m.notes = "fsdp-bench machine on " + std::to_string(n) + " ranks, " + std::to_string(nodes) +
            " node(s) of " + std::to_string(rpn) + "; busbw at " +
            std::to_string(int(o.comm_bytes / (1 << 20))) + " MiB per rank" +
            (o.offload_path.empty() ? std::string()
                                    : "; disk: " + o.offload_path + ", " +
                                          std::to_string(std::int64_t(o.disk_bytes) >> 20) +
                                          " MiB per rank written and read back");

  std::string calibration;
  if (deck) {
    // The efficiency the planner's compute needs: its FLOPs for one micro-batch (6P + 12LTC
    // per token, plus the recomputed forward under checkpointing) over what the model's own
    // kernels took, against the 1024^3 rate. Small GEMMs and the non-GEMM kernels are in it.
    rounds.push_back(deck->seconds(o.iters, c));
    const RunConfig& cfg = deck_cfg;
    const plan::Setup s = plan::setup_from_config(cfg, 1, 1, kernels::gemm_bf16_computes());
    const double tok = double(cfg.train.micro_batch_size) * cfg.model.block_size;
    const double flops = architecture_of(s.model).flops_per_token(s.model) * tok + deck->recompute_flops();
    const double t = median(rounds);
    m.gemm_efficiency = flops / (t * m.peak_flops_fp32);
    calibration = o.calibrate;
    m.notes += "; gemm_efficiency calibrated on " + o.calibrate + " (one micro-batch of " +
               std::to_string(cfg.train.micro_batch_size) + " x " +
               std::to_string(cfg.model.block_size) + " tokens, " + std::to_string(n) +
               " ranks at once, median of 3 rounds)";
  }

  if (c.rank() == 0) {
    std::ofstream f(o.out);
    if (!f) fatal(o.out + ": cannot write the machine file");
    f << plan::machine_to_json(m) << "\n";
    std::printf("# fsdp-bench machine, %d ranks (%d node(s) of %d)\n", n, nodes, rpn);
    std::printf("%-30s %14s\n", "gemm GFLOP/s per rank",
                std::to_string(m.peak_flops_fp32 / 1e9).c_str());
    std::printf("%-30s %14.2f\n", "all_gather busbw GB/s", m.intra_allgather_busbw / 1e9);
    std::printf("%-30s %14.2f\n", "reduce_scatter busbw GB/s", m.intra_reducescatter_busbw / 1e9);
    std::printf("%-30s %14.2f\n", "all_reduce busbw GB/s", m.intra_allreduce_busbw / 1e9);
    std::printf("%-30s %14.1f\n", "latency us", m.latency_s * 1e6);
    if (nodes > 1) {
      std::printf("%-30s %14.2f\n", "inter-node busbw GB/s", m.inter_node_busbw / 1e9);
      std::printf("%-30s %14.1f\n", "inter-node latency us per hop", m.inter_node_latency_s * 1e6);
    }
    std::printf("%-30s %14.2f\n", "memory bandwidth GB/s", m.mem_bandwidth / 1e9);
    std::printf("%-30s %14d\n", "cores per node", m.cores_per_node);
    if (!o.offload_path.empty()) {
      std::printf("%-30s %14.2f\n", "disk write GB/s per node", m.disk_write_bandwidth / 1e9);
      std::printf("%-30s %14.2f%s\n", "disk read GB/s per node", m.disk_read_bandwidth / 1e9,
                  disk_direct ? "" : "  (no O_DIRECT there: the page cache's rate)");
    }
    if (!calibration.empty())
      std::printf("%-30s %14.3f  (%s)\n", "gemm efficiency", m.gemm_efficiency,
                  calibration.c_str());
    std::printf("written: %s\n", o.out.c_str());
  }
  return 0;
}

}  // namespace fsdp::bench
