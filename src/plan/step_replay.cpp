// SPDX-License-Identifier: MIT
// Over 400 lines on purpose: one class that replays a whole step (construction, both passes,
// the reductions, deterministic mode, the optimizer) in the order the engine runs them, so the
// replay can be read beside fsdp/step.cpp.
#include "plan/step_replay.hpp"

#include "core/offload_file.hpp"
#include "fsdp/canonical_tree.hpp"
#include "fsdp/gather_window.hpp"
#include "fsdp/optim/muon_owners.hpp"
#include "fsdp/optim/optimizer_layout.hpp"
#include "fsdp/part_layout.hpp"
#include "fsdp/schedule.hpp"
#include "model/architecture.hpp"
#include "model/experts/capacity.hpp"
#include "fsdp/optim/newton_schulz.hpp"

#include <algorithm>

namespace fsdp::plan {
namespace {

using C = MemCategory;
constexpr MemSpace kDev = MemSpace::Device;
constexpr MemSpace kHost = MemSpace::Host;


std::vector<std::int64_t> padded_units(const RunLayout& layout) {
  std::vector<std::int64_t> p;
  for (int u = 0; u < int(layout.units.size()); ++u) p.push_back(layout.padded(u));
  return p;
}

class Replay {
 public:
  Replay(const Setup& s, int max_micro, int rank)
      : s_(s),
        layout_(place_units(s, model_units(s.model))),
        rank_(rank),
        n_micro_(max_micro > 0 ? std::min(max_micro, s.micro_batches()) : s.micro_batches()),
        b_(element_bytes(s)),
        strategy_(s.strategy),
        k_(s.prefetch),
        nshard_(s.shard_group()),
        sharded_(shards_params(s.strategy)),
        offload_(s.offload != Offload::None),
        nvme_(s.offload == Offload::Nvme),
        params_disk_(s.params_on_disk()),
        window_(padded_units(layout_), s.prefetch),
        head_unit_(architecture_of(s.model).head_unit(s.model)),
        flops_(architecture_of(s.model).unit_flops(s.model, s.micro_batch,
                                                   s.activation_checkpointing())),
        head_flops_(architecture_of(s.model).head_flops(s.model, s.micro_batch)) {
    for (int u = 0; u < int(layout_.units.size()); ++u) {
      numel_.push_back(layout_.units[std::size_t(u)].numel);
      padded_.push_back(layout_.padded(u));
      shard_.push_back(layout_.shard(u));
    }
    // Expert parallelism (model/decoder/moe_ep.cpp): per unit, the bytes one all-to-all of its
    // sparse layers sends from this rank, routing even: (P - 1) / P of the N k fp32 rows of C;
    // deterministic mode also sends every expert's gradients home once per micro-batch.
    const ModelConfig& m = s.model;
    const int P = m.expert_slices();
    for (int u = 0; u < int(layout_.units.size()); ++u) {
      std::int64_t experts = 0, expert_numel = 0;
      for (const TensorSpec& t : layout_.units[std::size_t(u)].tensors)
        if (s.placements[std::size_t(t.part)].by_expert) {
          ++experts;
          expert_numel += t.numel;
        }
      const double layers = m.n_experts > 0 ? double(experts) / (3.0 * m.n_experts) : 0.0;
      const double share = double(P - 1) / P;
      // With bf16 GEMMs the dispatches move bf16 (kernels::bf16_dispatch): the mean exchange is
      // 3/4 of fp32's (a dispatch and a return each time).
      const double bytes = s.bf16_gemms && kernels::bf16_dispatch(P, m.n_embd) ? 3.0 : 4.0;
      exchange_.push_back(P > 1 ? bytes * layers * share * double(s.micro_batch) * m.block_size *
                                      m.experts_per_token * m.n_embd
                                : 0.0);
      grads_home_.push_back(P > 1 && m.moe_grads_home ? 4.0 * share * double(expert_numel) : 0.0);
    }
    // The optimizer's state as this rank holds it (fsdp/optim/optimizer_layout.hpp): under Muon the
    // packed second moments, and the exchange's owners and buffers (fsdp/optim/muon_owners.hpp).
    std::vector<int> positions;  // by placement
    for (std::size_t p = 0; p < s.placements.size(); ++p)
      positions.push_back(part_rank(s, int(p), rank).position);
    for (int u = 0; u < int(layout_.units.size()); ++u) {
      std::vector<int> pos;
      for (const UnitPart& part : layout_.parts[std::size_t(u)])
        pos.push_back(positions[std::size_t(part.placement)]);
      optim_.push_back(optimizer_layout(layout_, u, pos, s.muon_optimizer(), !nvme_));
    }
    if (s.muon_optimizer()) {
      owners_ = muon_owners(layout_, s.muon.ns_steps);
      muon_buffers_ = muon_buffers(layout_, owners_, positions, s.muon.ns_dtype == "bf16");
      positions_ = positions;
    }
    const std::size_t U = numel_.size();
    gathered_.assign(U, false);
    in_flight_.assign(U, false);
    gather_handle_.assign(U, {});
    staging_.assign(U, 0.0);
    upload_.assign(U, 0.0);
    grad_full_.assign(U, false);
    fresh_.assign(U, false);
    read_.assign(U, -1);
    held_.assign(U, false);
  }

