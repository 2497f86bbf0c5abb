// SPDX-License-Identifier: MIT
#include "io/hf_export_owned.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/input_file.hpp"
#include "data/hash.hpp"
#include "io/atomic_output.hpp"

namespace fsdp::ckpt {
namespace fs = std::filesystem;
namespace {

constexpr const char* kWrittenBy = "fsdp-ckpt export";
constexpr std::uint64_t kHead = 1 << 20, kTail = 64 << 10;

std::uint64_t fnv1a(std::uint64_t h, const std::string& bytes) {
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

std::string hex(std::uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
  return buf;
}

// The record's entries, or why `path` is not a record of ours.
std::string read_record(const std::string& path, std::vector<OwnedFile>& out) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (!fs::exists(st)) return {};
  const std::string refused = path + ": exists and is not a record fsdp-ckpt export wrote: refusing to write over it";
  if (!fs::is_regular_file(st)) return refused;
  std::string text;
  try {
    text = read_input(path, "export record", 16 << 20);
  } catch (const std::exception& e) {
    return e.what();
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("written_by", std::string()) != kWrittenBy ||
      !j.contains("files") || !j["files"].is_array())
    return refused;
  for (const nlohmann::json& f : j["files"]) {
    if (!f.is_object() || !f.contains("name") || !f["name"].is_string() || !f.contains("bytes") ||
        !f["bytes"].is_number_unsigned() || !f.contains("hash") || !f["hash"].is_string())
      continue;  // an entry we cannot read proves nothing
    OwnedFile o;
    o.name = f["name"].get<std::string>();
    o.bytes = f["bytes"].get<std::uint64_t>();
    try {
      o.hash = std::stoull(f["hash"].get<std::string>(), nullptr, 16);
    } catch (const std::exception&) {
      continue;
    }
    out.push_back(o);
  }
  return {};
}

}  // namespace

bool export_name(const std::string& n) {
  if (n == "config.json" || n == "model.safetensors" || n == "model.safetensors.index.json") return true;
  const std::string tail = ".safetensors";
  return n.rfind("model-", 0) == 0 && n.size() > 6 + tail.size() &&
         n.compare(n.size() - tail.size(), tail.size(), tail) == 0;
}

OwnedFile owned_entry(const std::string& path, const std::string& name) {
  const InputFile in(path, "export file");
  OwnedFile o;
  o.name = name;
  o.bytes = in.size();
  const std::uint64_t head = std::min(o.bytes, kHead);
  std::string buf(head, '\0');
  if (head) in.read_at(0, head, buf.data(), "head");
  std::uint64_t h = fnv1a(0xcbf29ce484222325ULL, buf);
  if (o.bytes > kHead) {
    const std::uint64_t tail = std::min(o.bytes - kHead, kTail);
    buf.assign(tail, '\0');
    in.read_at(o.bytes - tail, tail, buf.data(), "tail");
    h = fnv1a(h, buf);
  }
  o.hash = mix64(h ^ o.bytes);
  return o;
}

std::string unowned_files(const std::string& dir, const std::vector<std::string>& writes,
                          std::vector<OwnedFile>& proven) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return {};
  std::vector<OwnedFile> record;
  if (std::string why = read_record((fs::path(dir) / kExportRecord).string(), record); !why.empty())
    return why;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (!export_name(n) && std::find(writes.begin(), writes.end(), n) == writes.end()) continue;
    bool ours = false;
    if (e.symlink_status(ec).type() == fs::file_type::regular) {
      try {
        const OwnedFile now = owned_entry(e.path().string(), n);
        ours = std::any_of(record.begin(), record.end(), [&](const OwnedFile& r) {
          return r.name == n && r.bytes == now.bytes && r.hash == now.hash;
        });
        if (ours) proven.push_back(now);
      } catch (const std::exception&) {
        ours = false;
      }
    }
    if (!ours) names.push_back(n);
  }
  if (names.empty()) return {};
  std::sort(names.begin(), names.end());
  std::string list;
  for (std::size_t i = 0; i < names.size() && i < 4; ++i) list += (i ? ", " : "") + names[i];
  if (names.size() > 4) list += " and " + std::to_string(names.size() - 4) + " more";
  return dir + ": holds " + list + ", which no earlier fsdp-ckpt export wrote (" + kExportRecord +
         " lists no such file with its size and hash: another program's, or changed since): "
         "refusing to replace or remove " + (names.size() == 1 ? "it" : "them") +
         "; export to another directory";
}

void write_export_record(const std::string& dir, const std::vector<OwnedFile>& files) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const OwnedFile& f : files)
    list.push_back({{"name", f.name}, {"bytes", f.bytes}, {"hash", hex(f.hash)}});
  const nlohmann::ordered_json j{
      {"written_by", kWrittenBy},
      {"about", "the files fsdp-ckpt export wrote here, so that a later export replaces only them"},
      {"files", list}};
  io::write_file_atomically((fs::path(dir) / kExportRecord).string(), j.dump(1) + "\n");
}

}  // namespace fsdp::ckpt
