// SPDX-License-Identifier: MIT
// The copies between the device and offloaded host memory (fsdp.offload). They are issued on
// the compute stream: asynchronous to the host (the memory is pinned), and ordered after the
// kernels that wrote their source and before the kernels and collectives (which share that
// stream) that read their destination, with no event bookkeeping. A cached device buffer can
// still be read by a queued kernel when it is handed out again; a second stream would race it.
// The host waits only where it reads what came down: `wait_copies`. On a CPU they are memcpy.
#pragma once
#include "core/memory.hpp"
#include "core/step_log.hpp"
#include "core/types.hpp"

namespace fsdp::host_copy {

void to_device(const Vec& dst, const ConstPinnedVec& src);
void to_device(const Bf16Vec& dst, const ConstPinnedBf16Vec& src);
// The source's producer must be issued already; dst is not to be read before wait_copies().
void to_host(const PinnedVec& dst, const ConstVec& src);
void wait_copies();
// The same where the engine may run on a counting tracker (the planner's run): there nothing
// was copied and no device may exist, so the wait is only logged (core/step_log.hpp).
void wait_copies(const MemoryTracker& tracker);
// The counted run (a counting tracker with a log): a copy of `bytes` that its empty views cannot
// show, logged for the timeline (to be waited for by wait_copies(tracker)); its handle in the
// log, or -1 on any other tracker.
int count_copy(const MemoryTracker& tracker, Transfer op, double bytes);
// Bytes copied either way since the last call.
double take_bytes_moved();

}  // namespace fsdp::host_copy
