// SPDX-License-Identifier: MIT
#include "comm/mesh_shape.hpp"

namespace fsdp::comm {
namespace {

struct Coords {
  int r, hi, lo, c, t;
};

Coords coords(const MeshShape& m, int rank, int inner) {
  const int s = rank / (m.context * m.tensor) % m.shard;
  return {rank / (m.shard * m.context * m.tensor), s / inner, s % inner,
          rank / m.tensor % m.context, rank % m.tensor};
}

int rank_of(const MeshShape& m, const Coords& x, int inner) {
  return ((x.r * m.shard + x.hi * inner + x.lo) * m.context + x.c) * m.tensor + x.t;
}

}  // namespace

const char* dim_name(MeshDim d) {
  switch (d) {
    case MeshDim::Replicate: return "replicate";
    case MeshDim::Shard: return "shard";
    case MeshDim::Context: return "context";
    case MeshDim::Tensor: return "tensor";
    case MeshDim::Expert: return "expert";
  }
  return "?";
}

MeshGroup MeshGroup::of(MeshDim d, int expert) {
  switch (d) {
    case MeshDim::Replicate: return {Replicate, 1, "replicate"};
    case MeshDim::Shard: return {ShardHi | ShardLo, 1, "shard"};
    case MeshDim::Context: return {Context, 1, "context"};
    case MeshDim::Tensor: return {Tensor, 1, "tensor"};
    case MeshDim::Expert: return {ShardLo, expert, "expert"};
  }
  return {};
}

MeshGroup MeshGroup::product(const std::vector<MeshDim>& dims) {
  MeshGroup g;
  for (MeshDim d : dims) {
    if (d == MeshDim::Expert) return {0, -1, "expert in a product"};  // refused by check()
    g.axes |= of(d).axes;
    g.name += (g.name.empty() ? "" : " x ") + std::string(dim_name(d));
  }
  return g;
}

MeshGroup MeshGroup::world() {
  return {Replicate | ShardHi | ShardLo | Context | Tensor, 1, "world"};
}
// A k that does not divide S leaves the cut at 0, which check() refuses.
MeshGroup MeshGroup::part_shard(int S, int k) {
  return {ShardLo, k > 0 && S % k == 0 ? S / k : 0, "part shard"};
}
MeshGroup MeshGroup::part_replicate(int S, int k) {
  return {Replicate | ShardHi, k > 0 && S % k == 0 ? S / k : 0, "part replicate"};
}
MeshGroup MeshGroup::expert_slice(int P) { return {ShardHi, P, "expert slice"}; }

int MeshShape::size(MeshDim d) const {
  switch (d) {
    case MeshDim::Replicate: return replicate;
    case MeshDim::Shard: return shard;
    case MeshDim::Context: return context;
    case MeshDim::Tensor: return tensor;
    case MeshDim::Expert: return expert;
  }
  return 1;
}

int MeshShape::size(const MeshGroup& g) const {
  int n = 1;
  if (g.axes & MeshGroup::Replicate) n *= replicate;
  if (g.axes & MeshGroup::ShardHi) n *= shard / g.inner;
  if (g.axes & MeshGroup::ShardLo) n *= g.inner;
  if (g.axes & MeshGroup::Context) n *= context;
  if (g.axes & MeshGroup::Tensor) n *= tensor;
  return n;
}

int MeshShape::coord(int rank, MeshDim d) const {
  const Coords x = coords(*this, rank, expert);
  switch (d) {
    case MeshDim::Replicate: return x.r;
    case MeshDim::Shard: return x.hi * expert + x.lo;
    case MeshDim::Context: return x.c;
    case MeshDim::Tensor: return x.t;
    case MeshDim::Expert: return x.lo;
  }
  return 0;
}

// The group's lowest world rank: the coordinates it varies set to 0.
int MeshShape::color(int rank, const MeshGroup& g) const {
  Coords x = coords(*this, rank, g.inner);
  if (g.axes & MeshGroup::Replicate) x.r = 0;
  if (g.axes & MeshGroup::ShardHi) x.hi = 0;
  if (g.axes & MeshGroup::ShardLo) x.lo = 0;
  if (g.axes & MeshGroup::Context) x.c = 0;
  if (g.axes & MeshGroup::Tensor) x.t = 0;
  return rank_of(*this, x, g.inner);
}

std::vector<int> MeshShape::members(int rank, const MeshGroup& g) const {
  std::vector<int> out;
  const int mine = color(rank, g);
  for (int q = 0; q < world(); ++q)
    if (color(q, g) == mine) out.push_back(q);
  return out;
}

std::string MeshShape::check(int world_ranks) const {
  for (MeshDim d : {MeshDim::Replicate, MeshDim::Shard, MeshDim::Context, MeshDim::Tensor,
                    MeshDim::Expert})
    if (size(d) < 1)
      return std::string("the mesh's ") + dim_name(d) + " dimension is " +
             std::to_string(size(d)) + " (must be >= 1)";
  if (world() != world_ranks)
    return "the mesh " + describe() + " has " + std::to_string(world()) + " ranks, the job " +
           std::to_string(world_ranks);
  if (shard % expert != 0)
    return "the expert dimension (" + std::to_string(expert) +
           ") does not divide the shard dimension (" + std::to_string(shard) + ")";
  return "";
}

MeshGroup MeshShape::normal(const MeshGroup& g) const {
  MeshGroup n = g;
  bool hi = n.axes & MeshGroup::ShardHi, lo = n.axes & MeshGroup::ShardLo;
  if (shard == 1) hi = lo = false;
  else if (n.inner == shard) hi = lo;  // hi has one value: lo is the whole shard coordinate
  else if (n.inner == 1) lo = hi;      // lo has one value: hi is the whole shard coordinate
  if (hi == lo) n.inner = 1;
  n.axes &= ~unsigned(MeshGroup::ShardHi | MeshGroup::ShardLo);
  n.axes |= (hi ? unsigned(MeshGroup::ShardHi) : 0u) | (lo ? unsigned(MeshGroup::ShardLo) : 0u);
  if (replicate == 1) n.axes &= ~unsigned(MeshGroup::Replicate);
  if (context == 1) n.axes &= ~unsigned(MeshGroup::Context);
  if (tensor == 1) n.axes &= ~unsigned(MeshGroup::Tensor);
  return n;
}

bool MeshShape::same(const MeshGroup& a, const MeshGroup& b) const {
  const MeshGroup x = normal(a), y = normal(b);
  return x.axes == y.axes && x.inner == y.inner;
}

std::string MeshShape::check(const MeshGroup& g) const {
  if (g.inner == -1) return "the expert dimension cannot be part of a product of dimensions";
  if (g.inner < 1 || shard % g.inner != 0)
    return "group '" + g.name + "' does not cut the shard dimension (" + std::to_string(shard) +
           ") into equal groups";
  return "";
}

std::string MeshShape::describe() const {
  std::string d = "replicate " + std::to_string(replicate) + " x shard " + std::to_string(shard);
  if (context > 1) d += " x context " + std::to_string(context);
  if (tensor > 1) d += " x tensor " + std::to_string(tensor);
  if (expert > 1) d += " (expert " + std::to_string(expert) + " inside shard)";
  return d;
}

}  // namespace fsdp::comm
