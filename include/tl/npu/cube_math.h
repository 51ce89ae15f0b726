// The cube's fp32 multiply-accumulate (Mmad's arithmetic on the virtual NPU) in one
// defined order, so its result does not depend on the host's BLAS, CPU or the tile's shape.
//
// The order (docs/virtual_npu.md, Numerics): for every output element, s = the fp32 sum of
// its K products formed one after another, k = 0, 1, ..., K - 1, each step one fused
// multiply-add (s = fma(a[i][k], b[k][j], s), s starting at +0); then C = s (init) or
// C = C + s (one fp32 addition). A NaN result is stored as the quiet NaN 0x7FC00000. fp16 and
// bf16 products are exact in fp32, so for those dtypes the fma is a product then a rounded sum.
//
// Two implementations with that order: the plain one (a scalar loop over i, j, k: the
// specification, selected by TL_NPU_PLAIN_PATHS=1) and the blocked SIMD one (AVX-512 or AVX2
// chosen at run time: one vector lane per output element, k sequential in every lane), which
// give the same bits (tests/npu/cube_math_test.cpp, FastPaths.*).
//
// The SIMD kernel reads its operands in two packed fp32 formats (CubeA, CubeB). The cube's
// 16-bit operands are packed into them straight from L0A's and L0B's fractals
// (cube_pack_a_zz16, cube_pack_b_zn16: one widening pass, B's fractals transposed in
// registers), so an Mmad moves each operand once; dense operands (cube_mmad_f32) are packed
// by plain loops.
#pragma once

#include <cstdint>
#include <vector>

#include "tl/npu/cache_aligned.h"

namespace tl::npu {

/// The packed operands' storage, 64-byte aligned (tl/npu/cache_aligned.h): the kernel loads B in
/// 64-byte vectors at multiples of 64 bytes from the buffer's start.
using PackedFloats = std::vector<float, CacheAligned<float>>;

/// Where output element (i, j) of C lives: c[(j / 16) * block + i * row + j % 16]. L0C's NZ
/// layout is row = 16, block = 16 * padded rows; a dense row-major [M, N] tile is row = N,
/// block = 16.
struct CubeOut {
  float* c;
  int64_t row;
  int64_t block;
};

/// A [M, K] as fp32 16 x 16 fractals in ZZ order (L0A's layout, widened): element (i, k) at
/// a[(i / 16) * row_block + (k / 16) * 256 + (i % 16) * 16 + k % 16]. Rows past M up to the
/// next multiple of 16 and columns past K up to the next multiple of 16 may hold anything
/// (they are never read into a stored result).
struct CubeA {
  const float* a;
  int64_t row_block;
};

/// B [K, N] as fp32 panels of 16 columns: element (k, j) at b[(j / 16) * panel + k * 16 + j % 16]
/// (columns past N in the last panel may hold anything; they are never stored).
struct CubeB {
  const float* b;
  int64_t panel;
};

/// C (M x N) = [C +] A x B for A dense row-major [M, K] (lda) and B^T dense row-major [N, K]
/// (ldb), in the order above; plain selects the scalar loop.
void cube_mmad_f32(const float* a, int64_t lda, const float* bt, int64_t ldb, int64_t M, int64_t N,
                   int64_t K, CubeOut out, bool init, bool plain);

/// The same on packed operands (the SIMD kernel; a scalar loop in the same order on hosts
/// without AVX2 + FMA).
void cube_mmad_packed(CubeA a, CubeB b, int64_t M, int64_t N, int64_t K, CubeOut out, bool init);

/// Floats cube_pack_a_zz16 writes for an [M, K] operand (rows and K padded to 16), and
/// cube_pack_b_zn16 for a [K, N] one (K and N padded to 16).
inline int64_t cube_packed_a_size(int64_t M, int64_t K) {
  return (M + 15) / 16 * 16 * ((K + 15) / 16 * 16);
}
inline int64_t cube_packed_b_size(int64_t K, int64_t N) {
  return (N + 15) / 16 * 16 * ((K + 15) / 16 * 16);
}

/// A from 16-bit ZZ fractals (L0A; fp16, or bf16 when bf16): element (i, k) at
/// zz[(i / 16) * zz_row_block + (k / 16) * 256 + (i % 16) * 16 + k % 16], whole fractals read
/// (the operand's padding rows and columns included). Writes the CubeA with row_block =
/// align16(K) * 16 into out (cube_packed_a_size floats).
void cube_pack_a_zz16(const uint16_t* zz, int64_t zz_row_block, int64_t M, int64_t K, bool bf16,
                      float* out);

/// B from 16-bit ZN fractals (L0B): element (k, j) at
/// zn[(k / 16) * zn_k_block + (j / 16) * 256 + (j % 16) * 16 + k % 16], whole fractals read.
/// Writes the CubeB with panel = align16(K) * 16 into out (cube_packed_b_size floats).
void cube_pack_b_zn16(const uint16_t* zn, int64_t zn_k_block, int64_t K, int64_t N, bool bf16,
                      float* out);

/// Transposes one 16 x 16 block of 16-bit elements: dst[c * 16 + r] = src[r * 16 + c]. LoadData's
/// fractal transpose (L1 NZ of B [K, N] -> L0B ZN), in registers on hosts with AVX-512.
void transpose_fractal16(const uint16_t* src, uint16_t* dst);

}  // namespace tl::npu
