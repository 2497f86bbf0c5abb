// SPDX-License-Identifier: MIT
// comm.backend in a CPU build: the same decision as on GPUs (comm/backend_plan.hpp) with "no GPU"
// facts. auto and mpi give every group the host path and say so in one line; nccl is refused by
// name before any communicator exists, on every rank alike (no MPI here: the plan is pure).
#include <catch2/catch.hpp>

#include "comm/training_groups.hpp"

using namespace fsdp::comm;

namespace {
bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}
}  // namespace

TEST_CASE("comm.backend auto and mpi: one host line per group") {
  for (const char* backend : {"auto", "mpi"}) {
    CAPTURE(backend);
    REQUIRE(has(plan_host_group(backend, "world", 6), "world (6 ranks): mpi (host memory): "));
    REQUIRE(has(plan_host_group(backend, "shard", 3), "shard (3 ranks): mpi (host memory): "));
    REQUIRE(has(plan_host_group(backend, "replicate", 2), "replicate (2 ranks): mpi (host memory): "));
    REQUIRE(has(plan_host_group(backend, "world", 6), "this build computes on the CPU"));
  }
  REQUIRE(has(plan_host_group("auto", "replicate", 1), "replicate (1 rank)"));
}

TEST_CASE("which groups' paths are logged") {
  REQUIRE(logs_path(MeshGroup::world(), 1));
  REQUIRE(logs_path(MeshGroup::of(MeshDim::Replicate), 1));
  REQUIRE(logs_path(MeshGroup::of(MeshDim::Shard), 1));
  REQUIRE_FALSE(logs_path(MeshGroup::of(MeshDim::Context), 1));
  REQUIRE(logs_path(MeshGroup::of(MeshDim::Context), 2));
  REQUIRE(logs_path(MeshGroup::of(MeshDim::Expert, 2), 2));
  REQUIRE_FALSE(logs_path(MeshGroup::expert_slice(2), 1));
}

TEST_CASE("comm.backend nccl or a misspelling: a one-line refusal naming the key") {
  try {
    plan_host_group("nccl", "world", 2);
    FAIL("nccl was accepted on a CPU build");
  } catch (const BackendError& e) {
    const std::string what = e.what();
    REQUIRE(has(what, "comm.backend=nccl needs a GPU on every rank of group 'world' (2 ranks)"));
    REQUIRE(what.find('\n') == std::string::npos);
  }
  REQUIRE_THROWS_WITH(plan_host_group("NCCL", "world", 2),
                      "comm.backend must be auto, nccl or mpi; got 'NCCL'");
}
