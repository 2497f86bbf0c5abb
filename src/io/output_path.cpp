// SPDX-License-Identifier: MIT
#include "io/output_path.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "io/checkpoint_format.hpp"

namespace fsdp {
namespace fs = std::filesystem;

namespace {

std::string first_bytes(const std::string& path, std::size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string out(n, '\0');
  in.read(out.data(), std::streamsize(n));
  out.resize(std::size_t(std::max<std::streamsize>(in.gcount(), 0)));
  return out;
}

bool ours(const std::string& head, OutputKind kind) {
  if (head.empty()) return true;
  if (kind == OutputKind::Metrics) return head[0] == '{';
  return head.rfind("{\"traceEvents\"", 0) == 0;
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
  if (!ours(first_bytes(path, 14), kind))
    return what + ": exists and is not a " + (kind == OutputKind::Metrics ? "metrics" : "trace") +
           " file: refusing to overwrite it";
  return {};
}

OutputFile::OutputFile(std::string flag, std::string path, bool append, Mode mode)
    : flag_(std::move(flag)), path_(std::move(path)),
      partial_(mode == Live ? path_ : path_ + ".partial") {
  std::error_code ec;
  if (mode == Staged) {
    if (append && fs::is_regular_file(path_, ec))
      fs::copy_file(path_, partial_, fs::copy_options::overwrite_existing, ec);
    else
      fs::remove(partial_, ec);
    if (ec) throw std::runtime_error(flag_ + " " + partial_ + ": " + ec.message());
  }
  f_ = std::fopen(partial_.c_str(), append || mode == Staged ? "a" : "w");
  if (!f_)
    throw std::runtime_error(flag_ + " " + partial_ + ": cannot open for writing: " +
                             std::strerror(errno));
}

OutputFile::~OutputFile() { finish(); }

void OutputFile::failed(const std::string& why) {
  if (!failed_)
    std::fprintf(stderr, "fsdp-train: warning: %s %s: %s; it is not written from here on\n",
                 flag_.c_str(), partial_.c_str(), why.c_str());
  failed_ = true;
}

void OutputFile::write(const std::string& bytes, bool flush) {
  if (!f_ || failed_) return;
  if (std::fwrite(bytes.data(), 1, bytes.size(), f_) != bytes.size() ||
      (flush && std::fflush(f_) != 0))
    failed(std::strerror(errno));
}

void OutputFile::finish() {
  if (!f_) return;
  const bool closed = std::fclose(f_) == 0;
  f_ = nullptr;
  if (!closed) failed(std::strerror(errno));
  if (failed_ || partial_ == path_) return;
  std::error_code ec;
  fs::rename(partial_, path_, ec);
  if (ec) failed("cannot rename it to " + path_ + ": " + ec.message());
}

}  // namespace fsdp
