// SPDX-License-Identifier: MIT
// fsdp-train: trains a GPT-2 described by a TOML run deck on every MPI rank of the job.
// Exit codes: core/exit_codes.hpp (0 done, 2 bad deck, 3 bad data, 4 non-finite, 5 bad
// checkpoint or weights, 6 watchdog, 7 checkpoint cannot be written, 75 preempted with a
// checkpoint written, 1 anything else).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>

#include "core/kokkos_session.hpp"
#include "comm/mpi_session.hpp"
#include "config/parse_everywhere.hpp"
#include "core/blas_setup.hpp"
#include "core/faults.hpp"
#include "core/exit_codes.hpp"
#include <cstdio>
#include <optional>

#include "config/deck_agreement.hpp"
#include "config/load_config.hpp"
#include "core/check.hpp"
#include "comm/agree.hpp"
#include "core/memory.hpp"
#include "data/data_error.hpp"
#include "comm/safety.hpp"
#include "io/weights_error.hpp"
#include "train/init_weights.hpp"
#include "train/signals.hpp"
#include "train/trainer.hpp"

int main(int argc, char** argv) {
  fsdp::install_terminate_handler("fsdp-train");
  fsdp::install_stop_handlers();  // first: a batch system's signal must never kill a rank
  fsdp::select_blas_kernel(argv);
  fsdp::comm::MpiSession mpi(&argc, &argv);
  // Reading the deck and the inputs is watched before the deck's comm.timeout_s is known.
  fsdp::comm::start_watchdog(fsdp::comm::kStartupTimeoutS);
  std::optional<fsdp::comm::Watch> reading(std::in_place, "start-up: reading the deck and inputs");
  fsdp::faults::throw_if_asked("fsdp-train");
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
  std::string adapter;
  app.add_option("--adapter", adapter,
                 "with --init-from BASE: start from a PEFT LoRA adapter directory "
                 "(adapter_config.json sets lora.*, adapter_model.safetensors the adapters; "
                 "docs/lora.md)");
  app.footer("Run deck keys (section.key = default  meaning):\n" + fsdp::config_help() + "\n" +
             fsdp::exit_code::help("fsdp-train"));
  if (const int rc = fsdp::parse_everywhere(app, [&] { app.parse(argc, argv); }, MPI_COMM_WORLD,
                                             "fsdp-train", fsdp::exit_code::kBadConfig);
      rc >= 0)
    return rc;

  // A deck one rank cannot read, or ranks with different decks, stop every rank here, before
  // any collective of the run: otherwise the others would wait in it forever.
  fsdp::RunConfig cfg;
  std::string config_error;
  int config_code = 0;
  try {
    cfg = fsdp::load_config(config_path, overrides);
    if (cfg.comm.timeout_s > 0) fsdp::comm::start_watchdog(cfg.comm.timeout_s);
    if (!init_from.empty()) cfg = fsdp::with_init_shape(cfg, init_from);
    if (!adapter.empty()) {
      if (init_from.empty() || !resume.empty())
        throw fsdp::ConfigError("--adapter " + adapter + ": needs --init-from BASE (the model it adapts) "
                                "and no --resume (a checkpoint holds its adapters)");
      std::string note;
      cfg = fsdp::with_adapter(cfg, adapter, note);
      if (rank == 0 && !note.empty()) std::fprintf(stderr, "fsdp-train: --adapter: %s\n", note.c_str());
    }
  } catch (const fsdp::ConfigError& e) {
    config_error = e.what();
    config_code = fsdp::exit_code::kBadConfig;
  } catch (const fsdp::weights::WeightsError& e) {  // every rank read the same header
    config_error = e.what();
    config_code = fsdp::exit_code::kBadCheckpoint;
  }
  const fsdp::Agreed failed = fsdp::agree_on_start(
      MPI_COMM_WORLD, config_error, config_code,
      cfg.resolved_toml + "\n[command line]\nresume = " + resume + "\ninit_from = " + init_from +
          "\nadapter = " + adapter + "\n");
  if (failed.rank >= 0) {
    if (rank == 0) std::fprintf(stderr, "fsdp-train: %s\n", fsdp::one_line(failed.message).c_str());
    return failed.code;
  }

  reading.reset();  // the trainer watches its own start-up from here
  int code = 0;
  {
    fsdp::KokkosSession kokkos(argc, argv);
    try {
      fsdp::TrainOptions opts;
      opts.metrics_path = metrics;
      opts.trace_path = trace;
      opts.profile = profile;
      opts.resume = resume;
      opts.init_from = init_from;
      opts.adapter = adapter;
      opts.inputs = {config_path};
      fsdp::Trainer trainer(cfg, MPI_COMM_WORLD, opts);
      if (trainer.run().stop_signal != 0) code = fsdp::exit_code::kPreempted;
    } catch (const fsdp::SetupError& e) {
      const bool print = std::string(e.what()).size() > 0 && (rank == 0 || !e.same_on_all_ranks);
      if (print) std::fprintf(stderr, "fsdp-train: %s\n", fsdp::one_line(e.what()).c_str());
      code = e.exit_code;
    } catch (const fsdp::DataError& e) {
      std::fprintf(stderr, "fsdp-train: %s\n", fsdp::one_line(e.what()).c_str());
      code = fsdp::exit_code::kBadData;
    } catch (const fsdp::NonFiniteError& e) {
      // Every rank sees the same norm; rank 0 reports.
      if (rank == 0) std::fprintf(stderr, "fsdp-train: %s (train.on_nonfinite = abort)\n",
                                fsdp::one_line(e.what()).c_str());
      code = fsdp::exit_code::kNonFinite;
    } catch (const fsdp::CheckpointError& e) {
      // Every rank agrees on a checkpoint problem before throwing it; rank 0 reports.
      if (rank == 0) std::fprintf(stderr, "fsdp-train: %s\n", fsdp::one_line(e.what()).c_str());
      code = fsdp::exit_code::kBadCheckpoint;
    } catch (const fsdp::weights::WeightsError& e) {  // agreed by every rank
      if (rank == 0) std::fprintf(stderr, "fsdp-train: %s\n", fsdp::one_line(e.what()).c_str());
      code = fsdp::exit_code::kBadCheckpoint;
    } catch (const fsdp::CheckpointWriteError& e) {  // agreed by every rank
      if (rank == 0) std::fprintf(stderr, "fsdp-train: %s\n", fsdp::one_line(e.what()).c_str());
      code = fsdp::exit_code::kCheckpointWrite;
    } catch (const fsdp::OutOfMemory& e) {
      // Only when every rank ran out at the same point (the tracker's failure handler ends the
      // job from a rank that ran out alone); the report is rank 0's.
      if (rank == 0) std::fprintf(stderr, "fsdp-train: %s\n", fsdp::one_line(e.what()).c_str());
      code = fsdp::exit_code::kError;
    }
  }
  return code;
}
