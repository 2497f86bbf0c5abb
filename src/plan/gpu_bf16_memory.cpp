// SPDX-License-Identifier: MIT
// Over 400 lines on purpose: one class that walks a whole step's buffers (construction, both
// passes, the reductions, deterministic mode, the optimizer's) in the order the engine makes
// them, so it can be read beside fsdp/step.cpp.
#include "plan/gpu_bf16_memory.hpp"

#include <algorithm>
#include <cmath>

#include "core/offload_file.hpp"
#include "fsdp/canonical_tree.hpp"
#include "fsdp/gather_window.hpp"
#include "fsdp/optim/muon_owners.hpp"
#include "fsdp/optim/optimizer_layout.hpp"
#include "fsdp/part_layout.hpp"
#include "fsdp/schedule.hpp"
#include "model/architecture.hpp"
#include "model/experts/capacity.hpp"

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

class Bf16Step {
 public:
  Bf16Step(const Setup& s, int max_micro, int rank)
      : s_(s),
        layout_(place_units(s, model_units(s.model, s.choices))),
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
        head_unit_(architecture_of(s.model).head_unit(s.model, s.choices)) {
    for (int u = 0; u < int(layout_.units.size()); ++u) {
      padded_.push_back(layout_.padded(u));
      shard_.push_back(layout_.shard(u));
      // The trained parts (a LoRA run's adapters; every part otherwise): what has gradients
      // and optimizer state (fsdp/sharded_unit.hpp's grad_numel and train_shard).
      std::int64_t gp = 0, gs = 0;
      for (const UnitPart& part : layout_.parts[std::size_t(u)])
        if (part.trainable) {
          gp += part.flat();
          gs += part.shard();
        }
      gpad_.push_back(gp);
      gshard_.push_back(gs);
    }
    // The optimizer's state as this rank holds it (fsdp/optim/optimizer_layout.hpp): under Muon
    // the packed second moments, and the exchange's buffers (fsdp/optim/muon_owners.hpp).
    std::vector<int> positions;  // by placement
    for (std::size_t p = 0; p < s.placements.size(); ++p)
      positions.push_back(part_rank(s, int(p), rank).position);
    for (int u = 0; u < int(layout_.units.size()); ++u) {
      std::vector<int> pos;
      for (const UnitPart& part : layout_.parts[std::size_t(u)])
        pos.push_back(positions[std::size_t(part.placement)]);
      optim_.push_back(optimizer_layout(layout_, u, pos, s.muon_optimizer(), !nvme_));
    }
    if (s.muon_optimizer())
      muon_buffers_ = muon_buffers(layout_, muon_owners(layout_, s.muon.ns_steps), positions,
                                   s.muon.ns_dtype == "bf16");
    const std::size_t U = padded_.size();
    gathered_.assign(U, false);
    in_flight_.assign(U, false);
    staging_.assign(U, 0.0);
    upload_.assign(U, 0.0);
    grad_full_.assign(U, false);
    fresh_.assign(U, false);
    reading_.assign(U, false);
    held_.assign(U, false);
  }

  TrackerPeaks run() {
    construct();
    train_step();
    TrackerPeaks p;
    for (int sp = 0; sp < 2; ++sp) {
      for (int c = 0; c < kNumMemCategories; ++c)
        p.peak[std::size_t(sp)][std::size_t(c)] = std::int64_t(std::llround(peak_[sp][c]));
      p.total[std::size_t(sp)] = std::int64_t(std::llround(total_peak_[sp]));
    }
    return p;
  }

 private:
  // MemoryTracker::on_alloc and on_free: per (space, category) and per-space totals.
  void allocate(C c, MemSpace sp, double bytes) { add(c, sp, bytes); }
  void deallocate(C c, MemSpace sp, double bytes) { add(c, sp, -bytes); }
  void add(C c, MemSpace space, double d) {
    const int sp = int(space), ci = int(c);
    cur_[sp][ci] += d;
    total_[sp] += d;
    peak_[sp][ci] = std::max(peak_[sp][ci], cur_[sp][ci]);
    total_peak_[sp] = std::max(total_peak_[sp], total_[sp]);
  }

