// The cube's fp32 multiply-accumulate in its defined order (tl/npu/cube_math.h): the plain scalar
// loop and the blocked SIMD kernels that give the same bits. The packing of operands into the
// kernels' formats is in cube_pack.cpp.
//
// Why not BLAS: OpenBLAS's sgemm sums an element's K products in an order that depends on the
// host CPU (its kernel per core type) and on the call's shape (small-matrix kernels, K split
// into blocks, unrolled partial sums): on a Zen 4 host (its "Cooperlake" kernels) an M = N = 1,
// K = 256 call and the sequential sum differ in the last bit for 1 input in 200, at M = 32,
// N = 16 they agree. The cube's results then changed with the host and with the tile shape, and
// a faster call structure (one call instead of one per 16 columns) could not be shown to keep
// them. Here the order is fixed and every lane of a SIMD register is one output element summing
// its products in k order, which a scalar loop reproduces exactly: IEEE fma and addition are
// correctly rounded, so vector and scalar instructions agree bit for bit. Only NaN payloads
// could differ (x86 picks the payload of the first NaN operand, and compilers pick the operand
// order), so every NaN result is stored as one quiet NaN.
//
// Register blocking. A is read as fp32 ZZ fractals (CubeA: a tile row's 16 k values are
// contiguous, rows 16 floats apart), so a micro-tile's rows stay inside one 16-row fractal row
// and every broadcast is a constant offset from one pointer; B as 16-column panels (CubeB:
// a k step of a panel is one 64-byte vector). AVX-512: 8 rows x 3 panels, 24 accumulators;
// AVX2 + FMA: 6 rows (6, 6, 4 per fractal row) x 16 columns, 12 accumulators.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <utility>
#include <vector>

#include "tl/npu/cube_math.h"

namespace tl::npu {

namespace {

constexpr uint32_t kQuietNaN = 0x7FC00000u;

bool host_has_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}
bool host_has_fma_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

/// The specification: one element at a time.
void mmad_plain(const float* a, int64_t lda, const float* bt, int64_t ldb, int64_t M, int64_t N,
                int64_t K, CubeOut out, bool init) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float s = 0.0f;
      for (int64_t k = 0; k < K; ++k) s = std::fma(a[i * lda + k], bt[j * ldb + k], s);
      float* p = out.c + (j / 16) * out.block + i * out.row + j % 16;
      float r = init ? s : *p + s;
      if (std::isnan(r)) r = std::bit_cast<float>(kQuietNaN);
      *p = r;
    }
}

/// The specification on the packed formats (hosts without AVX2 + FMA).
void mmad_packed_scalar(CubeA a, CubeB b, int64_t M, int64_t N, int64_t K, CubeOut out, bool init) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const float* ai = a.a + (i / 16) * a.row_block + (i % 16) * 16;
      const float* bj = b.b + (j / 16) * b.panel + j % 16;
      float s = 0.0f;
      for (int64_t k = 0; k < K; ++k) s = std::fma(ai[(k / 16) * 256 + k % 16], bj[k * 16], s);
      float* p = out.c + (j / 16) * out.block + i * out.row + j % 16;
      float r = init ? s : *p + s;
      if (std::isnan(r)) r = std::bit_cast<float>(kQuietNaN);
      *p = r;
    }
}

// ---- AVX-512: MR rows (inside one fractal row) x NB panels, one zmm accumulator each.

/// One k step of the micro-tile: ak points at (0, k) of A, bk at (k, 0) of the first panel.
template <int MR, int NB>
__attribute__((target("avx512f"), always_inline)) inline void step512(__m512 (&acc)[MR][NB],
                                                                      const float* ak,
                                                                      const float* bk,
                                                                      int64_t panel) {
  __m512 bv[NB];
#pragma GCC unroll 3
  for (int n = 0; n < NB; ++n) bv[n] = _mm512_loadu_ps(bk + n * panel);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    const __m512 av = _mm512_set1_ps(ak[r * 16]);
#pragma GCC unroll 3
    for (int n = 0; n < NB; ++n) acc[r][n] = _mm512_fmadd_ps(av, bv[n], acc[r][n]);
  }
}

