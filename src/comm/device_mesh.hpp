// SPDX-License-Identifier: MIT
// The run's device mesh as an object: built once from its shape (comm/mesh_shape.hpp), it owns
// one communicator per group, and code asks it for a group by dimension (or a product of
// dimensions, or a part's group) instead of building one. Which backend each group gets (host
// MPI, NCCL, MPI on device buffers) is the factory's decision (comm/training_groups.hpp), so
// the mesh is the same object in a CPU and a GPU build.
#pragma once
#include <mpi.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/mesh_shape.hpp"
#include "comm/mpi_communicator.hpp"
#include "core/step_log.hpp"

namespace fsdp::comm {

// Makes the communicator of group g over `comm` (a split holding exactly its ranks; the
// backend takes its own duplicate). path: the group's line for the log, or "" for none.
using GroupFactory =
    std::function<std::unique_ptr<Communicator>(MPI_Comm comm, const MeshGroup& g, std::string& path)>;

// Host communicators (make_communicator) named after their groups, logging nothing.
GroupFactory host_groups(MpiOptions options = {});

class DeviceMesh {
 public:
  DeviceMesh() = default;
  // Collective over world: the world, each of the five dimensions, and `extra` groups (a part's
  // groups, the expert slices), each made once by `make`. A shape that is not a mesh of the
  // world is fatal, as is an extra group it cannot cut.
  DeviceMesh(MPI_Comm world, const MeshShape& shape, const std::vector<MeshGroup>& extra,
             const GroupFactory& make);
  // World rank `rank`'s mesh of the same groups, each a NullCommunicator (moves nothing): the
  // planner's run of the engine for one rank of a job it does not have. log: where every group
  // issues the collectives it is handed (core/step_log.hpp), or null.
  static DeviceMesh without_transport(const MeshShape& shape, const std::vector<MeshGroup>& extra,
                                      int rank, StepLog* log = nullptr);
  DeviceMesh(DeviceMesh&&) noexcept;
  DeviceMesh& operator=(DeviceMesh&&) noexcept;
  ~DeviceMesh();

  const MeshShape& shape() const { return shape_; }
  int rank() const { return rank_; }  // in the world
  Communicator& world() const { return group(MeshGroup::world()); }
  Communicator& group(MeshDim d) const { return group(MeshGroup::of(d, shape_.expert)); }
  // A group made at construction (fatal for one that was not: a collective cannot be made here).
  Communicator& group(const MeshGroup& g) const;
  Communicator* find(const MeshGroup& g) const;
  // The group lines of the log, world first, for every group the factory described.
  const std::vector<std::string>& paths() const { return paths_; }
  void set_check_collectives(bool on);

 private:
  struct Made {
    MeshGroup group;
    std::unique_ptr<Communicator> comm;
  };
  // The world, the five dimensions and the extra groups not already among them.
  static std::vector<MeshGroup> wanted(const MeshShape& shape, const std::vector<MeshGroup>& extra);
  MeshShape shape_;
  int rank_ = 0;
  std::vector<Made> made_;
  std::vector<std::string> paths_;
};

}  // namespace fsdp::comm
