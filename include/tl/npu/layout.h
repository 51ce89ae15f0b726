// Fractal data layouts of the Ascend cube unit (A2, arch 2201) as pure index maps and copies
// between a logical row-major ("ND") matrix and the on-chip layouts of L1, L0A, L0B and L0C.
//
// A fractal is 512 bytes: 16 rows x C0 columns, C0 = 32 B / sizeof(T) (16 for fp16/bf16, 32
// for int8/fp8, 8 for fp32), except in L0C where fractals are 16 x 16 elements of fp32/int32.
//
// Layouts, in asc-devkit's naming (the first letter is the order *between* fractals, the
// second the order *inside* a fractal; Z = row-major, N = column-major):
//   NZ  (L1, L0C): [R, C] -> pad -> (R1, R0=16, C1, C0) -> transpose -> (C1, R1, R0, C0).
//        Fractals column-block-major (all of column block 0 top to bottom, then block 1, ...),
//        row-major inside. Offset = (c / C0) * Rp * C0 + r * C0 + c % C0, Rp = padded rows.
//   ZZ  (L0A, the left matrix A [M, K]): (M1, K1, M0=16, K0=C0). Fractals row-block-major,
//        row-major inside.
//   ZN  (L0B, the right matrix B [K, N]): (K1, N1, N0=16, K0=C0). Fractals row-block-major over
//        (K1, N1); inside, a C0 x 16 fractal stored column-major. Equivalently: ZN of B is
//        byte-identical to NZ of B^T [N, K] (with its rows padded to 16).
// Catlass uses the opposite letter order (lowercase = inside, uppercase = between): its
// zN = asc-devkit NZ (L1, L0C), zZ = ZZ (L0A), nZ = ZN (L0B). Catlass's "L1 NZ, L0A zZ,
// L0B nZ" mixes the two conventions; the maps below are what both describe.
//
// Sources (read, not copied):
//   - asc-devkit docs/zh/guide/技术附录/概念原理和术语/神经网络和算子/数据排布格式.md: NZ/ZZ/ZN
//     definitions as pad/reshape/transpose formulas; L0A ZZ, L0B ZN, L0C NZ; L1 fractal
//     16 x (32 B / sizeof), L0C fractal 16 x 16; the (20, 28) fp16 ND->NZ worked example.
//   - asc-devkit LoadData_2D.md: LoadData moves whole 512-byte fractals (startIndex,
//     repeatTimes, srcStride); b8 fractals are 16x32 in L0A and 32x16 in L0B, b32 16x8 / 8x16;
//     ifTranspose transposes each fractal and is b16-only.
//   - Catlass include/catlass/layout/matrix.hpp: zN "row-major inside fractal and col-major
//     between fractal", nZ "col-major inside fractal and row-major between fractal" (L0B
//     fractal C0 rows x 16 cols).
//
// LoadData semantics modelled by the copies below (consequence of the byte layouts):
//   L1 NZ of A [M, K]   -> L0A ZZ of A:   fractals reordered, contents copied (no transpose).
//   L1 NZ of A^T [K, M] -> L0A ZZ of A:   each fractal transposed, order kept (transpose).
//   L1 NZ of B^T [N, K] -> L0B ZN of B:   a straight copy (no transpose).
//   L1 NZ of B [K, N]   -> L0B ZN of B:   each fractal transposed, reordered (transpose).
// The copies accept any dtype; for transposes of non-16-bit types they compute the
// mathematical result (the dst layout of the transposed matrix): the hardware's LoadData
// transposes b16 only, b8/b32 transposes go through LoadDataWithTranspose.
//
// Sub-tiles: every map is linear in fractal-aligned offsets, so a tile starting at a fractal
// boundary (row0 % 16 == 0, col0 % C0 == 0) of an NZ matrix is src + nz_offset(row0, col0,
// Rp, C0) with the same Rp. All sizes and offsets are in elements unless named *_bytes.
#pragma once

#include <cstdint>

#include "tl/dtype.h"

