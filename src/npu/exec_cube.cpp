// Semantics of the cube ops on the virtual NPU.
//
// T.mma reads A from L0A (ZZ fractals) and B from L0B (ZN fractals), multiplies in fp32
// (int32 for int8) and writes or accumulates C in L0C (NZ, 16x16 fractals) in the order
// tl/npu/cube_math.h defines. fp16/bf16 products are exact in fp32, so only the accumulation order
// can differ from hardware.
// T.gemm_v0 is what TileLang-Ascend's gemm_v0 template does: LoadData A and B from L1 into
// L0A and L0B (both at offset 0, overwriting whatever the kernel kept there), then Mmad.
// The stale-data checker's rules (stale.h) are here too: an output element of the cube is
// invalid when its row of A or its column of B holds an invalid element (or, accumulating,
// when it was); LoadData moves the shadows into L0A/L0B as it moves the bytes.
#include <algorithm>
#include <cstring>
#include <limits>

#include "exec.h"
#include "stale.h"
#include "tl/npu/cube_math.h"
#include "tl/npu/layout.h"
#include "tl/ops.h"
#include "values.h"

#include <fmt/ranges.h>

namespace tl::npu {

namespace {

thread_local std::vector<float> g_a, g_bt, g_c;
thread_local PackedFloats g_ap, g_bp;  // 64-byte aligned: the kernel's B vectors (cube_math.h)

/// Dense row-major [rows, cols] fp32 copy of a ZZ matrix whose padded width is cols_padded.
void unpack_zz(const uint8_t* base, int64_t rows, int64_t cols, int64_t cols_padded, DType t,
               float* out) {
  int c0 = c0_elems(t), es = dtype_bytes(t);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; c += c0)
      convert(t, base + zz_offset(r, c, cols_padded, c0) * es, DType::Float32, out + r * cols + c,
              std::min<int64_t>(c0, cols - c));
}
/// Dense row-major B^T [n, k] fp32 copy of a ZN matrix B [k, n] whose padded width is n_padded.
void unpack_zn_t(const uint8_t* base, int64_t k, int64_t n, int64_t n_padded, DType t, float* out) {
  int c0 = c0_elems(t), es = dtype_bytes(t);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < k; i += c0)
      convert(t, base + zn_offset(i, j, n_padded, c0) * es, DType::Float32, out + j * k + i,
              std::min<int64_t>(c0, k - i));
}

/// Moves the L0C region C to or from the dense row-major fp32 tile g_c, in the contiguous
/// runs of the NZ layout (16 elements of a fractal row).
void l0c_transfer(Core& c, const TileRef& C, int64_t M, int64_t N, bool to_dense) {
  size_t nd = C.extent.size();
  int64_t lead = 0;
  for (size_t d = 0; d + 2 < nd; ++d) {
    if (C.extent[d] != 1) c.fail(fmt::format("cube: 'C' ({}) must be a 2-D tile", C.buffer->name));
    lead = lead * C.shape[d] + C.start[d];
  }
  int64_t R = nd >= 2 ? C.shape[nd - 2] : 1, Cc = C.shape[nd - 1];
  int64_t rp = align_up(R, 16), mat = rp * align_up(Cc, 16);
  int64_t r0 = nd >= 2 ? C.start[nd - 2] : 0, c0 = C.start[nd - 1];
  int64_t es = dtype_bytes(C.dtype);
  bool f32 = C.dtype == DType::Float32;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N;) {
      int64_t col = c0 + j, run = std::min<int64_t>(16 - col % 16, N - j);
      uint8_t* p = C.base + (lead * mat + l0c_offset(r0 + i, col, rp)) * es;
      float* q = g_c.data() + i * N + j;
      if (f32) {
        if (to_dense)
          std::memcpy(q, p, run * 4);
        else
          std::memcpy(p, q, run * 4);
      } else if (to_dense) {
        convert(C.dtype, p, DType::Float32, q, run);
      } else {
        convert(DType::Float32, q, C.dtype, p, run);
      }
      j += run;
    }
}

