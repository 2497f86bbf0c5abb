// SPDX-License-Identifier: MIT
// The table of run-deck keys, and the type/range checks and phrases generated from each entry.
// Over 400 lines on purpose: every key is one entry of one table, so that a key is described,
// checked and documented (--help, the resolved deck) in exactly one place.
#include "config/schema.hpp"

#include "model/architecture.hpp"
#include "model/model_keys.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <initializer_list>

namespace fsdp {
namespace {

// What a key accepts beyond its C++ type.
struct Limits {
  std::optional<Bound> lo, hi;
  std::vector<std::string> choices;
  bool bytes = false;
};
Limits any() { return {}; }
Limits at_least(double v) { return {Bound{v, false}, std::nullopt, {}}; }
Limits above(double v) { return {Bound{v, true}, std::nullopt, {}}; }
Limits within(double lo, double hi) { return {Bound{lo, false}, Bound{hi, false}, {}}; }
Limits fraction() { return {Bound{0, false}, Bound{1, true}, {}}; }  // [0, 1)
Limits one_of(std::initializer_list<const char*> c) { return {{}, {}, {c.begin(), c.end()}}; }
Limits byte_count() { return {Bound{0, false}, std::nullopt, {}, true}; }

KeyType kind_of(const int*) { return KeyType::Int; }
KeyType kind_of(const std::int64_t*) { return KeyType::Int64; }
KeyType kind_of(const std::uint64_t*) { return KeyType::Int64; }
KeyType kind_of(const double*) { return KeyType::Float; }
KeyType kind_of(const bool*) { return KeyType::Bool; }
KeyType kind_of(const std::string*) { return KeyType::String; }

// check_value has already put the value in the key's kind and range, so these casts are exact.
void assign(int& f, const ConfigValue& v) { f = static_cast<int>(std::get<std::int64_t>(v)); }
void assign(std::int64_t& f, const ConfigValue& v) { f = std::get<std::int64_t>(v); }
void assign(std::uint64_t& f, const ConfigValue& v) {
  f = static_cast<std::uint64_t>(std::get<std::int64_t>(v));
}
void assign(double& f, const ConfigValue& v) { f = std::get<double>(v); }
void assign(bool& f, const ConfigValue& v) { f = std::get<bool>(v); }
void assign(std::string& f, const ConfigValue& v) { f = std::get<std::string>(v); }

ConfigValue as_value(int f) { return std::int64_t{f}; }
ConfigValue as_value(std::int64_t f) { return f; }
// A seed above INT64_MAX set in code reads back negative, so validation rejects it.
ConfigValue as_value(std::uint64_t f) { return static_cast<std::int64_t>(f); }
ConfigValue as_value(double f) { return f; }
ConfigValue as_value(bool f) { return f; }
ConfigValue as_value(const std::string& f) { return f; }

template <class S, class F>
KeySpec entry(const char* section, const char* key, S RunConfig::*sec, F S::*field, Limits lim,
              const char* meaning) {
  KeyType type = kind_of(static_cast<const F*>(nullptr));
  if (!lim.choices.empty()) type = KeyType::Enum;
  if (lim.bytes) type = KeyType::Bytes;
  return KeySpec{section,
                 key,
                 type,
                 lim.lo,
                 lim.hi,
                 std::move(lim.choices),
                 meaning,
                 [=](RunConfig& c, const ConfigValue& v) { assign((c.*sec).*field, v); },
                 [=](const RunConfig& c) { return as_value((c.*sec).*field); }};
}

// A key of model/model_keys.hpp's table as the deck's schema entry.
KeySpec model_entry(const ModelKey* k) {
  KeySpec e{"model", k->key, KeyType::String, std::nullopt, std::nullopt, k->choices, k->meaning,
            nullptr, nullptr};
  if (k->is_text()) {
    e.type = k->choices.empty() ? KeyType::String : KeyType::Enum;
    e.set = [k](RunConfig& c, const ConfigValue& v) { k->set_text(c.model, std::get<std::string>(v)); };
    e.get = [k](const RunConfig& c) { return ConfigValue(k->text(c.model)); };
    return e;
  }
  if (k->is_bool()) {
    e.type = KeyType::Bool;
    e.set = [k](RunConfig& c, const ConfigValue& v) { k->set_number(c.model, std::get<bool>(v)); };
    e.get = [k](const RunConfig& c) { return ConfigValue(c.model.*std::get<bool ModelConfig::*>(k->field)); };
    return e;
  }
  e.lo = Bound{k->lo, false};
  e.hi = Bound{k->hi, false};
  if (k->is_int()) {
    e.type = KeyType::Int;
    e.set = [k](RunConfig& c, const ConfigValue& v) {
      k->set_number(c.model, double(std::get<std::int64_t>(v)));
    };
    e.get = [k](const RunConfig& c) {
      return ConfigValue(std::int64_t(c.model.*std::get<int ModelConfig::*>(k->field)));
    };
  } else {
    e.type = KeyType::Float;
    e.set = [k](RunConfig& c, const ConfigValue& v) { k->set_number(c.model, std::get<double>(v)); };
    e.get = [k](const RunConfig& c) { return ConfigValue(c.model.*std::get<double ModelConfig::*>(k->field)); };
  }
  return e;
}

std::vector<KeySpec> build_schema_rest();

// The deck's keys in order: the model's shape, the model keys of model/model_keys.hpp, then the rest.
std::vector<KeySpec> build_schema() {
  std::vector<KeySpec> all = build_schema_rest();
  const auto after = std::find_if(all.begin(), all.end(), [](const KeySpec& k) {
                       return k.name() == "model.n_positions";
                     }) + 1;
  std::vector<KeySpec> keys;
  for (const ModelKey& k : model_keys()) keys.push_back(model_entry(&k));
  all.insert(after, keys.begin(), keys.end());
  return all;
}

std::vector<KeySpec> build_schema_rest() {
  using R = RunConfig;
  using M = ModelConfig;
  using MR = ModelRunConfig;
  using T = TrainConfig;
  using D = DataConfig;
  using E = EvalConfig;
  using F = FsdpConfig;
  using C = CommConfig;
  using K = CheckpointConfig;
  return {
      entry("model", "arch", &R::model, &M::arch, any(),
            "the decoder architecture, a name model/registry.hpp registers (its default when unset)"),
      entry("model", "n_layer", &R::model, &M::n_layer, within(1, 10000), "transformer blocks"),
      entry("model", "n_head", &R::model, &M::n_head, within(1, 1 << 16),
            "attention heads per block"),
      entry("model", "n_embd", &R::model, &M::n_embd, within(1, 1 << 20),
            "channels C of the residual stream; a multiple of n_head unless head_dim is set"),
      entry("model", "vocab_size", &R::model, &M::vocab_size, within(2, 1 << 20),
            "token vocabulary size V"),
      entry("model", "block_size", &R::model, &M::block_size, within(1, 1 << 24),
            "context length T, the longest sequence"),
      entry("model", "n_positions", &R::model, &M::n_positions, within(0, 1 << 24),
            "rows of a learned position table; 0 = block_size; >= block_size"),
      // n_kv_head .. rope_original_context: model_entries(), from model/model_keys.hpp.
      entry("model", "activation_checkpointing", &R::model_run, &MR::activation_checkpointing,
            one_of({"none", "blocks"}), "blocks: recompute each block's activations in backward"),
      entry("model", "attention", &R::model_run, &MR::attention, one_of({"auto", "fused", "materialized"}),
            "fused: flash-style kernel keeping B*H*T floats per layer; materialized: keeps the "
            "B*H*T*T probabilities; auto: fused on GPUs and on CPUs from T = 4096"),

      entry("train", "steps", &R::train, &T::steps, at_least(0), "optimizer steps to run"),
      entry("train", "batch_size", &R::train, &T::batch_size, at_least(1),
            "sequences per optimizer step, summed over all ranks"),
      entry("train", "micro_batch_size", &R::train, &T::micro_batch_size, at_least(1),
            "sequences one rank runs through forward+backward at a time"),
      entry("train", "lr", &R::train, &T::lr, above(0), "peak learning rate, reached after warmup"),
      entry("train", "min_lr", &R::train, &T::min_lr, at_least(0),
            "learning rate at the end of the cosine decay; <= lr"),
      entry("train", "warmup_steps", &R::train, &T::warmup_steps, at_least(0),
            "steps of linear warmup to lr"),
      entry("train", "weight_decay", &R::train, &T::weight_decay, at_least(0),
            "AdamW decoupled weight decay"),
      entry("train", "grad_clip", &R::train, &T::grad_clip, at_least(0),
            "clip the global gradient norm to this; 0 disables"),
      entry("train", "beta1", &R::train, &T::beta1, fraction(), "AdamW first-moment decay"),
      entry("train", "beta2", &R::train, &T::beta2, fraction(), "AdamW second-moment decay"),
      entry("train", "eps", &R::train, &T::eps, above(0), "AdamW denominator epsilon"),
      entry("train", "seed", &R::train, &T::seed, at_least(0), "seed for initialisation and data"),
      entry("train", "deterministic", &R::train, &T::deterministic, any(),
            "the same bits on any rank count that divides batch_size / micro_batch_size"),
      entry("train", "on_nonfinite", &R::train, &T::on_nonfinite, one_of({"abort", "skip_step"}),
            "what a NaN/Inf loss or gradient does"),
      entry("train", "allow_nonfinite_weights", &R::train, &T::allow_nonfinite_weights, any(),
            "accept NaN/Inf parameters in --init-from weights or a resumed checkpoint (else exit 5)"),
      entry("train", "log_every", &R::train, &T::log_every, at_least(1),
            "print a log line every this many steps"),
      entry("train", "peak_tflops", &R::train, &T::peak_tflops, at_least(0),
            "per-rank peak for MFU; 0 = the rate of the step's own GEMMs, measured after step 1"),
      entry("train", "optimizer", &R::train, &T::optimizer, one_of({"adamw", "muon"}),
            "muon: Muon for the hidden matrices (attention, MLP), AdamW for embeddings, head, "
            "norms and biases (docs/optimizers.md)"),
      entry("muon", "momentum", &R::muon, &MuonConfig::momentum, fraction(),
            "Muon's momentum: buf = lerp(buf, grad, 1 - momentum)"),
      entry("muon", "nesterov", &R::muon, &MuonConfig::nesterov, any(),
            "orthogonalise lerp(grad, buf, momentum) rather than buf"),
      entry("muon", "ns_steps", &R::muon, &MuonConfig::ns_steps, within(1, 100),
            "Newton-Schulz iterations (coefficients 3.4445, -4.7750, 2.0315)"),
      entry("muon", "ns_dtype", &R::muon, &MuonConfig::ns_dtype, one_of({"fp32", "bf16"}),
            "bf16: Newton-Schulz's GEMMs read bf16 casts and accumulate in fp32 (bf16 kernels "
            "where the hardware has them, else the same products widened)"),
      entry("muon", "scale", &R::muon, &MuonConfig::scale, one_of({"match_adamw", "original"}),
            "match_adamw: update x 0.2 sqrt(max(out, in)) at train.lr; original: x sqrt(max(1, "
            "out/in)) at muon.lr"),
      entry("muon", "lr", &R::muon, &MuonConfig::lr, above(0),
            "muon.scale = original: Muon's peak learning rate (train.lr's schedule, rescaled)"),

      entry("moe", "balance", &R::moe, &MoeConfig::balance, one_of({"auto", "aux_loss", "bias", "none"}),
            "auto: Hugging Face's (the load-balancing loss with model.output_router_logits); "
            "aux_loss: always; bias: a per-expert bias on the choice (DeepSeek-V3), no loss"),
      entry("moe", "aux_loss_coef", &R::moe, &MoeConfig::aux_loss_coef, within(-1, 1000),
            "the load-balancing loss's weight; -1 = model.router_aux_loss_coef"),
      entry("moe", "bias_rate", &R::moe, &MoeConfig::bias_rate, at_least(0),
            "balance = bias: bias += rate x sign(mean load - load) per expert after each step"),
      entry("moe", "capacity_factor", &R::moe, &MoeConfig::capacity_factor, at_least(0),
            "> 0: each expert takes at most ceil(f x tokens x k / experts) choices of a "
            "micro-batch, later ones dropped (counted); 0: dropless"),

      entry("lora", "enabled", &R::lora, &LoraConfig::enabled, any(),
            "train low-rank adapters on a frozen base instead of every weight (docs/lora.md)"),
      entry("lora", "rank", &R::lora, &LoraConfig::rank, within(0, 65536),
            "r: each adapter is B [out, r] A [r, in]; at least 1 and at most min(in, out)"),
      entry("lora", "alpha", &R::lora, &LoraConfig::alpha, above(0),
            "the adapters' output is scaled by alpha / r (alpha / sqrt(r) with lora.rslora)"),
      entry("lora", "dropout", &R::lora, &LoraConfig::dropout, fraction(),
            "dropout on an adapter's input (PEFT's lora_dropout); only 0 is implemented"),
      entry("lora", "targets", &R::lora, &LoraConfig::targets, any(),
            "the projections adapted, by Hugging Face module name (q_proj k_proj v_proj o_proj "
            "gate_proj up_proj down_proj; GPT-2: c_attn c_proj c_fc), space-separated, or "
            "all-linear (every projection of every block, as PEFT's; not the head)"),
      entry("lora", "rslora", &R::lora, &LoraConfig::rslora, any(),
            "rank-stabilised scaling: alpha / sqrt(r)"),

      entry("data", "train", &R::data, &D::train, any(),
            "training tokens: builtin:train or a path"),
      entry("data", "val", &R::data, &D::val, any(), "validation tokens: builtin:val or a path"),
      entry("data", "format", &R::data, &D::format, one_of({"llmc", "uint16", "uint32", "text"}),
            "llmc: llm.c token file (uint16, or uint32 for vocabularies past 65536); uint16, uint32: raw "
            "tokens; text: bytes as tokens"),
      entry("data", "packing", &R::data, &D::packing, one_of({"windows", "documents"}),
            "windows: every window is one sequence; documents: positions restart and attention "
            "stops at each document start (after data.eos_id), the target after an EOS unscored"),
      entry("data", "eos_id", &R::data, &D::eos_id, at_least(-1),
            "the id that ends each document (data.packing = documents); -1: the one fsdp-data "
            "recorded in the mask file, else --init-from's config.json eos_token_id"),

      entry("eval", "every", &R::eval, &E::every, at_least(0),
            "validation loss every this many steps; 0 = only at the end"),
      entry("eval", "sequences", &R::eval, &E::sequences, at_least(0),
            "validation sequences per evaluation; 0 skips evaluation"),
      entry("eval", "sample_tokens", &R::eval, &E::sample_tokens, at_least(0),
            "at each evaluation, print this many tokens sampled after the first held-out "
            "sequence's opening (0 = none)"),

      entry("fsdp", "strategy", &R::fsdp, &F::strategy,
            one_of({"ddp", "zero1", "zero2", "zero3", "hybrid"}),
            "what is sharded: nothing, +optimizer, +grads, +params; hybrid = zero3 per group"),
      entry("fsdp", "prefetch", &R::fsdp, &F::prefetch, within(0, 64),
            "units whose all-gather is issued ahead of their compute"),
      entry("fsdp", "unit", &R::fsdp, &F::unit, one_of({"block", "sublayer"}),
            "sharding unit: a whole transformer block, or each of its two sub-layers "
            "(ln_1 + attention, ln_2 + MLP), which reduce-scatters the MLP's gradients while "
            "the attention's are still being computed"),
      entry("fsdp", "reshard_after_forward", &R::fsdp, &F::reshard_after_forward, any(),
            "free gathered parameters after forward and regather in backward"),
      entry("fsdp", "prefetch_across_steps", &R::fsdp, &F::prefetch_across_steps, any(),
            "zero3/hybrid with prefetch > 0: the optimizer issues the next step's first "
            "all-gathers as soon as it has updated those units"),
      entry("fsdp", "expert_parallel", &R::fsdp, &F::expert_parallel, within(1, 4096),
            "mixtures of experts: P consecutive ranks of a shard group share each sparse layer's "
            "experts, E/P each, and exchange tokens with an all-to-all (1 = every rank computes "
            "every expert for its own tokens)"),
      entry("fsdp", "shard_group_size", &R::fsdp, &F::shard_group_size, at_least(0),
            "hybrid: ranks per shard group; 0 = ranks per node"),
      entry("fsdp", "offload", &R::fsdp, &F::offload,
            one_of({"none", "optimizer", "params", "nvme"}),
            "keep optimizer state, or also parameters, in host memory; nvme: the AdamW moments "
            "(and with offload.params the parameter shards) in files under offload.path"),
      entry("fsdp", "mixed_precision", &R::fsdp, &F::mixed_precision, one_of({"fp32", "bf16"}),
            "dtype of gathered parameters and compute"),
      entry("fsdp", "reduce_dtype", &R::fsdp, &F::reduce_dtype, one_of({"fp32", "bf16"}),
            "dtype of the gradient reduce-scatter"),
      entry("fsdp", "gemm_dtype", &R::fsdp, &F::gemm_dtype, one_of({"auto", "fp32", "bf16"}),
            "with mixed_precision = bf16: the GEMMs' inputs; bf16 = bf16 weights and activations "
            "with fp32 accumulation (tensor cores), fp32 = weights widened to fp32; auto = bf16 "
            "on GPUs, fp32 on CPUs"),
      entry("fsdp", "accumulate", &R::fsdp, &F::accumulate, one_of({"unsharded", "sharded"}),
            "micro-batch grads summed in a full buffer, or reduce-scattered each micro-batch"),

      entry("comm", "backend", &R::comm, &C::backend, one_of({"auto", "mpi", "nccl"}),
            "collective library; auto = nccl when built for GPUs, else mpi"),
      entry("comm", "emulate_latency_us", &R::comm, &C::emulate_latency_us, at_least(0),
            "latency added to each collective, in microseconds; 0 = off"),
      entry("comm", "emulate_gbps", &R::comm, &C::emulate_gbps, at_least(0),
            "emulated bus bandwidth in GB/s (1e9 bytes/s); 0 = off"),
      entry("comm", "progress_thread", &R::comm, &C::progress_thread, any(),
            "run non-blocking one-node collectives on a thread, off the compute's path"),
      entry("comm", "timeout_s", &R::comm, &C::timeout_s, at_least(0),
            "watchdog: end the job when a collective or checkpoint I/O phase takes longer (s); 0 = off"),

      entry("offload", "path", &R::offload, &OffloadConfig::path, any(),
            "fsdp.offload = nvme: a node-local directory (NVMe) for one file per rank, removed "
            "at exit"),
      entry("offload", "params", &R::offload, &OffloadConfig::params, any(),
            "fsdp.offload = nvme: the fp32 parameter shards on disk too (zero3, hybrid)"),
      entry("memory", "device_budget", &R::memory, &MemoryConfig::device_budget, byte_count(),
            "device bytes per rank (or \"512MiB\", \"2GB\"); 0 = unlimited"),

      entry("checkpoint", "dir", &R::checkpoint, &K::dir, any(), "checkpoint directory"),
      entry("checkpoint", "every", &R::checkpoint, &K::every, at_least(0),
            "save every this many steps; 0 = off"),
      entry("checkpoint", "keep", &R::checkpoint, &K::keep, at_least(1),
            "newest checkpoints kept on disk"),
      entry("checkpoint", "async", &R::checkpoint, &K::async, any(),
            "periodic saves copy the shards and write the file in the background (the same "
            "file); false: training waits for each write"),

      entry("debug", "check_collectives", &R::debug, &DebugConfig::check_collectives, any(),
            "cross-check collective sizes across ranks (slow)"),
  };
}

std::string number(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back exactly
  return std::string(buf, res.ptr);
}

std::string range_phrase(const KeySpec& k) {
  if (k.lo && k.hi)
    return "in " + std::string(k.lo->open ? "(" : "[") + number(k.lo->value) + ", " +
           number(k.hi->value) + (k.hi->open ? ")" : "]");
  if (k.lo) return std::string(k.lo->open ? "> " : ">= ") + number(k.lo->value);
  if (k.hi) return std::string(k.hi->open ? "< " : "<= ") + number(k.hi->value);
  return "";
}

bool in_range(const KeySpec& k, double v) {
  // Written so NaN fails every bound.
  if (k.lo && !(k.lo->open ? v > k.lo->value : v >= k.lo->value)) return false;
  if (k.hi && !(k.hi->open ? v < k.hi->value : v <= k.hi->value)) return false;
  return true;
}

std::string kind_name(const ConfigValue& v) {
  static const char* names[] = {"boolean", "integer", "float", "string"};
  return names[v.index()];
}

}  // namespace

const std::vector<KeySpec>& config_schema() {
  static const std::vector<KeySpec> schema = build_schema();
  return schema;
}

namespace {
// Each architecture's own rules (model/architecture.hpp, ArchCheck), for its decks only.
void add_architecture_checks(std::vector<CrossCheck>& out) {
  for (const std::string& name : architecture_names())
    for (const ArchCheck& a : architecture(name).checks)
      out.push_back({a.key, a.other, [name, check = a.check](const RunConfig& c) -> std::string {
                       return c.model.arch == name ? check(c.model) : "";
                     }});
}
}  // namespace

const std::vector<CrossCheck>& config_cross_checks() {
  static const std::vector<CrossCheck> checks = [] {
    std::vector<CrossCheck> v = {
      {"model.arch", "model.arch",
       [](const RunConfig& c) -> std::string {
         if (has_architecture(c.model.arch)) return "";
         return "expected one of " + architecture_list() + ", got '" + c.model.arch + "'";
       }},
      {"moe.aux_loss_coef", "moe.aux_loss_coef",
       [](const RunConfig& c) -> std::string {
         // -1 is the sentinel; any other negative weight would reward imbalance (issue 63).
         const double v = c.moe.aux_loss_coef;
         if (v >= 0 || v == -1) return "";
         return "expected -1 (model.router_aux_loss_coef) or a weight from 0 to 1000, got " + number(v);
       }},
      {"model.n_embd", "model.n_head",
       [](const RunConfig& c) -> std::string {
         if (c.model.head_size > 0 || c.model.n_embd % c.model.n_head == 0) return "";
         return "expected a multiple of model.n_head = " + std::to_string(c.model.n_head) +
                ", got " + std::to_string(c.model.n_embd);
       }},
      {"model.n_layer", "model.n_embd",
       [](const RunConfig& c) -> std::string {
         // The largest models trained have ~2^40 parameters; 2^50 keeps every byte count of
         // the planner, the tracker and the checkpoint reader far from overflow.
         if (!has_architecture(c.model.arch)) return "";  // model.arch says so
         const double p = double(num_params(c.model));  // int64: the key ranges keep it exact
         if (p <= 0x1p50) return "";
         return "the model would have " + number(p) + " parameters, more than 2^50";
       }},
      {"model.block_size", "model.n_positions",
       [](const RunConfig& c) -> std::string {
         if (c.model.n_positions == 0 || c.model.block_size <= c.model.n_positions) return "";
         return "expected at most model.n_positions = " + std::to_string(c.model.n_positions) +
                " (the position table has that many rows), got " +
                std::to_string(c.model.block_size);
       }},
      {"train.min_lr", "train.lr",
       [](const RunConfig& c) -> std::string {
         if (c.train.min_lr <= c.train.lr) return "";
         return "expected a float <= train.lr = " + number(c.train.lr) + ", got " +
                number(c.train.min_lr);
       }},
    };
    // moe.* and fsdp.expert_parallel on a model without experts: RunSetup::validate, once the
    // model's shape is known (--init-from may bring the experts).
    add_architecture_checks(v);
    return v;
  }();
  return checks;
}

std::vector<std::string> config_sections() {
  std::vector<std::string> out;
  for (const KeySpec& k : config_schema())
    if (std::find(out.begin(), out.end(), k.section) == out.end()) out.push_back(k.section);
  return out;
}

const KeySpec* find_key(const std::string& section, const std::string& key) {
  for (const KeySpec& k : config_schema())
    if (k.section == section && k.key == key) return &k;
  return nullptr;
}

std::string describe_accepted(const KeySpec& k, bool short_form) {
  std::string range = range_phrase(k);
  std::string with_range = range.empty() ? "" : " " + range;
  switch (k.type) {
    case KeyType::Int:
    case KeyType::Int64:
      return (short_form ? "integer" : "an integer") + with_range;
    case KeyType::Float:
      return (short_form ? "float" : "a float") + with_range;
    case KeyType::Bool:
      return short_form ? "bool" : "a boolean (true or false)";
    case KeyType::String:
      return short_form ? "string" : "a string";
    case KeyType::Bytes:
      return short_form ? "bytes" + with_range + " or \"512MiB\""
                        : "a byte count" + with_range +
                              " (an integer, or a string like \"512MiB\", \"2GB\")";
    case KeyType::Enum: {
      std::string s = short_form ? "" : "one of ";
      for (size_t i = 0; i < k.choices.size(); ++i)
        s += (i ? (short_form ? "|" : ", ") : "") +
             (short_form ? k.choices[i] : "\"" + k.choices[i] + "\"");
      return s;
    }
  }
  return "";
}

std::string toml_literal(const ConfigValue& v) {
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) {
    if (std::isnan(*d)) return "nan";
    if (std::isinf(*d)) return *d > 0 ? "inf" : "-inf";
    std::string s = number(*d);
    // TOML needs a '.' or an exponent to read this back as a float, not an integer.
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
  }
  std::string out = "\"";
  for (unsigned char ch : std::get<std::string>(v)) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20 || ch == 0x7f) {  // TOML basic strings forbid raw control characters
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

std::optional<std::int64_t> parse_byte_size(const std::string& text) {
  static const std::pair<const char*, double> units[] = {
      {"", 1},      {"b", 1},        {"kb", 1e3},      {"mb", 1e6},      {"gb", 1e9},
      {"tb", 1e12}, {"kib", 1024.0}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1099511627776.0}};
  size_t b = text.find_first_not_of(" \t"), e = text.find_last_not_of(" \t");
  if (b == std::string::npos || !std::isdigit(static_cast<unsigned char>(text[b])))
    return std::nullopt;
  double v = 0;
  auto res = std::from_chars(text.data() + b, text.data() + e + 1, v, std::chars_format::fixed);
  if (res.ec != std::errc()) return std::nullopt;
  const char* u = res.ptr;
  const char* end = text.data() + e + 1;  // the skip must stop there: "1.\t\t" ends in blanks
  while (u < end && (*u == ' ' || *u == '\t')) ++u;
  std::string unit(u, end);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& [name, scale] : units) {
    if (unit != name) continue;
    double bytes = v * scale;
    if (bytes != std::floor(bytes) || bytes >= 9223372036854775808.0) return std::nullopt;
    return static_cast<std::int64_t>(bytes);
  }
  return std::nullopt;
}