/// a: row 0 of the micro-tile (element (r, k) at a[(k / 16) * 256 + r * 16 + k % 16]).
template <int MR, int NB>
__attribute__((target("avx512f"))) void micro512(const float* a, const float* b, int64_t panel,
                                                 int64_t K, float* c, int64_t row, int64_t block,
                                                 __mmask16 last, bool init) {
  __m512 acc[MR][NB];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
    for (int n = 0; n < NB; ++n) acc[r][n] = _mm512_setzero_ps();
  int64_t k0 = 0;
  for (; k0 + 16 <= K; k0 += 16) {
    const float* ak = a + k0 * 16;
    const float* bk = b + k0 * 16;
#pragma GCC unroll 4
    for (int kk = 0; kk < 16; ++kk) step512<MR, NB>(acc, ak + kk, bk + kk * 16, panel);
  }
  for (int kk = 0; k0 + kk < K; ++kk)
    step512<MR, NB>(acc, a + k0 * 16 + kk, b + (k0 + kk) * 16, panel);
  const __m512 qnan = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(kQuietNaN)));
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
    for (int n = 0; n < NB; ++n) {
      const __mmask16 m = n == NB - 1 ? last : static_cast<__mmask16>(0xFFFF);
      float* p = c + n * block + r * row;
      __m512 v = acc[r][n];
      if (!init) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, p), v);
      v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), qnan);
      _mm512_mask_storeu_ps(p, m, v);
    }
}

using Micro512 = void (*)(const float*, const float*, int64_t, int64_t, float*, int64_t, int64_t,
                          __mmask16, bool);
constexpr int kMr512 = 8, kNb512 = 3;  // 24 accumulators, 3 B vectors, 1 broadcast

template <int NB, int... R>
constexpr auto rows512(std::integer_sequence<int, R...>) {
  return std::array<Micro512, sizeof...(R)>{&micro512<R + 1, NB>...};
}

void mmad_avx512(CubeA a, CubeB b, int64_t M, int64_t N, int64_t K, CubeOut out, bool init) {
  static constexpr std::array<std::array<Micro512, kMr512>, kNb512> micro = {
      rows512<1>(std::make_integer_sequence<int, kMr512>{}),
      rows512<2>(std::make_integer_sequence<int, kMr512>{}),
      rows512<3>(std::make_integer_sequence<int, kMr512>{})};
  const int64_t nb = (N + 15) / 16;
  // A group of panels (3 x K x 64 bytes) stays in the L1 cache while A's rows stream past it.
  for (int64_t jb = 0; jb < nb;) {
    // Groups of 3 panels; four panels left go as 2 + 2 (16 accumulators each), not 3 + 1 (8
    // for the last).
    int NB = static_cast<int>(std::min<int64_t>(kNb512, nb - jb));
    if (nb - jb == 4) NB = 2;
    const int64_t cols = std::min<int64_t>(16, N - (jb + NB - 1) * 16);
    const auto last = static_cast<__mmask16>((1u << cols) - 1u);
    for (int64_t i0 = 0; i0 < M; i0 += kMr512) {
      const int64_t mr = std::min<int64_t>(kMr512, M - i0);
      micro[NB - 1][mr - 1](a.a + (i0 / 16) * a.row_block + (i0 % 16) * 16, b.b + jb * b.panel,
                            b.panel, K, out.c + jb * out.block + i0 * out.row, out.row, out.block,
                            last, init);
    }
    jb += NB;
  }
}

// ---- AVX2 + FMA: MR rows (inside one fractal row) x one panel (two ymm halves).

