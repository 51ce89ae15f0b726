// The cube's multiply-accumulate order (include/tl/npu/cube_math.h, docs/virtual_npu.md
// Numerics): every output element sums its K products in k order, one fused multiply-add each,
// from +0, then adds C once; NaN results are the quiet NaN 0x7FC00000. The SIMD kernels behind
// the fast paths must give the plain loop's bits on every shape (tails of the 12- and 6-row
// register blocks and of the 16-column blocks), with special values, for init and accumulate;
// and both must equal an independent evaluation of that order here, so the order is a property
// of the model, not of the host (it used to be OpenBLAS's, which changes with the CPU and the
// call's shape).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tl/npu/cube_math.h"

namespace tl {
namespace {

using npu::CubeOut;

/// The order, written out: fp64 would be another order, so this stays in fp32 with std::fma.
float spec(const std::vector<float>& a, const std::vector<float>& bt, int64_t i, int64_t j,
           int64_t K, float c, bool init) {
  float s = 0.0f;
  for (int64_t k = 0; k < K; ++k) s = std::fma(a[i * K + k], bt[j * K + k], s);
  float r = init ? s : c + s;
  return std::isnan(r) ? std::bit_cast<float>(0x7FC00000u) : r;
}

/// fp16-like values (11 significant bits) of several magnitudes, so sums round often.
float value(std::mt19937& g) {
  std::uniform_int_distribution<int> m(-1024, 1024), e(-12, 6);
  return std::ldexp(static_cast<float>(m(g)), e(g));
}

TEST(CubeMath, SimdEqualsPlainAndTheOrderOnEveryShape) {
  std::mt19937 g(7);
  int cases = 0;
  for (int64_t M : {1, 5, 6, 7, 12, 13, 25, 33, 128})
    for (int64_t N : {1, 7, 15, 16, 17, 32, 33, 48, 256})
      for (int64_t K : {1, 7, 16, 33, 128, 256})
        for (bool init : {true, false}) {
          std::vector<float> a(M * K), bt(N * K);
          for (float& x : a) x = value(g);
          for (float& x : bt) x = value(g);
          if (++cases % 5 == 0) {  // specials in one row of A and one column of B
            a[(M / 2) * K] = NAN;
            bt[(N - 1) * K + K - 1] = -INFINITY;
            a[K - 1] = 1e-41f;  // subnormal
            bt[0] = -0.0f;
          }
          // C in L0C's NZ layout with a guard column block past N: padding columns of the
          // last block and the guard must not be written.
          const int64_t rp = (M + 15) / 16 * 16, blocks = (N + 15) / 16 + 1;
          std::vector<float> c0(rp * blocks * 16);
          for (float& x : c0) x = value(g);
          std::vector<float> plain = c0, fast = c0;
          npu::cube_mmad_f32(a.data(), K, bt.data(), K, M, N, K, CubeOut{plain.data(), 16, rp * 16},
                             init, true);
          npu::cube_mmad_f32(a.data(), K, bt.data(), K, M, N, K, CubeOut{fast.data(), 16, rp * 16},
                             init, false);
          ASSERT_EQ(std::memcmp(plain.data(), fast.data(), plain.size() * 4), 0)
              << "M " << M << " N " << N << " K " << K << " init " << init;
          for (int64_t i = 0; i < rp; ++i)
            for (int64_t j = 0; j < blocks * 16; ++j) {
              const int64_t at = (j / 16) * rp * 16 + i * 16 + j % 16;
              const float want = i < M && j < N ? spec(a, bt, i, j, K, c0[at], init) : c0[at];
              ASSERT_EQ(std::bit_cast<uint32_t>(plain[at]), std::bit_cast<uint32_t>(want))
                  << "element (" << i << ", " << j << ") of M " << M << " N " << N << " K " << K;
            }
        }
}

TEST(CubeMath, TheOrderIsSequentialInK) {
  // 2^24 + 1 + 1: summed in k order each +1 is lost to rounding (ties to even); summed as
  // (1 + 1) + 2^24 first it would not be. So this result pins the order, on any host.
  const int64_t K = 3;
  std::vector<float> a = {16777216.0f, 1.0f, 1.0f}, bt = {1.0f, 1.0f, 1.0f};
  for (bool plain : {true, false}) {
    float c[16] = {};
    npu::cube_mmad_f32(a.data(), K, bt.data(), K, 1, 1, K, CubeOut{c, 16, 16}, true, plain);
    EXPECT_EQ(c[0], 16777216.0f) << (plain ? "plain" : "simd");
    // Accumulating adds C to the finished sum once: 2^24 + (2^24 + 1 + 1) = 2^25.
    npu::cube_mmad_f32(a.data(), K, bt.data(), K, 1, 1, K, CubeOut{c, 16, 16}, false, plain);
    EXPECT_EQ(c[0], 33554432.0f) << (plain ? "plain" : "simd");
  }
}

TEST(CubeMath, DenseOutputLayout) {
  // row = N, block = 16: a dense row-major tile (the path for L0C tiles off a fractal column).
  std::mt19937 g(3);
  const int64_t M = 13, N = 37, K = 40;
  std::vector<float> a(M * K), bt(N * K), c0(M * N);
  for (float& x : a) x = value(g);
  for (float& x : bt) x = value(g);
  for (float& x : c0) x = value(g);
  std::vector<float> fast = c0;
  npu::cube_mmad_f32(a.data(), K, bt.data(), K, M, N, K, CubeOut{fast.data(), N, 16}, false, false);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      ASSERT_EQ(std::bit_cast<uint32_t>(fast[i * N + j]),
                std::bit_cast<uint32_t>(spec(a, bt, i, j, K, c0[i * N + j], false)));
}

}  // namespace
}  // namespace tl
