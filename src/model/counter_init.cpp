// SPDX-License-Identifier: MIT
#include "model/counter_init.hpp"

#include <cmath>

namespace fsdp {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t hash_name(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace

std::uint64_t tensor_stream(std::uint64_t seed, const std::string& tensor_name) {
  return splitmix64(seed ^ hash_name(tensor_name));
}

float normal_at(std::uint64_t key, std::int64_t i) {
  const std::uint64_t a = splitmix64(key ^ splitmix64(2 * static_cast<std::uint64_t>(i)));
  const std::uint64_t b = splitmix64(key ^ splitmix64(2 * static_cast<std::uint64_t>(i) + 1));
  const double u1 = ((a >> 11) + 1.0) * (1.0 / 9007199254740993.0);  // (0, 1]
  const double u2 = (b >> 11) * (1.0 / 9007199254740992.0);
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

float uniform_at(std::uint64_t key, std::int64_t i, float bound) {
  const std::uint64_t a = splitmix64(key ^ splitmix64(2 * static_cast<std::uint64_t>(i)));
  const double u = (a >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
  return static_cast<float>((2.0 * u - 1.0) * bound);
}

}  // namespace fsdp
