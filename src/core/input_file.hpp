// SPDX-License-Identifier: MIT
// The one way fsdp opens a file it reads (a deck, weights, config.json, token data, a machine
// file): regular files only, opened so that a FIFO cannot block, and read with a bound.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace fsdp {

// "<path>: cannot read <what>: <why>" ("<path>: <why>" when what is ""), one line. Callers
// rethrow it as their layer's error (ConfigError, WeightsError, DataError) so that exit codes
// stay those of the layer.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An open regular file. Opening never blocks (O_NONBLOCK until fstat has shown it is a regular
// file) and refuses a FIFO, a device, a directory or a socket by its kind.
class InputFile {
 public:
  InputFile(const std::string& path, const std::string& what);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  int fd() const { return fd_; }
  std::uint64_t size() const { return size_; }
  // The whole file, refused when it is over max_bytes (checked against fstat and again while
  // reading, since a file may grow). An I/O error is an error, never a short read.
  std::string read_all(std::uint64_t max_bytes) const;
  // Exactly `bytes` bytes at `offset` (pread: no shared position), or InputError naming `part`.
  void read_at(std::uint64_t offset, std::uint64_t bytes, void* out, const std::string& part) const;

 private:
  [[noreturn]] void fail(const std::string& why) const;       // in the constructor: closes
  [[noreturn]] void fail_open(const std::string& why) const;  // the file stays open
  std::string path_, what_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// InputFile(path, what).read_all(max_bytes).
std::string read_input(const std::string& path, const std::string& what, std::uint64_t max_bytes);

// Runs f, turning an InputError into the caller's error type E with the same line.
template <class E, class F>
auto rethrow_input_as(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const InputError& e) {
    throw E(e.what());
  }
}

}  // namespace fsdp
