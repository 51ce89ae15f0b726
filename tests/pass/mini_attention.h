// The attention-shaped pipelined loop that pipeline_loops_test.cpp and pipeline_skew_test.cpp
// run under every schedule: one kernel, so the skewed schedules are compared with the very serial
// loop pipeline_loops_test.cpp checks against a host reference.
#pragma once

#include <cmath>
#include <vector>

#include "tl/lang.h"
#include "tl/npu/npu.h"

namespace tl::testing {

inline std::vector<double> wave(int64_t n, double phase) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = std::sin(0.61 * static_cast<double>(i) + phase) * 0.5;
  return v;
}

/// A small attention-shaped loop over `rows` / 32 kv tiles (`rows` a dynamic size when
/// `symbolic`): per tile the cube computes s = q k^T, the vector unit p = f16(s / 8) and the row
/// maxima of s, the cube o = p v, the vector unit acc = acc / 2 + o * rowmax. The row maxima are
/// computed before the push of p and used after the pop of o, as FlashAttention's rescaling
/// factor is.
inline PrimFunc mini_attention(int num_stages, Expr rows, int skew = 1) {
  auto Q = T::Tensor("Q", {64, 32}, f16), K = T::Tensor("K", {rows, 32}, f16),
       V = T::Tensor("V", {rows, 32}, f16);
  auto O = T::Tensor("O", {64, 32}, f32);
  return T::prim_func("mini_attention", {Q, K, V, O}, [&] {
    T::Kernel(1, [&](Expr) {
      auto q = T::alloc_shared("q", {64, 32}, f16), k = T::alloc_shared("k", {32, 32}, f16);
      auto v = T::alloc_shared("v", {32, 32}, f16), p = T::alloc_shared("p", {64, 32}, f16);
      auto s = T::alloc_fragment("s", {64, 32}, f32), o = T::alloc_fragment("o", {64, 32}, f32);
      auto acc = T::alloc_fragment("acc", {64, 32}, f32),
           rmax = T::alloc_fragment("rmax", {64}, f32);
      T::copy(Q, q);
      T::clear(acc);
      T::Pipelined("j", rows / 32, num_stages, {.skew = skew}, [&](Expr j) {
        T::copy(K.at({j * 32, 0}), k);
        T::copy(V.at({j * 32, 0}), v);
        T::gemm(q, k, s, {.transpose_B = true, .init = true});
        T::reduce_max(s, rmax, -1);
        T::Parallel({64, 32}, [&](Expr i, Expr c) { p(i, c) = cast(f16, s(i, c) * 0.125f); });
        T::gemm(p, v, o, {.init = true});
        T::Parallel({64, 32},
                    [&](Expr i, Expr c) { acc(i, c) = acc(i, c) * 0.5f + o(i, c) * rmax(i); });
      });
      T::copy(acc, O);
    });
  });
}

/// O of mini_attention for `tiles` kv tiles, run under the hazard checker.
inline std::vector<double> run_mini_attention(int num_stages, int64_t tiles, bool symbolic,
                                              int skew = 1) {
  const int64_t rows = tiles * 32;
  Expr r = symbolic ? Expr(T::dynamic("N")) : Expr(rows);
  auto kern = compile(mini_attention(num_stages, r, skew));
  Device dev;
  Tensor q = from_vector(dev, {64, 32}, f16, wave(64 * 32, 0.1));
  Tensor k = from_vector(dev, {rows, 32}, f16, wave(rows * 32, 0.7));
  Tensor v = from_vector(dev, {rows, 32}, f16, wave(rows * 32, 1.3));
  Tensor o = from_vector(dev, {64, 32}, f32, std::vector<double>(64 * 32, -7.0));
  kern.launch(dev, {q, k, v, o}, {.check_hazards = true});
  return o.to_vector();
}

}  // namespace tl::testing
