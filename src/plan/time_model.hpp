// SPDX-License-Identifier: MIT
// The planner's time model: the engine's own step, counted without data (plan/counted_step.hpp),
// run on a timeline with the machine's rates: the collectives, copies, disk requests, compute
// and optimizer passes its log holds (core/step_log.hpp), in the engine's order, each wait
// where the engine waits. Compute stages take their model FLOPs (6P + 12LTC per token, plus the
// forward recompute under activation checkpointing) at peak * gemm_efficiency; a collective
// takes latency + busfactor * bytes / busbw on one link at a time and overlaps the compute
// until the stage that needs it waits; AdamW takes its memory traffic / memory bandwidth.
// What the compute waits for is the exposed communication. No MPI.
#pragma once
#include <string>
#include <vector>

#include "plan/machine.hpp"
#include "core/step_log.hpp"
#include "plan/memory_model.hpp"

namespace fsdp::plan {

using Coll = fsdp::Transfer;
// The kinds of group the closed-form helpers below price (the timeline itself prices each
// logged group from its members). Expert: fsdp.expert_parallel's P consecutive ranks.
enum class Group { Shard, Replicate, World, Pcie, Disk, Expert };

struct TimePlan {
  // Seconds per step on one rank.
  double step_s = 0.0;
  double compute_s = 0.0;     // model FLOPs at the achieved GEMM rate (recompute excluded)
  double recompute_s = 0.0;   // activation checkpointing's second forward of every block
  double comm_exposed_s = 0.0;  // network collectives the compute waited for (or carried)
  double comm_busy_s = 0.0;     // time the links were busy with this rank's collectives
  double optimizer_s = 0.0;     // AdamW (and the gradient norm) over the rank's shard
  double offload_exposed_s = 0.0;  // host<->device copies the step waited for
  // fsdp.offload = nvme: this rank's offload file per step, the time its queue was busy, and
  // what the step waited for it. The disk's bound on the step is max(compute, disk_busy_s).
  double disk_read_bytes = 0.0, disk_write_bytes = 0.0;
  double disk_busy_s = 0.0, disk_exposed_s = 0.0;

  // Per step.
  int all_gathers = 0, reduce_scatters = 0, all_reduces = 0;  // scalar all-reduces included
  double comm_bytes = 0.0;  // full buffer bytes of every network collective

  // Rates.
  double tokens_per_step = 0.0;        // global
  double tokens_per_s = 0.0;           // global
  double tokens_per_s_per_rank = 0.0;
  double model_flops_per_token = 0.0;     // 6P + 12LTC, as fsdp-train's MFU counts them
  double hardware_flops_per_token = 0.0;  // plus the recompute
  double peak_flops = 0.0;                // per rank, MFU's denominator
  double achieved_flops = 0.0;            // per rank: peak * gemm_efficiency
  double mfu = 0.0;                       // model FLOP/s over N * peak
  double model_tflops_per_rank = 0.0;
  double hardware_tflops_per_rank = 0.0;  // the convention that counts the recompute
  // The step's fraction not lost to exposed communication: 1 on a network that costs nothing.
  // Weak scaling efficiency against a rank that never waits on the network.
  double scaling_efficiency = 0.0;
};

// Throws std::invalid_argument for a setup that cannot run, std::runtime_error when the
// machine lacks a rate the setup needs (no inter-node bandwidth for a multi-node plan). A
// machine without a PCIe rate moves offloaded data for free (a CPU build: one memory).
TimePlan plan_time(const Setup& s, const Machine& m);
// The same from steps the engine already logged (count_step's two; the second is timed).
TimePlan plan_time(const Setup& s, const Machine& m, const StepLog& log);

// Seconds one collective of `bytes` (the full buffer) takes on group g of setup s: latency plus
// busfactor * bytes / busbw. A group spanning nodes runs at min(intra-node busbw, the node's
// network busbw shared by the groups running at once on the node), with an extra latency per
// node. A group of one rank copies locally. Host<->device copies (Group::Pcie) take
// bytes / pcie_bandwidth; disk reads and writes (Group::Disk) bytes over the rank's share of the
// node's disk bandwidth. Excludes link emulation.
// placement: for Group::Shard and Group::Replicate, the part whose groups they are
// (RunSetup::part_shard_group).
double collective_seconds(const Setup& s, const Machine& m, Coll op, Group g, double bytes,
                          int placement = 0);
// The emulated link's delay for the same collective (0 when not emulated).
double emulated_seconds(const Setup& s, const Machine& m, Coll op, Group g, double bytes,
                        int placement = 0);

// The assumptions behind a prediction, one line each, for the CLI and the docs.
std::vector<std::string> time_assumptions(const Setup& s, const Machine& m);

}  // namespace fsdp::plan
