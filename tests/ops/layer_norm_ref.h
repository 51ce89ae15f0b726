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

}  // namespace opstest::ref
