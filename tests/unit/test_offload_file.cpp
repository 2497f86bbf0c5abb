// SPDX-License-Identifier: MIT
// The offload file (fsdp.offload = nvme) against bytes written then read back: aligned requests
// in flight together, a read issued after a write of the same region seeing the write without a
// wait between them, unaligned synchronous copies that leave their neighbours intact, the lock
// that refuses a second job, the room check, and a directory left empty afterwards.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <numeric>
#include <vector>

#include "core/exit_codes.hpp"
#include "core/offload_file.hpp"
#include "core/shard_buffer.hpp"

using namespace fsdp;
namespace fs = std::filesystem;

namespace {
struct TmpDir {
  std::string path;
  TmpDir() {
    char tmpl[] = "/tmp/fsdp_offload_file_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TmpDir() { fs::remove_all(path); }
};
}  // namespace

TEST_CASE("offload file: written regions read back, in the queue's order", "[offload]") {
  TmpDir tmp;
  MemoryTracker tracker;
  {
    auto f = OffloadFile::prepare(tmp.path, 1 << 20, true);
    f->open(3 * 10000 * 4);
    const std::int64_t a = f->allocate(10000 * 4), b = f->allocate(10000 * 4);
    REQUIRE(a % kIoAlign == 0);
    REQUIRE(b == io_round(10000 * 4));
    IoBuffer w(tracker, "w", 10000), r(tracker, "r", 10000);
    REQUIRE(reinterpret_cast<std::uintptr_t>(w.data()) % kIoAlign == 0);
    std::iota(w.data(), w.data() + 10000, 1.f);
    const std::int64_t bytes = io_round(10000 * 4);
    f->write(b, bytes, w.data());
    // Issued after the write without waiting for it: the one queue runs it after.
    const OffloadFile::Ticket t = f->read(b, bytes, r.data());
    f->wait(t);
    REQUIRE(std::equal(w.data(), w.data() + 10000, r.data()));
    // Region a was never written: the reserved room reads as zeros.
    f->wait(f->read(a, bytes, r.data()));
    REQUIRE(std::all_of(r.data(), r.data() + 10000, [](float x) { return x == 0.f; }));

    // Unaligned copies through a shard view keep the bytes around them.
    ShardBuffer shard(*f, 10000);
    const ShardVec v = shard.view();
    std::vector<float> all(10000);
    std::iota(all.begin(), all.end(), 100.f);
    v.copy_from(all.data());
    const std::vector<float> patch(37, -1.f);
    v.sub(1001, 37).copy_from(patch.data());
    std::vector<float> want = all;
    std::fill(want.begin() + 1001, want.begin() + 1038, -1.f);
    REQUIRE(v.values() == want);
    REQUIRE(v.sub(1030, 20).values() == std::vector<float>(want.begin() + 1030, want.begin() + 1050));
    v.sub(5, 3).fill(7.f);
    REQUIRE(v.sub(4, 5).values() == std::vector<float>{want[4], 7.f, 7.f, 7.f, want[8]});

    const IoStats s = f->totals();
    REQUIRE(s.write_bytes >= double(bytes));
    REQUIRE(s.read_bytes >= double(2 * bytes));
  }
  REQUIRE(fs::is_empty(tmp.path));  // the file had no name; the lock file went with its holder
}

TEST_CASE("offload file: a second job, a missing directory and too little room are refused",
          "[offload]") {
  TmpDir tmp;
  auto first = OffloadFile::prepare(tmp.path, 4096, true);
  try {
    OffloadFile::prepare(tmp.path, 4096, true);
    FAIL("a second lock holder was let in");
  } catch (const OffloadError& e) {
    REQUIRE(e.code == exit_code::kCheckpointWrite);
    REQUIRE_THAT(e.what(), Catch::Contains("in use by another fsdp job (pid " +
                                           std::to_string(::getpid())));
  }
  first.reset();
  REQUIRE_NOTHROW(OffloadFile::prepare(tmp.path, 4096, true));  // released with its holder
  try {
    OffloadFile::prepare(tmp.path + "/missing", 4096, true);
    FAIL("a missing directory was accepted");
  } catch (const OffloadError& e) {
    REQUIRE(e.code == exit_code::kBadConfig);
    REQUIRE_THAT(e.what(), Catch::Contains("/missing: No such file or directory"));
  }
  try {
    OffloadFile::prepare(tmp.path, std::int64_t(1) << 62, true);
    FAIL("4 EiB fit");
  } catch (const OffloadError& e) {
    REQUIRE(e.code == exit_code::kCheckpointWrite);
    REQUIRE_THAT(e.what(), Catch::Contains("no space left on device"));
  }
}
