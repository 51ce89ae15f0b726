// The cube's 16-bit operands packed straight from L0A's ZZ and L0B's ZN fractals
// (cube_pack_a_zz16, cube_pack_b_zn16; include/tl/npu/cube_math.h) must give the plain loop's
// bits: the Mmad of the packed operands equals cube_mmad_f32's plain path on the same values,
// on odd shapes (tails of the 16-row fractals, the 8-row micro-tiles and the 3-panel groups),
// with NaN, infinities, signed zeros and subnormals, fp16 and bf16, init and accumulate. And
// transpose_fractal16 (LoadData's fractal transpose, L1 NZ -> L0B ZN) is a transpose.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tl/npu/cube_math.h"
#include "tl/npu/numerics.h"

namespace tl {
namespace {

using npu::CubeOut;

/// Random 16-bit operand values of several magnitudes, a few specials among them.
uint16_t value16(std::mt19937& g, bool bf16) {
  std::uniform_int_distribution<int> m(-1024, 1024), e(-16, 6), pick(0, 199);
  float x = std::ldexp(static_cast<float>(m(g)), e(g));
  switch (pick(g)) {
    case 0:
      x = NAN;
      break;
    case 1:
      x = INFINITY;
      break;
    case 2:
      x = -INFINITY;
      break;
    case 3:
      x = -0.0f;
      break;
    case 4:
      x = bf16 ? 1e-39f : 3e-7f;
      break;  // subnormal in the dtype
    default:
      break;
  }
  return bf16 ? npu::f32_to_bf16(x) : npu::f32_to_f16(x);
}

float widen(uint16_t v, bool bf16) {
  return bf16 ? npu::bf16_to_f32(v) : npu::f16_to_f32(v);
}

TEST(CubePack, PackedFromFractalsEqualsThePlainLoop) {
  std::mt19937 g(11);
  for (bool bf16 : {false, true})
    for (int64_t M : {1, 7, 8, 9, 16, 33, 128})
      for (int64_t N : {1, 7, 16, 33, 48, 64, 100, 256})
        for (int64_t K : {1, 7, 16, 33, 64})
          for (bool init : {true, false}) {
            // L0A: ZZ of A [M, K] inside a wider buffer (row block of a 64-column buffer);
            // L0B: ZN of B [K, N] inside a buffer 16 columns wider. Padding holds junk.
            const int64_t mp = (M + 15) / 16 * 16, kp = (K + 15) / 16 * 16, np = (N + 15) / 16 * 16;
            const int64_t a_cols = kp + 32, b_cols = np + 16;
            std::vector<uint16_t> zz(mp * a_cols), zn(kp * b_cols);
            for (auto& v : zz) v = value16(g, bf16);
            for (auto& v : zn) v = value16(g, bf16);
            std::vector<float> a(M * K), bt(N * K);
            for (int64_t i = 0; i < M; ++i)
              for (int64_t k = 0; k < K; ++k)
                a[i * K + k] = widen(
                    zz[(i / 16) * a_cols * 16 + (k / 16) * 256 + (i % 16) * 16 + k % 16], bf16);
            for (int64_t k = 0; k < K; ++k)
              for (int64_t j = 0; j < N; ++j)
                bt[j * K + k] = widen(
                    zn[(k / 16) * b_cols * 16 + (j / 16) * 256 + (j % 16) * 16 + k % 16], bf16);
            std::vector<float> ap(npu::cube_packed_a_size(M, K)), bp(npu::cube_packed_b_size(K, N));
            npu::cube_pack_a_zz16(zz.data(), a_cols * 16, M, K, bf16, ap.data());
            npu::cube_pack_b_zn16(zn.data(), b_cols * 16, K, N, bf16, bp.data());
            // C in L0C's NZ layout with a guard column block: nothing past N may be written.
            const int64_t blocks = np / 16 + 1;
            std::vector<float> c0(mp * blocks * 16);
            for (float& x : c0) x = widen(value16(g, false), false);
            std::vector<float> plain = c0, fast = c0;
            npu::cube_mmad_f32(a.data(), K, bt.data(), K, M, N, K,
                               CubeOut{plain.data(), 16, mp * 16}, init, true);
            npu::cube_mmad_packed(npu::CubeA{ap.data(), kp * 16}, npu::CubeB{bp.data(), kp * 16}, M,
                                  N, K, CubeOut{fast.data(), 16, mp * 16}, init);
            ASSERT_EQ(std::memcmp(plain.data(), fast.data(), plain.size() * 4), 0)
                << (bf16 ? "bf16" : "fp16") << " M " << M << " N " << N << " K " << K << " init "
                << init;
          }
}

TEST(CubePack, FractalTransposeIsATranspose) {
  std::vector<uint16_t> src(256), dst(256, 0xABCD);
  for (int i = 0; i < 256; ++i) src[i] = static_cast<uint16_t>(i * 257 + 3);
  npu::transpose_fractal16(src.data(), dst.data());
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) ASSERT_EQ(dst[c * 16 + r], src[r * 16 + c]) << r << ", " << c;
}

}  // namespace
}  // namespace tl
