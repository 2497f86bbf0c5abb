// SPDX-License-Identifier: MIT
#include "plan/plan_report.hpp"

#include "core/check.hpp"
#include "model/gemm/bf16_gemm.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>

#include "config/schema.hpp"
#include "core/memory.hpp"
#include "model/layers/lora_layout.hpp"
#include "model/registry.hpp"
#include "plan/machine.hpp"
#include "plan/memory_model.hpp"
#include "plan/time_model.hpp"

namespace fsdp::plan {
namespace {

struct Column {
  Strategy strategy;
  bool chosen = false;
  std::string error;       // why this strategy cannot run this setup
  std::string time_error;  // why its time cannot be predicted on this machine
  MemoryPlan mem;
  TimePlan time;
};

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string with_commas(std::int64_t n) {
  std::string s = std::to_string(n), out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

std::string seconds(double s) {
  if (s >= 1.0) return fmt("%.3f s", s);
  if (s >= 1e-3) return fmt("%.2f ms", s * 1e3);
  return fmt("%.1f us", s * 1e6);
}

void row(const std::string& name, const std::vector<Column>& cols,
         const std::function<std::string(const Column&)>& cell, bool time = false) {
  std::printf("  %-28s", name.c_str());
  for (const auto& c : cols) {
    const bool na = !c.error.empty() || (time && !c.time_error.empty());
    std::printf(" %14s", na ? "n/a" : cell(c).c_str());
  }
  std::printf("\n");
}

nlohmann::json memory_json(const MemoryPlan& m) {
  nlohmann::json dev, host;
  for (int c = 0; c < kNumMemCategories; ++c) {
    dev[to_string(MemCategory(c))] = m.device(MemCategory(c));
    host[to_string(MemCategory(c))] = m.host(MemCategory(c));
  }
  return {{"device", dev},
          {"host", host},
          {"device_total", m.device_total()},
          {"host_total", m.host_total()},
          {"params", m.params},
          {"padded_params", m.padded_params},
          {"shard_group", m.shard_group}};
}

nlohmann::json time_json(const TimePlan& t) {
  return {{"step_s", t.step_s},
          {"compute_s", t.compute_s},
          {"recompute_s", t.recompute_s},
          {"comm_exposed_s", t.comm_exposed_s},
          {"comm_busy_s", t.comm_busy_s},
          {"optimizer_s", t.optimizer_s},
          {"offload_exposed_s", t.offload_exposed_s},
          {"all_gathers", t.all_gathers},
          {"reduce_scatters", t.reduce_scatters},
          {"all_reduces", t.all_reduces},
          {"comm_bytes", t.comm_bytes},
          {"tokens_per_step", t.tokens_per_step},
          {"tokens_per_s", t.tokens_per_s},
          {"tokens_per_s_per_rank", t.tokens_per_s_per_rank},
          {"model_flops_per_token", t.model_flops_per_token},
          {"hardware_flops_per_token", t.hardware_flops_per_token},
          {"mfu", t.mfu},
          {"model_tflops_per_rank", t.model_tflops_per_rank},
          {"hardware_tflops_per_rank", t.hardware_tflops_per_rank},
          {"scaling_efficiency", t.scaling_efficiency}};
}

nlohmann::json shape_json(const ModelConfig& s) {
  return {{"n_layer", s.n_layer},       {"n_head", s.n_head},         {"n_embd", s.n_embd},
          {"vocab_size", s.vocab_size}, {"block_size", s.block_size}, {"n_positions", s.positions()},
          {"params", num_params(s)}};
}

struct Report {
  Setup base;
  Machine machine;
  std::int64_t budget = 0;
  std::vector<Strategy> strategies;
  std::vector<Column> cols;
  std::vector<LargestModel> biggest;
  std::vector<std::string> assumptions;
};

// Every option within what a plan can mean, before any search is sized from it: NaN, infinite
// or absurd values are refused by name rather than silently ignored or looped over.
void check_options(const PlanOptions& o) {
  auto bad = [](const std::string& flag, const std::string& want, double got) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", got);
    throw std::invalid_argument(flag + ": expected " + want + ", got " + buf);
  };
  if (!(o.params >= 0 && o.params <= 0x1p50)) bad("--params", "a parameter count in [1, 2^50]", o.params);
  if (!(o.gemm_efficiency >= 0 && o.gemm_efficiency <= 1))
    bad("--gemm-efficiency", "a fraction in (0, 1]", o.gemm_efficiency);
  if (!(o.aspect > 0 && o.aspect <= 1e5)) bad("--aspect", "n_embd / n_layer in (0, 1e5]", o.aspect);
  if (!(o.head_dim >= 1 && o.head_dim <= (1 << 16)))
    bad("--head-dim", "n_embd / n_head in [1, 65536]", o.head_dim);
  if (o.ranks > (1 << 24)) bad("--ranks", "at most 2^24 ranks", o.ranks);
  if (o.nodes > o.ranks) bad("--nodes", "at most --ranks = " + std::to_string(o.ranks), o.nodes);
}

// The family's members have head size --head-dim: the architecture's own rules (a rotary
// embedding needs an even head size) are checked on one of them, naming the flag.
void check_family(const ModelConfig& like, int head_dim) {
  const ModelConfig member = family_shape(4, like, 128.0, head_dim);
  for (const ArchCheck& a : architecture(member.arch).checks)
    if (const std::string why = a.check(member); !why.empty() && a.key == "model.n_head")
      throw std::invalid_argument("--head-dim: " + std::to_string(head_dim) + " for model.arch = \"" +
                                  member.arch + "\": " + why);
}

Report make_report(const RunConfig& cfg, const PlanOptions& o) {
  check_options(o);
  int nodes = o.nodes;
  const double gemm_efficiency = o.gemm_efficiency, params = o.params, aspect = o.aspect;
  const int ranks = o.ranks, head_dim = o.head_dim;
  const bool largest = o.largest_model;
  const std::string& budget_text = o.budget;
  Report r;
  Machine machine = with_link_emulation(load_machine(o.machine), cfg.comm.emulate_latency_us,
                                        cfg.comm.emulate_gbps);
  if (gemm_efficiency > 0) machine.gemm_efficiency = gemm_efficiency;
  if (nodes == 0) {
    const int rpn = std::max(1, machine.ranks_per_node);
    nodes = ranks > rpn && ranks % rpn == 0 ? ranks / rpn : 1;
  }
  Setup base = setup_from_config(cfg, ranks, nodes, kernels::gemm_bf16_computes());
  // fsdp.gemm_dtype = auto follows the machine planned for, not the one planning: a GPU (device
  // memory behind a host link) runs bf16 GEMMs on its tensor cores; a CPU machine as this host.
  if (base.precision == Precision::BF16 && cfg.fsdp.gemm_dtype == "auto" && machine.pcie_bandwidth > 0)
    base.bf16_gemms = true;
  if (params > 0 || largest) check_family(base.model, head_dim);
  if (params > 0) base.model = shape_for_params(params, base.model, aspect, head_dim);
  std::int64_t budget = cfg.memory.device_budget;
  if (!budget_text.empty()) {
    const auto b = parse_byte_size(budget_text);
    // The whole text must be the number: "12XB" is an unknown unit, not 12 bytes.
    char* end = nullptr;
    const double d = b ? 0.0 : std::strtod(budget_text.c_str(), &end);
    if (!b && end != budget_text.c_str() && *end == '\0' && d >= 1 && d <= 0x1p60)
      budget = std::int64_t(d);
    else if (b) budget = *b;
    else {
      throw std::invalid_argument("--budget: expected a byte count like 80GiB (at most 2^60), "
                                  "got \"" + one_line(budget_text, 80) + "\"");
    }
  }
  if (budget <= 0) budget = std::int64_t(machine.device_memory_bytes);
  if (largest && budget <= 0) {
    throw std::invalid_argument("--largest-model needs --budget (machine " + machine.name +
                                " has no device_memory_bytes and the deck no "
                                "memory.device_budget)");
  }
  base.validate();

  std::vector<Strategy> strategies{Strategy::DDP, Strategy::Zero1, Strategy::Zero2, Strategy::Zero3};
  if (base.nodes > 1 || base.strategy == Strategy::Hybrid) strategies.push_back(Strategy::Hybrid);
  std::vector<Column> cols;
  for (Strategy st : strategies) {
    Column c;
    c.strategy = st;
    c.chosen = st == base.strategy;
    Setup s = base;
    s.strategy = st;
    try {
      c.mem = plan_memory(s);
    } catch (const std::exception& e) {
      c.error = e.what();
    }
    if (c.error.empty()) try {
        c.time = plan_time(s, machine);
      } catch (const std::exception& e) {
        c.time_error = e.what();
      }
    cols.push_back(std::move(c));
  }
  std::vector<LargestModel> biggest;
  if (largest)
    for (Strategy st : strategies) {
      Setup s = base;
      s.strategy = st;
      try {
        biggest.push_back(largest_model(s, budget, aspect, head_dim));
      } catch (const std::exception&) {
        biggest.push_back(LargestModel{});
      }
    }
  const std::vector<std::string> assumptions = time_assumptions(base, machine);

  r.base = base;
  r.machine = machine;
  r.budget = budget;
  r.strategies = strategies;
  r.cols = std::move(cols);
  r.biggest = std::move(biggest);
  r.assumptions = assumptions;
  return r;
}

void print_json(const Report& r) {
  const Setup& base = r.base;
  const Machine& machine = r.machine;
  const std::int64_t budget = r.budget;
  const auto& cols = r.cols;
  const auto& biggest = r.biggest;
  const auto& strategies = r.strategies;
  const auto& assumptions = r.assumptions;
  nlohmann::json out;
  out["model"] = shape_json(base.model);
  out["setup"] = {{"ranks", base.ranks},
                  {"nodes", base.nodes},
                  {"strategy", strategy_name(base.strategy)},
                  {"prefetch", base.prefetch},
                  {"reshard_after_forward", base.reshard_after_forward},
                  {"offload", to_string(base.offload)},
                  {"precision", to_string(base.precision)},
                  {"reduce_dtype", base.reduce_bf16 ? "bf16" : "fp32"},
                  {"activation_checkpointing", base.activation_checkpointing()},
                  {"micro_batch", base.micro_batch},
                  {"micro_batches_per_rank", base.micro_batches()},
                  {"global_batch", base.global_batch()}};
  out["machine"] = nlohmann::json::parse(machine_to_json(machine));
  out["budget_bytes"] = budget;  // 0: unknown
  out["assumptions"] = assumptions;
  for (const auto& c : cols) {
    nlohmann::json p{{"strategy", strategy_name(c.strategy)}, {"chosen", c.chosen}};
    if (!c.error.empty()) p["error"] = c.error;
    else {
      p["memory"] = memory_json(c.mem);
      if (budget > 0) p["fits"] = c.mem.device_total() <= budget;
      if (c.time_error.empty()) p["time"] = time_json(c.time);
      else p["time_error"] = c.time_error;
    }
    out["plans"].push_back(p);
  }
  for (std::size_t i = 0; i < biggest.size(); ++i) {
    const auto& b = biggest[i];
    nlohmann::json l{{"strategy", strategy_name(strategies[i])}, {"found", b.found}};
    if (b.found) {
      l["model"] = shape_json(b.shape);
      l["memory"] = memory_json(b.memory);
    }
    if (b.next_device_total > 0) {
      l["next_model"] = shape_json(b.next_shape);
      l["next_device_total"] = b.next_device_total;
    }
    out["largest_model"].push_back(l);
  }
  std::printf("%s\n", out.dump(2).c_str());
}

void print_tables(const Report& r, const PlanOptions& o) {
  const Setup& base = r.base;
  const Machine& machine = r.machine;
  const std::int64_t budget = r.budget;
  const auto& cols = r.cols;
  const auto& biggest = r.biggest;
  const auto& strategies = r.strategies;
  const auto& assumptions = r.assumptions;
  const bool largest = o.largest_model;
  const double aspect = o.aspect;
  const int head_dim = o.head_dim;
  const ModelConfig& m = base.model;
  std::printf("fsdp-plan: %s: %s\n", describe_model(m).c_str(), params_phrase(m).c_str());
  std::printf("  %d rank(s) on %d node(s), machine %s, %s%s, %s units, prefetch %d%s, %d "
              "micro-batch(es) of %d per rank, checkpointing %s, offload %s\n\n",
              base.ranks, base.nodes, machine.name.c_str(), to_string(base.precision),
              base.reduce_bf16 ? " (bf16 reduce)" : "",
              base.choices.sublayer_units ? "sub-layer" : "block", base.prefetch,
              base.reshard_after_forward ? "" : ", no reshard after forward", base.micro_batches(),
              base.micro_batch, base.activation_checkpointing() ? "blocks" : "none",
              to_string(base.offload));
  if (base.choices.lora.on())  // the columns below count the adapters' state alone
    std::printf("  %s\n\n", adapter_summary(base.choices.lora, adapter_counts(model_units(m, base.choices))).c_str());
  std::printf("  %-28s", "per-rank memory, device");
  for (const auto& c : cols)
    std::printf(" %14s", (std::string(c.chosen ? "*" : "") + strategy_name(c.strategy)).c_str());
  std::printf("\n");
  for (int ci = 0; ci < kNumMemCategories; ++ci) {
    const MemCategory cat = MemCategory(ci);
    if (cat == MemCategory::CheckpointStaging) continue;  // host memory only
    row(std::string("  ") + to_string(cat), cols,
        [&](const Column& c) { return format_bytes(c.mem.device(cat)); });
  }
  row("  peak total", cols, [](const Column& c) { return format_bytes(c.mem.device_total()); });
  bool any_host = false;
  for (const auto& c : cols) any_host = any_host || (c.error.empty() && c.mem.host_total() > 0);
  if (any_host) {
    std::printf("  %-28s\n", "per-rank memory, host");
    for (int ci = 0; ci < kNumMemCategories; ++ci) {
      const MemCategory cat = MemCategory(ci);
      row(std::string("  ") + to_string(cat), cols,
          [&](const Column& c) { return format_bytes(c.mem.host(cat)); });
    }
    row("  peak total", cols, [](const Column& c) { return format_bytes(c.mem.host_total()); });
  }
  if (base.offload == Offload::Nvme)
    row("per-rank offload file (disk)", cols,
        [](const Column& c) { return format_bytes(c.mem.disk_bytes); });
  if (budget > 0)
    row("fits " + format_bytes(budget), cols,
        [&](const Column& c) { return std::string(c.mem.device_total() <= budget ? "yes" : "NO"); });
  std::printf("\n  %-28s\n", "predicted step");
  row("  step time", cols, [](const Column& c) { return seconds(c.time.step_s); }, true);
  row("  compute", cols, [](const Column& c) { return seconds(c.time.compute_s); }, true);
  if (base.activation_checkpointing())
    row("  recompute", cols, [](const Column& c) { return seconds(c.time.recompute_s); }, true);
  row("  exposed communication", cols, [](const Column& c) { return seconds(c.time.comm_exposed_s); }, true);
  row("  link busy", cols, [](const Column& c) { return seconds(c.time.comm_busy_s); }, true);
  row("  optimizer", cols, [](const Column& c) { return seconds(c.time.optimizer_s); }, true);
  if (base.offload != Offload::None)
    row("  exposed host<->device", cols, [](const Column& c) { return seconds(c.time.offload_exposed_s); }, true);
  if (base.offload == Offload::Nvme) {
    row("  disk busy (read+write)", cols, [](const Column& c) { return seconds(c.time.disk_busy_s); }, true);
    row("  exposed disk I/O", cols, [](const Column& c) { return seconds(c.time.disk_exposed_s); }, true);
  }
  row("  collectives AG/RS/AR", cols, [](const Column& c) {
    return std::to_string(c.time.all_gathers) + "/" + std::to_string(c.time.reduce_scatters) + "/" +
           std::to_string(c.time.all_reduces);
  }, true);
  row("tokens/s", cols, [](const Column& c) { return fmt("%.4g", c.time.tokens_per_s); }, true);
  row("tokens/s per rank", cols, [](const Column& c) { return fmt("%.4g", c.time.tokens_per_s_per_rank); }, true);
  row("MFU", cols, [](const Column& c) { return fmt("%.1f%%", 100 * c.time.mfu); }, true);
  row("TFLOP/s per rank (+recompute)", cols,
      [](const Column& c) { return fmt("%.4g", c.time.hardware_tflops_per_rank); }, true);
  row("scaling efficiency", cols, [](const Column& c) { return fmt("%.3f", c.time.scaling_efficiency); }, true);
  for (const auto& c : cols) {
    if (!c.error.empty()) std::printf("  n/a %s: %s\n", strategy_name(c.strategy), c.error.c_str());
    else if (!c.time_error.empty())
      std::printf("  n/a %s time: %s\n", strategy_name(c.strategy), c.time_error.c_str());
  }

  if (largest) {
    std::printf("\nlargest model within %s per rank (family: n_embd = %.0f x n_layer in steps of %d, "
                "head %d):\n",
                format_bytes(budget).c_str(), aspect, head_dim, head_dim);
    std::printf("  %-8s %8s %8s %7s %18s %12s   %s\n", "strategy", "n_layer", "n_embd", "n_head",
                "parameters", "device peak", "next (does not fit)");
    for (std::size_t i = 0; i < biggest.size(); ++i) {
      const auto& b = biggest[i];
      if (!b.found) {
        std::printf("  %-8s none fits\n", strategy_name(strategies[i]));
        continue;
      }
      std::string next = b.next_device_total > 0
                             ? std::to_string(b.next_shape.n_layer) + " x " +
                                   std::to_string(b.next_shape.n_embd) + ": " +
                                   format_bytes(b.next_device_total)
                             : "-";
      std::printf("  %-8s %8d %8d %7d %18s %12s   %s\n", strategy_name(strategies[i]),
                  b.shape.n_layer, b.shape.n_embd, b.shape.n_head, with_commas(b.params).c_str(),
                  format_bytes(b.memory.device_total()).c_str(), next.c_str());
    }
  }
  std::printf("\nassumptions:\n");
  for (const auto& a : assumptions) std::printf("  - %s\n", a.c_str());
}

}  // namespace

void print_plan(const RunConfig& cfg, const PlanOptions& options, bool json) {
  const Report r = make_report(cfg, options);
  if (json) print_json(r);
  else print_tables(r, options);
}

}  // namespace fsdp::plan
