// SPDX-License-Identifier: MIT
#include "bench/tokenizer_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/check.hpp"
#include "core/input_file.hpp"
#include "data/data_error.hpp"
#include "data/tokenizer.hpp"

namespace fsdp::bench {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int run_tokenizer_bench(MPI_Comm world, const TokenizerBenchOptions& o) {
  int size = 1;
  MPI_Comm_size(world, &size);
  if (size != 1) fatal("fsdp-bench tokenizer: run it on one rank (it times one core)");
  if (o.runs < 1) fatal("fsdp-bench tokenizer: --runs must be at least 1");
  try {
    const std::string text = rethrow_input_as<DataError>(
        [&] { return read_input(o.text, "text", std::uint64_t(4) << 30); });
    auto t0 = std::chrono::steady_clock::now();
    const Tokenizer tok = Tokenizer::load(o.tokenizer);
    const double load_s = seconds_since(t0);
    std::printf(
        "# fsdp-bench tokenizer: %s on %s (%zu bytes), one thread, vocabulary %zu; "
        "load %.3f s\n",
        o.tokenizer.c_str(), o.text.c_str(), text.size(), tok.vocab_size(), load_s);
    std::printf("%5s %12s %12s %9s %9s %12s %12s\n", "run", "bytes", "tokens", "seconds", "MB/s",
                "tokens/s", "words cached");
    std::vector<double> rates;
    for (int r = 0; r < o.runs; ++r) {
      tok.model().clear_cache();
      t0 = std::chrono::steady_clock::now();
      const std::vector<std::int32_t> ids = tok.encode(text, o.special);
      const double s = seconds_since(t0);
      rates.push_back(double(text.size()) / s / 1e6);
      std::printf("%5d %12zu %12zu %9.3f %9.2f %12.3e %12zu\n", r + 1, text.size(), ids.size(), s,
                  rates.back(), double(ids.size()) / s, tok.model().cached_words());
    }
    std::sort(rates.begin(), rates.end());
    std::printf("# MB/s: median %.2f, min %.2f, max %.2f over %d runs (1 MB = 10^6 bytes)\n",
                rates[rates.size() / 2], rates.front(), rates.back(), o.runs);
  } catch (const DataError& e) {
    fatal(std::string("fsdp-bench tokenizer: ") + e.what(), 2);
  }
  return 0;
}

}  // namespace fsdp::bench
