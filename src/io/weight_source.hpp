// SPDX-License-Identifier: MIT
// Files of weights that a run can start from (fsdp-train --init-from), read in the model's own
// tensor names and layouts (model/architecture.hpp) whatever the file's own layout:
//   a Hugging Face directory (model.safetensors, optional config.json) or a .safetensors file,
//   in the form of the architecture its tensors (or config.json's "architectures") say;
//   an llm.c GPT-2 parameter file (llm.c's 124M .bin: 256 int32 header, magic 20240326, version 3 fp32
//   or 5 bf16, PyTorch Linear layouts, the vocabulary padded to Vp rows).
// (An fsdp checkpoint's /model group is read by io/checkpoint.hpp, which also verifies it.)
// A source reads only the byte ranges asked for, so each rank reads its shard and nothing else.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/model_config.hpp"
#include "model/unit_layout.hpp"

namespace fsdp::weights {

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  const std::string& path() const { return path_; }
  // The model a file implies: its architecture and shape (n_head 0 when the file does not say).
  const ModelConfig& shape() const { return shape_; }
  // Throws WeightsError naming the tensor if the file lacks one that `units` hold, or holds it
  // in another shape.
  virtual void check(const std::vector<UnitLayout>& units) const = 0;
  // Elements [begin, end) of t's row-major flattening, as float32 (bf16 widened exactly).
  virtual void read(const TensorSpec& t, std::int64_t begin, std::int64_t end,
                    float* out) const = 0;

 protected:
  std::string path_;
  ModelConfig shape_;
};

enum class WeightFormat { Safetensors, Llmc, Checkpoint };
// By content, not by name: a directory or a file whose first bytes parse as a safetensors
// header, an llm.c magic, an HDF5 signature. Throws WeightsError when it is none of them.
WeightFormat detect_weight_format(const std::string& path);
// Safetensors or Llmc (throws WeightsError for anything else).
std::unique_ptr<WeightSource> open_weights(const std::string& path);

}  // namespace fsdp::weights
