// SPDX-License-Identifier: MIT
// The training run: data, process groups, the sharding engine, the step loop with evaluation,
// the step log on rank 0 and the metrics file. fsdp-train is a thin driver around this.
#pragma once
#include <mpi.h>

#include <memory>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

#include "comm/owned_comm.hpp"
#include "comm/device_mesh.hpp"
#include "config/run_config.hpp"
#include "core/memory.hpp"
#include "core/offload_file.hpp"
#include "data/sampler.hpp"
#include "fsdp/engine.hpp"
#include "io/async_checkpointer.hpp"
#include "io/checkpoint.hpp"
#include "io/metrics.hpp"
#include "io/trace.hpp"

namespace fsdp {

// A problem with the run that every rank agrees on before any work (exit code 2).
// `everywhere`: every rank found the same problem, so only rank 0 needs to print it.
// exit_code: 2 for a run-deck problem, 3 for a data problem (as fsdp-train documents).
struct SetupError : std::runtime_error {
  SetupError(const std::string& what, bool everywhere, int code = 2)
      : std::runtime_error(what), same_on_all_ranks(everywhere), exit_code(code) {}
  bool same_on_all_ranks;
  int exit_code;
};

struct TrainOptions {
  std::string metrics_path;
  std::string trace_path;
  bool trace_in_memory = false;  // record events without writing a file (tests)
  bool log = true;  // rank 0 prints the step log
  bool profile = false;  // rank 0 prints a per-kernel time breakdown at the end
  // "" starts fresh; "auto" resumes from the newest complete checkpoint in checkpoint.dir that
  // verifies (or starts fresh, saying so); anything else is a checkpoint file to resume from.
  std::string resume;
  // A weights file to start from (train/init_weights.hpp) when the run does not resume: with
  // --resume auto, a requeued fine-tuning job continues from its checkpoint, not the weights.
  // The deck must already carry the file's model shape (with_init_shape).
  std::string init_from;
  std::string adapter;  // --adapter: a PEFT adapter directory on the --init-from base
  // Files the run reads besides the deck's data files (the deck itself): output paths must not
  // name them.
  std::vector<std::string> inputs;
};

struct TrainSummary {
  std::vector<double> losses, grad_norms;
  std::vector<std::pair<int, double>> evals;  // (step, eval loss)
  double tokens_per_s = 0.0;                  // median over the timed steps
  StepResult last;                            // the last step's figures
  // Set when a stop request (SIGUSR1/SIGTERM) ended the run early: the signal, and the
  // checkpoint of the last completed step.
  int stop_signal = 0;
  std::string checkpoint;
};

class Trainer {
 public:
  Trainer(const RunConfig& cfg, MPI_Comm world, TrainOptions opts = {});
  ~Trainer();
  TrainSummary run();
  // None when there is nothing to evaluate, or when the windows score no token (a mask that
  // trains none of them: eval_scored_nothing() then says so).
  std::optional<double> evaluate();
  bool eval_scored_nothing() const { return eval_scored_nothing_; }
  void check_eval(int step, double loss) const;  // a non-finite one: NonFiniteError or a warning

  Engine& engine() { return *engine_; }
  OffloadFile* offload_file() { return offload_.get(); }  // fsdp.offload = nvme, else null
  MemoryTracker& tracker() { return tracker_; }
  Trace& trace() { return trace_; }
  comm::DeviceMesh& mesh() { return mesh_; }
  int rank() const { return rank_; }
  int world_size() const { return nranks_; }
  int micro_batches_per_step() const { return n_micro_; }
  // The step run() starts at: 0, or the resumed checkpoint's step.
  int start_step() const { return start_step_; }
  // Writes a checkpoint of the steps completed so far and returns its path, after any
  // background write in flight has completed. Collective.
  std::string save_checkpoint();

 private:
  // Construction's steps, in order.
  void guard_start_up(MPI_Comm world);  // watchdog, failure handler, output paths, BLAS
  void resolve_setup(MPI_Comm world);   // the one RunSetup of the run
  void load_data(MPI_Comm world);
  void make_mesh(MPI_Comm world);       // the device mesh and the trace
  void open_offload(MPI_Comm world);  // fsdp.offload = nvme: this rank's file (trainer_offload.cpp)
  void build_engine();
  void open_checkpoints(MPI_Comm world);  // the directory; --resume or --init-from
  void open_metrics(MPI_Comm world);
  void choose_peak_flops();             // MFU's denominator and the start-up lines
  void measure_peak();                  // after the first step, where nothing gives the peak

  // The log (trainer_log.cpp): the start-up line, each step's line and record, the summary.
  void log_start() const;
  void log_step(int step, const StepResult& r, double step_s, double tok_s);
  void log_done(const TrainSummary& sum) const;
  // run()'s parts (trainer.cpp) and the evaluation (trainer_eval.cpp).
  StepResult timed_step(int step, std::vector<double>& rates);
  bool stop_requested(TrainSummary& sum);
  void eval_and_sample(int step, TrainSummary& sum);
  // trainer_checkpoint.cpp
  void resume(MPI_Comm world);
  // A checkpoint.every save: in the background where checkpoint.async is on, else save_checkpoint.
  void save_periodic();
  // Waits for the background write in flight, if any (its file becomes last_saved_path_).
  void finish_background_save();
  void print_sample(int step);
  // trainer_data.cpp: the batch's TokenLayout for a sampler whose global batch of
  // `micro_batches` micro-batches holds `scored` scored targets.
  TokenLayout token_layout(const Sampler& s, std::int64_t scored, std::int64_t micro_batches);

  RunConfig cfg_;
  RunSetup setup_;  // cfg_ resolved for this run's ranks (the engine's too)
  TrainOptions opts_;
  int rank_ = 0, nranks_ = 1;
  int per_rank_batch_ = 0, n_micro_ = 0;
  comm::OwnedComm errors_;  // reserved for rank-local failures (comm/agree.hpp all_arrive_within)
  MemoryTracker tracker_;
  Trace trace_;
  comm::DeviceMesh mesh_;
  std::unique_ptr<TokenFile> train_, val_;
  std::unique_ptr<Sampler> train_sampler_, val_sampler_;
  std::unique_ptr<OffloadFile> offload_;  // before the engine: outlives the state in it
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<MetricsWriter> metrics_;
  std::vector<std::int32_t> inputs_, targets_, doc_starts_;  // doc_starts_: packed documents
  double peak_flops_ = 0.0;  // per rank, FLOP/s
  bool measure_peak_ = false;  // measured on the first step's GEMMs (no deck or data-sheet figure)
  double flops_per_token_ = 0.0;
  double run_start_s_ = 0.0;
  std::unique_ptr<Checkpointer> checkpointer_;
  std::unique_ptr<AsyncCheckpointer> async_;  // destroyed first: waits for its write
  int start_step_ = 0, steps_done_ = 0, last_saved_ = -1;
  std::string last_saved_path_;  // the file of step last_saved_ (its name may carry the run id)
  bool resumed_ = false;
  bool eval_scored_nothing_ = false;  // the last evaluate()'s windows scored no token
};

}  // namespace fsdp