namespace tl::npu {

inline constexpr int kFractalRows = 16;    // M0 = N0 = 16
inline constexpr int kFractalBytes = 512;  // one L1/L0A/L0B fractal
inline constexpr int kC0Bytes = 32;

/// Elements per fractal row in L1/L0A/L0B: 32 / sizeof(t) (16 fp16/bf16, 32 int8/fp8, 8 fp32).
int c0_elems(DType t);
inline int64_t align_up(int64_t x, int64_t a) {
  return (x + a - 1) / a * a;
}

/// NZ (L1 with c0 = c0_elems, L0C with c0 = 16): element (row, col) of a matrix whose column
/// blocks are rows_padded rows tall (rows_padded % 16 == 0).
inline int64_t nz_offset(int64_t row, int64_t col, int64_t rows_padded, int c0) {
  return (col / c0) * rows_padded * c0 + row * c0 + col % c0;
}
/// ZZ (L0A): element (row, col) of A whose padded width is cols_padded (% c0 == 0).
inline int64_t zz_offset(int64_t row, int64_t col, int64_t cols_padded, int c0) {
  return (row / kFractalRows) * (cols_padded * kFractalRows) + (col / c0) * (kFractalRows * c0) +
         (row % kFractalRows) * c0 + col % c0;
}
/// ZN (L0B): element (k, n) of B [K, N] whose padded width is n_padded (% 16 == 0).
inline int64_t zn_offset(int64_t k, int64_t n, int64_t n_padded, int c0) {
  return (k / c0) * (n_padded * c0) + (n / kFractalRows) * (kFractalRows * c0) +
         (n % kFractalRows) * c0 + k % c0;
}
/// L0C (NZ with 16 x 16 fractals of fp32/int32).
inline int64_t l0c_offset(int64_t row, int64_t col, int64_t rows_padded) {
  return nz_offset(row, col, rows_padded, kFractalRows);
}

/// GM ND -> L1 NZ (DataCopy with Nd2NzParams): rows x cols of a row-major matrix with row
/// pitch src_pitch, into NZ with column blocks dst_rows_padded tall (0: align16(rows)).
/// Columns are padded to a multiple of c0 and rows to dst_rows_padded, with zeros: dst
/// receives exactly dst_rows_padded * align_up(cols, c0) elements. c0 = 0 means c0_elems(t).
void nd_to_nz(const void* src, int64_t rows, int64_t cols, int64_t src_pitch, DType t, void* dst,
              int64_t dst_rows_padded = 0, int c0 = 0);

/// NZ -> ND: the rows x cols logical matrix out of NZ (column blocks src_rows_padded tall)
/// into a row-major matrix with row pitch dst_pitch. Padding is not written.
void nz_to_nd(const void* src, int64_t rows, int64_t cols, int64_t src_rows_padded, DType t,
              void* dst, int64_t dst_pitch, int c0 = 0);

/// Fixpipe L0C -> GM layout map (NZ 16x16 -> ND), no dtype conversion: m x n elements of
/// fp32/int32 (src_rows_padded = srcStride = align16(m) usually) into rows of pitch dst_pitch.
void l0c_to_nd(const void* src, int64_t m, int64_t n, int64_t src_rows_padded, DType t, void* dst,
               int64_t dst_pitch);

/// L1 -> L0A (LoadData). dst is ZZ of A [align16(m), align_up(k, c0)], fully written.
///  transpose = false: src is NZ of A (column blocks src_rows_padded >= align16(m) tall).
///  transpose = true:  src is NZ of A^T [k, m] (src_rows_padded >= align16(k)).
/// Whole fractals are copied, so padding comes from src's padding (zero after nd_to_nz);
/// the element-wise path (transposes of non-16-bit types) zero-fills the padding.
void nz_to_zz(const void* src, int64_t src_rows_padded, int64_t m, int64_t k, DType t,
              bool transpose, void* dst);

/// L1 -> L0B (LoadData). dst is ZN of B [align_up(k, c0), align16(n)], fully written.
///  transpose = false: src is NZ of B^T [n, k] (src_rows_padded >= align16(n)): the copy is
///                     byte-for-byte when src_rows_padded == align16(n).
///  transpose = true:  src is NZ of B [k, n] (src_rows_padded >= align16(k)).
/// Padding as for nz_to_zz.
void nz_to_zn(const void* src, int64_t src_rows_padded, int64_t k, int64_t n, DType t,
              bool transpose, void* dst);

}  // namespace tl::npu