/// The operands of one Mmad for the fp32 kernel: dense (g_a, g_bt, the plain path and the
/// other dtypes) or packed (g_ap, g_bp, the 16-bit fast path).
struct Operands {
  bool packed = false;
  int64_t kp = 0;  // align16(K): the packed formats' fractal row and panel lengths / 16
  void run(int64_t M, int64_t N, int64_t K, CubeOut out, bool init) const {
    if (packed)
      cube_mmad_packed(CubeA{g_ap.data(), kp * 16}, CubeB{g_bp.data(), kp * 16}, M, N, K, out,
                       init);
    else
      cube_mmad_f32(g_a.data(), K, g_bt.data(), K, M, N, K, out, init, plain_paths());
  }
};

/// C (L0C region) = [C +] A x B in the cube's defined order (tl/npu/cube_math.h).
void accumulate(Core& c, const TileRef& C, int64_t M, int64_t N, int64_t K, bool init,
                const Operands& ops) {
  if (C.rows() != M || C.cols() != N)
    c.fail(fmt::format("cube: 'C' ({}) is [{} x {}] but A x B is [{} x {}]", C.buffer->name,
                       C.rows(), C.cols(), M, N));
  // An fp32 L0C tile starting on a fractal column is, per 16-column block, a row-major
  // [rows, 16] matrix (NZ with 16 x 16 fractals), so the product accumulates straight into
  // L0C memory; any other tile goes through a dense fp32 copy.
  size_t nd = C.extent.size();
  bool two_d = true;
  for (size_t d = 0; d + 2 < nd; ++d) two_d &= C.extent[d] == 1;
  if (C.dtype == DType::Float32 && two_d && nd >= 2 && C.start[nd - 1] % 16 == 0) {
    int64_t lead = 0;
    for (size_t d = 0; d + 2 < nd; ++d) lead = lead * C.shape[d] + C.start[d];
    int64_t rp = align_up(C.shape[nd - 2], 16), mat = rp * align_up(C.shape[nd - 1], 16);
    float* base = reinterpret_cast<float*>(C.base) + lead * mat +
                  l0c_offset(C.start[nd - 2], C.start[nd - 1], rp);
    ops.run(M, N, K, CubeOut{base, 16, rp * 16}, init);
    return;
  }
  g_c.assign(M * N, 0.0f);
  if (!init) l0c_transfer(c, C, M, N, true);
  ops.run(M, N, K, CubeOut{g_c.data(), N, 16}, init);
  l0c_transfer(c, C, M, N, false);
}

/// The integer cube path: int8 x int8 -> int32, exact, saturating at the int32 range when an
/// accumulation overflows (Mmad: integer results saturate; the sum of one instruction is
/// formed exactly, then clamped).
void accumulate_int(Core& c, const TileRef& C, const std::vector<int64_t>& A,
                    const std::vector<int64_t>& BT, int64_t M, int64_t N, int64_t K, bool init) {
  std::vector<int64_t> idx;
  int64_t es = dtype_bytes(C.dtype);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      idx = C.start;
      idx[idx.size() - 2] += i;
      idx.back() += j;
      uint8_t* p = C.base + layout_offset(C, idx) * es;
      int64_t acc = init ? 0 : static_cast<int64_t>(load_value(C.dtype, p));
      for (int64_t k = 0; k < K; ++k) acc += A[i * K + k] * BT[j * K + k];
      acc = std::clamp<int64_t>(acc, std::numeric_limits<int32_t>::min(),
                                std::numeric_limits<int32_t>::max());
      store_value(C.dtype, p, static_cast<double>(acc));
    }
  (void)c;
}

bool init_of(const TileOpNode& n, Core& c) {
  const TileArg* a = op_operand(n, "init");
  return a && c.eval_int(a->scalar) != 0;
}

/// Cube operands are matrices: rank >= 2 with extent 1 in every leading dimension (what the
/// verifier's gemm-shape rule accepts). The element loops index the last two dimensions, so a
/// rank-1 region (or leading extents > 1) would index outside the region, and the buffer.
void require_matrix(Core& c, const TileOpNode& n, const TileRef& t, const char* name) {
  size_t nd = t.extent.size();
  bool ok = nd >= 2;
  for (size_t d = 0; ok && d + 2 < nd; ++d) ok = t.extent[d] == 1;
  if (!ok)
    c.fail(fmt::format(
        "T.{}: operand '{}' ({}) must be a 2-D tile (leading extents 1), got extents [{}]",
        n.op->name, name, t.buffer->name, fmt::join(t.extent, ", ")));
}

