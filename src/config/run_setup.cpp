// SPDX-License-Identifier: MIT
#include "config/run_setup.hpp"

#include "model/architecture.hpp"
#include "model/layers/lora_layout.hpp"
#include "model/registry.hpp"

#include <algorithm>
#include <numeric>


namespace fsdp {

Strategy parse_strategy(const std::string& s) {
  if (s == "ddp") return Strategy::DDP;
  if (s == "zero1") return Strategy::Zero1;
  if (s == "zero2") return Strategy::Zero2;
  if (s == "zero3") return Strategy::Zero3;
  if (s == "hybrid") return Strategy::Hybrid;
  throw std::invalid_argument("fsdp.strategy must be ddp, zero1, zero2, zero3 or hybrid, got \"" +
                              s + "\"");
}

Offload parse_offload(const std::string& s) {
  if (s == "none") return Offload::None;
  if (s == "optimizer") return Offload::Optimizer;
  if (s == "params") return Offload::Params;
  if (s == "nvme") return Offload::Nvme;
  throw std::invalid_argument("offload must be none, optimizer, params or nvme, got \"" + s + "\"");
}

Precision parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::FP32;
  if (s == "bf16") return Precision::BF16;
  throw std::invalid_argument("precision must be fp32 or bf16, got \"" + s + "\"");
}

const char* to_string(Offload o) {
  switch (o) {
    case Offload::None: return "none";
    case Offload::Optimizer: return "optimizer";
    case Offload::Params: return "params";
    case Offload::Nvme: return "nvme";
  }
  return "?";
}

const char* to_string(Precision p) { return p == Precision::BF16 ? "bf16" : "fp32"; }

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::DDP: return "ddp";
    case Strategy::Zero1: return "zero1";
    case Strategy::Zero2: return "zero2";
    case Strategy::Zero3: return "zero3";
    case Strategy::Hybrid: return "hybrid";
  }
  return "?";
}

int RunSetup::shard_group() const {
  switch (strategy) {
    case Strategy::DDP: return 1;
    case Strategy::Hybrid: return shard_group_size > 0 ? shard_group_size : ranks_per_node();
    default: return ranks;
  }
}

int RunSetup::micro_batches() const {
  return int(global_batch() / ranks / std::max(1, micro_batch));
}

int RunSetup::part_split(int p) const {
  const int k = std::max(1, placements[std::size_t(p)].shard_split), s = shard_group();
  if (s % k == 0) return k;
  return k % s == 0 ? s : 0;
}

int RunSetup::part_slices(int p) const {
  const int P = choices.expert_slices();
  const bool divides = placements[std::size_t(p)].by_expert && P > 1 &&
                       (strategy == Strategy::Zero3 || strategy == Strategy::Hybrid) && !deterministic;
  return divides ? P : 1;
}

comm::MeshShape RunSetup::mesh() const {
  comm::MeshShape m;
  m.shard = shard_group();
  m.replicate = ranks / m.shard;
  m.expert = choices.expert_slices();
  return m;
}

RunSetup::PartGroups RunSetup::part_groups(int p) const {
  using comm::MeshGroup;
  const int S = shard_group(), k = part_split(p);
  if (part_slices(p) > 1) return {MeshGroup::expert_slice(part_slices(p)), MeshGroup::of(comm::MeshDim::Replicate)};
  if (k > 1) return {MeshGroup::part_shard(S, k), MeshGroup::part_replicate(S, k)};
  return {MeshGroup::of(comm::MeshDim::Shard), MeshGroup::of(comm::MeshDim::Replicate)};
}

std::vector<comm::MeshGroup> RunSetup::mesh_groups() const {
  std::vector<comm::MeshGroup> g;
  for (int p = 0; p < int(placements.size()); ++p)
    if (part_slices(p) > 1 || part_split(p) > 1) {
      const PartGroups pg = part_groups(p);
      g.push_back(pg.shard);
      g.push_back(pg.replicate);
    }
  return g;
}

