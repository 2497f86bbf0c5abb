// SPDX-License-Identifier: MIT
// Llama's kernels (RMSNorm, rotary with and without Llama 3.1's blend, SwiGLU, the token
// embedding) and the whole Llama loss (tied and untied heads; n_kv_head = n_head, n_head/2 and
// 1; with and without activation checkpointing; block and sub-layer units) against central
// finite differences of a double loss = sum(r * forward(x)), r random.
// The hidden case [.llama_reference] writes each kernel's inputs, outputs and gradients to
// $FSDP_REFERENCE_DIR for tests/reference/llama_kernels_check.py, which recomputes them in
// float64 PyTorch (tests/e2e/llama.sh runs both).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gradcheck_util.hpp"
#include "model/architecture.hpp"
#include "model/attention.hpp"
#include "model/embedding.hpp"
#include "model/flash_attention.hpp"
#include "model/rmsnorm.hpp"
#include "model/rotary.hpp"
#include "model/swiglu.hpp"

using namespace fsdp;
using fsdp::test::grad_check;
using fsdp::test::random_view;
namespace k = fsdp::kernels;

using fsdp::test::CM;
using fsdp::test::CV;
using fsdp::test::M;
using fsdp::test::V;
using fsdp::test::require_ok;

namespace {

ModelConfig rope_config(bool blend) {
  ModelConfig m;
  m.arch = "llama";
  m.n_head = 2;
  m.n_embd = 32;  // D = 16: eight frequencies
  m.rope_theta = 500000.0;
  if (blend) {  // the three bands (kept, mixed, divided) all occur at D = 16
    m.rope_scaling = "llama3";
    m.rope_factor = 8.0;
    m.rope_low_freq_factor = 1.0;
    m.rope_high_freq_factor = 8.0;
    m.rope_original_context = 64;
  }
  return m;
}

// The kernel cases, shared by the finite-difference tests and the reference dump.
struct RmsCase {
  int N = 6, C = 24;
  float eps = 1e-5f;
  FlatView x = random_view("x", N * C, 1, 2.f), w = random_view("w", C, 2, 0.5f),
           r = random_view("r", N * C, 3), y{"y", std::size_t(N * C)}, rstd{"rstd", std::size_t(N)},
           dx{"dx", std::size_t(N * C)}, dw{"dw", std::size_t(C)};
  double forward() {
    k::rmsnorm_forward(M(y, N, C), V(rstd), CM(x, N, C), CV(w), eps);
    return fsdp::test::dot(y, r);
  }
  void backward() {
    Kokkos::deep_copy(dw, 0.f);
    k::rmsnorm_backward(M(dx, N, C), V(dw), CM(r, N, C), CM(x, N, C), CV(w), CV(rstd));
  }
};

struct RopeCase {
  ModelConfig m;
  MemoryTracker tracker;
  int T = 7, B = 2, heads = 3, D = 16;  // three heads: q and k of two query heads' model
  k::RopeTable table;
  FlatView x, r, y, dx;
  explicit RopeCase(bool blend)
      : m(rope_config(blend)),
        table(tracker, m, T),
        x(random_view("x", B * T * heads * D, 4)),
        r(random_view("r", B * T * heads * D, 5)),
        y("y", std::size_t(B * T * heads * D)),
        dx("dx", std::size_t(B * T * heads * D)) {}
  double forward() {
    Kokkos::deep_copy(y, x);
    k::rope_apply(M(y, B * T, heads * D), T, 0, heads, D, table, false);
    return fsdp::test::dot(y, r);
  }
  void backward() {
    Kokkos::deep_copy(dx, r);
    k::rope_apply(M(dx, B * T, heads * D), T, 0, heads, D, table, true);
  }
};

struct SwiGluCase {
  int N = 5, F = 12;
  FlatView gu = random_view("gu", N * 2 * F, 6, 2.f), r = random_view("r", N * F, 7),
           h{"h", std::size_t(N * F)}, dgu{"dgu", std::size_t(N * 2 * F)};
  double forward() {
    k::swiglu_forward(M(h, N, F), CM(gu, N, 2 * F));
    return fsdp::test::dot(h, r);
  }
  void backward() { k::swiglu_backward(M(dgu, N, 2 * F), CM(r, N, F), CM(gu, N, 2 * F)); }
};

// Grouped-query attention through either kernel (fused, or materialised: its blocked CPU path
// reads the heads in place too), q | k | v in one row as Llama lays them out.
struct AttnCase {
  int B = 2, T = 9, H = 4, KV, D = 8, W;
  bool materialized;
  FlatView qkv, r, out, lse, dqkv, att, work;
  k::FlashPlan plan = k::flash_plan(8);
  AttnCase(int kv, bool mat)
      : KV(kv),
        materialized(mat),
        W((H + 2 * kv) * D),
        qkv(random_view("qkv", B * T * W, 8)),
        r(random_view("r", B * T * H * D, 9)),
        out("out", std::size_t(B * T * H * D)),
        lse("lse", std::size_t(B * H * T)),
        dqkv("dqkv", std::size_t(B * T * W)),
        att("att", std::size_t(B * H * T * T)),
        work("work", std::size_t(k::attention_work_size(T, H))) {}
  k::QkvRows<float> rows() const {
    const float* q = qkv.data();
    return {q, q + H * D, q + (H + KV) * D, W, W, W};
  }
  double forward() {
    if (materialized)
      k::attention_forward(M(out, B * T, H * D), Att3(att.data(), B * H, T, T), CM(qkv, B * T, W),
                           B, T, H, KV);
    else
      k::flash_attention_forward(k::AttnDims{B, T, H, KV, D}, rows(), {out.data(), H * D},
                                 lse.data(), plan);
    return fsdp::test::dot(out, r);
  }
  void backward() {
    if (materialized)
      return k::attention_backward(M(dqkv, B * T, W), CM(r, B * T, H * D),
                                   ConstAtt3(att.data(), B * H, T, T), CM(qkv, B * T, W), B, T, H,
                                   KV, V(work));
    float* g = dqkv.data();
    k::flash_attention_backward(k::AttnDims{B, T, H, KV, D}, rows(), {out.data(), H * D},
                                {r.data(), H * D}, lse.data(),
                                k::QkvGrads{g, g + H * D, g + (H + KV) * D, W, W, W}, plan);
  }
};

// The whole model through the Decoder interface, in the engine's stage order.
struct TinyLlama {
  ModelConfig cfg;
  MemoryTracker tracker;
  std::unique_ptr<Decoder> model;
  std::vector<FlatView> params, grads;
  std::vector<std::int32_t> inputs, targets;
  int head = 0;

