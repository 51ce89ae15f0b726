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
#pragma once

#include <cstdint>

namespace tl::npu {

/// Where output element (i, j) of C lives: c[(j / 16) * block + i * row + j % 16]. L0C's NZ
/// layout is row = 16, block = 16 * padded rows; a dense row-major [M, N] tile is row = N,
/// block = 16.
struct CubeOut {
  float* c;
  int64_t row;
  int64_t block;
};

/// C (M x N) = [C +] A x B for A dense row-major [M, K] (lda) and B^T dense row-major [N, K]
/// (ldb), in the order above; plain selects the scalar loop.
void cube_mmad_f32(const float* a, int64_t lda, const float* bt, int64_t ldb, int64_t M, int64_t N,
                   int64_t K, CubeOut out, bool init, bool plain);

}  // namespace tl::npu
