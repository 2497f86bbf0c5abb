// SPDX-License-Identifier: MIT
#include "comm/device_mesh.hpp"

#include <algorithm>

#include "comm/null_communicator.hpp"
#include "comm/owned_comm.hpp"
#include "comm/process_groups.hpp"
#include "core/check.hpp"

namespace fsdp::comm {

GroupFactory host_groups(MpiOptions options) {
  return [options](MPI_Comm comm, const MeshGroup& g, std::string& path) {
    MpiOptions o = options;
    o.name = g.name;
    path.clear();
    return make_communicator(comm, std::move(o));
  };
}

// Every dimension gets a communicator of its own even where two have the same ranks (shard and
// world at replicate 1): collectives on different groups may be in flight together, and each
// communicator's shared-memory window serves one at a time.
std::vector<MeshGroup> DeviceMesh::wanted(const MeshShape& shape,
                                          const std::vector<MeshGroup>& extra) {
  std::vector<MeshGroup> out{MeshGroup::world()};
  for (MeshDim d : {MeshDim::Shard, MeshDim::Replicate, MeshDim::Context, MeshDim::Tensor,
                    MeshDim::Expert})
    out.push_back(MeshGroup::of(d, shape.expert));
  for (const MeshGroup& g : extra) {
    if (const std::string why = shape.check(g); !why.empty()) fatal("comm::DeviceMesh: " + why);
    bool twice = false;
    for (std::size_t i = 1 + kMeshDims; i < out.size(); ++i)
      twice = twice || (out[i].name == g.name && shape.same(out[i], g));
    if (!twice) out.push_back(g);
  }
  return out;
}

DeviceMesh DeviceMesh::without_transport(const MeshShape& shape,
                                         const std::vector<MeshGroup>& extra, int rank,
                                         StepLog* log) {
  if (const std::string why = shape.check(shape.world()); !why.empty())
    fatal("comm::DeviceMesh: " + why);
  if (rank < 0 || rank >= shape.world())
    fatal("comm::DeviceMesh: rank " + std::to_string(rank) + " outside a mesh of " +
          std::to_string(shape.world()));
  DeviceMesh m;
  m.shape_ = shape;
  m.rank_ = rank;
  for (const MeshGroup& g : wanted(shape, extra)) {
    const std::vector<int> members = shape.members(rank, g);
    const int position = int(std::find(members.begin(), members.end(), rank) - members.begin());
    m.made_.push_back({g, std::make_unique<NullCommunicator>(position, members, g.name, log)});
  }
  return m;
}

DeviceMesh::DeviceMesh(MPI_Comm world, const MeshShape& shape, const std::vector<MeshGroup>& extra,
                       const GroupFactory& make)
    : shape_(shape) {
  int n = 0;
  FSDP_MPI_CHECK(MPI_Comm_rank(world, &rank_));
  FSDP_MPI_CHECK(MPI_Comm_size(world, &n));
  if (const std::string why = shape.check(n); !why.empty()) fatal("comm::DeviceMesh: " + why);
  for (const MeshGroup& g : wanted(shape, extra)) {
    std::string path;
    Made m{g, nullptr};
    if (g.name == "world") {
      m.comm = make(world, g, path);
    } else {
      MPI_Comm raw = MPI_COMM_NULL;
      FSDP_MPI_CHECK(MPI_Comm_split(world, shape.color(rank_, g), rank_, &raw));
      const OwnedComm part = OwnedComm::adopt(raw);
      m.comm = make(part.get(), g, path);
    }
    if (!path.empty()) paths_.push_back(path);
    made_.push_back(std::move(m));
  }
}

DeviceMesh::DeviceMesh(DeviceMesh&&) noexcept = default;
DeviceMesh& DeviceMesh::operator=(DeviceMesh&&) noexcept = default;
DeviceMesh::~DeviceMesh() = default;

// The group of that name first (shard is not world at replicate 1), then any with its ranks.
Communicator* DeviceMesh::find(const MeshGroup& g) const {
  for (const Made& m : made_)
    if (m.group.name == g.name && shape_.same(m.group, g)) return m.comm.get();
  for (const Made& m : made_)
    if (shape_.same(m.group, g)) return m.comm.get();
  return nullptr;
}

Communicator& DeviceMesh::group(const MeshGroup& g) const {
  Communicator* c = find(g);
  if (!c)
    fatal("comm::DeviceMesh: no group '" + g.name + "' of " + std::to_string(shape_.size(g)) +
          " ranks was made for the mesh " + shape_.describe());
  return *c;
}

void DeviceMesh::set_check_collectives(bool on) {
  for (Made& m : made_) m.comm->set_check_collectives(on);
}

}  // namespace fsdp::comm