/// out[k] = element k of a line of n elements of es bytes at base + (line + off[k]) * es.
template <typename E>
void gather_line(const uint8_t* base, int64_t line, const int64_t* off, int64_t n, uint8_t* out) {
  const E* s = reinterpret_cast<const E*>(base) + line;
  E* d = reinterpret_cast<E*>(out);
  for (int64_t k = 0; k < n; ++k) d[k] = s[off[k]];
}

/// Region element (i, j) of a matrix operand into out[i * ld + j] (a_side) or out[j * ld + i]
/// (the transpose, for B^T), as fp32. The L0A (ZZ) and L0B (ZN) layouts are separable: the
/// storage offset of (i, j) is a row part plus a column part (zz_offset, zn_offset;
/// include/tl/npu/layout.h), so both parts are computed once per operand (R + C calls of
/// storage_offset, where a call per c0-element run cost 150 M of gemm_dev's 819 M
/// instructions) and each output line is a typed gather and one conversion. The values are
/// the same (every cube dtype widens to fp32 exactly, element by element), so the products are
/// bit-identical (TL_NPU_PLAIN_PATHS=1 compares them with gather_plain).
void gather_matrix(const TileRef& t, bool by_rows, int64_t ld, float* out) {
  const size_t nd = t.extent.size();
  const int64_t R = t.rows(), C = t.cols(), es = dtype_bytes(t.dtype);
  TL_ASSERT(es == 1 || es == 2 || es == 4, "T.mma: no cube dtype has {}-byte elements", es);
  if (R <= 0 || C <= 0) return;
  thread_local std::vector<int64_t> row_off, col_off;
  thread_local std::vector<uint8_t> stage;
  row_off.resize(R);
  col_off.resize(C);
  int64_t idx[8], run;
  for (size_t d = 0; d < nd; ++d) idx[d] = t.start[d];
  const int64_t origin = storage_offset(t, idx, &run);
  offset_parts(t, idx, false, R, row_off.data());  // row parts, with the first column's part
  for (int64_t i = 0; i < R; ++i) row_off[i] += origin;
  offset_parts(t, idx, true, C, col_off.data());  // column parts, relative to the first column
  const int64_t lines = by_rows ? R : C, n = by_rows ? C : R;
  const std::vector<int64_t>& line_off = by_rows ? row_off : col_off;
  const std::vector<int64_t>& elem_off = by_rows ? col_off : row_off;
  stage.resize(static_cast<size_t>(n * es));
  // Along a line, ZZ (a row of L0A) and ZN (a column of L0B) keep c0 elements (32 bytes)
  // together: when every run of c0 from the line's start is contiguous, a line is copied
  // 32 bytes at a time instead of element by element.
  const int64_t c0 = 32 / es;
  bool runs = true;
  for (int64_t k = 0; k < n && runs; ++k) runs = elem_off[k] == elem_off[k - k % c0] + k % c0;
  for (int64_t l = 0; l < lines; ++l) {
    if (runs) {
      const uint8_t* src = t.base + line_off[l] * es;
      int64_t k = 0;
      for (; k + c0 <= n; k += c0) std::memcpy(stage.data() + k * es, src + elem_off[k] * es, 32);
      if (k < n) std::memcpy(stage.data() + k * es, src + elem_off[k] * es, (n - k) * es);
    } else if (es == 1)
      gather_line<uint8_t>(t.base, line_off[l], elem_off.data(), n, stage.data());
    else if (es == 2)
      gather_line<uint16_t>(t.base, line_off[l], elem_off.data(), n, stage.data());
    else
      gather_line<uint32_t>(t.base, line_off[l], elem_off.data(), n, stage.data());
    convert(t.dtype, stage.data(), DType::Float32, out + l * ld, n);
  }
}

