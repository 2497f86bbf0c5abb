// SPDX-License-Identifier: MIT
#include "train/sample.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "core/check.hpp"

namespace fsdp {
namespace {

// splitmix64 of (seed, token index): the draw for a token does not depend on earlier draws.
double uniform(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * (i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-53;
}

}  // namespace

std::int32_t pick_token(const std::vector<float>& logits, double temperature, int top_k, double u) {
  const int V = int(logits.size());
  if (temperature <= 0.0)
    return std::int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  std::vector<int> order(static_cast<std::size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  const int k = top_k > 0 && top_k < V ? top_k : V;
  // Largest first, ties by id, so the choice is the same on every machine.
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
    return logits[std::size_t(a)] > logits[std::size_t(b)] ||
           (logits[std::size_t(a)] == logits[std::size_t(b)] && a < b);
  });
  const double top = logits[std::size_t(order[0])];
  std::vector<double> p(static_cast<std::size_t>(k));
  double sum = 0.0;
  for (int i = 0; i < k; ++i)
    sum += p[std::size_t(i)] = std::exp((logits[std::size_t(order[std::size_t(i)])] - top) / temperature);
  double acc = 0.0;
  for (int i = 0; i < k; ++i) {
    acc += p[std::size_t(i)] / sum;
    if (u < acc) return order[std::size_t(i)];
  }
  return order[std::size_t(k - 1)];
}

std::vector<std::int32_t> sample(Engine& engine, comm::Communicator& world, std::vector<std::int32_t> tokens,
                                 const SampleOptions& o) {
  const int rank = world.rank();
  Decoder& model = engine.model();
  const int T = model.config().block_size, B = model.micro_batch();
  std::vector<std::int32_t> inputs(std::size_t(B) * T, 0), targets(inputs.size(), 0);
  for (int n = 0; n < o.tokens; ++n) {
    // The last T tokens; positions past the context hold token 0, which causal attention
    // keeps from reaching the position read.
    const int len = int(std::min<std::size_t>(tokens.size(), std::size_t(T)));
    std::copy(tokens.end() - len, tokens.end(), inputs.begin());
    engine.evaluate(1, [&](int, Decoder& m) { m.set_batch(inputs.data(), targets.data()); });
    std::int32_t next = 0;
    if (rank == 0)
      next = pick_token(model.logits_at(0, len - 1), o.temperature, o.top_k,
                        uniform(o.seed, std::uint64_t(n)));
    tokens.push_back(std::int32_t(world.all_reduce_max(rank == 0 ? double(next) : -1.0)));
    // Every rank holds the same token, so every rank stops together.
    if (std::find(o.stop_ids.begin(), o.stop_ids.end(), tokens.back()) != o.stop_ids.end()) break;
  }
  return tokens;
}

std::string bytes_as_text(const std::vector<std::int32_t>& tokens, bool one_line) {
  std::string out;
  for (std::int32_t t : tokens) {
    const unsigned c = unsigned(t) & 0xffu;
    if (c == '\n' && !one_line) out += '\n';
    else if (c == '\n') out += "\\n";
    else if (c == '\\') out += "\\\\";
    else if (c >= 32 && c < 127) out += char(c);
    else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace fsdp
