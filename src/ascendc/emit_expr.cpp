// The AscendC emitter's scalar expressions: each IR expression as a C++ expression of the
// kernel's scalar code (integer and float arithmetic in the types the chip's scalar unit
// computes, casts, min/max, selects, loads of scalars from memory), with the checks that the
// emitted C++ computes what the virtual NPU computes (fits: an integer result within its type).
// The kernel's skeleton and statements are emit_kernel.cpp's.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "emitter.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/npu/numerics.h"
#include "tl/ops.h"
#include "tl/storage.h"

namespace tl::ascendc {

/// True when the integer operation `b` cannot leave its dtype (so C++ arithmetic in the
/// operands' type is exact, with no overflow): the exact result of the operands' intervals fits.
bool Emitter::fits(const BinaryNode& b) const {
  if (b.op != BinOp::Add && b.op != BinOp::Sub && b.op != BinOp::Mul) {
    return b.op == BinOp::TruncDiv || b.op == BinOp::TruncMod || b.op == BinOp::BitAnd ||
                   b.op == BinOp::BitOr || b.op == BinOp::BitXor
               ? b.a.dtype() == b.dtype && b.b.dtype() == b.dtype && b.dtype != DType::Int8 &&
                     b.dtype != DType::Int16 && b.dtype != DType::UInt8 && b.dtype != DType::UInt16
               : false;
  }
  // C++ computes in the wider operand's type: int32 with int32, or int64 when either is int64
  // (every int64 operand is printed as an int64: its variables are declared so and its
  // immediates written int64_t(v)).
  auto ok = [&](DType t) { return t == DType::Int32 || t == b.dtype; };
  if (b.dtype != DType::Int32 && b.dtype != DType::Int64) return false;
  if (!ok(b.a.dtype()) || !ok(b.b.dtype())) return false;
  const auto x = arith::bound(b.a, ivs_), y = arith::bound(b.b, ivs_);
  const __int128 xs[2] = {x.lo, x.hi}, ys[2] = {y.lo, y.hi};
  const auto r = arith::Interval::of_dtype(b.dtype);
  for (auto u : xs)
    for (auto v : ys) {
      const __int128 z = b.op == BinOp::Add ? u + v : b.op == BinOp::Sub ? u - v : u * v;
      if (z < r.lo || z > r.hi) return false;
    }
  return true;
}

// ---- scalar expressions ----------------------------------------------------------------------
// Integer arithmetic is the IR's (tl/ir.h): evaluated in 64 bits and wrapped to the node's
// dtype, so every integer node is printed with a cast to its C++ type; floor division and
// modulo are the tl_floordiv/tl_floormod helpers the file defines.

std::string Emitter::expr(const Expr& e, const SourceLoc& loc) {
  const DType t = e.dtype();
  if (auto* i = e.as<IntImmNode>()) {
    if (t == DType::Bool) return i->value ? "true" : "false";
    if (t == DType::Int32) return std::to_string(i->value);
    if (t == DType::Int64) return fmt::format("int64_t({})", i->value);
    return fmt::format("{}({})", ctype(t, loc), i->value);
  }
  if (e.as<FloatImmNode>()) return scalar(e, t, loc);
  if (auto* v = e.as<VarNode>()) {
    auto it = vars_.find(v);
    if (it == vars_.end()) unsupported(loc, fmt::format("the unbound variable '{}'", v->name));
    return it->second;
  }
  if (auto* b = e.as<BinaryNode>()) {
    std::string x = expr(b->a, loc), y = expr(b->b, loc);
    const bool fl = is_float(t) || is_float(b->a.dtype());
    if (fl && (b->a.dtype() != DType::Float32 || b->b.dtype() != DType::Float32) &&
        !is_comparison(b->op)) {
      // fp16/bf16 + - * / of two values of the node's dtype: computed in fp32 and rounded once
      // to the dtype, which is the correctly rounded result the VM gives (it rounds the exact
      // double result): fp32's 24 bits are at least 2p + 2 for p = 11 (fp16) and 8 (bf16), so
      // rounding twice gives the same value for these operations (docs/ascendc.md, "Scalar
      // code"). Other operand mixes would round differently: not emitted.
      const bool narrow = t == DType::Float16 || t == DType::BFloat16;
      const bool arith_op =
          b->op == BinOp::Add || b->op == BinOp::Sub || b->op == BinOp::Mul || b->op == BinOp::Div;
      if (!narrow || !arith_op || b->a.dtype() != t || b->b.dtype() != t)
        unsupported(loc, fmt::format("scalar {} arithmetic ({} of {} and {}: only float32 "
                                     "scalars, and + - * / of two {} values, are emitted)",
                                     dtype_name(t), binop_name(b->op), dtype_name(b->a.dtype()),
                                     dtype_name(b->b.dtype()), dtype_name(t)));
      const char* sym = b->op == BinOp::Add   ? "+"
                        : b->op == BinOp::Sub ? "-"
                        : b->op == BinOp::Mul ? "*"
                                              : "/";
      return fmt::format("{}(float({}) {} float({}))", ctype(t, loc), x, sym, y);
    }
    std::string op;
    switch (b->op) {
      case BinOp::Add:
        op = "+";
        break;
      case BinOp::Sub:
        op = "-";
        break;
      case BinOp::Mul:
        op = "*";
        break;
      case BinOp::Div:
        op = "/";
        break;
      case BinOp::TruncDiv:
        op = "/";
        break;
      case BinOp::TruncMod:
        op = "%";
        break;
      case BinOp::EQ:
        op = "==";
        break;
      case BinOp::NE:
        op = "!=";
        break;
      case BinOp::LT:
        op = "<";
        break;
      case BinOp::LE:
        op = "<=";
        break;
      case BinOp::GT:
        op = ">";
        break;
      case BinOp::GE:
        op = ">=";
        break;
      case BinOp::And:
        op = "&&";
        break;
      case BinOp::Or:
        op = "||";
        break;
      case BinOp::BitAnd:
        op = "&";
        break;
      case BinOp::BitOr:
        op = "|";
        break;
      case BinOp::BitXor:
        op = "^";
        break;
      case BinOp::Shl:
        op = "<<";
        break;
      case BinOp::Shr:
        op = ">>";
        break;
      case BinOp::FloorDiv:
      case BinOp::FloorMod: {
        // Non-negative by positive: C++'s truncating / and % are the floor forms.
        const auto ia = arith::bound(b->a, ivs_), ib = arith::bound(b->b, ivs_);
        const bool plain = ia.lo >= 0 && ib.lo > 0;
        const bool d = b->op == BinOp::FloorDiv;
        if (plain) return fmt::format("({} {} {})", x, d ? "/" : "%", y);
        return fmt::format("{}({}({}, {}))", ctype(t, loc), d ? "tl_floordiv" : "tl_floormod", x,
                           y);
      }
      case BinOp::Min:
      case BinOp::Max: {
        if (fl) unsupported(loc, "scalar float min/max (NaN rules)");
        return fmt::format("{}<{}>({}, {})", b->op == BinOp::Min ? "tl_min" : "tl_max",
                           ctype(t, loc), x, y);
      }
    }
    if (is_comparison(b->op) || is_logical(b->op)) return fmt::format("({} {} {})", x, op, y);
    if (fl) return fmt::format("({} {} {})", x, op, y);
    if ((b->op == BinOp::Shl || b->op == BinOp::Shr || b->op == BinOp::TruncDiv ||
         b->op == BinOp::TruncMod) &&
        is_unsigned_int(t) != is_unsigned_int(b->a.dtype()))
      unsupported(loc, "a mixed signed/unsigned shift or division");
    if (fits(*b)) return fmt::format("({} {} {})", x, op, y);
    // The exact result may leave the dtype: 64-bit evaluation, wrapped to the node's dtype
    // (tl/ir.h), as the IR defines it.
    return fmt::format("{}(int64_t({}) {} {})", ctype(t, loc), x, op, y);
  }
  if (auto* n = e.as<NotNode>()) return fmt::format("(!{})", expr(n->a, loc));
  if (auto* s = e.as<SelectNode>())
    return fmt::format("({} ? {} : {})", expr(s->cond, loc), expr(s->t, loc), expr(s->f, loc));
  if (auto* c = e.as<CastNode>()) {
    const DType from = c->value.dtype();
    if (is_float(t) != is_float(from) && !(is_int(from) && t == DType::Float32))
      unsupported(loc, fmt::format("the scalar cast {} -> {} (its rounding)", dtype_name(from),
                                   dtype_name(t)));
    // float -> fp16/bf16: one rounding (nearest even) of the value, as the VM's; an integer
    // source would round twice (through float): not emitted.
    if (is_float(t) && t != DType::Float32 && !is_float(from))
      unsupported(loc, fmt::format("the scalar cast {} -> {}", dtype_name(from), dtype_name(t)));
    if (is_float(from) && from != DType::Float32 && is_float(t))
      return fmt::format("{}(float({}))", ctype(t, loc), expr(c->value, loc));
    return fmt::format("{}({})", ctype(t, loc), expr(c->value, loc));
  }
  if (auto* l = e.as<LoadNode>()) {
    const Buffer& b = l->buffer;
    if (b->scope == MemScope::Var) {
      std::string idx = l->indices.empty() ? "0" : expr(l->indices[0], loc);
      return fmt::format("{}[{}]", name(b), idx);
    }
    if (b->scope != MemScope::GM && b->scope != MemScope::UB)
      unsupported(loc, fmt::format("a scalar read of '{}' in {}", b->name, scope_name(b->scope)));
    // Flat element offset through the buffer's strides.
    Expr off = 0;
    Expr stride = 1;
    for (size_t d = l->indices.size(); d-- > 0;) {
      Expr s = b->strides.empty() ? stride : b->strides[d];
      off = off + l->indices[d] * s;
      stride = stride * b->shape[d];
    }
    // GetValue: LocalTensor / GlobalTensor "GetValue" API pages.
    return fmt::format("{}.GetValue({})", name(b), expr(off, loc));
  }
  if (auto* c = e.as<CallNode>()) unsupported(loc, fmt::format("the scalar intrinsic {}", c->name));
  unsupported(loc, "this scalar expression");
}

std::string Emitter::scalar(const Expr& e, DType t, const SourceLoc& loc) {
  if (auto* fl = e.as<FloatImmNode>()) {
    // The value the virtual NPU uses: the immediate rounded once to the operand's dtype
    // (numerics.h), printed so that it reads back exactly (fp16/bf16 values are floats).
    if (!is_float(t)) {
      const double v = fl->value;
      if (v != std::floor(v)) unsupported(loc, "a fractional immediate for an integer operand");
      return fmt::format("{}({})", ctype(t, loc), static_cast<int64_t>(v));
    }
    uint8_t bits[8] = {};
    npu::from_double(t, fl->value, bits);
    const double v = npu::to_double(t, bits);
    std::string lit;
    if (std::isnan(v))
      lit = "__builtin_nanf(\"\")";
    else if (std::isinf(v))
      lit = v > 0 ? "__builtin_inff()" : "-__builtin_inff()";
    else
      lit = fmt::format("{:.9g}f", v);
    if (lit.find_first_of(".en") == std::string::npos) lit.insert(lit.size() - 1, ".0");
    return t == DType::Float32 ? lit : fmt::format("static_cast<{}>({})", ctype(t, loc), lit);
  }
  std::string s = expr(e, loc);
  if (e.dtype() == t) return s;
  // An fp32 value rounds once to fp16/bf16 (nearest even), as the VM rounds a scalar operand
  // to the op's dtype; from an integer it would round twice (through float).
  if (is_float(t) && t != DType::Float32 && !e.as<IntImmNode>() && e.dtype() != DType::Float32)
    unsupported(loc, fmt::format("a computed {} scalar operand of {}", dtype_name(t),
                                 dtype_name(e.dtype())));
  return fmt::format("static_cast<{}>({})", ctype(t, loc), s);
}

}  // namespace tl::ascendc
