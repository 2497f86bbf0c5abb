// SPDX-License-Identifier: MIT
// `fsdp-bench machine`: measures what the planner needs about this machine (GEMM rate per rank,
// intra-node all-gather/reduce-scatter/all-reduce bus bandwidth and latency, across nodes the
// busbw and per-hop latency of a job-wide group, memory bandwidth) with every rank busy at
// once, and writes them as an fsdp-machine/1 file.
#pragma once
#include <mpi.h>

#include <string>

namespace fsdp::bench {

struct MachineBenchOptions {
  std::string out = "machine.json";
  double comm_bytes = 16.0 * (1 << 20);  // full buffer per rank for the bandwidth figures
  int iters = 10;
  // Ranks per node; 0: those that share memory. Nodes are consecutive ranks (block placement).
  int ranks_per_node = 0;
  // A run deck: calibrate gemm_efficiency on its model (all ranks at once, one micro-batch's
  // forward and backward each, every kernel included). Empty: efficiency 1 of the 1024^3 rate.
  std::string calibrate;
  // fsdp.offload = nvme: a node-local directory whose disk is measured (bench/disk_bench.hpp),
  // with this many bytes per rank written and read back. Empty: not measured.
  std::string offload_path;
  double disk_bytes = double(std::int64_t(1) << 30);
};

int run_machine_bench(MPI_Comm world, const MachineBenchOptions& o);

}  // namespace fsdp::bench
