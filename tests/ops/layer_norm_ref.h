// fp64 reference of LayerNorm forward for tests/ops (references live under tests/ only; the
// library never calls them). Inputs are the tensors' values as doubles, row-major [M, H].
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

namespace opstest::ref {

struct LayerNormFwd {
  std::vector<double> y, mean, rstd;
};

/// y = (x - mean) / sqrt(var + eps) (* w) (+ b), var the biased variance, per row.
inline LayerNormFwd layer_norm_fwd(const std::vector<double>& x, const std::vector<double>* w,
                                   const std::vector<double>* b, int64_t M, int64_t H, double eps) {
  LayerNormFwd o{std::vector<double>(M * H), std::vector<double>(M), std::vector<double>(M)};
  for (int64_t i = 0; i < M; ++i) {
    double s = 0, v = 0;
    for (int64_t j = 0; j < H; ++j) s += x[i * H + j];
    const double mean = s / static_cast<double>(H);
    for (int64_t j = 0; j < H; ++j) v += (x[i * H + j] - mean) * (x[i * H + j] - mean);
    const double rstd = 1.0 / std::sqrt(v / static_cast<double>(H) + eps);
    o.mean[i] = mean;
    o.rstd[i] = rstd;
    for (int64_t j = 0; j < H; ++j)
      o.y[i * H + j] = (x[i * H + j] - mean) * rstd * (w ? (*w)[j] : 1.0) + (b ? (*b)[j] : 0.0);
  }
  return o;
}

struct LayerNormBwd {
  std::vector<double> dx, dw, db;
  std::vector<double> dx_abs, dw_abs, db_abs;  // sums of the magnitudes of the terms (error scale)
};

/// xhat = (x - mean) rstd, g = dy w: dx = rstd (g - mean(g) - xhat mean(g xhat)),
/// dw = sum_rows dy xhat, db = sum_rows dy.
inline LayerNormBwd layer_norm_bwd(const std::vector<double>& dy, const std::vector<double>& x,
                                   const std::vector<double>& w, int64_t M, int64_t H, double eps) {
  const auto f = layer_norm_fwd(x, nullptr, nullptr, M, H, eps);  // y = xhat
  LayerNormBwd o{std::vector<double>(M * H),  std::vector<double>(H, 0.0),
                 std::vector<double>(H, 0.0), std::vector<double>(M * H),
                 std::vector<double>(H, 0.0), std::vector<double>(H, 0.0)};
  const double n = static_cast<double>(H);
  for (int64_t i = 0; i < M; ++i) {
    double sg = 0, sgx = 0;
    for (int64_t j = 0; j < H; ++j) {
      sg += dy[i * H + j] * w[j];
      sgx += dy[i * H + j] * w[j] * f.y[i * H + j];
    }
    const double rstd = f.rstd[i];
    for (int64_t j = 0; j < H; ++j) {
      const double g = dy[i * H + j] * w[j], xh = f.y[i * H + j];
      o.dx[i * H + j] = rstd * (g - sg / n - xh * sgx / n);
      o.dx_abs[i * H + j] = 3 * rstd * (std::abs(g) + std::abs(sg / n) + std::abs(xh * sgx / n));
      o.dw[j] += dy[i * H + j] * xh;
      o.dw_abs[j] += std::abs(dy[i * H + j] * xh);
      o.db[j] += dy[i * H + j];
      o.db_abs[j] += std::abs(dy[i * H + j]);
    }
  }
  return o;
}

}  // namespace opstest::ref
