// Semantics of T.copy and T.atomic_add on the virtual NPU, for every legal path.
//
// Each memory has its storage layout: GM is strided ND, UB row-major ND, L1 and L0C NZ
// fractals, L0A ZZ, L0B ZN (layout.h). A copy maps region element (i, j) of the source to
// region element (i, j) of the destination through both layouts, so data moved with the
// wrong layout is visibly wrong, as on hardware:
//  - GM -> L1 converts ND to NZ (nd2nz, on by default); with nd2nz=False the bytes land in
//    L1 in ND order starting at the region's first fractal position.
//  - L1 -> L0A/L0B reorders fractals (LoadData); `transpose` loads the transpose.
//  - L0C -> GM/L1 is the fixpipe: NZ -> ND (or NZ), dtype conversion (RINT) and optional ReLU.
//  - GM <-> UB moves whole 32-byte blocks per row (DataCopy); rows of other lengths need the
//    padded form (pad=True: DataCopyPad), whose UB row tail up to 32 B gets pad_value.
// The stale-data checker's rules for these ops are here too: a copy's rule runs the same
// byte movers on the shadows (stale.h), so validity moves exactly as the bytes do.
#include <algorithm>
#include <bit>
#include <cmath>
#include <mutex>

#include "exec.h"
#include "move_runs.h"
#include "stale.h"
#include "tl/npu/cube_math.h"
#include "tl/npu/layout.h"
#include "tl/ops.h"
#include "tl/storage.h"
#include "values.h"