  std::vector<StepEvent> run() {
    construct();
    train_step();
    return std::move(ev_);
  }

 private:
  // ---- events -------------------------------------------------------------------------------
  void allocate(C c, MemSpace sp, double bytes, int unit) {
    StepEvent e{StepEvent::Alloc};
    e.cat = c;
    e.space = sp;
    e.bytes = bytes;
    e.unit = unit;
    ev_.push_back(e);
  }
  void deallocate(C c, MemSpace sp, double bytes, int unit) {
    StepEvent e{StepEvent::Free};
    e.cat = c;
    e.space = sp;
    e.bytes = bytes;
    e.unit = unit;
    ev_.push_back(e);
  }
  int issue(Coll op, Group g, double bytes, int unit, int after = -1, int placement = 0) {
    StepEvent e{StepEvent::Issue};
    e.op = op;
    e.group = g;
    e.placement = placement;
    e.bytes = bytes;
    e.unit = unit;
    e.handle = next_handle_++;
    e.after = after;
    ev_.push_back(e);
    return e.handle;
  }
  void wait(int h, int unit) {
    StepEvent e{StepEvent::Wait};
    e.handle = h;
    e.unit = unit;
    ev_.push_back(e);
  }
  void blocking(Coll op, Group g, double bytes, int unit, int placement = 0) {
    wait(issue(op, g, bytes, unit, -1, placement), unit);
  }
  // The token exchanges inside unit u's compute: n all-to-alls (blocking, as the model's are).
  void expert_exchanges(int u, int n) {
    if (exchange_[std::size_t(u)] <= 0) return;
    for (int i = 0; i < n; ++i) blocking(Coll::AllToAll, Group::Expert, exchange_[std::size_t(u)], u);
  }
  void compute(double flops, double recompute, int unit) {
    StepEvent e{StepEvent::Compute};
    e.flops = flops;
    e.recompute_flops = recompute;
    e.unit = unit;
    ev_.push_back(e);
  }

