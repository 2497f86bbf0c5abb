// SPDX-License-Identifier: MIT
#include "bench/disk_bench.hpp"

#include <algorithm>
#include <numeric>

#include "core/check.hpp"
#include "core/clock.hpp"
#include "core/exit_codes.hpp"
#include "core/offload_file.hpp"

namespace fsdp::bench {
DiskRates measure_disk(comm::Communicator& node, comm::Communicator& world, const std::string& dir,
                       std::int64_t bytes_per_rank) {
  constexpr std::int64_t kChunk = std::int64_t(64) << 20;  // as large as a big unit's shard
  const std::int64_t chunks = std::max<std::int64_t>(1, bytes_per_rank / kChunk);
  const std::int64_t bytes = chunks * kChunk;
  std::unique_ptr<OffloadFile> f;
  try {
    f = OffloadFile::prepare(dir, bytes * node.size(), node.rank() == 0);
    f->open(bytes);
  } catch (const OffloadError& e) {
    fatal(std::string("fsdp-bench machine --offload-path: ") + e.what(), exit_code::kBadConfig);
  }
  MemoryTracker tracker;
  IoBuffer buf(tracker, "disk_bench", kChunk / 4);
  std::iota(buf.data(), buf.data() + kChunk / 4, 0.f);
  // One pass: every chunk queued at once (the offload's queue works through them in order),
  // all ranks together; the slowest rank's time is the node's.
  const auto pass = [&](bool write) {
    world.barrier();
    const double t0 = now_s();
    OffloadFile::Ticket last = 0;
    for (std::int64_t c = 0; c < chunks; ++c)
      last = write ? f->write(c * kChunk, kChunk, buf.data()) : f->read(c * kChunk, kChunk, buf.data());
    f->wait(last);
    const double t = world.all_reduce_max(now_s() - t0);
    return double(bytes) * node.size() / t;
  };
  DiskRates r;
  pass(true);  // the first write turns the reserved room into written blocks
  r.write = pass(true);
  r.read = pass(false);
  r.direct = f->direct();
  return r;
}

}  // namespace fsdp::bench
