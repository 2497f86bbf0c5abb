// SPDX-License-Identifier: MIT
#include "model/decoder/decoder_layer.hpp"

#include <stdexcept>
#include <string>

#include "model/layers/adapted_linear.hpp"

namespace fsdp {

std::int64_t offset_of(const UnitLayout& u, const std::string& suffix) {
  return suffix.empty() ? -1 : u.tensor(suffix).offset;
}

std::int64_t bias_offset_of(const UnitLayout& u, const std::string& weight) {
  return offset_of(u, weight.substr(0, weight.size() - 6) + "bias");
}

namespace {

const TensorSpec* find_tensor(const UnitLayout& u, const std::string& name) {
  for (const TensorSpec& t : u.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

// The adapters on the GEMM whose weight (of `in` columns, [out, in]) starts at tensor w: one per
// module the GEMM holds (the adjacent tensors it reads: Llama's q, k, v) that has a lora_A and
// lora_B in u, over that module's rows of the weight, which are its columns of the output.
std::vector<AdaptedLinear::Adapter> adapters_of(const UnitLayout& u, const TensorSpec& w, int in, int out) {
  std::vector<AdaptedLinear::Adapter> found;
  const std::int64_t origin = grad_origin(u), end = w.offset + std::int64_t(in) * out;
  for (const TensorSpec& t : u.tensors) {
    if (t.shape.size() != 2 || t.offset < w.offset || t.offset >= end) continue;
    const std::string base = t.name.substr(0, t.name.size() - 7);  // without ".weight"
    const TensorSpec* a = find_tensor(u, base + ".lora_A.weight");
    const TensorSpec* b = find_tensor(u, base + ".lora_B.weight");
    if (!a || !b) continue;
    AdaptedLinear::Adapter x;
    x.a = a->offset;
    x.b = b->offset;
    x.grad_a = a->offset - origin;
    x.grad_b = b->offset - origin;
    // [out, in] weights: a module's rows; GPT-2's [in, out] c_attn is one module, all columns.
    x.col = w.in_major ? 0 : int((t.offset - w.offset) / in);
    x.cols = int(fan_out(t));
    found.push_back(x);
  }
  return found;
}

}  // namespace

DecoderLayer decoder_layer(const std::vector<UnitLayout>& units, const BlockSpec& s, int C, int l,
                           const AdapterRun& lora) {
  DecoderLayer d;
  const UnitLayout* a = nullptr;
  const UnitLayout* f = nullptr;
  for (const UnitLayout& u : units) {
    if (u.layer != l || u.kind == kEmbeddingUnit || u.kind == kFinalUnit) continue;
    if (u.kind == kBlockUnit || u.kind == kAttnUnit) a = &u;
    if (u.kind == kBlockUnit || u.kind == kMlpUnit) f = &u;
  }
  if (!a || !f)
    throw std::logic_error("decoder_layer: no unit holds layer " + std::to_string(l) + "'s " +
                           (a ? "MLP" : "attention"));
  const bool ln = s.norm == NormKind::LayerNorm;
  const auto norm = [&](const UnitLayout& u, const std::string& w) {
    return Norm(s.norm, C, s.eps, offset_of(u, w), ln ? bias_offset_of(u, w) : -1,
                !u.tensor(w).trainable);
  };
  // A projection of unit u: weight w, its bias when the architecture has biases; with adapters
  // on it, the frozen weight inside an AdaptedLinear.
  const auto linear = [&](const UnitLayout& u, const std::string& w, int in, int out,
                          Linear::Bias bias) -> std::unique_ptr<LinearLayer> {
    const TensorSpec& t = u.tensor(w);
    const Linear::Where where{t.offset, s.biases ? bias_offset_of(u, w) : -1, s.input_major, !t.trainable};
    auto plain = std::make_unique<Linear>(in, out, where, bias);
    std::vector<AdaptedLinear::Adapter> adapters = adapters_of(u, t, in, out);
    if (adapters.empty()) return plain;
    return std::make_unique<AdaptedLinear>(std::move(plain), int(lora.h.extent(1)), lora.scale,
                                           std::move(adapters), lora.h, lora.dh);
  };
  const int QW = s.H * s.D, QKV = (s.H + 2 * s.KV) * s.D;
  d.attn_norm = norm(*a, s.attn_norm);
  d.qkv = linear(*a, s.qkv, C, QKV, Linear::Bias::InForward);
  d.q_norm = s.qk_norm ? offset_of(*a, s.q_norm) : -1;
  d.k_norm = s.qk_norm ? offset_of(*a, s.k_norm) : -1;
  d.o = linear(*a, s.o, QW, C, Linear::Bias::ByConsumer);
  d.mlp_norm = norm(*f, s.mlp_norm);
  if (s.moe.sparse_layer(l)) {
    d.router = std::make_unique<Linear>(C, s.moe.E, Linear::Where{offset_of(*f, s.moe.router), -1, false});
    for (int e = 0; e < s.moe.E; ++e) {
      const std::string x = s.moe.experts + std::to_string(e);
      d.experts.gate_up.push_back(offset_of(*f, x + s.moe.gate));
      d.experts.down.push_back(offset_of(*f, x + s.moe.down));
    }
    return d;
  }
  const int UP = s.mlp == MlpKind::SwiGlu ? 2 * s.F : s.F;
  d.up = linear(*f, s.up, C, UP, Linear::Bias::ByConsumer);
  d.down = linear(*f, s.down, s.F, C, Linear::Bias::ByConsumer);
  return d;
}

LayerFlops DecoderLayer::attention_flops(std::int64_t rows, const BlockSpec& s) const {
  LayerFlops f = attn_norm.flops(rows);
  f += qkv->flops(rows);
  if (q_norm >= 0) f += param_flops(2.0 * s.D, double(rows));  // the q and k head norms
  f += o->flops(rows);
  return f;
}

LayerFlops DecoderLayer::mlp_flops(std::int64_t rows, int C, const BlockSpec& s) const {
  LayerFlops f = mlp_norm.flops(rows);
  if (!router) {
    f += up->flops(rows);
    f += down->flops(rows);
    return f;
  }
  f += router->flops(rows);
  // Each row computes with K experts' gate | up and down: 3 F C parameters each.
  f += param_flops(double(s.moe.K) * 3.0 * s.moe.F * C, double(rows));
  return f;
}

}  // namespace fsdp
