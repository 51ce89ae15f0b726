// The AscendC CPU model's cube calls (include/ascendc_cpu/model.h): DataCopy with Nd2NzParams,
// LoadData, Mmad, Fixpipe and InitConstValue, each a virtual-NPU tile op over buffers whose
// fractal layouts (include/tl/npu/layout.h: L1 NZ, L0A ZZ, L0B ZN, L0C NZ 16 x 16) put the
// AscendC call's bytes where the call says. The meaning of the parameter structs is the public
// AscendC documentation's ("DataCopy" 随路格式转换 Nd2NzParams, "LoadData" LoadData2DParams,
// "Mmad" MmadParams, "Fixpipe" FixpipeParamsV220, "InitConstValue"); docs/ascendc.md ("CPU
// model") has the table.
//
// A LoadData repeat moves one 512-byte fractal, whose bytes are contiguous in L1 (NZ: 16 rows
// of c0 elements of one column block) and in L0A/L0B. The model moves it as a VM copy between
// one-fractal buffers whose layouts make the move what LoadData does: L1 [16, c0] and L0A
// [16, c0] are both row-major inside the fractal (the bytes as they are), L0B [c0, 16] is
// n-major (a transposing copy of the L1 fractal into it moves the bytes as they are), and the
// ifTranspose loads use the other pairing, which turns each 16 x 16 fractal.
#include <fmt/format.h>

#include "internal.h"
#include "tl/storage.h"

