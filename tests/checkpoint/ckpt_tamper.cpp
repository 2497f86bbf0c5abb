// SPDX-License-Identifier: MIT
// Test helper for tests/e2e/checkpoint.sh: damages a checkpoint on purpose.
//   ckpt_tamper flip FILE DATASET [INDEX]   flip a byte of element INDEX (default 0)
//   ckpt_tamper reshape FILE DATASET        replace the dataset by one of another shape
//   ckpt_tamper offset FILE DATASET         print the file offset of the dataset's data
#include <cstdio>
#include <string>

#include "damage.hpp"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: ckpt_tamper flip|reshape|offset FILE DATASET [INDEX]\n");
    return 2;
  }
  const std::string op = argv[1], file = argv[2], ds = argv[3];
  try {
    if (op == "flip")
      fsdp::test::flip_byte(file, ds, argc > 4 ? std::stoll(argv[4]) : 0);
    else if (op == "reshape")
      fsdp::test::reshape_dataset(file, ds);
    else if (op == "offset")
      std::printf("%lld\n", (long long)fsdp::test::element_offset(file, ds, 0));
    else
      throw std::runtime_error("unknown operation " + op);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ckpt_tamper: %s\n", e.what());
    return 1;
  }
  return 0;
}
