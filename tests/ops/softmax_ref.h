// fp64 references of softmax / log-softmax forward and backward over the last dimension for
// tests/ops (references live under tests/ only; the library never calls them). Inputs are the
// tensors' values as doubles, row-major [M, N].
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace opstest::ref {

/// y = exp(x - max) / sum exp(x - max), or (log) x - max - log(sum exp(x - max)), per row.
inline std::vector<double> softmax_fwd(const std::vector<double>& x, int64_t M, int64_t N,
                                       bool log) {
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < M; ++i) {
    const double* r = &x[i * N];
    double m = -std::numeric_limits<double>::infinity();
    bool nan = false;
    for (int64_t j = 0; j < N; ++j) {
      nan |= std::isnan(r[j]);
      m = std::max(m, r[j]);
    }
    double s = 0;
    for (int64_t j = 0; j < N; ++j) s += std::exp(r[j] - m);
    for (int64_t j = 0; j < N; ++j) {
      y[i * N + j] = log ? r[j] - m - std::log(s) : std::exp(r[j] - m) / s;
      if (nan) y[i * N + j] = std::numeric_limits<double>::quiet_NaN();
    }
  }
  return y;
}

struct SoftmaxBwd {
  std::vector<double> dx, dx_abs;  // dx_abs: the sum of its terms' magnitudes (error scale)
};

/// softmax: dx = y (dy - sum(dy y)); log-softmax: dx = dy - exp(y) sum(dy).
inline SoftmaxBwd softmax_bwd(const std::vector<double>& dy, const std::vector<double>& y,
                              int64_t M, int64_t N, bool log) {
  SoftmaxBwd o{std::vector<double>(y.size()), std::vector<double>(y.size())};
  for (int64_t i = 0; i < M; ++i) {
    double s = 0, sa = 0;
    for (int64_t j = 0; j < N; ++j) {
      const double t = log ? dy[i * N + j] : dy[i * N + j] * y[i * N + j];
      s += t;
      sa += std::abs(t);
    }
    for (int64_t j = 0; j < N; ++j) {
      const double g = dy[i * N + j], yv = y[i * N + j];
      if (log) {
        o.dx[i * N + j] = g - std::exp(yv) * s;
        o.dx_abs[i * N + j] = std::abs(g) + std::exp(yv) * sa;
      } else {
        o.dx[i * N + j] = yv * (g - s);
        o.dx_abs[i * N + j] = std::abs(yv) * (std::abs(g) + sa);
      }
    }
  }
  return o;
}

}  // namespace opstest::ref
