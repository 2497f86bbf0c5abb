// SPDX-License-Identifier: MIT
// fsdp-train: trains a GPT-2 described by a TOML run deck on every MPI rank of the job.
// Exit codes: core/exit_codes.hpp (0 done, 2 bad deck, 3 bad data, 4 non-finite, 5 bad
// checkpoint or weights, 6 watchdog, 75 preempted with a checkpoint written, 1 anything else).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>

#include "comm/mpi_session.hpp"
#include "core/blas_setup.hpp"
#include "core/exit_codes.hpp"
#include <cstdio>

#include "config/load_config.hpp"
#include "core/memory.hpp"
#include "data/data_error.hpp"
#include "io/weights_error.hpp"
#include "train/init_weights.hpp"
#include "train/signals.hpp"
#include "train/trainer.hpp"

int main(int argc, char** argv) {
  fsdp::install_terminate_handler("fsdp-train");
  fsdp::install_stop_handlers();  // first: a batch system's signal must never kill a rank
  fsdp::select_blas_kernel(argv);
  fsdp::comm::MpiSession mpi(&argc, &argv);
  const int rank = mpi.rank();

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
  app.footer("Run deck keys (section.key = default  meaning):\n" + fsdp::config_help() + "\n" +
             fsdp::exit_code::help("fsdp-train"));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = rank == 0 ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 1);
    return rc == 0 ? 0 : fsdp::exit_code::kBadConfig;
  }

  fsdp::RunConfig cfg;
  try {
    cfg = fsdp::load_config(config_path, overrides);
    if (!init_from.empty()) cfg = fsdp::with_init_shape(cfg, init_from);
  } catch (const fsdp::ConfigError& e) {
    if (rank == 0) std::fprintf(stderr, "fsdp-train: %s\n", e.what());
    return fsdp::exit_code::kBadConfig;
  } catch (const fsdp::weights::WeightsError& e) {  // every rank read the same header
    if (rank == 0) std::fprintf(stderr, "fsdp-train: %s\n", e.what());
    return fsdp::exit_code::kBadCheckpoint;
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
      if (trainer.run().stop_signal != 0) code = fsdp::exit_code::kPreempted;
    } catch (const fsdp::SetupError& e) {
      const bool print = std::string(e.what()).size() > 0 && (rank == 0 || !e.same_on_all_ranks);
      if (print) std::fprintf(stderr, "fsdp-train: %s\n", e.what());
      code = e.exit_code;
    } catch (const fsdp::DataError& e) {
      std::fprintf(stderr, "fsdp-train: %s\n", e.what());
      code = fsdp::exit_code::kBadData;
    } catch (const fsdp::NonFiniteError& e) {
      // Every rank sees the same norm; rank 0 reports.
      if (rank == 0) std::fprintf(stderr, "fsdp-train: %s (train.on_nonfinite = abort)\n", e.what());
      code = fsdp::exit_code::kNonFinite;
    } catch (const fsdp::CheckpointError& e) {
      // Every rank agrees on a checkpoint problem before throwing it; rank 0 reports.
      if (rank == 0) std::fprintf(stderr, "fsdp-train: %s\n", e.what());
      code = fsdp::exit_code::kBadCheckpoint;
    } catch (const fsdp::weights::WeightsError& e) {  // agreed by every rank
      if (rank == 0) std::fprintf(stderr, "fsdp-train: %s\n", e.what());
      code = fsdp::exit_code::kBadCheckpoint;
    } catch (const fsdp::OutOfMemory& e) {
      // A budget overrun happens on every rank of a symmetric run; the report is rank 0's.
      if (rank == 0) std::fprintf(stderr, "fsdp-train: %s\n", e.what());
      code = fsdp::exit_code::kError;
    }
  }
  return code;
}
