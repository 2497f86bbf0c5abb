// SPDX-License-Identifier: MIT
#include "model/gemm/onednn_matmul.hpp"

#include <cstdlib>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include "core/check.hpp"

#if defined(FSDP_HAVE_ONEDNN)
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace fsdp::kernels::onednn {

#if defined(FSDP_HAVE_ONEDNN)
namespace {

using Dims = dnnl::memory::dims;
// inputs, ops, M, N, K (a ragged call's row count as DNNL_RUNTIME_DIM_VAL), lda, ldb, ldc,
// alpha, beta.
using Key = std::tuple<int, char, char, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                       std::int64_t, std::int64_t, float, float>;

struct Entry {
  dnnl::matmul primitive;
  dnnl::memory a, b, c;  // fixed shapes only: a ragged call describes its operands each time
  std::string impl;
};

struct Engine {
  dnnl::engine engine;
  dnnl::stream stream;
  std::map<Key, std::unique_ptr<Entry>> cache;
  std::int64_t created = 0;

  Engine() {
    // oneDNN's OpenMP runtime takes every core by default; a rank asked for one OpenBLAS thread
    // (the launcher's binding, our benchmarks) wants one here too, not a second team per rank.
    if (!std::getenv("OMP_NUM_THREADS"))
      if (const char* blas = std::getenv("OPENBLAS_NUM_THREADS"); blas && std::atoi(blas) > 0)
        omp_set_num_threads(std::atoi(blas));
    engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
    stream = dnnl::stream(engine);
  }
};

Engine& cpu() {
  static Engine e;
  return e;
}

dnnl::memory::data_type dtype(Inputs inputs) {
  return inputs == Inputs::BF16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

// op(X) as a rows x cols matrix over row-major storage with row stride ld: 'T' reads the stored
// matrix down its columns, which oneDNN takes as strides rather than as a copy.
dnnl::memory::desc operand(Inputs inputs, char op, std::int64_t rows, std::int64_t cols,
                           std::int64_t ld) {
  const Dims strides = op == 'T' ? Dims{1, ld} : Dims{ld, 1};
  return dnnl::memory::desc(Dims{rows, cols}, dtype(inputs), strides);
}

// The operands of C[M,N] = op(A) op(B) as oneDNN sees them; any of M, N, K may be
// DNNL_RUNTIME_DIM_VAL (strides never depend on the row count).
struct Operands {
  dnnl::memory::desc a, b, c;
};
Operands operands(Inputs inputs, char ta, char tb, std::int64_t M, std::int64_t N, std::int64_t K,
                  std::int64_t lda, std::int64_t ldb, std::int64_t ldc) {
  return {operand(inputs, ta, M, K, lda), operand(inputs, tb, K, N, ldb),
          dnnl::memory::desc(Dims{M, N}, dnnl::memory::data_type::f32, Dims{ldc, 1})};
}

// A ragged call's M and K as its primitive has them: A's stored rows (M for op 'N', K for 'T')
// left to run time.
std::pair<std::int64_t, std::int64_t> primitive_mk(char ta, std::int64_t M, std::int64_t K, bool ragged) {
  if (!ragged) return {M, K};
  return ta == 'N' ? std::make_pair(std::int64_t(DNNL_RUNTIME_DIM_VAL), K)
                   : std::make_pair(M, std::int64_t(DNNL_RUNTIME_DIM_VAL));
}

std::string shape(char ta, char tb, std::int64_t M, std::int64_t N, std::int64_t K) {
  return std::string(1, ta) + std::string(1, tb) + " M=" + std::to_string(M) +
         " N=" + std::to_string(N) + " K=" + std::to_string(K);
}

Entry& entry(Inputs inputs, char ta, char tb, std::int64_t M, std::int64_t N, std::int64_t K,
             float alpha, std::int64_t lda, std::int64_t ldb, float beta, std::int64_t ldc,
             bool ragged) {
  auto& e = cpu();
  const auto [pm, pk] = primitive_mk(ta, M, K, ragged);
  const Key key{int(inputs), ta, tb, pm, N, pk, lda, ldb, ldc, alpha, beta};
  if (auto it = e.cache.find(key); it != e.cache.end()) return *it->second;

  const auto [a, b, c] = operands(inputs, ta, tb, pm, N, pk, lda, ldb, ldc);
  dnnl::post_ops ops;
  // alpha scales the product before beta * C is added: eltwise linear, then sum.
#if DNNL_VERSION_MAJOR >= 3
  if (alpha != 1.f) ops.append_eltwise(dnnl::algorithm::eltwise_linear, alpha, 0.f);
#else
  if (alpha != 1.f) ops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, alpha, 0.f);
#endif
  if (beta != 0.f) ops.append_sum(beta);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  dnnl::matmul::primitive_desc pd;
  try {
#if DNNL_VERSION_MAJOR >= 3
    pd = dnnl::matmul::primitive_desc(e.engine, a, b, c, attr);
#else
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, e.engine);
#endif
  } catch (const dnnl::error& err) {
    fatal(std::string("oneDNN has no ") + (inputs == Inputs::BF16 ? "bf16" : "fp32") +
          " matmul on this CPU for " + shape(ta, tb, M, N, K) + " (" + err.what() + ")");
  }
  auto made = std::make_unique<Entry>();
  made->primitive = dnnl::matmul(pd);
  if (!ragged) {
    made->a = dnnl::memory(a, e.engine, DNNL_MEMORY_NONE);
    made->b = dnnl::memory(b, e.engine, DNNL_MEMORY_NONE);
    made->c = dnnl::memory(c, e.engine, DNNL_MEMORY_NONE);
  }
  made->impl = pd.impl_info_str();
  ++e.created;
  return *e.cache.emplace(key, std::move(made)).first->second;
}

Support probe(Inputs inputs, bool ragged) {
  // A model-sized shape: oneDNN may pick a different kernel for a tiny one.
  constexpr std::int64_t n = 256;
  auto& e = cpu();
  const auto [pm, pk] = primitive_mk('N', n, n, ragged);
  const auto [a, b, c] = operands(inputs, 'N', 'N', pm, n, pk, n, n, n);
  Support s;
  try {
#if DNNL_VERSION_MAJOR >= 3
    const dnnl::matmul::primitive_desc pd(e.engine, a, b, c);
#else
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), e.engine);
#endif
    s.impl = pd.impl_info_str();
    s.fast = s.impl.rfind("ref", 0) != 0;
  } catch (const dnnl::error&) {
    const dnnl::version_t* v = dnnl::version();
    s.impl = "none in oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) +
             " for this CPU's instruction set";
  }
  return s;
}

}  // namespace

