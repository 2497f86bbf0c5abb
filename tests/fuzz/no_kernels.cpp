// SPDX-License-Identifier: MIT
// The fuzz targets read files; none builds a model. The GPT-2 model (and with it every Kokkos
// kernel) stays out of their link: its constructor here aborts, so a reader that tried to
// build one would be found.
#include <cstdlib>

#include "model/gpt2/gpt2_arch.hpp"

namespace fsdp {

std::unique_ptr<Decoder> gpt2::make_model(const ModelConfig&, const DecoderOptions&,
                                          MemoryTracker&) {
  std::abort();
}

}  // namespace fsdp