/// The plain path: each element through load_value and layout_offset (kept for the
/// bit-for-bit comparison of TL_NPU_PLAIN_PATHS=1, tests/npu/fast_paths_test.cpp).
void gather_plain(const TileRef& A, const TileRef& B, int64_t M, int64_t N, int64_t K) {
  std::vector<int64_t> idx;
  const int64_t aes = dtype_bytes(A.dtype), bes = dtype_bytes(B.dtype);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      idx = A.start;
      idx[idx.size() - 2] += i;
      idx.back() += k;
      g_a[i * K + k] =
          static_cast<float>(load_value(A.dtype, A.base + layout_offset(A, idx) * aes));
    }
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) {
      idx = B.start;
      idx[idx.size() - 2] += k;
      idx.back() += j;
      g_bt[j * K + k] =
          static_cast<float>(load_value(B.dtype, B.base + layout_offset(B, idx) * bes));
    }
}

/// At least n floats, never shrinking: Mmads of alternating shapes (FlashAttention's Q K^T and
/// P V) would otherwise zero-fill the difference on every call. The packers write what they use.
void grow(PackedFloats& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
}

bool is_16bit_float(DType t) {
  return t == DType::Float16 || t == DType::BFloat16;
}

/// A 2-D region of a 16-bit L0A/L0B operand whose first element starts a fractal (row and
/// column multiples of 16): its fractals are whole fractals of the buffer, which keeps its
/// padding up to multiples of 16, so the packers may read them whole.
bool on_fractals(const TileRef& t) {
  const size_t nd = t.extent.size();
  return nd >= 2 && t.start[nd - 2] % 16 == 0 && t.start[nd - 1] % 16 == 0;
}

/// Dense operands from L0A/L0B regions.
void mma(const TileOpNode& n, Core& c) {
  TileRef A = c.operand(n, "A"), B = c.operand(n, "B"), C = c.operand(n, "C");
  require_matrix(c, n, A, "A");
  require_matrix(c, n, B, "B");
  require_matrix(c, n, C, "C");
  int64_t M = A.rows(), K = A.cols(), N = B.cols();
  if (B.rows() != K)
    c.fail(fmt::format("T.mma: A ({}) is [{} x {}] but B ({}) is [{} x {}]; K must agree",
                       A.buffer->name, M, K, B.buffer->name, B.rows(), N));
  if (A.scope != MemScope::L0A || B.scope != MemScope::L0B || C.scope != MemScope::L0C)
    c.fail("T.mma takes A in L0A, B in L0B and C in L0C");
  if (!plain_paths() && A.dtype == B.dtype && is_16bit_float(A.dtype) && on_fractals(A) &&
      on_fractals(B)) {
    // The 16-bit fast path: both operands packed straight from their fractals.
    const size_t na = A.shape.size(), nb = B.shape.size();
    int64_t run;
    const auto* a =
        reinterpret_cast<const uint16_t*>(A.base) + storage_offset(A, A.start.data(), &run);
    const auto* b =
        reinterpret_cast<const uint16_t*>(B.base) + storage_offset(B, B.start.data(), &run);
    grow(g_ap, cube_packed_a_size(M, K));
    grow(g_bp, cube_packed_b_size(K, N));
    const bool bf16 = A.dtype == DType::BFloat16;
    cube_pack_a_zz16(a, align_up(A.shape[na - 1], 16) * 16, M, K, bf16, g_ap.data());
    cube_pack_b_zn16(b, align_up(B.shape[nb - 1], 16) * 16, K, N, bf16, g_bp.data());
    accumulate(c, C, M, N, K, init_of(n, c), Operands{true, align_up(K, 16)});
    return;
  }
  g_a.resize(M * K);
  g_bt.resize(N * K);
  if (plain_paths()) {
    gather_plain(A, B, M, N, K);
  } else {
    gather_matrix(A, true, K, g_a.data());
    gather_matrix(B, false, K, g_bt.data());
  }
  if (A.dtype == DType::Int8) {
    // int8 values are exact in fp32; the integer path sums them exactly.
    std::vector<int64_t> ia(g_a.begin(), g_a.end()), ibt(g_bt.begin(), g_bt.end());
    accumulate_int(c, C, ia, ibt, M, N, K, init_of(n, c));
  } else {
    accumulate(c, C, M, N, K, init_of(n, c), Operands{});
  }
}

