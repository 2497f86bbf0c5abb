// SPDX-License-Identifier: MIT
// The machine the planner predicts for: per-rank compute and memory rates, collective bus
// bandwidths and latencies, as datasheet presets (A100, H100, H200) or as the JSON file that
// fsdp-bench writes after measuring this machine. No MPI here: the planner runs anywhere.
#pragma once
#include <string>
#include <vector>

namespace fsdp::plan {

// Every rate is per rank (one GPU, or one core in a CPU build), in SI units: FLOP/s, bytes/s,
// seconds, bytes. Bus bandwidths are nccl-tests' busbw: a collective over n ranks of a B-byte
// buffer takes latency + busfactor * B / busbw with busfactor (n-1)/n for all-gather and
// reduce-scatter and 2(n-1)/n for all-reduce.
struct Machine {
  std::string name;
  std::string notes;  // where the numbers come from

  // Compute. peak_* is the datasheet (or measured) dense GEMM rate: MFU's denominator.
  // gemm_efficiency is the fraction of it the training GEMMs achieve (non-GEMM kernels, small
  // shapes and launch gaps included), so compute runs at peak * gemm_efficiency.
  double peak_flops_bf16 = 0.0;
  double peak_flops_fp32 = 0.0;
  double gemm_efficiency = 1.0;

  // Memory.
  double device_memory_bytes = 0.0;  // capacity per rank (0 = unknown)
  double mem_bandwidth = 0.0;        // device memory, bytes/s (AdamW is bound by it)
  double host_mem_bandwidth = 0.0;   // host memory per rank, bytes/s (offloaded optimizer)
  double pcie_bandwidth = 0.0;       // host<->device per rank, bytes/s (offload transfers);
                                     // 0 = host and device share one memory (a CPU build)
  // The node-local disk under fsdp.offload = nvme, bytes/s per node (its ranks share it), as
  // fsdp-bench machine --offload-path measures with direct I/O; 0 = not measured.
  double disk_read_bandwidth = 0.0;
  double disk_write_bandwidth = 0.0;

  // Cores a node's ranks share (a CPU build). More ranks than cores are time-sliced: each rank's
  // compute, optimizer and on-core transfers take ranks_per_node / cores_per_node times longer.
  // 0: one core (or GPU) per rank.
  int cores_per_node = 0;

  // Communication.
  int ranks_per_node = 1;
  double intra_allgather_busbw = 0.0;      // one node, all its ranks in the group
  double intra_reducescatter_busbw = 0.0;
  double intra_allreduce_busbw = 0.0;
  double inter_node_busbw = 0.0;     // a group spanning nodes with every rank of each node in it:
                                     // about the node's aggregate network bandwidth
  double latency_s = 0.0;            // per collective (software + first hop)
  double inter_node_latency_s = 0.0;  // added per node of a ring that spans nodes
  // Real links carry one collective at a time (NCCL on one stream: a FIFO). The emulated link
  // of comm.emulate_* delays each collective from its own issue time, so they overlap.
  bool serialize_collectives = true;
  // GPUs run collectives on their own stream (or copy engines) beside the compute. A CPU build
  // moves the data on the rank's own core at issue (the shared-memory path), so there the
  // transfer itself delays the compute and only the emulated link's extra delay can overlap.
  bool comm_overlaps_compute = true;

  // comm.emulate_latency_us / comm.emulate_gbps, as the communicator applies them: a collective
  // completes no earlier than issue + latency + bus_bytes / bandwidth, where bus_bytes is the
  // whole buffer on a group of one rank.
  double emulate_latency_s = 0.0;
  double emulate_busbw = 0.0;  // bytes/s; 0 = off
  bool emulated() const { return emulate_latency_s > 0.0 || emulate_busbw > 0.0; }

  double peak_flops(bool bf16) const { return bf16 ? peak_flops_bf16 : peak_flops_fp32; }
  // How much slower each rank's own work runs when `ranks_on_node` ranks share the cores.
  double oversubscription(int ranks_on_node) const {
    return cores_per_node > 0 && ranks_on_node > cores_per_node
               ? double(ranks_on_node) / double(cores_per_node)
               : 1.0;
  }
};

// "a100" (A100-SXM4-80GB, DGX A100), "h100" (H100-SXM5-80GB, DGX H100), "h200" (H200-SXM-141GB).
// Throws std::invalid_argument for an unknown name.
Machine machine_preset(const std::string& name);
std::vector<std::string> machine_preset_names();

// The JSON file fsdp-bench writes (schema "fsdp-machine/1"). Rates in SI units (bytes/s, not
// GB/s: a bandwidth below 1e6 bytes/s is rejected as a likely GB/s slip):
//   {
//     "schema": "fsdp-machine/1",
//     "name": "this-host",                      (optional)
//     "gemm_flops_per_rank": 1.1e11,            FLOP/s of one rank's 1024^3 float GEMM
//     "intra_node_allgather_busbw": 6.0e9,      bytes/s, nccl-tests busbw, all ranks of a node
//     "intra_node_reducescatter_busbw": 5.0e9,  bytes/s
//     "latency_s": 2.0e-5,                      seconds, a small collective on the node
//     "inter_node_busbw": 0,                    bytes/s across nodes; 0 or absent = not measured
//                                                (single node): multi-node plans then refuse
//     "mem_bandwidth": 1.5e10,                  bytes/s, per rank (a STREAM-like triad)
//   optional:
//     "ranks_per_node": 2, "cores_per_node": 2, "intra_node_allreduce_busbw": ...,
//     "inter_node_latency_s": ...,
//     "gemm_flops_per_rank_bf16": ..., "gemm_efficiency": 1.0, "device_memory_bytes": ...,
//     "host_mem_bandwidth": ..., "pcie_bandwidth": ...,
//     "disk_read_bandwidth": ..., "disk_write_bandwidth": ...   (bytes/s per node; nvme offload)
//     "comm_overlaps_compute": false            (default false: a CPU build copies at issue)
//   }
// A CPU build measures float GEMMs, so the bf16 rate defaults to the float one. gemm_efficiency
// defaults to 1 (the rate is already measured). Unknown keys are ignored (forward compatible);
// a missing required key or a bad value throws std::runtime_error naming the key.
Machine machine_from_json_text(const std::string& text, const std::string& source = "<json>");
Machine machine_from_json_file(const std::string& path);
// A preset name, or else a JSON file path.
Machine load_machine(const std::string& name_or_path);

// The machine as seen through comm.emulate_latency_us / comm.emulate_gbps (0 leaves it as is).
Machine with_link_emulation(Machine m, double latency_us, double gbps);

// The JSON text of a machine in the schema above (round-trips through machine_from_json_text).
std::string machine_to_json(const Machine& m);

}  // namespace fsdp::plan