  // ---- The model's and the Engine's constructors --------------------------------------------
  // Offload (Engine::Engine): AdamW's moments live on the host with any offload; with
  // offload = params the parameter shard and the gradient shard do too. Full parameters and
  // full gradients (ddp, zero1, zero2) stay on the device.
  void construct() {
    allocate(C::Activations, kDev,
             double(b_.activation) *
                 double(activation_elements(s_.model, s_.choices, s_.micro_batch)));
    // Decoder::use_bf16_gemms: the two bf16 casts of a GEMM's activation operands.
    if (s_.bf16_gemms) {
      const double cast = 2.0 * double(architecture_of(s_.model).bf16_scratch_elements(
                                    s_.model, s_.micro_batch));
      allocate(C::Activations, kDev, cast);
      allocate(C::Activations, kDev, cast);
      // The experts' bf16 dispatch buffers (decoder/moe_ep.cpp): sent [R, C], received [Rx, C].
      const ModelConfig& m = s_.model;
      const int P = s_.choices.expert_slices();
      if (m.n_experts > 0 && kernels::bf16_dispatch(P, m.n_embd)) {
        const std::int64_t R = std::int64_t(s_.micro_batch) * m.block_size * m.experts_per_token;
        const std::int64_t Rx = kernels::received_rows_bound(R, m.n_experts, P, float(s_.choices.moe.capacity_factor));
        allocate(C::Activations, kDev, 2.0 * double(R) * m.n_embd);
        allocate(C::Activations, kDev, 2.0 * double(Rx) * m.n_embd);
      }
    }
    const MemSpace optim_space = offload_ ? kHost : kDev;
    const MemSpace param_space = s_.offloads_params() ? kHost : kDev;
    for (std::size_t u = 0; u < padded_.size(); ++u) {
      const double S = double(shard_[u]), P = double(padded_[u]);
      // Parameters: the fp32 shard (zero3, hybrid; under bf16 it is the master copy), or the
      // full working copy plus, under bf16, a separate fp32 master of the rank's shard.
      if (sharded_) {
        if (!params_disk_) allocate(C::ParamShard, param_space, 4 * S);  // else on disk
      } else {
        allocate(C::ParamShard, kDev, b_.param * P);
        if (b_.master > 0) allocate(C::ParamShard, optim_space, b_.master * S);
      }
      // Gradients: the shard, or full gradients kept across the step (ddp, zero1); of the
      // trained parts alone (a frozen unit has none).
      const double GS = double(gshard_[u]), GP = double(gpad_[u]);
      if (GP == 0) {
        // frozen: no gradient and no optimizer state
      } else if (shards_grads(strategy_)) {
        allocate(C::Grads, param_space, b_.grad * GS);
      } else {
        allocate(C::Grads, kDev, b_.grad * GP);
        grad_full_[u] = true;
      }
      // AdamW's exp_avg and exp_avg_sq over the shard (nvme: in the offload file instead);
      // under Muon exp_avg is the matrices' momentum and exp_avg_sq AdamW's elements only.
      if (!nvme_ && GP > 0) {
        allocate(C::OptimizerState, optim_space, 4 * GS);
        allocate(C::OptimizerState, optim_space, 4 * double(optim_[u].sq_size));
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
        allocate(C::CommBuffers, kHost, slots_ * io_buffer_);
      }
      const int per_set = 3 + (s_.offloads_params() ? 0 : 1);
      const double piece = std::min(largest, double(kStreamPiece));
      allocate(C::CommBuffers, kHost, 3.0 * per_set * double(io_round(std::int64_t(4 * piece)) + kIoAlign));
    }
    // AsyncCheckpointer's staging (io/checkpoint_staging.hpp): the writer rank's shards of the
    // parameters and both moments (the second packed under Muon) in host memory.
    if (s_.checkpoint_staging) {
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
      allocate(C::CheckpointStaging, kHost, 4 * elems);
    }
    // MuonExchange: two send and two receive sets, the owner's gathered matrices and
    // Newton-Schulz's workspace.
    if (s_.muon_optimizer()) {
      const MuonBuffers& b = muon_buffers_;
      for (int k = 0; k < 2; ++k) {
        allocate(C::CommBuffers, kDev, 4.0 * double(b.send));
        allocate(C::CommBuffers, kDev, 4.0 * double(b.gathered));
      }
      allocate(C::CommBuffers, kDev, 4.0 * double(b.gathered));
      allocate(C::CommBuffers, kDev, 4.0 * double(b.work));
    }
    // ShardedOptimizer: offload = optimizer stages fp32 parameter and gradient shards through
    // two host sets, each sized to the largest shard.
    if (s_.offload == Offload::Optimizer) {
      double largest = 0.0;
      for (std::int64_t n : shard_) largest = std::max(largest, double(n));
      allocate(C::CommBuffers, kHost, 2 * 2 * 4 * largest);
    }
  }

