// SPDX-License-Identifier: MIT
// The trainer's side of checkpoints (io/checkpoint.hpp): resuming at construction, writing the
// state of the steps completed so far.
#include <cstdio>

#include "fsdp/optim/lr_schedule.hpp"
#include "train/nonfinite_weights.hpp"
#include "train/trainer.hpp"

namespace fsdp {

void Trainer::resume(MPI_Comm world) {
  bool any_failed = false;
  auto warn = [&](const std::string& m) {
    any_failed = true;
    if (rank_ == 0) std::fprintf(stderr, "fsdp-train: warning: %s\n", m.c_str());
  };
  ckpt::Header h;
  std::string path = opts_.resume;
  if (opts_.resume == "auto") {
    path = checkpointer_->load_newest(engine_->state(), h, warn);
    if (path.empty()) {
      // A failed attempt may have overwritten part of the shards: start from the seed again.
      if (any_failed) {
        engine_.reset();
        engine_ = std::make_unique<Engine>(setup_, mesh_, tracker_, trace_, offload_.get());
      }
      if (rank_ == 0 && opts_.log)
        std::printf("fsdp-train: --resume auto: no complete checkpoint in %s, starting fresh\n",
                    checkpointer_->dir().c_str());
      return;
    }
  } else {
    h = checkpointer_->load(path, engine_->state());  // throws the same CheckpointError on every rank
  }
  if (!cfg_.train.allow_nonfinite_weights)
    if (const std::string bad = first_nonfinite_param(*engine_, world); !bad.empty())
      throw CheckpointError(path + ": parameter " + bad +
                            " (non-finite weights are refused; train.allow_nonfinite_weights = "
                            "true accepts them)");
  // moe.balance = bias continues from the saved biases (a file without them, or another
  // balance's run, starts them at 0).
  if (!engine_->router_bias().empty() && h.router_bias.size() == engine_->router_bias().size())
    engine_->set_router_bias(h.router_bias);
  checkpointer_->adopt_run(h.run_id, path);  // this job continues that run
  start_step_ = steps_done_ = last_saved_ = int(h.step);
  last_saved_path_ = path;
  resumed_ = true;
  if (rank_ == 0 && h.sampler_seed != cfg_.train.seed)
    std::fprintf(stderr,
                 "fsdp-train: warning: %s was trained with train.seed = %llu, this run "
                 "uses %llu: the data order changes from here on\n",
                 path.c_str(), (unsigned long long)h.sampler_seed,
                 (unsigned long long)cfg_.train.seed);
  if (rank_ == 0 && opts_.log)
    std::printf("fsdp-train: resumed from %s at step %lld (saved by %lld ranks, %s)\n",
                path.c_str(), (long long)h.step, (long long)h.saved_ranks, h.strategy.c_str());
}

namespace {

ckpt::Header header_at(int steps_done, const RunConfig& cfg, const Sampler& sampler,
                       Engine& engine) {
  ckpt::Header h;
  h.step = steps_done;
  h.tokens_seen = std::int64_t(steps_done) * cfg.train.batch_size * cfg.model.block_size;
  h.sampler_seed = sampler.seed();
  h.optimizer_steps = engine.optimizer_steps();
  h.lr_step = steps_done;
  h.lr = optim::learning_rate(cfg.train, steps_done);
  h.router_bias = engine.router_bias();
  return h;
}

}  // namespace

void Trainer::finish_background_save() {
  if (!async_) return;
  const AsyncCheckpointer::Written w = async_->wait();
  if (w.step == last_saved_ && last_saved_path_.empty()) last_saved_path_ = w.path;
}

void Trainer::save_periodic() {
  if (!async_) {
    save_checkpoint();
    return;
  }
  const AsyncCheckpointer::Started s =
      async_->save(engine_->state(), header_at(steps_done_, cfg_, *train_sampler_, *engine_));
  last_saved_ = steps_done_;
  last_saved_path_.clear();  // known when the write completes (finish_background_save)
  if (rank_ == 0 && opts_.log) {
    std::printf("checkpoint step %d: staged %s in %.3f s (training waited %.3f s for the "
                "previous write); writing in the background\n",
                steps_done_, format_bytes(async_->staging_bytes()).c_str(), s.staged_s,
                s.waited_s);
    std::fflush(stdout);
  }
  if (metrics_)
    metrics_->write({{"step", steps_done_},
                     {"checkpoint_staged_s", s.staged_s},
                     {"checkpoint_waited_s", s.waited_s}});
}

std::string Trainer::save_checkpoint() {
  finish_background_save();
  const ckpt::Header h = header_at(steps_done_, cfg_, *train_sampler_, *engine_);
  const double t0 = now_s();
  const std::string path = checkpointer_->save(engine_->state(), h);
  last_saved_ = steps_done_;
  last_saved_path_ = path;
  if (rank_ == 0 && opts_.log) {
    const double bytes = 3.0 * 4.0 * double(num_params(cfg_.model));  // params + 2 moments
    const double s = now_s() - t0;
    std::printf("checkpoint %s: step %d, %s in %.2f s (%.0f MB/s)\n", path.c_str(), steps_done_,
                format_bytes(std::int64_t(bytes)).c_str(), s, bytes / s / 1e6);
    std::fflush(stdout);
  }
  return path;
}

}  // namespace fsdp
