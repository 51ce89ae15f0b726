// Expression builders with constant folding of integer immediates and trivial identities.
#include "tl/ir_ops.h"

#include <cmath>
#include <limits>

namespace tl {
namespace {

std::optional<int64_t> ci(const Expr& e) { return as_const_int(e); }

int64_t floordiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floormod_i(int64_t a, int64_t b) { return a - floordiv_i(a, b) * b; }

Expr int_of(const Expr& like_a, const Expr& like_b, int64_t v) {
  DType t = (like_a.dtype() == DType::Int64 || like_b.dtype() == DType::Int64) ? DType::Int64
                                                                               : like_a.dtype();
  return IntImmNode::make(t, v);
}

/// Folds integer immediates; returns an undefined Expr when nothing folds.
Expr fold(BinOp op, const Expr& a, const Expr& b) {
  auto x = ci(a), y = ci(b);
  if (!is_int(a.dtype()) || !is_int(b.dtype())) return {};
  if (x && y) {
    int64_t u = *x, v = *y;
    switch (op) {
      case BinOp::Add: return int_of(a, b, u + v);
      case BinOp::Sub: return int_of(a, b, u - v);
      case BinOp::Mul: return int_of(a, b, u * v);
      case BinOp::FloorDiv: if (v != 0) return int_of(a, b, floordiv_i(u, v)); break;
      case BinOp::FloorMod: if (v != 0) return int_of(a, b, floormod_i(u, v)); break;
      case BinOp::TruncDiv: if (v != 0) return int_of(a, b, u / v); break;
      case BinOp::TruncMod: if (v != 0) return int_of(a, b, u % v); break;
      case BinOp::Min: return int_of(a, b, std::min(u, v));
      case BinOp::Max: return int_of(a, b, std::max(u, v));
      default: break;
    }
    return {};
  }
  // Identities that keep printed index math short.
  if (y && *y == 0 && (op == BinOp::Add || op == BinOp::Sub)) return a;
  if (x && *x == 0 && op == BinOp::Add) return b;
  if (y && *y == 1 && (op == BinOp::Mul || op == BinOp::FloorDiv || op == BinOp::TruncDiv)) return a;
  if (x && *x == 1 && op == BinOp::Mul) return b;
  if (((x && *x == 0) || (y && *y == 0)) && op == BinOp::Mul) return int_of(a, b, 0);
  if (y && *y == 1 && (op == BinOp::FloorMod || op == BinOp::TruncMod)) return int_of(a, b, 0);
  return {};
}

Expr bin(BinOp op, Expr a, Expr b) {
  if (Expr f = fold(op, a, b); f.defined()) return f;
  return BinaryNode::make(op, std::move(a), std::move(b));
}
Expr int_or_float_div(BinOp int_op, Expr a, Expr b) {
  bool flt = is_float(a.dtype()) || is_float(b.dtype());
  return bin(flt ? BinOp::Div : int_op, std::move(a), std::move(b));
}
Expr call1(const char* name, Expr x) {
  DType t = x.dtype();
  return CallNode::make(t, name, {std::move(x)});
}
}  // namespace

Expr operator+(Expr a, Expr b) { return bin(BinOp::Add, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return bin(BinOp::Sub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return bin(BinOp::Mul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return int_or_float_div(BinOp::FloorDiv, std::move(a), std::move(b)); }
Expr operator%(Expr a, Expr b) { return bin(BinOp::FloorMod, std::move(a), std::move(b)); }
Expr operator-(Expr a) {
  if (auto v = ci(a)) return IntImmNode::make(a.dtype(), -*v);
  if (auto* f = a.as<FloatImmNode>()) return FloatImmNode::make(a.dtype(), -f->value);
  Expr zero = is_float(a.dtype()) ? FloatImmNode::make(a.dtype(), 0.0) : IntImmNode::make(a.dtype(), 0);
  return BinaryNode::make(BinOp::Sub, zero, std::move(a));
}
Expr operator==(Expr a, Expr b) { return BinaryNode::make(BinOp::EQ, std::move(a), std::move(b)); }
Expr operator!=(Expr a, Expr b) { return BinaryNode::make(BinOp::NE, std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return BinaryNode::make(BinOp::LT, std::move(a), std::move(b)); }
Expr operator<=(Expr a, Expr b) { return BinaryNode::make(BinOp::LE, std::move(a), std::move(b)); }
Expr operator>(Expr a, Expr b) { return BinaryNode::make(BinOp::GT, std::move(a), std::move(b)); }
Expr operator>=(Expr a, Expr b) { return BinaryNode::make(BinOp::GE, std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b) { return BinaryNode::make(BinOp::And, std::move(a), std::move(b)); }
Expr operator||(Expr a, Expr b) { return BinaryNode::make(BinOp::Or, std::move(a), std::move(b)); }
Expr operator!(Expr a) { return NotNode::make(std::move(a)); }

Expr floordiv(Expr a, Expr b) { return bin(BinOp::FloorDiv, std::move(a), std::move(b)); }
Expr floormod(Expr a, Expr b) { return bin(BinOp::FloorMod, std::move(a), std::move(b)); }
Expr truncdiv(Expr a, Expr b) { return bin(BinOp::TruncDiv, std::move(a), std::move(b)); }
Expr truncmod(Expr a, Expr b) { return bin(BinOp::TruncMod, std::move(a), std::move(b)); }
Expr ceildiv(Expr a, Expr b) {
  auto x = ci(a), y = ci(b);
  if (x && y && *y != 0) return int_of(a, b, floordiv_i(*x + *y - 1, *y));
  return floordiv(a + b - 1, b);
}
Expr min(Expr a, Expr b) { return bin(BinOp::Min, std::move(a), std::move(b)); }
Expr max(Expr a, Expr b) { return bin(BinOp::Max, std::move(a), std::move(b)); }
Expr select(Expr c, Expr t, Expr f) { return SelectNode::make(std::move(c), std::move(t), std::move(f)); }
Expr cast(DType t, Expr v) {
  if (v.dtype() == t) return v;
  return CastNode::make(t, std::move(v));
}
Expr bitwise_and(Expr a, Expr b) { return BinaryNode::make(BinOp::BitAnd, std::move(a), std::move(b)); }
Expr bitwise_or(Expr a, Expr b) { return BinaryNode::make(BinOp::BitOr, std::move(a), std::move(b)); }
Expr bitwise_xor(Expr a, Expr b) { return BinaryNode::make(BinOp::BitXor, std::move(a), std::move(b)); }
Expr shift_left(Expr a, Expr b) { return BinaryNode::make(BinOp::Shl, std::move(a), std::move(b)); }
Expr shift_right(Expr a, Expr b) { return BinaryNode::make(BinOp::Shr, std::move(a), std::move(b)); }

Expr imm(DType t, double v) {
  if (is_float(t)) return FloatImmNode::make(t, v);
  return IntImmNode::make(t, static_cast<int64_t>(v));
}
Expr inf(DType t) { return FloatImmNode::make(t, std::numeric_limits<double>::infinity()); }
Expr neg_inf(DType t) { return FloatImmNode::make(t, -std::numeric_limits<double>::infinity()); }

Expr exp(Expr x) { return call1("exp", std::move(x)); }
Expr log(Expr x) { return call1("log", std::move(x)); }
Expr sqrt(Expr x) { return call1("sqrt", std::move(x)); }
Expr rsqrt(Expr x) { return call1("rsqrt", std::move(x)); }
Expr abs(Expr x) { return call1("abs", std::move(x)); }
Expr sigmoid(Expr x) { return call1("sigmoid", std::move(x)); }
Expr pow(Expr x, Expr y) {
  DType t = x.dtype();
  return CallNode::make(t, "pow", {std::move(x), std::move(y)});
}

int intrinsic_arity(std::string_view name) {
  for (const char* n : {"exp", "log", "sqrt", "rsqrt", "abs", "sigmoid"})
    if (name == n) return 1;
  if (name == "pow") return 2;
  return -1;
}

}  // namespace tl