  // ---- GatherPipeline -----------------------------------------------------------------------
  void issue_gather(int u) {
    if (gathered_[u]) return;  // already gathered or in flight
    const double S = double(shard_[u]), P = double(padded_[u]);
    allocate(C::GatheredParams, kDev, b_.param * P);
    // An offloaded shard is cast on the host into a buffer kept until the gather lands (on
    // disk: read into a slot first); a device shard's bf16 cast is staged on the device.
    if (s_.offloads_params()) {
      if (params_disk_) take_slot(u);
      upload_[u] = b_.param * S;
      allocate(C::CommBuffers, kHost, upload_[u]);
    }
    staging_[u] = b_.param * S;
    allocate(C::CommBuffers, kDev, staging_[u]);
    gathered_[u] = true;
    in_flight_[u] = true;
  }

  // ---- GatherPipeline's read slots (nvme, offload.params) -------------------------------------
  int free_slots() const {
    int used = 0;
    for (std::size_t u = 0; u < reading_.size(); ++u) used += (reading_[u] || held_[u]) ? 1 : 0;
    return slots_ - used;
  }
  // slot_for: the read posted ahead, or one posted now (into a new slot if none is free).
  void take_slot(int u) {
    if (!reading_[std::size_t(u)] && free_slots() == 0) {
      ++slots_;
      allocate(C::CommBuffers, kHost, io_buffer_);
    }
    reading_[std::size_t(u)] = false;
    held_[std::size_t(u)] = true;
  }
  // read_ahead: the next k + 1 units past the issued gathers, in the schedule's order.
  void read_ahead() {
    if (!params_disk_) return;
    int reading = 0;
    for (bool r : reading_) reading += r ? 1 : 0;
    for (int stage = window_.issued(); stage < window_.stages() && reading < k_ + 1; ++stage) {
      const int u = window_.unit(stage);
      if (gathered_[std::size_t(u)] || reading_[std::size_t(u)] || held_[std::size_t(u)]) continue;
      if (free_slots() == 0) return;
      reading_[std::size_t(u)] = true;
      ++reading;
    }
  }

  void landed(int u) {
    in_flight_[u] = false;
    deallocate(C::CommBuffers, kDev, staging_[u]);
    staging_[u] = 0;
    if (upload_[u] > 0) deallocate(C::CommBuffers, kHost, upload_[u]);
    upload_[u] = 0;
  }

  // GatherPipeline::all_gather, through the same window policy (fsdp/gather_window.hpp).
  void acquire(int stage) {
    const int u = window_.unit(stage);
    if (!sharded_) return;
    if (window_.claim(stage)) issue_gather(u);
    if (in_flight_[u]) {
      landed(u);
      held_[std::size_t(u)] = false;
    }
    window_.prefetch(
        stage, [&](int v) { return bool(gathered_[std::size_t(v)]); },
        [&](int v) { issue_gather(v); });
    read_ahead();
  }

  void release(int stage, bool keep = false) {
    if (!sharded_ || keep || window_.needed_soon(stage)) return;
    const int u = window_.unit(stage);
    deallocate(C::GatheredParams, kDev, b_.param * double(padded_[u]));
    gathered_[u] = false;
  }

