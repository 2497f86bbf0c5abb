// SPDX-License-Identifier: MIT
// The fuzz targets read files; none builds a model. The models (and with them every Kokkos
// kernel) stay out of their link: the skeleton's constructor here aborts, so a reader that tried to
// build one would be found.
#include <cstdlib>

#include "model/decoder/block_spec.hpp"

namespace fsdp {

std::unique_ptr<Decoder> build_skeleton(const ModelConfig&, const BlockSpec&, std::vector<UnitLayout>,
                                        int, AttentionPath, const DecoderOptions&, MemoryTracker&) {
  std::abort();
}

}  // namespace fsdp
