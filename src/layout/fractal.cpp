// Fractal layout copies: loops over fractals whose inner step is a memcpy of one 32-byte
// fractal row (or a whole 512-byte fractal) wherever the layouts allow it. Index maps and
// the sources they come from are documented in the header.
#include "tl/npu/layout.h"

#include <cstring>

#include "tl/error.h"

namespace tl::npu {

int c0_elems(DType t) {
  int b = dtype_bytes(t);
  TL_ASSERT(b >= 1 && b <= 4, "c0_elems: {} has no cube fractal", dtype_name(t));
  return kC0Bytes / b;
}

namespace {

using Byte = unsigned char;

// Element-wise copy of one element of `eb` bytes.
inline void copy_elem(Byte* d, const Byte* s, int eb) {
  std::memcpy(d, s, size_t(eb));
}

// Transpose a 16 x 16 block of `eb`-byte elements (row-major in, row-major out).
void transpose16(const Byte* src, Byte* dst, int eb) {
  if (eb == 2) {
    uint16_t in[256], out[256];
    std::memcpy(in, src, sizeof in);
    for (int i = 0; i < kFractalRows; ++i)
      for (int j = 0; j < kFractalRows; ++j) out[j * kFractalRows + i] = in[i * kFractalRows + j];
    std::memcpy(dst, out, sizeof out);
    return;
  }
  for (int i = 0; i < kFractalRows; ++i)
    for (int j = 0; j < kFractalRows; ++j)
      copy_elem(dst + (size_t(j) * kFractalRows + i) * eb,
                src + (size_t(i) * kFractalRows + j) * eb, eb);
}

}  // namespace

void nd_to_nz(const void* src_v, int64_t rows, int64_t cols, int64_t src_pitch, DType t,
              void* dst_v, int64_t dst_rows_padded, int c0) {
  const int eb = dtype_bytes(t);
  if (c0 == 0) c0 = c0_elems(t);
  if (dst_rows_padded == 0) dst_rows_padded = align_up(rows, kFractalRows);
  TL_ASSERT(dst_rows_padded >= rows && dst_rows_padded % kFractalRows == 0,
            "nd_to_nz: dst_rows_padded {} must be a multiple of 16 >= rows {}", dst_rows_padded,
            rows);
  TL_ASSERT(src_pitch >= cols, "nd_to_nz: src_pitch {} < cols {}", src_pitch, cols);
  auto* src = static_cast<const Byte*>(src_v);
  auto* dst = static_cast<Byte*>(dst_v);
  const int64_t blocks = (cols + c0 - 1) / c0;
  const size_t row_bytes = size_t(c0) * eb;
  // Whole 32-byte rows of whole column blocks: 16 rows (a fractal's height) by 4 column blocks at
  // a time, so each row's 128 source bytes (two cache lines) are read together and the four
  // destination fractals are written row by row. Column block by column block, the 16 rows, a
  // GM pitch apart (often a multiple of 4 KiB), fell into one L1 cache set and each source line
  // was fetched twice; 4 blocks measured 1.45x faster than 1 (2: 1.1x, 8: 1.0x) on a 256 x 256
  // fp16 tile of a 2048-wide matrix. Each row is a copy of a constant size (inlined).
  const int64_t whole = row_bytes == size_t(kC0Bytes) ? cols / c0 : 0;
  constexpr int64_t kGroup = 4;
  for (int64_t r0 = 0; r0 < rows; r0 += kFractalRows) {
    const int64_t rn = rows - r0 < kFractalRows ? rows - r0 : kFractalRows;
    for (int64_t g = 0; g < whole; g += kGroup) {
      const int64_t gn = whole - g < kGroup ? whole - g : kGroup;
      for (int64_t r = r0; r < r0 + rn; ++r) {
        const Byte* s = src + (size_t(r) * size_t(src_pitch) + size_t(g * c0)) * eb;
        for (int64_t cb = g; cb < g + gn; ++cb)
          std::memcpy(dst + (size_t(cb) * size_t(dst_rows_padded) + size_t(r)) * row_bytes,
                      s + size_t(cb - g) * kC0Bytes, kC0Bytes);
      }
    }
  }
  for (int64_t cb = 0; cb < blocks; ++cb) {
    const int64_t c_begin = cb * c0;
    const int64_t width = cols - c_begin < c0 ? cols - c_begin : c0;
    Byte* block = dst + size_t(cb) * size_t(dst_rows_padded) * row_bytes;
    if (cb < whole) {
      // Copied above.
    } else {
      for (int64_t r = 0; r < rows; ++r) {
        Byte* d = block + size_t(r) * row_bytes;
        std::memcpy(d, src + (size_t(r) * size_t(src_pitch) + size_t(c_begin)) * eb,
                    size_t(width) * eb);
        if (width < c0) std::memset(d + size_t(width) * eb, 0, size_t(c0 - width) * eb);
      }
    }
    std::memset(block + size_t(rows) * row_bytes, 0, size_t(dst_rows_padded - rows) * row_bytes);
  }
}

void nz_to_nd(const void* src_v, int64_t rows, int64_t cols, int64_t src_rows_padded, DType t,
              void* dst_v, int64_t dst_pitch, int c0) {
  const int eb = dtype_bytes(t);
  if (c0 == 0) c0 = c0_elems(t);
  TL_ASSERT(src_rows_padded >= rows, "nz_to_nd: src_rows_padded {} < rows {}", src_rows_padded,
            rows);
  TL_ASSERT(dst_pitch >= cols, "nz_to_nd: dst_pitch {} < cols {}", dst_pitch, cols);
  auto* src = static_cast<const Byte*>(src_v);
  auto* dst = static_cast<Byte*>(dst_v);
  const int64_t blocks = (cols + c0 - 1) / c0;
  const size_t row_bytes = size_t(c0) * eb;
  for (int64_t cb = 0; cb < blocks; ++cb) {
    const int64_t c_begin = cb * c0;
    const int64_t width = cols - c_begin < c0 ? cols - c_begin : c0;
    const Byte* block = src + size_t(cb) * size_t(src_rows_padded) * row_bytes;
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(dst + (size_t(r) * size_t(dst_pitch) + size_t(c_begin)) * eb,
                  block + size_t(r) * row_bytes, size_t(width) * eb);
  }
}

void l0c_to_nd(const void* src, int64_t m, int64_t n, int64_t src_rows_padded, DType t, void* dst,
               int64_t dst_pitch) {
  TL_ASSERT(dtype_bytes(t) == 4, "l0c_to_nd: L0C holds fp32/int32, not {}", dtype_name(t));
  nz_to_nd(src, m, n, src_rows_padded, t, dst, dst_pitch, kFractalRows);
}

void nz_to_zz(const void* src_v, int64_t src_rows_padded, int64_t m, int64_t k, DType t,
              bool transpose, void* dst_v) {
  const int eb = dtype_bytes(t);
  const int c0 = c0_elems(t);
  const int64_t mp = align_up(m, kFractalRows), kp = align_up(k, c0);
  auto* src = static_cast<const Byte*>(src_v);
  auto* dst = static_cast<Byte*>(dst_v);
  if (!transpose) {
    TL_ASSERT(src_rows_padded >= mp, "nz_to_zz: src_rows_padded {} < align16(m) {}",
              src_rows_padded, mp);
    // Fractal (m1, k1) sits at column block k1, row block m1 of the source.
    const int64_t m1n = mp / kFractalRows, k1n = kp / c0;
    for (int64_t m1 = 0; m1 < m1n; ++m1)
      for (int64_t k1 = 0; k1 < k1n; ++k1)
        std::memcpy(dst + size_t(m1 * k1n + k1) * kFractalBytes,
                    src + size_t(nz_offset(m1 * kFractalRows, k1 * c0, src_rows_padded, c0)) * eb,
                    kFractalBytes);
    return;
  }
  TL_ASSERT(src_rows_padded >= align_up(k, kFractalRows),
            "nz_to_zz: transposed source needs {} rows, has {}", align_up(k, kFractalRows),
            src_rows_padded);
  if (c0 == kFractalRows) {
    // 16-bit: A's fractal (m1, k1) is the transpose of source fractal (row block k1, column
    // block m1); the source's column-block-major order is A's row-block-major order.
    for (int64_t m1 = 0; m1 < mp / kFractalRows; ++m1)
      for (int64_t k1 = 0; k1 < kp / kFractalRows; ++k1)
        transpose16(
            src + size_t(nz_offset(k1 * kFractalRows, m1 * kFractalRows, src_rows_padded, c0)) * eb,
            dst + size_t(zz_offset(m1 * kFractalRows, k1 * kFractalRows, kp, c0)) * eb, eb);
    return;
  }
  // Other widths: element by element; padding (outside m x k) is zero-filled.
  for (int64_t i = 0; i < mp; ++i)
    for (int64_t j = 0; j < kp; ++j) {
      Byte* d = dst + size_t(zz_offset(i, j, kp, c0)) * eb;
      if (i < m && j < k)
        copy_elem(d, src + size_t(nz_offset(j, i, src_rows_padded, c0)) * eb, eb);
      else
        std::memset(d, 0, size_t(eb));
    }
}

void nz_to_zn(const void* src_v, int64_t src_rows_padded, int64_t k, int64_t n, DType t,
              bool transpose, void* dst_v) {
  const int eb = dtype_bytes(t);
  const int c0 = c0_elems(t);
  const int64_t kp = align_up(k, c0), np = align_up(n, kFractalRows);
  auto* src = static_cast<const Byte*>(src_v);
  auto* dst = static_cast<Byte*>(dst_v);
  if (!transpose) {
    TL_ASSERT(src_rows_padded >= np, "nz_to_zn: src_rows_padded {} < align16(n) {}",
              src_rows_padded, np);
    // ZN of B == NZ of B^T with np-row column blocks: copy each column block's first np rows.
    const size_t block_bytes = size_t(np) * size_t(c0) * eb;
    for (int64_t k1 = 0; k1 < kp / c0; ++k1)
      std::memcpy(dst + size_t(k1) * block_bytes,
                  src + size_t(k1) * size_t(src_rows_padded) * size_t(c0) * eb, block_bytes);
    return;
  }
  TL_ASSERT(src_rows_padded >= align_up(k, kFractalRows),
            "nz_to_zn: transposed source needs {} rows, has {}", align_up(k, kFractalRows),
            src_rows_padded);
  if (c0 == kFractalRows) {
    // 16-bit: B's fractal (k1, n1) (stored as a row-major 16(n) x 16(k) block) is the transpose
    // of source fractal (row block k1, column block n1).
    for (int64_t k1 = 0; k1 < kp / kFractalRows; ++k1)
      for (int64_t n1 = 0; n1 < np / kFractalRows; ++n1)
        transpose16(
            src + size_t(nz_offset(k1 * kFractalRows, n1 * kFractalRows, src_rows_padded, c0)) * eb,
            dst + size_t(zn_offset(k1 * kFractalRows, n1 * kFractalRows, np, c0)) * eb, eb);
    return;
  }
  // Other widths: element by element; padding (outside k x n) is zero-filled.
  for (int64_t kk = 0; kk < kp; ++kk)
    for (int64_t nn = 0; nn < np; ++nn) {
      Byte* d = dst + size_t(zn_offset(kk, nn, np, c0)) * eb;
      if (kk < k && nn < n)
        copy_elem(d, src + size_t(nz_offset(kk, nn, src_rows_padded, c0)) * eb, eb);
      else
        std::memset(d, 0, size_t(eb));
    }
}

}  // namespace tl::npu
