// SPDX-License-Identifier: MIT
#include "core/space_check.hpp"

#if defined(FSDP_SPACE_CHECK)
#include <execinfo.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "core/kernel_hooks.hpp"

namespace fsdp::space_check {

thread_local int kernel_depth = 0;

namespace {
void enter(const char*, std::uint64_t) { ++kernel_depth; }
void leave(std::uint64_t) { --kernel_depth; }
}  // namespace

void install() { hooks::add_kernel_listener({enter, leave}); }

void host_touched_device() {
  // Not fatal(): this runs inside a View accessor, maybe during unwinding; say it and stop.
  static const char what[] =
      "fsdp: space check: host code accessed an element of a device buffer outside a kernel "
      "(on a GPU this reads device memory from the host); the stack:\n";
  (void)!write(2, what, sizeof(what) - 1);
  void* frames[48];
  backtrace_symbols_fd(frames, backtrace(frames, 48), 2);
  std::_Exit(1);
}

}  // namespace fsdp::space_check
#endif
