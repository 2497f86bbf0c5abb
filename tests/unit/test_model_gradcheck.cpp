// SPDX-License-Identifier: MIT
// The whole loss of every architecture on the decoder skeleton against finite differences,
// through the unit-at-a-time interface the sharding engine drives, with and without activation
// checkpointing and with whole or sub-layer units.
#include <catch2/catch.hpp>

#include "gradcheck_util.hpp"
#include "model/architecture.hpp"
#include "model/layers/lora_layout.hpp"

using namespace fsdp;

namespace {

// The tiny model of each architecture on the skeleton: GPT-2 (LayerNorm, learned positions,
// biases, GELU, tied), Llama (RMSNorm, rotary, grouped-query heads, SwiGLU, untied) and Qwen3
// (Llama's with q/k norms and a head size that is not n_embd / n_head), Qwen3-MoE and Mixtral.
ModelConfig tiny(const std::string& arch) {
  ModelConfig cfg;
  cfg.arch = arch;
  cfg.n_layer = 2;
  cfg.n_head = 2;
  cfg.n_embd = 8;
  cfg.vocab_size = 11;
  cfg.block_size = 6;
  if (arch != "gpt2") {
    cfg.n_kv_head = 1;
    cfg.ffn_hidden = 12;
    cfg.tie_embeddings = false;
    cfg.rope_theta = 100.0;
  }
  if (arch == "qwen3" || arch == "qwen3_moe") cfg.head_size = 6;
  // Mixtures of experts: 4 experts, 2 per token; Qwen3-MoE with layer 0 dense and the weights
  // not renormalised, Mixtral renormalised in both layers; the balance loss at a weight that
  // makes its gradient visible (the objective is the loss plus it).
  if (arch == "qwen3_moe" || arch == "mixtral") {
    cfg.n_experts = 4;
    cfg.experts_per_token = 2;
    cfg.output_router_logits = true;
    cfg.router_aux_loss_coef = 0.1;
  }
  if (arch == "qwen3_moe") {
    cfg.moe_ffn_hidden = 6;
    cfg.mlp_only_layers = "0";
    cfg.norm_topk_prob = false;
  }
  return cfg;
}

struct TinyModel {
  ModelConfig cfg;
  MemoryTracker tracker;
  std::unique_ptr<Decoder> model;
  int head = 0;
  std::vector<FlatView> params, grads;
  std::vector<std::int32_t> inputs, targets;

  std::vector<std::int64_t> origin;  // each unit's gradient buffer starts there (a LoRA run's base has none)

  TinyModel(const std::string& arch, const std::string& ckpt, bool sublayer = false,
            const LoraChoices& lora = {})
      : cfg(tiny(arch)) {
    const int B = 2;
    const Architecture& a = architecture_of(cfg);
    DecoderOptions o;
    o.micro_batch = B;
    o.choices.checkpoint_blocks = ckpt == "blocks";
    o.choices.sublayer_units = sublayer;
    o.choices.lora = lora;
    model = a.build(cfg, o, tracker);
    head = a.head_unit(cfg, o.choices);
    std::uint32_t seed = 7;
    for (const auto& u : model->units()) {
      // Larger-than-GPT-2 scale so every path carries a visible gradient.
      FlatView p = fsdp::test::random_view(u.name, u.numel, seed++, 0.3f);
      // Routers 10x wider: the top-k choices then sit far enough apart that no finite-difference
      // step flips one (a flip is a jump in the loss, not a gradient).
      for (const auto& t : u.tensors)
        if (ends_with(t.name, "moe.gate.weight") || ends_with(t.name, "mlp.gate.weight"))
          for (std::int64_t i = 0; i < t.numel; ++i) p(t.offset + i) *= 10.f;
      params.push_back(p);
      grads.emplace_back(u.name + "::grad", u.numel);
      origin.push_back(grad_origin(u));
    }
    for (int i = 0; i < B * cfg.block_size; ++i) {
      inputs.push_back((i * 7 + 3) % cfg.vocab_size);
      targets.push_back((i * 5 + 1) % cfg.vocab_size);
    }
    model->set_batch(inputs.data(), targets.data());
  }
  ConstVec p(int u) const { return ConstVec(params[u].data(), params[u].extent(0)); }
  // The engine hands the model the unit's gradients from its first trained tensor on.
  Vec g(int u) const {
    const std::int64_t o = origin[std::size_t(u)];
    return Vec(grads[u].data() + o, grads[u].extent(0) - o);
  }
  int units() const { return int(params.size()); }