template <int MR>
__attribute__((target("avx2,fma"))) void micro256(const float* a, const float* b, int64_t K,
                                                  float* c, int64_t row, int cols, bool init) {
  __m256 acc[MR][2];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const float* ak = a + (k / 16) * 256 + k % 16;
    const __m256 b0 = _mm256_loadu_ps(b + k * 16), b1 = _mm256_loadu_ps(b + k * 16 + 8);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256 av = _mm256_broadcast_ss(ak + r * 16);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
  }
  const __m256 qnan = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(kQuietNaN)));
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i m[2] = {_mm256_cmpgt_epi32(_mm256_set1_epi32(cols), lane),
                        _mm256_cmpgt_epi32(_mm256_set1_epi32(cols - 8), lane)};
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
    for (int h = 0; h < 2; ++h) {
      float* p = c + r * row + h * 8;
      __m256 v = acc[r][h];
      if (!init) v = _mm256_add_ps(_mm256_maskload_ps(p, m[h]), v);
      v = _mm256_blendv_ps(v, qnan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      _mm256_maskstore_ps(p, m[h], v);
    }
}

using Micro256 = void (*)(const float*, const float*, int64_t, float*, int64_t, int, bool);
constexpr int kMr256 = 6;  // 6 rows x 16 columns: 12 accumulators, 2 B vectors, 1 broadcast

template <int... R>
constexpr auto table256(std::integer_sequence<int, R...>) {
  return std::array<Micro256, sizeof...(R)>{&micro256<R + 1>...};
}

void mmad_avx2(CubeA a, CubeB b, int64_t M, int64_t N, int64_t K, CubeOut out, bool init) {
  static constexpr auto micro = table256(std::make_integer_sequence<int, kMr256>{});
  const int64_t nb = (N + 15) / 16;
  for (int64_t jb = 0; jb < nb; ++jb) {
    const int cols = static_cast<int>(std::min<int64_t>(16, N - jb * 16));
    for (int64_t i0 = 0; i0 < M;) {
      // Rows 0-5, 6-11, 12-15 of each fractal row: a micro-tile never crosses one.
      const int64_t mr = std::min<int64_t>({kMr256, 16 - i0 % 16, M - i0});
      micro[mr - 1](a.a + (i0 / 16) * a.row_block + (i0 % 16) * 16, b.b + jb * b.panel, K,
                    out.c + jb * out.block + i0 * out.row, out.row, cols, init);
      i0 += mr;
    }
  }
}

// Packed dense operands of cube_mmad_f32, per host thread (blocks run on several).
thread_local PackedFloats g_ap, g_bp;

}  // namespace

void cube_mmad_packed(CubeA a, CubeB b, int64_t M, int64_t N, int64_t K, CubeOut out, bool init) {
  if (M <= 0 || N <= 0) return;
  if (K > 0 && host_has_avx512()) return mmad_avx512(a, b, M, N, K, out, init);
  if (K > 0 && host_has_fma_avx2()) return mmad_avx2(a, b, M, N, K, out, init);
  mmad_packed_scalar(a, b, M, N, K, out, init);
}

void cube_mmad_f32(const float* a, int64_t lda, const float* bt, int64_t ldb, int64_t M, int64_t N,
                   int64_t K, CubeOut out, bool init, bool plain) {
  if (M <= 0 || N <= 0) return;
  if (plain || K <= 0) return mmad_plain(a, lda, bt, ldb, M, N, K, out, init);
  const int64_t kp = (K + 15) / 16 * 16;
  g_ap.assign(static_cast<size_t>(cube_packed_a_size(M, K)), 0.0f);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k)
      g_ap[(i / 16) * kp * 16 + (k / 16) * 256 + (i % 16) * 16 + k % 16] = a[i * lda + k];
  g_bp.assign(static_cast<size_t>(cube_packed_b_size(K, N)), 0.0f);
  for (int64_t j = 0; j < N; ++j)
    for (int64_t k = 0; k < K; ++k) g_bp[(j / 16) * kp * 16 + k * 16 + j % 16] = bt[j * ldb + k];
  cube_mmad_packed(CubeA{g_ap.data(), kp * 16}, CubeB{g_bp.data(), kp * 16}, M, N, K, out, init);
}

}  // namespace tl::npu
