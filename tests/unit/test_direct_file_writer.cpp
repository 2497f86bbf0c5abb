// SPDX-License-Identifier: MIT
// The checkpoint's data writer against bytes written then read back with plain reads: ranges at
// every alignment, large and small, in any order, next to bytes it must leave alone; the same on
// a file system without O_DIRECT where there is one (tmpfs), and errors that name the file.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "io/direct_file_writer.hpp"

using namespace fsdp;
namespace fs = std::filesystem;

namespace {

std::vector<unsigned char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(in), {});
}

// Random ranges of a file of `size` bytes (prefilled with 0xAB, as HDF5 metadata around the
// data), written in a shuffled order, must give exactly the expected bytes.
void check_ranges(const std::string& dir, bool expect_direct) {
  const std::string path = dir + "/ranges.bin";
  const std::uint64_t size = (3u << 20) + 123;
  std::vector<unsigned char> want(size, 0xAB);
  { std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(want.data()), size); }
  std::mt19937 rng(7);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;  // disjoint [a, b)
  for (std::uint64_t at = 17; at < size;) {
    const std::uint64_t len =
        std::min<std::uint64_t>(rng() % 4 == 0 ? rng() % 300 : rng() % 400000 + 1, size - at);
    ranges.push_back({at, at + len});
    at += len + (rng() % 3 == 0 ? rng() % 5000 : 0);  // gaps stay 0xAB
  }
  std::shuffle(ranges.begin(), ranges.end(), rng);
  DirectFileWriter w(path);
  if (expect_direct) REQUIRE(w.direct());
  for (const auto& [a, b] : ranges) {
    std::vector<unsigned char> src(b - a);
    for (std::uint64_t i = a; i < b; ++i) src[i - a] = want[i] = static_cast<unsigned char>(i * 131 + 7);
    // From an odd address: the source's alignment is the bounce buffer's problem.
    std::vector<unsigned char> odd(src.size() + 1);
    std::copy(src.begin(), src.end(), odd.begin() + 1);
    w.write(a, odd.data() + 1, src.size());
  }
  w.finish();
  REQUIRE(read_all(path) == want);
}

}  // namespace

TEST_CASE("direct writer: ranges at any alignment read back, the bytes between untouched",
          "[checkpoint]") {
  char tmpl[] = "/tmp/fsdp_direct_XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  // Whether this file system takes O_DIRECT at all decides what w.direct() must say.
  const int probe = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_DIRECT, 0600);
  check_ranges(dir, probe >= 0);
  if (probe >= 0) ::close(probe);
  fs::remove_all(dir);
  if (fs::is_directory("/dev/shm")) {  // tmpfs: direct where the kernel allows it, else buffered
    char shm[] = "/dev/shm/fsdp_direct_XXXXXX";
    if (::mkdtemp(shm)) {
      check_ranges(shm, false);
      fs::remove_all(shm);
    }
  }
}

TEST_CASE("direct writer: a missing file and a failed write name the file", "[checkpoint]") {
  try {
    DirectFileWriter w("/nonexistent-dir/x.h5");
    FAIL("opened a file in a missing directory");
  } catch (const std::runtime_error& e) {
    REQUIRE(std::string(e.what()).find("/nonexistent-dir/x.h5") != std::string::npos);
  }
  if (fs::exists("/dev/full")) {  // every write fails with ENOSPC
    DirectFileWriter w("/dev/full");
    const std::vector<char> bytes(10000, 1);
    try {
      w.write(0, bytes.data(), bytes.size());
      FAIL("a write to /dev/full succeeded");
    } catch (const std::runtime_error& e) {
      REQUIRE(std::string(e.what()).find("/dev/full") != std::string::npos);
      REQUIRE(std::string(e.what()).find("No space left") != std::string::npos);
    }
  }
}