  void finish_pipeline() {
    for (std::size_t u = 0; u < gathered_.size(); ++u) {
      if (in_flight_[u]) landed(int(u));
      if (gathered_[u]) {
        deallocate(C::GatheredParams, kDev, b_.param * double(padded_[u]));
        gathered_[u] = false;
      }
    }
    reading_.assign(reading_.size(), false);  // drain_reads: every slot is free again
    held_.assign(held_.size(), false);
  }

  // ---- ReducePipeline -----------------------------------------------------------------------
  struct Pending {
    int unit;
    double recv_bytes;
    bool first = false;  // the step's first reduction into the unit's gradient shard
  };

  void begin_unit_backward(int u) {
    for (std::size_t i = 0; i < pending_.size(); ++i)
      if (pending_[i].unit == u) {
        drain(pending_.size() - i - 1);
        break;
      }
    if (!grad_full_[u] && gpad_[u] > 0) {
      allocate(C::Grads, kDev, b_.grad * double(gpad_[u]));
      grad_full_[u] = true;
    }
  }

  void finish_unit_backward(int u, bool reduce_now) {
    if (!reduce_now || gpad_[u] == 0) return;  // a frozen unit reduces nothing
    Pending p{u, 0.0};
    if (strategy_ != Strategy::DDP) {
      // The step's first reduction into a gradient shard lands in it directly (no buffer),
      // unless the shard is in host memory (offload = params).
      p.first = shards_grads(strategy_) && fresh_[u];
      const bool direct = p.first && !s_.offloads_params();
      fresh_[u] = false;
      p.recv_bytes = direct ? 0.0 : b_.grad * double(gshard_[u]);
      if (!direct) allocate(C::CommBuffers, kDev, p.recv_bytes);
    }
    pending_.push_back(p);
    drain(std::size_t(std::max(1, k_)));
  }

  void drain(std::size_t keep) {
    while (pending_.size() > keep) {
      const Pending p = pending_.front();
      pending_.erase(pending_.begin());
      if (strategy_ == Strategy::DDP) continue;
      const double S = double(gshard_[p.unit]);
      // offload = params: a later reduction of the step goes down through a host buffer.
      if (s_.offloads_params() && shards_grads(strategy_) && !p.first) {
        allocate(C::CommBuffers, kHost, b_.grad * S);
        deallocate(C::CommBuffers, kHost, b_.grad * S);
      }
      if (shards_grads(strategy_)) {
        deallocate(C::Grads, kDev, b_.grad * double(gpad_[p.unit]));
        grad_full_[p.unit] = false;
      }
      if (p.recv_bytes > 0) deallocate(C::CommBuffers, kDev, p.recv_bytes);
    }
  }

  // ---- Engine::micro_batch -----------------------------------------------------------------
  void micro_batch(bool reduce_last) {
    const int U = int(padded_.size());
    const std::vector<Stage> fwd = forward_stages(U, head_unit_), bwd = backward_stages(U, head_unit_);
    const std::vector<bool> last = last_uses(bwd);
    std::vector<int> sched = stage_units(fwd);
    for (int u : stage_units(bwd)) sched.push_back(u);
    const int nf = int(fwd.size());
    const bool keep_fwd = !s_.reshard_after_forward;
    window_.begin(sched);
    read_ahead();
    for (int i = 0; i < nf; ++i) {
      acquire(i);
      release(i, keep_fwd);
    }
    for (int i = nf; i < int(sched.size()); ++i) {
      const int u = sched[std::size_t(i)];
      acquire(i);
      begin_unit_backward(u);
      release(i);
      if (last[std::size_t(i - nf)]) finish_unit_backward(u, reduce_last);
    }
    finish_pipeline();
  }