std::string RunSetup::describe_mesh() const {
  std::string d = mesh().describe();
  for (int p = 0; p < int(placements.size()); ++p)
    if (part_slices(p) > 1)
      d += "; '" + placements[std::size_t(p)].name + "' parts: " + std::to_string(part_slices(p)) +
           " slices (expert parallel), each sharded over " + std::to_string(part_shard_group(p)) +
           " x replicate " + std::to_string(part_replicate_group(p));
    else if (part_shard_group(p) != shard_group() && !part_merged(p))
      d += "; '" + placements[std::size_t(p)].name + "' parts: shard " +
           std::to_string(part_shard_group(p)) + " x replicate " +
           std::to_string(part_replicate_group(p));
  return d;
}

std::int64_t RunSetup::padding_quantum(int p) const {
  // Deterministic mode: whole norm blocks per shard, and a part that splits into one slice per
  // rank for the exchange (fsdp/deterministic.cpp).
  std::int64_t q = part_shard_group(p);
  if (deterministic) q = std::lcm(q * kNormBlock, std::int64_t(std::max(1, ranks)));
  if (precision == Precision::BF16 || reduce_bf16) q *= 2;
  if (reduce_bf16) q *= part_replicate_group(p);
  return q;
}

std::int64_t RunSetup::padded_numel(std::int64_t numel, int p) const {
  const std::int64_t q = padding_quantum(p);
  return (numel + q - 1) / q * q;
}

