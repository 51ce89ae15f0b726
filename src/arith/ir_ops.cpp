// Expression builders with constant folding of integer immediates and trivial identities.
// Folding is arith's (tl/arith.h): a folded immediate has the value and dtype the unfolded
// node would evaluate to, wrapping included.
#include "tl/ir_ops.h"

#include <cmath>
#include <limits>

#include "tl/arith.h"

namespace tl {
namespace {

/// The held value of an integer immediate (not bool: identities are for index arithmetic).
std::optional<int64_t> ci(const Expr& e) {
  if (e.kind() != ExprKind::IntImm || !is_int(e.dtype())) return std::nullopt;
  return arith::wrap(e.dtype(), e.as<IntImmNode>()->value);
}

/// Identities that keep printed index math short (x + 0, x * 1, x // 1, x * 0, x % 1), only
/// where the result has the node's value and dtype: x * 0 and x % 1 drop x, so x must not be
/// able to fail. Undefined when none applies.
Expr identity(BinOp op, const Expr& a, const Expr& b) {
  if (!a.defined() || !b.defined() || !is_int(a.dtype()) || !is_int(b.dtype())) return {};
  DType t = arith::binary_dtype(op, a.dtype(), b.dtype());
  auto x = ci(a), y = ci(b);
  if (y && *y == 0 && (op == BinOp::Add || op == BinOp::Sub) && a.dtype() == t) return a;
  if (x && *x == 0 && op == BinOp::Add && b.dtype() == t) return b;
  if (y && *y == 1 && (op == BinOp::Mul || op == BinOp::FloorDiv || op == BinOp::TruncDiv) &&
      a.dtype() == t)
    return a;
  if (x && *x == 1 && op == BinOp::Mul && b.dtype() == t) return b;
  if (op == BinOp::Mul &&
      ((x && *x == 0 && !arith::can_fail(b)) || (y && *y == 0 && !arith::can_fail(a))))
    return arith::make_int(t, 0);
  if (y && *y == 1 && (op == BinOp::FloorMod || op == BinOp::TruncMod) && !arith::can_fail(a))
    return arith::make_int(t, 0);
  return {};
}

/// `a op b`, folded when both sides are integer immediates (arith::fold_binary: the value the
/// node evaluates to, in the node's dtype) or simplified by an identity.
Expr bin(BinOp op, Expr a, Expr b) {
  if (Expr f = arith::fold_binary(op, a, b); f.defined()) return f;
  if (Expr f = identity(op, a, b); f.defined()) return f;
  return BinaryNode::make(op, std::move(a), std::move(b));
}
Expr int_or_float_div(BinOp int_op, Expr a, Expr b) {
  bool flt = is_float(a.dtype()) || is_float(b.dtype());
  return bin(flt ? BinOp::Div : int_op, std::move(a), std::move(b));
}
}  // namespace

Expr operator+(Expr a, Expr b) {
  return bin(BinOp::Add, std::move(a), std::move(b));
}
Expr operator-(Expr a, Expr b) {
  return bin(BinOp::Sub, std::move(a), std::move(b));
}
Expr operator*(Expr a, Expr b) {
  return bin(BinOp::Mul, std::move(a), std::move(b));
}
Expr operator/(Expr a, Expr b) {
  return int_or_float_div(BinOp::FloorDiv, std::move(a), std::move(b));
}
Expr operator%(Expr a, Expr b) {
  return bin(BinOp::FloorMod, std::move(a), std::move(b));
}
Expr operator-(Expr a) {
  if (auto* f = a.as<FloatImmNode>()) return FloatImmNode::make(a.dtype(), -f->value);
  // A float is negated by flipping its sign: `x * -1`, exact in IEEE for every x (+-0, inf,
  // NaN, subnormals), and what the chip does (the vector unit's Muls by -1, the scalar unit's
  // multiply). `0 - x` was wrong for x = +0: it gave +0, so 1 / -x was +inf instead of -inf.
  if (is_float(a.dtype())) {
    DType t = a.dtype();
    return BinaryNode::make(BinOp::Mul, std::move(a), FloatImmNode::make(t, -1.0));
  }
  Expr zero = arith::make_int(a.dtype(), 0);
  if (Expr r = arith::fold_binary(BinOp::Sub, zero, a); r.defined()) return r;  // -INT_MIN wraps
  return BinaryNode::make(BinOp::Sub, zero, std::move(a));
}
Expr operator==(Expr a, Expr b) {
  return bin(BinOp::EQ, std::move(a), std::move(b));
}
Expr operator!=(Expr a, Expr b) {
  return bin(BinOp::NE, std::move(a), std::move(b));
}
Expr operator<(Expr a, Expr b) {
  return bin(BinOp::LT, std::move(a), std::move(b));
}
Expr operator<=(Expr a, Expr b) {
  return bin(BinOp::LE, std::move(a), std::move(b));
}
Expr operator>(Expr a, Expr b) {
  return bin(BinOp::GT, std::move(a), std::move(b));
}
Expr operator>=(Expr a, Expr b) {
  return bin(BinOp::GE, std::move(a), std::move(b));
}
Expr operator&&(Expr a, Expr b) {
  return bin(BinOp::And, std::move(a), std::move(b));
}
Expr operator||(Expr a, Expr b) {
  return bin(BinOp::Or, std::move(a), std::move(b));
}
Expr operator!(Expr a) {
  return NotNode::make(std::move(a));
}

Expr floordiv(Expr a, Expr b) {
  return bin(BinOp::FloorDiv, std::move(a), std::move(b));
}
Expr floormod(Expr a, Expr b) {
  return bin(BinOp::FloorMod, std::move(a), std::move(b));
}
Expr truncdiv(Expr a, Expr b) {
  return bin(BinOp::TruncDiv, std::move(a), std::move(b));
}
Expr truncmod(Expr a, Expr b) {
  return bin(BinOp::TruncMod, std::move(a), std::move(b));
}
Expr ceildiv(Expr a, Expr b) {
  return floordiv(a + b - 1, b);
}
Expr min(Expr a, Expr b) {
  return bin(BinOp::Min, std::move(a), std::move(b));
}
Expr max(Expr a, Expr b) {
  return bin(BinOp::Max, std::move(a), std::move(b));
}
Expr select(Expr c, Expr t, Expr f) {
  return SelectNode::make(std::move(c), std::move(t), std::move(f));
}
Expr cast(DType t, Expr v) {
  if (v.dtype() == t) return v;
  // An integer constant folds like the operators do: to the value the cast evaluates to.
  if (Expr f = arith::fold_cast(t, v); f.defined()) return f;
  return CastNode::make(t, std::move(v));
}
Expr bitwise_and(Expr a, Expr b) {
  return bin(BinOp::BitAnd, std::move(a), std::move(b));
}
Expr bitwise_or(Expr a, Expr b) {
  return bin(BinOp::BitOr, std::move(a), std::move(b));
}
Expr bitwise_xor(Expr a, Expr b) {
  return bin(BinOp::BitXor, std::move(a), std::move(b));
}
Expr shift_left(Expr a, Expr b) {
  return bin(BinOp::Shl, std::move(a), std::move(b));
}
Expr shift_right(Expr a, Expr b) {
  return bin(BinOp::Shr, std::move(a), std::move(b));
}

Expr imm(DType t, double v) {
  // A float literal holds the value of its dtype, as a cast would give it: T.float16(0.1) is
  // 0.0999755859375. Unrounded, it would read as a wider value than its dtype holds, and the
  // vectoriser refuses such an operand (its float32 result could round twice).
  if (is_float(t)) return FloatImmNode::make(t, arith::round_float(t, v));
  return arith::make_const(t, arith::Value::of_float(v));  // as a cast: toward zero, wrapped
}
Expr inf(DType t) {
  return FloatImmNode::make(t, std::numeric_limits<double>::infinity());
}
Expr neg_inf(DType t) {
  return FloatImmNode::make(t, -std::numeric_limits<double>::infinity());
}

namespace {
const std::vector<IntrinsicDef>& intrinsic_table() {
  static const std::vector<IntrinsicDef> table = {
#define TL_INTRINSIC(Id, name, arity, dtypes, scalar, vector_op, exact)  \
  {Intrinsic::Id,                                                        \
   name,                                                                 \
   arity,                                                                \
   IntrinsicDTypes::dtypes,                                              \
   [](double x, [[maybe_unused]] double y) -> double { return scalar; }, \
   IntrinsicExact::exact},
#include "tl/intrinsics.def"
  };
  return table;
}
}  // namespace

const std::vector<IntrinsicDef>& intrinsics() {
  return intrinsic_table();
}
const IntrinsicDef* find_intrinsic(std::string_view name) {
  for (const IntrinsicDef& d : intrinsic_table())
    if (d.name == name) return &d;
  return nullptr;
}
const IntrinsicDef& intrinsic_def(Intrinsic id) {
  return intrinsic_table()[static_cast<size_t>(id)];
}
Expr call(Intrinsic id, std::vector<Expr> args) {
  const IntrinsicDef& d = intrinsic_def(id);
  TL_ASSERT(static_cast<int>(args.size()) == d.arity, "T.{} takes {} argument(s), got {}", d.name,
            d.arity, args.size());
  const DType t = args[0].dtype();  // before `args` is moved from
  return CallNode::make(t, std::string(d.name), std::move(args));
}

Expr exp(Expr x) {
  return call(Intrinsic::Exp, {std::move(x)});
}
Expr log(Expr x) {
  return call(Intrinsic::Log, {std::move(x)});
}
Expr sqrt(Expr x) {
  return call(Intrinsic::Sqrt, {std::move(x)});
}
Expr rsqrt(Expr x) {
  return call(Intrinsic::Rsqrt, {std::move(x)});
}
Expr abs(Expr x) {
  return call(Intrinsic::Abs, {std::move(x)});
}
Expr sigmoid(Expr x) {
  return call(Intrinsic::Sigmoid, {std::move(x)});
}
Expr pow(Expr x, Expr y) {
  return call(Intrinsic::Pow, {std::move(x), std::move(y)});
}

}  // namespace tl
