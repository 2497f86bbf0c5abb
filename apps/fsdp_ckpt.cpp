// SPDX-License-Identifier: MIT
// fsdp-ckpt: inspects, verifies, compares, exports and benchmarks sharded HDF5 checkpoints; runs on one
// rank or under mpirun (each dataset is then read in parallel).
// Exit codes (core/exit_codes.hpp): 0 good / identical / exported; 1 a bad checksum or a difference; 2 unreadable or
// bad usage.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#include <cstdio>
#include <optional>

#include "core/kokkos_session.hpp"
#include "comm/mpi_session.hpp"
#include "comm/safety.hpp"
#include "config/parse_everywhere.hpp"
#include "core/blas_setup.hpp"
#include "core/faults.hpp"
#include "core/exit_codes.hpp"
#include "io/checkpoint_tools.hpp"
#include "io/hf_export.hpp"
#include "io/peft_export.hpp"
#include "bench/checkpoint_bench.hpp"
#include "core/check.hpp"
#include "train/trainer.hpp"

namespace {

}  // namespace

int main(int argc, char** argv) {
  fsdp::install_terminate_handler("fsdp-ckpt");
  fsdp::select_blas_kernel(argv);
  fsdp::comm::MpiSession mpi(&argc, &argv);
  // The watchdog every app starts (comm/safety.hpp), over the start-up first.
  fsdp::comm::start_watchdog(fsdp::comm::kStartupTimeoutS);
  std::optional<fsdp::comm::Watch> starting(std::in_place, "start-up: reading the arguments");
  fsdp::faults::throw_if_asked("fsdp-ckpt");
  const int rank = mpi.rank();

  CLI::App app{"fsdp-ckpt: inspect, verify, compare and benchmark fsdp checkpoints"};
  app.require_subcommand(1);
  std::string path, other;
  bool datasets = false, deck = false;
  auto* info = app.add_subcommand("info", "layout, step, sizes and the model config");
  info->add_option("file", path, "checkpoint file")->required();
  info->add_flag("--datasets", datasets, "list every dataset with its shape");
  info->add_flag("--deck", deck, "print the stored run deck");
  auto* verify = app.add_subcommand("verify", "check every dataset against its checksums");
  verify->add_option("file", path, "checkpoint file")->required();
  auto* diff = app.add_subcommand("diff", "tensor-by-tensor max abs and relative differences");
  diff->add_option("a", path, "checkpoint file")->required();
  diff->add_option("b", other, "checkpoint file")->required();
  std::string hf_dir, hf_dtype = "fp32";
  auto* exp = app.add_subcommand(
      "export", "write the model as a Hugging Face directory (config.json and model.safetensors, or shards with an index)");
  exp->add_option("file", path, "checkpoint file")->required();
  std::string peft_dir, peft_base;
  auto* hf_opt = exp->add_option("--hf", hf_dir, "output directory: the model in Hugging Face's format");
  auto* peft_opt = exp->add_option("--peft", peft_dir,
                                   "output directory: a LoRA run's adapters as PEFT writes them "
                                   "(adapter_model.safetensors, adapter_config.json; docs/lora.md)");
  hf_opt->excludes(peft_opt);
  bool merge = false;
  exp->add_flag("--merge", merge,
                "--hf of a LoRA run's checkpoint: each adapted weight plus its adapter's scale B A "
                "(without it: the base)")
      ->needs(hf_opt);
  exp->add_option("--base", peft_base,
                  "--peft: the base model adapter_config.json names (base_model_name_or_path)");
  exp->add_option("--dtype", hf_dtype, "stored precision")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  std::uint64_t max_shard = fsdp::ckpt::kDefaultMaxShardBytes;
  std::string max_shard_text = std::to_string(max_shard);
  // Read as text: CLI11 takes "-1" into an unsigned option as 2^64-1 and 2^64 as 0 (issue 63).
  exp->add_option("--max-shard-bytes", max_shard_text,
                  "larger models go in files of at most this many bytes with an index "
                  "(save_pretrained's 5GB); 0: one file")
      ->capture_default_str()
      ->check([&max_shard](const std::string& v) -> std::string {
        if (v.empty() || v.size() > 16 || v.find_first_not_of("0123456789") != std::string::npos)
          return "expected a byte count from 0 to 10^16 (digits only), got '" + v.substr(0, 40) + "'";
        max_shard = std::stoull(v);
        return {};
      });
  fsdp::CheckpointBenchOptions bench_opts;
  bench_opts.config = "inputs/bench_124m.toml";
  auto* bench = app.add_subcommand("bench", "write and read bandwidth beside dd on the same disk");
  bench->add_option("--config", bench_opts.config, "run deck (model, strategy)")
      ->capture_default_str();
  bench->add_option("--set", bench_opts.overrides, "override one key, section.key=value");
  bench->add_option("--dir", bench_opts.dir, "directory for the checkpoints and dd's file")
      ->required();
  bench->add_option("--reps", bench_opts.reps, "repetitions (the table shows each and the median)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.footer(fsdp::exit_code::help("fsdp-ckpt"));
  if (const int rc = fsdp::parse_everywhere(app, [&] { app.parse(argc, argv); }, MPI_COMM_WORLD,
                                             "fsdp-ckpt", fsdp::exit_code::kCkptUnreadable);
      rc >= 0)
    return rc;

  // Then the checkpoint I/O's own watches at the deck's default comm.timeout_s, and a wait on a
  // rank that has stopped ends the job naming it (one node; comm/safety.hpp's WhileAlive).
  fsdp::comm::start_watchdog(fsdp::RunConfig{}.comm.timeout_s);
  const auto board = fsdp::comm::ArrivalBoard::create(MPI_COMM_WORLD);  // collective: watched
  starting.reset();
  fsdp::comm::Watch alive("fsdp-ckpt: waiting for another rank", board.get(), fsdp::comm::WhileAlive{});
  int code = 0;
  {
    fsdp::KokkosSession kokkos(argc, argv);
    if (*info)
      code = fsdp::ckpt::info(MPI_COMM_WORLD, path, datasets, deck);
    else if (*verify)
      code = fsdp::ckpt::verify(MPI_COMM_WORLD, path);
    else if (*diff)
      code = fsdp::ckpt::diff(MPI_COMM_WORLD, path, other);
    else if (*exp && !peft_dir.empty())
      code = fsdp::ckpt::export_peft(MPI_COMM_WORLD, path, peft_dir, peft_base);
    else if (*exp && hf_dir.empty()) {
      if (rank == 0) std::fprintf(stderr, "fsdp-ckpt export: say where: --hf DIR or --peft DIR\n");
      code = 2;
    } else if (*exp)
      code = fsdp::ckpt::export_hf(MPI_COMM_WORLD, path, hf_dir,
                                   hf_dtype == "bf16" ? fsdp::weights::DType::BF16
                                                      : fsdp::weights::DType::F32,
                                   max_shard, merge);
    else if (*bench) {
      try {
        code = fsdp::run_checkpoint_bench(MPI_COMM_WORLD, bench_opts);
      } catch (const fsdp::SetupError& e) {  // every rank agreed on it
        if (rank == 0 || !e.same_on_all_ranks)
          std::fprintf(stderr, "fsdp-ckpt bench: %s\n", fsdp::one_line(e.what()).c_str());
        code = 2;
      } catch (const fsdp::CheckpointError& e) {
        if (rank == 0) std::fprintf(stderr, "fsdp-ckpt bench: %s\n", fsdp::one_line(e.what()).c_str());
        code = 2;
      } catch (const fsdp::CheckpointWriteError& e) {  // --dir unusable: agreed by every rank
        if (rank == 0) std::fprintf(stderr, "fsdp-ckpt bench: --dir: %s\n", fsdp::one_line(e.what()).c_str());
        code = 2;
      }
    }
  }
  return code;
}
