// SPDX-License-Identifier: MIT
// The trainer's evaluation: the validation loss over eval.sequences windows shared across the
// ranks, its non-finite policy, and the sample printed after it.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/exit_codes.hpp"
#include "train/sample.hpp"
#include "train/trainer.hpp"

namespace fsdp {

std::optional<double> Trainer::evaluate() {
  const int T = cfg_.model.block_size, B = cfg_.train.micro_batch_size;
  const std::int64_t S = std::min<std::int64_t>(cfg_.eval.sequences, val_sampler_->num_eval_windows());
  if (S <= 0) return std::nullopt;
  // Window i goes to rank i % N; every rank runs the same number of micro-batches (the
  // collectives must match), padding its last one with window 0 whose loss is dropped.
  std::vector<std::int64_t> mine;
  for (std::int64_t i = rank_; i < S; i += nranks_) mine.push_back(i);
  const std::int64_t per_rank = (S + nranks_ - 1) / nranks_;
  const int n_micro = int((per_rank + B - 1) / B);
  const Sampler& data = *val_sampler_;
  // With scored tokens the sequences report sums, and the loss is their total over the scored
  // targets of all S windows (counted on every rank).
  std::int64_t scored = 0;
  if (data.scores_tokens())
    for (std::int64_t w = 0; w < S; ++w) scored += data.eval_scored_targets(w);
  // A loss over no token is no number, not 0: reported as such by the caller, no forward run.
  eval_scored_nothing_ = data.scores_tokens() && scored == 0;
  if (eval_scored_nothing_) return std::nullopt;
  const TokenLayout layout = token_layout(data, scored, 1);
  auto load = [&](int j, Decoder& m) {
    for (int b = 0; b < B; ++b) {
      const std::size_t k = std::size_t(j) * B + b, at = std::size_t(b) * T;
      const std::int64_t w = k < mine.size() ? mine[k] : 0;
      data.eval_window(w, inputs_.data() + at, targets_.data() + at,
                       doc_starts_.empty() ? nullptr : doc_starts_.data() + at);
    }
    m.set_batch(inputs_.data(), targets_.data(), layout);
  };
  const std::vector<double> losses = engine_->evaluate(n_micro, load);
  double sum = 0.0;
  for (std::size_t k = 0; k < mine.size(); ++k) sum += losses[k];
  const double total = mesh_.world().all_reduce_sum(sum);
  if (data.scores_tokens()) return total / double(scored);
  return total / double(S);
}

void Trainer::check_eval(int step, double loss) const {
  // Every rank holds the same sum. Under abort it ends the run as a non-finite training loss
  // does (exit 4); under skip_step the run goes on and the metrics record the value (null).
  if (std::isfinite(loss)) return;
  char what[160];
  std::snprintf(what, sizeof what, "val loss is %s at step %d (eval over %s)",
                std::isnan(loss) ? "nan" : "inf", step, cfg_.data.val.c_str());
  if (cfg_.train.on_nonfinite != "skip_step") throw NonFiniteError(what);
  if (rank_ == 0)
    std::fprintf(stderr, "fsdp-train: warning: %s (train.on_nonfinite = skip_step: the run goes on)\n",
                 what);
}

void Trainer::print_sample(int step) {
  if (cfg_.eval.sample_tokens <= 0 || val_sampler_->num_eval_windows() == 0) return;
  const int T = cfg_.model.block_size;
  val_sampler_->eval_window(0, inputs_.data(), targets_.data());
  const int prompt_len = std::max(1, std::min(16, T / 4));
  SampleOptions o;
  o.tokens = cfg_.eval.sample_tokens;
  o.seed = cfg_.train.seed + std::uint64_t(step);
  o.top_k = 40;
  const std::vector<std::int32_t> out =
      sample(*engine_, mesh_.world(),
             std::vector<std::int32_t>(inputs_.begin(), inputs_.begin() + prompt_len), o);
  if (rank_ != 0 || !opts_.log) return;
  if (cfg_.model.vocab_size == 256) {
    const std::vector<std::int32_t> head(out.begin(), out.begin() + prompt_len),
        tail(out.begin() + prompt_len, out.end());
    std::printf("sample %4d | %s|%s\n", step, bytes_as_text(head, true).c_str(),
                bytes_as_text(tail, true).c_str());
  } else {
    std::string ids;
    for (std::size_t i = 0; i < out.size(); ++i)
      ids += (i ? (i == std::size_t(prompt_len) ? " | " : " ") : "") + std::to_string(out[i]);
    std::printf("sample %4d | %s\n", step, ids.c_str());
  }
  std::fflush(stdout);
}

// The evaluation at `step` (0: before training): logged, recorded, then a sample.
void Trainer::eval_and_sample(int step, TrainSummary& sum) {
  if (const std::optional<double> ev = evaluate()) {
    check_eval(step, *ev);
    sum.evals.emplace_back(step, *ev);
    if (rank_ == 0 && opts_.log) std::printf(step ? "eval  %5d | val loss %.4f\n" : "eval  %5d | val loss %.6f\n", step, *ev);
    if (metrics_) metrics_->write({{"step", step}, {"eval_loss", *ev}});
  } else if (eval_scored_nothing_) {
    if (rank_ == 0 && opts_.log)
      std::printf("eval  %5d | no scored token in the evaluation windows of %s: no val loss\n",
                  step, cfg_.data.val.c_str());
    if (metrics_) metrics_->write({{"step", step}, {"eval_loss", nullptr}, {"eval_scored_tokens", 0}});
  }
  print_sample(step);
}

}  // namespace fsdp
