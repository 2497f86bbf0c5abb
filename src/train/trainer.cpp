// SPDX-License-Identifier: MIT
#include "train/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

#include "comm/agree.hpp"
#include "comm/safety.hpp"
#include "core/blas_setup.hpp"
#include "core/bf16.hpp"
#include "comm/process_groups.hpp"
#include "comm/training_groups.hpp"
#include "core/check.hpp"
#include "core/device_info.hpp"
#include "core/faults.hpp"
#include "core/kernel_profile.hpp"
#include "core/exit_codes.hpp"
#include "io/output_path.hpp"
#include "model/attention_path.hpp"
#include "model/flash_attention.hpp"
#include "model/gemm/bf16_gemm.hpp"
#include "model/gemm/gemm.hpp"
#include "model/gemm/gemm_peak.hpp"
#include "model/gemm/gemm_paths.hpp"
#include "train/init_weights.hpp"
#include "train/sample.hpp"
#include "train/signals.hpp"

namespace fsdp {
namespace {

// The start-up log's attention line: the path model.attention resolved to, what it keeps.
std::string describe_attention(const ModelConfig& m, const ModelChoices& c) {
  const AttentionPath path = architecture_of(m).attention(m, c);
  std::string s = attention_name(path);
  if (path == AttentionPath::Fused) {
    const kernels::FlashPlan fp = kernels::flash_plan(m.head_dim());
    s += " (" + std::to_string(fp.br) + "x" + std::to_string(fp.bc) +
         " tiles, B*H*T log-sum-exps kept per layer";
  } else {
    s += " (B*H*T*T probabilities kept per layer";
  }
  if (c.attention == "auto") s += "; model.attention = auto at T = " + std::to_string(m.block_size);
  if (m.kv_heads() < m.n_head)
    s += "; grouped-query heads (" + std::to_string(m.n_head) + " query, " +
         std::to_string(m.kv_heads()) + " key/value) read in place";
  return s + ")";
}


}  // namespace

// Why an output path of this run is unusable, agreed over world ("" when none is).
std::string output_paths_problem(const RunConfig& cfg, const TrainOptions& o, int rank,
                                 MPI_Comm world) {
  std::vector<std::string> inputs = o.inputs;
  for (const std::string& d : {cfg.data.train, cfg.data.val})
    if (d.rfind("builtin:", 0) != 0) inputs.push_back(d);
  if (o.resume != "auto") inputs.push_back(o.resume);
  inputs.push_back(o.init_from);
  if (!o.adapter.empty()) inputs.push_back(o.adapter);
  std::string err;
  if (rank == 0) err = output_problem("--metrics", o.metrics_path, OutputKind::Metrics, inputs);
  if (err.empty() && !o.trace_path.empty())
    err = output_problem("--trace", Trace::rank_path(o.trace_path, rank), OutputKind::Trace,
                         inputs);
  return agree_on_error(world, err);
}

// Construction, step by step: each step below is one named member function.
Trainer::Trainer(const RunConfig& cfg, MPI_Comm world, TrainOptions opts)
    : cfg_(cfg), opts_(std::move(opts)), errors_(comm::OwnedComm::dup(world)),
      tracker_(cfg.memory.device_budget) {
  MPI_Comm_rank(world, &rank_);
  MPI_Comm_size(world, &nranks_);
  guard_start_up(world);
  resolve_setup(world);
  faults::stall(-1, rank_);  // a rank stuck at start-up (a test hook)
  load_data(world);
  std::optional<comm::Watch> startup;  // until the checkpoint directory is ready
  startup.emplace("start-up: process groups and the sharded model");
  make_mesh(world);
  open_offload(world);
  build_engine();
  open_checkpoints(world);
  open_metrics(world);
  choose_peak_flops();
}

void Trainer::guard_start_up(MPI_Comm world) {
  // Start-up's collectives are watched too: a rank that never arrives ends the job.
  // The app's start-up watch (comm::kStartupTimeoutS) ran before; from here the deck's timeout
  // applies, and 0 turns the timing off.
  comm::start_watchdog(cfg_.comm.timeout_s);
  // A rank that runs out of memory alone would leave the others in a collective: when not
  // every rank fails within a few seconds, the failing one ends the job with the report.
  tracker_.set_failure_handler([this](const std::string& why) {
    if (!all_arrive_within(errors_.get(), 5.0)) fatal(why, exit_code::kError);
  });
  if (const std::string bad = output_paths_problem(cfg_, opts_, rank_, world); !bad.empty())
    throw SetupError(bad, true);
  // OpenBLAS allocates its work buffers at its first call and spins, rather than failing, when
  // that allocation fails: make the first call now, before the model takes the memory.
  FlatView a("blas_warmup", 64 * 64);
  const ConstMat A(a.data(), 8, 8);
  const Mat C(a.data() + 64, 8, 8);
  kernels::gemm("N", "N", 1.f, A, A, 0.f, C);
}

void Trainer::resolve_setup(MPI_Comm world) {
  // The run resolved once, for the trainer, the engine and every check that involves the
  // number of ranks, the same as the planner's (config/run_setup).
  setup_ = setup_from_config(cfg_, nranks_, 1, kernels::gemm_bf16_computes());
  if (setup_.strategy == Strategy::Hybrid && setup_.shard_group_size <= 0)
    setup_.shard_group_size = comm::ranks_per_node(world);
  try {
    setup_.validate();
  } catch (const std::invalid_argument& e) {
    throw SetupError(e.what(), true);
  }
  per_rank_batch_ = cfg_.train.batch_size / nranks_;
  n_micro_ = setup_.micro_batches();
}

void Trainer::make_mesh(MPI_Comm world) {
  comm::LinkEmulation link{cfg_.comm.emulate_latency_us, cfg_.comm.emulate_gbps};
  comm::MpiOptions mpi_options;
  mpi_options.progress_thread = cfg_.comm.progress_thread;
  try {  // with the groups of the mesh's parts on 1/k of the shard group (fsdp/part_layout.hpp)
    mesh_ = comm::make_training_mesh(world, setup_.mesh(), setup_.mesh_groups(), cfg_.comm.backend,
                                     link, mpi_options);
  } catch (const comm::BackendError& e) {
    throw SetupError(e.what(), true);
  }
  if (rank_ == 0 && opts_.log) {
    std::printf("fsdp-train: mesh %s\n", setup_.describe_mesh().c_str());
    for (const std::string& path : mesh_.paths()) std::printf("fsdp-train: comm %s\n", path.c_str());
  }
  mesh_.set_check_collectives(cfg_.debug.check_collectives);
  if (!opts_.trace_path.empty() || opts_.trace_in_memory) trace_.enable(opts_.trace_path, rank_);
}

void Trainer::build_engine() {
  engine_ = std::make_unique<Engine>(setup_, mesh_, tracker_, trace_, offload_.get());
  if (const ShardVec p0 = engine_->param_shard(0); p0.on_device())
    faults::touch_device_on_host(p0.device().data());
  const std::int64_t T = cfg_.model.block_size;
  inputs_.resize(std::size_t(cfg_.train.micro_batch_size) * T);
  targets_.resize(inputs_.size());
  flops_per_token_ = architecture_of(setup_.model).flops_per_token(setup_.model);
}

void Trainer::open_checkpoints(MPI_Comm world) {
  // A training run may be asked for a checkpoint at any step (a preemption signal), so its
  // directory is made, checked and locked now whatever checkpoint.every is.
  checkpointer_ = std::make_unique<Checkpointer>(
      world, checkpoint_run(cfg_), cfg_.train.steps > 0 ? Checkpointer::Use::Write : Checkpointer::Use::Read);
  if (!opts_.resume.empty()) resume(world);
  if (!opts_.init_from.empty() && !resumed_) {
    init_weights(opts_.init_from, *engine_, *checkpointer_, world,
                 cfg_.train.allow_nonfinite_weights);
    if (!opts_.adapter.empty()) {
      load_adapter(opts_.adapter, *engine_, world);
      if (rank_ == 0 && opts_.log)
        std::printf("fsdp-train: adapters from %s\n", opts_.adapter.c_str());
    }
    if (rank_ == 0 && opts_.log)
      std::printf("fsdp-train: initialised from %s (%lld parameters), fresh optimizer\n",
                  opts_.init_from.c_str(), (long long)num_params(cfg_.model));
  }
  // Periodic saves in the background: where MPI lets a second thread call it.
  if (cfg_.checkpoint.async && cfg_.checkpoint.every > 0 && cfg_.train.steps > 0 &&
      !setup_.checkpoint_staging && rank_ == 0 && opts_.log)
    std::printf("fsdp-train: checkpoint.async: under fsdp.offload = nvme the state is larger than "
                "memory, so checkpoints stream it from the disk synchronously\n");
  if (setup_.checkpoint_staging && cfg_.train.steps > 0) {
    if (AsyncCheckpointer::available()) {
      async_ = std::make_unique<AsyncCheckpointer>(*checkpointer_, tracker_, rank_ == 0 && opts_.log,
                                                   12 * num_params(cfg_.model));
      async_->prepare(engine_->state());  // the staging memory is there from the start
    } else if (rank_ == 0) {
      std::printf("fsdp-train: checkpoint.async: this MPI does not provide MPI_THREAD_MULTIPLE, "
                  "so checkpoints are written synchronously\n");
    }
  }
}

void Trainer::open_metrics(MPI_Comm world) {
  // Rank 0 writes the metrics; every rank learns if it cannot, so all of them stop together.
  std::string metrics_error;
  if (rank_ == 0 && !opts_.metrics_path.empty()) try {
      metrics_ = std::make_unique<MetricsWriter>(opts_.metrics_path, /*append=*/start_step_ > 0);
    } catch (const std::exception& e) {
      metrics_error = std::string("--metrics ") + e.what();
    }
  metrics_error = agree_on_error(world, metrics_error);
  if (!metrics_error.empty()) throw SetupError(metrics_error, true);
}

void Trainer::choose_peak_flops() {
  const auto& t = cfg_.train;
  // MFU's denominator: the deck's figure, else a known GPU's data-sheet peak for the precision
  // the GEMMs run in, else a measured GEMM (a CPU, or a GPU not in the table).
  const DeviceInfo device = this_device();
  const bool bf16 = setup_.bf16_gemms;
  const double sheet = device.gpu ? datasheet_peak_tflops(device.name, bf16) : 0.0;
  // A measured rate is measured on the step's own GEMMs, after the first step (measure_peak).
  peak_flops_ = t.peak_tflops > 0 ? t.peak_tflops * 1e12 : sheet > 0 ? sheet * 1e12 : 0.0;
  measure_peak_ = peak_flops_ == 0.0;
  if (rank_ == 0 && opts_.log && !measure_peak_)
    std::printf("fsdp-train: device %s; MFU against %.3g TFLOP/s (%s)\n", describe(device).c_str(),
                peak_flops_ / 1e12,
                t.peak_tflops > 0 ? "train.peak_tflops"
                                  : (bf16 ? "data sheet, bf16 dense" : "data sheet, fp32"));
  if (rank_ == 0 && opts_.log && measure_peak_)
    std::printf("fsdp-train: device %s; MFU against the rate of this run's own GEMMs, measured "
                "after the first step\n",
                describe(device).c_str());
  const std::string kernel = blas_kernel_in_use();
  const std::string fp32_gemms = kernel.empty() ? "fp32" : "fp32 (OpenBLAS " + kernel + " kernels)";
  if (rank_ == 0 && opts_.log)
    std::printf("fsdp-train: GEMMs: %s\n",
                bf16 ? kernels::gemm_bf16_path().c_str()
                : cfg_.fsdp.mixed_precision == "bf16"
                    ? ("fp32 on the widened bf16 weights; " + kernels::gemm_bf16_path() +
                       (cfg_.fsdp.gemm_dtype == "auto" ? ", so auto chose fp32" : ""))
                          .c_str()
                    : fp32_gemms.c_str());
  if (const std::string w = blas_kernel_warning(); rank_ == 0 && opts_.log && !w.empty())
    std::fprintf(stderr, "fsdp-train: warning: %s\n", w.c_str());
  if (rank_ == 0 && opts_.log)
    std::printf("fsdp-train: attention: %s\n", describe_attention(setup_.model, setup_.choices).c_str());
  // Every rank uses rank 0's peak so MFU does not depend on which rank measured what.
  peak_flops_ = mesh_.world().all_reduce_max(rank_ == 0 ? peak_flops_ : 0.0);
}

void Trainer::measure_peak() {
  // The first step's GEMMs as the model ran them (shapes, dtypes, calls), each timed warm on
  // rank 0: a 1024^3 product alone reads 10-15% below the rate the step's shapes reach on some
  // CPUs, which put MFU near 100%.
  std::string what;
  double peak = 0.0;
  if (rank_ == 0) peak = measure_step_gemm_flops(kernels::gemm_paths::uses(), &what);
  peak_flops_ = mesh_.world().all_reduce_max(peak);
  measure_peak_ = false;
  if (rank_ == 0 && opts_.log)
    std::printf("fsdp-train: MFU against %.4g GFLOP/s per rank, measured on rank 0 on %s\n",
                peak_flops_ / 1e9, what.c_str());
}

Trainer::~Trainer() = default;

// The run: the start-up line, the steps (each timed, logged, evaluated and checkpointed as the
// deck says), a stop request ending it after any step, and the final checkpoint and summary.
TrainSummary Trainer::run() {
  TrainSummary sum;
  log_start();
  run_start_s_ = now_s();
  if (cfg_.train.steps > 0 && start_step_ >= cfg_.train.steps) {
    if (rank_ == 0 && opts_.log)
      std::printf("fsdp-train: nothing to train: the run is at step %d and train.steps = %d "
                  "(raise train.steps to go on)\n",
                  start_step_, cfg_.train.steps);
    return sum;
  }
  kernels::gemm_paths::reset();  // the MFU probe's GEMMs are not the model's
  std::vector<double> rates;
  for (int step = start_step_; step < cfg_.train.steps; ++step) {
    const StepResult r = timed_step(step, rates);
    sum.losses.push_back(r.loss);
    sum.grad_norms.push_back(r.grad_norm);
    sum.last = r;
    const bool last = step + 1 == cfg_.train.steps;
    if ((cfg_.eval.every > 0 && (step + 1) % cfg_.eval.every == 0) || last)
      eval_and_sample(step + 1, sum);
    steps_done_ = step + 1;
    if (cfg_.checkpoint.every > 0 && steps_done_ % cfg_.checkpoint.every == 0) save_periodic();
    if (!last && stop_requested(sum)) return sum;
  }
  if (cfg_.train.steps == 0) eval_and_sample(0, sum);  // the initial (e.g. --init-from) weights
  if (cfg_.checkpoint.every > 0 && last_saved_ != steps_done_) save_checkpoint();  // the final one
  finish_background_save();  // run() returns with every checkpoint complete
  if (!rates.empty()) {
    std::sort(rates.begin(), rates.end());
    sum.tokens_per_s = rates[rates.size() / 2];
  }
  log_done(sum);
  trace_.write();
  return sum;
}

// One training step, timed as the slowest rank sees it; its rate joins `rates` after the first
// (which warms caches); the MFU peak is measured after it where nothing gives one.
StepResult Trainer::timed_step(int step, std::vector<double>& rates) {
  const int B = cfg_.train.micro_batch_size;
  const Sampler& data = *train_sampler_;
  // Scored targets of the whole global batch: every rank counts them (the data is everywhere),
  // so the loss is the mean over them without a collective.
  const std::int64_t scored =
      data.scores_tokens() ? data.scored_targets(step, 0, cfg_.train.batch_size) : 0;
  const TokenLayout layout = token_layout(data, scored, std::int64_t(n_micro_) * nranks_);
  auto load = [&](int j, Decoder& m) {
    data.fill(step, std::int64_t(rank_) * per_rank_batch_ + std::int64_t(j) * B, B,
              inputs_.data(), targets_.data(), doc_starts_.empty() ? nullptr : doc_starts_.data());
    m.set_batch(inputs_.data(), targets_.data(), layout);
  };
  faults::stall(step, rank_);
  mesh_.world().barrier();
  const double t0 = now_s();
  if (opts_.profile && step == 1) {  // step 0 is a warm-up
    profile::enable();
    kernels::gemm_paths::reset();
  }
  engine_->set_prefetch_next_step(setup_.prefetch_across_steps && setup_.prefetch > 0 &&
                                  step + 1 < cfg_.train.steps);
  engine_->set_nothing_scored(data.scores_tokens() && scored == 0);
  const StepResult r = engine_->train_step(step, n_micro_, load);
  const double dt = now_s() - t0;
  const double tok_s = double(cfg_.train.batch_size) * cfg_.model.block_size / dt;
  if (step > start_step_ || cfg_.train.steps == 1) rates.push_back(tok_s);
  if (r.skipped && !r.nothing_scored && rank_ == 0)
    std::fprintf(stderr, "fsdp-train: step %d skipped (train.on_nonfinite = skip_step): "
                         "non-finite gradients, first in unit %s\n",
                 step + 1, r.nonfinite_unit.empty() ? "(loss only)" : r.nonfinite_unit.c_str());
  if (measure_peak_) measure_peak();
  log_step(step, r, dt, tok_s);
  if (step == start_step_ && rank_ == 0 && opts_.log)
    std::printf("fsdp-train: GEMM paths in step %d (rank 0; per shape, op(A) M x K times op(B) "
                "K x N):\n%s", step + 1, kernels::gemm_paths::table(0, "  ").c_str());
  return r;
}

// A stop request (SIGUSR1/SIGTERM on any rank, train/signals.hpp) ends the run after this step
// on every rank, with a checkpoint of it; fsdp-train exits 75 and the job resumes.
bool Trainer::stop_requested(TrainSummary& sum) {
  if ((sum.stop_signal = mesh_.world().all_reduce_max(stop_signal())) == 0) return false;
  finish_background_save();  // the write in flight first: it may be this step's
  sum.checkpoint = last_saved_ == steps_done_ ? last_saved_path_ : save_checkpoint();
  if (rank_ == 0)
    std::printf("fsdp-train: stop requested (%s) after step %d/%d; checkpoint written: %s\n",
                signal_name(sum.stop_signal), steps_done_, cfg_.train.steps, sum.checkpoint.c_str());
  std::fflush(stdout);
  trace_.write();
  return true;
}

}  // namespace fsdp
