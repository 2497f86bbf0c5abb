// SPDX-License-Identifier: MIT
// The safetensors file format (Hugging Face): an 8-byte little-endian header length N, N bytes
// of JSON mapping each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (byte
// offsets into the data that follows the header) plus an optional "__metadata__" map of
// strings, then the raw little-endian tensor data. Readers here trust nothing in the header:
// every offset, size and shape is checked against the file before any data is read.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fsdp::weights {

enum class DType { F32, BF16, F16 };
const char* dtype_name(DType d);  // "F32", "BF16", "F16"
std::string shape_text(const std::vector<std::int64_t>& shape);  // "[768, 2304]"
int dtype_bytes(DType d);

struct StoredTensor {
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  // absolute byte offsets in the file
  std::int64_t numel() const;
};

// The parsed header of a safetensors file. Throws WeightsError naming the file and the field.
struct SafetensorsHeader {
  std::string path;
  std::uint64_t file_bytes = 0, data_start = 0;
  std::map<std::string, StoredTensor> tensors;
  std::map<std::string, std::string> metadata;
  static SafetensorsHeader read(const std::string& path);
};

// The header bytes (length prefix included) for tensors laid out back to back in `order`,
// their data starting right after it; the JSON is padded with spaces to a multiple of 8 bytes
// so the data is aligned. Fills each tensor's begin/end.
std::string safetensors_header(const std::vector<std::string>& order,
                               std::map<std::string, StoredTensor>& tensors,
                               const std::map<std::string, std::string>& metadata);

}  // namespace fsdp::weights
