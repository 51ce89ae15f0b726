// fp64 references of SwiGLU forward and backward for tests/ops (references live under tests/
// only; the library never calls them). Inputs are the tensors' values as doubles, row-major;
// a and b are given as separate [M, H] arrays (the test splits x on columns or rows itself).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace opstest::ref {

struct SwigluBwd {
  std::vector<double> da, db, dw;
};

/// The clamped inputs: a' = min(a, L), b' = clamp(b, -L, L) (L <= 0: no clamp); NaN stays NaN.
inline double clamp_a(double a, double L) {
  return L > 0 && a > L ? L : a;
}
inline double clamp_b(double b, double L) {
  if (L <= 0 || std::isnan(b)) return b;
  return std::min(std::max(b, -L), L);
}

/// y = silu(a') b' (* w[row]).
inline std::vector<double> swiglu_fwd(const std::vector<double>& a, const std::vector<double>& b,
                                      const std::vector<double>* w, int64_t M, int64_t H,
                                      double L) {
  std::vector<double> y(M * H);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < H; ++j) {
      const double x = clamp_a(a[i * H + j], L), v = clamp_b(b[i * H + j], L);
      y[i * H + j] = x / (1 + std::exp(-x)) * v * (w ? (*w)[i] : 1.0);
    }
  return y;
}

/// s = sigmoid(a'), g = dy w: da = g b' s (1 + a'(1 - s)) [a <= L], db = g a' s [|b| <= L],
/// dw = sum_j dy silu(a') b'.
inline SwigluBwd swiglu_bwd(const std::vector<double>& dy, const std::vector<double>& a,
                            const std::vector<double>& b, const std::vector<double>* w, int64_t M,
                            int64_t H, double L) {
  SwigluBwd o{std::vector<double>(M * H), std::vector<double>(M * H), std::vector<double>(M)};
  for (int64_t i = 0; i < M; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < H; ++j) {
      const int64_t k = i * H + j;
      const double x = clamp_a(a[k], L), v = clamp_b(b[k], L), s = 1 / (1 + std::exp(-x));
      const double g = dy[k] * (w ? (*w)[i] : 1.0);
      o.da[k] = L > 0 && !(a[k] <= L) ? 0.0 : g * v * s * (1 + x * (1 - s));
      o.db[k] = L > 0 && !(b[k] <= L && b[k] >= -L) ? 0.0 : g * x * s;
      sum += dy[k] * x * s * v;
    }
    o.dw[i] = sum;
  }
  return o;
}

}  // namespace opstest::ref
