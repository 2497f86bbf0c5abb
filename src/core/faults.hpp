// SPDX-License-Identifier: MIT
// Every test-only fault hook in one place (docs/reliability.md lists the tests that use them).
// Each reads its FSDP_TEST_* variable once; unset, a hook costs one branch and does nothing.
// In core/ rather than train/ because the step, the gather pipeline and the checkpointer
// reach them, and none of those may include the trainer.
#pragma once
#include <cstdint>
#include <string>

namespace fsdp::faults {

// FSDP_TEST_INJECT_NAN=<unit>@<step>: the unit whose gradient shard gets a NaN (on shard rank
// 0) at that 0-based step, else "". <unit>/<tensor>@<step>: the NaN goes into that tensor's
// first element, on the rank that holds it (returned as "unit/tensor").
std::string nan_unit(int step);
// FSDP_TEST_SKIP_GATHER=<unit>@<world rank>: that rank skips the unit's first all-gather, as a
// rank with diverging control flow would (debug.check_collectives must catch it). True once.
bool skip_gather(const std::string& unit, int world_rank);
// FSDP_TEST_STALL=<world rank>@<step>:<seconds>: that rank sleeps before that step (step -1:
// at the start of start-up), as a hung rank would (comm.timeout_s must catch it).
void stall(int step, int world_rank);
// FSDP_TEST_STOP_RANK=<world rank>: that rank of fsdp-data stops itself (SIGSTOP) before it
// tokenizes, as a rank stopped by ^Z or a debugger would (the watchdog must name it).
void stop_if_asked(int world_rank);
// FSDP_TEST_TRUNCATE_MAPPED=<bytes>: fsdp-data prepare truncates each input it has just mapped
// to that size, as another process could (the reader must report it, not die of SIGBUS).
void truncate_mapped_input(const std::string& path);
// FSDP_TEST_PAUSE_IN_CHECKPOINT_WRITE=<seconds>: every rank sleeps inside each checkpoint write,
// after /model, so a test can kill a rank mid-write.
void pause_in_checkpoint_write(int rank);
// FSDP_TEST_SKIP_SPACE_CHECK=1: the checkpointer does not check for room before writing, so a
// test can fill a disk mid-write (the watchdog must end the job).
bool skip_space_check();
// FSDP_TEST_OFFLOAD_FAIL=<world rank>@<n>[:enospc]: on that rank the offload file's n-th
// request (1-based) and every later one fail with EIO (or ENOSPC), as a failing or full disk
// would (fsdp.offload = nvme must end the job with exit 7). The errno, else 0.
int offload_io_error(int world_rank, std::uint64_t request);
// FSDP_TEST_STREAM_PIECE=<elements>: the NVMe optimizer's piece size (a multiple of 1024), so
// tests with tiny units stream each shard in several pieces. 0 when unset. Read at each call.
long long stream_piece();
// FSDP_TEST_THROW=<program>: that program throws an exception nothing catches, here (tests that
// every main ends through the terminate handler: one line, exit 1, no core dump).
void throw_if_asked(const char* program);
// FSDP_TEST_TOUCH_DEVICE=1: host code reads the first element of a device buffer, the bug a GPU
// would punish (the space-check build must stop here, naming touch_device_on_host).
void touch_device_on_host(const float* device_data);

}  // namespace fsdp::faults
