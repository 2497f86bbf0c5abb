// SPDX-License-Identifier: MIT
// core/input_file: what is not a regular file is refused by its kind without waiting (a FIFO
// with no writer would block a plain open for ever), and reads stop at their bound.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/input_file.hpp"

using namespace fsdp;

namespace {

std::string refusal(const std::string& path, std::uint64_t max_bytes = 1 << 20) {
  try {
    read_input(path, "test input", max_bytes);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("an input that is not a regular file is refused by its kind, at once", "[input]") {
  const std::string fifo = "/tmp/fsdp_test_input_fifo_" + std::to_string(::getpid());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(refusal(fifo) == fifo + ": cannot read test input: is a FIFO");
  std::remove(fifo.c_str());
  CHECK(refusal("/dev/zero") == "/dev/zero: cannot read test input: is a character device");
  CHECK(refusal("/tmp") == "/tmp: cannot read test input: is a directory");
  CHECK(refusal("/tmp/fsdp_no_such_input") ==
        "/tmp/fsdp_no_such_input: cannot read test input: no such file");
}

TEST_CASE("an input is read whole within its bound, refused past it", "[input]") {
  const std::string path = "/tmp/fsdp_test_input_" + std::to_string(::getpid());
  std::ofstream(path, std::ios::binary) << std::string(100, 'x');
  CHECK(read_input(path, "test input", 100) == std::string(100, 'x'));
  CHECK(refusal(path, 99) == path + ": cannot read test input: larger than 99 bytes");
  const InputFile f(path, "");
  CHECK(f.size() == 100);
  char buf[4];
  CHECK_THROWS_WITH(f.read_at(98, 4, buf, "tail"), path + ": tail: the file ends early");
  std::remove(path.c_str());
}
