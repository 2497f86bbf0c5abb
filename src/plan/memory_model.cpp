// SPDX-License-Identifier: MIT
#include "plan/memory_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "plan/step_replay.hpp"

namespace fsdp::plan {

ModelShape shape_of(const ModelConfig& m) {
  ModelShape s;
  s.n_layer = m.n_layer;
  s.n_head = m.n_head;
  s.n_embd = m.n_embd;
  s.vocab_size = m.vocab_size;
  s.block_size = m.block_size;
  s.n_positions = m.n_positions;
  return s;
}

std::vector<std::int64_t> unit_numels(const ModelShape& s) {
  const std::int64_t C = s.n_embd, V = s.vocab_size, T = s.positions();
  std::vector<std::int64_t> u;
  u.push_back(V * C + T * C);                    // wte, wpe
  for (int l = 0; l < s.n_layer; ++l) {
    if (s.sublayer_units) {
      u.push_back(4 * C * C + 6 * C);            // ln_1, c_attn, c_proj
      u.push_back(8 * C * C + 7 * C);            // ln_2, c_fc, c_proj
    } else {
      u.push_back(12 * C * C + 13 * C);          // ln_1, c_attn, c_proj, ln_2, c_fc, c_proj
    }
  }
  u.push_back(2 * C);                            // ln_f
  return u;
}

std::int64_t num_params(const ModelShape& s) {
  std::int64_t n = 0;
  for (std::int64_t x : unit_numels(s)) n += x;
  return n;
}

ModelShape family_shape(int n_layer, const ModelShape& like, double aspect, int head_dim) {
  ModelShape s = like;
  s.n_layer = std::max(1, n_layer);
  const long k = std::max(1L, std::lround(aspect * s.n_layer / head_dim));
  s.n_embd = int(k * head_dim);
  s.n_head = int(k);
  return s;
}

ModelShape shape_for_params(double params, const ModelShape& like, double aspect, int head_dim) {
  ModelShape best = family_shape(1, like, aspect, head_dim);
  double best_err = std::fabs(double(num_params(best)) - params);
  for (int L = 2; L <= 4096; ++L) {
    const ModelShape s = family_shape(L, like, aspect, head_dim);
    const double n = double(num_params(s));
    const double err = std::fabs(n - params);
    if (err < best_err) {
      best = s;
      best_err = err;
    }
    if (n > 2.0 * params) break;
  }
  return best;
}

Offload parse_offload(const std::string& s) {
  if (s == "none") return Offload::None;
  if (s == "optimizer") return Offload::Optimizer;
  if (s == "params") return Offload::Params;
  throw std::invalid_argument("offload must be none, optimizer or params, got \"" + s + "\"");
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

std::int64_t padded_numel(std::int64_t n, int shard_group, bool deterministic) {
  const std::int64_t q = std::int64_t(shard_group) * (deterministic ? kNormBlock : 1);
  return (n + q - 1) / q * q;
}

int Setup::shard_group() const {
  switch (strategy) {
    case Strategy::DDP: return 1;
    case Strategy::Hybrid: return shard_group_size > 0 ? shard_group_size : ranks_per_node();
    default: return ranks;
  }
}

int Setup::micro_batches() const {
  return int(global_batch() / ranks / std::max(1, micro_batch));
}

void Setup::validate() const {
  auto fail = [](const std::string& m) { throw std::invalid_argument(m); };
  const ModelShape& m = model;
  if (m.n_layer < 1 || m.n_head < 1 || m.n_embd < 1 || m.vocab_size < 1 || m.block_size < 1)
    fail("model: n_layer, n_head, n_embd, vocab_size and block_size must be >= 1");
  if (m.n_embd % m.n_head != 0)
    fail("model.n_embd = " + std::to_string(m.n_embd) + " is not a multiple of model.n_head = " +
         std::to_string(m.n_head));
  if (ranks < 1 || nodes < 1) fail("ranks and nodes must be >= 1");
  if (ranks % nodes != 0)
    fail(std::to_string(ranks) + " ranks do not divide over " + std::to_string(nodes) + " nodes");
  const int s = shard_group();
  if (s < 1 || ranks % s != 0)
    fail("fsdp.shard_group_size = " + std::to_string(s) + " does not divide the number of ranks (" +
         std::to_string(ranks) + ")");
  if (prefetch < 0) fail("fsdp.prefetch must be >= 0");
  if (micro_batch < 1) fail("train.micro_batch_size must be >= 1");
  const std::int64_t B = global_batch();
  if (B < ranks || B % ranks != 0)
    fail("train.batch_size = " + std::to_string(B) + " does not divide evenly over " +
         std::to_string(ranks) + " ranks");
  if ((B / ranks) % micro_batch != 0)
    fail("train.micro_batch_size = " + std::to_string(micro_batch) +
         " does not divide the per-rank batch (" + std::to_string(B / ranks) + ")");
  if (deterministic) {
    if (strategy == Strategy::Hybrid)
      fail("train.deterministic = true supports ddp, zero1, zero2 and zero3, not hybrid");
    if ((ranks & (ranks - 1)) != 0)
      fail("train.deterministic = true needs a power-of-two number of ranks (got " +
           std::to_string(ranks) + ")");
    if (precision != Precision::FP32 || reduce_bf16)
      fail("train.deterministic = true needs fsdp.mixed_precision = fp32 and fsdp.reduce_dtype = fp32");
  }
  if (offload == Offload::Params && !shards_params(strategy))
    fail("fsdp.offload = params needs sharded parameters (strategy zero3 or hybrid); " +
         std::string(strategy_name(strategy)) + " keeps full parameters on the device");
}

Setup setup_from_config(const RunConfig& cfg, int ranks, int nodes) {
  Setup s;
  s.model = shape_of(cfg.model);
  s.model.sublayer_units = cfg.fsdp.unit == "sublayer";
  s.strategy = parse_strategy(cfg.fsdp.strategy);
  s.ranks = ranks;
  s.nodes = nodes;
  s.shard_group_size = cfg.fsdp.shard_group_size;
  s.prefetch = cfg.fsdp.prefetch;
  s.reshard_after_forward = cfg.fsdp.reshard_after_forward;
  s.prefetch_across_steps = cfg.fsdp.prefetch_across_steps;
  s.offload = parse_offload(cfg.fsdp.offload);
  s.precision = parse_precision(cfg.fsdp.mixed_precision);
  s.reduce_bf16 = cfg.fsdp.reduce_dtype == "bf16";
  s.activation_checkpointing = cfg.model.activation_checkpointing == "blocks";
  s.accumulate_sharded = cfg.fsdp.accumulate == "sharded";
  s.micro_batch = cfg.train.micro_batch_size;
  s.batch_size = cfg.train.batch_size;
  s.deterministic = cfg.train.deterministic;
  return s;
}

ElementBytes element_bytes(const Setup& s) {
  ElementBytes b;
  if (s.precision == Precision::BF16) {
    b.param = 2;
    b.master = 4;
    b.grad = s.reduce_bf16 ? 2 : 4;
    b.activation = 2;
  }
  return b;
}

std::int64_t activation_elements(const ModelShape& s, int micro_batch, bool checkpointing) {
  const std::int64_t B = micro_batch, T = s.block_size, C = s.n_embd, H = s.n_head,
                     V = s.vocab_size, L = s.n_layer;
  const std::int64_t BT = B * T, BTC = BT * C;
  // BlockActivations: ln1, atty, res2, ln2 (BTC each), qkv 3BTC, fch and fch_gelu 4BTC each;
  // ln1/ln2 mean and rstd (BT each); the attention matrix B*H*T*T.
  const std::int64_t per_block = 15 * BTC + 4 * BT + B * H * T * T;
  const std::int64_t blocks = checkpointing ? 1 : L;
  // lnf BTC, lnf mean/rstd 2BT, logits BTV, losses BT; backward scratch tmp, dres_a, dres_b,
  // d_ln, d_tmp, d_atty (BTC each), d_qkv 3BTC, d_fch and d_fch_gelu 4BTC each; att_work T*T.
  const std::int64_t once = BTC + 3 * BT + BT * V + 6 * BTC + 3 * BTC + 8 * BTC + T * T;
  // Checkpointed sub-layer units keep each block's res2 too: the MLP's recompute starts there.
  const std::int64_t mid = checkpointing && s.sublayer_units ? L * BTC : 0;
  return (L + 1) * BTC + blocks * per_block + once + mid;
}

MemoryPlan plan_memory(const Setup& s) {
  MemoryPlan mp;
  mp.shard_group = s.shard_group();
  for (std::int64_t n : unit_numels(s.model)) {
    const std::int64_t padded = padded_numel(n, mp.shard_group, s.deterministic);
    mp.params += n;
    mp.padded_params += padded;
    mp.largest_unit = std::max(mp.largest_unit, padded);
  }
  // MemoryTracker::on_alloc / on_free: per (space, category) and per-space totals.
  std::array<std::array<double, kNumMemCategories>, 2> cur{}, peak{};
  std::array<double, 2> total{}, total_peak{};
  // Micro-batches after the second repeat the second's allocations, except under deterministic
  // mode, whose summation tree deepens with their number.
  for (const StepEvent& e : replay_step(s, s.deterministic ? 0 : 3)) {
    if (e.kind != StepEvent::Alloc && e.kind != StepEvent::Free) continue;
    const int sp = int(e.space), c = int(e.cat);
    const double d = e.kind == StepEvent::Alloc ? e.bytes : -e.bytes;
    cur[sp][c] += d;
    total[sp] += d;
    peak[sp][c] = std::max(peak[sp][c], cur[sp][c]);
    total_peak[sp] = std::max(total_peak[sp], total[sp]);
  }
  for (int sp = 0; sp < 2; ++sp) {
    for (int c = 0; c < kNumMemCategories; ++c) mp.peak[sp][c] = std::int64_t(std::llround(peak[sp][c]));
    mp.peak_total[sp] = std::int64_t(std::llround(total_peak[sp]));
  }
  return mp;
}

double zero_model_state_bytes(double psi, int n, Strategy s, const ModelStateBytes& b) {
  const double N = n;
  switch (s) {
    case Strategy::DDP: return (b.param + b.grad + b.optimizer_k) * psi;
    case Strategy::Zero1: return (b.param + b.grad) * psi + b.optimizer_k * psi / N;
    case Strategy::Zero2: return b.param * psi + (b.grad + b.optimizer_k) * psi / N;
    case Strategy::Zero3:
    case Strategy::Hybrid: return (b.param + b.grad + b.optimizer_k) * psi / N;
  }
  return 0.0;
}

LargestModel largest_model(const Setup& base, std::int64_t device_budget, double aspect,
                           int head_dim, int max_layers) {
  auto at = [&](int L) {
    Setup s = base;
    s.model = family_shape(L, base.model, aspect, head_dim);
    return std::make_pair(s.model, plan_memory(s));
  };
  auto fits = [&](const MemoryPlan& m) { return m.device_total() <= device_budget; };
  LargestModel r;
  auto [s1, m1] = at(1);
  if (!fits(m1)) {
    r.next_shape = s1;
    r.next_device_total = m1.device_total();
    return r;
  }
  // The device peak grows with depth (and width along the family): double, then bisect.
  int lo = 1, hi = 2;
  while (hi <= max_layers && fits(at(hi).second)) {
    lo = hi;
    hi *= 2;
  }
  hi = std::min(hi, max_layers + 1);
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (fits(at(mid).second)) lo = mid;
    else hi = mid;
  }
  auto [shape, mem] = at(lo);
  r.found = true;
  r.shape = shape;
  r.params = num_params(shape);
  r.memory = mem;
  if (hi <= max_layers) {
    auto [ns, nm] = at(hi);
    r.next_shape = ns;
    r.next_device_total = nm.device_total();
  }
  return r;
}

}  // namespace fsdp::plan