  // The engine's order (fsdp/schedule.hpp): every unit forward, the head, then back. The
  // objective: the loss, plus the balance loss times its weight where there are experts.
  double forward() {
    for (int u = 0; u < units(); ++u) model->forward_unit(u, p(u));
    const double loss = model->head_forward(p(head));
    return loss + (cfg.output_router_logits ? cfg.router_aux_loss_coef * model->aux_loss() : 0.0);
  }
  void backward() {
    model->head_backward(p(head), g(head), 1.f);
    for (int u = units() - 1; u >= 0; --u) model->backward_unit(u, p(u), g(u));
  }
};

}  // namespace

TEST_CASE("each architecture's loss gradient matches finite differences for every tensor",
          "[gradcheck]") {
  const std::string arch = GENERATE(std::string("gpt2"), std::string("llama"), std::string("qwen3"),
                                    std::string("qwen3_moe"), std::string("mixtral"));
  const std::string mode = GENERATE(std::string("none"), std::string("blocks"));
  const bool sublayer = GENERATE(false, true);
  TinyModel t(arch, mode, sublayer);
  const bool moe = t.cfg.n_experts > 0;
  const double l0 = t.forward();
  REQUIRE(std::isfinite(l0));
  t.backward();
  int checked = 0, jumps = 0;
  for (std::size_t u = 0; u < t.params.size(); ++u) {
    for (const auto& ts : t.model->units()[u].tensors) {
      auto r = fsdp::test::grad_check(ts.name, t.params[u].data() + ts.offset,
                                      t.grads[u].data() + ts.offset, ts.numel,
                                      [&] { return t.forward(); }, moe ? 1e-3f : 1e-2f, 3e-2, 3e-4, 8, moe);
      INFO(arch << " " << mode << (sublayer ? " sublayer" : "") << ": " << r.first_failure);
      REQUIRE(r.failed == 0);
      checked += r.checked;
      jumps += r.jumps;
    }
  }
  INFO(jumps << " of " << checked << " elements checked on one side of a routing jump");
  REQUIRE(jumps * 20 <= checked);
}

TEST_CASE("activation checkpointing gives the same gradients", "[gradcheck]") {
  const std::string arch = GENERATE(std::string("gpt2"), std::string("qwen3"), std::string("qwen3_moe"));
  const bool sublayer = GENERATE(false, true);
  TinyModel a(arch, "none", sublayer), b(arch, "blocks", sublayer);
  REQUIRE(a.forward() == b.forward());
  a.backward();
  b.backward();
  for (std::size_t u = 0; u < a.grads.size(); ++u)
    for (std::size_t i = 0; i < a.grads[u].extent(0); ++i) REQUIRE(a.grads[u](i) == b.grads[u](i));
}


// LoRA (lora.enabled): every tensor of the base frozen, the adapters' gradients against finite
// differences through the frozen projections (fused q|k|v and gate|up: one adapter per module),
// and nothing written where the base's gradients would be.
TEST_CASE("LoRA adapters' gradients match finite differences and the frozen base gets none", "[gradcheck]") {
  const std::string arch = GENERATE(std::string("gpt2"), std::string("llama"), std::string("qwen3"));
  const std::string mode = GENERATE(std::string("none"), std::string("blocks"));
  LoraChoices lora;
  lora.rank = 2;
  lora.alpha = 3.0;
  lora.targets = {"all-linear"};
  if (arch == "qwen3") lora.targets = {"k_proj", "o_proj", "up_proj"};  // some modules of a fused GEMM
  TinyModel t(arch, mode, false, lora);
  REQUIRE(std::isfinite(t.forward()));
  t.backward();
  int adapters = 0;
  for (std::size_t u = 0; u < t.params.size(); ++u)
    for (const auto& ts : t.model->units()[u].tensors) {
      if (!ts.trainable) {  // frozen: its gradient is never written
        for (std::int64_t i = 0; i < ts.numel; ++i) REQUIRE(t.grads[u](ts.offset + i) == 0.f);
        continue;
      }
      REQUIRE(is_adapter(ts));
      ++adapters;
      auto r = fsdp::test::grad_check(ts.name, t.params[u].data() + ts.offset,
                                      t.grads[u].data() + ts.offset, ts.numel,
                                      [&] { return t.forward(); }, 1e-2f, 3e-2, 3e-4, 8, false);
      INFO(arch << " " << mode << ": " << r.first_failure);
      REQUIRE(r.failed == 0);
    }
  // GPT-2: c_attn, c_proj, c_fc, c_proj per layer; Llama: seven modules; Qwen3: the three named.
  REQUIRE(adapters == 2 * 2 * (arch == "gpt2" ? 4 : arch == "llama" ? 7 : 3));
}
