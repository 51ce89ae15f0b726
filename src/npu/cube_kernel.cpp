// The cube's fp32 multiply-accumulate in its defined order (tl/npu/cube_math.h): the plain scalar
// loop and the blocked SIMD kernels that give the same bits.
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
#include "tl/npu/cube_math.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <utility>
#include <vector>

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

// Packed operands of the SIMD kernels, per host thread (blocks run on several): B as
// [column block][k][16] (zero past N), A as groups of MR rows, [k][MR] each.
thread_local std::vector<float> g_ap, g_bp;

void pack_b(const float* bt, int64_t ldb, int64_t N, int64_t K) {
  const int64_t nb = (N + 15) / 16;
  g_bp.assign(static_cast<size_t>(nb * K * 16), 0.0f);
  for (int64_t j = 0; j < N; ++j) {
    const float* s = bt + j * ldb;
    float* d = g_bp.data() + (j / 16) * K * 16 + j % 16;
    for (int64_t k = 0; k < K; ++k) d[k * 16] = s[k];
  }
}

void pack_a(const float* a, int64_t lda, int64_t M, int64_t K, int mr_max) {
  g_ap.resize(static_cast<size_t>(M * K));
  for (int64_t i0 = 0; i0 < M; i0 += mr_max) {
    const int64_t mr = std::min<int64_t>(mr_max, M - i0);
    float* d = g_ap.data() + i0 * K;
    for (int64_t r = 0; r < mr; ++r) {
      const float* s = a + (i0 + r) * lda;
      for (int64_t k = 0; k < K; ++k) d[k * mr + r] = s[k];
    }
  }
}

// ---- AVX-512: MR rows x NB column blocks of 16, one zmm accumulator per (row, block).

template <int MR, int NB>
__attribute__((target("avx512f"))) void micro512(const float* ap, const float* bp, int64_t bstep,
                                                 int64_t K, float* c, int64_t row, int64_t block,
                                                 __mmask16 last, bool init) {
  __m512 acc[MR][NB];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
    for (int n = 0; n < NB; ++n) acc[r][n] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    __m512 b[NB];
#pragma GCC unroll 2
    for (int n = 0; n < NB; ++n) b[n] = _mm512_loadu_ps(bp + n * bstep + k * 16);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const __m512 av = _mm512_set1_ps(ap[k * MR + r]);
#pragma GCC unroll 2
      for (int n = 0; n < NB; ++n) acc[r][n] = _mm512_fmadd_ps(av, b[n], acc[r][n]);
    }
  }
  const __m512 qnan = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(kQuietNaN)));
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
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
constexpr int kMr512 = 12;  // 12 rows x 2 blocks: 24 accumulators, 2 B vectors, 1 broadcast

template <int NB, int... R>
constexpr auto table512(std::integer_sequence<int, R...>) {
  return std::array<Micro512, sizeof...(R)>{&micro512<R + 1, NB>...};
}

void mmad_avx512(int64_t M, int64_t N, int64_t K, CubeOut out, bool init) {
  static constexpr auto one = table512<1>(std::make_integer_sequence<int, kMr512>{});
  static constexpr auto two = table512<2>(std::make_integer_sequence<int, kMr512>{});
  const int64_t nb = (N + 15) / 16;
  for (int64_t jb = 0; jb < nb; jb += 2) {
    const int NB = jb + 1 < nb ? 2 : 1;
    const int64_t cols = std::min<int64_t>(16, N - (jb + NB - 1) * 16);
    const auto last = static_cast<__mmask16>((1u << cols) - 1u);
    for (int64_t i0 = 0; i0 < M; i0 += kMr512) {
      const int64_t mr = std::min<int64_t>(kMr512, M - i0);
      (NB == 2 ? two : one)[mr - 1](g_ap.data() + i0 * K, g_bp.data() + jb * K * 16, K * 16, K,
                                    out.c + jb * out.block + i0 * out.row, out.row, out.block, last,
                                    init);
    }
  }
}

// ---- AVX2 + FMA: MR rows x one column block (two ymm halves).

template <int MR>
__attribute__((target("avx2,fma"))) void micro256(const float* ap, const float* bp, int64_t K,
                                                  float* c, int64_t row, int cols, bool init) {
  __m256 acc[MR][2];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m256 b0 = _mm256_loadu_ps(bp + k * 16), b1 = _mm256_loadu_ps(bp + k * 16 + 8);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256 av = _mm256_broadcast_ss(ap + k * MR + r);
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

void mmad_avx2(int64_t M, int64_t N, int64_t K, CubeOut out, bool init) {
  static constexpr auto micro = table256(std::make_integer_sequence<int, kMr256>{});
  const int64_t nb = (N + 15) / 16;
  for (int64_t jb = 0; jb < nb; ++jb) {
    const int cols = static_cast<int>(std::min<int64_t>(16, N - jb * 16));
    for (int64_t i0 = 0; i0 < M; i0 += kMr256) {
      const int64_t mr = std::min<int64_t>(kMr256, M - i0);
      micro[mr - 1](g_ap.data() + i0 * K, g_bp.data() + jb * K * 16, K,
                    out.c + jb * out.block + i0 * out.row, out.row, cols, init);
    }
  }
}

}  // namespace

void cube_mmad_f32(const float* a, int64_t lda, const float* bt, int64_t ldb, int64_t M, int64_t N,
                   int64_t K, CubeOut out, bool init, bool plain) {
  if (M <= 0 || N <= 0) return;
  if (plain || K <= 0 || !(host_has_avx512() || host_has_fma_avx2()))
    return mmad_plain(a, lda, bt, ldb, M, N, K, out, init);
  const bool wide = host_has_avx512();
  pack_b(bt, ldb, N, K);
  pack_a(a, lda, M, K, wide ? kMr512 : kMr256);
  if (wide)
    mmad_avx512(M, N, K, out, init);
  else
    mmad_avx2(M, N, K, out, init);
}

}  // namespace tl::npu
