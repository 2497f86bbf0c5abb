// SPDX-License-Identifier: MIT
#include "plan/time_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <unordered_map>

#include "plan/counted_step.hpp"

namespace fsdp::plan {
namespace {

struct GroupShape {
  int n = 1;         // ranks
  int per_node = 1;  // of them on one node
  int nodes = 1;     // nodes the group spans
};

// Ranks are placed in blocks of ranks_per_node; shard groups are consecutive ranks and
// replicate groups take every shard_group-th rank (comm/mesh_shape.hpp). A part on 1/k of
// the shard group (placement p) has groups of the same shape over its own sizes.
GroupShape group_shape(const Setup& s, Group g, int placement) {
  const int rpn = s.ranks_per_node(), S = s.part_shard_group(placement);
  GroupShape gs;
  switch (g) {
    case Group::Shard:
      gs.n = S;
      gs.per_node = std::min(S, rpn);
      break;
    case Group::Replicate:
      gs.n = s.part_replicate_group(placement);
      gs.per_node = S >= rpn ? 1 : std::min(gs.n, rpn / S);
      break;
    case Group::Expert:  // consecutive ranks, like a shard group
      gs.n = s.choices.expert_slices();
      gs.per_node = std::min(gs.n, rpn);
      break;
    case Group::World:
    case Group::Pcie:
    case Group::Disk:
      gs.n = s.ranks;
      gs.per_node = rpn;
      break;
  }
  gs.nodes = (gs.n + gs.per_node - 1) / gs.per_node;
  return gs;
}

// A logged group's shape, from its members under block placement (ranks_per_node a node).
GroupShape shape_of(const Setup& s, const LoggedGroup& g) {
  const int rpn = s.ranks_per_node();
  std::unordered_map<int, int> on_node;  // node -> members there
  for (int r : g.members) ++on_node[r / rpn];
  GroupShape gs;
  gs.n = int(g.members.size());
  gs.nodes = int(on_node.size());
  gs.per_node = 0;
  for (const auto& kv : on_node) gs.per_node = std::max(gs.per_node, kv.second);
  return gs;
}

double bus_factor(Coll op, int n) {
  const double f = double(n - 1) / double(n);
  return op == Coll::AllReduce ? 2.0 * f : f;
}

double intra_busbw(const Machine& m, Coll op) {
  switch (op) {
    case Coll::AllGather:
    case Coll::AllToAll:  // as many bytes per rank as an all-gather; no measured rate of its own
      return m.intra_allgather_busbw;
    case Coll::ReduceScatter: return m.intra_reducescatter_busbw;
    default: return m.intra_allreduce_busbw;
  }
}

// Seconds of one transfer over a group of shape gs (network collectives), or over PCIe or the
// rank's share of the disk.
double transfer_seconds(const Setup& s, const Machine& m, Coll op, const GroupShape& gs,
                        double bytes) {
  if (op == Coll::HostToDevice || op == Coll::DeviceToHost)  // no PCIe: one shared memory
    return m.pcie_bandwidth > 0 ? bytes / m.pcie_bandwidth : 0.0;
  if (op == Coll::DiskRead || op == Coll::DiskWrite) {
    // Every rank of the node streams its own file at once: each gets its share of the disk.
    const double node = op == Coll::DiskRead ? m.disk_read_bandwidth : m.disk_write_bandwidth;
    if (node <= 0)
      throw std::runtime_error("machine " + m.name + " has no disk_" +
                               (op == Coll::DiskRead ? "read" : "write") +
                               "_bandwidth: fsdp-bench machine --offload-path DIR measures it");
    return bytes * double(s.ranks_per_node()) / node;
  }
  if (gs.n == 1) {
    // SingleCommunicator: an all-gather or reduce-scatter is a local copy; an all-reduce is
    // nothing at all.
    return op == Coll::AllReduce ? 0.0 : 2.0 * bytes / m.mem_bandwidth;
  }
  double bw = intra_busbw(m, op);
  double latency = m.latency_s;
  if (gs.nodes > 1) {
    if (m.inter_node_busbw <= 0)
      throw std::runtime_error("machine " + m.name +
                               " has no inter_node_busbw (measured on one node): a plan over " +
                               std::to_string(s.nodes) + " nodes cannot be predicted");
    // Every rank of a node runs the same collective at once: the node's network is shared by
    // rpn / per_node groups. A ring through the node also crosses its NVLink (per_node > 1).
    const double net = m.inter_node_busbw * double(gs.per_node) / double(s.ranks_per_node());
    bw = gs.per_node > 1 ? std::min(bw, net) : net;
    latency += (gs.nodes - 1) * m.inter_node_latency_s;
  }
  if (bw <= 0) throw std::runtime_error("machine " + m.name + " has no bus bandwidth for " + to_string(op));
  return latency + bus_factor(op, gs.n) * bytes / bw;
}

double emulated_transfer(const Machine& m, Coll op, int n, double bytes) {
  if (!m.emulated() || op == Coll::HostToDevice || op == Coll::DeviceToHost ||
      op == Coll::DiskRead || op == Coll::DiskWrite)
    return 0.0;
  const double bus = n == 1 ? bytes : bus_factor(op, n) * bytes;  // comm/communicator.cpp
  return m.emulate_latency_s + (m.emulate_busbw > 0 ? bus / m.emulate_busbw : 0.0);
}

// AdamW's memory traffic per element of the shard: the norm reads the gradients, the update
// reads the fp32 parameters, gradients and both moments and writes parameters and moments
// (plus the bf16 working copy).
double optimizer_bytes_per_element(const Setup& s) {
  const ElementBytes b = element_bytes(s);
  double per_elem = 2 * double(b.grad) + 2 * 4.0 + 2 * double(b.optimizer);
  if (s.precision == Precision::BF16) per_elem += b.param;
  return per_elem;
}

// A logged event on the steady step's timeline; lead >= 0 for a transfer the previous step
// issued that this one waits for, with that fraction of the previous optimizer's passes still
// to go: the gathers its optimizer issued for this step (fsdp.prefetch_across_steps), which are
// this step's, and its last disk writes, which are still queued and are the previous step's
// (`own` false: they take the queue's time, not this step's bytes).
struct Timed {
  const LoggedEvent* e;
  double lead = -1.0;
  bool own = true;
};

// The log's second step, preceded by what the first one's optimizer issued for it: the
// transfers issued in the first step that the second one waits for.
std::vector<Timed> steady_step(const StepLog& log) {
  const std::vector<LoggedEvent>& before = log.events(0);
  const std::vector<LoggedEvent>& step = log.events(1);
  std::unordered_map<int, bool> waited;  // handles the second step waits for
  for (const LoggedEvent& e : step)
    if (e.kind == LoggedEvent::Wait) waited[e.handle] = true;
  double total = 0.0;
  for (const LoggedEvent& e : before)
    if (e.kind == LoggedEvent::Optimizer && e.moments) total += e.elements;
  std::vector<Timed> out;
  double done = 0.0;  // optimizer elements updated so far in the first step
  for (const LoggedEvent& e : before) {
    if (e.kind == LoggedEvent::Optimizer && e.moments) done += e.elements;
    if (e.kind == LoggedEvent::Issue && waited.count(e.handle))
      out.push_back({&e, total > 0 ? (total - done) / total : 0.0, e.group >= 0});
  }
  for (const LoggedEvent& e : step) out.push_back({&e, -1.0, true});
  return out;
}

}  // namespace

double collective_seconds(const Setup& s, const Machine& m, Coll op, Group g, double bytes,
                          int placement) {
  return transfer_seconds(s, m, op, group_shape(s, g, placement), bytes);
}

double emulated_seconds(const Setup& s, const Machine& m, Coll op, Group g, double bytes,
                        int placement) {
  return emulated_transfer(m, op, group_shape(s, g, placement).n, bytes);
}

TimePlan plan_time(const Setup& s, const Machine& m) {
  const CountedStep run = count_step(s, 0);
  return plan_time(s, m, *run.log);
}

TimePlan plan_time(const Setup& s, const Machine& m, const StepLog& log) {
  const std::vector<Timed> events = steady_step(log);
  const bool bf16 = s.bf16_gemms;  // the GEMMs run at the bf16 rate only when they are bf16
  TimePlan r;
  r.peak_flops = m.peak_flops(bf16);
  r.achieved_flops = r.peak_flops * m.gemm_efficiency;
  if (r.achieved_flops <= 0) throw std::runtime_error("machine " + m.name + " has no GEMM rate");
  if (s.offload != Offload::None && m.host_mem_bandwidth <= 0)
    throw std::runtime_error("machine " + m.name + " has no host_mem_bandwidth: offload cannot be predicted");

  std::vector<GroupShape> shapes;
  for (const LoggedGroup& g : log.groups()) shapes.push_back(shape_of(s, g));
  // Time-sliced ranks (more ranks than cores on a node) do their own work that much slower.
  const double slice = m.oversubscription(s.ranks_per_node());
  const double per_element = optimizer_bytes_per_element(s);
  // Passes that only apply what an earlier one computed (Muon's apply) are small beside the
  // pass over the moments: not charged.
  auto optimizer_seconds = [&](const LoggedEvent& e) {
    if (!e.moments) return 0.0;
    return slice * e.elements * per_element / (e.on_host ? m.host_mem_bandwidth : m.mem_bandwidth);
  };
  // Steady state: a gather the previous step's optimizer issued (lead >= 0) started that
  // fraction of the optimizer before this step did.
  double optimizer_s = 0.0;
  for (const Timed& t : events)
    if (t.lead < 0 && t.e->kind == LoggedEvent::Optimizer) optimizer_s += optimizer_seconds(*t.e);
  double t = 0.0;                       // the compute stream's clock
  // Network, PCIe, the disk's queue: when each is next idle. All are idle through the last
  // optimizer, where carried gathers start.
  double link_free[3] = {-optimizer_s, -optimizer_s, -optimizer_s};
  std::unordered_map<int, double> done;  // handle -> completion
  std::unordered_map<int, int> channel;  // handle -> 0 network, 1 PCIe, 2 disk
  double recompute_flops = 0.0;
  for (const Timed& te : events) {
    const LoggedEvent& e = *te.e;
    switch (e.kind) {
      case LoggedEvent::Compute: {
        const double dt = slice * e.flops / r.achieved_flops;
        const double dr = slice * e.recompute_flops / r.achieved_flops;
        r.compute_s += dt;
        r.recompute_s += dr;
        recompute_flops += e.recompute_flops;
        t += dt + dr;
        break;
      }
      case LoggedEvent::Issue: {
        const bool disk = e.op == Coll::DiskRead || e.op == Coll::DiskWrite;
        // PCIe copies and disk requests: queues of their own beside the network, one at a time.
        const bool off_network = e.group < 0;
        const int ch = disk ? 2 : off_network ? 1 : 0;
        const GroupShape gs = off_network ? GroupShape{} : shapes[std::size_t(e.group)];
        double real = transfer_seconds(s, m, e.op, gs, e.bytes);
        if (!m.comm_overlaps_compute) real *= slice;  // the copies run on the sliced cores
        const double emu = off_network ? 0.0 : emulated_transfer(m, e.op, gs.n, e.bytes);
        const double lead = te.lead >= 0 ? te.lead * optimizer_s : 0.0;
        double end;
        if (!off_network && !m.comm_overlaps_compute) {
          // The data moves on this rank's core at issue; the emulated delay runs from issue.
          // A carried gather's copies ran inside the last optimizer instead: the same core
          // time, counted here where the step waits for them.
          const double issued = t - lead;
          t += real;
          r.comm_exposed_s += real;
          end = std::max(t, issued + emu);
        } else {
          double start = t - lead;
          if (e.after >= 0) start = std::max(start, done[e.after]);
          if (m.serialize_collectives || off_network) start = std::max(start, link_free[ch]);
          const double end_real = start + real;
          if (m.serialize_collectives || off_network) link_free[ch] = end_real;
          end = std::max(end_real, t - lead + emu);
        }
        done[e.handle] = end;
        channel[e.handle] = ch;
        if (!te.own) break;
        if (disk) {
          r.disk_busy_s += real;
          (e.op == Coll::DiskRead ? r.disk_read_bytes : r.disk_write_bytes) += e.bytes;
        }
        if (!off_network) {
          r.comm_busy_s += real;
          r.comm_bytes += e.bytes;
          if (e.op == Coll::AllGather) ++r.all_gathers;
          if (e.op == Coll::ReduceScatter) ++r.reduce_scatters;
          if (e.op == Coll::AllReduce) ++r.all_reduces;
        }
        break;
      }
      case LoggedEvent::Wait: {
        const auto it = done.find(e.handle);
        if (it == done.end()) break;  // issued before the steady step and not carried into it
        const double end = it->second;
        if (end > t) {
          const int ch = channel[e.handle];
          (ch == 2 ? r.disk_exposed_s : ch == 1 ? r.offload_exposed_s : r.comm_exposed_s) += end - t;
          t = end;
        }
        break;
      }
      case LoggedEvent::Optimizer: {
        const double dt = optimizer_seconds(e);
        r.optimizer_s += dt;
        t += dt;
        break;
      }
    }
  }
  r.step_s = t;
  const double T = s.model.block_size;
  r.tokens_per_step = double(s.global_batch()) * T;
  r.tokens_per_s = r.tokens_per_step / r.step_s;
  r.tokens_per_s_per_rank = r.tokens_per_s / s.ranks;
  r.model_flops_per_token = architecture_of(s.model).flops_per_token(s.model);
  const double tokens_per_rank = r.tokens_per_step / s.ranks;
  r.hardware_flops_per_token = r.model_flops_per_token + recompute_flops / tokens_per_rank;
  r.mfu = r.tokens_per_s * r.model_flops_per_token / (s.ranks * r.peak_flops);
  r.model_tflops_per_rank = r.tokens_per_s_per_rank * r.model_flops_per_token / 1e12;
  r.hardware_tflops_per_rank = r.tokens_per_s_per_rank * r.hardware_flops_per_token / 1e12;
  r.scaling_efficiency = (r.step_s - r.comm_exposed_s) / r.step_s;
  return r;
}

std::vector<std::string> time_assumptions(const Setup& s, const Machine& m) {
  std::vector<std::string> a;
  auto fmt = [](double v, const char* unit) {
    char buf[64];
    std::snprintf(buf, sizeof buf, *unit ? "%.4g %s" : "%.4g", v, unit);
    return std::string(buf);
  };
  const bool bf16 = s.bf16_gemms;  // the GEMMs run at the bf16 rate only when they are bf16
  a.push_back("machine " + m.name + ": " + m.notes);
  a.push_back("compute at " + fmt(m.peak_flops(bf16) * m.gemm_efficiency / 1e12, "TFLOP/s") +
              " per rank (" + (bf16 ? "bf16" : "fp32") + " peak " +
              fmt(m.peak_flops(bf16) / 1e12, "TFLOP/s") + " x GEMM efficiency " +
              fmt(m.gemm_efficiency, "") + ")");
  const Architecture& arch = architecture_of(s.model);
  a.push_back("model FLOPs per token " + arch.flops_formula +
              (s.activation_checkpointing() ? "; checkpointing recomputes " + arch.recompute_formula
                                          : std::string()));
  const double slice = m.oversubscription(s.ranks_per_node());
  if (slice > 1.0)
    a.push_back(std::to_string(s.ranks_per_node()) + " ranks share " +
                std::to_string(m.cores_per_node) + " cores per node: each rank's compute, " +
                "optimizer and on-core transfers run " + fmt(slice, "x") + " slower");
  if (s.choices.expert_parallel > 1 && s.model.n_experts > 0)
    a.push_back("expert parallelism " + std::to_string(s.choices.expert_parallel) +
                ": tokens routed evenly, each sparse layer's all-to-alls send (P - 1) / P of its N k "
                "rows each way, twice in forward and twice in backward (checkpointing: the forward's "
                "again)" + (s.deterministic ? ", and deterministic mode sends each expert's gradients home" : "") +
                "; the dispatch buffers are counted at their worst case, every row of P ranks to one");
  a.push_back(std::string("collectives: latency + busfactor x bytes / busbw, ") +
              (m.serialize_collectives ? "one at a time on the link" : "each from its own issue") +
              (m.comm_overlaps_compute ? ", overlapping compute until waited for"
                                       : ", the transfer on the rank's own core at issue"));
  if (m.emulated())
    a.push_back("link emulation: " + fmt(m.emulate_latency_s * 1e6, "us") + " + bus bytes / " +
                fmt(m.emulate_busbw / 1e9, "GB/s") + " per collective");
  a.push_back("AdamW memory-bound at " + fmt((s.offload != Offload::None ? m.host_mem_bandwidth : m.mem_bandwidth) / 1e9, "GB/s") +
              (s.offload != Offload::None ? " (host)" : " (device)"));
  if (s.precision == Precision::BF16 || s.reduce_bf16)
    a.push_back("bf16 is modelled with bf16 kernels, as on a GPU (docs/planner.md); a CPU "
                "build stores bf16 but computes in fp32, and fp32 is what the tracker checks "
                "byte for byte");
  if (s.offload == Offload::Nvme)
    a.push_back("nvme offload: each rank's share of the node's disk, reads at " +
                fmt(m.disk_read_bandwidth / 1e9, "GB/s") + " and writes at " +
                fmt(m.disk_write_bandwidth / 1e9, "GB/s") + " per node, one request at a time "
                "per rank; parameter shards " + (s.offload_params ? "read ahead of their gathers"
                                                                  : "stay on the device"));
  if (s.offload != Offload::None)
    a.push_back("offloaded AdamW runs on the host at " + fmt(m.host_mem_bandwidth / 1e9, "GB/s") +
                "; host<->device copies at " +
                (m.pcie_bandwidth > 0 ? fmt(m.pcie_bandwidth / 1e9, "GB/s") : std::string("no cost (one memory)")));
  return a;
}

}  // namespace fsdp::plan