  TinyLlama(int kv, bool tied, const std::string& ckpt, bool sublayer) {
    cfg.arch = "llama";
    cfg.n_layer = 2;
    cfg.n_head = 4;
    cfg.n_kv_head = kv;
    cfg.n_embd = 16;
    cfg.ffn_hidden = 20;
    cfg.vocab_size = 11;
    cfg.block_size = 6;
    cfg.tie_embeddings = tied;
    cfg.rope_theta = 10000.0;
    cfg.rope_scaling = "llama3";
    cfg.rope_factor = 4.0;
    cfg.rope_high_freq_factor = 2.0;
    cfg.rope_original_context = 4;
    const Architecture& a = architecture_of(cfg);
    DecoderOptions o;
    o.micro_batch = 2;
    o.choices.checkpoint_blocks = std::string(ckpt) == "blocks";
    o.choices.sublayer_units = sublayer;
    model = a.build(cfg, o, tracker);
    head = a.head_unit(cfg, o.choices);
    std::uint32_t seed = 11;
    for (const auto& u : model->units()) {
      params.push_back(fsdp::test::random_view(u.name, u.numel, seed++, 0.3f));
      grads.emplace_back(u.name + "::grad", u.numel);
    }
    for (int i = 0; i < 2 * cfg.block_size; ++i) {
      inputs.push_back((i * 7 + 3) % cfg.vocab_size);
      targets.push_back((i * 5 + 1) % cfg.vocab_size);
    }
    model->set_batch(inputs.data(), targets.data());
  }
  ConstVec p(int u) const { return ConstVec(params[u].data(), params[u].extent(0)); }
  Vec g(int u) const { return Vec(grads[u].data(), grads[u].extent(0)); }
  double forward() {
    for (int u = 0; u < int(params.size()); ++u) model->forward_unit(u, p(u));
    return model->head_forward(p(head));
  }
  void backward() {
    model->head_backward(p(head), g(head), 1.f);
    for (int u = int(params.size()) - 1; u >= 0; --u) model->backward_unit(u, p(u), g(u));
  }
};

// Arrays as one float32 file and a JSON manifest of their names and shapes, in order.
class Dump {
 public:
  Dump(const std::string& dir, const std::string& name) : dir_(dir), name_(name) {}
  void add(const std::string& what, const FlatView& v, std::vector<std::int64_t> shape) {
    manifest_["arrays"].push_back({{"name", what}, {"shape", shape}});
    data_.insert(data_.end(), v.data(), v.data() + v.extent(0));
  }
  nlohmann::json& meta() { return manifest_["meta"]; }
  ~Dump() {
    std::ofstream(dir_ + "/" + name_ + ".json") << manifest_.dump();
    std::ofstream(dir_ + "/" + name_ + ".bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(data_.data()), std::streamsize(data_.size() * 4));
  }

 private:
  std::string dir_, name_;
  nlohmann::json manifest_;
  std::vector<float> data_;
};

}  // namespace

TEST_CASE("RMSNorm backward matches finite differences", "[llama][gradcheck]") {
  RmsCase c;
  c.forward();
  c.backward();
  require_ok(grad_check("x", c.x.data(), c.dx.data(), c.N * c.C, [&] { return c.forward(); }));
  require_ok(grad_check("w", c.w.data(), c.dw.data(), c.C, [&] { return c.forward(); }));
}

TEST_CASE("rotary backward matches finite differences, with and without the llama3 blend",
          "[llama][gradcheck]") {
  const bool blend = GENERATE(false, true);
  RopeCase c(blend);
  c.forward();
  c.backward();
  INFO("blend " << blend);
  require_ok(grad_check("x", c.x.data(), c.dx.data(), c.x.extent(0), [&] { return c.forward(); },
                        1e-2f, 2e-2, 2e-4, 64));
  SECTION("position 0 is not rotated; the rotation keeps each pair's length") {
    c.forward();
    for (int i = 0; i < c.heads * c.D; ++i) REQUIRE(c.y(i) == c.x(i));
    const int row = 5 * c.heads * c.D, half = c.D / 2;
    for (int i = 0; i < half; ++i) {
      const double a = c.x(row + i), b = c.x(row + i + half), a2 = c.y(row + i), b2 = c.y(row + i + half);
      REQUIRE(std::abs((a * a + b * b) - (a2 * a2 + b2 * b2)) < 1e-5 * (1 + a * a + b * b));
    }
  }
}

TEST_CASE("the llama3 blend divides long wavelengths and keeps short ones", "[llama]") {
  const std::vector<double> plain = k::rope_inv_freq(rope_config(false));
  const std::vector<double> blend = k::rope_inv_freq(rope_config(true));
  REQUIRE(blend.front() == plain.front());              // wavelength 2 pi: kept
  REQUIRE(blend.back() == Approx(plain.back() / 8.0));  // longest: divided by the factor
  int mixed = 0;
  for (std::size_t i = 0; i < plain.size(); ++i)
    if (blend[i] != plain[i] && std::abs(blend[i] - plain[i] / 8.0) > 1e-15) ++mixed;
  REQUIRE(mixed > 0);
}

TEST_CASE("SwiGLU backward matches finite differences", "[llama][gradcheck]") {
  SwiGluCase c;
  c.forward();
  c.backward();
  require_ok(grad_check("gu", c.gu.data(), c.dgu.data(), c.gu.extent(0), [&] { return c.forward(); },
                        1e-2f, 2e-2, 2e-4, 120));
}

TEST_CASE("grouped-query attention backward matches finite differences", "[llama][gradcheck]") {
  const int kv = GENERATE(4, 2, 1);
  const bool materialized = GENERATE(false, true);
  AttnCase c(kv, materialized);
  c.forward();
  c.backward();
  INFO("n_kv_head " << kv << " of 4, " << (materialized ? "materialised" : "fused"));
  require_ok(grad_check("qkv", c.qkv.data(), c.dqkv.data(), c.qkv.extent(0),
                        [&] { return c.forward(); }, 1e-2f, 2e-2, 2e-4, 200));
}

TEST_CASE("token embedding backward sums each token's rows", "[llama][gradcheck]") {
  const int V = 5, C = 40, N = 9;
  auto table = random_view("table", V * C, 12), r = random_view("r", N * C, 13);
  FlatView x("x", N * C), dtable("dtable", V * C);
  TokenView tok("tok", N);
  for (int i = 0; i < N; ++i) tok(i) = (i * 3) % V;
  auto loss = [&] {
    k::token_embedding_forward(M(x, N, C), ConstTokens(tok.data(), N), CM(table, V, C));
    return fsdp::test::dot(x, r);
  };
  loss();
  k::token_embedding_backward(M(dtable, V, C), CM(r, N, C), ConstTokens(tok.data(), N));
  require_ok(grad_check("table", table.data(), dtable.data(), V * C, loss, 1e-2f, 2e-2, 2e-4, 200));
}

TEST_CASE("the Llama loss gradient matches finite differences for every tensor",
          "[llama][gradcheck]") {
  struct Case {
    int kv;
    bool tied;
    const char* ckpt;
    bool sublayer;
  };
  const Case c = GENERATE(Case{4, false, "none", false}, Case{2, true, "none", false},
                          Case{1, false, "blocks", false}, Case{2, false, "blocks", true});
  TinyLlama t(c.kv, c.tied, c.ckpt, c.sublayer);
  INFO("n_kv_head " << c.kv << (c.tied ? " tied" : " untied") << " checkpointing " << c.ckpt
                    << (c.sublayer ? " sub-layer units" : " block units"));
  REQUIRE(std::isfinite(t.forward()));
  t.backward();
  for (std::size_t u = 0; u < t.params.size(); ++u)
    for (const auto& ts : t.model->units()[u].tensors) {
      auto r = grad_check(ts.name, t.params[u].data() + ts.offset, t.grads[u].data() + ts.offset,
                          ts.numel, [&] { return t.forward(); }, 1e-2f, 3e-2, 3e-4, 8);
      INFO(r.first_failure);
      REQUIRE(r.failed == 0);
    }
}

TEST_CASE("write the kernels' cases for the float64 PyTorch reference", "[.llama_reference]") {
  const char* dir = std::getenv("FSDP_REFERENCE_DIR");
  REQUIRE(dir != nullptr);
  {
    RmsCase c;
    c.forward();
    c.backward();
    Dump d(dir, "rmsnorm");
    d.meta() = {{"eps", c.eps}};
    d.add("x", c.x, {c.N, c.C});
    d.add("w", c.w, {c.C});
    d.add("dy", c.r, {c.N, c.C});
    d.add("y", c.y, {c.N, c.C});
    d.add("dx", c.dx, {c.N, c.C});
    d.add("dw", c.dw, {c.C});
  }
  for (const bool blend : {false, true}) {
    RopeCase c(blend);
    c.forward();
    c.backward();
    Dump d(dir, blend ? "rope_llama3" : "rope");
    d.meta() = {{"theta", c.m.rope_theta}, {"scaling", c.m.rope_scaling},
                {"factor", c.m.rope_factor}, {"low", c.m.rope_low_freq_factor},
                {"high", c.m.rope_high_freq_factor}, {"original", c.m.rope_original_context},
                {"T", c.T}};
    d.add("x", c.x, {c.B, c.T, c.heads, c.D});
    d.add("dy", c.r, {c.B, c.T, c.heads, c.D});
    d.add("y", c.y, {c.B, c.T, c.heads, c.D});
    d.add("dx", c.dx, {c.B, c.T, c.heads, c.D});
  }
  {
    SwiGluCase c;
    c.forward();
    c.backward();
    Dump d(dir, "swiglu");
    d.add("gu", c.gu, {c.N, 2 * c.F});
    d.add("dy", c.r, {c.N, c.F});
    d.add("y", c.h, {c.N, c.F});
    d.add("dgu", c.dgu, {c.N, 2 * c.F});
  }
  for (const int kv : {4, 2, 1})
    for (const bool materialized : {false, true}) {
    AttnCase c(kv, materialized);
    c.forward();
    c.backward();
    Dump d(dir, std::string(materialized ? "materialized" : "attention") + "_kv" + std::to_string(kv));
    d.meta() = {{"H", c.H}, {"KV", kv}, {"D", c.D}};
    d.add("qkv", c.qkv, {c.B, c.T, c.W});
    d.add("dy", c.r, {c.B, c.T, c.H * c.D});
    d.add("y", c.out, {c.B, c.T, c.H * c.D});
    d.add("dqkv", c.dqkv, {c.B, c.T, c.W});
    }
}
