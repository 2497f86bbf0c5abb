// SPDX-License-Identifier: MIT
// fsdp-bench: micro-benchmarks that print nccl-tests-style tables, one subcommand each
// (comm: our collectives beside raw MPI; machine: the rates fsdp-plan reads; gemm: a deck's
// GEMM shapes per library; attention: the fused kernel beside the materialised one; tokenizer:
// a Hugging Face tokenizer's encode rate on one core).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#include <optional>

#include "core/kokkos_session.hpp"
#include "bench/bench_machine.hpp"
#include "bench/bench_comm.hpp"
#include "bench/gemm_bench.hpp"
#include "bench/attention_bench.hpp"
#include "bench/tokenizer_bench.hpp"
#include "core/blas_setup.hpp"
#include "comm/mpi_session.hpp"
#include "comm/safety.hpp"
#include "config/parse_everywhere.hpp"
#include "config/run_config.hpp"
#include "core/check.hpp"
#include "core/faults.hpp"
#include "core/exit_codes.hpp"

namespace {

CLI::App* add_comm(CLI::App& app, fsdp::comm::CommBenchOptions& o) {
  CLI::App* sub = app.add_subcommand("comm", "collective bandwidth: ours beside raw MPI");
  const auto size = CLI::AsSizeValue(false);  // 64K = 65536
  sub->add_option("--min-bytes", o.min_bytes, "smallest full buffer per rank")
      ->transform(size)
      ->capture_default_str();
  sub->add_option("--max-bytes", o.max_bytes, "largest full buffer per rank")
      ->transform(size)
      ->capture_default_str();
  sub->add_option("--factor", o.factor, "size step (2 = doubling)")->capture_default_str();
  sub->add_option("--iters", o.iters, "timed calls per figure; 0 = enough for --min-time")
      ->capture_default_str();
  sub->add_option("--min-time", o.min_time_s, "seconds of timed calls per figure (--iters 0)")
      ->capture_default_str();
  sub->add_option("--warmup", o.warmup, "untimed calls first")->capture_default_str();
  sub->add_option("--window-bytes", o.window_bytes, "shared window per rank")
      ->transform(size)
      ->capture_default_str();
  sub->add_option("--step-bytes", o.step_bytes, "shared-memory step per rank")
      ->transform(size)
      ->capture_default_str();
  sub->add_option("--single-copy-max", o.single_copy_max_bytes,
                  "largest collective read straight from the peers (0: never)")
      ->transform(size)
      ->capture_default_str();
  sub->add_flag("--fallback", o.fallback, "also time our MPI path without shared memory");
  sub->add_option("--json", o.json_path, "write the results here too");
  return sub;
}

}  // namespace

