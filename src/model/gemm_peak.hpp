// SPDX-License-Identifier: MIT
// The GEMM rate of one rank: MFU's denominator where no data sheet gives one, and the machine
// bench's reference rate.
#pragma once

namespace fsdp {

// FLOP/s of one rank's float (or bf16) GEMM, the best of five 1024^3 products.
double measure_gemm_flops(bool bf16 = false);

}  // namespace fsdp
