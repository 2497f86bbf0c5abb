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

TEST_CASE("comm.backend auto and mpi: one host line per group, in order") {
  for (const char* backend : {"auto", "mpi"}) {
    CAPTURE(backend);
    const auto lines = plan_host_groups(backend, 6, 3);
    REQUIRE(lines.size() == 3);
    REQUIRE(has(lines[0], "world (6 ranks): mpi (host memory): "));
    REQUIRE(has(lines[1], "shard (3 ranks): mpi (host memory): "));
    REQUIRE(has(lines[2], "replicate (2 ranks): mpi (host memory): "));
    REQUIRE(has(lines[0], "this build computes on the CPU"));
  }
  const auto whole = plan_host_groups("auto", 4, 0);  // 0: the shard group is the world
  REQUIRE(has(whole[1], "shard (4 ranks)"));
  REQUIRE(has(whole[2], "replicate (1 rank)"));
}

TEST_CASE("comm.backend nccl or a misspelling: a one-line refusal naming the key") {
  try {
    plan_host_groups("nccl", 2, 0);
    FAIL("nccl was accepted on a CPU build");
  } catch (const BackendError& e) {
    const std::string what = e.what();
    REQUIRE(has(what, "comm.backend=nccl needs a GPU on every rank of group 'world' (2 ranks)"));
    REQUIRE(what.find('\n') == std::string::npos);
  }
  REQUIRE_THROWS_WITH(plan_host_groups("NCCL", 2, 0),
                      "comm.backend must be auto, nccl or mpi; got 'NCCL'");
}
