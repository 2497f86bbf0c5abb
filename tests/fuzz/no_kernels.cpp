// SPDX-License-Identifier: MIT
// The fuzz targets read files; none builds a model. The models (and with them every Kokkos
// kernel) stay out of their link: their constructors here abort, so a reader that tried to
// build one would be found.
#include <cstdlib>

#include "model/gpt2/gpt2_arch.hpp"
#include "model/llama/llama_arch.hpp"

namespace fsdp {

std::unique_ptr<Decoder> gpt2::make_model(const ModelConfig&, const DecoderOptions&,
                                          MemoryTracker&) {
  std::abort();
}

std::unique_ptr<Decoder> llama::make_model(const ModelConfig&, const DecoderOptions&,
                                           MemoryTracker&) {
  std::abort();
}

}  // namespace fsdp
