// SPDX-License-Identifier: MIT
// RAII owners for HDF5 identifiers and the checked-call macros. HDF5's automatic error printing
// is turned off: a failed call throws H5Error with the call, file:line and the library's own
// messages folded into one line, so callers can add the file and dataset and report it once.
#pragma once
#include <hdf5.h>

#include <stdexcept>
#include <string>

namespace fsdp::h5 {

struct H5Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Stops HDF5 printing its error stack to stderr (process-wide; idempotent).
void silence_errors();
// The calling thread's HDF5 error stack as one line, outermost message first, innermost (the
// most specific, e.g. "file signature not found") last; the stack is cleared.
std::string error_stack_text();
[[noreturn]] void failed(const char* call, const char* file, int line);

inline hid_t checked_id(hid_t id, const char* call, const char* file, int line) {
  if (id < 0) failed(call, file, line);
  return id;
}

// Owns one identifier and closes it exactly once. close() reports a failed close (a file's
// close flushes it, so that failure matters); the destructor cannot throw and ignores it.
template <herr_t (*Close)(hid_t)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  Handle(Handle&& o) noexcept : id_(o.id_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      o.id_ = -1;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0) Close(id_);
    id_ = -1;
  }
  void close() {
    const hid_t id = id_;
    id_ = -1;
    if (id >= 0 && Close(id) < 0) failed("closing an HDF5 object", __FILE__, __LINE__);
  }

 private:
  hid_t id_ = -1;
};

using File = Handle<H5Fclose>;
using Group = Handle<H5Gclose>;
using Dataset = Handle<H5Dclose>;
using Space = Handle<H5Sclose>;
using Plist = Handle<H5Pclose>;
using Attr = Handle<H5Aclose>;
using Type = Handle<H5Tclose>;

}  // namespace fsdp::h5

// A call returning herr_t (negative on failure).
#define FSDP_H5_CHECK(call)                                        \
  do {                                                             \
    if ((call) < 0) ::fsdp::h5::failed(#call, __FILE__, __LINE__); \
  } while (0)

// A call returning an identifier, as an expression: h5::File f{FSDP_H5_ID(H5Fopen(...))}.
#define FSDP_H5_ID(call) ::fsdp::h5::checked_id((call), #call, __FILE__, __LINE__)