/// What load_to_l0 moves: the data, or (t a shadow) the shadow into the L0 memory's shadow, or
/// (t an all-valid shadow) nothing but valid bytes over what the load writes.
enum class Load { Data, Shadow, ValidShadow };

/// LoadData of an L1 operand into L0 memory at offset 0; returns the L0 pointer.
uint8_t* load_to_l0(Core& c, const TileRef& t, MemScope l0, int64_t rows, int64_t cols,
                    bool transpose, const char* name, Load what = Load::Data) {
  const bool shadow = what != Load::Data;
  size_t nd = t.extent.size();
  int c0 = c0_elems(t.dtype);
  int64_t r0 = nd >= 2 ? t.start[nd - 2] : 0, col0 = t.start[nd - 1];
  if (r0 % 16 != 0 || col0 % c0 != 0)
    c.fail(fmt::format(
        "T.gemm_v0: operand '{}' ({}) starts at ({}, {}), not on a fractal boundary (16 x {})",
        name, t.buffer->name, r0, col0, c0));
  for (size_t d = 0; d + 2 < nd; ++d)
    if (t.extent[d] != 1) c.fail(fmt::format("T.gemm_v0: operand '{}' must be a 2-D tile", name));
  int64_t R = nd >= 2 ? t.shape[nd - 2] : 1, Cc = t.shape[nd - 1];
  int64_t rp = align_up(R, 16);
  int64_t lead = 0;
  for (size_t d = 0; d + 2 < nd; ++d) lead = lead * t.shape[d] + t.start[d];
  const uint8_t* src =
      t.base + (lead * rp * align_up(Cc, c0) + nz_offset(r0, col0, rp, c0)) * dtype_bytes(t.dtype);
  std::span<uint8_t> mem = c.mem[static_cast<size_t>(l0)];
  if (shadow) mem = c.shadow()->mem[static_cast<size_t>(l0)];
  // rows x cols is the operand as stored in L1 (before any transpose).
  int64_t need =
      (l0 == MemScope::L0A
           ? align_up(transpose ? cols : rows, 16) * align_up(transpose ? rows : cols, c0)
           : align_up(transpose ? rows : cols, c0) * align_up(transpose ? cols : rows, 16)) *
      dtype_bytes(t.dtype);
  if (need > static_cast<int64_t>(mem.size()))
    c.fail(fmt::format("T.gemm_v0: operand '{}' needs {} bytes of {}, capacity {}", name, need,
                       scope_name(l0), mem.size()));
  if (what == Load::ValidShadow) {
    std::memset(mem.data(), kValid, static_cast<size_t>(need));
    return mem.data();
  }
  if (l0 == MemScope::L0A) {
    // A [M, K]: stored as A (no transpose) or as A^T [K, M] (transpose_A).
    int64_t M = transpose ? cols : rows, K = transpose ? rows : cols;
    nz_to_zz(src, rp, M, K, t.dtype, transpose, mem.data());
  } else {
    // B [K, N]: stored as B [K, N] (LoadData transposes into ZN) or as B^T [N, K] (transpose_B).
    int64_t K = transpose ? cols : rows, N = transpose ? rows : cols;
    nz_to_zn(src, rp, K, N, t.dtype, !transpose, mem.data());
  }
  return mem.data();
}

