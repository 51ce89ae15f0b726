// Every expert example runs on the virtual NPU and matches its fp64 reference (tests/common).
#include <gtest/gtest.h>

#include <cmath>

#include "common/references.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"

namespace tl {
namespace {

std::map<std::string, std::string> sizes(std::initializer_list<std::pair<const char*, int>> kv) {
  std::map<std::string, std::string> m;
  for (auto& [k, v] : kv) m[k] = std::to_string(v);
  return m;
}

void run_gemm(int M, int N, int K, int threads) {
  Device dev;
  auto kern = compile(build_kernel(find_kernel("gemm"), sizes({{"M", M}, {"N", N}, {"K", K}})));
  Tensor A = uniform(dev, {M, K}, f16, 1), B = uniform(dev, {K, N}, f16, 2),
         C = Tensor::empty(dev, {M, N}, f16);
  kern.launch(dev, {A, B, C}, {.threads = threads});
  auto want = ref::matmul(A.to_vector(), B.to_vector(), M, N, K);
  // fp16 output: half an ulp of the result plus fp32 accumulation error.
  EXPECT_EQ(ref::compare(C.to_vector(), want, N, 1e-3 * std::sqrt(K), 1e-3), "");
}

TEST(RunExamples, GemmSmall) {
  run_gemm(256, 512, 128, 2);
}
TEST(RunExamples, Gemm1024Cubed) {
  run_gemm(1024, 1024, 1024, 0);
}

void run_rms_norm(std::map<std::string, std::string> params, int threads) {
  const int M = 64, N = 2048;
  params["M"] = std::to_string(M);
  params["N"] = std::to_string(N);
  Device dev;
  auto kern = compile(build_kernel(find_kernel("rms_norm"), params));
  Tensor X = randn(dev, {M, N}, bf16, 3), W = uniform(dev, {N}, bf16, 4, 0.5, 1.5),
         Y = Tensor::empty(dev, {M, N}, bf16);
  kern.launch(dev, {X, W, Y, 1e-6}, {.threads = threads});
  auto want = ref::rms_norm(X.to_vector(), W.to_vector(), M, N, 1e-6);
  EXPECT_EQ(ref::compare(Y.to_vector(), want, N, 1e-2, 1.6e-2), "");
}

TEST(RunExamples, RmsNorm) {
  run_rms_norm({}, 0);
}
// The one-pass schedule: each [8, 2048] row tile stays in UB, fp32 math in 512-wide chunks.
TEST(RunExamples, RmsNormOnePass) {
  run_rms_norm(sizes({{"passes", 1}, {"bN", 512}}), 2);
}

TEST(RunExamples, Minicv) {
  const int M = 256, N = 256, K = 256, bM = 128, bN = 128;
  Device dev;
  auto kern = compile(build_kernel(find_kernel("minicv"), sizes({{"M", M}, {"N", N}, {"K", K}})));
  Tensor A = uniform(dev, {M, K}, f16, 5, -0.1, 0.1), B = uniform(dev, {K, N}, f16, 6, -0.1, 0.1);
  Tensor D = Tensor::empty(dev, {M, N}, f32),
         Wk = Tensor::empty(dev, {(M / bM) * (N / bN), bM, bN}, f32);
  kern.launch(dev, {A, B, D, Wk});
  auto want = ref::matmul(A.to_vector(), B.to_vector(), M, N, K);
  for (auto& x : want) x = std::exp(x);
  EXPECT_EQ(ref::compare(D.to_vector(), want, N, 1e-5, 1e-5), "");
}

void run_flash_attention(int S, int D, int bD) {
  const int bM = 64;
  Device dev;
  auto kern = compile(
      build_kernel(find_kernel("flash_attention"), sizes({{"S", S}, {"D", D}, {"bD", bD}})));
  Tensor Q = uniform(dev, {1, 1, S, D}, f16, 7), K = uniform(dev, {1, 1, S, D}, f16, 8);
  Tensor V = uniform(dev, {1, 1, S, D}, f16, 9), O = Tensor::empty(dev, {1, 1, S, D}, f16);
  int blocks = S / bM;
  Tensor ws_s = Tensor::empty(dev, {blocks, bM, 64}, f32),
         ws_p = Tensor::empty(dev, {blocks, bM, 64}, f16);
  Tensor ws_o = Tensor::empty(dev, {blocks, bM, D}, f32);
  kern.launch(dev, {Q, K, V, O, ws_s, ws_p, ws_o});
  auto want = ref::attention(Q.to_vector(), K.to_vector(), V.to_vector(), S, D, 1.0 / std::sqrt(D));
  EXPECT_EQ(ref::compare(O.to_vector(), want, D, 2e-3, 2e-3), "");
}

TEST(RunExamples, FlashAttentionS128D512) {
  run_flash_attention(128, 512, 256);
}
TEST(RunExamples, FlashAttentionS1024D128) {
  run_flash_attention(1024, 128, 128);
}

}  // namespace
}  // namespace tl