void RunSetup::validate() const {
  auto fail = [](const std::string& m) { throw std::invalid_argument(m); };
  const ModelConfig& m = model;
  if (m.n_layer < 1 || m.n_head < 1 || m.n_embd < 1 || m.vocab_size < 1 || m.block_size < 1)
    fail("model: n_layer, n_head, n_embd, vocab_size and block_size must be >= 1");
  if (m.head_size == 0 && m.n_embd % m.n_head != 0)
    fail("model.n_embd = " + std::to_string(m.n_embd) + " is not a multiple of model.n_head = " +
         std::to_string(m.n_head));
  if (ranks < 1 || nodes < 1) fail("ranks and nodes must be >= 1");
  if (ranks % nodes != 0)
    fail(std::to_string(ranks) + " ranks do not divide over " + std::to_string(nodes) + " nodes");
  const std::int64_t B = global_batch();
  // Deterministic mode's order is a tree over the step's micro-batches, so it is named in
  // their terms: each rank must hold a whole, equal run of them.
  if (deterministic && micro_batch >= 1 && B % micro_batch == 0 &&
      (B / micro_batch) % ranks != 0)
    fail("train.deterministic = true needs the number of ranks (" + std::to_string(ranks) +
         ") to divide the step's micro-batch count G = train.batch_size / "
         "train.micro_batch_size = " + std::to_string(B / micro_batch) +
         "; use a rank count that divides " + std::to_string(B / micro_batch));
  if (B < ranks)
    fail("train.batch_size = " + std::to_string(B) +
         " is fewer sequences per step than ranks (" + std::to_string(ranks) +
         "): every rank needs at least one");
  if (B % ranks != 0)
    fail("train.batch_size = " + std::to_string(B) + " does not divide evenly over " +
         std::to_string(ranks) + " ranks");
  if (micro_batch < 1) fail("train.micro_batch_size must be >= 1");
  if ((B / ranks) % micro_batch != 0)
    fail("train.micro_batch_size = " + std::to_string(micro_batch) +
         " does not divide the per-rank batch (" + std::to_string(B / ranks) +
         " = train.batch_size / " + std::to_string(ranks) + " ranks)");
  if (offload == Offload::Params && strategy != Strategy::Zero3 && strategy != Strategy::Hybrid)
    fail("fsdp.offload = params needs fsdp.strategy = zero3 or hybrid (" +
         std::string(strategy_name(strategy)) +
         " keeps full parameters on the device); use fsdp.offload = optimizer");
  if (offload == Offload::Nvme && offload_params && strategy != Strategy::Zero3 &&
      strategy != Strategy::Hybrid)
    fail("offload.params = true needs fsdp.strategy = zero3 or hybrid (" +
         std::string(strategy_name(strategy)) +
         " keeps full parameters on the device); set offload.params = false");
  if (offload == Offload::Nvme && offload_path.empty())
    fail("fsdp.offload = nvme needs offload.path, a node-local directory (one file per rank)");
  if (offload != Offload::Nvme && offload_params)
    fail("offload.params = true applies to fsdp.offload = nvme (fsdp.offload = " +
         std::string(to_string(offload)) + "); for host memory use fsdp.offload = params");
  const int s = shard_group();
  if (s < 1 || ranks % s != 0)
    fail("fsdp.shard_group_size: " + std::to_string(s) + " does not divide the number of ranks (" +
         std::to_string(ranks) + ")");
  // zero1 and zero2 keep full parameters and take the rank's shard of them as one range, which
  // a unit of several parts does not have (even where the parts' groups coincide: the parts
  // themselves never depend on N, so that deterministic mode's norm blocks do not).
  if (choices.lora.on() || choices.lora.rank < 0) validate_lora();
  const auto own_groups = std::count_if(placements.begin(), placements.end(),
                                        [](const Placement& pl) { return !pl.by_expert; });
  if (own_groups > 1 && (strategy == Strategy::Zero1 || strategy == Strategy::Zero2))
    fail("fsdp.strategy = " + std::string(strategy_name(strategy)) + ": model.arch = " +
         model.arch + " places its tensors in " + std::to_string(placements.size()) +
         " parts with groups of their own, which zero1 and zero2 (full parameters kept) do not "
         "support; use zero3 or hybrid (or ddp)");
  // Settings for experts on a model without any would do nothing: said, not ignored. Here, not
  // when the deck is read: --init-from's file may be the one that has the experts.
  if (m.n_experts == 0) {
    const MoeChoices d;
    const MoeChoices& x = choices.moe;
    const char* key = x.balance != d.balance                   ? "moe.balance"
                      : x.aux_coef != d.aux_coef                 ? "moe.aux_loss_coef"
                      : x.bias_rate != d.bias_rate               ? "moe.bias_rate"
                      : x.capacity_factor != d.capacity_factor   ? "moe.capacity_factor"
                      : choices.expert_parallel != 1             ? "fsdp.expert_parallel"
                                                                 : nullptr;
    if (key) fail(std::string(key) + ": the model has no experts (model.n_experts = 0): leave it at its default");
  }
  // Expert parallelism: P consecutive ranks of one shard group each hold E / P of a layer's
  // experts (model/decoder/moe_ep.cpp).
  const int P = choices.expert_slices();
  if (P > 1 && m.n_experts % P != 0)
    fail("fsdp.expert_parallel = " + std::to_string(P) + " does not divide model.n_experts = " +
         std::to_string(m.n_experts) + " (each rank of an expert group holds n_experts / P of them); "
         "use a divisor of " + std::to_string(m.n_experts));
  if (P > 1 && s % P != 0)
    fail("fsdp.expert_parallel = " + std::to_string(P) + " does not divide the shard group of " +
         std::to_string(s) + " rank" + (s == 1 ? "" : "s") + " (fsdp.strategy = " +
         strategy_name(strategy) + ", " + std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks") +
         "): an expert group is P ranks of one shard group; use a divisor of " +
         std::to_string(s));
  for (const Placement& pl : placements)
    if (s % std::max(1, pl.shard_split) != 0 && std::max(1, pl.shard_split) % s != 0)
      fail("model.arch = " + model.arch + ": its '" + pl.name + "' tensors are sharded over 1/" +
           std::to_string(pl.shard_split) + " of the shard group, which a shard group of " +
           std::to_string(s) + " ranks cannot split (use a shard group whose size is a multiple or a divisor of " +
           std::to_string(pl.shard_split) + ")");
  if (prefetch < 0) fail("fsdp.prefetch must be >= 0");
  if (bf16_gemms_asked && precision != Precision::BF16)
    fail("fsdp.gemm_dtype = bf16 needs fsdp.mixed_precision = bf16: with fp32 the parameters "
         "are gathered as fp32 and there are no bf16 weights to multiply");
}

ModelChoices model_choices(const RunConfig& cfg) {
  ModelChoices c;
  c.sublayer_units = cfg.fsdp.unit == "sublayer";
  c.checkpoint_blocks = cfg.model_run.activation_checkpointing == "blocks";
  c.attention = cfg.model_run.attention;
  c.expert_parallel = std::max(1, cfg.fsdp.expert_parallel);
  c.moe.balance = cfg.moe.balance;
  c.moe.aux_coef = cfg.moe.aux_loss_coef;
  c.moe.bias_rate = cfg.moe.bias_rate;
  c.moe.capacity_factor = cfg.moe.capacity_factor;
  c.moe.grads_home = cfg.train.deterministic;
  if (cfg.lora.enabled) {
    // rank 0 stays visible as asked, for validate() to refuse by name.
    c.lora.rank = cfg.lora.rank > 0 ? cfg.lora.rank : -1;
    c.lora.alpha = cfg.lora.alpha;
    c.lora.rslora = cfg.lora.rslora;
    c.lora.dropout = cfg.lora.dropout;
    c.lora.targets = lora_targets(cfg.lora.targets);
  }
  return c;
}

