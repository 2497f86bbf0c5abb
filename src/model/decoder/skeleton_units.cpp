// SPDX-License-Identifier: MIT
#include "model/decoder/skeleton_units.hpp"

namespace fsdp {

std::vector<UnitLayout> skeleton_units(const ModelConfig& m, const ModelChoices& c, UnitLayout embedding,
                                       const std::function<std::string(int l)>& prefix,
                                       const std::string& attn_name, const AddLayerTensors& attn,
                                       const AddLayerTensors& mlp, UnitLayout final_unit) {
  const bool whole = !c.sublayer_units;
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

}  // namespace fsdp
