// SPDX-License-Identifier: MIT
#include "io/h5_handles.hpp"

#include <vector>

namespace fsdp::h5 {
namespace {

herr_t collect(unsigned, const H5E_error2_t* e, void* out) {
  if (e->desc && *e->desc) static_cast<std::vector<std::string>*>(out)->push_back(e->desc);
  return 0;
}

}  // namespace

void silence_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

std::string error_stack_text() {
  std::vector<std::string> msgs;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect, &msgs);
  H5Eclear2(H5E_DEFAULT);
  // The outermost message says what failed, the innermost why; the ones between repeat them.
  if (msgs.empty()) return "no HDF5 error message";
  if (msgs.size() == 1) return msgs.front();
  return msgs.front() + ": " + msgs.back();
}

[[noreturn]] void failed(const char* call, const char* file, int line) {
  const std::string why = error_stack_text();
  // "H5Dwrite at io/h5_io.cpp:42": the function's name and the path below src/ are enough.
  std::string fn(call), where(file);
  fn = fn.substr(0, fn.find('('));
  const auto src = where.rfind("/src/");
  if (src != std::string::npos) where = where.substr(src + 5);
  throw H5Error(why + " (" + fn + " at " + where + ":" + std::to_string(line) + ")");
}

}  // namespace fsdp::h5