  // ---- The model's and the Engine's constructors ---------------------------------------------------------
  // Offload (Engine::Engine): AdamW's moments live on the host with any offload; with
  // offload = params the parameter shard and the gradient shard do too. Full parameters and
  // full gradients (ddp, zero1, zero2) stay on the device.
  void construct() {
    allocate(C::Activations, kDev,
             double(b_.activation) *
                 double(activation_elements(s_.model, s_.micro_batch, s_.activation_checkpointing())),
             -1);
    // Decoder::use_bf16_gemms: the two bf16 casts of a GEMM's activation operands.
    if (s_.bf16_gemms) {
      const double cast = 2.0 * double(architecture_of(s_.model).bf16_scratch_elements(
                                    s_.model, s_.micro_batch));
      allocate(C::Activations, kDev, cast, -1);
      allocate(C::Activations, kDev, cast, -1);
      // The experts' bf16 dispatch buffers (decoder/moe_ep.cpp): sent [R, C], received [Rx, C].
      const ModelConfig& m = s_.model;
      const int P = m.expert_slices();
      if (m.n_experts > 0 && kernels::bf16_dispatch(P, m.n_embd)) {
        const std::int64_t R = std::int64_t(s_.micro_batch) * m.block_size * m.experts_per_token;
        const std::int64_t Rx = kernels::received_rows_bound(R, m.n_experts, P, float(m.moe_capacity_factor));
        allocate(C::Activations, kDev, 2.0 * double(R) * m.n_embd, -1);
        allocate(C::Activations, kDev, 2.0 * double(Rx) * m.n_embd, -1);
      }
    }
    const MemSpace optim_space = offload_ ? kHost : kDev;
    const MemSpace param_space = s_.offloads_params() ? kHost : kDev;
    for (std::size_t u = 0; u < numel_.size(); ++u) {
      const int ui = int(u);
      const double S = double(shard_[u]), P = double(padded_[u]);
      // Parameters: the fp32 shard (zero3, hybrid; under bf16 it is the master copy), or the
      // full working copy plus, under bf16, a separate fp32 master of the rank's shard.
      if (sharded_) {
        if (!params_disk_) allocate(C::ParamShard, param_space, 4 * S, ui);  // else on disk
      } else {
        allocate(C::ParamShard, kDev, b_.param * P, ui);
        if (b_.master > 0) allocate(C::ParamShard, optim_space, b_.master * S, ui);
      }
      // Gradients: the shard, or full gradients kept across the step (ddp, zero1).
      if (shards_grads(strategy_)) {
        allocate(C::Grads, param_space, b_.grad * S, ui);
      } else {
        allocate(C::Grads, kDev, b_.grad * P, ui);
        grad_full_[u] = true;
      }
      // AdamW's exp_avg and exp_avg_sq over the shard (nvme: in the offload file instead);
      // under Muon exp_avg is the matrices' momentum and exp_avg_sq AdamW's elements only.
      if (!nvme_) {
        allocate(C::OptimizerState, optim_space, 4 * S, ui);
        allocate(C::OptimizerState, optim_space, 4 * double(optim_[u].sq_size), ui);
      }
    }
    // nvme: GatherPipeline's read slots (parameter shards on disk) and ShardedOptimizer's three
    // I/O sets (parameters, both moments, and the gradients where they are on the device),
    // each an IoBuffer of the largest shard.
    if (nvme_) {
      double largest = 0.0;
      for (std::int64_t n : shard_) largest = std::max(largest, double(n));
      io_buffer_ = double(io_round(std::int64_t(4 * largest)) + kIoAlign);
      if (params_disk_) {
        slots_ = 2 * (k_ + 1);
        allocate(C::CommBuffers, kHost, slots_ * io_buffer_, -1);
      }
      const int per_set = 3 + (s_.offloads_params() ? 0 : 1);
      const double piece = std::min(largest, double(kStreamPiece));
      allocate(C::CommBuffers, kHost,
               3.0 * per_set * double(io_round(std::int64_t(4 * piece)) + kIoAlign), -1);
    }
    // AsyncCheckpointer's staging (io/checkpoint_staging.hpp): the writer rank's shards of the
    // parameters and both moments (the second packed under Muon) in host memory, from the
    // first save on.
    if (s_.checkpoint_staging) {  // the parts whose slices this rank writes
      double elems = 0.0;
      for (std::size_t u = 0; u < layout_.parts.size(); ++u)
        for (std::size_t k = 0; k < layout_.parts[u].size(); ++k) {
          const UnitPart& part = layout_.parts[u][k];
          if (part_rank(s_, part.placement, rank_).replica != 0) continue;
          double sq = double(part.shard());
          if (optim_[u].packed()) {
            sq = 0.0;
            for (const StateSegment& seg : optim_[u].segments)
              if (seg.part == int(k) && !seg.muon) sq += double(seg.n);
          }
          elems += 2.0 * double(part.shard()) + sq;
        }
      allocate(C::CheckpointStaging, kHost, 4 * elems, -1);
    }
    // MuonExchange: two send and two receive sets (a round in flight while the next is
    // packed), the owner's gathered matrices and Newton-Schulz's workspace.
    if (s_.muon_optimizer()) {
      const MuonBuffers& b = muon_buffers_;
      for (int k = 0; k < 2; ++k) {
        allocate(C::CommBuffers, kDev, 4.0 * double(b.send), -1);
        allocate(C::CommBuffers, kDev, 4.0 * double(b.gathered), -1);
      }
      allocate(C::CommBuffers, kDev, 4.0 * double(b.gathered), -1);
      allocate(C::CommBuffers, kDev, 4.0 * double(b.work), -1);
    }
    // ShardedOptimizer: offload = optimizer stages fp32 parameter and gradient shards through
    // two host sets, each sized to the largest shard.
    if (s_.offload == Offload::Optimizer) {
      double largest = 0.0;
      for (std::int64_t n : shard_) largest = std::max(largest, double(n));
      allocate(C::CommBuffers, kHost, 2 * 2 * 4 * largest, -1);
    }
  }

  // ---- GatherPipeline -----------------------------------------------------------------------
  void issue_gather(int u) {
    if (gathered_[u]) return;  // already gathered or in flight
    const double S = double(shard_[u]), P = double(padded_[u]);
    allocate(C::GatheredParams, kDev, b_.param * P, u);
    int after = -1;
    // An offloaded shard comes up over PCIe before it is gathered (free on a CPU build, where
    // host and device share one memory). A bf16 gather sends a bf16 cast of the fp32 shard,
    // staged in a device buffer until the gather completes.
    // Under bf16 the shard is cast on the host first, into a host buffer kept until the
    // gather lands, and half the bytes come up.
    // On disk (nvme, offload.params): the shard's read, posted ahead or now, comes first.
    const double lead = carried_lead(u);
    if (s_.offloads_params()) {
      // GatherPipeline::slot_for waits for the read on the issuing thread.
      if (params_disk_) wait(take_read(u, lead), u);
      if (s_.precision == Precision::BF16) {
        upload_[u] = b_.param * S;
        allocate(C::CommBuffers, kHost, upload_[u], u);
      }
      after = issue(Coll::HostToDevice, Group::Pcie, b_.param * S, u);
    }
    if (s_.precision == Precision::BF16) {
      staging_[u] = b_.param * S;
      allocate(C::CommBuffers, kDev, staging_[u], u);
    }
    // One all-gather per part, over the part's shard group.
    gather_handle_[u].clear();
    for (const UnitPart& part : layout_.parts[std::size_t(u)]) {
      gather_handle_[u].push_back(issue(Coll::AllGather, Group::Shard,
                                        b_.param * double(part.flat()), u, after, part.placement));
      ev_.back().carried_lead = lead;
    }
    gathered_[u] = true;
    in_flight_[u] = true;
  }

