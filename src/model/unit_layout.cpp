// SPDX-License-Identifier: MIT
#include "model/unit_layout.hpp"

#include <stdexcept>

namespace fsdp {

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

const TensorSpec& UnitLayout::tensor(const std::string& suffix) const {
  for (const auto& t : tensors)
    if (ends_with(t.name, suffix)) return t;
  throw std::out_of_range("unit " + name + " has no tensor " + suffix);
}

void add_tensor(UnitLayout& u, const std::string& name, std::vector<std::int64_t> shape,
                bool decay, bool gemm, int part) {
  TensorSpec t;
  t.name = name;
  t.shape = std::move(shape);
  t.numel = 1;
  for (auto d : t.shape) t.numel *= d;
  t.offset = u.numel;
  t.decay = decay;
  t.gemm = gemm;
  t.part = part;
  u.numel += t.numel;
  u.tensors.push_back(std::move(t));
}

UnitCut unit_cut(const std::string& fsdp_unit) {
  if (fsdp_unit == "block") return UnitCut::Block;
  if (fsdp_unit == "sublayer") return UnitCut::Sublayer;
  throw std::invalid_argument("fsdp.unit: '" + fsdp_unit + "' is not block or sublayer");
}

std::int64_t grad_origin(const UnitLayout& u) {
  std::int64_t o = u.numel;
  for (const TensorSpec& t : u.tensors)
    if (t.trainable && t.offset < o) o = t.offset;
  return o;
}

std::int64_t total_numel(const std::vector<UnitLayout>& units) {
  std::int64_t n = 0;
  for (const UnitLayout& u : units) n += u.numel;
  return n;
}

}  // namespace fsdp