int main(int argc, char** argv) {
  fsdp::install_terminate_handler("fsdp-bench");
  fsdp::select_blas_kernel(argv);
  fsdp::comm::MpiSession mpi(&argc, &argv);
  // The watchdog every app starts (comm/safety.hpp), over the start-up first.
  fsdp::comm::start_watchdog(fsdp::comm::kStartupTimeoutS);
  std::optional<fsdp::comm::Watch> starting(std::in_place, "start-up: reading the arguments");
  fsdp::faults::throw_if_asked("fsdp-bench");
  const int rank = mpi.rank();

  CLI::App app{"fsdp-bench: micro-benchmarks for the FSDP trainer"};
  app.require_subcommand(1);
  fsdp::comm::CommBenchOptions comm_options;
  CLI::App* comm = add_comm(app, comm_options);
  fsdp::bench::MachineBenchOptions machine_options;
  CLI::App* machine = app.add_subcommand(
      "machine", "measure GEMM, collective and memory rates; write an fsdp-machine/1 file");
  machine->add_option("--out", machine_options.out, "the machine file")->capture_default_str();
  machine->add_option("--iters", machine_options.iters, "repeats per figure")
      ->capture_default_str();
  machine
      ->add_option("--ranks-per-node", machine_options.ranks_per_node,
                   "ranks per node (0: those sharing memory)")
      ->capture_default_str();
  machine->add_option("--calibrate", machine_options.calibrate,
                      "a run deck: measure gemm_efficiency on its model's forward and backward");
  machine->add_option("--offload-path", machine_options.offload_path,
                      "a node-local directory: measure its disk for fsdp.offload = nvme");
  machine->add_option("--disk-bytes", machine_options.disk_bytes,
                      "bytes per rank written and read back on --offload-path")
      ->capture_default_str();
  fsdp::bench::GemmBenchOptions gemm_options;
  CLI::App* gemm = app.add_subcommand(
      "gemm", "the rate of every bf16 GEMM shape of a deck, per library (one rank)");
  gemm->add_option("--config", gemm_options.config, "the run deck")->required();
  gemm->add_option("--set", gemm_options.sets, "a deck override, section.key=value");
  gemm->add_option("--iters", gemm_options.iters, "timed calls per figure")->capture_default_str();
  fsdp::bench::AttentionBenchOptions attn_options;
  CLI::App* attn = app.add_subcommand(
      "attention", "causal attention forward and backward: fused beside materialised (one rank)");
  attn->add_option("--batch", attn_options.batch, "sequences B")->capture_default_str();
  attn->add_option("--heads", attn_options.heads, "query heads H")->capture_default_str();
  attn->add_option("--kv-heads", attn_options.kv_heads, "key/value heads (0: H)")
      ->capture_default_str();
  attn->add_option("--head-dim", attn_options.head_dim, "head size D")->capture_default_str();
  attn->add_option("--seq", attn_options.seq_lens, "sequence lengths T")->capture_default_str();
  attn->add_option("--path", attn_options.path, "both | fused | materialized")
      ->check(CLI::IsMember({"both", "fused", "materialized"}))
      ->capture_default_str();
  attn->add_option("--iters", attn_options.iters, "timed calls per figure")->capture_default_str();
  attn->add_flag("--check", attn_options.check,
                 "first compare the fused results with the materialised ones (exit 1 past 1e-4)");
  fsdp::bench::TokenizerBenchOptions tok_options;
  CLI::App* tok = app.add_subcommand(
      "tokenizer", "a Hugging Face tokenizer's encode rate on one core, MB/s per run (one rank)");
  tok->add_option("--tokenizer", tok_options.tokenizer, "tokenizer.json or its directory")
      ->required();
  tok->add_option("--text", tok_options.text, "a UTF-8 text file, encoded whole")->required();
  tok->add_option("--runs", tok_options.runs, "timed runs, each from an empty word cache")
      ->capture_default_str();
  tok->add_flag("--special", tok_options.special, "add the post-processor's special tokens");
  if (const int rc = fsdp::parse_everywhere(app, [&] { app.parse(argc, argv); }, MPI_COMM_WORLD,
                                             "fsdp-bench", fsdp::exit_code::kBadConfig);
      rc >= 0)
    return rc;
  // Then the benchmarks' collectives (each watched) at the deck's default comm.timeout_s.
  fsdp::comm::start_watchdog(fsdp::RunConfig{}.comm.timeout_s);
  starting.reset();

  fsdp::KokkosSession kokkos(argc, argv);  // after parsing: --help is ours alone
  if (comm->parsed()) return fsdp::comm::run_comm_bench(MPI_COMM_WORLD, comm_options);
  if (machine->parsed()) return fsdp::bench::run_machine_bench(MPI_COMM_WORLD, machine_options);
  if (gemm->parsed()) return fsdp::bench::run_gemm_bench(MPI_COMM_WORLD, gemm_options);
  if (attn->parsed()) return fsdp::bench::run_attention_bench(MPI_COMM_WORLD, attn_options);
  if (tok->parsed()) return fsdp::bench::run_tokenizer_bench(MPI_COMM_WORLD, tok_options);
  return 0;
}
