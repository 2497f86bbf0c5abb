// SPDX-License-Identifier: MIT
// fsdp.mixed_precision = bf16 and fsdp.reduce_dtype = bf16: the loss curve stays close to
// fp32's (and is not fp32's: the casts happen), the gathered window and the bytes on the wire
// halve, and the strategies agree with each other under bf16 as they do under fp32.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <utility>

#include "engine_fixture.hpp"

using namespace fsdp;

namespace {

struct Run {
  std::vector<double> losses;
  std::int64_t gathered_peak, widened_peak, padded;
  double gather_bytes, reduce_bytes;  // of the last step
};

Run train(const RunConfig& cfg) {
  Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
  const TrainSummary r = t.run();
  Run o;
  o.losses = r.losses;
  o.gathered_peak = t.tracker().peak(MemCategory::GatheredParams);
  o.widened_peak = t.tracker().peak(MemCategory::WidenedParams);
  o.padded = t.engine().padded_params();
  o.gather_bytes = r.last.gather_bytes;
  o.reduce_bytes = r.last.reduce_bytes;
  return o;
}

// The default deck, shortened, with a global batch that divides over 1 to 4 ranks.
RunConfig default_deck(int steps) {
  RunConfig cfg = load_config(std::string(FSDP_SOURCE_DIR) + "/inputs/default.toml", {});
  cfg.train.steps = steps;
  cfg.train.batch_size = 24;
  cfg.train.micro_batch_size = 2;
  cfg.train.peak_tflops = 1.0;
  cfg.eval.every = 0;
  cfg.eval.sequences = 0;
  return cfg;
}

// The curve as plotted: the trailing 10-step mean of the per-step losses (single steps of a
// 24-sequence batch differ more, a plateau left a step earlier or later: noise of the trajectory
// rather than of the arithmetic). The statistic is the largest relative gap between two such
// curves.
double curve_gap(const std::vector<double>& ref, const std::vector<double>& other) {
  const std::size_t w = 10;
  auto mean = [&](const std::vector<double>& l, std::size_t end) {
    double m = 0.0;
    for (std::size_t i = end - w; i < end; ++i) m += l[i];
    return m / double(w);
  };
  double worst = 0.0;
  for (std::size_t end = w; end <= ref.size(); ++end) {
    const double a = mean(ref, end), b = mean(other, end);
    worst = std::max(worst, std::abs(b - a) / a);
  }
  return worst;
}

// How far bf16 may stray from fp32, in units of the gap between two fp32 runs that differ only
// in their seed, measured by the same test. Over 5 seeds of 200 steps at 1 rank on an AVX-512
// core with bf16 units (scripts/bf16_spread.py, docs/bf16.md) bf16 GEMMs on oneDNN's bf16
// kernels strayed 0.17-0.71 of that gap, 0.19-0.49 with ONEDNN_MAX_CPU_ISA=AVX512_CORE; fp32
// on OpenBLAS's SkylakeX kernels against Haswell's, 0.00-0.07. Twice the gap is 2.8 times the
// largest ratio seen, and still far below what a broken cast gives (a stalled or diverging run).
constexpr double kSeedGapMargin = 2.0;

}  // namespace

