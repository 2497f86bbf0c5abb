// SPDX-License-Identifier: MIT
#include "model/gemm/colmajor_gemm.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace fsdp::kernels {
namespace {

std::string shape(std::size_t r, std::size_t c) { return std::to_string(r) + "x" + std::to_string(c); }

// Column-major leading dimension of a row-major matrix: its row stride, at least its width
// (a one-row window may report any stride).
int leading(const RowMajor& m) { return int(std::max<std::size_t>({m.stride, m.cols, 1})); }

}  // namespace

ColMajorCall colmajor_call(bool ta, bool tb, const RowMajor& a, const RowMajor& b, const RowMajor& c) {
  const std::size_t am = ta ? a.cols : a.rows, ak = ta ? a.rows : a.cols;
  const std::size_t bk = tb ? b.cols : b.rows, bn = tb ? b.rows : b.cols;
  if (am != c.rows || bk != ak || bn != c.cols)
    throw std::invalid_argument("gemm: op(A) is " + shape(am, ak) + ", op(B) " + shape(bk, bn) +
                                ", C " + shape(c.rows, c.cols));
  // Column-major, row-major B is op(B)^T's operand as it lies in memory: its op is the same
  // flag, and it comes first.
  return {tb,           ta,          int(c.cols), int(c.rows), int(ak), b.data, leading(b),
          a.data,       leading(a),  const_cast<void*>(c.data), leading(c)};
}

ColMajorBatch colmajor_batch(bool ta, bool tb, const RowMajor& a, long long a_step,
                             const RowMajor& b, long long b_step, const RowMajor& c,
                             long long c_step) {
  return {colmajor_call(ta, tb, a, b, c), b_step, a_step, c_step};
}

}  // namespace fsdp::kernels
