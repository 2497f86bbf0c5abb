// SPDX-License-Identifier: MIT
#include "model/decoder/skeleton_units.hpp"

namespace fsdp {

std::vector<UnitLayout> skeleton_units(const ModelConfig& m, UnitLayout embedding,
                                       const std::function<std::string(int l)>& prefix,
                                       const std::string& attn_name, const AddLayerTensors& attn,
                                       const AddLayerTensors& mlp, UnitLayout final_unit) {
  const bool whole = !m.sublayer_units;
  std::vector<UnitLayout> units;
  embedding.kind = kEmbeddingUnit;
  units.push_back(std::move(embedding));
  for (int l = 0; l < m.n_layer; ++l) {
    const std::string p = prefix(l);
    UnitLayout a;
    a.name = whole ? p.substr(0, p.size() - 1) : p + attn_name;
    a.kind = whole ? kBlockUnit : kAttnUnit;
    a.layer = l;
    attn(a, p);
    UnitLayout b;
    b.name = p + "mlp";
    b.kind = kMlpUnit;
    b.layer = l;
    mlp(whole ? a : b, p);
    units.push_back(std::move(a));
    if (!whole) units.push_back(std::move(b));
  }
  final_unit.kind = kFinalUnit;
  units.push_back(std::move(final_unit));
  return units;
}

std::vector<UnitFlops> skeleton_unit_flops(const std::vector<UnitLayout>& units,
                                           const ModelConfig& m, const BlockSpec& s, int B,
                                           bool checkpointing) {
  const double tok = double(B) * m.block_size;
  const double THD = double(m.block_size) * s.H * s.D;
  // A sparse layer computes with its router and K of its E experts per token.
  const auto active = [&](const UnitLayout& u) {
    if (!s.moe.sparse_layer(u.layer) || u.kind == kAttnUnit) return u.numel;
    return u.numel - std::int64_t(s.moe.E - s.moe.K) * 3 * m.n_embd * s.moe.F;
  };
  std::vector<UnitFlops> f;
  for (const UnitLayout& u : units) {
    UnitFlops x;
    switch (u.kind) {
      case kEmbeddingUnit: break;
      case kFinalUnit: {
        std::int64_t n = u.numel;  // the norm; an untied head in it is the head's
        for (const TensorSpec& t : u.tensors)
          if (!s.head.empty() && ends_with(t.name, s.head)) n -= t.numel;
        x.forward = 2.0 * double(n) * tok;
        break;
      }
      case kMlpUnit: x.forward = 2.0 * double(active(u)) * tok; break;
      default: x.forward = (2.0 * double(active(u)) + 4.0 * THD) * tok;
    }
    x.backward = 2.0 * x.forward;
    if (checkpointing && (u.kind == kBlockUnit || u.kind == kAttnUnit || u.kind == kMlpUnit))
      x.recompute = x.forward;
    f.push_back(x);
  }
  return f;
}

}  // namespace fsdp
