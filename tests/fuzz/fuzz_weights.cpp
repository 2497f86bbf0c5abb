// SPDX-License-Identifier: MIT
// libFuzzer target for the weight-file readers behind fsdp-train --init-from and fsdp-sample:
// arbitrary bytes as a safetensors or llm.c file. Only WeightsError may leave the readers;
// a file they accept must be fully readable for the model its header describes.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "io/weight_source.hpp"
#include "io/weights_error.hpp"
#include "model/architecture.hpp"

namespace {

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "fuzz_weights: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/fuzz_weights." + std::to_string(::getpid());
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    bug("cannot write " + path);
  }
  try {
    const auto src = fsdp::weights::open_weights(path);
    const fsdp::ModelConfig& s = src->shape();
    if (s.n_layer <= 0 || s.n_embd <= 0 || s.vocab_size <= 0 || s.n_positions <= 0) return 0;
    fsdp::ModelConfig m = s;
    m.n_head = 1;
    m.block_size = s.n_positions;
    const std::vector<fsdp::UnitLayout> units = fsdp::model_units(m);
    src->check(units);  // from here on every tensor's bytes are inside the file
    std::vector<float> buf;
    for (const fsdp::UnitLayout& u : units)
      for (const fsdp::TensorSpec& t : u.tensors) {
        buf.resize(std::size_t(t.numel));
        src->read(t, 0, t.numel, buf.data());
        if (t.numel > 2) src->read(t, 1, t.numel - 1, buf.data());  // a range cutting rows
      }
  } catch (const fsdp::weights::WeightsError&) {
    return 0;  // the one clean rejection
  } catch (const std::exception& e) {
    bug(std::string("escaped exception (not WeightsError): ") + e.what());
  }
  return 0;
}