  // ---- Engine::train_step -------------------------------------------------------------------
  void train_step() {
    if (s_.deterministic) {
      tree_reduce_grads();
    } else {
      fresh_.assign(padded_.size(), true);
      for (int j = 0; j < n_micro_; ++j)
        micro_batch(j + 1 == n_micro_ || (shards_grads(strategy_) && s_.accumulate_sharded));
      drain(0);
    }
    // Engine::sync_full_params: zero1/zero2 bring every rank's updated shard to everyone.
    if (sharded_ || nshard_ == 1) return;
    for (std::size_t u = 0; u < shard_.size(); ++u) {
      const double send = b_.param * double(shard_[u]);
      allocate(C::CommBuffers, kDev, send);
      deallocate(C::CommBuffers, kDev, send);
    }
  }

  // ---- Deterministic mode (fsdp/deterministic.cpp) ------------------------------------------
  // Each micro-batch's gradients go into fresh full buffers; sums along the canonical tree
  // keep one set per open level alive.
  void tree_accumulate(int lo, int hi) {
    if (hi - lo == 1) {
      for (std::size_t u = 0; u < padded_.size(); ++u) {
        const double P = b_.grad * double(gpad_[u]);
        allocate(C::Grads, kDev, P);  // the new buffer exists before the old one goes
        if (grad_full_[u]) deallocate(C::Grads, kDev, P);
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
      deallocate(C::Grads, kDev, b_.grad * double(gpad_[u]));  // `right`, added into `left`
  }

  // The nodes covering this rank's micro-batches, each summed and held; then per node slot and
  // unit a send buffer and the received slices kept; then, per unit, the combination in place,
  // the persistent gradients again (ddp, zero1) and, with replicas, the slice's buffer.
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
        const double P = 4.0 * double(gpad_[u]);
        allocate(C::CommBuffers, kDev, P);  // send
        if (k < int(mine.size())) deallocate(C::Grads, kDev, b_.grad * double(gpad_[u]));
        allocate(C::CommBuffers, kDev, P);  // this rank's slices of round k, kept
        deallocate(C::CommBuffers, kDev, P);
      }
    for (std::size_t u = 0; u < padded_.size(); ++u) {
      const double P = 4.0 * double(gpad_[u]);
      if (!shards_grads(strategy_)) {
        allocate(C::Grads, kDev, b_.grad * double(gpad_[u]));
        grad_full_[u] = true;
      }
      // offload = params: the shard is assembled on the device and goes down whole.
      const bool down = s_.offloads_params() && shards_grads(strategy_);
      const double assembled = 4.0 * double(gshard_[u]);
      if (down) allocate(C::CommBuffers, kDev, assembled);
      for (const UnitPart& part : layout_.parts[u]) {  // a part with replicas: its slice
        if (part.replicate_group == 1 || !part.trainable) continue;
        const double slice = 4.0 * double(part.padded) / N;
        allocate(C::CommBuffers, kDev, slice);
        deallocate(C::CommBuffers, kDev, slice);
      }
      deallocate(C::CommBuffers, kDev, P * rounds);
      if (down) deallocate(C::CommBuffers, kDev, assembled);
    }
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
  std::vector<bool> reading_;   // per unit: its read posted ahead
  std::vector<bool> held_;      // per unit: its slot is held until its gather completes
  std::vector<std::int64_t> padded_, shard_, gpad_, gshard_;
  std::vector<UnitOptimizerLayout> optim_;  // per unit: the state's layout on this rank
  MuonBuffers muon_buffers_;
  std::vector<bool> gathered_, in_flight_, grad_full_;
  std::vector<bool> fresh_;  // per unit: no reduction has reached its gradient shard this step
  std::vector<double> staging_;
  std::vector<double> upload_;  // offload = params: the host cast, per unit
  GatherWindow window_;
  int head_unit_;  // the unit whose parameters the LM head reads
  std::vector<Pending> pending_;
  std::array<std::array<double, kNumMemCategories>, 2> cur_{}, peak_{};
  std::array<double, 2> total_{}, total_peak_{};
};

}  // namespace

TrackerPeaks gpu_bf16_peaks(const Setup& s, int max_micro_batches, int rank) {
  s.validate();
  return Bf16Step(s, max_micro_batches, rank).run();
}

}  // namespace fsdp::plan
