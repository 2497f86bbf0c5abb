// SPDX-License-Identifier: MIT
// The device mesh's definition (comm/mesh_shape.hpp) against groups written out by hand, and
// against the formulas fsdp's groups had before the mesh was an object (consecutive shard
// groups, replicate groups by rank % shard, a part's groups on 1/k of the shard group, expert
// groups of P consecutive ranks and their slices), so that every run keeps its groups.
#include <catch2/catch.hpp>

#include <vector>

#include "comm/mesh_shape.hpp"

using namespace fsdp::comm;
using V = std::vector<int>;

namespace {

MeshShape shape(int r, int s, int c = 1, int t = 1, int e = 1) {
  MeshShape m;
  m.replicate = r;
  m.shard = s;
  m.context = c;
  m.tensor = t;
  m.expert = e;
  return m;
}

// The world ranks q for which key(q) == key(rank), ascending.
template <class Key>
V by_key(int n, int rank, Key key) {
  V out;
  for (int q = 0; q < n; ++q)
    if (key(q) == key(rank)) out.push_back(q);
  return out;
}

}  // namespace

TEST_CASE("np 4 as replicate 1 x shard 2 x context 2, expert 2 inside shard") {
  const MeshShape m = shape(1, 2, 2, 1, 2);
  REQUIRE(m.check(4).empty());
  // rank = shard_i * 2 + context_i
  CHECK(m.members(0, MeshGroup::of(MeshDim::Shard)) == V{0, 2});
  CHECK(m.members(1, MeshGroup::of(MeshDim::Shard)) == V{1, 3});
  CHECK(m.members(2, MeshGroup::of(MeshDim::Context)) == V{2, 3});
  CHECK(m.members(3, MeshGroup::of(MeshDim::Replicate)) == V{3});
  CHECK(m.members(3, MeshGroup::of(MeshDim::Tensor)) == V{3});
  CHECK(m.members(1, MeshGroup::of(MeshDim::Expert, 2)) == V{1, 3});
  CHECK(m.members(1, MeshGroup::expert_slice(2)) == V{1});
  CHECK(m.members(2, MeshGroup::product({MeshDim::Shard, MeshDim::Context})) == V{0, 1, 2, 3});
  CHECK(m.members(2, MeshGroup::world()) == V{0, 1, 2, 3});
  CHECK(m.coord(3, MeshDim::Shard) == 1);
  CHECK(m.coord(3, MeshDim::Context) == 1);
  CHECK(m.coord(2, MeshDim::Context) == 0);
  CHECK(m.size(MeshGroup::product({MeshDim::Shard, MeshDim::Context})) == 4);
  CHECK(m.describe() == "replicate 1 x shard 2 x context 2 (expert 2 inside shard)");
}

TEST_CASE("np 8 as replicate 2 x shard 2 x tensor 2, expert 2 inside shard") {
  const MeshShape m = shape(2, 2, 1, 2, 2);
  REQUIRE(m.check(8).empty());
  // rank = (replicate_i * 2 + shard_i) * 2 + tensor_i
  CHECK(m.members(5, MeshGroup::of(MeshDim::Tensor)) == V{4, 5});
  CHECK(m.members(5, MeshGroup::of(MeshDim::Shard)) == V{5, 7});
  CHECK(m.members(5, MeshGroup::of(MeshDim::Replicate)) == V{1, 5});
  CHECK(m.members(5, MeshGroup::product({MeshDim::Replicate, MeshDim::Shard})) == V{1, 3, 5, 7});
  CHECK(m.members(6, MeshGroup::of(MeshDim::Expert, 2)) == V{4, 6});
}

TEST_CASE("the groups fsdp had before the mesh, at every world and shard size up to 16") {
  for (int n = 1; n <= 16; ++n)
    for (int S = 1; S <= n; ++S) {
      if (n % S != 0) continue;
      const MeshShape m = shape(n / S, S);
      REQUIRE(m.check(n).empty());
      for (int r = 0; r < n; ++r) {
        CAPTURE(n, S, r);
        CHECK(m.members(r, MeshGroup::of(MeshDim::Shard)) == by_key(n, r, [&](int q) { return q / S; }));
        CHECK(m.members(r, MeshGroup::of(MeshDim::Replicate)) ==
              by_key(n, r, [&](int q) { return q % S; }));
        for (int k = 2; k <= S; ++k) {  // a part on 1/k of the shard group
          if (S % k != 0) continue;
          const int sp = S / k;
          CHECK(m.members(r, MeshGroup::part_shard(S, k)) == by_key(n, r, [&](int q) { return q / sp; }));
          CHECK(m.members(r, MeshGroup::part_replicate(S, k)) ==
                by_key(n, r, [&](int q) { return (q % S) % sp; }));
        }
        for (int P = 2; P <= S; ++P) {  // expert parallelism inside the shard group
          if (S % P != 0) continue;
          MeshShape e = m;
          e.expert = P;
          REQUIRE(e.check(n).empty());
          CHECK(e.members(r, MeshGroup::of(MeshDim::Expert, P)) == by_key(n, r, [&](int q) { return q / P; }));
          CHECK(e.members(r, MeshGroup::expert_slice(P)) ==
                by_key(n, r, [&](int q) { return (q / S) * P + (q % S) % P; }));
          CHECK(e.coord(r, MeshDim::Expert) == r % P);
        }
      }
    }
}

TEST_CASE("groups with the same ranks compare equal, and shapes that are not a mesh are refused") {
  const MeshShape m = shape(2, 4);
  CHECK(m.same(MeshGroup::part_shard(4, 1), MeshGroup::of(MeshDim::Shard)));
  CHECK(m.same(MeshGroup::part_replicate(4, 1), MeshGroup::of(MeshDim::Replicate)));
  CHECK(m.same(MeshGroup::part_replicate(4, 4), MeshGroup::world()));
  CHECK_FALSE(m.same(MeshGroup::part_shard(4, 2), MeshGroup::expert_slice(2)));
  CHECK(m.size(MeshGroup::part_shard(4, 4)) == 1);
  CHECK(m.check(8).empty());
  CHECK(m.check(6) == "the mesh replicate 2 x shard 4 has 8 ranks, the job 6");
  CHECK(shape(1, 4, 1, 1, 3).check(4) ==
        "the expert dimension (3) does not divide the shard dimension (4)");
  CHECK(shape(1, 0).check(0) == "the mesh's shard dimension is 0 (must be >= 1)");
  CHECK(m.check(MeshGroup::part_shard(4, 3)) ==
        "group 'part shard' does not cut the shard dimension (4) into equal groups");
  CHECK(m.check(MeshGroup::product({MeshDim::Shard, MeshDim::Expert})) ==
        "the expert dimension cannot be part of a product of dimensions");
}
