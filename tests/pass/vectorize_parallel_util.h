// Helpers shared by the vectorize_parallel tests (vectorize_parallel_test.cpp: IR text and
// errors; vectorize_parallel_fuzz_test.cpp: the random expression trees and the exhaustive
// intrinsic table; vectorize_parallel_runs_test.cpp: chosen loops run vectorised and serial): the
// kernel text around a loop body, the pass run with its output invariants checked, the bitwise
// comparison of two runs' tensors and the random inputs.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "pass/pass_test_util.h"
#include "tl/arith.h"
#include "tl/npu/npu.h"
#include "tl/op.h"
#include "tl/runtime.h"
#include "tl/verifier.h"

namespace tl::vptest {

/// A vector-scope kernel around `body` (indented 12 spaces), with UB buffers declared.
inline std::string kernel(std::string_view decls, std::string_view body,
                          std::string_view params = "") {
  return fmt::format(R"(@T.prim_func
def f(A: T.Tensor((64,), "float32"){}):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
{}{})",
                     params, decls, body);
}

inline std::string vectorized(const std::string& text, const VectorizeOptions& o = {}) {
  PrimFunc f = parse(text);
  PrimFunc g = vectorize_parallel(f, default_target(), o);
  // The output invariant: no Parallel loop left, and the expert spec holds.
  bool parallel = false;
  pre_order_visit(g->body, [&](const Stmt& s) {
    if (auto* l = s.as<ForNode>(); l && l->for_kind == ForKind::Parallel) parallel = true;
  });
  EXPECT_FALSE(parallel) << print(g);
  auto diags = verify(g, default_target());
  for (const auto& d : diags) ADD_FAILURE() << d.message << "\n" << print(g);
  return print(g, {.locations = false});
}

/// Bytes equal, except that two NaNs are equal whatever their sign and payload: the scalar
/// unit's loads canonicalise NaNs (arith's double values carry no payload), the vector unit
/// keeps them, so NaN bits are not part of the contract (docs/compiler.md).
inline int64_t count_mismatches(const Tensor& want, const Tensor& got,
                                std::string* first = nullptr) {
  if (std::memcmp(want.data(), got.data(), static_cast<size_t>(want.nbytes())) == 0) return 0;
  std::vector<double> w = want.to_vector(), g = got.to_vector();
  const int64_t es = dtype_bytes(want.dtype());
  int64_t bad = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (std::memcmp(want.data() + i * es, got.data() + i * es, static_cast<size_t>(es)) == 0)
      continue;
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (bad++ == 0 && first)
      *first = fmt::format("element {}: scalar loop {} (0x{:x}), vectorised {} (0x{:x})", i, w[i],
                           want.data()[i * es + es - 1], g[i], got.data()[i * es + es - 1]);
  }
  return bad;
}

/// Inputs: mostly small values, with zeros of both signs, large and tiny values, infinities
/// and NaNs (floats); for integers, values across the dtype's range (products wrap).
inline std::vector<double> fuzz_values(std::mt19937_64& rng, int64_t n, DType t = DType::Float32) {
  std::uniform_real_distribution<double> u(-4, 4);
  std::uniform_int_distribution<int> kind(0, 99);
  std::vector<double> v(n);
  if (is_int(t)) {
    std::uniform_int_distribution<int64_t> full(arith::dtype_min(t), arith::dtype_max(t));
    for (auto& x : v) x = kind(rng) < 70 ? std::round(u(rng) * 8) : static_cast<double>(full(rng));
    return v;
  }
  for (auto& x : v) {
    int k = kind(rng);
    if (k < 70)
      x = u(rng);
    else if (k < 78)
      x = std::round(u(rng));
    else if (k < 82)
      x = 0.0;
    else if (k < 86)
      x = -0.0;
    else if (k < 90)
      x = u(rng) * 1e4;
    else if (k < 94)
      x = u(rng) * 1e-5;
    else if (k < 96)
      x = INFINITY;
    else if (k < 98)
      x = -INFINITY;
    else
      x = NAN;
  }
  return v;
}

}  // namespace tl::vptest
