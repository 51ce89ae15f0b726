// fp64 references of RMSNorm forward and backward for tests/ops (references live under tests/
// only; the library never calls them). Inputs are the tensors' values as doubles, row-major.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

namespace opstest::ref {

struct RmsNormFwd {
  std::vector<double> y, h, rstd;
};

/// h = x (+ r); y = w * h * rstd, rstd = 1 / sqrt(mean(h^2) + eps), per row of H values.
inline RmsNormFwd rms_norm_fwd(const std::vector<double>& x, const std::vector<double>* r,
                               const std::vector<double>& w, int64_t M, int64_t H, double eps) {
  RmsNormFwd o{std::vector<double>(M * H), std::vector<double>(M * H), std::vector<double>(M)};
  for (int64_t i = 0; i < M; ++i) {
    double ss = 0;
    for (int64_t j = 0; j < H; ++j) {
      const double h = x[i * H + j] + (r ? (*r)[i * H + j] : 0.0);
      o.h[i * H + j] = h;
      ss += h * h;
    }
    o.rstd[i] = 1.0 / std::sqrt(ss / static_cast<double>(H) + eps);
    for (int64_t j = 0; j < H; ++j) o.y[i * H + j] = w[j] * o.h[i * H + j] * o.rstd[i];
  }
  return o;
}

struct RmsNormBwd {
  std::vector<double> dx, dw;
  std::vector<double> dx_abs, dw_abs;  // sums of the magnitudes of the terms (error scale)
};

/// g = dy * w; dx = rstd g - x rstd^3 sum(g x) / H; dw = sum_rows dy x rstd.
inline RmsNormBwd rms_norm_bwd(const std::vector<double>& dy, const std::vector<double>& x,
                               const std::vector<double>& w, int64_t M, int64_t H, double eps) {
  RmsNormBwd o{std::vector<double>(M * H), std::vector<double>(H, 0.0), std::vector<double>(M * H),
               std::vector<double>(H, 0.0)};
  for (int64_t i = 0; i < M; ++i) {
    double ss = 0, gx = 0;
    for (int64_t j = 0; j < H; ++j) {
      const double xv = x[i * H + j];
      ss += xv * xv;
      gx += dy[i * H + j] * w[j] * xv;
    }
    const double rstd = 1.0 / std::sqrt(ss / static_cast<double>(H) + eps);
    const double coef = gx * rstd * rstd * rstd / static_cast<double>(H);
    for (int64_t j = 0; j < H; ++j) {
      const double xv = x[i * H + j];
      o.dx[i * H + j] = dy[i * H + j] * w[j] * rstd - xv * coef;
      o.dw[j] += dy[i * H + j] * xv * rstd;
      o.dx_abs[i * H + j] = 3 * (std::abs(dy[i * H + j] * w[j] * rstd) + std::abs(xv * coef));
      o.dw_abs[j] += std::abs(dy[i * H + j] * xv * rstd);
    }
  }
  return o;
}

}  // namespace opstest::ref
