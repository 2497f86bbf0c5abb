// SPDX-License-Identifier: MIT
#include "comm/device_mesh.hpp"

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

DeviceMesh::DeviceMesh(MPI_Comm world, const MeshShape& shape, const std::vector<MeshGroup>& extra,
                       const GroupFactory& make)
    : shape_(shape) {
  int n = 0;
  FSDP_MPI_CHECK(MPI_Comm_rank(world, &rank_));
  FSDP_MPI_CHECK(MPI_Comm_size(world, &n));
  if (const std::string why = shape.check(n); !why.empty()) fatal("comm::DeviceMesh: " + why);
  // Every dimension gets a communicator of its own even where two have the same ranks (shard
  // and world at replicate 1): collectives on different groups may be in flight together, and
  // each communicator's shared-memory window serves one at a time.
  std::vector<MeshGroup> wanted{MeshGroup::world()};
  for (MeshDim d : {MeshDim::Shard, MeshDim::Replicate, MeshDim::Context, MeshDim::Tensor,
                    MeshDim::Expert})
    wanted.push_back(MeshGroup::of(d, shape.expert));
  for (const MeshGroup& g : extra) {
    if (const std::string why = shape.check(g); !why.empty()) fatal("comm::DeviceMesh: " + why);
    bool twice = false;
    for (std::size_t i = 1 + kMeshDims; i < wanted.size(); ++i)
      twice = twice || (wanted[i].name == g.name && shape.same(wanted[i], g));
    if (!twice) wanted.push_back(g);
  }
  for (const MeshGroup& g : wanted) {
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
