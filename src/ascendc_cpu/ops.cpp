// The AscendC CPU model's copies and vector calls (include/ascendc_cpu/model.h): each call
// becomes one virtual-NPU tile op (or a few, for a mask whose last 32-byte block is partial)
// over buffers declared at the bytes the call addresses, executed on the current core. The
// op's semantics are the VM's (src/npu/exec_*.cpp), so results are those of the VM bit for bit
// whenever the AscendC call and the tile op mean the same thing; the mapping is the table in
// docs/ascendc.md ("CPU model"). The meaning of each AscendC call and its parameters is taken
// from the public AscendC API documentation (asc-devkit, SIMD-API: DataCopy, DataCopyPad, the
// vector compute APIs, Brcb, ReduceSum); what a call may not do there is an error here, named.
#include <fmt/format.h>

#include "internal.h"
#include "tl/op.h"

namespace ascendc_cpu {

namespace {

const tl::OpDef* op_named(const char* name) {
  const tl::OpDef* d = tl::find_op(name);
  TL_ASSERT(d, "the AscendC CPU model uses op {}, which is not registered", name);
  return d;
}

/// Every attribute of `op` with its default, then `set` applied.
std::vector<tl::Attr> attrs_of(const tl::OpDef* op, std::vector<tl::Attr> set = {}) {
  std::vector<tl::Attr> out;
  for (const auto& a : op->attrs) {
    tl::Attr x{a.name, a.default_value};
    for (const auto& s : set)
      if (s.key == a.name) x.value = s.value;
    out.push_back(std::move(x));
  }
  return out;
}

int64_t elem_bytes(DType t) {
  return tl::dtype_bytes(t);
}

}  // namespace

void exec_op(const Where& w, const char* name, std::vector<tl::TileArg> args,
             std::vector<tl::Attr> set) {
  const tl::OpDef* op = op_named(name);
  run(w, tl::TileOpNode::make(op, std::move(args), attrs_of(op, std::move(set)), loc_of(w)));
}

/// `count` must fit the tensor (its GetWithOffset / operator[] size).
void check_fits(const Where& w, const LocalRef& t, int64_t elems, const char* what) {
  if (elems > t.count)
    fail(w, fmt::format("{} covers {} elements of a LocalTensor of {} ({} at byte {})", what, elems,
                        t.count, tl::scope_name(t.scope), t.offset));
}

void check_count(const Where& w, int64_t count) {
  if (count < 0) fail(w, fmt::format("count {} is negative", count));
}

/// A 1-D operand of `count` elements.
tl::TileArg flat(const Where& w, const LocalRef& t, int64_t count, const char* what) {
  check_fits(w, t, count, what);
  return tl::BufferRegion::full(
      ctx(w).launch->direct.onchip_buffer(local_name(t), t.scope, t.offset, t.dtype, {count}));
}

/// An operand of `shape` elements with element `strides` from the tensor's start.
tl::TileArg strided(const Where& w, const LocalRef& t, const std::vector<int64_t>& shape,
                    const std::vector<int64_t>& strides, const char* what) {
  int64_t last = 0;
  for (size_t d = 0; d < shape.size(); ++d) last += (shape[d] - 1) * strides[d];
  check_fits(w, t, last + 1, what);
  return tl::BufferRegion::full(ctx(w).launch->direct.onchip_buffer(
      local_name(t), t.scope, t.offset, t.dtype, shape, strides));
}

tl::Expr scalar_expr(DType t, double v) {
  if (tl::is_float(t)) return tl::FloatImmNode::make(t, v);
  return tl::IntImmNode::make(t, static_cast<int64_t>(v));
}

std::string local_name(const LocalRef& t) {
  return fmt::format("{}[{}]", tl::scope_name(t.scope), t.offset);
}

tl::Buffer gm_view(const Where& w, uint8_t* addr, DType dtype, const std::vector<int64_t>& shape,
                   const std::vector<int64_t>& strides) {
  const int64_t es = elem_bytes(dtype);
  int64_t last = 0;
  for (size_t d = 0; d < shape.size(); ++d) last += (shape[d] - 1) * strides[d];
  const GmArg& g = find_gm(w, addr, (last + 1) * es);
  if (g.tensor.dtype() != dtype && elem_bytes(g.tensor.dtype()) != es)
    fail(w, fmt::format("a GlobalTensor of {} over '{}' ({})", tl::dtype_name(dtype), g.name,
                        g.tensor.describe()));
  tl::Tensor view = tl::Tensor::wrap(*g.tensor.device(), addr, shape, strides, dtype, w.api);
  return ctx(w).launch->direct.gm_buffer(g.name, view);
}

// ---- Copies ----------------------------------------------------------------------------------

namespace {
struct Rows {
  int64_t cols = 0, src_pitch = 0, dst_pitch = 0;  // in elements
};
Rows rows_of(const Where& w, DType t, const Blocks& b) {
  const int64_t es = elem_bytes(t);
  if (b.count < 0 || b.len < 0) fail(w, fmt::format("blockCount {} / blockLen {}", b.count, b.len));
  if (b.count > 4095) fail(w, fmt::format("blockCount {} exceeds 4095", b.count));
  if (b.len % es || b.src_pitch % es || b.dst_pitch % es)
    fail(w, fmt::format("blockLen {} bytes and the strides are not whole {}-byte elements", b.len,
                        es));
  return {b.len / es, b.src_pitch / es, b.dst_pitch / es};
}
}  // namespace

void copy_in(const Where& w, const LocalRef& dst, const GlobalRef& src, const Blocks& b, bool pad,
             double pad_value) {
  if (dst.dtype != src.dtype && elem_bytes(dst.dtype) != elem_bytes(src.dtype))
    fail(w, fmt::format("GM {} into a LocalTensor of {}", tl::dtype_name(src.dtype),
                        tl::dtype_name(dst.dtype)));
  Rows r = rows_of(w, dst.dtype, b);
  if (b.count == 0 || r.cols == 0) return;
  const int64_t es = elem_bytes(dst.dtype), per_block = 32 / es;
  // In UB each block of a padded copy ends on a 32-byte boundary: the padding lanes are part of
  // the destination rows (the VM's copy writes pad_value there, docs/hardware.md section 5).
  const int64_t width = pad ? (r.cols + per_block - 1) / per_block * per_block : r.cols;
  if (r.dst_pitch < width && b.count > 1)
    fail(w, fmt::format("destination blocks {} bytes apart overlap ({} bytes each)",
                        r.dst_pitch * es, width * es));
  tl::TileArg d =
      strided(w, dst, {b.count, width}, {std::max<int64_t>(r.dst_pitch, width), 1}, "the copy");
  d.region.ranges[1].extent = tl::Expr(r.cols);
  tl::Buffer s = gm_view(w, src.addr, src.dtype, {b.count, r.cols}, {r.src_pitch, 1});
  exec_op(w, "copy", {tl::BufferRegion::full(s), d}, {{"pad", pad}, {"pad_value", pad_value}});
}

void copy_out(const Where& w, const GlobalRef& dst, const LocalRef& src, const Blocks& b,
              bool pad) {
  if (dst.dtype != src.dtype && elem_bytes(dst.dtype) != elem_bytes(src.dtype))
    fail(w, fmt::format("a LocalTensor of {} into GM {}", tl::dtype_name(src.dtype),
                        tl::dtype_name(dst.dtype)));
  Rows r = rows_of(w, src.dtype, b);
  if (b.count == 0 || r.cols == 0) return;
  tl::TileArg s =
      strided(w, src, {b.count, r.cols}, {std::max(r.src_pitch, r.cols), 1}, "the copy");
  tl::Buffer d = gm_view(w, dst.addr, dst.dtype, {b.count, r.cols}, {r.dst_pitch, 1});
  if (const CoreCtx& c = ctx(w); c.atomic_add) {
    // Under SetAtomicAdd<T> the transfer adds to GM ("SetAtomicAdd" API page): the VM's
    // atomic_add, whose accumulation type T must be the data's.
    if (c.atomic_dtype != dst.dtype)
      fail(w, fmt::format("SetAtomicAdd<{}> is in effect for a transfer of {}",
                          tl::dtype_name(c.atomic_dtype), tl::dtype_name(dst.dtype)));
    exec_op(w, "atomic_add", {tl::BufferRegion::full(d), s});
    return;
  }
  exec_op(w, "copy", {s, tl::BufferRegion::full(d)}, {{"pad", pad}});
}

void copy_local(const Where& w, const LocalRef& dst, const LocalRef& src, const Blocks& b) {
  Rows r = rows_of(w, src.dtype, b);
  if (b.count == 0 || r.cols == 0) return;
  tl::TileArg s = strided(w, src, {b.count, r.cols}, {std::max(r.src_pitch, r.cols), 1}, "src");
  tl::TileArg d = strided(w, dst, {b.count, r.cols}, {std::max(r.dst_pitch, r.cols), 1}, "dst");
  exec_op(w, "copy", {s, d});
}

// ---- Vector ----------------------------------------------------------------------------------

void vec_binary(const Where& w, const char* op, const LocalRef& dst, const LocalRef& a,
                const LocalRef& b, int64_t count) {
  check_count(w, count);
  if (count == 0) return;
  exec_op(w, op,
          {flat(w, dst, count, "dst"), flat(w, a, count, "src0"), flat(w, b, count, "src1")});
}

void vec_scalar(const Where& w, const char* op, const LocalRef& dst, const LocalRef& a, double s,
                int64_t count) {
  check_count(w, count);
  if (count == 0) return;
  exec_op(w, op, {flat(w, dst, count, "dst"), flat(w, a, count, "src"), scalar_expr(a.dtype, s)});
}

void vec_unary(const Where& w, const char* op, const LocalRef& dst, const LocalRef& a,
               int64_t count) {
  check_count(w, count);
  if (count == 0) return;
  exec_op(w, op, {flat(w, dst, count, "dst"), flat(w, a, count, "src")});
}

void vec_binary_repeat(const Where& w, const char* op, const LocalRef& dst, const LocalRef& a,
                       const LocalRef& b, uint64_t mask, int64_t repeat, const int64_t p[6]) {
  const int64_t es = elem_bytes(dst.dtype), per_block = 32 / es, lanes = 256 / es;
  if (repeat < 0 || repeat > 255) fail(w, fmt::format("repeatTime {} is outside [0, 255]", repeat));
  if (mask > static_cast<uint64_t>(lanes))
    fail(w, fmt::format("mask {} exceeds the {} lanes of a repeat of {}", mask, lanes,
                        tl::dtype_name(dst.dtype)));
  for (int i = 0; i < 6; ++i)
    if (p[i] < 0 || p[i] > 255)
      fail(w, fmt::format("a repeat parameter {} outside [0, 255]", p[i]));
  if (mask == 0 || repeat == 0) return;
  const auto m = static_cast<int64_t>(mask);
  // One operand as [repeat, blocks, lanes of a block]: block k of repeat i starts
  // i * repStride + k * blkStride blocks from the tensor's start.
  auto view = [&](const LocalRef& t, int64_t blk, int64_t rep, int64_t first, int64_t nblk,
                  int64_t ncols, const char* what) {
    LocalRef at = t;
    at.offset += first * blk * 32;
    at.count -= first * blk * per_block;
    return strided(w, at, {repeat, nblk, ncols}, {rep * per_block, blk * per_block, 1}, what);
  };
  auto issue = [&](int64_t first, int64_t nblk, int64_t ncols) {
    exec_op(w, op,
            {view(dst, p[0], p[3], first, nblk, ncols, "dst"),
             view(a, p[1], p[4], first, nblk, ncols, "src0"),
             view(b, p[2], p[5], first, nblk, ncols, "src1")});
  };
  if (m / per_block > 0) issue(0, m / per_block, per_block);
  if (m % per_block > 0) issue(m / per_block, 1, m % per_block);  // the partial last block
}

void vec_cast(const Where& w, const LocalRef& dst, const LocalRef& src, const char* mode,
              int64_t count) {
  check_count(w, count);
  if (count == 0) return;
  exec_op(w, "tile.cast", {flat(w, dst, count, "dst"), flat(w, src, count, "src")},
          {{"mode", std::string(mode)}});
}

void vec_fill(const Where& w, const LocalRef& dst, double value, int64_t count) {
  check_count(w, count);
  if (count == 0) return;
  exec_op(w, "tile.fill", {flat(w, dst, count, "dst"), scalar_expr(dst.dtype, value)});
}

void vec_axpy(const Where& w, const LocalRef& dst, const LocalRef& src, double alpha,
              int64_t count) {
  check_count(w, count);
  if (count == 0) return;
  exec_op(w, "tile.axpy",
          {flat(w, dst, count, "dst"), flat(w, src, count, "src"), scalar_expr(src.dtype, alpha)});
}

namespace {
/// Compare's count must cover whole 256-byte repeats of the sources, and its bitmask one bit
/// per element (asc-devkit Compare: "count * sizeof(T) must be 256-byte aligned").
tl::TileArg compare_dst(const Where& w, const LocalRef& dst, const LocalRef& a, int64_t count) {
  if (count * elem_bytes(a.dtype) % 256 != 0)
    fail(w, fmt::format("count {} of {} is {} bytes, not a multiple of 256", count,
                        tl::dtype_name(a.dtype), count * elem_bytes(a.dtype)));
  LocalRef bits = dst;
  bits.dtype = DType::UInt8;
  bits.count = dst.count * elem_bytes(dst.dtype);
  return flat(w, bits, count / 8, "dst (the bitmask)");
}
}  // namespace

void vec_compare(const Where& w, const LocalRef& dst, const LocalRef& a, const LocalRef& b,
                 const char* mode, int64_t count) {
  check_count(w, count);
  if (count == 0) return;
  exec_op(w, "tile.compare",
          {compare_dst(w, dst, a, count), flat(w, a, count, "src0"), flat(w, b, count, "src1")},
          {{"mode", std::string(mode)}});
}

void vec_compare_scalar(const Where& w, const LocalRef& dst, const LocalRef& a, double b,
                        const char* mode, int64_t count) {
  check_count(w, count);
  if (count == 0) return;
  exec_op(w, "tile.compare",
          {compare_dst(w, dst, a, count), flat(w, a, count, "src0"), scalar_expr(a.dtype, b)},
          {{"mode", std::string(mode)}});
}

namespace {
tl::TileArg select_mask(const Where& w, const LocalRef& mask, int64_t count) {
  LocalRef bits = mask;
  bits.dtype = DType::UInt8;
  bits.count = mask.count * elem_bytes(mask.dtype);
  return flat(w, bits, (count + 7) / 8, "selMask");
}
}  // namespace

void vec_select(const Where& w, const LocalRef& dst, const LocalRef& mask, const LocalRef& a,
                const LocalRef& b, int mode, int64_t count) {
  check_count(w, count);
  if (count == 0) return;
  exec_op(w, "tile.select",
          {flat(w, dst, count, "dst"), select_mask(w, mask, count), flat(w, a, count, "src0"),
           flat(w, b, count, "src1")},
          {{"mode", int64_t{mode}}});
}

void vec_select_scalar(const Where& w, const LocalRef& dst, const LocalRef& mask, const LocalRef& a,
                       double b, int mode, int64_t count) {
  check_count(w, count);
  if (count == 0) return;
  exec_op(w, "tile.select",
          {flat(w, dst, count, "dst"), select_mask(w, mask, count), flat(w, a, count, "src0"),
           scalar_expr(a.dtype, b)},
          {{"mode", int64_t{mode}}});
}

void vec_reduce(const Where& w, const char* op, const LocalRef& dst, const LocalRef& src,
                int64_t rows, int64_t cols, int64_t pitch, bool over_rows) {
  if (rows < 0 || cols < 0) fail(w, fmt::format("shape [{}, {}]", rows, cols));
  if (rows == 0 || cols == 0) return;
  tl::TileArg s = strided(w, src, {rows, cols}, {pitch, 1}, "src");
  exec_op(w, op, {s, flat(w, dst, over_rows ? cols : rows, "dst")},
          {{"dim", int64_t{over_rows ? 0 : -1}}, {"clear", true}});
}

void brcb(const Where& w, const LocalRef& dst, const LocalRef& src, int64_t repeat,
          int64_t dst_blk_stride, int64_t dst_repeat_stride) {
  if (repeat < 0 || repeat > 255) fail(w, fmt::format("repeatTime {} is outside [0, 255]", repeat));
  if (repeat == 0) return;
  // Brcb reads 8 source elements per repeat; a source tensor shorter than that is read into
  // the rest of its last 32-byte block (which UB allocation always leaves it).
  const int64_t per_block = 32 / elem_bytes(src.dtype);
  LocalRef s = src;
  s.count = (src.count + per_block - 1) / per_block * per_block;
  const int64_t blk = dst_blk_stride == 0 ? 1 : dst_blk_stride;
  const int64_t dst_elems = ((repeat - 1) * dst_repeat_stride + 7 * blk + 1) * per_block;
  exec_op(w, "tile.brcb",
          {flat(w, dst, dst_elems, "dst"), flat(w, s, repeat * 8, "src"), tl::Expr(repeat),
           tl::Expr(dst_blk_stride), tl::Expr(dst_repeat_stride)});
}

}  // namespace ascendc_cpu