void gemm_v0(const TileOpNode& n, Core& c) {
  TileRef A = c.operand(n, "A"), B = c.operand(n, "B"), C = c.operand(n, "C");
  if (A.scope != MemScope::L1 || B.scope != MemScope::L1 || C.scope != MemScope::L0C)
    c.fail("T.gemm_v0 takes A and B in L1 and C in L0C");
  require_matrix(c, n, A, "A");
  require_matrix(c, n, B, "B");
  require_matrix(c, n, C, "C");
  bool ta = n.attr_bool("transpose_A"), tb = n.attr_bool("transpose_B");
  int64_t M = ta ? A.cols() : A.rows(), K = ta ? A.rows() : A.cols();
  int64_t KB = tb ? B.cols() : B.rows(), N = tb ? B.rows() : B.cols();
  if (K != KB)
    c.fail(fmt::format("T.gemm_v0: K of A ({}) is {} but K of B ({}) is {}", A.buffer->name, K,
                       B.buffer->name, KB));
  if (A.dtype != B.dtype)
    c.fail(fmt::format("T.gemm_v0: A is {} but B is {}", dtype_name(A.dtype), dtype_name(B.dtype)));
  const uint8_t* l0a = load_to_l0(c, A, MemScope::L0A, A.rows(), A.cols(), ta, "A");
  const uint8_t* l0b = load_to_l0(c, B, MemScope::L0B, B.rows(), B.cols(), tb, "B");
  int c0 = c0_elems(A.dtype);
  int64_t kp = align_up(K, c0), np = align_up(N, 16);
  if (!plain_paths() && is_16bit_float(A.dtype)) {
    // L0A holds ZZ of A [M, kp] and L0B ZN of B [kp, np], both at offset 0 and fully written.
    grow(g_ap, cube_packed_a_size(M, K));
    grow(g_bp, cube_packed_b_size(K, N));
    const bool bf16 = A.dtype == DType::BFloat16;
    cube_pack_a_zz16(reinterpret_cast<const uint16_t*>(l0a), kp * 16, M, K, bf16, g_ap.data());
    cube_pack_b_zn16(reinterpret_cast<const uint16_t*>(l0b), np * 16, K, N, bf16, g_bp.data());
    accumulate(c, C, M, N, K, init_of(n, c), Operands{true, align_up(K, 16)});
    return;
  }
  g_a.resize(M * K);
  g_bt.resize(N * K);
  unpack_zz(l0a, M, K, kp, A.dtype, g_a.data());
  unpack_zn_t(l0b, K, N, np, B.dtype, g_bt.data());
  if (A.dtype == DType::Int8) {
    std::vector<int64_t> ia(g_a.begin(), g_a.end()), ibt(g_bt.begin(), g_bt.end());
    accumulate_int(c, C, ia, ibt, M, N, K, init_of(n, c));
  } else {
    accumulate(c, C, M, N, K, init_of(n, c), Operands{});
  }
}

/// InitConstValue: every element of the tile's storage (fractal padding included) = value.
void init_const(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst");
  const double v = c.eval_float(op_operand(n, "value")->scalar);
  const int64_t es = dtype_bytes(d.dtype), bytes = c.program.buffer(d.buffer).bytes;
  if (bytes < es) return;
  store_value(d.dtype, d.base, v);
  for (int64_t at = es; at + es <= bytes; at += es) std::memcpy(d.base + at, d.base, es);
}

/// C [M, N] (L0C) from the first invalid element of each row of A (rows) and each column of B
/// (cols), over K: C[i, j] is invalid when row i or column j is, or when the op accumulates
/// (init false) into an invalid C[i, j]; an invalid `init` makes all of C invalid.
void cube_stale(const TileOpNode& n, Core& c, const TileRef& C, const std::vector<uint8_t>& rows,
                const std::vector<uint8_t>& cols) {
  const uint8_t it = scalar_operand_taint(n, c, "init");
  const bool init = init_of(n, c);
  const auto M = static_cast<int64_t>(rows.size()), N = static_cast<int64_t>(cols.size());
  if (C.rows() != M || C.cols() != N) return;  // the semantics report it
  TileRef sc = shadow_of(c, C);
  std::vector<uint8_t> o;
  if (init)
    o.assign(M * N, kValid);
  else
    region_origins(sc, o);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      o[i * N + j] = first_of(first_of(it, o[i * N + j]), first_of(rows[i], cols[j]));
  region_store(sc, o);
}

/// With A and B all valid (the common case, found by a scan that stops at the first invalid
/// byte) C keeps its own validity when accumulating and becomes valid when initialised, unless
/// `init` itself is invalid.
bool cube_stale_all_valid(const TileOpNode& n, Core& c, const TileRef& C, uint8_t a, uint8_t b) {
  if (a || b) return false;
  const uint8_t it = scalar_operand_taint(n, c, "init");
  if (init_of(n, c) || it) region_fill(shadow_of(c, C), it);
  return true;
}

