// SPDX-License-Identifier: MIT
// Token + position embedding. B = batch, T = time, C = channels, V = vocabulary.
// Backward accumulates (+=) into the parameter gradients, one block of channels per thread and
// tokens in order, so it needs no atomics and is deterministic on every backend.
#pragma once
#include "core/types.hpp"

namespace fsdp::kernels {

// x[B*T, C] = tok_table[tok] + pos_table[t], t = the row's position: bt % T, or positions(bt)
// when given (packed documents: positions restart at each document).
inline void embedding_forward(const Mat& x, const ConstTokens& tokens, const ConstMat& tok_table,
                              const ConstMat& pos_table, int T,
                              const ConstTokens& positions = ConstTokens()) {
  const int BT = x.extent(0), C = x.extent(1);
  const bool own = positions.data() != nullptr;
  Kokkos::parallel_for(
      "embedding::forward", Kokkos::RangePolicy<ExecSpace>(0, BT), KOKKOS_LAMBDA(const int bt) {
        const int tok = tokens(bt), t = own ? positions(bt) : bt % T;
        for (int c = 0; c < C; ++c) x(bt, c) = tok_table(tok, c) + pos_table(t, c);
      });
}

// Channels per thread in the backward: each token's row segment is a contiguous (vector) update.
constexpr int kEmbeddingChannelBlock = 32;

// dtok[tok] += dx, dpos[t] += dx (t as in embedding_forward)
inline void embedding_backward(const Mat& dtok, const Mat& dpos, const ConstMat& dx,
                               const ConstTokens& tokens, int T,
                               const ConstTokens& positions = ConstTokens()) {
  const int BT = dx.extent(0), C = dx.extent(1);
  const bool own = positions.data() != nullptr;
  constexpr int CB = kEmbeddingChannelBlock;
  Kokkos::parallel_for(
      "embedding::backward", Kokkos::RangePolicy<ExecSpace>(0, (C + CB - 1) / CB),
      KOKKOS_LAMBDA(const int blk) {
        const int c0 = blk * CB, c1 = c0 + CB < C ? c0 + CB : C;
        for (int bt = 0; bt < BT; ++bt) {
          const int tok = tokens(bt), t = own ? positions(bt) : bt % T;
          for (int c = c0; c < c1; ++c) dtok(tok, c) += dx(bt, c);
          for (int c = c0; c < c1; ++c) dpos(t, c) += dx(bt, c);
        }
      });
}

// Token embedding alone (Llama: positions enter through the rotation): x[B*T, C] = table[tok].
inline void token_embedding_forward(const Mat& x, const ConstTokens& tokens, const ConstMat& table) {
  const int BT = x.extent(0), C = x.extent(1);
  Kokkos::parallel_for(
      "embedding::token_forward", Kokkos::RangePolicy<ExecSpace>(0, BT),
      KOKKOS_LAMBDA(const int bt) {
        const int tok = tokens(bt);
        for (int c = 0; c < C; ++c) x(bt, c) = table(tok, c);
      });
}

// dtable[tok] += dx, by channel blocks and tokens in order as embedding_backward.
inline void token_embedding_backward(const Mat& dtable, const ConstMat& dx,
                                     const ConstTokens& tokens) {
  const int BT = dx.extent(0), C = dx.extent(1);
  constexpr int CB = kEmbeddingChannelBlock;
  Kokkos::parallel_for(
      "embedding::token_backward", Kokkos::RangePolicy<ExecSpace>(0, (C + CB - 1) / CB),
      KOKKOS_LAMBDA(const int blk) {
        const int c0 = blk * CB, c1 = c0 + CB < C ? c0 + CB : C;
        for (int bt = 0; bt < BT; ++bt) {
          const int tok = tokens(bt);
          for (int c = c0; c < c1; ++c) dtable(tok, c) += dx(bt, c);
        }
      });
}

}  // namespace fsdp::kernels