bool built() { return true; }

const Support& support(Inputs inputs) {
  static const Support f32 = probe(Inputs::F32, false), bf16 = probe(Inputs::BF16, false);
  return inputs == Inputs::BF16 ? bf16 : f32;
}

const Support& ragged_support(Inputs inputs) {
  static const Support f32 = probe(Inputs::F32, true), bf16 = probe(Inputs::BF16, true);
  return inputs == Inputs::BF16 ? bf16 : f32;
}

const std::string& matmul(Inputs inputs, char ta, char tb, std::int64_t M, std::int64_t N,
                          std::int64_t K, float alpha, const void* a, std::int64_t lda,
                          const void* b, std::int64_t ldb, float beta, float* c,
                          std::int64_t ldc, GemmRows rows) {
  const bool ragged = rows == GemmRows::Ragged && ragged_support(inputs).fast;
  Entry& en = entry(inputs, ta, tb, M, N, K, alpha, lda, ldb, beta, ldc, ragged);
  auto& e = cpu();
  if (ragged) {  // this call's row count, in descriptors made for it
    const auto [da, db, dc] = operands(inputs, ta, tb, M, N, K, lda, ldb, ldc);
    const dnnl::memory ma(da, e.engine, const_cast<void*>(a)), mb(db, e.engine, const_cast<void*>(b)),
        mc(dc, e.engine, c);
    en.primitive.execute(e.stream, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
  } else {
    en.a.set_data_handle(const_cast<void*>(a));
    en.b.set_data_handle(const_cast<void*>(b));
    en.c.set_data_handle(c);
    en.primitive.execute(e.stream, {{DNNL_ARG_SRC, en.a}, {DNNL_ARG_WEIGHTS, en.b}, {DNNL_ARG_DST, en.c}});
  }
  e.stream.wait();
  return en.impl;
}

std::int64_t primitives_created() { return cpu().created; }

#else  // no oneDNN in this build

bool built() { return false; }

const Support& support(Inputs) {
  static const Support none{false, "none (this build has no oneDNN)"};
  return none;
}

const Support& ragged_support(Inputs inputs) { return support(inputs); }

const std::string& matmul(Inputs, char, char, std::int64_t, std::int64_t, std::int64_t, float,
                          const void*, std::int64_t, const void*, std::int64_t, float, float*,
                          std::int64_t, GemmRows) {
  fatal("onednn::matmul called in a build without oneDNN");
}

std::int64_t primitives_created() { return 0; }

#endif

}  // namespace fsdp::kernels::onednn
