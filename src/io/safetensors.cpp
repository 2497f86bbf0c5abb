// SPDX-License-Identifier: MIT
#include "io/safetensors.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <limits>

#include "io/raw_file.hpp"
#include "io/weights_error.hpp"

namespace fsdp::weights {
namespace {

// A header larger than this is not a model's table of contents but an attack on memory.
constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t(100) << 20;

[[noreturn]] void fail(const std::string& path, const std::string& where, const std::string& what) {
  throw WeightsError(path + ": " + (where.empty() ? "" : quote(where) + ": ") + what);
}

// The tensors must tile the data region exactly, as Hugging Face's reader demands: sorted by
// offset, each starts where the one before ends, the first at 0 and the last at the end. Two
// tensors sharing bytes or bytes that belong to none mean the header does not describe the file.
void check_tiling(const SafetensorsHeader& h, std::uint64_t data_bytes) {
  std::vector<std::pair<const std::string*, const StoredTensor*>> by_offset;
  for (const auto& [name, t] : h.tensors) by_offset.emplace_back(&name, &t);
  std::sort(by_offset.begin(), by_offset.end(), [](const auto& a, const auto& b) {
    return a.second->begin != b.second->begin ? a.second->begin < b.second->begin
                                              : a.second->end < b.second->end;
  });
  std::uint64_t at = h.data_start;
  for (const auto& [name, t] : by_offset) {
    if (t->begin != at)
      fail(h.path, *name,
           "data_offsets begin at " + std::to_string(t->begin - h.data_start) + ", but the " +
               (t->begin < at ? "tensor before it ends at " : "tensors before it end at ") +
               std::to_string(at - h.data_start) +
               (t->begin < at ? " (they overlap)" : " (a gap no tensor covers)"));
    at = t->end;
  }
  if (at - h.data_start != data_bytes)
    fail(h.path, "",
         "the tensors cover " + std::to_string(at - h.data_start) + " of the " +
             std::to_string(data_bytes) + " data bytes (the header does not describe the file)");
}

}  // namespace

std::string quote(const std::string& s, std::size_t max_chars) {
  // Control bytes are written as \xNN: a NUL would end the message where it is printed
  // (what() is a C string), and a newline would split the one-line error in two.
  std::string out;
  for (char c : s.substr(0, max_chars)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out += c;
      continue;
    }
    static const char* hex = "0123456789abcdef";
    out += "\\x";
    out += hex[u >> 4];
    out += hex[u & 0xf];
  }
  if (s.size() > max_chars) out += "...";
  return out;
}

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

const char* dtype_name(DType d) {
  return d == DType::F32 ? "F32" : d == DType::BF16 ? "BF16" : "F16";
}
int dtype_bytes(DType d) { return d == DType::F32 ? 4 : 2; }

std::int64_t StoredTensor::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

SafetensorsHeader SafetensorsHeader::read(const std::string& path) {
  SafetensorsHeader h;
  h.path = path;
  const RawFile in(path);  // a regular file, or WeightsError naming its kind
  h.file_bytes = in.size();
  if (h.file_bytes < 8) fail(path, "header", "the file is shorter than the 8-byte header length");
  unsigned char len_bytes[8];
  in.read(0, 8, len_bytes, "header length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
  // The length is the file's own first bytes: never printed (a file that is not safetensors
  // would have its content shown as a number, issue 63), only what is wrong with it.
  if (n > h.file_bytes - 8)
    fail(path, "header", "length (the first 8 bytes, not shown) points past the end of the file (" +
                             std::to_string(h.file_bytes) + " bytes): not a safetensors file");
  if (n > kMaxHeaderBytes)
    fail(path, "header", "length (the first 8 bytes, not shown) is over 100 MiB: not a safetensors file");
  if (n == 0) fail(path, "header", "not a safetensors file: its header length is 0");
  std::string text(n, '\0');
  in.read(8, n, text.data(), "header");
  h.data_start = 8 + n;
  const std::uint64_t data_bytes = h.file_bytes - h.data_start;

  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(path, "header", "not valid JSON (" + quote(e.what()) + ")");
  }
  if (!j.is_object()) fail(path, "header", "not a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) fail(path, name, "not an object of strings");
      for (auto m = v.begin(); m != v.end(); ++m)
        if (m.value().is_string()) h.metadata[m.key()] = m.value().get<std::string>();
      continue;
    }
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") ||
        !v.contains("data_offsets"))
      fail(path, name, "needs dtype, shape and data_offsets");
    StoredTensor t;
    const nlohmann::json& dt = v["dtype"];
    if (!dt.is_string()) fail(path, name, "dtype is not a string");
    if (dt == "F32") t.dtype = DType::F32;
    else if (dt == "BF16") t.dtype = DType::BF16;
    else if (dt == "F16") t.dtype = DType::F16;
    else fail(path, name, "dtype " + quote(dt.get<std::string>()) + " (only F32, BF16 and F16 are read)");
    const nlohmann::json& sh = v["shape"];
    if (!sh.is_array() || sh.size() > 8) fail(path, name, "shape is not an array of at most 8 sizes");
    std::uint64_t numel = 1;
    for (const nlohmann::json& d : sh) {
      if (!d.is_number_unsigned()) fail(path, name, "shape holds a value that is not a size");
      const std::uint64_t x = d.get<std::uint64_t>();
      if (x > (std::uint64_t(1) << 40) || (x != 0 && numel > (std::uint64_t(1) << 40) / x))
        fail(path, name, "shape is too large");
      numel *= x;
      t.shape.push_back(std::int64_t(x));
    }
    const nlohmann::json& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned())
      fail(path, name, "data_offsets is not [begin, end]");
    const std::uint64_t b = off[0].get<std::uint64_t>(), e = off[1].get<std::uint64_t>();
    if (b > e || e > data_bytes)
      fail(path, name, "data_offsets [" + std::to_string(b) + ", " + std::to_string(e) +
                           "] lie outside the " + std::to_string(data_bytes) + " data bytes");
    if (e - b != numel * std::uint64_t(dtype_bytes(t.dtype)))
      fail(path, name, "data_offsets span " + std::to_string(e - b) + " bytes, but shape " +
                           shape_text(t.shape) + " of " + dtype_name(t.dtype) + " needs " +
                           std::to_string(numel * std::uint64_t(dtype_bytes(t.dtype))));
    t.begin = h.data_start + b;
    t.end = h.data_start + e;
    h.tensors[name] = t;
  }
  check_tiling(h, data_bytes);
  return h;
}

std::string safetensors_header(const std::vector<std::string>& order,
                               std::map<std::string, StoredTensor>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  // nlohmann::ordered_json keeps the data order readable in the header; readers do not care.
  nlohmann::ordered_json j;
  if (!metadata.empty()) j["__metadata__"] = metadata;
  std::uint64_t at = 0;
  for (const std::string& name : order) {
    StoredTensor& t = tensors.at(name);
    const std::uint64_t bytes = std::uint64_t(t.numel()) * std::uint64_t(dtype_bytes(t.dtype));
    j[name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {at, at + bytes}}};
    t.begin = at;
    t.end = at + bytes;
    at += bytes;
  }
  std::string text = j.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  std::string out(8, '\0');
  std::uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[std::size_t(i)] = char((n >> (8 * i)) & 0xff);
  for (const std::string& name : order) {
    StoredTensor& t = tensors.at(name);
    t.begin += 8 + n;
    t.end += 8 + n;
  }
  return out + text;
}

}  // namespace fsdp::weights