  // A gather the last optimizer issued (fsdp.prefetch_across_steps): the fraction of the
  // optimizer still to go when it did, right after updating unit u (units in index order);
  // -1 for any other gather.
  double carried_lead(int u) const {
    if (!carry_ || std::find(carried_.begin(), carried_.end(), u) == carried_.end()) return -1.0;
    double after_u = 0.0, all = 0.0;
    for (std::size_t v = 0; v < shard_.size(); ++v) {
      all += double(shard_[v]);
      if (int(v) > u) after_u += double(shard_[v]);
    }
    return all > 0 ? after_u / all : 0.0;
  }

  // ---- GatherPipeline's read slots (nvme, offload.params) -------------------------------------
  int free_slots() const {
    int used = 0;
    for (std::size_t u = 0; u < read_.size(); ++u) used += (read_[u] >= 0 || held_[u]) ? 1 : 0;
    return slots_ - used;
  }
  int post_read(int u) {
    return issue(Coll::DiskRead, Group::Disk, double(io_round(4 * shard_[std::size_t(u)])), u);
  }
  // slot_for: the read posted ahead, or one posted now (into a new slot if none is free).
  int take_read(int u, double lead) {
    int h = read_[std::size_t(u)];
    read_[std::size_t(u)] = -1;
    if (h < 0) {
      if (free_slots() == 0) {
        ++slots_;
        allocate(C::CommBuffers, kHost, io_buffer_, u);
      }
      h = post_read(u);
      ev_.back().carried_lead = lead;
    }
    held_[std::size_t(u)] = true;
    return h;
  }
  // read_ahead: the next k + 1 units past the issued gathers, in the schedule's order.
  void read_ahead() {
    if (!params_disk_) return;
    int reading = 0;
    for (int h : read_) reading += h >= 0 ? 1 : 0;
    for (int stage = window_.issued(); stage < window_.stages() && reading < k_ + 1; ++stage) {
      const int u = window_.unit(stage);
      if (gathered_[std::size_t(u)] || read_[std::size_t(u)] >= 0 || held_[std::size_t(u)]) continue;
      if (free_slots() == 0) return;
      read_[std::size_t(u)] = post_read(u);
      ++reading;
    }
  }

  // GatherPipeline::all_gather, through the same window policy (fsdp/gather_window.hpp).
  void acquire(int stage) {
    const int u = window_.unit(stage);
    if (!sharded_) return;
    if (window_.claim(stage)) issue_gather(u);
    if (in_flight_[u]) {
      for (int h : gather_handle_[u]) wait(h, u);
      in_flight_[u] = false;
      if (staging_[u] > 0) deallocate(C::CommBuffers, kDev, staging_[u], u);
      staging_[u] = 0;
      drop_upload(u);
      held_[std::size_t(u)] = false;
    }
    window_.prefetch(
        stage, [&](int v) { return bool(gathered_[std::size_t(v)]); },
        [&](int v) { issue_gather(v); });
    read_ahead();
  }

  void drop_upload(int u) {
    if (upload_[std::size_t(u)] > 0) deallocate(C::CommBuffers, kHost, upload_[std::size_t(u)], u);
    upload_[std::size_t(u)] = 0;
  }

  void release(int stage, bool keep = false) {
    if (!sharded_ || keep || window_.needed_soon(stage)) return;
    const int u = window_.unit(stage);
    deallocate(C::GatheredParams, kDev, b_.param * double(padded_[u]), u);
    gathered_[u] = false;
  }

  void finish_pipeline() {
    for (std::size_t u = 0; u < gathered_.size(); ++u) {
      if (in_flight_[u]) {
        for (int h : gather_handle_[u]) wait(h, int(u));
        in_flight_[u] = false;
        if (staging_[u] > 0) deallocate(C::CommBuffers, kDev, staging_[u], int(u));
        staging_[u] = 0;
      }
      drop_upload(int(u));
      if (gathered_[u]) {
        deallocate(C::GatheredParams, kDev, b_.param * double(padded_[u]), int(u));
        gathered_[u] = false;
      }
    }
    // drain_reads: the reads still in flight are waited for; every slot is free again.
    for (std::size_t u = 0; u < read_.size(); ++u) {
      if (read_[u] >= 0) wait(read_[u], int(u));
      read_[u] = -1;
      held_[u] = false;
    }
  }

  // ---- Engine: gradients and reductions -----------------------------------------------------
  struct Pending {
    int unit;
    std::vector<int> handles;  // one per part (ddp: one for the unit)
    double recv_bytes;
    bool first = false;  // the step's first reduction into the unit's gradient shard
  };

  void begin_unit_backward(int u) {
    for (std::size_t i = 0; i < pending_.size(); ++i)
      if (pending_[i].unit == u) {
        drain(pending_.size() - i - 1);
        break;
      }
    if (!grad_full_[u]) {
      allocate(C::Grads, kDev, b_.grad * double(padded_[u]), u);
      grad_full_[u] = true;
    }
  }