// LoRA (lora.enabled): the adapters' own checks (model/layers/lora_layout.cpp: the targets, the
// rank against each projection), and the modes whose adapter path is not built yet, refused by
// name rather than run wrong.
void RunSetup::validate_lora() const {
  auto fail = [](const std::string& m) { throw std::invalid_argument(m); };
  const LoraChoices& l = choices.lora;
  if (l.rank < 0) fail("lora.rank = 0: an adapter needs rank 1 or more");
  if (l.dropout > 0)
    fail("lora.dropout = " + std::to_string(l.dropout) + ": adapters without dropout only (0) for now");
  if (strategy == Strategy::Zero1 || strategy == Strategy::Zero2)
    fail("lora.enabled with fsdp.strategy = " + std::string(strategy_name(strategy)) +
         ": use zero3 or hybrid (the base sharded) or ddp (the base whole on every rank)");
  if (optimizer == OptimizerKind::Muon) fail("lora.enabled trains its adapters with AdamW: leave train.optimizer = adamw");
  if (offload == Offload::Nvme) fail("lora.enabled with fsdp.offload = nvme is not supported yet");
  model_units(model, choices);  // throws the layout's own one-line reasons
}

RunSetup setup_from_config(const RunConfig& cfg, int ranks, int nodes, bool bf16_gemm_hardware) {
  RunSetup s;
  s.model = cfg.model;
  s.choices = model_choices(cfg);
  if (has_architecture(s.model.arch)) s.placements = architecture(s.model.arch).placements;
  if (cfg.lora.enabled) {
    // The base frozen, the adapters a part of their own after it (model/layers/lora_layout.hpp).
    for (Placement& p : s.placements) p.trainable = false;
    s.placements.push_back({"lora", 1, false, true});
  }

  s.train = cfg.train;
  s.muon = cfg.muon;
  // The schema admits adamw and muon only; a setup made by hand (tests) keeps the default.
  s.optimizer = parse_optimizer(cfg.train.optimizer).value_or(OptimizerKind::AdamW);
  s.strategy = parse_strategy(cfg.fsdp.strategy);
  s.ranks = ranks;
  s.nodes = nodes;
  s.shard_group_size = cfg.fsdp.shard_group_size;
  s.prefetch = cfg.fsdp.prefetch;
  s.reshard_after_forward = cfg.fsdp.reshard_after_forward;
  s.prefetch_across_steps = cfg.fsdp.prefetch_across_steps;
  s.offload = parse_offload(cfg.fsdp.offload);
  s.offload_path = cfg.offload.path;
  s.offload_params = cfg.offload.params;
  s.precision = parse_precision(cfg.fsdp.mixed_precision);
  s.reduce_bf16 = cfg.fsdp.reduce_dtype == "bf16";
  // auto: bf16 GEMMs where the hardware computes them (tensor cores; oneDNN's AMX or AVX512-BF16
  // kernels), else fp32 GEMMs on the widened weights: widening per GEMM is slower than fp32.
  const std::string& g = cfg.fsdp.gemm_dtype;
  s.bf16_gemms = s.precision == Precision::BF16 &&
                 (g == "bf16" || (g == "auto" && bf16_gemm_hardware));
  s.bf16_gemms_asked = g == "bf16";
  s.accumulate_sharded = cfg.fsdp.accumulate == "sharded";
  s.micro_batch = cfg.train.micro_batch_size;
  s.batch_size = cfg.train.batch_size;
  s.deterministic = cfg.train.deterministic;
  // Under nvme the state is larger than memory by design: checkpoints stream it from the disk
  // synchronously instead of keeping a host copy for a background writer.
  s.checkpoint_staging =
      cfg.checkpoint.async && cfg.checkpoint.every > 0 && s.offload != Offload::Nvme;
  return s;
}

}  // namespace fsdp