namespace tl::npu {
namespace {

bool nd_scope(MemScope s) {
  return s == MemScope::GM || s == MemScope::UB;
}

}  // namespace

/// Element offset of buffer element idx (absolute indices) in t's storage, and how many
/// elements from there along the last dimension are contiguous in storage.
int64_t storage_offset(const TileRef& t, const int64_t* idx, int64_t* run) {
  size_t n = t.shape.size();
  if (nd_scope(t.scope)) {
    int64_t off = 0;
    for (size_t d = 0; d < n; ++d) off += idx[d] * t.strides[d];
    *run = t.strides[n - 1] == 1 ? t.shape[n - 1] - idx[n - 1] : 1;
    return off;
  }
  int64_t R = n >= 2 ? t.shape[n - 2] : 1, C = t.shape[n - 1];
  int64_t r = n >= 2 ? idx[n - 2] : 0, c = idx[n - 1];
  int64_t lead = 0;
  for (size_t d = 0; d + 2 < n; ++d) lead = lead * t.shape[d] + idx[d];
  // c0 only where the layout has it (the L0C fractal is 16 x 16 whatever the dtype).
  const int c0 = t.scope == MemScope::L0C ? 16 : c0_elems(t.dtype);
  int64_t off = 0, mat = 0;
  switch (t.scope) {
    case MemScope::L1:
      mat = align_up(R, 16) * align_up(C, c0);
      off = nz_offset(r, c, align_up(R, 16), c0);
      *run = std::min<int64_t>(c0 - c % c0, C - c);
      break;
    case MemScope::L0C:
      mat = align_up(R, 16) * align_up(C, 16);
      off = l0c_offset(r, c, align_up(R, 16));
      *run = std::min<int64_t>(16 - c % 16, C - c);
      break;
    case MemScope::L0A:
      mat = align_up(R, 16) * align_up(C, c0);
      off = zz_offset(r, c, align_up(C, c0), c0);
      *run = std::min<int64_t>(c0 - c % c0, C - c);
      break;
    case MemScope::L0B:
      mat = align_up(R, c0) * align_up(C, 16);
      off = zn_offset(r, c, align_up(C, 16), c0);
      *run = 1;
      break;
    default:
      TL_ASSERT(false, "no storage layout for scope {}", scope_name(t.scope));
  }
  return lead * mat + off;
}

void offset_parts(const TileRef& t, const int64_t* base, bool col, int64_t n, int64_t* out) {
  const size_t nd = t.shape.size();
  TL_ASSERT(nd >= 2, "offset_parts: {} is not a matrix", t.buffer->name);
  const size_t dim = col ? nd - 1 : nd - 2;
  if (nd_scope(t.scope)) {
    for (int64_t i = 0; i < n; ++i) out[i] = i * t.strides[dim];
    return;
  }
  // Every fractal layout is (row part) + (column part) + (matrix part): storage_offset's
  // formulas (layout.h) split, with c0 and 16 powers of two, so shifts and masks.
  const int64_t R = t.shape[nd - 2], C = t.shape[nd - 1];
  const int64_t c0 = t.scope == MemScope::L0C ? 16 : kC0Bytes / dtype_bytes(t.dtype);
  const int sh = std::countr_zero(static_cast<uint64_t>(c0));
  const MemScope s = t.scope;
  auto part = [&](int64_t x) -> int64_t {
    if (s == MemScope::L1 || s == MemScope::L0C)  // NZ: (c / c0) * Rp * c0 + r * c0 + c % c0
      return col ? (x >> sh) * align_up(R, 16) * c0 + (x & (c0 - 1)) : x * c0;
    if (s == MemScope::L0A)  // ZZ: (r / 16) * Cp * 16 + (c / c0) * 16 * c0 + (r % 16) * c0 + c % c0
      return col ? (x >> sh) * 16 * c0 + (x & (c0 - 1))
                 : (x >> 4) * align_up(C, c0) * 16 + (x & 15) * c0;
    TL_ASSERT(s == MemScope::L0B, "no storage layout for scope {}", scope_name(s));
    // ZN: (k / c0) * Np * c0 + (n / 16) * 16 * c0 + (n % 16) * c0 + k % c0
    return col ? (x >> 4) * 16 * c0 + (x & 15) * c0
               : (x >> sh) * align_up(C, 16) * c0 + (x & (c0 - 1));
  };
  const int64_t p0 = part(base[dim]);
  for (int64_t i = 0; i < n; ++i) out[i] = part(base[dim] + i) - p0;
}

namespace {

int64_t storage_offset(const TileRef& t, const std::vector<int64_t>& idx, int64_t* run) {
  return storage_offset(t, idx.data(), run);
}

thread_local std::vector<float> g_run;

/// Copies region src to region dst element by element through both layouts, in runs that
/// are contiguous on both sides. Converts dtypes (RINT) and applies ReLU if asked.
/// `saturate`: the fixpipe's fp32 -> fp16 / bf16 conversion (F322F16 / F322BF16) in its default
/// saturation mode: a value past the format's largest finite one, infinities included, becomes
/// +-MAX, and NaN becomes 0 (asc-devkit "矩阵计算搬出相关接口边界值汇总", table 2, saturation
/// column; the F322F16 quantPre of Fixpipe has no INF_NAN mode on A2).
/// `shadow`: src and dst are shadows (stale.h): an element converted to another dtype is as
/// valid as its source element; `valid_src`: and every source byte is known valid (a GM
/// parameter without a shadow), so the destination bytes are set valid without reading.
void copy_regions(const TileRef& src, const TileRef& dst, bool relu, bool saturate = false,
                  bool shadow = false, bool valid_src = false) {
  int64_t rows = src.rows(), cols = src.cols();
  size_t ns = src.extent.size(), nd = dst.extent.size();
  std::vector<int64_t> si(ns), di(nd);
  int64_t ses = dtype_bytes(src.dtype), des = dtype_bytes(dst.dtype);
  bool same = src.dtype == dst.dtype && !relu;
  bool same_rows = dst.cols() == cols;
  for (int64_t r = 0; r < rows; ++r) {
    // Row r of the source region and the matching position of the destination region; when
    // both regions have rows of the same length the indices only advance along the row.
    int64_t flat = r * cols;
    bool fresh = true;
    for (int64_t c = 0; c < cols;) {
      if (fresh || !same_rows) {
        int64_t f = flat + c, rem = f;
        for (size_t d = ns; d-- > 0;) {
          si[d] = src.start[d] + rem % src.extent[d];
          rem /= src.extent[d];
        }
        rem = f;
        for (size_t d = nd; d-- > 0;) {
          di[d] = dst.start[d] + rem % dst.extent[d];
          rem /= dst.extent[d];
        }
        fresh = false;
      }
      int64_t srun, drun;
      int64_t so = storage_offset(src, si, &srun), dof = storage_offset(dst, di, &drun);
      int64_t dcol_left = dst.start[nd - 1] + dst.extent[nd - 1] - di[nd - 1];
      int64_t len = std::max<int64_t>(std::min({cols - c, srun, drun, dcol_left}), 1);
      const uint8_t* sp = src.base + so * ses;
      uint8_t* dp = dst.base + dof * des;
      if (valid_src) {
        std::memset(dp, kValid, len * des);
      } else if (same) {
        std::memcpy(dp, sp, len * ses);
      } else if (shadow) {
        for (int64_t k = 0; k < len; ++k)
          std::memset(dp + k * des, first_nonzero(sp + k * ses, ses), des);
      } else {
        g_run.resize(len);
        convert(src.dtype, sp, DType::Float32, g_run.data(), len);
        if (relu)
          for (auto& x : g_run) x = x > 0 ? x : (x != x ? x : 0.0f);
        if (saturate) {
          const float mx =
              dst.dtype == DType::Float16 ? 65504.0f : 3.38953139e38f;  // 0x7BFF, 0x7F7F
          for (auto& x : g_run) x = x != x ? 0.0f : std::clamp(x, -mx, mx);
        }
        convert(DType::Float32, g_run.data(), dst.dtype, dp, len);
      }
      c += len;
      si[ns - 1] += len;
      di[nd - 1] += len;
    }
  }
}

/// Zero-fills the fractal padding around an NZ region written into L1 by a GM -> L1 copy:
/// columns up to the next multiple of c0 and rows up to the next multiple of 16, within the
/// buffer's padded matrix ("columns that do not fill 32 B are zero-padded").
void zero_nz_padding(const TileRef& dst) {
  size_t n = dst.extent.size();
  if (n < 1) return;
  int c0 = c0_elems(dst.dtype);
  int64_t R = n >= 2 ? dst.shape[n - 2] : 1, C = dst.shape[n - 1];
  int64_t r0 = n >= 2 ? dst.start[n - 2] : 0, r1 = r0 + (n >= 2 ? dst.extent[n - 2] : 1);
  int64_t c0s = dst.start[n - 1], c1 = c0s + dst.extent[n - 1];
  int64_t rp = std::min(align_up(r1, 16), align_up(R, 16)),
          cp = std::min(align_up(c1, c0), align_up(C, c0));
  int64_t es = dtype_bytes(dst.dtype);
  int64_t lead = 1;
  for (size_t d = 0; d + 2 < n; ++d) lead *= dst.extent[d];
  int64_t mat = align_up(R, 16) * align_up(C, c0);
  for (int64_t l = 0; l < lead; ++l) {
    int64_t base_lead = 0, rem = l;
    std::vector<int64_t> li(n >= 2 ? n - 2 : 0);
    for (size_t d = li.size(); d-- > 0;) {
      li[d] = dst.start[d] + rem % dst.extent[d];
      rem /= dst.extent[d];
    }
    for (size_t d = 0; d < li.size(); ++d) base_lead = base_lead * dst.shape[d] + li[d];
    // Only the padding is visited (rows r1..rp, and columns c1..cp of rows r0..r1): the
    // region itself, which this loop used to test element by element, is left alone.
    for (int64_t r = r0; r < rp; ++r)
      for (int64_t c = r >= r1 ? c0s : std::max(c1, c0s); c < cp; ++c)
        std::memset(dst.base + (base_lead * mat + nz_offset(r, c, align_up(R, 16), c0)) * es, 0,
                    es);
  }
}

bool whole_2d_buffer(const TileRef& t) {
  return t.shape.size() == 2 && t.start[0] == 0 && t.start[1] == 0 && t.extent == t.shape;
}

/// One whole matrix of the buffer: the last two dimensions in full, extent 1 before them (a
/// stage `A_L1[s, :, :]` of a multi-buffered [S, rows, cols] buffer).
bool whole_matrix(const TileRef& t) {
  const size_t n = t.shape.size();
  if (n < 2) return false;
  for (size_t d = 0; d + 2 < n; ++d)
    if (t.extent[d] != 1) return false;
  return t.start[n - 2] == 0 && t.start[n - 1] == 0 && t.extent[n - 2] == t.shape[n - 2] &&
         t.extent[n - 1] == t.shape[n - 1];
}

/// The region's rows are evenly spaced in memory (row r at r * strides[n-2]): true when every
/// dimension before the last two has extent 1. A region [2, 16, C] of a [2, 32, C] tensor is
/// not: its row 16 is the first row of the second matrix, not row 16 of the first.
bool rows_evenly_spaced(const TileRef& t) {
  for (size_t d = 0; d + 2 < t.extent.size(); ++d)
    if (t.extent[d] != 1) return false;
  return true;
}

/// out[dof[c] + drow] = in[sof[c] + srow] for every column c of one row, es-byte elements.
template <typename E>
void gather_row(const uint8_t* src, uint8_t* dst, const int64_t* sof, const int64_t* dof,
                int64_t n) {
  const E* s = reinterpret_cast<const E*>(src);
  E* d = reinterpret_cast<E*>(dst);
  for (int64_t c = 0; c < n; ++c) d[dof[c]] = s[sof[c]];
}

/// The commonest LoadData, without offset tables: a 16-bit region of L1 starting on the fractal
/// grid, whole fractals only (rows and columns multiples of 16), into a full-width band of rows
/// of an L0A / L0B matrix (a whole matrix, or one slot of lower_cube_ops' two, which are the
/// halves of one [2R, C] buffer) starting on a fractal row: ZZ and ZN keep a fractal row's C / 16
/// fractals together, so the band is whole fractals from its first element on. L1 is NZ (fractal
/// (r1, c1) at c1 * Rp * 16 + r1 * 256 from the region's first element, Rp the buffer's padded
/// rows), L0A ZZ (fractal (r1, c1) at (r1 * C / 16 + c1) * 256, the same order inside) and L0B ZN
/// (the same place, transposed inside): each fractal is one 512-byte copy or one in-register
/// transpose. Moves exactly the region's elements, as the table-driven path below does
/// (tests/npu/fast_paths_test.cpp). False, before any byte moved, for any other copy. `transposed`:
/// the transposing load (dst (i, j) = src (j, i)), whose destination fractal (r1, c1) is source
/// fractal (c1, r1) transposed inside, so L0B's (ZN) is a plain copy and L0A's (ZZ) a transpose.
bool whole_fractals_load(const TileRef& src, const TileRef& dst, bool transposed = false) {
  const size_t ns = src.shape.size(), nd = dst.shape.size();
  const int64_t R = transposed ? src.cols() : src.rows(), C = transposed ? src.rows() : src.cols();
  if (R % 16 != 0 || C % 16 != 0 || src.start[ns - 2] % 16 != 0 || src.start[ns - 1] % 16 != 0 ||
      !rows_evenly_spaced(dst) || dst.start[nd - 1] != 0 || dst.shape[nd - 1] != C ||
      dst.extent[nd - 1] != C || dst.start[nd - 2] % 16 != 0 || dst.extent[nd - 2] != R)
    return false;
  int64_t run;
  const auto* s =
      reinterpret_cast<const uint16_t*>(src.base) + storage_offset(src, src.start.data(), &run);
  auto* d = reinterpret_cast<uint16_t*>(dst.base) + storage_offset(dst, dst.start.data(), &run);
  const int64_t rp = align_up(src.shape[ns - 2], 16), rb = R / 16, cb = C / 16;
  for (int64_t r1 = 0; r1 < rb; ++r1)
    for (int64_t c1 = 0; c1 < cb; ++c1) {
      const uint16_t* f = transposed ? s + r1 * rp * 16 + c1 * 256 : s + c1 * rp * 16 + r1 * 256;
      uint16_t* g = d + (r1 * cb + c1) * 256;
      if ((dst.scope == MemScope::L0A) != transposed)
        std::memcpy(g, f, 512);
      else
        transpose_fractal16(f, g);
    }
  return true;
}

/// LoadData L1 -> L0A/L0B of one dtype, batched: every fractal layout is separable, the
/// offset of (r, c) being row part + column part (NZ: r * c0 + (c / c0) * Rp * c0 + c % c0;
/// ZZ and ZN likewise), so the column parts of both sides are computed once per copy and each
/// row is a gather, instead of storage_offset on both sides per element (ZN stores a row's
/// elements c0 apart, so copy_regions moved one element per call there). Moves exactly the
/// bytes copy_regions moves (tests/npu/fast_paths_test.cpp compares them). False when the
/// copy is not such a load.
bool cube_load(const TileRef& src, const TileRef& dst) {
  if (src.scope != MemScope::L1 || (dst.scope != MemScope::L0A && dst.scope != MemScope::L0B))
    return false;
  const size_t ns = src.extent.size(), nd = dst.extent.size();
  if (ns < 2 || nd < 2 || !rows_evenly_spaced(src) || !rows_evenly_spaced(dst) ||
      src.dtype != dst.dtype || src.rows() != dst.rows() || src.cols() != dst.cols())
    return false;
  const int64_t R = src.rows(), C = src.cols(), es = dtype_bytes(src.dtype);
  if (R <= 0 || C <= 0) return true;
  if (es != 1 && es != 2 && es != 4) return false;  // before any byte moved
  if (es == 2 && whole_fractals_load(src, dst)) return true;
  thread_local std::vector<int64_t> scol, dcol, srow, drow;
  scol.resize(C);
  dcol.resize(C);
  int64_t si[8], di[8], run;
  for (size_t d = 0; d < ns; ++d) si[d] = src.start[d];
  for (size_t d = 0; d < nd; ++d) di[d] = dst.start[d];
  const int64_t s00 = storage_offset(src, si, &run), d00 = storage_offset(dst, di, &run);
  offset_parts(src, si, true, C, scol.data());
  offset_parts(dst, di, true, C, dcol.data());
  srow.resize(R);
  drow.resize(R);
  offset_parts(src, si, false, R, srow.data());
  offset_parts(dst, di, false, R, drow.data());
  // Runs of c0 elements (32 bytes) contiguous on both sides (L1 NZ -> L0A ZZ) move whole.
  const int64_t c0 = 32 / es;
  bool runs = true;
  for (int64_t c = 0; c < C && runs; ++c)
    runs = scol[c] == scol[c - c % c0] + c % c0 && dcol[c] == dcol[c - c % c0] + c % c0;
  int64_t r_from = 0;
  if (const Blocks kind = es == 2
                              ? block_kind(srow.data(), scol.data(), drow.data(), dcol.data(), R, C)
                              : Blocks::None;
      kind != Blocks::None) {
    // Whole 16 x 16 blocks as fractals; the rows and columns past them element by element.
    const int64_t Rf = R / 16 * 16, Cf = C / 16 * 16;
    move_blocks(kind, reinterpret_cast<const uint16_t*>(src.base) + s00,
                reinterpret_cast<uint16_t*>(dst.base) + d00, srow.data(), scol.data(), drow.data(),
                dcol.data(), R, C);
    if (Cf < C)
      for (int64_t r = 0; r < Rf; ++r)
        gather_row<uint16_t>(src.base + (s00 + srow[r]) * es, dst.base + (d00 + drow[r]) * es,
                             scol.data() + Cf, dcol.data() + Cf, C - Cf);
    r_from = Rf;
  }
  for (int64_t r = r_from; r < R; ++r) {
    const uint8_t* sp = src.base + (s00 + srow[r]) * es;
    uint8_t* dp = dst.base + (d00 + drow[r]) * es;
    if (runs) {
      int64_t c = 0;
      for (; c + c0 <= C; c += c0) std::memcpy(dp + dcol[c] * es, sp + scol[c] * es, 32);
      if (c < C) std::memcpy(dp + dcol[c] * es, sp + scol[c] * es, (C - c) * es);
      continue;
    }
    switch (es) {
      case 1:
        gather_row<uint8_t>(sp, dp, scol.data(), dcol.data(), C);
        break;
      case 2:
        gather_row<uint16_t>(sp, dp, scol.data(), dcol.data(), C);
        break;
      case 4:
        gather_row<uint32_t>(sp, dp, scol.data(), dcol.data(), C);
        break;
      default:
        return false;  // before any byte moved: rows are written only for es 1, 2, 4
    }
  }
  return true;
}

/// copy_regions for a copy with a fractal side (L1, L0A/L0B, L0C: the fixpipe's L0C -> GM/UB/L1
/// above all), batched: both layouts are separable (see cube_load), so the column parts are
/// computed once per copy and each row is one gather into a contiguous staging row, one
/// conversion of the whole row (the same element-wise convert, ReLU and saturation as
/// copy_regions applies run by run) and one scatter, instead of storage_offset on both sides
/// for every 16-element run. Writes exactly the bytes copy_regions writes
/// (tests/npu/fast_paths_test.cpp). False, before any byte moved, when the copy is not such a
/// copy.
bool fractal_rows(const TileRef& src, const TileRef& dst, bool relu, bool saturate) {
  auto fractal = [](MemScope s) { return !nd_scope(s); };
  if (!fractal(src.scope) && !fractal(dst.scope)) return false;
  const size_t ns = src.extent.size(), nd = dst.extent.size();
  if (ns < 2 || nd < 2 || ns > 8 || nd > 8 || !rows_evenly_spaced(src) ||
      !rows_evenly_spaced(dst) || src.rows() != dst.rows() || src.cols() != dst.cols())
    return false;
  const int64_t R = src.rows(), C = src.cols(), ses = dtype_bytes(src.dtype),
                des = dtype_bytes(dst.dtype);
  if ((ses != 1 && ses != 2 && ses != 4) || (des != 1 && des != 2 && des != 4)) return false;
  if (R <= 0 || C <= 0) return true;
  thread_local std::vector<int64_t> scol, dcol, srow, drow;
  thread_local std::vector<uint8_t> sbuf, dbuf;
  thread_local std::vector<float> f32;
  scol.resize(C);
  dcol.resize(C);
  int64_t si[8], di[8], run;
  for (size_t d = 0; d < ns; ++d) si[d] = src.start[d];
  for (size_t d = 0; d < nd; ++d) di[d] = dst.start[d];
  const int64_t s00 = storage_offset(src, si, &run), d00 = storage_offset(dst, di, &run);
  offset_parts(src, si, true, C, scol.data());
  offset_parts(dst, di, true, C, dcol.data());
  srow.resize(R);
  drow.resize(R);
  offset_parts(src, si, false, R, srow.data());
  offset_parts(dst, di, false, R, drow.data());
  bool s_dense = true, d_dense = true;
  for (int64_t c = 0; c < C; ++c) {
    s_dense &= scol[c] == c;
    d_dense &= dcol[c] == c;
  }
  const bool same = src.dtype == dst.dtype && !relu;
  // Fractal rows keep runs of 16 (L0C) or c0 elements contiguous: moved a run at a time.
  const int64_t sl = run_length(scol.data(), C), dl = run_length(dcol.data(), C);
  sbuf.resize(C * ses);
  dbuf.resize(C * des);
  for (int64_t r = 0; r < R; ++r) {
    const uint8_t* sp = src.base + (s00 + srow[r]) * ses;
    uint8_t* dp = dst.base + (d00 + drow[r]) * des;
    if (same && (s_dense || d_dense)) {  // one move, no staging row
      if (s_dense && d_dense)
        std::memmove(dp, sp, static_cast<size_t>(C * des));
      else if (d_dense)
        move_runs(ses, sp, dp, scol.data(), nullptr, C, sl);
      else
        move_runs(ses, sp, dp, nullptr, dcol.data(), C, dl);
      continue;
    }
    // The row, contiguous, in the source dtype.
    const uint8_t* row = sp;
    if (!s_dense) {
      move_runs(ses, sp, sbuf.data(), scol.data(), nullptr, C, sl);
      row = sbuf.data();
    }
    const uint8_t* out = row;
    if (!same) {
      f32.resize(C);
      convert(src.dtype, row, DType::Float32, f32.data(), C);
      if (relu || saturate)
        fixpipe_activate(f32.data(), C, relu, saturate,
                         dst.dtype == DType::Float16 ? 65504.0f : 3.38953139e38f);
      convert(DType::Float32, f32.data(), dst.dtype, dbuf.data(), C);
      out = dbuf.data();
    }
    if (d_dense) {
      std::memmove(dp, out, static_cast<size_t>(C * des));
    } else {
      move_runs(des, out, dp, nullptr, dcol.data(), C, dl);
    }
  }
  return true;
}

/// The transposing LoadData L1 -> L0A/L0B (dst (i, j) = src (j, i)), batched like cube_load:
/// with both layouts separable, the source offset of (j, i) is a row part over j plus a column
/// part over i, so destination row i is a gather over the source's row parts (computed once
/// per copy) from a base set by i. Moves exactly the elements the element-by-element loop of
/// copy_impl moves (tests/npu/fast_paths_test.cpp compares the bytes). False, before any byte
/// moved, when the copy is not such a load.
bool transpose_load(const TileRef& src, const TileRef& dst) {
  const size_t ns = src.extent.size(), nd = dst.extent.size();
  if (ns < 2 || nd < 2 || ns > 8 || nd > 8 || !rows_evenly_spaced(src) ||
      !rows_evenly_spaced(dst) || src.dtype != dst.dtype)
    return false;
  const int64_t R = dst.rows(), C = dst.cols(), es = dtype_bytes(src.dtype);
  if (es != 1 && es != 2 && es != 4) return false;
  if (R <= 0 || C <= 0) return true;
  if (es == 2 && (src.scope == MemScope::L1) &&
      (dst.scope == MemScope::L0A || dst.scope == MemScope::L0B) &&
      whole_fractals_load(src, dst, true))
    return true;
  thread_local std::vector<int64_t> srow, scol, drow, dcol;
  srow.resize(C);  // source row j's part, j < C (dst's column count)
  scol.resize(R);  // source column i's part, i < R
  drow.resize(R);
  dcol.resize(C);
  int64_t si[8], di[8], run;
  for (size_t d = 0; d < ns; ++d) si[d] = src.start[d];
  for (size_t d = 0; d < nd; ++d) di[d] = dst.start[d];
  const int64_t s00 = storage_offset(src, si, &run), d00 = storage_offset(dst, di, &run);
  offset_parts(src, si, false, C, srow.data());
  offset_parts(dst, di, true, C, dcol.data());
  offset_parts(src, si, true, R, scol.data());
  offset_parts(dst, di, false, R, drow.data());
  int64_t i_from = 0;
  // dst (i, j) = src (j, i): the source's offset over dst row i is scol[i], over column j srow[j].
  if (const Blocks kind = es == 2
                              ? block_kind(scol.data(), srow.data(), drow.data(), dcol.data(), R, C)
                              : Blocks::None;
      kind != Blocks::None) {
    const int64_t Rf = R / 16 * 16, Cf = C / 16 * 16;
    move_blocks(kind, reinterpret_cast<const uint16_t*>(src.base) + s00,
                reinterpret_cast<uint16_t*>(dst.base) + d00, scol.data(), srow.data(), drow.data(),
                dcol.data(), R, C);
    if (Cf < C)
      for (int64_t i = 0; i < Rf; ++i)
        gather_row<uint16_t>(src.base + (s00 + scol[i]) * es, dst.base + (d00 + drow[i]) * es,
                             srow.data() + Cf, dcol.data() + Cf, C - Cf);
    i_from = Rf;
  }
  for (int64_t i = i_from; i < R; ++i) {
    const uint8_t* sp = src.base + (s00 + scol[i]) * es;
    uint8_t* dp = dst.base + (d00 + drow[i]) * es;
    if (es == 1)
      gather_row<uint8_t>(sp, dp, srow.data(), dcol.data(), C);
    else if (es == 2)
      gather_row<uint16_t>(sp, dp, srow.data(), dcol.data(), C);
    else
      gather_row<uint32_t>(sp, dp, srow.data(), dcol.data(), C);
  }
  return true;
}

/// DataCopy GM -> L1 with ND -> NZ conversion writes whole 32-byte blocks of each row: a row
/// that ends inside a block gets the rest of that block zero-filled (C0 = 32 / sizeof(T)
/// columns); the columns past that block keep what L1 held (stale data, poison in timed and
/// hazard-checked launches), so a K-tail GEMM must clear its tile first (InitConstValue). A
/// row ending on a block boundary writes nothing more. (docs/hardware.md section 5, "Data
/// movement".)
void zero_fill_partial_block(const TileRef& dst) {
  const size_t nd = dst.extent.size();
  if (nd == 0) return;
  const int64_t es = dtype_bytes(dst.dtype), per_block = 32 / es;
  const int64_t c_end = dst.start.back() + dst.extent.back();
  const int64_t c_fill = std::min(align_up(c_end, per_block), dst.shape.back());
  if (c_fill <= c_end) return;
  std::vector<int64_t> idx(dst.start);
  int64_t run;
  for (int64_t r = 0; r < dst.rows(); ++r) {
    int64_t rem = r;
    for (size_t d = nd - 1; d-- > 0;) {
      idx[d] = dst.start[d] + rem % dst.extent[d];
      rem /= dst.extent[d];
    }
    for (int64_t col = c_end; col < c_fill; ++col) {
      idx[nd - 1] = col;
      std::memset(dst.base + storage_offset(dst, idx, &run) * es, 0, static_cast<size_t>(es));
    }
  }
}

/// A GM <-> UB copy of one dtype whose rows are contiguous and evenly spaced on both sides (the
/// workspaces and tiles of a kernel): one move per row, not copy_regions' index arithmetic and
/// storage_offset calls per row. Moves the bytes copy_regions moves (FastPaths.*), with streaming
/// stores when `stream` (move_runs.h). False, before any byte moved, for any other copy.
bool nd_rows(const TileRef& src, const TileRef& dst, bool stream) {
  const size_t ns = src.extent.size(), nd = dst.extent.size();
  if (src.dtype != dst.dtype || ns < 1 || nd < 1 || ns > 8 || nd > 8 || src.strides[ns - 1] != 1 ||
      dst.strides[nd - 1] != 1 || !rows_evenly_spaced(src) || !rows_evenly_spaced(dst) ||
      src.rows() != dst.rows() || src.cols() != dst.cols())
    return false;
  const int64_t R = src.rows(), es = dtype_bytes(src.dtype);
  const size_t bytes = static_cast<size_t>(src.cols() * es);
  int64_t run;
  const uint8_t* sp = src.base + storage_offset(src, src.start.data(), &run) * es;
  uint8_t* dp = dst.base + storage_offset(dst, dst.start.data(), &run) * es;
  const int64_t ss = ns >= 2 ? src.strides[ns - 2] * es : 0,
                ds = nd >= 2 ? dst.strides[nd - 2] * es : 0;
  auto move = [stream](uint8_t* d, const uint8_t* s, size_t n) {
    stream ? store_streaming(d, s, n) : void(std::memmove(d, s, n));
  };
  // Rows back to back on both sides (a whole tile to or from a workspace): one move, not a call
  // per row (FlashAttention's S, P and O round trips are 64 rows of 128-512 bytes each).
  if (ss == ds && ss == static_cast<int64_t>(bytes)) {
    move(dp, sp, bytes * static_cast<size_t>(R));
    return true;
  }
  for (int64_t r = 0; r < R; ++r) move(dp + r * ds, sp + r * ss, bytes);
  return true;
}

/// The copy of region src to region dst; with `shadow` both are shadows and the same bytes
/// move (a pad lane gets a valid byte instead of pad_value, a conversion the source
/// element's validity).
void copy_impl(const TileOpNode& n, Core& c, TileRef src, TileRef dst, bool shadow,
               bool valid_src = false) {
  if (src.numel() != dst.numel())
    c.fail(fmt::format("T.copy: 'src' ({}) has {} elements but 'dst' ({}) has {}", src.buffer->name,
                       src.numel(), dst.buffer->name, dst.numel()));
  bool relu = n.attr_bool("enable_relu");
  bool transpose = n.attr_bool("transpose");
  MemScope S = src.scope, D = dst.scope;
  bool fixpipe = S == MemScope::L0C;
  if (!fixpipe && src.dtype != dst.dtype)
    c.fail(fmt::format(
        "T.copy from {} to {}: dtypes differ ({} -> {}); only the fixpipe (L0C -> GM/L1) converts",
        scope_name(S), scope_name(D), dtype_name(src.dtype), dtype_name(dst.dtype)));
  if (relu && !fixpipe) c.fail("T.copy: enable_relu is a fixpipe option (L0C -> GM/L1)");
  // GM <-> UB: DataCopy moves whole 32-byte blocks of each row.
  if ((S == MemScope::GM && D == MemScope::UB) || (S == MemScope::UB && D == MemScope::GM)) {
    int64_t row_bytes = src.cols() * dtype_bytes(src.dtype);
    bool pad = n.attr_bool("pad");
    if (row_bytes % 32 != 0 && !pad)
      c.fail(fmt::format(
          "T.copy {} -> {}: each row moves {} bytes, not a multiple of 32 (DataCopy would round "
          "it down and drop the tail); use the padded copy (pad_value)",
          scope_name(S), scope_name(D), row_bytes));
    // A large store may stream (move_runs.h); the workspace search runs only for those, and a
    // workspace, which the kernel reads back, never streams.
    const auto& ws = c.program.workspaces;
    const int64_t es = dtype_bytes(dst.dtype);
    const bool stream = S == MemScope::UB && !shadow && !dst.shape.empty() &&
                        wants_streaming(src.numel() * es, dst.shape[0] * dst.strides[0] * es) &&
                        std::find(ws.begin(), ws.end(), dst.buffer) == ws.end();
    if (valid_src || plain_paths() || !nd_rows(src, dst, stream))
      copy_regions(src, dst, false, false, shadow, valid_src);
    if (pad && D == MemScope::UB) {
      // DataCopyPad fills each UB row's tail up to the 32-byte boundary with pad_value.
      int64_t es = dtype_bytes(dst.dtype), per_block = 32 / es;
      int64_t c_end = dst.start.back() + dst.extent.back();
      int64_t c_pad = std::min(align_up(c_end, per_block), dst.shape.back());
      double v = n.attr_float("pad_value");
      // The shadow: pad_value is a constant, valid; the lanes TileLang-Ascend leaves undefined
      // (`pad_undefined`) get their own origin.
      uint8_t lane = kValid;
      if (shadow && n.attr_bool("pad_undefined") && c.launch.stale) {
        auto it = c.launch.stale->pad_lanes.find(&n);
        lane = it == c.launch.stale->pad_lanes.end() ? kNeverWritten : it->second;
      }
      for (int64_t r = 0; r < dst.rows(); ++r) {
        uint8_t* row = row_ptr(dst, r) - dst.start.back() * es;
        for (int64_t col = c_end; col < c_pad; ++col) {
          if (shadow)
            std::memset(row + col * es, lane, es);
          else
            store_value(dst.dtype, row + col * es, v);
        }
      }
    }
    return;
  }
  if (transpose) {
    if (!(S == MemScope::L1 && (D == MemScope::L0A || D == MemScope::L0B)))
      c.fail("T.copy: transpose applies to L1 -> L0A/L0B loads only");
    // dst (i, j) = src (j, i): walk the destination and read the transposed source element.
    if (src.rows() != dst.cols() || src.cols() != dst.rows())
      c.fail(fmt::format(
          "T.copy(transpose=True): 'src' is [{} x {}], 'dst' must be [{} x {}], got [{} x {}]",
          src.rows(), src.cols(), src.cols(), src.rows(), dst.rows(), dst.cols()));
    if (!plain_paths() && transpose_load(src, dst)) return;
    int64_t es = dtype_bytes(src.dtype), run;
    size_t ns = src.extent.size(), nd = dst.extent.size();
    std::vector<int64_t> si(src.start), di(dst.start);
    for (int64_t i = 0; i < dst.rows(); ++i)
      for (int64_t j = 0; j < dst.cols(); ++j) {
        di[nd - 2] = dst.start[nd - 2] + i;
        di[nd - 1] = dst.start[nd - 1] + j;
        si[ns - 2] = src.start[ns - 2] + j;
        si[ns - 1] = src.start[ns - 1] + i;
        std::memcpy(dst.base + storage_offset(dst, di, &run) * es,
                    src.base + storage_offset(src, si, &run) * es, es);
      }
    return;
  }
  if (S == MemScope::GM && D == MemScope::L1 && !n.attr_bool("nd2nz")) {
    // No ND -> NZ conversion: the ND bytes are written linearly from the region's start.
    int64_t run, es = dtype_bytes(src.dtype);
    int64_t at =
        storage_offset(dst, dst.start, &run) * es;  // inside the buffer: the region is checked
    std::vector<uint8_t> bytes;
    load_bytes(src, bytes);
    // Compared as byte counts: a pointer past the buffer's end is not even formed.
    if (static_cast<int64_t>(bytes.size()) > c.program.buffer(dst.buffer).bytes - at)
      c.fail(fmt::format("T.copy(nd2nz=False): {} bytes from the region start overflow '{}'",
                         bytes.size(), dst.buffer->name));
    std::memcpy(dst.base + at, bytes.data(), bytes.size());
    return;
  }
  const size_t dn = dst.shape.size();
  if (S == MemScope::GM && D == MemScope::L1 &&
      (whole_2d_buffer(dst) || (!plain_paths() && whole_matrix(dst))) && src.strides.back() == 1 &&
      src.extent.size() >= 2 && rows_evenly_spaced(src) && src.extent.back() == dst.shape[dn - 1] &&
      src.rows() == dst.shape[dn - 2]) {
    // The common case: a 2-D GM tile into a whole L1 matrix (a 2-D buffer, or one stage of a
    // multi-buffered one), converted by rows of fractals.
    size_t ns = src.extent.size();
    int64_t run;
    uint8_t* base = dst.base + storage_offset(dst, dst.start.data(), &run) * dtype_bytes(dst.dtype);
    const int64_t mr = dst.shape[dn - 2], mc = dst.shape[dn - 1];
    if (valid_src)  // nd_to_nz writes the whole (padded) matrix
      std::memset(base, kValid, static_cast<size_t>(storage_bytes(dst.scope, dst.dtype, {mr, mc})));
    else  // (no shape vector built here: a malloc per K / V / P load)
      nd_to_nz(src.at(src.start), mr, mc, ns >= 2 ? src.strides[ns - 2] : 0, src.dtype, base);
    return;
  }
  const bool saturate = fixpipe && (dst.dtype == DType::Float16 || dst.dtype == DType::BFloat16);
  if (!relu && !fixpipe && !valid_src && !plain_paths() && cube_load(src, dst)) return;
  if (!shadow && !valid_src && !plain_paths() && fractal_rows(src, dst, relu, saturate)) {
    if (S == MemScope::GM && D == MemScope::L1) zero_fill_partial_block(dst);
    if (S == MemScope::GM && D == MemScope::L1) zero_nz_padding(dst);
    return;
  }
  copy_regions(src, dst, relu, saturate, shadow, valid_src);
  if (S == MemScope::GM && D == MemScope::L1) zero_fill_partial_block(dst);
  if (S == MemScope::GM && D == MemScope::L1) zero_nz_padding(dst);
}

void copy(const TileOpNode& n, Core& c) {
  copy_impl(n, c, c.operand(n, "src"), c.operand(n, "dst"), false);
}

/// Validity moves as the bytes do. A clipped copy (legalize_copies clipped it at the tensor's
/// end; docs/developer_mode.md) leaves every element of its destination buffer outside the
/// copied region (and its pad lanes) stale: the whole buffer is marked first.
void copy_stale(const TileOpNode& n, Core& c) {
  TileRef src = c.operand(n, "src"), dst = c.operand(n, "dst");
  TileRef ss = shadow_of(c, src);
  // Valid data into a GM parameter without a shadow (all valid so far) changes nothing.
  if (dst.scope == MemScope::GM && gm_all_valid(c, dst) && region_origin(ss) == kValid) return;
  TileRef sd = shadow_for_write(c, dst);
  if (n.attr_bool("clipped") && dst.scope != MemScope::GM) {
    const BufferInfo& info = c.program.buffer(dst.buffer);
    auto it = c.launch.stale->clipped.find(&n);
    std::memset(c.shadow()->mem[static_cast<size_t>(dst.scope)].data() + info.offset,
                it == c.launch.stale->clipped.end() ? kNeverWritten : it->second,
                static_cast<size_t>(info.bytes));
  }
  copy_impl(n, c, ss, sd, true, src.scope == MemScope::GM && gm_all_valid(c, src));
}

std::mutex g_atomic_mu;

void atomic_add(const TileOpNode& n, Core& c) {
  TileRef dst = c.operand(n, "dst"), src = c.operand(n, "src");
  if (dst.scope != MemScope::GM)
    c.fail(fmt::format("T.atomic_add: 'dst' ({}) must be in GM", dst.buffer->name));
  if (src.numel() != dst.numel())
    c.fail(fmt::format("T.atomic_add: 'src' has {} elements but 'dst' has {}", src.numel(),
                       dst.numel()));
  // Read src through its layout into a dense fp32 tile, then add under a lock.
  std::vector<float> v(src.numel());
  std::vector<int64_t> si(src.extent.size());
  int64_t run, es = dtype_bytes(src.dtype);
  for (int64_t f = 0; f < src.numel(); ++f) {
    int64_t rem = f;
    for (size_t d = si.size(); d-- > 0;) {
      si[d] = src.start[d] + rem % src.extent[d];
      rem /= src.extent[d];
    }
    v[f] = static_cast<float>(load_value(src.dtype, src.base + storage_offset(src, si, &run) * es));
  }
  std::lock_guard<std::mutex> g(g_atomic_mu);
  for (int64_t f = 0; f < dst.numel(); ++f) {
    uint8_t* p = dst.at_flat(f);
    float cur = static_cast<float>(load_value(dst.dtype, p));
    store_value(dst.dtype, p, static_cast<double>(cur + v[f]));
  }
}

}  // namespace

int64_t layout_offset(const TileRef& t, const std::vector<int64_t>& idx) {
  int64_t run;
  return storage_offset(t, idx, &run);
}

/// dcci: in program order (fast mode) scalar accesses go straight to GM and there is nothing to
/// do (the hazard checker reports the accesses a data cache would make stale, hazard.cpp); in
/// the time-ordered replay of a timed launch the core's data cache writes back and drops the
/// lines of dst, or every line.
void dcci(const TileOpNode& n, Core& c) {
  TileRef dst = c.operand(n, "dst");
  c.dcache_clean_invalidate(n.attr_bool("entire") ? nullptr : &dst);
}

namespace {
/// dst (GM) = dst + src, element by element: each is as valid as both.
void atomic_add_stale(const TileOpNode& n, Core& c) {
  TileRef dst = c.operand(n, "dst"), src = c.operand(n, "src");
  if (dst.scope != MemScope::GM || src.numel() != dst.numel()) return;  // the semantics report it
  TileRef ss = shadow_of(c, src);
  if (gm_all_valid(c, dst) && region_origin(ss) == kValid) return;  // all valid, and stays so
  std::vector<uint8_t> a, b;
  TileRef sd = shadow_for_write(c, dst);
  region_origins(ss, a);
  region_origins(sd, b);
  for (size_t i = 0; i < a.size(); ++i) b[i] = first_of(b[i], a[i]);
  region_store(sd, b);
}
/// Data-cache maintenance changes no data.
void no_data_stale(const TileOpNode&, Core&) {}
}  // namespace

std::vector<ExecEntry> move_execs() {
  return {{&ops::copy(), copy}, {&ops::atomic_add(), atomic_add}, {&ops::dcci(), dcci}};
}
std::vector<StaleEntry> move_stale_rules() {
  return {{&ops::copy(), copy_stale},
          {&ops::atomic_add(), atomic_add_stale},
          {&ops::dcci(), no_data_stale}};
}

}  // namespace tl::npu
