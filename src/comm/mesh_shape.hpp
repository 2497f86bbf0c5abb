// SPDX-License-Identifier: MIT
// The run's device mesh as a definition, with no MPI: named dimensions, their sizes, where each
// rank sits, and which ranks form each group. comm/device_mesh.hpp makes the communicators from
// it; the planner and the tests ask it without any. The idea of PyTorch's DeviceMesh and
// torchtitan's ParallelDims, with fsdp's own order:
//
//   rank = ((replicate_i * shard + shard_i) * context + context_i) * tensor + tensor_i
//
// outermost first, so the innermost dimensions (tensor, then context) are consecutive ranks,
// on one node under block placement, and the world size is their product. `expert` is not a
// factor of the world: it is carved out of the shard dimension (torchtitan's dp2ep), P
// consecutive shard positions sharing one layer's experts. With context = tensor = 1 the
// shard groups are the consecutive runs of `shard` ranks and the replicate groups the ranks
// with the same rank % shard, the groups fsdp has always had.
#pragma once
#include <string>
#include <vector>

namespace fsdp::comm {

enum class MeshDim { Replicate, Shard, Context, Tensor, Expert };
inline constexpr int kMeshDims = 5;
const char* dim_name(MeshDim d);

// A group of the mesh: the ranks that differ only along the axes it varies. The shard
// dimension is cut in two at `inner` (shard_i = hi * inner + lo), so that the groups carved
// out of it (the experts, a part sharded over 1/k of the shard group) are groups like the
// others: expert = lo at inner P; the expert slices = hi at inner P; a part's shard group =
// lo at inner S/k, its replicate group = replicate and hi at inner S/k.
struct MeshGroup {
  enum Axis : unsigned { Replicate = 1, ShardHi = 2, ShardLo = 4, Context = 8, Tensor = 16 };
  unsigned axes = 0;
  int inner = 1;  // the size of ShardLo (divides the shard dimension)
  std::string name;

  static MeshGroup of(MeshDim d, int expert = 1);  // one named dimension
  // The product of dimensions (e.g. shard x context, torchtitan's dp_shard_cp): Expert may not
  // take part in a product.
  static MeshGroup product(const std::vector<MeshDim>& dims);
  static MeshGroup world();
  // A part sharded over 1/k of the shard group (model/placement.hpp) at shard size S: its shard
  // and replicate groups; the slices of a part divided by the experts, P of them.
  static MeshGroup part_shard(int S, int k);
  static MeshGroup part_replicate(int S, int k);
  static MeshGroup expert_slice(int P);
};

struct MeshShape {
  int replicate = 1, shard = 1, context = 1, tensor = 1;
  int expert = 1;  // inside shard: divides it

  int world() const { return replicate * shard * context * tensor; }
  int size(MeshDim d) const;
  int size(const MeshGroup& g) const;
  int coord(int rank, MeshDim d) const;  // Expert: the position inside the expert group
  // The world ranks of `rank`'s group g, ascending (the order of the group's own ranks), and a
  // number that is equal for the ranks of one group and differs between groups (MPI's colour).
  std::vector<int> members(int rank, const MeshGroup& g) const;
  int color(int rank, const MeshGroup& g) const;
  // g with its cut of the shard dimension resolved where it does not matter (both halves or
  // neither, a half of size 1), so that two groups with the same members compare equal.
  MeshGroup normal(const MeshGroup& g) const;
  bool same(const MeshGroup& a, const MeshGroup& b) const;
  // "" or why this shape is not a mesh of `world` ranks (a size below 1, a product that is not
  // the world, an expert dimension that does not divide the shard one, a cut that does not).
  std::string check(int world_ranks) const;
  std::string check(const MeshGroup& g) const;
  // "replicate 2 x shard 2" and, for the dimensions above 1, "x context 2", "x tensor 2",
  // "(expert 2 inside shard)".
  std::string describe() const;
};

}  // namespace fsdp::comm
