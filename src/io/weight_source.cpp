// SPDX-License-Identifier: MIT
#include "io/weight_source.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "io/raw_file.hpp"
#include "io/weights_error.hpp"
#include "io/weights_sources.hpp"

namespace fsdp::weights {

WeightFormat detect_weight_format(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return WeightFormat::Safetensors;
  // Opened as an input (a FIFO or device refused by kind, never waited on); a short file reads
  // fewer than 9 bytes and is named below as no format.
  unsigned char b[9] = {};
  const RawFile file(path);
  const std::uint64_t got = std::min<std::uint64_t>(file.size(), sizeof b);
  file.read(0, got, b, "magic bytes");
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