  void finish_unit_backward(int u, bool reduce_now) {
    if (!reduce_now) return;
    const double wire = wire_bytes() * double(padded_[u]);
    Pending p{u, {}, 0.0};
    if (strategy_ == Strategy::DDP) {
      p.handles.push_back(issue(Coll::AllReduce, Group::Replicate, wire, u));
    } else {
      // The step's first reduction into a gradient shard lands in it directly (no buffer),
      // unless the shard is in host memory (offload = params).
      p.first = shards_grads(strategy_) && fresh_[u];
      const bool direct = p.first && !s_.offloads_params();
      fresh_[u] = false;
      p.recv_bytes = direct ? 0.0 : b_.grad * double(shard_[u]);
      if (!direct) allocate(C::CommBuffers, kDev, p.recv_bytes, u);
      for (const UnitPart& part : layout_.parts[std::size_t(u)])
        p.handles.push_back(issue(Coll::ReduceScatter, Group::Shard,
                                  wire_bytes() * double(part.flat()), u, -1, part.placement));
    }
    pending_.push_back(p);
    drain(std::size_t(std::max(1, k_)));
  }

  void drain(std::size_t keep) {
    while (pending_.size() > keep) {
      const Pending p = pending_.front();
      pending_.erase(pending_.begin());
      for (int h : p.handles) wait(h, p.unit);
      if (strategy_ == Strategy::DDP) continue;
      const double S = double(shard_[p.unit]);
      for (const UnitPart& part : layout_.parts[std::size_t(p.unit)])
        if (part.replicate_group > 1)
          blocking(Coll::AllReduce, Group::Replicate, wire_bytes() * double(part.shard()), p.unit,
                   part.placement);
      // offload = params: the reduced shard goes down into the gradient shard on the host;
      // a later one of the step through a host buffer, added there.
      if (s_.offloads_params() && shards_grads(strategy_)) {
        if (!p.first) allocate(C::CommBuffers, kHost, b_.grad * S, p.unit);
        blocking(Coll::DeviceToHost, Group::Pcie, b_.grad * S, p.unit);
        if (!p.first) deallocate(C::CommBuffers, kHost, b_.grad * S, p.unit);
      }
      if (shards_grads(strategy_)) {
        deallocate(C::Grads, kDev, b_.grad * double(padded_[p.unit]), p.unit);
        grad_full_[p.unit] = false;
      }
      if (p.recv_bytes > 0) deallocate(C::CommBuffers, kDev, p.recv_bytes, p.unit);
    }
  }

  // Bytes per element a gradient reduction sends (fsdp.reduce_dtype).
  double wire_bytes() const { return s_.reduce_bf16 ? 2.0 : double(b_.grad); }

  // ---- Engine::micro_batch -----------------------------------------------------------------
  // Model FLOPs per stage as the architecture counts them (Architecture::unit_flops).
  void micro_batch(bool reduce_last) {
    const int U = int(numel_.size());
    const std::vector<Stage> fwd = forward_stages(U, head_unit_), bwd = backward_stages(U, head_unit_);
    const std::vector<bool> last = last_uses(bwd);
    sched_ = stage_units(fwd);
    for (int u : stage_units(bwd)) sched_.push_back(u);
    const int nf = int(fwd.size());
    const bool keep_fwd = !s_.reshard_after_forward;

    window_.begin(sched_);
    read_ahead();
    for (int i = 0; i < nf; ++i) {
      acquire(i);
      carry_ = false;  // only the step's first acquire takes over carried gathers
      const Stage st = fwd[std::size_t(i)];
      compute(st.head ? head_flops_.forward : flops_[std::size_t(st.unit)].forward, 0.0, st.unit);
      if (!st.head) expert_exchanges(st.unit, 2);
      release(i, keep_fwd);
    }
    if (prefetch_optimizer_) prefetch_state();
    for (int i = nf; i < int(sched_.size()); ++i) {
      const int u = sched_[i];
      const int b = i - nf;
      const Stage st = bwd[std::size_t(b)];
      acquire(i);
      begin_unit_backward(u);
      const UnitFlops& f = st.head ? head_flops_ : flops_[std::size_t(u)];
      compute(f.backward, f.recompute, u);
      if (!st.head) {
        expert_exchanges(u, s_.activation_checkpointing() ? 4 : 2);
        if (grads_home_[std::size_t(u)] > 0) blocking(Coll::AllToAll, Group::Expert, grads_home_[std::size_t(u)], u);
      }
      release(i);
      if (last[std::size_t(b)]) finish_unit_backward(u, reduce_last);
    }
    finish_pipeline();
  }

  // ---- Engine::train_step -------------------------------------------------------------------
  void train_step() {
    carry_ = sharded_ && k_ > 0 && s_.prefetch_across_steps;
    if (carry_) carried_ = window_.first_gathers(forward_schedule(int(numel_.size()), head_unit_));
    if (s_.deterministic) {
      tree_reduce_grads();
      // The step loss: every rank's micro-batch losses, one slot each.
      blocking(Coll::AllReduce, Group::World, 8.0 * s_.micro_batches() * s_.ranks, -1);
    } else {
      fresh_.assign(padded_.size(), true);
      for (int j = 0; j < n_micro_; ++j) {
        const bool last_micro = j + 1 == n_micro_;
        prefetch_optimizer_ = last_micro && nvme_ && !s_.params_on_disk();
        micro_batch(last_micro || (shards_grads(strategy_) && s_.accumulate_sharded));
      }
      drain(0);
      blocking(Coll::AllReduce, Group::World, 8.0, -1);  // the step's mean loss
    }
    optimizer_step();
  }