/// The first invalid element of each row (by_rows) or each column of an R x C origin grid.
std::vector<uint8_t> lines(const std::vector<uint8_t>& o, int64_t R, int64_t C, bool by_rows) {
  std::vector<uint8_t> out(by_rows ? R : C, kValid);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t k = 0; k < C; ++k) {
      uint8_t& x = out[by_rows ? r : k];
      x = first_of(x, o[r * C + k]);
    }
  return out;
}

void mma_stale(const TileOpNode& n, Core& c) {
  TileRef A = c.operand(n, "A"), B = c.operand(n, "B"), C = c.operand(n, "C");
  require_matrix(c, n, A, "A");
  require_matrix(c, n, B, "B");
  require_matrix(c, n, C, "C");
  if (B.rows() != A.cols() || C.rows() != A.rows() || C.cols() != B.cols())
    return;  // the semantics report it
  TileRef sa = shadow_of(c, A), sb = shadow_of(c, B);
  if (cube_stale_all_valid(n, c, C, region_origin(sa), region_origin(sb))) return;
  std::vector<uint8_t> oa, ob;
  region_origins(sa, oa);
  region_origins(sb, ob);
  cube_stale(n, c, C, lines(oa, A.rows(), A.cols(), true), lines(ob, B.rows(), B.cols(), false));
}

void gemm_v0_stale(const TileOpNode& n, Core& c) {
  TileRef A = c.operand(n, "A"), B = c.operand(n, "B"), C = c.operand(n, "C");
  if (A.scope != MemScope::L1 || B.scope != MemScope::L1 || C.scope != MemScope::L0C) return;
  require_matrix(c, n, A, "A");
  require_matrix(c, n, B, "B");
  require_matrix(c, n, C, "C");
  const bool ta = n.attr_bool("transpose_A"), tb = n.attr_bool("transpose_B");
  if ((ta ? A.rows() : A.cols()) != (tb ? B.cols() : B.rows()) || A.dtype != B.dtype) return;
  if (C.rows() != (ta ? A.cols() : A.rows()) || C.cols() != (tb ? B.rows() : B.cols())) return;
  TileRef sa = shadow_of(c, A), sb = shadow_of(c, B);
  const uint8_t a = region_origin(sa), b = region_origin(sb);
  // LoadData into L0A/L0B moves the shadows as it moves the bytes (a valid operand: its L0
  // bytes are valid).
  load_to_l0(c, sa, MemScope::L0A, A.rows(), A.cols(), ta, "A",
             a ? Load::Shadow : Load::ValidShadow);
  load_to_l0(c, sb, MemScope::L0B, B.rows(), B.cols(), tb, "B",
             b ? Load::Shadow : Load::ValidShadow);
  if (cube_stale_all_valid(n, c, C, a, b)) return;
  // Rows of A [M, K] are rows of the region, or its columns when it holds A^T; columns of
  // B [K, N] are columns of the region, or its rows when it holds B^T.
  std::vector<uint8_t> oa, ob;
  region_origins(sa, oa);
  region_origins(sb, ob);
  cube_stale(n, c, C, lines(oa, A.rows(), A.cols(), !ta), lines(ob, B.rows(), B.cols(), tb));
}

/// Every byte init_const writes (the tile's storage, padding included) is as valid as `value`.
void init_const_stale(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst");
  const int64_t es = dtype_bytes(d.dtype), bytes = c.program.buffer(d.buffer).bytes;
  const uint8_t o = scalar_operand_taint(n, c, "value");
  if (bytes >= es) std::memset(shadow_of(c, d).base, o, static_cast<size_t>(bytes / es * es));
}

}  // namespace

std::vector<ExecEntry> cube_execs() {
  return {{&ops::mma(), mma}, {&ops::gemm_v0(), gemm_v0}, {&ops::init_const(), init_const}};
}
std::vector<StaleEntry> cube_stale_rules() {
  return {{&ops::mma(), mma_stale},
          {&ops::gemm_v0(), gemm_v0_stale},
          {&ops::init_const(), init_const_stale}};
}

}  // namespace tl::npu
