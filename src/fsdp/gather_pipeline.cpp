// SPDX-License-Identifier: MIT
#include "fsdp/gather_pipeline.hpp"

#include "core/faults.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/check.hpp"
#include "core/host_copy.hpp"

namespace fsdp {

namespace {

std::vector<std::int64_t> padded_sizes(const std::vector<ShardedUnit>& units) {
  std::vector<std::int64_t> p;
  for (const ShardedUnit& su : units) p.push_back(su.padded);
  return p;
}

}  // namespace

GatherPipeline::GatherPipeline(std::vector<ShardedUnit>& units, MemoryTracker& tracker,
                               Trace& trace, int depth, bool sharded, CommTimes& times,
                               ParamWidener* widener)
    : units_(units),
      tracker_(tracker),
      trace_(trace),
      depth_(depth),
      sharded_(sharded),
      times_(times),
      widener_(widener),
      window_(padded_sizes(units), depth) {
  if (units_.empty() || !units_.front().params.on_disk()) return;
  for (const ShardedUnit& su : units_) slot_floats_ = std::max(slot_floats_, su.shard);
  slots_.resize(std::size_t(2 * (depth + 1)));
  for (std::size_t i = 0; i < slots_.size(); ++i)
    slots_[i].buf = IoBuffer(tracker_, "param_read::" + std::to_string(i), slot_floats_);
}

GatherPipeline::~GatherPipeline() { drain_reads(); }

void GatherPipeline::begin(std::vector<int> schedule) {
  window_.begin(std::move(schedule));
  read_ahead();
}

GatherPipeline::ReadSlot* GatherPipeline::find_slot(ReadSlot::State state, int u) {
  for (ReadSlot& s : slots_)
    if (s.state == state && (u < 0 || s.unit == u)) return &s;
  return nullptr;
}

void GatherPipeline::post_read(ReadSlot& slot, int u) {
  const ShardVec shard = units_[std::size_t(u)].params.view();
  slot.state = ReadSlot::Reading;
  slot.unit = u;
  slot.ticket = shard.file().read(shard.file_offset(), io_round(shard.size() * 4), slot.buf.data());
}

GatherPipeline::ReadSlot& GatherPipeline::slot_for(int u) {
  ReadSlot* slot = find_slot(ReadSlot::Reading, u);
  if (!slot) {  // not read ahead (the first gathers, or a full window): read it now
    slot = find_slot(ReadSlot::Free);
    if (!slot) {
      slots_.emplace_back();
      slots_.back().buf = IoBuffer(tracker_, "param_read::" + std::to_string(slots_.size() - 1),
                                   slot_floats_);
      slot = &slots_.back();
    }
    post_read(*slot, u);
  }
  units_[std::size_t(u)].params.view().file().wait(slot->ticket);
  slot->state = ReadSlot::Held;
  return *slot;
}

void GatherPipeline::read_ahead() {
  if (slots_.empty()) return;
  int reading = 0;
  for (const ReadSlot& s : slots_) reading += s.state == ReadSlot::Reading ? 1 : 0;
  for (int stage = window_.issued(); stage < window_.stages() && reading < depth_ + 1; ++stage) {
    const int u = window_.unit(stage);
    if (units_[std::size_t(u)].gathered.allocated() || find_slot(ReadSlot::Reading, u) ||
        find_slot(ReadSlot::Held, u))
      continue;
    ReadSlot* slot = find_slot(ReadSlot::Free);
    if (!slot) return;
    post_read(*slot, u);
    ++reading;
  }
}

void GatherPipeline::release_slot(int u) {
  if (ReadSlot* s = find_slot(ReadSlot::Held, u)) {
    s->state = ReadSlot::Free;
    s->unit = -1;
  }
}

void GatherPipeline::drain_reads() {
  // A read still in flight writes into its slot: wait for it before the slot is reused or freed.
  for (ReadSlot& s : slots_) {
    if (s.state == ReadSlot::Reading) units_[std::size_t(s.unit)].params.view().file().wait(s.ticket);
    s.state = ReadSlot::Free;
    s.unit = -1;
  }
}

void GatherPipeline::issue(int u) {
  ShardedUnit& su = units_[u];
  if (su.gathered.allocated()) return;  // already gathered or in flight
  const bool bf16 = widener_ != nullptr;
  su.gathered = TrackedBuffer(tracker_, su.layout->name + "::gathered", su.padded,
                              MemCategory::GatheredParams, MemSpace::Device,
                              bf16 ? Dtype::BF16 : Dtype::F32, Fill::None);
  if (faults::skip_gather(su.layout->name, world_rank())) return;
  FSDP_COMM_SITE("all_gather " + su.layout->name);
  // One all-gather per part, over the part's shard group, into its region of `gathered`.
  // bf16: the cast of this rank's slice goes straight into its block, gathered in place. An
  // offloaded shard (fsdp.offload = params) comes up into that block, cast on the host first
  // under bf16 (half the bytes over PCIe), and is gathered in place too.
  const ShardVec shard = su.params.view();
  // On disk (fsdp.offload = nvme): the shard read into a slot stands in for the host buffer.
  const bool offloaded = shard.in_host_memory() || shard.on_disk();
  PinnedVec host;
  if (offloaded) {
    host = shard.on_disk() ? slot_for(u).buf.vec(0, su.shard) : shard.host();
    if (bf16) {
      // Kept until the gather is waited for: by then the copy out of it is done.
      su.upload = HostBuffer(tracker_, su.layout->name + "::param_upload_bf16", su.shard,
                             MemCategory::CommBuffers, Dtype::BF16, Fill::None);
      if (!tracker_.counting()) cast_to_bf16_on_host(host, su.upload.bf16());
    }
  }
  // The counted run: the shard's upload, which the gathers (on the comm stream, ordered after
  // the compute stream's copies) start behind.
  StepLog* log = tracker_.log();
  if (log && offloaded)
    log->order_after(host_copy::count_copy(tracker_, Transfer::HostToDevice,
                                           (bf16 ? 2.0 : 4.0) * double(su.shard)));
  for (PartShard& ps : su.parts) {
    const Bf16Vec own(su.gathered.bf16().data() + ps.gather_at(), bf16 ? ps.shard : 0);
    const Vec own_f32(su.gathered.data() + ps.gather_at(), bf16 ? 0 : ps.shard);
    if (tracker_.counting()) {  // the copies and casts of buffers a counting tracker never made
    } else if (offloaded) {
      if (bf16)
        host_copy::to_device(
            own, ConstPinnedBf16Vec(su.upload.bf16().data() + ps.shard_offset, ps.shard));
      else
        host_copy::to_device(own_f32, PinnedVec(host.data() + ps.shard_offset, ps.shard));
    } else if (bf16) {
      cast_to_bf16(ConstVec(shard.device().data() + ps.shard_offset, ps.shard), own);
    }
    // A CPU transport may move the data inside the issue call (and wait there for late peers):
    // that time is communication the compute did not overlap.
    const double t0 = now_s();
    comm::Communicator& c = *ps.shard_comm;
    if (bf16)
      ps.gather = c.iall_gather(ConstBf16Vec(own.data(), ps.shard),
                                Bf16Vec(su.gathered.bf16().data() + ps.part.base, ps.part.flat()));
    else
      ps.gather = c.iall_gather(
          ConstVec(offloaded ? own_f32.data() : shard.device().data() + ps.shard_offset, ps.shard),
          Vec(su.gathered.data() + ps.part.base, ps.part.flat()));
    times_.exposed_s += now_s() - t0;
    times_.gather_bytes += double(ps.gather.bytes());
  }
  if (log) log->order_after(-1);
  su.gather_in_flight = true;
}

UnitParams GatherPipeline::all_gather(int stage) {
  const int u = window_.unit(stage);
  ShardedUnit& su = units_[u];
  if (!sharded_) {
    const ConstVec full(su.params.device().data(), su.padded);
    if (tracker_.counting()) return ConstVec();  // nothing to widen: the model computes nothing
    if (widener_) return UnitParams::rounded(full, *su.layout, *widener_);
    return full;
  }
  if (window_.claim(stage)) issue(u);
  if (su.gather_in_flight) {
    const double t0 = now_s();
    for (PartShard& ps : su.parts) ps.gather.wait();
    const double t1 = now_s();
    su.gather_in_flight = false;
    su.upload.reset();
    release_slot(u);
    times_.exposed_s += t1 - t0;
    for (const PartShard& ps : su.parts)
      times_.total_s += ps.gather.completion_time() - ps.gather.issue_time();
    if (trace_.enabled()) trace_.add("wait all_gather " + su.layout->name, "wait", t0, t1, 0);
    if (trace_.enabled())
      for (const PartShard& ps : su.parts)
        trace_.add("all_gather " + su.layout->name, "comm", ps.gather.issue_time(),
                   ps.gather.completion_time(), 1);
  }
  window_.prefetch(
      stage, [&](int v) { return units_[std::size_t(v)].gathered.allocated(); },
      [&](int v) { issue(v); });
  read_ahead();
  if (tracker_.counting()) return ConstVec();
  if (widener_) return UnitParams::from_bf16(su.gathered.cbf16(), *su.layout, *widener_);
  return ConstVec(su.gathered.data(), su.padded);
}

void GatherPipeline::release(int stage, bool keep) {
  if (!sharded_ || keep || window_.needed_soon(stage)) return;
  units_[std::size_t(window_.unit(stage))].gathered.reset();
}

void GatherPipeline::finish() {
  for (auto& su : units_) {
    if (su.gather_in_flight) {
      for (PartShard& ps : su.parts) ps.gather.wait();
      su.gather_in_flight = false;
    }
    su.upload.reset();
    su.gathered.reset();
  }
  drain_reads();
}

std::vector<int> GatherPipeline::first_gathers(const std::vector<int>& next) const {
  if (!sharded_) return {};
  return window_.first_gathers(next);
}

int GatherPipeline::gathered_units() const {
  int n = 0;
  for (const auto& su : units_) n += su.gathered.allocated() ? 1 : 0;
  return n;
}

}  // namespace fsdp
