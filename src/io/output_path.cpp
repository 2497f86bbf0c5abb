// SPDX-License-Identifier: MIT
#include "io/output_path.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

#include "io/atomic_output.hpp"
#include "io/checkpoint_format.hpp"

namespace fsdp {
namespace fs = std::filesystem;

namespace {

// The first line of `path`, at most `limit` bytes of it.
std::string first_line(const std::string& path, std::size_t limit) {
  std::ifstream in(path, std::ios::binary);
  std::string out(limit, '\0');
  in.read(out.data(), std::streamsize(limit));
  out.resize(std::size_t(std::max<std::streamsize>(in.gcount(), 0)));
  const std::size_t nl = out.find('\n');
  return nl == std::string::npos ? out : out.substr(0, nl);
}

// Ours: empty, or a metrics file whose first line is a JSON object carrying the marker key
// fsdp writes into a new file's first record, or a trace. A first byte of `{` proves nothing:
// config.json starts with one (issue 44, finding 3).
bool ours(const std::string& head, OutputKind kind) {
  if (head.empty()) return true;
  if (kind == OutputKind::Trace) return head.rfind("{\"traceEvents\"", 0) == 0;
  const nlohmann::json j = nlohmann::json::parse(head, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains(kMetricsMarker);
}

}  // namespace

std::string output_problem(const std::string& flag, const std::string& path, OutputKind kind,
                           const std::vector<std::string>& inputs) {
  if (path.empty()) return {};
  const std::string what = flag + " " + path;
  std::error_code ec;
  const fs::path parent = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : ".";
  if (!fs::is_directory(parent, ec))
    return what + ": the directory " + parent.string() + " does not exist";
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    return what + ": the directory " + parent.string() + " is not writable (" +
           std::strerror(errno) + ")";
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return {};
  if (fs::is_directory(st)) return what + ": is a directory";
  if (!fs::is_regular_file(st))
    return what + ": is not a regular file (a device, pipe or socket): refusing to write to it";
  for (const std::string& in : inputs)
    if (!in.empty() && fs::equivalent(path, in, ec))
      return what + ": is a file this run reads (" + in + "): refusing to overwrite it";
  if (ckpt::not_hdf5(path).empty())
    return what + ": is an HDF5 file (a checkpoint?): refusing to overwrite it";
  if (!ours(first_line(path, 1 << 16), kind))
    return what + ": exists and is not a " +
           (kind == OutputKind::Metrics ? std::string("metrics file fsdp wrote (its first line has no \"") +
                                              kMetricsMarker + "\" key)"
                                        : std::string("trace file")) +
           ": refusing to overwrite it";
  return {};
}

OutputFile::OutputFile(std::string flag, std::string path, bool append, Mode mode)
    : flag_(std::move(flag)), path_(std::move(path)), mode_(mode) {
  std::error_code ec;
  const bool keep = append && fs::is_regular_file(path_, ec);
  started_empty_ = !keep || fs::file_size(path_, ec) == 0 || ec;
  if (mode == Staged) {  // held in memory, written once by finish() through io::StagedFile
    if (keep) {
      std::ifstream in(path_, std::ios::binary);
      staged_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      if (!in && !in.eof()) throw std::runtime_error(flag_ + " " + path_ + ": cannot be read");
    }
    return;
  }
  f_ = std::fopen(path_.c_str(), append ? "a" : "w");
  if (!f_)
    throw std::runtime_error(flag_ + " " + path_ + ": cannot open for writing: " +
                             std::strerror(errno));
}

OutputFile::~OutputFile() { finish(); }

void OutputFile::failed(const std::string& why) {
  if (!failed_)
    std::fprintf(stderr, "fsdp-train: warning: %s %s: %s; it is not written from here on\n",
                 flag_.c_str(), path_.c_str(), why.c_str());
  failed_ = true;
}

void OutputFile::write(const std::string& bytes, bool flush) {
  if (failed_ || done_) return;
  if (mode_ == Staged) {
    staged_ += bytes;
    return;
  }
  if (!f_) return;
  if (std::fwrite(bytes.data(), 1, bytes.size(), f_) != bytes.size() ||
      (flush && std::fflush(f_) != 0))
    failed(std::strerror(errno));
}

void OutputFile::finish() {
  if (done_) return;
  done_ = true;
  if (mode_ == Staged) {
    if (failed_) return;
    try {
      io::write_file_atomically(path_, staged_);
    } catch (const std::exception& e) {
      failed(e.what());
    }
    staged_.clear();
    return;
  }
  if (!f_) return;
  const bool closed = std::fclose(f_) == 0;
  f_ = nullptr;
  if (!closed) failed(std::strerror(errno));
}

}  // namespace fsdp
