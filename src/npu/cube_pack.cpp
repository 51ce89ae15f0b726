// The cube's operands packed into its kernel's fp32 formats (tl/npu/cube_math.h: CubeA, CubeB)
// straight from L0A's and L0B's 16-bit fractals, and the 16 x 16 fractal transpose of LoadData
// (L1 NZ -> L0B ZN).
//
// Why: an Mmad used to move B three times (a gather of L0B's ZN fractals into a dense B^T, then
// a repacking into the kernel's 16-column panels) and A twice, with a scalar loop each time;
// on a 128 x 256 x 64 Mmad that cost about as much as the arithmetic. L0B's ZN fractal (k, j)
// holds 16 columns j of 16 values k each (a column of B is 16 contiguous k values: LoadData
// transposed it), and a panel wants 16 values j per k, so each fractal is widened to fp32 in
// 16 registers and transposed in registers (4 rounds of two-source permutes) into the panel.
// L0A's ZZ fractals are already the CubeA order, so A is one widening pass. Values are the
// exact fp32 images of the operands (fp16 and bf16 widen exactly), so the products, and the
// cube's bits, are those of the element-by-element gather (FastPaths.*, CubeMath.*).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "tl/npu/cube_math.h"
#include "tl/npu/numerics.h"

namespace tl::npu {

namespace {

bool host_has_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

/// Transposes the 16 x 16 matrix of 32-bit lanes held in r (r[i] is row i). Round b swaps the
/// off-diagonal b x b blocks of every 2b x 2b block (b = 8, 4, 2, 1): row i (i & b == 0) keeps
/// its columns without bit b and takes row i + b's columns j - b; row i + b the rest.
struct PermTables {
  alignas(64) int idx[4][2][16];  // [round][lo, hi][lane]
};
constexpr PermTables perm_tables() {
  PermTables t{};
  for (int round = 0, b = 8; round < 4; ++round, b /= 2)
    for (int j = 0; j < 16; ++j) {
      t.idx[round][0][j] = (j & b) ? 16 + j - b : j;
      t.idx[round][1][j] = (j & b) ? 16 + j : j + b;
    }
  return t;
}
constexpr PermTables kPerm = perm_tables();

__attribute__((target("avx512f"))) inline void transpose16(__m512i (&r)[16]) {
#pragma GCC unroll 4
  for (int round = 0; round < 4; ++round) {
    const int b = 8 >> round;
    const __m512i il = _mm512_load_si512(kPerm.idx[round][0]),
                  ih = _mm512_load_si512(kPerm.idx[round][1]);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      if (i & b) continue;
      const __m512i x = r[i], y = r[i + b];
      r[i] = _mm512_maskz_permutex2var_epi32(0xFFFF, x, il, y);
      r[i + b] = _mm512_maskz_permutex2var_epi32(0xFFFF, x, ih, y);
    }
  }
}

/// The 16 x 16 transpose of 16-bit elements in 8 zmm registers (register R holds rows 2R and
/// 2R + 1), three rounds of two-source word permutes (AVX-512BW vpermt2w): 24 permutes for a
/// fractal, where widening to 32-bit lanes took 64 and twice the registers. Element (r, c) sits
/// in register r >> 1 at lane (r & 1) * 16 + c and must end in register c >> 1 at lane
/// (c & 1) * 16 + r: round k pairs the registers that differ in bit k and sends to the pair's
/// first register the elements with bit k + 1 of c clear, to the second the rest, each half in
/// the order of its final lane. The tables are built (and the result checked) at compile time.
struct WordTables {
  alignas(64) uint16_t idx[3][4][2][32];  // [round][pair][first, second output][lane]
};
constexpr WordTables word_tables() {
  WordTables t{};
  int at[8][32]{};  // at[R][L] = r * 16 + c of the element register R holds at lane L
  for (int R = 0; R < 8; ++R)
    for (int L = 0; L < 32; ++L) at[R][L] = (2 * R + (L >> 4)) * 16 + (L & 15);
  for (int k = 0; k < 3; ++k) {
    int next[8][32]{};
    for (int pair = 0, R = 0; R < 8; ++R) {
      if (R & (1 << k)) continue;
      const int P = R | (1 << k);
      for (int out = 0; out < 2; ++out) {
        // The 32 of the pair's 64 elements bound for this output, by final lane, then by c.
        int chosen[32]{}, n = 0;
        for (int i = 0; i < 64; ++i) {
          const int e = i < 32 ? at[R][i] : at[P][i - 32];
          if (((e & 15) >> (k + 1) & 1) == out) chosen[n++] = i;
        }
        if (n != 32) throw "word_tables: a round's split is not even";
        auto key = [&](int i) {
          const int e = i < 32 ? at[R][i] : at[P][i - 32];
          return ((e & 1) * 16 + (e >> 4)) * 16 + (e & 15);
        };
        for (int a = 1; a < 32; ++a)  // insertion sort (constexpr)
          for (int b = a; b > 0 && key(chosen[b - 1]) > key(chosen[b]); --b) {
            const int x = chosen[b];
            chosen[b] = chosen[b - 1];
            chosen[b - 1] = x;
          }
        for (int L = 0; L < 32; ++L) {
          t.idx[k][pair][out][L] = static_cast<uint16_t>(chosen[L]);
          const int i = chosen[L];
          next[out ? P : R][L] = i < 32 ? at[R][i] : at[P][i - 32];
        }
      }
      ++pair;
    }
    for (int R = 0; R < 8; ++R)
      for (int L = 0; L < 32; ++L) at[R][L] = next[R][L];
  }
  for (int R = 0; R < 8; ++R)
    for (int L = 0; L < 32; ++L)
      if (at[R][L] != (L & 15) * 16 + 2 * R + (L >> 4)) throw "word_tables: not a transpose";
  return t;
}
constexpr WordTables kWord = word_tables();

/// r[R] holds rows 2R, 2R + 1 of a 16 x 16 block of 16-bit elements; afterwards r[R] holds
/// rows 2R, 2R + 1 of its transpose.
__attribute__((target("avx512f,avx512bw"))) inline void transpose_words(__m512i (&r)[8]) {
#pragma GCC unroll 3
  for (int k = 0; k < 3; ++k) {
    __m512i next[8];
    int pair = 0;
#pragma GCC unroll 8
    for (int R = 0; R < 8; ++R) {
      if (R & (1 << k)) continue;
      const int P = R | (1 << k);
      next[R] = _mm512_permutex2var_epi16(r[R], _mm512_load_si512(kWord.idx[k][pair][0]), r[P]);
      next[P] = _mm512_permutex2var_epi16(r[R], _mm512_load_si512(kWord.idx[k][pair][1]), r[P]);
      ++pair;
    }
#pragma GCC unroll 8
    for (int R = 0; R < 8; ++R) r[R] = next[R];
  }
}

bool host_has_avx512bw() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return yes;
}

