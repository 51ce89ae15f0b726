// The vector unit's tile ops as AscendC calls (operands in UB, pipe V). The virtual NPU's
// semantics of each op (src/npu/exec_vector.cpp, exec_reduce_sort.cpp) model the AscendC API
// named here, so the mapping is one op to the API it models:
//  - elementwise binary/unary ops, fill, cast: the count form `Op(dst, src..., count)` when
//    every operand is one run, else one call per row (rows 32-byte aligned);
//  - a scalar second operand: Adds/Muls/Maxs/Mins (Sub as Adds of the negation, exact);
//  - row_expand_OP(dst, src0, src1): Brcb spreads src1's values one per 32-byte block into a
//    UB scratch, then OP in the mask/repeat form with src1's block and repeat strides 0 reads
//    each row's value for every element of the row;
//  - reductions: emit_reduce.cpp;
//  - broadcast of a row to every row of a tile: a DataCopy UB -> UB per row.
// The API pages cited are asc-devkit's (docs/api/context/<Name>.md).
#include "emitter.h"
#include "tl/ir_ops.h"
#include "tl/ops.h"

namespace tl::ascendc {
namespace {

int arg_index(const TileOpNode& n, std::string_view operand) {
  for (size_t i = 0; i < n.op->operands.size(); ++i)
    if (n.op->operands[i].name == operand) return static_cast<int>(i);
  TL_ASSERT(false, "op {} has no operand {}", n.op->name, operand);
  return -1;
}

bool has_load(const Expr& e) {
  if (!e.defined()) return false;
  if (e.as<LoadNode>()) return true;
  if (auto* b = e.as<BinaryNode>()) return has_load(b->a) || has_load(b->b);
  if (auto* c = e.as<CastNode>()) return has_load(c->value);
  if (auto* s = e.as<SelectNode>()) return has_load(s->cond) || has_load(s->t) || has_load(s->f);
  if (auto* n = e.as<NotNode>()) return has_load(n->a);
  if (auto* c = e.as<CallNode>()) {
    for (const auto& a : c->args)
      if (has_load(a)) return true;
  }
  return false;
}

struct BinaryApi {
  const OpDef* op;
  const char* tensor;  // Add ("Add" API page)
  const char* scalar;  // Adds ("Adds" API page); nullptr: no scalar form
};

}  // namespace

bool Emitter::emit_vector(const TileOpNode& n) {
  using namespace ops::tile;
  const SourceLoc& loc = n.loc;
  static const BinaryApi binaries[] = {
      {&add(), "Add", "Adds"},          {&ops::tile::sub(), "Sub", "Adds"},
      {&mul(), "Mul", "Muls"},          {&div(), "Div", nullptr},
      {&max(), "Max", "Maxs"},          {&min(), "Min", "Mins"},
      {&bitwise_and(), "And", nullptr}, {&bitwise_or(), "Or", nullptr}};
  static const std::pair<const OpDef*, const char*> unaries[] = {
      {&exp(), "Exp"},   {&ln(), "Ln"},       {&abs(), "Abs"},  {&reciprocal(), "Reciprocal"},
      {&sqrt(), "Sqrt"}, {&rsqrt(), "Rsqrt"}, {&relu(), "Relu"}};
  static const std::pair<const OpDef*, const char*> row_expands[] = {
      {&row_expand_add(), "Add"}, {&row_expand_sub(), "Sub"}, {&row_expand_mul(), "Mul"},
      {&row_expand_div(), "Div"}, {&row_expand_max(), "Max"}, {&row_expand_min(), "Min"}};
  // The elementwise shape: `tiles` share rows x cols; one call when all are one run, else a
  // loop over the rows. `call(offsets...)` gets each tile's start expression and the count.
  auto elementwise = [&](std::vector<Operand> tiles, const std::string& fn,
                         const std::string& tail_args, const std::string& what) {
    const Operand& d = tiles[0];
    for (const auto& t : tiles) {
      if (!aligned(t, t.offset, 32))
        unsupported(
            loc, fmt::format("{} with '{}' at an offset not 32-byte aligned", what, t.buf->name));
    }
    bool one_run = true;
    for (const auto& t : tiles) one_run = one_run && t.contiguous;
    auto numel = const_product(d.extents);
    if (one_run) {
      std::string args;
      for (const auto& t : tiles) args += at(t) + ", ";
      Expr count = d.rows * d.cols;
      line(fmt::format("AscendC::{}({}{}{});", fn, args, tail_args, expr(count, loc)), loc);
      return;
    }
    (void)numel;
    for (const auto& t : tiles) {
      if (!t.pitch.defined() || !aligned(t, t.pitch, 32))
        unsupported(
            loc, fmt::format("{} over '{}' whose rows are not 32-byte aligned", what, t.buf->name));
    }
    const std::string rv = fresh("tl_r", true);
    open(fmt::format("for (int32_t {0} = 0; {0} < {1}; ++{0})", rv, expr(d.rows, loc)), loc);
    Var rvar(rv, DType::Int32);
    bind_row(rvar, rv, d.rows);
    std::string args;
    for (const auto& t : tiles) args += at(t, rvar * t.pitch) + ", ";
    line(fmt::format("AscendC::{}({}{}{});", fn, args, tail_args, expr(d.cols, loc)), loc);
    close();
    vars_.erase(rvar.node());
  };

  for (const auto& b : binaries) {
    if (n.op != b.op) continue;
    const int i0 = arg_index(n, "src0"), i1 = arg_index(n, "src1");
    Operand dst = operand(n, 0), s0 = operand(n, i0);
    const DType t = dst.buf->dtype;
    const std::string what = "T." + n.op->name;
    if (n.args[static_cast<size_t>(i1)].is_region() && dtype_bytes(t) == 1) {
      // And / Or of 8-bit tiles ("And", "Or" pages: int16 / uint16 lanes): the bytes
      // reinterpreted as int16, ceil(n / 2) lanes; bitwise, so exact on the n bytes. The
      // verifier's byte-bitwise rule keeps an odd n's extra byte in the buffer's padding.
      Operand s1 = operand(n, i1);
      for (const Operand* o : {&dst, &s0, &s1}) {
        if (!o->contiguous || !aligned(*o, o->offset, 32))
          unsupported(loc, fmt::format("{} of 8-bit tiles over '{}', not one 32-byte aligned run",
                                       what, o->buf->name));
      }
      auto v16 = [&](const Operand& o) { return at(o) + ".ReinterpretCast<int16_t>()"; };
      line(fmt::format("AscendC::{}({}, {}, {}, {});", b.tensor, v16(dst), v16(s0), v16(s1),
                       expr(floordiv(dst.rows * dst.cols + 1, 2), loc)),
           loc);
      return true;
    }
    if (n.args[static_cast<size_t>(i1)].is_region()) {
      elementwise({dst, s0, operand(n, i1)}, b.tensor, "", what);
      return true;
    }
    const Expr& s = n.args[static_cast<size_t>(i1)].scalar;
    if (!b.scalar) unsupported(loc, what + " with a scalar operand (AscendC has no scalar form)");
    // A scalar read from UB/GM: read by the scalar unit first (emit_activation.cpp).
    std::string v = has_load(s) ? memory_scalar(s, t, loc) : scalar(s, t, loc);
    // a - s == a + (-s) exactly (IEEE negation; two's-complement wrap for integers).
    if (n.op == &ops::tile::sub()) {
      if (auto* fl = s.as<FloatImmNode>())
        v = scalar(FloatImmNode::make(fl->dtype, -fl->value), t, loc);
      else if (t == DType::Float32)
        v = fmt::format("-({})", v);
      else if (is_float(t))  // negated as float (exact), the call takes the tile's type
        v = fmt::format("static_cast<{}>(-({}))", ctype(t, loc), v);
      else
        v = fmt::format("{}(-int64_t({}))", ctype(t, loc), v);
    }
    elementwise({dst, s0}, b.scalar, v + ", ", what);
    return true;
  }
  // MulAddDst ("MulAddDst" API page): dst = src0 * src1 + dst, count form; half / float.
  static const OpDef* const mul_add_dst = find_op("tile.mul_add_dst");
  if (n.op == mul_add_dst) {
    elementwise({operand(n, 0), operand(n, arg_index(n, "src0")), operand(n, arg_index(n, "src1"))},
                "MulAddDst", "", "T.tile.mul_add_dst");
    return true;
  }
  for (const auto& [op, fn] : unaries) {
    if (n.op != op) continue;
    elementwise({operand(n, 0), operand(n, arg_index(n, "src"))}, fn, "", "T." + n.op->name);
    return true;
  }
  if (n.op == &fill()) {
    Operand dst = operand(n, 0);
    const Expr& v = n.args[static_cast<size_t>(arg_index(n, "value"))].scalar;
    const DType t = dst.buf->dtype;
    const std::string value = has_load(v) ? memory_scalar(v, t, loc) : scalar(v, t, loc);
    // Duplicate ("Duplicate" API page): dst = scalar, count form.
    elementwise({dst}, "Duplicate", value + ", ", "T.tile.fill");
    return true;
  }
  if (n.op == &compare() || n.op == &select()) {
    // Compare/Compares ("Compare" API page: CMPMODE, a uint8 bitmask, one bit per element) and
    // Select ("Select" API page: SELMODE 1 tensor-scalar, 2 tensor-tensor), count form over
    // whole runs (count * sizeof a multiple of 256 bytes: the verifier's rule).
    const bool cmp = n.op == &compare();
    const std::string what = "T." + n.op->name;
    Operand dst = operand(n, 0), s0 = operand(n, arg_index(n, "src0"));
    Operand mask = cmp ? dst : operand(n, arg_index(n, "mask"));
    const TileArg& a1 = n.args[static_cast<size_t>(arg_index(n, "src1"))];
    std::vector<Operand> tiles = {dst, s0};
    if (!cmp) tiles.push_back(mask);
    if (a1.is_region()) tiles.push_back(operand(n, arg_index(n, "src1")));
    for (const auto& t : tiles)
      if (!t.contiguous || !aligned(t, t.offset, 32))
        unsupported(loc,
                    fmt::format("{} over '{}', not one 32-byte aligned run", what, t.buf->name));
    const DType t = s0.buf->dtype;
    std::string src1;
    if (a1.is_region()) {
      src1 = at(tiles.back());
    } else {
      src1 = has_load(a1.scalar) ? memory_scalar(a1.scalar, t, loc) : scalar(a1.scalar, t, loc);
    }
    const std::string count = expr(s0.rows * s0.cols, loc);
    if (cmp) {
      line(fmt::format("AscendC::{}({}, {}, {}, AscendC::CMPMODE::{}, {});",
                       a1.is_region() ? "Compare" : "Compares", at(dst), at(s0), src1,
                       n.attr_str("mode"), count),
           loc);
      return true;
    }
    const int64_t mode = n.attr_int("mode");
    if (mode != 1 && mode != 2)
      unsupported(loc, fmt::format("{} mode {} (mask reused per repeat)", what, mode));
    if ((mode == 2) != a1.is_region())
      unsupported(loc, fmt::format("{} mode {} with a {} src1", what, mode,
                                   a1.is_region() ? "tile" : "scalar"));
    line(fmt::format("AscendC::Select({}, {}, {}, {}, AscendC::SELMODE::{}, {});", at(dst),
                     at(mask), at(s0), src1,
                     mode == 2 ? "VSEL_TENSOR_TENSOR_MODE" : "VSEL_TENSOR_SCALAR_MODE", count),
         loc);
    return true;
  }
  if (n.op == &axpy()) {
    // Axpy ("Axpy" API page): dst += scalar * src, the scalar of src's type, count form.
    Operand dst = operand(n, 0), src = operand(n, arg_index(n, "src"));
    const Expr& a = n.args[static_cast<size_t>(arg_index(n, "alpha"))].scalar;
    const DType t = src.buf->dtype;
    const std::string alpha = has_load(a) ? memory_scalar(a, t, loc) : scalar(a, t, loc);
    elementwise({dst, src}, "Axpy", alpha + ", ", "T.tile.axpy");
    return true;
  }
  if (n.op == &cast()) {
    // Cast ("Cast" API page): RoundMode CAST_NONE/RINT/FLOOR/CEIL/ROUND/TRUNC/ODD, count form.
    const std::string mode = n.attr_str("mode");
    elementwise({operand(n, 0), operand(n, arg_index(n, "src"))}, "Cast",
                fmt::format("AscendC::RoundMode::{}, ", mode), "T.tile.cast");
    return true;
  }
  for (const auto& [op, fn] : row_expands) {
    if (n.op != op) continue;
    const std::string what = "T." + n.op->name;
    Operand dst = operand(n, 0), s0 = operand(n, 1);
    if (!n.args[2].is_region()) unsupported(loc, what + " with a scalar src1");
    Operand s1 = operand(n, 2);
    const DType t = dst.buf->dtype;
    const int64_t es = dtype_bytes(t), per_block = 32 / es, per_repeat = 256 / es;
    auto rows = as_const_int(dst.rows), cols = as_const_int(dst.cols);
    if (!rows || !cols) unsupported(loc, what + " of dynamic shape");
    if (!s1.contiguous || !aligned(s1, s1.offset, 32))
      unsupported(loc, what + ": src1 is not one 32-byte aligned run");
    for (const Operand* o : {&dst, &s0})
      if (!o->pitch.defined() || !aligned(*o, o->offset, 32) || !aligned(*o, o->pitch, 32))
        unsupported(
            loc, fmt::format("{}: the rows of '{}' are not 32-byte aligned", what, o->buf->name));
    const int64_t full = *cols / per_repeat, rest = *cols % per_repeat;
    if (full > 255) unsupported(loc, what + " over rows of more than 255 repeats");
    const int64_t brcb_repeats = (*rows + 7) / 8;
    if (brcb_repeats > 255) unsupported(loc, what + " over more than 2040 rows");
    const std::string tmp = ub_scratch(t, brcb_repeats * 8 * 32, loc);
    // Brcb ("Brcb" API page): each of 8 source elements per repeat fills one 32-byte block.
    // The scratch is written and read by the vector pipe: barriers against the previous
    // user of the scratch and between the two calls (the hazard checker's rule for V -> V).
    line("AscendC::PipeBarrier<PIPE_V>();", loc);
    line(fmt::format("AscendC::Brcb({}, {}, {}, AscendC::BrcbRepeatParams(1, 8));", tmp, at(s1),
                     brcb_repeats),
         loc);
    line("AscendC::PipeBarrier<PIPE_V>();", loc);
    const std::string rv = fresh("tl_r", true);
    open(fmt::format("for (int32_t {0} = 0; {0} < {1}; ++{0})", rv, *rows), loc);
    Var rvar(rv, DType::Int32);
    bind_row(rvar, rv, dst.rows);
    // OP with a mask (consecutive elements) and repeats; BinaryRepeatParams{dstBlkStride,
    // src0BlkStride, src1BlkStride, dstRepStride, src0RepStride, src1RepStride}: src1 strides
    // 0 re-read the row's block ("Add" API page, 高维切分计算; "BinaryRepeatParams").
    const std::string params = "AscendC::BinaryRepeatParams(1, 1, 0, 8, 8, 0)";
    const std::string b1 = fmt::format("{}[{} * {}]", tmp, rv, per_block);
    if (full > 0)
      line(fmt::format("AscendC::{}({}, {}, {}, {}, {}, {});", fn, at(dst, rvar * dst.pitch),
                       at(s0, rvar * s0.pitch), b1, per_repeat, full, params),
           loc);
    if (rest > 0)
      line(fmt::format("AscendC::{}({}, {}, {}, {}, 1, {});", fn,
                       at(dst, rvar * dst.pitch + ci(full * per_repeat)),
                       at(s0, rvar * s0.pitch + ci(full * per_repeat)), b1, rest, params),
           loc);
    close();
    vars_.erase(rvar.node());
    return true;
  }
  if (n.op == &broadcast()) {
    Operand dst = operand(n, 0), src = operand(n, arg_index(n, "src"));
    auto dn = const_product(dst.extents), sn = const_product(src.extents);
    auto cols = as_const_int(dst.cols);
    const int64_t es = dtype_bytes(dst.buf->dtype);
    auto drows = as_const_int(dst.rows);
    // axis=1 reads a one-dimensional source as the column [n, 1] (tl/shape_rules.h).
    const bool column =
        is_const(src.cols, 1) || (n.attr_int("axis") == 1 && sn && drows && *sn == *drows);
    if (dn && sn && cols && drows && column && *sn == *drows && *cols > 1) {
      // A column ([R, 1] -> [R, C]): Brcb writes each of 8 source elements into one block per
      // repeat; with the block stride one dst row and the repeat stride eight, one Brcb call per
      // 32-byte column block of dst fills that block of every row ("Brcb" API page). Exact: it
      // moves bytes. A last repeat would write 8 rows, so R must be a multiple of 8.
      const int64_t pb =
          dst.pitch.defined() && as_const_int(dst.pitch) ? *as_const_int(dst.pitch) * es / 32 : -1;
      if (!src.contiguous || !aligned(src, src.offset, 32) || !aligned(dst, dst.offset, 32) ||
          (*cols * es) % 32 != 0 || !dst.pitch.defined() || !aligned(dst, dst.pitch, 32) ||
          pb <= 0 || *drows % 8 != 0 || *drows / 8 > 255 || 8 * pb > 65535)
        unsupported(loc,
                    "T.tile.broadcast of a column other than rows of whole 32-byte blocks, "
                    "a multiple of 8 rows");
      for (int64_t j = 0; j < *cols * es / 32; ++j)
        line(fmt::format("AscendC::Brcb({}, {}, {}, AscendC::BrcbRepeatParams({}, {}));",
                         at(dst, ci(j * 32 / es)), at(src), *drows / 8, pb, 8 * pb),
             loc);
      return true;
    }
    if (!dn || !sn || !cols || !src.contiguous || *sn != *cols || (*cols * es) % 32 != 0 ||
        !dst.pitch.defined() || !aligned(dst, dst.pitch, 32) || !aligned(dst, dst.offset, 32) ||
        !aligned(src, src.offset, 32))
      unsupported(loc, "T.tile.broadcast other than one 32-byte aligned row to every row");
    // DataCopy UB -> UB ("DataCopy" API page): the row copied into each row of dst.
    const std::string rv = fresh("tl_r", true);
    open(fmt::format("for (int32_t {0} = 0; {0} < {1}; ++{0})", rv, expr(dst.rows, loc)), loc);
    Var rvar(rv, DType::Int32);
    bind_row(rvar, rv, dst.rows);
    line(fmt::format("AscendC::DataCopy({}, {}, {});", at(dst, rvar * dst.pitch), at(src), *cols),
         loc);
    close();
    vars_.erase(rvar.node());
    return true;
  }
  return false;
}

}  // namespace tl::ascendc