// A TOML deck is UTF-8, and so is the resolved deck written back out; text from --set is not
// checked by the TOML parser, so it is checked here.
static bool valid_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int more =  // continuation bytes that follow this lead byte
        c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xe ? 2 : (c >> 3) == 0x1e ? 3 : -1;
    if (more < 0 || s.size() - i <= std::size_t(more)) return false;  // truncated sequence
    std::uint32_t cp = more == 0 ? c : c & (0x3f >> more);
    for (int j = 1; j <= more; ++j) {
      const auto cc = static_cast<unsigned char>(s[i + std::size_t(j)]);
      if ((cc >> 6) != 0x2) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    static const std::uint32_t smallest[] = {0, 0x80, 0x800, 0x10000};
    if (cp < smallest[more] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += std::size_t(more) + 1;
  }
  return true;
}

std::string check_value(const KeySpec& k, const ConfigValue& given, ConfigValue& out) {
  const std::string expected = "expected " + describe_accepted(k);
  const std::string got_value = ", got " + toml_literal(given);
  const std::string got_kind = ", got " + kind_name(given) + " " + toml_literal(given);
  switch (k.type) {
    case KeyType::Int:
    case KeyType::Int64: {
      auto* i = std::get_if<std::int64_t>(&given);
      if (!i) return expected + got_kind;
      if (!in_range(k, static_cast<double>(*i))) return expected + got_value;
      if (k.type == KeyType::Int && (*i < INT_MIN || *i > INT_MAX))
        return expected + " that fits in 32 bits" + got_value;
      out = *i;
      return "";
    }
    case KeyType::Float: {
      double d;
      if (auto* i = std::get_if<std::int64_t>(&given))
        d = static_cast<double>(*i);
      else if (auto* f = std::get_if<double>(&given))
        d = *f;
      else
        return expected + got_kind;
      if (!std::isfinite(d) || !in_range(k, d)) return expected + got_value;
      out = d;
      return "";
    }
    case KeyType::Bool:
      if (!std::holds_alternative<bool>(given)) return expected + got_kind;
      out = given;
      return "";
    case KeyType::String:
      if (!std::holds_alternative<std::string>(given)) return expected + got_kind;
      if (!valid_utf8(std::get<std::string>(given))) return expected + " in UTF-8" + got_value;
      out = given;
      return "";
    case KeyType::Enum: {
      auto* s = std::get_if<std::string>(&given);
      if (!s) return expected + got_kind;
      if (std::find(k.choices.begin(), k.choices.end(), *s) == k.choices.end())
        return expected + got_value;
      out = given;
      return "";
    }
    case KeyType::Bytes: {
      std::optional<std::int64_t> bytes;
      if (auto* i = std::get_if<std::int64_t>(&given))
        bytes = *i;
      else if (auto* f = std::get_if<double>(&given)) {
        // Only whole numbers below 2^63 convert exactly; others stay unset and are rejected.
        if (*f == std::floor(*f) && std::fabs(*f) < 9223372036854775808.0)
          bytes = static_cast<std::int64_t>(*f);
      } else if (auto* s = std::get_if<std::string>(&given))
        bytes = parse_byte_size(*s);
      else
        return expected + got_kind;
      if (!bytes || !in_range(k, static_cast<double>(*bytes))) return expected + got_kind;
      out = *bytes;
      return "";
    }
  }
  return expected;
}

}  // namespace fsdp