  // ---- Deterministic mode (engine_deterministic.cpp) ----------------------------------------
  // Each micro-batch's gradients go into fresh full buffers; sums along the canonical tree
  // keep one set per open level alive.
  void tree_accumulate(int lo, int hi) {
    if (hi - lo == 1) {
      for (std::size_t u = 0; u < padded_.size(); ++u) {
        const double P = b_.grad * double(padded_[u]);
        allocate(C::Grads, kDev, P, int(u));  // the new buffer exists before the old one goes
        if (grad_full_[u]) deallocate(C::Grads, kDev, P, int(u));
        grad_full_[u] = true;
      }
      micro_batch(false);
      return;  // the set moves out of the units: still allocated, held by the caller
    }
    const int mid = lo + (hi - lo) / 2;
    tree_accumulate(lo, mid);
    for (std::size_t u = 0; u < padded_.size(); ++u) grad_full_[u] = false;  // held as `left`
    tree_accumulate(mid, hi);
    for (std::size_t u = 0; u < padded_.size(); ++u) grad_full_[u] = false;  // held as `right`
    for (std::size_t u = 0; u < padded_.size(); ++u)
      deallocate(C::Grads, kDev, b_.grad * double(padded_[u]), int(u));  // `right`, added into `left`
  }

  // The nodes covering this rank's micro-batches, each summed by tree_accumulate and held; then
  // one all-to-all per node slot and unit (a send buffer, and the received slices kept); then,
  // per unit, the combination in place, the persistent gradients again (ddp, zero1) and, with
  // replicas, the all-gather of the slice over the replicate group.
  void tree_reduce_grads() {
    const int N = s_.ranks, G = n_micro_ * N;
    const std::vector<TreeNode> mine = canonical_cover(G, rank_ * n_micro_, (rank_ + 1) * n_micro_);
    for (const TreeNode& t : mine) {
      tree_accumulate(t.lo, t.hi);
      for (std::size_t u = 0; u < padded_.size(); ++u) grad_full_[u] = false;  // held as a node
    }
    const int rounds = max_cover(G, N);
    for (int k = 0; k < rounds; ++k)
      for (std::size_t u = 0; u < padded_.size(); ++u) {
        const double P = 4.0 * double(padded_[u]);
        allocate(C::CommBuffers, kDev, P, int(u));  // send
        if (k < int(mine.size())) deallocate(C::Grads, kDev, b_.grad * double(padded_[u]), int(u));
        allocate(C::CommBuffers, kDev, P, int(u));  // this rank's slices of round k, kept
        blocking(Coll::AllToAll, Group::World, P, int(u));
        deallocate(C::CommBuffers, kDev, P, int(u));
      }
    for (std::size_t u = 0; u < padded_.size(); ++u) {
      const double P = 4.0 * double(padded_[u]);
      if (!shards_grads(strategy_)) {
        allocate(C::Grads, kDev, b_.grad * double(padded_[u]), int(u));
        grad_full_[u] = true;
      }
      // offload = params: the shard is assembled on the device and goes down whole.
      const bool down = s_.offloads_params() && shards_grads(strategy_);
      const double assembled = 4.0 * double(shard_[u]);
      if (down) allocate(C::CommBuffers, kDev, assembled, int(u));
      for (const UnitPart& part : layout_.parts[u]) {  // a part with replicas: its slice
        if (part.replicate_group == 1) continue;
        const double slice = 4.0 * double(part.padded) / N;
        allocate(C::CommBuffers, kDev, slice, int(u));
        blocking(Coll::AllGather, Group::Replicate, 4.0 * double(part.shard()), int(u),
                 part.placement);
        deallocate(C::CommBuffers, kDev, slice, int(u));
      }
      if (down) blocking(Coll::DeviceToHost, Group::Pcie, assembled, int(u));
      deallocate(C::CommBuffers, kDev, P * rounds, int(u));
      if (down) deallocate(C::CommBuffers, kDev, assembled, int(u));
    }
  }

