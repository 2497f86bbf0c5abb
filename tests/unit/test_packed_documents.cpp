// SPDX-License-Identifier: MIT
// data.packing = documents at the model: a window packing documents A | B | C gives, token by
// token, the losses that each document gives alone at the start of a window, and the gradients
// of the packed objective are the sums of the documents' own (both attention kernels, learned
// and rotary positions, windows longer than a fused tile so that whole key tiles are skipped).
// Unscored targets (a prompt, the token after an EOS) carry no loss and no gradient.
// The references are runs of the same code on single documents, so the tolerances are the
// float rounding of different sum orders: the gaps measured here are 1e-8 to 2e-8 of the
// largest value (loss or gradient), checked at 1e-6.
#include <catch2/catch.hpp>

#include <cmath>

#include "gradcheck_util.hpp"
#include "model/architecture.hpp"
#include "model/decoder/skeleton.hpp"

using namespace fsdp;

namespace {

constexpr int kT = 150;  // three 64-row fused tiles, the last one partial
constexpr int kEos = 0;

ModelConfig tiny(const std::string& arch) {
  ModelConfig cfg;
  cfg.arch = arch;
  cfg.n_layer = 2;
  cfg.n_head = 2;
  cfg.n_embd = 16;
  cfg.vocab_size = 13;
  cfg.block_size = kT;
  if (arch != "gpt2") {
    cfg.n_kv_head = 1;
    cfg.ffn_hidden = 24;
    cfg.tie_embeddings = false;
    cfg.rope_theta = 100.0;
  }
  if (arch == "qwen3") cfg.head_size = 12;
  return cfg;
}

struct Run {
  std::vector<float> losses;
  std::vector<std::vector<float>> grads;
};

class Model {
 public:
  Model(const std::string& arch, const std::string& attention) : cfg_(tiny(arch)) {
    const Architecture& a = architecture_of(cfg_);
    DecoderOptions o;
    o.micro_batch = 1;
    o.choices.attention = attention;
    model_ = a.build(cfg_, o, tracker_);
    head_ = a.head_unit(cfg_, o.choices);
    std::uint32_t seed = 11;
    for (const auto& u : model_->units()) {
      params_.push_back(fsdp::test::random_view(u.name, u.numel, seed++, 0.3f));
      grads_.emplace_back(u.name + "::grad", u.numel);
    }
  }

  // Forward and backward of one window with dloss 1 and the given layout.
  Run run(const std::vector<std::int32_t>& in, const std::vector<std::int32_t>& tgt,
          const std::vector<std::int32_t>* starts, double scale) {
    TokenLayout l;
    l.doc_starts = starts ? starts->data() : nullptr;
    l.loss_scale = scale;
    model_->set_batch(in.data(), tgt.data(), l);
    for (auto& g : grads_) Kokkos::deep_copy(g, 0.f);
    const int U = int(params_.size());
    for (int u = 0; u < U; ++u) model_->forward_unit(u, p(u));
    model_->head_forward(p(head_));
    model_->head_backward(p(head_), g(head_), 1.f);
    for (int u = U - 1; u >= 0; --u) model_->backward_unit(u, p(u), g(u));
    Run r;
    r.losses = static_cast<DecoderSkeleton&>(*model_).token_losses();
    for (auto& gv : grads_) {
      r.grads.emplace_back(gv.extent(0));
      Kokkos::deep_copy(HostVec(r.grads.back().data(), r.grads.back().size()), gv);
    }
    return r;
  }

 private:
  ConstVec p(int u) const { return ConstVec(params_[u].data(), params_[u].extent(0)); }
  Vec g(int u) const { return Vec(grads_[u].data(), grads_[u].extent(0)); }

  ModelConfig cfg_;
  MemoryTracker tracker_;
  std::unique_ptr<Decoder> model_;
  int head_ = 0;
  std::vector<FlatView> params_, grads_;
};

// The packed window: documents of these lengths (each ending in EOS) and then filler.
struct Packing {
  std::vector<int> lengths{70, 50, 30};  // 150 tokens: the last document ends at the window's end
  std::vector<std::int32_t> tokens;      // kT + 1
  std::vector<int> begin;
  Packing() {
    std::uint32_t x = 5;
    for (int len : lengths) {
      begin.push_back(int(tokens.size()));
      for (int i = 0; i + 1 < len; ++i) tokens.push_back(1 + int((x = x * 1103515245u + 12345u) >> 16) % 12);
      tokens.push_back(kEos);
    }
    while (int(tokens.size()) < kT + 1) tokens.push_back(3);
  }
  // Prompt tokens of the first document: targets 1..20 are not scored.
  static bool prompt(int doc, int t) { return doc == 0 && t >= 1 && t <= 20; }
};

void check_close(const std::vector<float>& got, const std::vector<float>& want, double tol,
                 const std::string& what) {
  REQUIRE(got.size() == want.size());
  double scale = 0.0;
  for (float w : want) scale = std::max(scale, double(std::fabs(w)));
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(what << " [" << i << "]: " << got[i] << " against " << want[i]);
    REQUIRE(std::fabs(double(got[i]) - want[i]) <= tol * scale);
  }
}

}  // namespace

