// SPDX-License-Identifier: MIT
// Which files of a Hugging Face directory fsdp-ckpt export may replace or remove (issue 63):
// only those it can prove are its own earlier export's. Each export writes a record,
// DIR/fsdp_export.json, naming every file it wrote with its size and a 64-bit hash of its
// contents (all of a small file; the first MiB, which holds a safetensors header, and the last
// 64 KiB of a large one). A file under one of the export's names (config.json,
// model.safetensors, model.safetensors.index.json, model-*.safetensors) is the export's to
// replace or remove only when the record lists it with the size and hash it has now; anything
// else (another program's model, a config.json edited since) is refused by name, untouched.
// The record is renamed in before the files it lists (holding the old entries too) and
// rewritten after them, so a crash at any point leaves every file provable.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fsdp::ckpt {

inline constexpr const char* kExportRecord = "fsdp_export.json";

// The record's entry for one file: its size and content hash.
struct OwnedFile {
  std::string name;
  std::uint64_t bytes = 0, hash = 0;
};

// The entry of the file at `path` under `name` (read now). Throws std::runtime_error.
OwnedFile owned_entry(const std::string& path, const std::string& name);

// Export's names in `dir` that exist and are not provably its own: "" when all are (or none
// exist), else one line naming them. `writes`: the names the export writes; any other export
// name present is one it would remove. On success `proven` gets the record's entries for the
// files present (to be kept in the record until they are replaced).
std::string unowned_files(const std::string& dir, const std::vector<std::string>& writes,
                          std::vector<OwnedFile>& proven);

// Writes the record (atomically) listing `files`.
void write_export_record(const std::string& dir, const std::vector<OwnedFile>& files);

// Whether `name` is one of the names an export writes or removes.
bool export_name(const std::string& name);

}  // namespace fsdp::ckpt