  // ---- Engine::optimizer_step ---------------------------------------------------------------
  void optimizer_step() {
    prefetch_optimizer_ = false;
    if (nvme_) prefetch_state();
    double elems = 0.0;
    for (std::int64_t n : shard_) elems += double(n);
    // The global gradient norm: one double per placement over its shard group, or
    // (deterministic) one per 1024-element block of the placement's parts.
    std::vector<double> blocks(s_.placements.size(), -1.0);  // -1: no part of this placement
    for (const std::vector<UnitPart>& parts : layout_.parts)
      for (const UnitPart& part : parts)
        blocks[std::size_t(part.placement)] =
            std::max(0.0, blocks[std::size_t(part.placement)]) +
            double((part.numel + kNormBlock - 1) / kNormBlock);
    for (int p = 0; p < int(blocks.size()); ++p) {
      if (blocks[std::size_t(p)] < 0) continue;
      if (!s_.deterministic)
        blocking(Coll::AllReduce, Group::Shard, 8.0, -1, p);
      else if (s_.part_shard_group(p) > 1)
        blocking(Coll::AllReduce, Group::Shard, 8.0 * blocks[std::size_t(p)], -1, p);
    }
    if (nvme_) {
      streamed_optimizer();
    } else {
      host_or_device_optimizer(elems);
    }
    if (s_.muon_optimizer()) muon_exchange();
    // Engine::sync_full_params: zero1/zero2 bring every rank's updated shard to everyone.
    if (sharded_ || nshard_ == 1) return;
    for (std::size_t u = 0; u < shard_.size(); ++u) {
      const double send = b_.param * double(shard_[u]);
      allocate(C::CommBuffers, kDev, send, int(u));
      blocking(Coll::AllGather, Group::Shard, b_.param * double(padded_[u]), int(u));
      deallocate(C::CommBuffers, kDev, send, int(u));
    }
  }

  // AdamW over the shard: the norm reads the gradients, the update reads the fp32 params,
  // gradients and both moments and writes params and moments (plus the bf16 working copy).
  double optimizer_bytes_per_element() const {
    double per_elem = 2 * double(b_.grad) + 2 * 4.0 + 2 * double(b_.optimizer);
    if (s_.precision == Precision::BF16) per_elem += b_.param;
    return per_elem;
  }

  // fsdp/optim/state_tier_nvme.cpp: each shard in pieces of kStreamPiece; piece i's state read (and
  // its device shards down) while piece i - 1 updates, written back behind it; the next step's
  // reads queue behind the last writes, so the step is charged for them (steady state).
  struct Piece {
    int unit;
    double n;
  };
  std::vector<Piece> pieces() const {
    std::vector<Piece> out;
    for (std::size_t u = 0; u < shard_.size(); ++u)
      for (std::int64_t lo = 0; lo < shard_[u]; lo += kStreamPiece)
        out.push_back({int(u), double(std::min(kStreamPiece, shard_[u] - lo))});
    return out;
  }
  int read_piece(const Piece& pc) {
    const double regions = params_disk_ ? 3 : 2;
    return issue(Coll::DiskRead, Group::Disk, regions * double(io_round(std::int64_t(4 * pc.n))),
                 pc.unit);
  }
  // ShardedOptimizer::prefetch_state: the first two pieces' disk reads, once per step (the
  // previous step's writes from their sets are long done in the steady state).
  void prefetch_state() {
    if (!prefetched_.empty()) return;
    const std::vector<Piece> all = pieces();
    for (std::size_t i = 0; i < std::min<std::size_t>(2, all.size()); ++i)
      prefetched_.push_back(read_piece(all[i]));
  }

  void streamed_optimizer() {
    const std::vector<Piece> pieces = this->pieces();
    const int P = int(pieces.size());
    const bool grads_on_device = !s_.offloads_params();
    const double regions = params_disk_ ? 3 : 2;
    std::vector<int> reads(std::size_t(P), -1), downs(std::size_t(P), -1);
    int up = -1, last_write = -1;
    const auto read = [&](int i) {
      const Piece& pc = pieces[std::size_t(i)];
      reads[std::size_t(i)] =
          i < int(prefetched_.size()) ? prefetched_[std::size_t(i)] : read_piece(pc);
      if (!params_disk_)
        downs[std::size_t(i)] = issue(Coll::DeviceToHost, Group::Pcie,
                                      (4.0 + (grads_on_device ? b_.grad : 0)) * pc.n, pc.unit);
    };
    if (P > 0) read(0);
    for (int i = 0; i < P; ++i) {
      const Piece& pc = pieces[std::size_t(i)];
      wait(reads[std::size_t(i)], pc.unit);
      if (downs[std::size_t(i)] >= 0) wait(downs[std::size_t(i)], pc.unit);
      if (up >= 0) wait(up, pc.unit);
      if (i + 1 < P) read(i + 1);
      StepEvent e{StepEvent::Optimizer};
      e.bytes = pc.n * optimizer_bytes_per_element();
      e.on_host = true;
      e.unit = pc.unit;
      ev_.push_back(e);
      last_write = issue(Coll::DiskWrite, Group::Disk,
                         regions * double(io_round(std::int64_t(4 * pc.n))), pc.unit);
      up = params_disk_ ? -1 : issue(Coll::HostToDevice, Group::Pcie, 4.0 * pc.n, pc.unit);
    }
    if (up >= 0) wait(up, -1);
    if (last_write >= 0) wait(last_write, -1);
    prefetched_.clear();
  }

