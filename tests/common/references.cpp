// fp64 reference implementations (see references.h).
#include "common/references.h"

#include <fmt/format.h>

#include <cmath>

namespace tl::ref {

std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b, int M, int N,
                           int K) {
  std::vector<double> c(static_cast<size_t>(M) * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) {
      double x = a[static_cast<size_t>(i) * K + k];
      for (int j = 0; j < N; ++j)
        c[static_cast<size_t>(i) * N + j] += x * b[static_cast<size_t>(k) * N + j];
    }
  return c;
}

std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<double>& w, int M,
                             int N, double eps) {
  std::vector<double> y(x.size());
  for (int i = 0; i < M; ++i) {
    double ss = 0;
    for (int j = 0; j < N; ++j)
      ss += x[static_cast<size_t>(i) * N + j] * x[static_cast<size_t>(i) * N + j];
    double r = 1.0 / std::sqrt(ss / N + eps);
    for (int j = 0; j < N; ++j)
      y[static_cast<size_t>(i) * N + j] = w[j] * x[static_cast<size_t>(i) * N + j] * r;
  }
  return y;
}

std::vector<double> attention(const std::vector<double>& q, const std::vector<double>& k,
                              const std::vector<double>& v, int S, int D, double scale) {
  std::vector<double> o(static_cast<size_t>(S) * D, 0.0), s(S);
  for (int i = 0; i < S; ++i) {
    double m = -INFINITY;
    for (int j = 0; j < S; ++j) {
      double dot = 0;
      for (int d = 0; d < D; ++d)
        dot += q[static_cast<size_t>(i) * D + d] * k[static_cast<size_t>(j) * D + d];
      s[j] = dot * scale;
      m = std::max(m, s[j]);
    }
    double l = 0;
    for (int j = 0; j < S; ++j) l += (s[j] = std::exp(s[j] - m));
    for (int j = 0; j < S; ++j)
      for (int d = 0; d < D; ++d)
        o[static_cast<size_t>(i) * D + d] += s[j] / l * v[static_cast<size_t>(j) * D + d];
  }
  return o;
}

std::string compare(const std::vector<double>& got, const std::vector<double>& want, int64_t cols,
                    double atol, double rtol) {
  if (got.size() != want.size())
    return fmt::format("size {} vs expected {}", got.size(), want.size());
  std::string out;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double tol = atol + rtol * std::fabs(want[i]);
    if (!(std::fabs(got[i] - want[i]) <= tol)) {
      if (++bad <= 5)
        out +=
            fmt::format("  [{}, {}] = {}, expected {} (tol {})\n", static_cast<int64_t>(i) / cols,
                        static_cast<int64_t>(i) % cols, got[i], want[i], tol);
    }
  }
  if (bad) out = fmt::format("{} of {} elements differ:\n", bad, got.size()) + out;
  return out;
}

}  // namespace tl::ref
