// SPDX-License-Identifier: MIT
#include "fsdp/reduce_pipeline.hpp"

#include <algorithm>

#include "comm/safety.hpp"
#include "core/bf16.hpp"
#include "core/host_copy.hpp"

namespace fsdp {
namespace {

// A free function: nvcc refuses a device lambda inside a private member function.
void accumulate_into(const Vec& dst, const ConstVec& src) {
  Kokkos::parallel_for(
      "engine::accumulate_grad_shard", Kokkos::RangePolicy<ExecSpace>(0, dst.extent(0)),
      KOKKOS_LAMBDA(const int64_t i) { dst(i) += src(i); });
}

void scale(const Vec& v, float f) {
  Kokkos::parallel_for(
      "engine::scale_divided_grads", Kokkos::RangePolicy<ExecSpace>(0, v.extent(0)),
      KOKKOS_LAMBDA(const int64_t i) { v(i) *= f; });
}

void accumulate_on_host(const PinnedVec& dst, const ConstPinnedVec& src) {
  Kokkos::parallel_for(
      "engine::accumulate_grad_shard_on_host", Kokkos::RangePolicy<HostExecSpace>(0, dst.extent(0)),
      [=](const int64_t i) { dst(i) += src(i); });
}

}  // namespace

ReducePipeline::ReducePipeline(ShardedState& state, MemoryTracker& tracker, Trace& trace,
                               int depth, CommTimes& times)
    : state_(state),
      units_(state.units()),
      tracker_(tracker),
      trace_(trace),
      depth_(depth),
      times_(times),
      bf16_(state.setup().reduce_bf16) {}

void ReducePipeline::begin_step(bool direct) { fresh_.assign(units_.size(), direct ? 1 : 0); }

void ReducePipeline::before_backward(int u) {
  for (std::size_t i = 0; i < pending_.size(); ++i)
    if (pending_[i].unit == u) {
      drain(pending_.size() - i - 1);
      break;
    }
  ShardedUnit& su = units_[std::size_t(u)];
  if (!su.grad_full.allocated() && su.trains())
    su.grad_full =
        TrackedBuffer(tracker_, su.layout->name + "::grads", su.grad_numel(), MemCategory::Grads);
}

ReducePipeline::Pending ReducePipeline::cast_for_send(int u) {
  ShardedUnit& su = units_[std::size_t(u)];
  Pending pr{u, {}, {}, {}};
  if (bf16_) {
    pr.send = TrackedBuffer(tracker_, su.layout->name + "::reduce_send_bf16", su.grad_numel(),
                            MemCategory::CommBuffers, MemSpace::Device, Dtype::BF16, Fill::None);
    if (!tracker_.counting()) {  // the planner's run: no kernel
      cast_to_bf16(su.grad_full.cvec(), pr.send.bf16());
      ExecSpace().fence();
    }
    // Sharded gradients need only the cast from here on.
    if (shards_grads(state_.strategy())) su.grad_full.reset();
  }
  return pr;
}

// ddp: every part is whole on every rank, replicated over the one replicate group, so the unit
// is all-reduced in one collective.
void ReducePipeline::all_reduce(int u) {
  ShardedUnit& su = units_[std::size_t(u)];
  if (!su.trains()) return;  // frozen: no gradient
  const double t0 = now_s();  // time blocked inside the issue is exposed communication
  FSDP_COMM_SITE("reduce " + su.layout->name);
  Pending pr = cast_for_send(u);
  comm::Communicator& rep = state_.replicate_comm();
  if (bf16_ && rep.size() == 1) {
    // One replica: the bf16 all-reduce is its rounding alone. A reduce-scatter and an all-gather
    // over one rank would copy the same bits there and back (the result is identical).
    if (!tracker_.counting()) widen_bf16(pr.send.cbf16(), su.grad_full.vec());
    return;
  }
  if (bf16_) {
    // A bf16 all-reduce: this reduce-scatter, then finish_bf16_all_reduce when it lands.
    pr.recv = TrackedBuffer(tracker_, su.layout->name + "::reduce_recv", su.grad_numel() / rep.size(),
                            MemCategory::CommBuffers);
    pr.handles.push_back(rep.ireduce_scatter(ConstBf16Vec(pr.send.bf16().data(), pr.send.size()),
                                             pr.recv.wire(), comm::ReduceOp::Avg));
  } else {
    pr.handles.push_back(rep.iall_reduce(su.grad_full.wire(), comm::ReduceOp::Avg));
  }
  times_.exposed_s += now_s() - t0;
  times_.reduce_bytes += double(pr.handles.back().bytes());
  pending_.push_back(std::move(pr));
  drain(std::size_t(std::max(1, depth_)));  // the newest overlap the next units' backward
}

void ReducePipeline::reduce_scatter(int u) {
  ShardedUnit& su = units_[std::size_t(u)];
  if (!su.trains()) return;  // frozen: no gradient
  const double t0 = now_s();
  FSDP_COMM_SITE("reduce " + su.layout->name);
  // A divided part's rank holds the gradient of P ranks' tokens (the experts it computed for its
  // expert group), and its slice group is S/P ranks: the mean over the S ranks' tokens is the
  // slice group's mean over P.
  for (const PartShard& ps : su.parts)
    if (ps.part.slices > 1 && ps.part.trainable && !tracker_.counting())
      scale(Vec(su.grad_full.data() + ps.part.base - su.grad_base, ps.part.flat()),
            1.f / float(ps.part.slices));
  Pending pr = cast_for_send(u);
  pr.first = shards_grads(state_.strategy()) && fresh_[std::size_t(u)];
  // An offloaded gradient shard (fsdp.offload = params) is host memory: the collective lands
  // on the device and the result goes down in land().
  pr.direct = pr.first && !su.grad_shard.in_host_memory();
  fresh_[std::size_t(u)] = 0;
  if (!pr.direct)
    pr.recv = TrackedBuffer(tracker_, su.layout->name + "::reduce_recv", su.train_shard,
                            MemCategory::CommBuffers, MemSpace::Device, Dtype::F32, Fill::None);
  const Vec recv = pr.direct ? su.grad_shard.device() : pr.recv.vec();
  // One reduce-scatter per trained part, over the part's shard group, into its slice of the
  // shard (the gradient buffers start at the first trained part).
  for (const PartShard& ps : su.parts) {
    if (!ps.part.trainable) continue;
    const Vec into(recv.data() + ps.shard_offset - su.train_offset, ps.shard);
    const std::int64_t from = ps.part.base - su.grad_base;
    comm::Communicator& shard = *ps.shard_comm;
    if (bf16_)
      pr.handles.push_back(shard.ireduce_scatter(
          ConstBf16Vec(pr.send.bf16().data() + from, ps.part.flat()), into, comm::ReduceOp::Avg));
    else
      pr.handles.push_back(shard.ireduce_scatter(
          ConstVec(su.grad_full.data() + from, ps.part.flat()), into, comm::ReduceOp::Avg));
    times_.reduce_bytes += double(pr.handles.back().bytes());
  }
  times_.exposed_s += now_s() - t0;
  pending_.push_back(std::move(pr));
  drain(std::size_t(std::max(1, depth_)));
}

void ReducePipeline::drain(std::size_t keep) {
  while (pending_.size() > keep) {
    Pending pr = std::move(pending_.front());
    pending_.erase(pending_.begin());
    land(pr);
  }
}

void ReducePipeline::land(Pending& pr) {
  ShardedUnit& su = units_[std::size_t(pr.unit)];
  const bool ddp = state_.strategy() == Strategy::DDP;
  const double t0 = now_s();
  for (comm::Handle& h : pr.handles) h.wait();
  const double t1 = now_s();
  times_.exposed_s += t1 - t0;
  for (const comm::Handle& h : pr.handles) times_.total_s += h.completion_time() - h.issue_time();
  if (trace_.enabled()) trace_.add("wait reduce " + su.layout->name, "wait", t0, t1, 0);
  if (trace_.enabled())
    for (const comm::Handle& h : pr.handles)
      trace_.add(std::string(ddp ? "all_reduce " : "reduce_scatter ") + su.layout->name, "comm",
                 h.issue_time(), h.completion_time(), 1);
  if (ddp) {
    if (bf16_) finish_bf16_all_reduce(state_.replicate_comm(), pr.send, pr.recv, su.grad_full.vec());
    return;
  }
  pr.send.reset();
  const Vec reduced = pr.direct ? su.grad_shard.device() : pr.recv.vec();
  for (const PartShard& ps : su.parts) {
    comm::Communicator& rep = *ps.replicate_comm;
    if (rep.size() == 1 || !ps.part.trainable) continue;
    // hybrid, or a part on part of the shard group: the replicas' slices are averaged too
    const Vec mine(reduced.data() + ps.shard_offset - su.train_offset, ps.shard);
    if (bf16_)
      all_reduce_bf16(rep, mine);
    else
      rep.all_reduce(mine, comm::ReduceOp::Avg);
  }
  if (pr.direct) {
    su.grad_full.reset();
    return;
  }
  const ShardVec dst = state_.grad_shard(pr.unit);
  const ConstVec src = pr.recv.cvec();
  if (dst.in_host_memory()) {
    land_on_host(pr, dst.host());
  } else if (tracker_.counting()) {  // the planner's run: nothing lands
  } else if (shards_grads(state_.strategy())) {
    accumulate_into(dst.device(), src);
  } else {
    Kokkos::deep_copy(dst.device(), src);  // zero1: the reduced shard lands in its slice of the full grads
  }
  if (shards_grads(state_.strategy())) su.grad_full.reset();
}

void ReducePipeline::land_on_host(Pending& pr, const PinnedVec& dst) {
  ShardedUnit& su = units_[std::size_t(pr.unit)];
  // The step's first reduction goes down into the shard as it is; later ones (sharded
  // accumulation) through a staging buffer, added on the host in the order the device would.
  host_copy::count_copy(tracker_, Transfer::DeviceToHost, 4.0 * double(su.train_shard));
  if (pr.first) {
    host_copy::to_host(dst, pr.recv.cvec());
    return;
  }
  HostBuffer down(tracker_, su.layout->name + "::grad_download", su.train_shard,
                  MemCategory::CommBuffers, Dtype::F32, Fill::None);
  host_copy::to_host(down.vec(), pr.recv.cvec());
  host_copy::wait_copies(tracker_);
  if (!tracker_.counting()) accumulate_on_host(dst, down.cvec());
}

void ReducePipeline::finish_step() {
  drain(0);
  for (std::size_t u = 0; u < units_.size(); ++u)  // a unit no reduction reached (none today)
    if (shards_grads(state_.strategy()) && fresh_[u] && units_[u].trains())
      units_[u].grad_shard.view().fill(0.f);
  // The optimizer reads offloaded gradient shards on the host; without offload nothing waits.
  if (!units_.empty() && units_.front().grad_shard.in_host_memory())
    host_copy::wait_copies(tracker_);
}

void ReducePipeline::finish_bf16_all_reduce(comm::Communicator& c, TrackedBuffer& send,
                                            const TrackedBuffer& block, Vec out) {
  const std::int64_t n = block.size();
  const Bf16Vec own(send.bf16().data() + std::int64_t(c.rank()) * n, n);
  const bool compute = !tracker_.counting();  // a counting tracker's buffers hold nothing
  if (compute) cast_to_bf16(block.cvec(), own);
  c.all_gather(ConstBf16Vec(own.data(), n), Bf16Vec(send.bf16().data(), send.size()));
  if (compute) widen_bf16(send.cbf16(), out);
}

void ReducePipeline::all_reduce_bf16(comm::Communicator& c, Vec buf) {
  const std::int64_t n = std::int64_t(buf.extent(0));
  TrackedBuffer send(tracker_, "replicate_reduce_send_bf16", n, MemCategory::CommBuffers,
                     MemSpace::Device, Dtype::BF16);
  TrackedBuffer block(tracker_, "replicate_reduce_block", n / c.size(), MemCategory::CommBuffers);
  if (!tracker_.counting()) cast_to_bf16(ConstVec(buf.data(), n), send.bf16());
  c.reduce_scatter(ConstBf16Vec(send.bf16().data(), n), Vec(block.data(), block.size()),
                   comm::ReduceOp::Avg);
  times_.reduce_bytes += double(n) * 2.0;
  finish_bf16_all_reduce(c, send, block, buf);
}

}  // namespace fsdp
