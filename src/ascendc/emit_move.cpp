// T.copy as AscendC data movement, and the operand analysis every tile op's emission shares
// (a region as rows x cols with a row pitch, its element offset, its 32-byte alignment).
//
// Paths (the virtual NPU's semantics of each: src/npu/exec_move.cpp; docs/ascendc.md):
//  - GM <-> UB: DataCopy with DataCopyParams when every row is whole 32-byte blocks on both
//    sides, else DataCopyPad with DataCopyExtParams (+ DataCopyPadExtParams GM -> UB: the
//    row tail up to 32 B gets pad_value when the copy pads);
//  - UB -> UB: DataCopy in count form;
//  - GM -> L1 (ND -> NZ), L1 -> L0A/L0B, L0C -> GM/L1: emit_cube.cpp.
// A layout AscendC's parameters cannot express (a row pitch that is not whole 32-byte blocks on
// the UB side, a region that is not rows evenly spaced) is an error naming the copy.
#include <numeric>

#include "emitter.h"
#include "tl/ir_ops.h"

namespace tl::ascendc {

int64_t known_multiple(const Expr& e) {
  constexpr int64_t kAny = int64_t{1} << 30;
  if (auto c = as_const_int(e)) return *c == 0 ? kAny : std::abs(*c);
  if (auto* b = e.as<BinaryNode>()) {
    const int64_t x = known_multiple(b->a), y = known_multiple(b->b);
    switch (b->op) {
      case BinOp::Add:
      case BinOp::Sub:
        return std::gcd(x, y);
      case BinOp::Mul:
        return std::min<int64_t>(x * y, kAny);
      default:
        return 1;
    }
  }
  if (auto* c = e.as<CastNode>()) return is_int(c->dtype) ? known_multiple(c->value) : 1;
  return 1;
}

Operand Emitter::operand(const TileOpNode& n, int index) {
  const TileArg& a = n.args.at(static_cast<size_t>(index));
  if (!a.is_region())
    unsupported(n.loc, fmt::format("T.{} with a scalar '{}'", n.op->name,
                                   n.op->operands[static_cast<size_t>(index)].name));
  Operand o;
  o.buf = a.region.buffer;
  const Buffer& b = o.buf;
  const size_t nd = b->shape.size();
  if (a.region.partial() || a.region.ranges.size() != nd)
    unsupported(n.loc, fmt::format("T.{}: the unresolved region of '{}'", n.op->name, b->name));
  o.strides.resize(nd);
  Expr stride = 1;
  for (size_t d = nd; d-- > 0;) {
    o.strides[d] = b->strides.empty() ? stride : b->strides[d];
    stride = stride * b->shape[d];
  }
  o.offset = 0;
  o.rows = 1;
  for (size_t d = 0; d < nd; ++d) {
    o.starts.push_back(a.region.ranges[d].min);
    o.extents.push_back(a.region.ranges[d].extent);
    o.offset = o.offset + a.region.ranges[d].min * o.strides[d];
    if (d + 1 < nd) o.rows = o.rows * a.region.ranges[d].extent;
  }
  if (nd == 0) unsupported(n.loc, fmt::format("T.{}: a 0-d operand", n.op->name));
  if (!is_const(o.strides[nd - 1], 1))
    unsupported(n.loc, fmt::format("T.{}: '{}' whose last dimension is not contiguous", n.op->name,
                                   b->name));
  o.cols = o.extents[nd - 1];
  // The dimensions that step between rows: every leading one whose extent is not 1. They
  // must merge into one evenly spaced sequence of rows.
  std::vector<size_t> steps;
  for (size_t d = 0; d + 1 < nd; ++d)
    if (!is_const(o.extents[d], 1)) steps.push_back(d);
  if (steps.empty()) {
    o.pitch = o.cols;
  } else {
    bool merges = true;
    for (size_t i = 0; i + 1 < steps.size(); ++i) {
      const size_t d = steps[i], e = steps[i + 1];
      auto sd = as_const_int(o.strides[d]), se = as_const_int(o.strides[e]);
      auto xe = as_const_int(o.extents[e]);
      if (e != d + 1 || !sd || !se || !xe || *sd != *se * *xe) merges = false;
    }
    if (merges) o.pitch = o.strides[steps.back()];
  }
  o.contiguous =
      steps.empty() || (o.pitch.defined() && as_const_int(o.pitch) && as_const_int(o.cols) &&
                        *as_const_int(o.pitch) == *as_const_int(o.cols));
  return o;
}

std::string Emitter::at(const Operand& o, const Expr& extra) {
  Expr off = extra.defined() ? o.offset + extra : o.offset;
  if (is_const(off, 0)) return name(o.buf);
  return fmt::format("{}[{}]", name(o.buf), expr(off, o.buf->loc));
}

std::string Emitter::sub(const std::string& n, const Expr& offset, const SourceLoc& loc) {
  if (is_const(offset, 0)) return n;
  return fmt::format("{}[{}]", n, expr(offset, loc));
}

bool Emitter::aligned(const Operand& o, const Expr& elems, int64_t bytes) const {
  const int64_t es = dtype_bytes(o.buf->dtype);
  const int64_t addr = o.buf->scope == MemScope::GM ? 0 : o.buf->address;
  if (addr < 0 || addr % bytes != 0) return false;
  return (known_multiple(elems) * es) % bytes == 0;
}

void Emitter::emit_copy(const TileOpNode& n) {
  const SourceLoc& loc = n.loc;
  Operand src = operand(n, 0), dst = operand(n, 1);
  const MemScope S = src.buf->scope, D = dst.buf->scope;
  if ((S == MemScope::GM && D == MemScope::L1) ||
      (S == MemScope::L1 && (D == MemScope::L0A || D == MemScope::L0B)) || S == MemScope::L0C) {
    if (emit_cube(n)) return;
  }
  const std::string what = fmt::format("T.copy {} -> {} ('{}' -> '{}')", scope_name(S),
                                       scope_name(D), src.buf->name, dst.buf->name);
  if (src.buf->dtype != dst.buf->dtype) unsupported(loc, what + " converting dtypes");
  for (const auto* a : {"enable_relu", "transpose"})
    if (n.attr(a) && n.attr_bool(a)) unsupported(loc, fmt::format("{} with {}", what, a));
  const DType t = src.buf->dtype;
  const int64_t es = dtype_bytes(t);
  const std::string T = ctype(t, loc);

  if (S == MemScope::UB && D == MemScope::UB) {
    // DataCopy UB -> UB, count form ("DataCopy" API page, 基础数据搬运): whole 32 B blocks.
    auto numel = const_product(src.extents);
    if (!src.contiguous || !dst.contiguous || !numel || (*numel * es) % 32 != 0 ||
        !aligned(src, src.offset, 32) || !aligned(dst, dst.offset, 32))
      unsupported(loc, what + " that is not one run of whole 32-byte blocks");
    line(fmt::format("AscendC::DataCopy({}, {}, {});", at(dst), at(src), *numel), loc);
    return;
  }
  const bool in = S == MemScope::GM && D == MemScope::UB;
  const bool out = S == MemScope::UB && D == MemScope::GM;
  if (!in && !out) unsupported(loc, what);
  const Operand& gm = in ? src : dst;
  const Operand& ub = in ? dst : src;
  if (!as_const_int(gm.cols) || !as_const_int(ub.cols)) {
    // One UB -> GM row of a clipped length (with or without pad) first; every other run-time
    // width (GM -> UB needs the padded copy) through the general form.
    if (!in && emit_clipped_row(n, gm, ub, in)) return;
    emit_copy_dynamic_width(n, src, dst, in);
    return;
  }
  auto cols = as_const_int(gm.cols);
  if (!cols || !as_const_int(ub.cols) || *as_const_int(ub.cols) != *cols)
    unsupported(loc, what + " whose rows differ in length between the sides (or are dynamic)");
  if (!gm.pitch.defined() || !ub.pitch.defined())
    unsupported(loc, what + " over a region that is not evenly spaced rows");
  if (!aligned(ub, ub.offset, 32)) unsupported(loc, what + " at a UB offset not 32-byte aligned");
  const int64_t row_bytes = *cols * es, row_blocks = (row_bytes + 31) / 32;
  auto ub_pitch = as_const_int(ub.pitch);
  const bool one_row = is_const(gm.rows, 1);
  if (!one_row && (!ub_pitch || (*ub_pitch * es) % 32 != 0 || *ub_pitch * es < row_blocks * 32))
    unsupported(loc, what +
                         ": the UB rows are not whole 32-byte blocks apart (DataCopy/"
                         "DataCopyPad place each row at a block boundary)");
  // Block counts are at most 4095 (DataCopyParams/DataCopyExtParams): the UB buffer's rows
  // (its elements over its last dimension) bound them.
  auto ub_elems = const_product(ub.buf->shape);
  auto ub_last = as_const_int(ub.buf->shape.back());
  if (!ub_elems || !ub_last || (!one_row && *ub_elems / std::max<int64_t>(*ub_last, 1) > 4095))
    unsupported(loc, what + " of possibly more than 4095 rows");
  const int64_t ub_gap_blocks = one_row ? 0 : (*ub_pitch * es - row_blocks * 32) / 32;
  const std::string rows = expr(gm.rows, loc);
  auto gm_pitch = as_const_int(gm.pitch);
  const bool whole = row_bytes % 32 == 0;
  if (whole && (one_row || (gm_pitch && (*gm_pitch * es) % 32 == 0 &&
                            (*gm_pitch - *cols) * es / 32 <= 65535))) {
    // DataCopy with DataCopyParams{blockCount, blockLen, srcStride, dstStride}, lengths and
    // gaps in 32-byte blocks ("DataCopy" API page, 基础数据搬运 / DataCopyParams).
    const int64_t gm_gap = one_row ? 0 : (*gm_pitch - *cols) * es / 32;
    if (one_row || (gm_gap == 0 && ub_gap_blocks == 0 && gm.contiguous && ub.contiguous)) {
      line(fmt::format("AscendC::DataCopy({}, {}, {});", at(dst), at(src),
                       one_row ? fmt::format("{}", *cols) : fmt::format("{} * {}", rows, *cols)),
           loc);
      return;
    }
    line(fmt::format("AscendC::DataCopy({}, {}, AscendC::DataCopyParams({}, {}, {}, {}));", at(dst),
                     at(src), rows, row_bytes / 32, in ? gm_gap : ub_gap_blocks,
                     in ? ub_gap_blocks : gm_gap),
         loc);
    return;
  }
  // DataCopyPad ("DataCopyPad" API page): DataCopyExtParams{blockCount, blockLen (bytes),
  // srcStride, dstStride, rsv}: GM gaps in bytes, UB gaps in 32-byte blocks.
  std::string gm_gap = one_row ? "0" : expr((gm.pitch - gm.cols) * es, loc);
  if (in) {
    const bool pad = n.attr("pad") && n.attr_bool("pad");
    const int64_t right = (row_blocks * 32 - row_bytes) / es;
    std::string pad_value = "0";
    if (pad)
      pad_value = scalar(FloatImmNode::make(DType::Float64, n.attr_float("pad_value")), t, loc);
    // DataCopyPadExtParams<T>{isPad, leftPadding, rightPadding (elements), paddingValue}.
    line(fmt::format("AscendC::DataCopyPad({}, {}, AscendC::DataCopyExtParams({}, {}, {}, {}, 0), "
                     "AscendC::DataCopyPadExtParams<{}>({}, 0, {}, {}));",
                     at(dst), at(src), rows, row_bytes, gm_gap, ub_gap_blocks, T,
                     pad ? "true" : "false", pad ? right : 0, pad_value),
         loc);
  } else {
    line(fmt::format("AscendC::DataCopyPad({}, {}, AscendC::DataCopyExtParams({}, {}, {}, {}, 0));",
                     at(dst), at(src), rows, row_bytes, ub_gap_blocks, gm_gap),
         loc);
  }
}

/// A GM <-> UB copy whose row length is a run-time value (a tile clipped at a tensor's last
/// column: `T.min(N - j * bN, bN)`), always the padded copy: DataCopyPad with
/// DataCopyExtParams{blockCount, blockLen, srcStride, dstStride} ("DataCopyPad" API page:
/// blockLen in bytes, [1, 2097151]; GM gaps in bytes, UB gaps in 32-byte blocks) and, GM -> UB,
/// DataCopyPadExtParams{isPad, 0, rightPadding, paddingValue} (rightPadding: the elements from
/// the row's end to its 32-byte boundary, at most 32 bytes' worth), every length computed in the
/// kernel from the run-time width. The UB rows keep their buffer's pitch, whole 32-byte blocks.
/// A width whose bounds are not positive runs under `if (width > 0)` (blockLen starts at 1).
void Emitter::emit_copy_dynamic_width(const TileOpNode& n, const Operand& src, const Operand& dst,
                                      bool in) {
  const SourceLoc& loc = n.loc;
  const Operand& gm = in ? src : dst;
  const Operand& ub = in ? dst : src;
  const std::string what =
      fmt::format("T.copy {} -> {} ('{}' -> '{}') of a run-time width", scope_name(src.buf->scope),
                  scope_name(dst.buf->scope), src.buf->name, dst.buf->name);
  const DType t = src.buf->dtype;
  const int64_t es = dtype_bytes(t);
  auto d = arith::constant_difference(gm.cols, ub.cols, ivs_);
  if (!d || *d != 0) unsupported(loc, what + " whose rows differ in length between the sides");
  // DataCopyPad moves any row length; a copy the compiler did not mark padded would be the
  // VM's error for a row that is not whole 32-byte blocks, which the emitted code would not be.
  if (!(n.attr("pad") && n.attr_bool("pad")))
    unsupported(loc, what + " without pad (rows of any length need the padded copy)");
  if (!gm.pitch.defined() || !ub.pitch.defined())
    unsupported(loc, what + " over a region that is not evenly spaced rows");
  if (!aligned(ub, ub.offset, 32)) unsupported(loc, what + " at a UB offset not 32-byte aligned");
  auto ub_pitch = as_const_int(ub.pitch);
  const auto width = arith::bound(gm.cols, ivs_);
  const bool one_row = is_const(gm.rows, 1);
  if (!one_row && (!ub_pitch || (*ub_pitch * es) % 32 != 0))
    unsupported(loc, what + ": the UB rows are not whole 32-byte blocks apart");
  const int64_t ub_row_bytes = one_row ? (width.hi * es + 31) / 32 * 32 : *ub_pitch * es;
  if (width.hi * es > std::min<int64_t>(2097151, ub_row_bytes))
    unsupported(loc, what + " possibly longer than its UB row (or 2097151 bytes, blockLen)");
  // Block counts are at most 4095: the UB buffer's rows bound them.
  auto ub_elems = const_product(ub.buf->shape);
  auto ub_last = as_const_int(ub.buf->shape.back());
  if (!ub_elems || !ub_last || (!one_row && *ub_elems / std::max<int64_t>(*ub_last, 1) > 4095))
    unsupported(loc, what + " of possibly more than 4095 rows");
  // The row in bytes, and its 32-byte blocks in UB.
  const Expr bytes = gm.cols * ci(es);
  const Expr blocks32 = floordiv(bytes + 31, 32) * 32;
  const std::string len = expr(bytes, loc);
  const std::string gm_gap = one_row ? "0" : expr((gm.pitch - gm.cols) * ci(es), loc);
  const std::string ub_gap = one_row ? "0" : expr(floordiv(ci(ub_row_bytes) - blocks32, 32), loc);
  if (width.lo < 1) open(fmt::format("if ({} > 0)", expr(gm.cols, loc)), loc);
  if (in) {
    // The row's tail up to its 32-byte boundary gets pad_value, as the VM's padded copy does.
    const std::string pad_value =
        scalar(FloatImmNode::make(DType::Float64, n.attr_float("pad_value")), t, loc);
    line(fmt::format("AscendC::DataCopyPad({}, {}, AscendC::DataCopyExtParams({}, {}, {}, {}, 0), "
                     "AscendC::DataCopyPadExtParams<{}>(true, 0, {}, {}));",
                     at(dst), at(src), expr(gm.rows, loc), len, gm_gap, ub_gap, ctype(t, loc),
                     expr(floordiv(blocks32 - bytes, ci(es)), loc), pad_value),
         loc);
  } else {
    line(fmt::format("AscendC::DataCopyPad({}, {}, AscendC::DataCopyExtParams({}, {}, {}, {}, 0));",
                     at(dst), at(src), expr(gm.rows, loc), len, ub_gap, gm_gap),
         loc);
  }
  if (width.lo < 1) close();
}

void Emitter::emit_dcci(const TileOpNode& n) {
  // DataCacheCleanAndInvalid ("DataCacheCleanAndInvalid" API page,
  // https://www.hiascend.com/document/detail/en/canncommercial/850/API/ascendcopapi/atlasascendc_api_07_0177.html):
  // the scalar unit reaches GM through its core's data cache, so a scalar load of bytes another
  // core or DMA wrote, and a scalar store another core or DMA reads, need the lines written back
  // and dropped (docs/virtual_npu.md, "Hazard checker"). CACHELINE_OUT: coherence with GM.
  const SourceLoc& loc = n.loc;
  const TileArg& a = n.args.at(0);
  if (!a.is_region() || a.region.partial()) unsupported(loc, "T.dcci of an unresolved region");
  const Buffer& b = a.region.buffer;
  if (b->scope != MemScope::GM) unsupported(loc, "T.dcci of on-chip memory");
  const std::string t = ctype(b->dtype, loc);
  if (n.attr("entire") && n.attr_bool("entire")) {
    line(fmt::format("AscendC::DataCacheCleanAndInvalid<{}, AscendC::CacheLine::ENTIRE_DATA_CACHE, "
                     "AscendC::DcciDst::CACHELINE_OUT>({});",
                     t, name(b)),
         loc);
    return;
  }
  // SINGLE_CACHE_LINE acts on the 64-byte line of the address passed, and only from that address
  // to the line's end when it is not 64-byte aligned (the page), so every line from the one of
  // the region's first element to the one of its last is passed by its aligned start.
  const size_t nd = b->shape.size();
  Expr first = 0, last = 0, stride = 1;
  for (size_t d = nd; d-- > 0;) {
    const Expr s = b->strides.empty() ? stride : b->strides[d];
    const Range& r = a.region.ranges[d];
    first = first + r.min * s;
    last = last + (r.min + r.extent - 1) * s;
    stride = stride * b->shape[d];
  }
  const std::string lo = fresh("tl_dcci_lo", true), hi = fresh("tl_dcci_hi", true),
                    ln = fresh("tl_dcci_line", true), g = fresh("tl_dcci_gm", true);
  open("", loc);
  line(fmt::format("const uint64_t {} = reinterpret_cast<uint64_t>({}.GetPhyAddr()) / 64 * 64;", lo,
                   sub(name(b), first, loc)),
       loc);
  line(fmt::format("const uint64_t {} = reinterpret_cast<uint64_t>({}.GetPhyAddr());", hi,
                   sub(name(b), last, loc)),
       loc);
  open(fmt::format("for (uint64_t {0} = {1}; {0} <= {2}; {0} += 64)", ln, lo, hi), loc);
  line(fmt::format("AscendC::GlobalTensor<uint8_t> {};", g), loc);
  line(fmt::format("{}.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t*>({}), 64);", g, ln), loc);
  line(fmt::format(
           "AscendC::DataCacheCleanAndInvalid<uint8_t, AscendC::CacheLine::SINGLE_CACHE_LINE, "
           "AscendC::DcciDst::CACHELINE_OUT>({});",
           g),
       loc);
  close();
  close();
}

}  // namespace tl::ascendc
