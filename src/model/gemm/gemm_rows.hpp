// SPDX-License-Identifier: MIT
// Whether a GEMM call site's token rows keep one count from call to call (a dense layer: B*T
// rows every step) or take a new one each time (an expert's rows: however many tokens the router
// sent it). Libraries that compile a kernel per shape (oneDNN's matmul primitives) make one for
// every new count; a ragged site asks for one kernel whose row count is given at run time.
#pragma once

namespace fsdp::kernels {

enum class GemmRows {
  Fixed,   // the same shapes recur: one compiled kernel per shape pays off
  Ragged,  // the stored row count of A (M for op 'N', K for op 'T') varies between calls
};

}  // namespace fsdp::kernels