TEST_CASE("a window of packed documents gives each document's own losses and gradients",
          "[packing]") {
  const std::string arch = GENERATE(std::string("gpt2"), std::string("qwen3"));
  const std::string attention = GENERATE(std::string("materialized"), std::string("fused"));
  INFO(arch << ", " << attention << " attention");
  Model model(arch, attention);
  const Packing pk;
  const double scale = 0.01;

  // The packed window: documents start after each EOS; an EOS input's target is not scored.
  std::vector<std::int32_t> in(pk.tokens.begin(), pk.tokens.begin() + kT), tgt(kT), starts(kT);
  int start = 0;
  for (int t = 0; t < kT; ++t) {
    if (t > 0 && in[t - 1] == kEos) start = t;
    starts[t] = start;
    const int doc = int(std::upper_bound(pk.begin.begin(), pk.begin.end(), t) - pk.begin.begin()) - 1;
    tgt[t] = in[t] == kEos || Packing::prompt(doc, t - pk.begin[doc]) ? -1 : pk.tokens[t + 1];
  }
  const Run packed = model.run(in, tgt, &starts, scale);

  // Each document alone at the start of a window, the rest of the window unscored filler.
  std::vector<float> want_losses(kT, 0.f);
  std::vector<std::vector<float>> want_grads;
  for (std::size_t d = 0; d < pk.lengths.size(); ++d) {
    const int b = pk.begin[d], len = pk.lengths[d];
    std::vector<std::int32_t> din(kT, 3), dtgt(kT, -1);
    for (int t = 0; t < len; ++t) {
      din[t] = pk.tokens[b + t];
      dtgt[t] = t + 1 < len && !Packing::prompt(int(d), t) ? pk.tokens[b + t + 1] : -1;
    }
    const Run alone = model.run(din, dtgt, nullptr, scale);
    for (int t = 0; t < len; ++t) want_losses[b + t] = alone.losses[t];
    if (want_grads.empty()) want_grads = alone.grads;
    else
      for (std::size_t u = 0; u < want_grads.size(); ++u)
        for (std::size_t i = 0; i < want_grads[u].size(); ++i) want_grads[u][i] += alone.grads[u][i];
  }
  for (int t = 0; t < kT; ++t) {
    INFO("token " << t);
    if (tgt[t] < 0) REQUIRE(packed.losses[t] == 0.f);
    else REQUIRE(std::fabs(packed.losses[t] - want_losses[t]) <= 1e-6 * std::fabs(want_losses[t]));
  }
  for (std::size_t u = 0; u < want_grads.size(); ++u)
    check_close(packed.grads[u], want_grads[u], 1e-6, "unit " + std::to_string(u) + " gradient");

  // Without the document starts the later documents attend across the boundary: the check
  // above can fail.
  const Run crossing = model.run(in, tgt, nullptr, scale);
  double diff = 0.0;
  for (int t = pk.begin[1]; t < kT; ++t) diff = std::max(diff, double(std::fabs(crossing.losses[t] - want_losses[t])));
  REQUIRE(diff > 1e-3);
}

TEST_CASE("unscored targets carry no loss and no gradient", "[packing]") {
  const std::string attention = GENERATE(std::string("materialized"), std::string("fused"));
  Model model("qwen3", attention);
  const Packing pk;
  std::vector<std::int32_t> in(pk.tokens.begin(), pk.tokens.begin() + kT), all(kT), some(kT), rest(kT);
  for (int t = 0; t < kT; ++t) {
    all[t] = pk.tokens[t + 1];
    some[t] = t % 3 == 0 ? -1 : all[t];  // every third target masked, as a prompt would be
    rest[t] = t % 3 == 0 ? all[t] : -1;  // only those
  }
  const Run a = model.run(in, some, nullptr, 0.02), b = model.run(in, rest, nullptr, 0.02);
  const Run c = model.run(in, all, nullptr, 0.02);
  for (int t = 0; t < kT; ++t) {
    INFO("token " << t);
    REQUIRE((t % 3 == 0 ? a.losses[t] : b.losses[t]) == 0.f);
    REQUIRE(std::fabs((a.losses[t] + b.losses[t]) - c.losses[t]) <= 1e-6 * std::fabs(c.losses[t]));
  }
  // The objective is a sum over scored tokens, so the masked run's gradient is the whole
  // window's less the masked tokens' own: they contributed nothing to it.
  for (std::size_t u = 0; u < c.grads.size(); ++u) {
    std::vector<float> sum = a.grads[u];
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += b.grads[u][i];
    check_close(sum, c.grads[u], 1e-6, "unit " + std::to_string(u) + " gradient");
  }
}