  // MuonExchange::orthogonalise: per unit part with Muon matrices, the gather to the owners and
  // the return (each what this rank sends), and this rank's Newton-Schulz FLOPs at the GEMM
  // rate. The apply pass's memory traffic is small beside the momentum pass's, not replayed.
  void muon_exchange() {
    for (std::size_t u = 0; u < layout_.parts.size(); ++u)
      for (std::size_t k = 0; k < layout_.parts[u].size(); ++k) {
        const UnitPart& part = layout_.parts[u][k];
        const int r = positions_[std::size_t(part.placement)];
        const std::int64_t lo = r * part.shard(), hi = lo + part.shard();
        double send = 0.0, back = 0.0, flops = 0.0;
        bool any = false;
        const std::vector<TensorSpec>& ts = layout_.part_units[u][k].tensors;
        for (std::size_t i = 0; i < ts.size(); ++i) {
          const int q = owners_.owner[u][k][i];
          if (q < 0) continue;
          any = true;
          const TensorSpec& t = ts[i];
          send += double(std::max<std::int64_t>(
              0, std::min(hi, t.offset + t.numel) - std::max(lo, t.offset)));
          if (q != r) continue;
          back += double(t.numel);
          flops += optim::newton_schulz_flops(t.shape[0], t.shape[1], s_.muon.ns_steps);
        }
        if (!any) continue;
        blocking(Coll::AllToAll, Group::Shard, 4.0 * send, int(u), part.placement);
        if (flops > 0) compute(flops, 0.0, int(u));
        blocking(Coll::AllToAll, Group::Shard, 4.0 * back, int(u), part.placement);
      }
  }

  void host_or_device_optimizer(double elems) {
    // Offloaded AdamW runs on the host: the device-resident parameter and gradient shards go
    // down and the updated parameters come back (offload = params keeps both on the host).
    if (s_.offload == Offload::Optimizer)
      blocking(Coll::DeviceToHost, Group::Pcie, (4.0 + b_.grad) * elems, -1);
    StepEvent e{StepEvent::Optimizer};
    e.bytes = elems * optimizer_bytes_per_element();
    e.on_host = offload_;
    ev_.push_back(e);
    if (s_.offload == Offload::Optimizer)
      blocking(Coll::HostToDevice, Group::Pcie, 4.0 * elems, -1);
  }

  const Setup& s_;
  RunLayout layout_;  // the units' parts, as the engine places them (fsdp/part_layout.hpp)
  int rank_;  // deterministic mode: whose micro-batches (their tree nodes differ by rank)
  int n_micro_;
  ElementBytes b_;
  Strategy strategy_;
  int k_, nshard_;
  bool sharded_, offload_;
  bool nvme_, params_disk_;     // fsdp.offload = nvme; with the parameter shards on disk
  double io_buffer_ = 0.0;      // bytes of one IoBuffer of the largest shard
  int slots_ = 0;               // GatherPipeline's read slots
  std::vector<int> read_;       // per unit: its read posted ahead, or -1
  std::vector<bool> held_;      // per unit: its slot is held until its gather completes
  bool prefetch_optimizer_ = false;  // this micro-batch's backward starts the optimizer's reads
  std::vector<int> prefetched_;      // their handles, pieces 0 and 1
  std::vector<std::int64_t> numel_, padded_, shard_;
  std::vector<UnitOptimizerLayout> optim_;  // per unit: the state's layout on this rank
  MuonOwners owners_;                       // train.optimizer = muon
  MuonBuffers muon_buffers_;
  std::vector<int> positions_;  // this rank's position in each placement's shard group
  std::vector<bool> gathered_, in_flight_, grad_full_;
  std::vector<bool> fresh_;  // per unit: no reduction has reached its gradient shard this step
  std::vector<std::vector<int>> gather_handle_;  // per unit, one per part
  std::vector<double> staging_;
  std::vector<double> upload_;  // offload = params under bf16: the host cast, per unit
  std::vector<int> sched_;
  GatherWindow window_;
  int head_unit_;                 // the unit whose parameters the LM head reads
  std::vector<UnitFlops> flops_;  // per unit's stage
  std::vector<double> exchange_, grads_home_;  // per unit: bytes of one token exchange; gradients home
  UnitFlops head_flops_;
  bool carry_ = false;         // the step's first gathers were issued by the last optimizer
  std::vector<int> carried_;  // which units those are
  std::vector<Pending> pending_;
  int next_handle_ = 0;
  std::vector<StepEvent> ev_;
};

}  // namespace

const char* to_string(Coll c) {
  switch (c) {
    case Coll::AllGather: return "all_gather";
    case Coll::ReduceScatter: return "reduce_scatter";
    case Coll::AllReduce: return "all_reduce";
    case Coll::HostToDevice: return "host_to_device";
    case Coll::DeviceToHost: return "device_to_host";
    case Coll::AllToAll: return "all_to_all";
    case Coll::DiskRead: return "disk_read";
    case Coll::DiskWrite: return "disk_write";
  }
  return "?";
}

std::vector<StepEvent> replay_step(const Setup& s, int max_micro_batches, int rank) {
  s.validate();
  return Replay(s, max_micro_batches, rank).run();
}

}  // namespace fsdp::plan