TEST_CASE("bf16 training follows the fp32 loss curve", "[bf16]") {
  // gemm = bf16: the GEMMs take bf16 activations too (tensor cores on a GPU, oneDNN's bf16
  // kernels on a CPU that has them, the widening path elsewhere), as a GPU build runs by default.
  // At 1 and 3 ranks zero3 with bf16 GEMMs runs 200 steps; the 80-step cases run at 2 and 4.
  int nranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const bool long_run = nranks == 1 || nranks == 3;
  const auto [strategy, gemm] = GENERATE(std::make_pair(std::string("zero3"), std::string("fp32")),
                                         std::make_pair(std::string("ddp"), std::string("fp32")),
                                         std::make_pair(std::string("zero3"), std::string("bf16")));
  if (long_run && gemm != "bf16") return;
  RunConfig cfg = default_deck(long_run ? 200 : 80);
  cfg.fsdp.strategy = strategy;
  static std::map<std::string, Run> fp32_runs;  // one fp32 reference per strategy
  if (!fp32_runs.count(strategy)) fp32_runs[strategy] = train(cfg);
  const Run& fp32 = fp32_runs[strategy];
  // The spread the bound comes from: fp32 from the next seed (its own initialisation and data
  // order) against fp32, once per process.
  static double seed_gap = -1.0;
  if (seed_gap < 0.0) {
    RunConfig other = cfg;
    other.train.seed = cfg.train.seed + 1;
    seed_gap = curve_gap(fp32.losses, train(other).losses);
  }
  cfg.fsdp.mixed_precision = "bf16";
  cfg.fsdp.reduce_dtype = "bf16";
  cfg.fsdp.gemm_dtype = gemm;
  const Run bf16 = train(cfg);
  REQUIRE(bf16.losses.size() == fp32.losses.size());
  const double gap = curve_gap(fp32.losses, bf16.losses);
  INFO(strategy << ", " << gemm << " GEMMs, " << fp32.losses.size() << " steps: largest relative "
                << "difference of the 10-step mean loss " << gap << " (bf16 against fp32), "
                << seed_gap << " (fp32 seed " << cfg.train.seed + 1 << " against seed "
                << cfg.train.seed << "), bound " << kSeedGapMargin << " x " << seed_gap
                << "; final losses " << fp32.losses.back() << " (fp32) vs " << bf16.losses.back()
                << " (bf16)");
  CHECK(gap <= kSeedGapMargin * seed_gap);
  CHECK(gap > 1e-6);  // the casts really happen
  // The run learned (a cast that broke the parameters would stall far above this).
  CHECK(bf16.losses.back() < 0.75 * bf16.losses.front());
}

TEST_CASE("bf16 halves the gathered window and the bytes of every collective", "[bf16]") {
  const int prefetch = GENERATE(0, 1, 2);
  RunConfig cfg = test::tiny_config("zero3", prefetch);
  cfg.train.steps = 2;
  const Run fp32 = train(cfg);
  cfg.fsdp.mixed_precision = "bf16";
  cfg.fsdp.reduce_dtype = "bf16";
  const Run bf16 = train(cfg);
  INFO("prefetch " << prefetch << ": padded " << fp32.padded << " (fp32) and " << bf16.padded
                   << " (bf16) elements");
  // bf16 pads each unit to a multiple of 2N rather than N (whole words per shard): at most
  // 2N-1 more elements per unit, 4 units here.
  const std::int64_t slack = 4 * (2 * test::world_size() - 1);
  if (bf16.padded == fp32.padded) {
    CHECK(2 * bf16.gathered_peak == fp32.gathered_peak);
    CHECK(2 * bf16.gather_bytes == fp32.gather_bytes);
    CHECK(2 * bf16.reduce_bytes == fp32.reduce_bytes);
  } else {
    CHECK(std::abs(2 * bf16.gathered_peak - fp32.gathered_peak) <= 4 * slack);
    CHECK(std::abs(2 * bf16.gather_bytes - fp32.gather_bytes) <= 4.0 * slack * 3);
    CHECK(std::abs(2 * bf16.reduce_bytes - fp32.reduce_bytes) <= 4.0 * slack * 3);
  }
  CHECK(fp32.widened_peak == 0);
  // The float copy the kernels read: one GEMM weight (4C x C) and the largest unit's other
  // tensors (a block's biases and LayerNorms: 13C), never a whole unit per prefetched stage.
  const std::int64_t C = cfg.model.n_embd, V = cfg.model.vocab_size, T = cfg.model.block_size;
  CHECK(bf16.widened_peak == 4 * (std::max(4 * C * C, V * C) + std::max(13 * C, T * C)));
}

TEST_CASE("under bf16 every strategy gives the same losses", "[bf16]") {
  const std::string gemm = GENERATE(std::string("fp32"), std::string("bf16"));
  RunConfig cfg = test::tiny_config("ddp", 1);
  cfg.fsdp.mixed_precision = "bf16";
  cfg.fsdp.reduce_dtype = "fp32";
  cfg.fsdp.gemm_dtype = gemm;
  const Run ddp = train(cfg);
  for (const char* s : {"zero1", "zero2", "zero3"}) {
    cfg.fsdp.strategy = s;
    const Run other = train(cfg);
    INFO(s << ", " << gemm << " GEMMs");
    for (std::size_t i = 0; i < ddp.losses.size(); ++i)
      CHECK(std::abs(other.losses[i] - ddp.losses[i]) <= 1e-5 * std::abs(ddp.losses[i]));
  }
}