/// 16 16-bit values (fp16, or bf16) widened to fp32 lanes.
__attribute__((target("avx512f,avx512bw"), always_inline)) inline __m512i widen_words(__m256i w,
                                                                                      bool bf16) {
  constexpr __mmask16 all = 0xFFFF;
  if (bf16) return _mm512_maskz_slli_epi32(all, _mm512_maskz_cvtepu16_epi32(all, w), 16);
  return _mm512_castps_si512(_mm512_maskz_cvtph_ps(all, w));
}

/// pack_b_avx512 with the fractal transposed as 16-bit words before widening (AVX-512BW).
__attribute__((target("avx512f,avx512bw"))) void pack_b_avx512bw(const uint16_t* zn,
                                                                 int64_t zn_k_block, int64_t kb,
                                                                 int64_t nb, bool bf16,
                                                                 float* out) {
  const int64_t panel = kb * 256;
  for (int64_t k1 = 0; k1 < kb; ++k1)
    for (int64_t j1 = 0; j1 < nb; ++j1) {
      const uint16_t* s = zn + k1 * zn_k_block + j1 * 256;
      __m512i r[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_si512(s + i * 32);  // columns 2i, 2i + 1
      transpose_words(r);                                                 // rows k 2i, 2i + 1
      float* d = out + j1 * panel + k1 * 256;
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) {
        _mm512_storeu_si512(d + 2 * i * 16,
                            widen_words(_mm512_maskz_extracti64x4_epi64(0xF, r[i], 0), bf16));
        _mm512_storeu_si512(d + (2 * i + 1) * 16,
                            widen_words(_mm512_maskz_extracti64x4_epi64(0xF, r[i], 1), bf16));
      }
    }
}

