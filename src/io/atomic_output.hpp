// SPDX-License-Identifier: MIT
// The one way a user-visible file (an export, a trace, `latest`) is written: under a temporary
// name created exclusively beside it, every byte accounted for, synced, its size checked, and
// only then renamed over the old file, so a failure leaves the old file exactly as it was.
#pragma once
#include <cstdint>
#include <string>

namespace fsdp::io {

// A file being written as a temporary `path.<random>.tmp` in path's directory. The temporary
// is created with O_CREAT|O_EXCL|O_NOFOLLOW under a fresh name, so a link or file planted
// there is never written through. Until commit() the old file at `path` is untouched; the
// destructor removes an uncommitted temporary. Errors throw std::runtime_error with one line
// naming the file and why ("out/model.safetensors: No space left on device").
class StagedFile {
 public:
  explicit StagedFile(std::string path);
  ~StagedFile();
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;

  // Appends all of `bytes` (a short write is retried, a failed one throws).
  void write(const void* data, std::size_t bytes);
  void write(const std::string& text) { write(text.data(), text.size()); }
  // fsync, close, then the size on disk must be `expected_bytes`. After this the temporary
  // may also be written by others (MPI-IO) only if they call finish() through this object.
  void finish(std::uint64_t expected_bytes);
  // Renames the finished temporary over `path` and syncs the directory.
  void commit();
  // Removes the temporary now (also done by the destructor).
  void abandon();

  const std::string& path() const { return path_; }
  const std::string& temp() const { return temp_; }
  int fd() const { return fd_; }
  std::uint64_t written() const { return written_; }

 private:
  [[noreturn]] void fail(const std::string& why);
  std::string path_, temp_;
  int fd_ = -1;
  std::uint64_t written_ = 0;
  bool finished_ = false, committed_ = false;
};

// A fresh temporary name beside `path`: `path.<pid>.<16 hex digits>.tmp` (the one StagedFile uses).
std::string temporary_name(const std::string& path);

// Removes the temporaries of `path` (the pattern above) whose process is gone (kill(pid, 0)
// says no such process on this host): what a kill -9 left. A live process's are kept.
// Returns how many were removed.
int remove_stale_temporaries(const std::string& path);

// Writes `text` as the whole of `path` through a StagedFile.
void write_file_atomically(const std::string& path, const std::string& text);

// fsync of the directory holding `path` (after a rename, so the new name survives a crash).
void sync_parent(const std::string& path);

}  // namespace fsdp::io
