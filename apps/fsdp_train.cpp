// SPDX-License-Identifier: MIT
// fsdp-train: trains a GPT-2 described by a TOML run deck on every MPI rank of the job.
// Exit codes: 0 done; 2 bad run deck or arguments; 3 bad data; 4 non-finite loss or gradients;
// 5 a checkpoint or weights file that cannot be read, or a checkpoint that cannot be written; 75 stopped by SIGUSR1/SIGTERM after a whole
// step with a checkpoint written (resume with --resume auto); 1 any other error.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>

#include "core/blas_setup.hpp"
#include <cstdio>

#include "config/load_config.hpp"
#include "core/memory.hpp"
#include "data/data_error.hpp"
#include "io/weights_error.hpp"
#include "train/init_weights.hpp"
#include "train/signals.hpp"
#include "train/trainer.hpp"

namespace {

constexpr int kExitBadConfig = 2;
constexpr int kExitBadData = 3;
constexpr int kExitError = 1;
constexpr int kExitNonFinite = 4;
constexpr int kExitCheckpoint = 5;
constexpr int kExitPreempted = 75;  // EX_TEMPFAIL: the job scripts requeue on it

int finish(int code) {
  MPI_Finalize();
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  fsdp::install_stop_handlers();  // first: a batch system's signal must never kill a rank
  fsdp::select_blas_kernel(argv);
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  CLI::App app{"fsdp-train: fully sharded data-parallel GPT-2 training (ZeRO-3) over MPI ranks"};
  std::string config_path = "inputs/default.toml", metrics, trace;
  std::vector<std::string> overrides;
  app.add_option("--config", config_path, "TOML run deck")->capture_default_str();
  app.add_option("--set", overrides, "override one key, section.key=value (repeatable)");
  app.add_option("--metrics", metrics, "write JSON lines (per step and per evaluation) here");
  app.add_option("--trace", trace,
                 "write Chrome/Perfetto trace-event JSON per rank (PATH.rank<r>.json, or %r in "
                 "PATH)");
  bool profile = false;
  app.add_flag("--profile", profile, "print a per-kernel time breakdown (rank 0) at the end");
  std::string resume;
  app.add_option("--resume", resume,
                 "auto: continue from the newest complete checkpoint in checkpoint.dir (or start "
                 "fresh); PATH: continue from that checkpoint file");
  std::string init_from;
  app.add_option("--init-from", init_from,
                 "start (step 0, fresh optimizer) from weights: a Hugging Face directory or "
                 ".safetensors file, an llm.c parameter file, or an fsdp checkpoint; the model "
                 "shape comes from the file");
  app.footer("Run deck keys (section.key = default  meaning):\n" + fsdp::config_help() +
             "\nExit codes: 0 done, 1 error, 2 bad run deck or arguments, 3 bad data file, 4 non-finite loss or gradients (train.on_nonfinite = abort), 5 bad checkpoint or weights file,\n75 stopped by SIGUSR1 or SIGTERM after a whole step, checkpoint written (resume with --resume auto).");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = rank == 0 ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 1);
    return finish(rc == 0 ? 0 : kExitBadConfig);
  }

  fsdp::RunConfig cfg;
  try {
    cfg = fsdp::load_config(config_path, overrides);
    if (!init_from.empty()) cfg = fsdp::with_init_shape(cfg, init_from);
  } catch (const fsdp::ConfigError& e) {
    if (rank == 0) std::fprintf(stderr, "fsdp-train: %s\n", e.what());
    return finish(kExitBadConfig);
  } catch (const fsdp::weights::WeightsError& e) {  // every rank read the same header
    if (rank == 0) std::fprintf(stderr, "fsdp-train: %s\n", e.what());
    return finish(kExitCheckpoint);
  }

  int code = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    try {
      fsdp::TrainOptions opts;
      opts.metrics_path = metrics;
      opts.trace_path = trace;
      opts.profile = profile;
      opts.resume = resume;
      opts.init_from = init_from;
      fsdp::Trainer trainer(cfg, MPI_COMM_WORLD, opts);
      if (trainer.run().stop_signal != 0) code = kExitPreempted;
    } catch (const fsdp::SetupError& e) {
      const bool print = std::string(e.what()).size() > 0 && (rank == 0 || !e.same_on_all_ranks);
      if (print) std::fprintf(stderr, "fsdp-train: %s\n", e.what());
      code = e.exit_code;
    } catch (const fsdp::DataError& e) {
      std::fprintf(stderr, "fsdp-train: %s\n", e.what());
      code = kExitBadData;
    } catch (const fsdp::NonFiniteError& e) {
      // Every rank sees the same norm; rank 0 reports.
      if (rank == 0) std::fprintf(stderr, "fsdp-train: %s (train.on_nonfinite = abort)\n", e.what());
      code = kExitNonFinite;
    } catch (const fsdp::CheckpointError& e) {
      // Every rank agrees on a checkpoint problem before throwing it; rank 0 reports.
      if (rank == 0) std::fprintf(stderr, "fsdp-train: %s\n", e.what());
      code = kExitCheckpoint;
    } catch (const fsdp::weights::WeightsError& e) {  // agreed by every rank
      if (rank == 0) std::fprintf(stderr, "fsdp-train: %s\n", e.what());
      code = kExitCheckpoint;
    } catch (const fsdp::OutOfMemory& e) {
      // A budget overrun happens on every rank of a symmetric run; the report is rank 0's.
      if (rank == 0) std::fprintf(stderr, "fsdp-train: %s\n", e.what());
      code = kExitError;
    }
  }
  return finish(code);
}
