// SPDX-License-Identifier: MIT
// The trainer's log: the start-up line, each step's line and metrics record, and the summary.
#include <algorithm>
#include <cstdio>

#include "core/clock.hpp"
#include "core/device_info.hpp"
#include "core/kernel_profile.hpp"
#include "model/gemm/gemm_paths.hpp"
#include "model/layers/lora_layout.hpp"
#include "train/trainer.hpp"

namespace fsdp {
namespace {
std::string format_duration(double s) {
  char buf[32];
  const int t = int(std::max(0.0, s));
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%dh%02dm", t / 3600, (t / 60) % 60);
  else std::snprintf(buf, sizeof buf, "%dm%02ds", t / 60, t % 60);
  return buf;
}

// Mixtures of experts: the balance loss and the most unbalanced sparse layer's busiest expert
// over the mean (the metrics record every layer's).
std::string experts_column(const StepResult& r) {
  if (r.expert_load.empty()) return "";
  char buf[128];
  std::snprintf(buf, sizeof buf, " | aux %.4f | load %.2f max/mean", r.aux_loss,
                *std::max_element(r.expert_load.begin(), r.expert_load.end()));
  std::string out = buf;
  if (r.dropped_choices > 0) out += " | dropped " + std::to_string(r.dropped_choices);
  if (r.exchange_bytes > 0) {
    std::snprintf(buf, sizeof buf, " | exchange %.0f ms", 1e3 * r.exchange_s);
    out += buf;
  }
  return out;
}

// fsdp.offload = nvme: rank 0's offload file in the step, and what the step waited for it.
std::string disk_column(const StepResult& r) {
  char buf[64];
  std::snprintf(buf, sizeof buf, ", %.2f s waited", r.disk_wait_s);
  return " | disk " + format_bytes(std::int64_t(r.disk_read_bytes)) + " read, " +
         format_bytes(std::int64_t(r.disk_write_bytes)) + " written" + buf;
}
}  // namespace

void Trainer::log_step(int step, const StepResult& r, double step_s, double tok_s) {
  const double mfu = tok_s * flops_per_token_ / (nranks_ * peak_flops_);
  if (r.nothing_scored) {  // every step that scores nothing is told: no loss, no update
    if (rank_ == 0 && opts_.log)
      std::printf("step %5d/%d | no scored token in the batch (the mask trains none of it): no "
                  "loss, no update\n", step + 1, cfg_.train.steps);
    if (metrics_) metrics_->write({{"step", step + 1}, {"loss", nullptr}, {"scored_tokens", 0},
                                   {"update", false}, {"lr", r.lr}});
    return;
  }
  if (rank_ == 0 && opts_.log && (step % cfg_.train.log_every == 0 || step + 1 == cfg_.train.steps)) {
    const double eta = (cfg_.train.steps - step - 1) * step_s;
    std::printf(
        "step %5d/%d | loss %.4f%s | lr %.2e | norm %.3f | %8.0f tok/s | MFU %5.1f%% | "
        "mem %s | comm %.1f/%.1f ms exposed/total | ETA %s%s%s\n",
        step + 1, cfg_.train.steps, r.loss, experts_column(r).c_str(), r.lr, r.grad_norm, tok_s, 100.0 * mfu,
        format_bytes(tracker_.peak_total()).c_str(),
        1e3 * r.comm_exposed_s, 1e3 * r.comm_total_s,
        format_duration(eta).c_str(),
        r.offload_bytes > 0 ? (" | offload " + format_bytes(std::int64_t(r.offload_bytes)) + " host<->device").c_str() : "",
        offload_ ? disk_column(r).c_str() : "");
    std::fflush(stdout);
  }
  if (metrics_) {
    nlohmann::json j{{"step", step + 1},
                     {"loss", r.loss},
                     {"lr", r.lr},
                     {"grad_norm", r.grad_norm},
                     {"tokens_per_s", tok_s},
                     {"step_time_s", step_s},
                     {"mfu", mfu},
                     {"compute_s", r.compute_s},
                     {"comm_exposed_s", r.comm_exposed_s},
                     {"comm_total_s", r.comm_total_s},
                     {"optimizer_s", r.optimizer_s},
                     {"offload_bytes", r.offload_bytes},
                     {"disk_read_bytes", r.disk_read_bytes},
                     {"disk_write_bytes", r.disk_write_bytes},
                     {"disk_wait_s", r.disk_wait_s},
                     {"mem_peak_device_bytes", tracker_.peak_total(MemSpace::Device)},
                     {"mem_peak_host_bytes", tracker_.peak_total(MemSpace::Host)}};
    nlohmann::json cats;
    for (int c = 0; c < kNumMemCategories; ++c)
      cats[to_string(MemCategory(c))] = tracker_.peak(MemCategory(c), MemSpace::Device);
    j["mem_peak_by_category"] = cats;
    if (!r.expert_load.empty()) {
      j["aux_loss"] = r.aux_loss;
      j["expert_load"] = r.expert_load;
      j["dropped_choices"] = r.dropped_choices;
      j["expert_exchange_s"] = r.exchange_s;
      j["expert_exchange_bytes"] = r.exchange_bytes;
    }
    metrics_->write(j);
  }
}

void Trainer::log_start() const {
  if (rank_ != 0 || !opts_.log) return;
  const std::int64_t active = num_active_params(cfg_.model);
  const std::string active_text =
      active != num_params(cfg_.model) ? std::to_string(active) + " active, " : "";
  std::printf("fsdp-train: %s: %lld parameters (%s%lld padded), %d ranks, strategy %s, shard "
              "group %d, %zu units (%s), prefetch %d, %d micro-batch(es) of %d per rank, GEMM "
              "peak %s per rank\n",
              describe_model(cfg_.model).c_str(), (long long)num_params(cfg_.model),
              active_text.c_str(), (long long)engine_->padded_params(), nranks_, cfg_.fsdp.strategy.c_str(),
              engine_->shard_group_size(), engine_->units().size(), cfg_.fsdp.unit.c_str(),
              cfg_.fsdp.prefetch, n_micro_, cfg_.train.micro_batch_size,
              measure_peak_ ? "measured after the first step"
                            : (std::to_string(int(peak_flops_ / 1e9 + 0.5)) + " GFLOP/s").c_str());
  if (setup_.choices.lora.on())
    std::printf("fsdp-train: %s\n",
                adapter_summary(setup_.choices.lora,
                                adapter_counts(model_units(cfg_.model, setup_.choices))).c_str());
  if (!setup_.muon_optimizer()) return;
  std::int64_t matrices = 0, muon = 0, rest = 0;
  for (const UnitLayout& u : model_units(cfg_.model))
    for (const TensorSpec& t : u.tensors) {
      if (muon_matrix(t)) ++matrices;
      (muon_matrix(t) ? muon : rest) += t.numel;
    }
  std::printf("fsdp-train: optimizer muon: %lld hidden matrices (%lld parameters), each "
              "orthogonalised whole on one rank of its shard group by %d Newton-Schulz steps "
              "(%.3g GFLOP a step on rank 0); AdamW for the other %lld parameters\n",
              (long long)matrices, (long long)muon, cfg_.muon.ns_steps, engine_->muon_flops() / 1e9,
              (long long)rest);
}

void Trainer::log_done(const TrainSummary& sum) const {
  if (rank_ != 0) return;
  if (opts_.log) {
    std::printf("done: %d steps in %.1f s, median %.0f tok/s, peak device memory %s\n  %s\n",
                cfg_.train.steps - start_step_, now_s() - run_start_s_, sum.tokens_per_s,
                format_bytes(tracker_.peak_total()).c_str(), tracker_.report().c_str());
    // The tracker counts buffers in use; the driver also sees the allocator's cache, the CUDA
    // context and cuBLAS' workspace: both figures, so neither is mistaken for the other.
    if (const std::int64_t used = device_bytes_in_use(); used >= 0)
      std::printf("  device memory in use now (cudaMemGetInfo): %s, buffer cache %s\n",
                  format_bytes(used).c_str(), format_bytes(BufferCache::held_bytes()).c_str());
  }
  if (!opts_.profile || !profile::enabled()) return;
  std::printf("per-kernel time, steps 2..%d (rank 0):\n%s", cfg_.train.steps,
              profile::report(cfg_.train.steps - 1).c_str());
  std::printf("GEMMs by shape, steps 2..%d (rank 0):\n%s", cfg_.train.steps,
              kernels::gemm_paths::table(cfg_.train.steps - 1, "  ").c_str());
}

}  // namespace fsdp
