// fp64 reference implementations (see references.h).
#include "common/references.h"

#include <fmt/format.h>

#include <cmath>

#include "ops/flash_attention_ref.h"
#include "ops/gemm_ref.h"

namespace tl::ref {

// C = A B by OpenBLAS dgemm (fp64 like the loop it replaced; only the order of each sum
// differs): a plain loop dominated `tlc run` and the example tests at their larger shapes.
std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b, int M, int N,
                           int K) {
  return opstest::ref::gemm(a, b, M, N, K, false, false);
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

// One head of the FlashAttention reference of tests/ops (BLAS products, fp64).
std::vector<double> attention(const std::vector<double>& q, const std::vector<double>& k,
                              const std::vector<double>& v, int S, int D, double scale) {
  return opstest::ref::flash_attention(q, k, v, 1, S, 1, D, false, false, scale).o;
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
