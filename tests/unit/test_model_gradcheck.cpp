// SPDX-License-Identifier: MIT
// The whole GPT-2 loss against finite differences, through the unit-at-a-time interface the
// sharding engine drives (embedding, blocks, ln_f, tied head), with and without activation
// checkpointing.
#include <catch2/catch.hpp>

#include "gradcheck_util.hpp"
#include "model/gpt2/gpt2.hpp"

using namespace fsdp;

namespace {

struct TinyModel {
  ModelConfig cfg;
  MemoryTracker tracker;
  std::unique_ptr<Gpt2> model;
  std::vector<FlatView> params, grads;
  std::vector<std::int32_t> inputs, targets;

  explicit TinyModel(const std::string& ckpt) {
    cfg.n_layer = 2;
    cfg.n_head = 2;
    cfg.n_embd = 8;
    cfg.vocab_size = 11;
    cfg.block_size = 6;
    cfg.activation_checkpointing = ckpt;
    const int B = 2;
    model = std::make_unique<Gpt2>(cfg, B, tracker);
    std::uint32_t seed = 7;
    for (const auto& u : model->units()) {
      // Larger-than-GPT-2 scale so every path carries a visible gradient.
      FlatView p = fsdp::test::random_view(u.name, u.numel, seed++, 0.3f);
      params.push_back(p);
      grads.emplace_back(u.name + "::grad", u.numel);
    }
    for (int i = 0; i < B * cfg.block_size; ++i) {
      inputs.push_back((i * 7 + 3) % cfg.vocab_size);
      targets.push_back((i * 5 + 1) % cfg.vocab_size);
    }
    model->set_batch(inputs.data(), targets.data());
  }
  ConstVec p(int u) const { return ConstVec(params[u].data(), params[u].extent(0)); }
  Vec g(int u) const { return Vec(grads[u].data(), grads[u].extent(0)); }

  double forward() {
    const int L = cfg.n_layer;
    model->embed_forward(p(0));
    for (int l = 0; l < L; ++l) model->block_forward(l, p(l + 1));
    model->lnf_forward(p(L + 1));
    return model->head_forward(p(0));
  }
  void backward() {
    const int L = cfg.n_layer;
    model->head_backward(p(0), g(0), 1.f);
    model->lnf_backward(p(L + 1), g(L + 1));
    for (int l = L - 1; l >= 0; --l) model->block_backward(l, p(l + 1), g(l + 1));
    model->embed_backward(g(0));
  }
};

}  // namespace

TEST_CASE("GPT-2 loss gradient matches finite differences for every tensor", "[gradcheck]") {
  const std::string mode = GENERATE(std::string("none"), std::string("blocks"));
  TinyModel t(mode);
  const double l0 = t.forward();
  REQUIRE(std::isfinite(l0));
  t.backward();
  for (std::size_t u = 0; u < t.params.size(); ++u) {
    for (const auto& ts : t.model->units()[u].tensors) {
      auto r = fsdp::test::grad_check(ts.name, t.params[u].data() + ts.offset,
                                      t.grads[u].data() + ts.offset, ts.numel,
                                      [&] { return t.forward(); }, 1e-2f, 3e-2, 3e-4, 8);
      INFO(mode << ": " << r.first_failure);
      REQUIRE(r.failed == 0);
    }
  }
}

TEST_CASE("activation checkpointing gives the same gradients", "[gradcheck]") {
  TinyModel a("none"), b("blocks");
  REQUIRE(a.forward() == b.forward());
  a.backward();
  b.backward();
  for (std::size_t u = 0; u < a.grads.size(); ++u)
    for (std::size_t i = 0; i < a.grads[u].extent(0); ++i) REQUIRE(a.grads[u](i) == b.grads[u](i));
}