namespace ascendc_cpu {

namespace {

int64_t align_up(int64_t x, int64_t a) {
  return (x + a - 1) / a * a;
}
int64_t c0_of(DType t) {
  return 32 / tl::dtype_bytes(t);
}

/// A buffer of `shape` in the tensor's memory from its start, in that memory's layout.
tl::Buffer fractal_buffer(const Where& w, const LocalRef& t, const std::vector<int64_t>& shape,
                          const char* what) {
  const int64_t bytes = tl::storage_bytes(t.scope, t.dtype, shape);
  check_fits(w, t, bytes / tl::dtype_bytes(t.dtype), what);
  return ctx(w).launch->direct.onchip_buffer(local_name(t), t.scope, t.offset, t.dtype, shape);
}

tl::BufferRegion region(const tl::Buffer& b, int64_t rows, int64_t cols) {
  return tl::BufferRegion{b, {{tl::Expr(0), tl::Expr(rows)}, {tl::Expr(0), tl::Expr(cols)}}};
}

void need_scope(const Where& w, const LocalRef& t, MemScope s, const char* what) {
  if (t.scope != s)
    fail(w,
         fmt::format("{} is in {}, expected {}", what, tl::scope_name(t.scope), tl::scope_name(s)));
}

}  // namespace

void copy_nd2nz(const Where& w, const LocalRef& dst, const GlobalRef& src, int64_t rows,
                int64_t cols, int64_t src_pitch, int64_t c0_stride) {
  need_scope(w, dst, MemScope::L1, "dst");
  if (dst.dtype != src.dtype) fail(w, "GM and L1 element types differ");
  if (rows < 0 || rows > 16384 || cols < 0 || cols > 65535)
    fail(w, fmt::format("nValue {} / dValue {} out of range", rows, cols));
  if (c0_stride % 16 != 0 || c0_stride < rows)
    fail(w, fmt::format("dstNzC0Stride {} is not a multiple of 16 holding nValue {} rows",
                        c0_stride, rows));
  if (src_pitch < cols) fail(w, fmt::format("srcDValue {} < dValue {}", src_pitch, cols));
  if (rows == 0 || cols == 0) return;
  tl::Buffer d = fractal_buffer(w, dst, {c0_stride, cols}, "dst");
  tl::Buffer s = gm_view(w, src.addr, src.dtype, {rows, cols}, {src_pitch, 1});
  exec_op(w, "copy", {tl::BufferRegion::full(s), region(d, rows, cols)}, {{"nd2nz", true}});
}

void load_data(const Where& w, const LocalRef& dst, const LocalRef& src, int64_t start,
               int64_t repeat, int64_t src_stride, int64_t dst_gap, bool transpose) {
  need_scope(w, src, MemScope::L1, "src");
  if (dst.scope != MemScope::L0A && dst.scope != MemScope::L0B)
    fail(w, fmt::format("dst is in {}; LoadData2D loads L0A or L0B", tl::scope_name(dst.scope)));
  if (dst.dtype != src.dtype) fail(w, "src and dst element types differ");
  if (repeat < 0 || repeat > 255)
    fail(w, fmt::format("repeatTimes {} is outside [0, 255]", repeat));
  const int64_t es = tl::dtype_bytes(src.dtype), c0 = c0_of(src.dtype), fr = 512 / es;
  if (transpose && es != 2)
    fail(w, fmt::format("ifTranspose with {} (LoadData transposes 16-bit types only)",
                        tl::dtype_name(src.dtype)));
  const bool l0b = dst.scope == MemScope::L0B;
  auto move = [&](int64_t s_frac, int64_t d_frac, int64_t n) {
    LocalRef s = src, d = dst;
    s.offset += s_frac * 512;
    s.count -= s_frac * fr;
    d.offset += d_frac * 512;
    d.count -= d_frac * fr;
    const int64_t rows = 16 * n;
    if (!transpose) {  // the bytes as they are
      tl::Buffer sb = fractal_buffer(w, s, {rows, c0}, "src");
      if (!l0b) {
        tl::Buffer db = fractal_buffer(w, d, {rows, c0}, "dst");
        exec_op(w, "copy", {region(sb, rows, c0), region(db, rows, c0)});
      } else {
        tl::Buffer db = fractal_buffer(w, d, {c0, rows}, "dst");
        exec_op(w, "copy", {region(sb, rows, c0), region(db, c0, rows)}, {{"transpose", true}});
      }
    } else {  // each 16 x 16 fractal turned
      tl::Buffer sb = fractal_buffer(w, s, {16, 16}, "src");
      tl::Buffer db = fractal_buffer(w, d, {16, 16}, "dst");
      exec_op(w, "copy", {region(sb, 16, 16), region(db, 16, 16)}, {{"transpose", !l0b}});
    }
  };
  if (!transpose && src_stride == 1 && dst_gap == 0) {
    move(start, 0, repeat);  // consecutive fractals on both sides: one move
    return;
  }
  for (int64_t i = 0; i < repeat; ++i) move(start + i * src_stride, i * (1 + dst_gap), 1);
}

void mmad(const Where& w, const LocalRef& c, const LocalRef& a, const LocalRef& b, int64_t m,
          int64_t n, int64_t k, bool init) {
  need_scope(w, c, MemScope::L0C, "dst");
  need_scope(w, a, MemScope::L0A, "fm");
  need_scope(w, b, MemScope::L0B, "filter");
  if (m < 0 || n < 0 || k < 0 || m > 4095 || n > 4095 || k > 4095)
    fail(w, fmt::format("m {}, n {}, k {}: each must be in [0, 4095]", m, n, k));
  if (m == 0 || n == 0 || k == 0) return;  // a no-op
  if (m == 1) fail(w, "m = 1 is Mmad's GEMV mode (A read as ND), not modelled");
  const int64_t c0 = c0_of(a.dtype);
  tl::Buffer A = fractal_buffer(w, a, {align_up(m, 16), align_up(k, c0)}, "fm");
  tl::Buffer B = fractal_buffer(w, b, {align_up(k, c0), align_up(n, 16)}, "filter");
  tl::Buffer C = fractal_buffer(w, c, {align_up(m, 16), align_up(n, 16)}, "dst");
  exec_op(w, "mma", {region(A, m, k), region(B, k, n), region(C, m, n), tl::Expr(init ? 1 : 0)});
}

void fixpipe(const Where& w, const GlobalRef& dst, const LocalRef& src, int64_t m, int64_t n,
             int64_t src_stride, int64_t dst_stride, bool relu) {
  need_scope(w, src, MemScope::L0C, "src");
  // NZ -> ND (CFG_ROW_MAJOR): nSize in [1, 4095], any value (a multiple of 16 only without the
  // conversion); mSize in [1, 65535] ("Fixpipe" API page, FixpipeParamsV220).
  if (n < 1 || n > 4095 || m < 1 || m > 65535)
    fail(w, fmt::format("nSize {} (in [1, 4095]) / mSize {} (in [1, 65535])", n, m));
  if (src_stride % 16 != 0 || src_stride < m)
    fail(w,
         fmt::format("srcStride {} is not a multiple of 16 holding mSize {} rows", src_stride, m));
  if (dst_stride < n) fail(w, fmt::format("dstStride {} < nSize {}", dst_stride, n));
  tl::Buffer s = fractal_buffer(w, src, {src_stride, n}, "src");
  tl::Buffer d = gm_view(w, dst.addr, dst.dtype, {m, n}, {dst_stride, 1});
  if (const CoreCtx& c = ctx(w); c.atomic_add) {
    // Under SetAtomicAdd<float> the Fixpipe adds to GM ("SetAtomicAdd" API page: L0C -> GM):
    // the VM's atomic_add. A float32 destination only: the conversion to a narrower type before
    // the add rounds twice, which the VM's atomic_add does not model.
    if (c.atomic_dtype != DType::Float32 || dst.dtype != DType::Float32 || relu)
      fail(w, fmt::format("an atomic Fixpipe into {} under SetAtomicAdd<{}>{}: only float32 "
                          "without ReLU is modelled",
                          tl::dtype_name(dst.dtype), tl::dtype_name(c.atomic_dtype),
                          relu ? " with ReLU" : ""));
    exec_op(w, "atomic_add", {tl::BufferRegion::full(d), region(s, m, n)});
    return;
  }
  exec_op(w, "copy", {region(s, m, n), tl::BufferRegion::full(d)}, {{"enable_relu", relu}});
}

void init_const(const Where& w, const LocalRef& dst, int64_t blocks, double value) {
  if (dst.scope != MemScope::L1 && dst.scope != MemScope::L0A && dst.scope != MemScope::L0B)
    fail(w, fmt::format("dst in {}", tl::scope_name(dst.scope)));
  if (blocks <= 0) return;
  const int64_t c0 = c0_of(dst.dtype);
  if (blocks % 16 != 0)
    fail(w, fmt::format("blockNum {} is not whole 16-row fractal columns (the model fills "
                        "whole fractals)",
                        blocks));
  // `blocks` rows of one 32-byte block each: exactly `blocks` * 32 bytes of storage.
  std::vector<int64_t> shape = dst.scope == MemScope::L0B ? std::vector<int64_t>{c0, blocks}
                                                          : std::vector<int64_t>{blocks, c0};
  tl::Buffer b = fractal_buffer(w, dst, shape, "dst");
  exec_op(w, "init_const", {tl::BufferRegion::full(b), scalar_expr(dst.dtype, value)});
}

}  // namespace ascendc_cpu