__attribute__((target("avx512f,avx512bw"))) void transpose_avx512bw(const uint16_t* src,
                                                                    uint16_t* dst) {
  __m512i r[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_si512(src + i * 32);
  transpose_words(r);
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) _mm512_storeu_si512(dst + i * 32, r[i]);
}

/// 16 16-bit values widened to fp32 lanes (fp16: vcvtph2ps; bf16: the high half of the float).
__attribute__((target("avx512f"))) inline __m512i widen16(const uint16_t* p, bool bf16) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  // The zero-masked forms: GCC 12 warns on the plain ones' undefined pass-through operand.
  constexpr __mmask16 all = 0xFFFF;
  if (bf16) return _mm512_maskz_slli_epi32(all, _mm512_maskz_cvtepu16_epi32(all, h), 16);
  return _mm512_castps_si512(_mm512_maskz_cvtph_ps(all, h));
}

__attribute__((target("avx512f"))) void pack_b_avx512(const uint16_t* zn, int64_t zn_k_block,
                                                      int64_t kb, int64_t nb, bool bf16,
                                                      float* out) {
  const int64_t panel = kb * 256;
  for (int64_t k1 = 0; k1 < kb; ++k1)
    for (int64_t j1 = 0; j1 < nb; ++j1) {
      const uint16_t* s = zn + k1 * zn_k_block + j1 * 256;
      __m512i r[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) r[i] = widen16(s + i * 16, bf16);  // row i: column j1*16+i
      transpose16(r);                                                 // row i: k = k1*16+i
      float* d = out + j1 * panel + k1 * 256;
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i) _mm512_storeu_si512(d + i * 16, r[i]);
    }
}

__attribute__((target("avx512f"))) void transpose_avx512(const uint16_t* src, uint16_t* dst) {
  __m512i r[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i)
    r[i] = _mm512_maskz_cvtepu16_epi32(
        0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i * 16)));
  transpose16(r);
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i * 16),
                        _mm512_maskz_cvtepi32_epi16(0xFFFF, r[i]));
}

}  // namespace

void cube_pack_a_zz16(const uint16_t* zz, int64_t zz_row_block, int64_t M, int64_t K, bool bf16,
                      float* out) {
  const int64_t mb = (M + 15) / 16, run = (K + 15) / 16 * 256;
  const DType t = bf16 ? DType::BFloat16 : DType::Float16;
  // ZZ keeps a fractal row's K / 16 fractals contiguous: one widening run per fractal row.
  for (int64_t i1 = 0; i1 < mb; ++i1)
    convert(t, zz + i1 * zz_row_block, DType::Float32, out + i1 * run, run);
}

void cube_pack_b_zn16(const uint16_t* zn, int64_t zn_k_block, int64_t K, int64_t N, bool bf16,
                      float* out) {
  const int64_t kb = (K + 15) / 16, nb = (N + 15) / 16;
  if (host_has_avx512bw()) return pack_b_avx512bw(zn, zn_k_block, kb, nb, bf16, out);
  if (host_has_avx512()) return pack_b_avx512(zn, zn_k_block, kb, nb, bf16, out);
  const DType t = bf16 ? DType::BFloat16 : DType::Float16;
  float row[16];
  for (int64_t k1 = 0; k1 < kb; ++k1)
    for (int64_t j1 = 0; j1 < nb; ++j1)
      for (int j0 = 0; j0 < 16; ++j0) {
        convert(t, zn + k1 * zn_k_block + j1 * 256 + j0 * 16, DType::Float32, row, 16);
        float* d = out + j1 * kb * 256 + k1 * 256 + j0;
        for (int k0 = 0; k0 < 16; ++k0) d[k0 * 16] = row[k0];
      }
}

void transpose_fractal16(const uint16_t* src, uint16_t* dst) {
  if (host_has_avx512bw()) return transpose_avx512bw(src, dst);
  if (host_has_avx512()) return transpose_avx512(src, dst);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) dst[c * 16 + r] = src[r * 16 + c];
}

}  // namespace tl::npu
