// SPDX-License-Identifier: MIT
#include "io/weight_source.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/weights_error.hpp"
#include "io/weights_sources.hpp"

namespace fsdp::weights {

WeightFormat detect_weight_format(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return WeightFormat::Safetensors;
  if (!std::filesystem::exists(path, ec)) throw WeightsError(path + ": no such file or directory");
  std::ifstream in(path, std::ios::binary);
  unsigned char b[9] = {};
  in.read(reinterpret_cast<char*>(b), sizeof b);
  const std::streamsize got = in.gcount();
  if (got >= 8 && std::memcmp(b, "\x89HDF\r\n\x1a\n", 8) == 0) return WeightFormat::Checkpoint;
  if (got >= 4) {
    std::int32_t magic = 0;
    std::memcpy(&magic, b, 4);
    if (magic == kLlmcParamsMagic) return WeightFormat::Llmc;
  }
  // A safetensors file starts with its header's length and then '{'.
  if (got == 9 && b[8] == '{') return WeightFormat::Safetensors;
  throw WeightsError(path +
                     ": not a safetensors file, an llm.c parameter file or an fsdp checkpoint");
}

std::unique_ptr<WeightSource> open_weights(const std::string& path) {
  switch (detect_weight_format(path)) {
    case WeightFormat::Safetensors: return open_safetensors(path);
    case WeightFormat::Llmc: return open_llmc(path);
    case WeightFormat::Checkpoint: break;
  }
  throw WeightsError(path + ": an fsdp checkpoint (read it through the checkpointer)");
}

}  // namespace fsdp::weights
