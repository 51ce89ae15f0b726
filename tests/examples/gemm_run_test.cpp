// The expert GEMM example runs on the virtual NPU and matches an fp32 reference.
#include <gtest/gtest.h>

#include <cmath>

#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"

namespace tl {
namespace {

/// Plain fp64 reference C = A x B over tensors read as doubles.
std::vector<double> matmul_ref(const std::vector<double>& a, const std::vector<double>& b, int M, int N, int K) {
  std::vector<double> c(static_cast<size_t>(M) * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) {
      double x = a[static_cast<size_t>(i) * K + k];
      for (int j = 0; j < N; ++j) c[static_cast<size_t>(i) * N + j] += x * b[static_cast<size_t>(k) * N + j];
    }
  return c;
}

void run_gemm(int M, int N, int K, int threads) {
  Device dev;
  auto f = build_kernel(find_kernel("gemm"), {{"M", std::to_string(M)}, {"N", std::to_string(N)}, {"K", std::to_string(K)}});
  auto kern = compile(f);
  Tensor A = uniform(dev, {M, K}, f16, 1), B = uniform(dev, {K, N}, f16, 2), C = Tensor::empty(dev, {M, N}, f16);
  kern.launch(dev, {A, B, C}, {.threads = threads});
  auto ref = matmul_ref(A.to_vector(), B.to_vector(), M, N, K);
  auto got = C.to_vector();
  int bad = 0;
  for (size_t i = 0; i < ref.size() && bad < 5; ++i) {
    double tol = 2e-3 * std::sqrt(static_cast<double>(K)) + 1e-3 * std::fabs(ref[i]);
    if (std::fabs(got[i] - ref[i]) > tol) {
      ++bad;
      ADD_FAILURE() << "C[" << i / N << ", " << i % N << "] = " << got[i] << ", expected " << ref[i];
    }
  }
}

TEST(RunGemm, Small) { run_gemm(256, 512, 128, 2); }

}  // namespace
}  // namespace tl
