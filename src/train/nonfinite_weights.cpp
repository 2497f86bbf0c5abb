// SPDX-License-Identifier: MIT
#include "train/nonfinite_weights.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/check.hpp"

namespace fsdp {

std::string first_nonfinite_param(Engine& engine, MPI_Comm world) {
  // The first non-finite element as (unit, flat offset) packed into one integer, so one MIN
  // reduction finds it over every rank; the value travels in a second reduction.
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kUnitStride = std::int64_t(1) << 40;  // a unit holds fewer elements
  std::int64_t mine = kNone;
  float value = 0.f;
  for (int u = 0; u < int(engine.units().size()) && mine == kNone; ++u) {
    const ShardedUnit& su = engine.units()[std::size_t(u)];
    const std::vector<float> v = engine.param_shard(u).values();
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i])) {
        mine = std::int64_t(u) * kUnitStride + su.flat_of(std::int64_t(i));
        value = v[i];
        break;
      }
  }
  std::int64_t first = kNone;
  FSDP_MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT64_T, MPI_MIN, world));
  if (first == kNone) return {};
  // The owner's value (a NaN or a signed infinity); the others send 0 and the sum keeps it.
  double v = mine == first ? double(value) : 0.0, found = 0.0;
  FSDP_MPI_CHECK(MPI_Allreduce(&v, &found, 1, MPI_DOUBLE, MPI_SUM, world));
  const int u = int(first / kUnitStride);
  const std::int64_t flat = first % kUnitStride;
  const UnitLayout& layout = *engine.units()[std::size_t(u)].stored;
  for (const TensorSpec& t : layout.tensors)
    if (flat >= t.offset && flat < t.offset + t.numel) {
      // The element's index in the tensor's own (row-major) shape, as a user would look it up.
      std::int64_t rest = flat - t.offset;
      std::vector<std::int64_t> index(t.shape.size(), 0);
      for (std::size_t d = t.shape.size(); d-- > 0;) {
        index[d] = t.shape[d] > 0 ? rest % t.shape[d] : 0;
        rest = t.shape[d] > 0 ? rest / t.shape[d] : rest;
      }
      std::string at;
      for (std::size_t d = 0; d < index.size(); ++d) at += (d ? ", " : "") + std::to_string(index[d]);
      return t.name + "[" + at + "] is " + (std::isnan(found) ? "nan" : found > 0 ? "inf" : "-inf");
    }
  return "unit " + layout.name + " element " + std::to_string(flat) + " (padding) is not finite";
}

}  // namespace fsdp
