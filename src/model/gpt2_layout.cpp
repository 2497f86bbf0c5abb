// SPDX-License-Identifier: MIT
#include "model/gpt2_layout.hpp"

#include <cmath>
#include <stdexcept>

namespace fsdp {
namespace {

void add(UnitLayout& u, const std::string& name, std::vector<std::int64_t> shape) {
  TensorSpec t;
  t.name = name;
  t.shape = std::move(shape);
  t.numel = 1;
  for (auto d : t.shape) t.numel *= d;
  t.offset = u.numel;
  t.decay = t.shape.size() == 2;
  u.numel += t.numel;
  u.tensors.push_back(std::move(t));
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t hash_name(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

// Standard normal from two counter-based uniforms (Box-Muller).
float normal_at(std::uint64_t key, std::int64_t i) {
  const std::uint64_t a = splitmix64(key ^ splitmix64(2 * static_cast<std::uint64_t>(i)));
  const std::uint64_t b = splitmix64(key ^ splitmix64(2 * static_cast<std::uint64_t>(i) + 1));
  const double u1 = ((a >> 11) + 1.0) * (1.0 / 9007199254740993.0);  // (0, 1]
  const double u2 = (b >> 11) * (1.0 / 9007199254740992.0);
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

}  // namespace

const TensorSpec& UnitLayout::tensor(const std::string& suffix) const {
  for (const auto& t : tensors)
    if (ends_with(t.name, suffix)) return t;
  throw std::out_of_range("unit " + name + " has no tensor " + suffix);
}

UnitCut unit_cut(const std::string& fsdp_unit) {
  if (fsdp_unit == "block") return UnitCut::Block;
  if (fsdp_unit == "sublayer") return UnitCut::Sublayer;
  throw std::invalid_argument("fsdp.unit: '" + fsdp_unit + "' is not block or sublayer");
}

BlockOffsets block_offsets(const UnitLayout& a, const UnitLayout& m) {
  return {a.tensor("ln_1.weight").offset,       a.tensor("ln_1.bias").offset,
          a.tensor("attn.c_attn.weight").offset, a.tensor("attn.c_attn.bias").offset,
          a.tensor("attn.c_proj.weight").offset, a.tensor("attn.c_proj.bias").offset,
          m.tensor("ln_2.weight").offset,       m.tensor("ln_2.bias").offset,
          m.tensor("mlp.c_fc.weight").offset,   m.tensor("mlp.c_fc.bias").offset,
          m.tensor("mlp.c_proj.weight").offset, m.tensor("mlp.c_proj.bias").offset};
}

std::vector<UnitLayout> gpt2_units(const ModelConfig& m, UnitCut cut) {
  const std::int64_t C = m.n_embd, V = m.vocab_size, T = m.positions();
  std::vector<UnitLayout> units;
  UnitLayout emb;
  emb.name = "embedding";
  emb.kind = UnitKind::Embedding;
  add(emb, "wte.weight", {V, C});
  add(emb, "wpe.weight", {T, C});
  units.push_back(std::move(emb));
  for (int l = 0; l < m.n_layer; ++l) {
    const std::string h = "h." + std::to_string(l), p = h + ".";
    UnitLayout a;
    a.name = cut == UnitCut::Block ? h : p + "attn";
    a.kind = cut == UnitCut::Block ? UnitKind::Block : UnitKind::Attn;
    a.layer = l;
    add(a, p + "ln_1.weight", {C});
    add(a, p + "ln_1.bias", {C});
    add(a, p + "attn.c_attn.weight", {C, 3 * C});
    add(a, p + "attn.c_attn.bias", {3 * C});
    add(a, p + "attn.c_proj.weight", {C, C});
    add(a, p + "attn.c_proj.bias", {C});
    UnitLayout mlp;
    UnitLayout& b = cut == UnitCut::Block ? a : mlp;
    if (cut == UnitCut::Sublayer) {
      mlp.name = p + "mlp";
      mlp.kind = UnitKind::Mlp;
      mlp.layer = l;
    }
    add(b, p + "ln_2.weight", {C});
    add(b, p + "ln_2.bias", {C});
    add(b, p + "mlp.c_fc.weight", {C, 4 * C});
    add(b, p + "mlp.c_fc.bias", {4 * C});
    add(b, p + "mlp.c_proj.weight", {4 * C, C});
    add(b, p + "mlp.c_proj.bias", {C});
    units.push_back(std::move(a));
    if (cut == UnitCut::Sublayer) units.push_back(std::move(mlp));
  }
  UnitLayout lnf;
  lnf.name = "ln_f";
  lnf.kind = UnitKind::LnF;
  add(lnf, "ln_f.weight", {C});
  add(lnf, "ln_f.bias", {C});
  units.push_back(std::move(lnf));
  return units;
}

std::int64_t gpt2_num_params(const ModelConfig& m) {
  std::int64_t n = 0;
  for (const auto& u : gpt2_units(m)) n += u.numel;
  return n;
}

void gpt2_init_unit(const UnitLayout& unit, float* full, std::uint64_t seed, int n_layer) {
  const float resid_std = 0.02f / std::sqrt(2.0f * n_layer);
  for (const auto& t : unit.tensors) {
    float* p = full + t.offset;
    if (ends_with(t.name, ".bias")) {
      for (std::int64_t i = 0; i < t.numel; ++i) p[i] = 0.f;
    } else if (ends_with(t.name, "ln_1.weight") || ends_with(t.name, "ln_2.weight") ||
               t.name == "ln_f.weight") {
      for (std::int64_t i = 0; i < t.numel; ++i) p[i] = 1.f;
    } else {
      const bool resid = ends_with(t.name, "attn.c_proj.weight") ||
                         ends_with(t.name, "mlp.c_proj.weight");
      const float std = resid ? resid_std : 0.02f;
      const std::uint64_t key = splitmix64(seed ^ hash_name(t.name));
      for (std::int64_t i = 0; i < t.numel; ++i) p[i] = std * normal_at(key, i);
    }
  }
}

}  // namespace fsdp
