// SPDX-License-Identifier: MIT
// Test tool: NF4-quantises a raw float32 file with fsdp's codec (model/gemm/nf4.hpp), for
// tests/e2e/nf4_reference.sh to compare with bitsandbytes (tests/reference/nf4_check.py).
//   nf4_codec IN.f32 OUT
// writes OUT.packed (the bytes), OUT.absmax (float32 scales) and OUT.deq (float32, dequantised).
#include <cstdint>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "model/gemm/nf4.hpp"

namespace {
template <class T>
bool write(const std::string& path, const std::vector<T>& v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(T)));
  return bool(f);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: nf4_codec IN.f32 OUT\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.is_open() || bytes.size() % sizeof(float) != 0) {
    std::cerr << argv[1] << ": not a whole number of float32 values\n";
    return 1;
  }
  const std::int64_t n = std::int64_t(bytes.size() / sizeof(float));
  std::vector<float> x(std::size_t(n), 0.0f);
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(x.data()));
  std::vector<std::uint8_t> packed(std::size_t(fsdp::kernels::nf4_bytes(n)));
  std::vector<float> absmax(static_cast<std::size_t>(fsdp::kernels::nf4_scales(n)));
  std::vector<float> deq(static_cast<std::size_t>(n));
  fsdp::kernels::nf4_quantize(x.data(), n, packed.data(), absmax.data());
  fsdp::kernels::nf4_dequantize(packed.data(), absmax.data(), n, deq.data());
  const std::string out = argv[2];
  if (!write(out + ".packed", packed) || !write(out + ".absmax", absmax) || !write(out + ".deq", deq)) {
    std::cerr << out << ": cannot write\n";
    return 1;
  }
  return 0;
}
