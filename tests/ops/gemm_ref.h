// The fp64 reference of GEMM for tests/ops (references live under tests/ only; the library
// never calls them): C = op(A) op(B) by OpenBLAS cblas_dgemm (a plain loop would dominate the
// test time at 4096^3). Inputs are the tensors' values as doubles, row-major as stored.
#pragma once
#include <cblas.h>

#include <cstdint>
#include <vector>

namespace opstest::ref {

/// a: [M, K] ([K, M] when ta), b: [K, N] ([N, K] when tb); returns C [M, N].
inline std::vector<double> gemm(const std::vector<double>& a, const std::vector<double>& b,
                                int64_t M, int64_t N, int64_t K, bool ta, bool tb) {
  std::vector<double> c(M * N, 0.0);
  if (M == 0 || N == 0 || K == 0) return c;
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), 1.0, a.data(),
              static_cast<int>(ta ? M : K), b.data(), static_cast<int>(tb ? K : N), 0.0, c.data(),
              static_cast<int>(N));
  return c;
}

/// sum_k |a_mk| |b_kn|: the scale of each element's rounding error (fp32 accumulation).
inline std::vector<double> gemm_abs(std::vector<double> a, std::vector<double> b, int64_t M,
                                    int64_t N, int64_t K, bool ta, bool tb) {
  for (auto& v : a) v = v < 0 ? -v : v;
  for (auto& v : b) v = v < 0 ? -v : v;
  return gemm(a, b, M, N, K, ta, tb);
}

}  // namespace opstest::ref
