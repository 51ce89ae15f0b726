// Constant folding by the IR's rules: the result dtype of a binary operator (BinaryNode::make
// uses it too) and folders that compute with the evaluator's operator semantics (eval.cpp),
// so a folded immediate is exactly the value the unfolded node evaluates to, in its dtype.
#include "tl/arith.h"

namespace tl::arith {

namespace {
bool int_like(DType t) {
  return is_int(t) || is_bool(t);
}

/// The held value of an integer or bool immediate.
std::optional<int64_t> int_imm(const Expr& e) {
  if (!e.defined() || e.kind() != ExprKind::IntImm || !int_like(e.dtype())) return std::nullopt;
  return wrap(e.dtype(), static_cast<const IntImmNode*>(e.get())->value);
}

bool is_division(BinOp op) {
  return op == BinOp::Div || op == BinOp::FloorDiv || op == BinOp::FloorMod ||
         op == BinOp::TruncDiv || op == BinOp::TruncMod;
}
}  // namespace

Expr make_int(DType t, int64_t v) {
  TL_ASSERT(int_like(t), "make_int of dtype {}", dtype_name(t));
  return is_bool(t) ? Expr::make_bool(v != 0) : IntImmNode::make(t, wrap(t, v));
}

Expr make_const(DType t, const Value& v) {
  if (is_float(t)) return FloatImmNode::make(t, v.as_double());
  return make_int(t, cast_value(t, v).i);
}

Expr fold_binary(BinOp op, const Expr& a, const Expr& b) {
  auto x = int_imm(a), y = int_imm(b);
  if (!x || !y) return {};
  DType t = binary_dtype(op, a.dtype(), b.dtype());
  auto r = int_binary(op, t, *x, *y);
  return r ? make_int(t, *r) : Expr();
}

Expr fold_cast(DType t, const Expr& v) {
  auto x = int_imm(v);
  if (!x || !int_like(t)) return {};
  return make_int(t, cast_value(t, Value::of_int(*x)).i);
}

Expr fold_not(const Expr& a) {
  auto x = int_imm(a);
  return x ? Expr::make_bool(*x == 0) : Expr();
}

bool can_fail(const Expr& e) {
  if (!e.defined()) return false;
  switch (e.kind()) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::Var:
      return false;
    case ExprKind::Binary: {
      auto* n = static_cast<const BinaryNode*>(e.get());
      bool flt = is_float(n->a.dtype()) || is_float(n->b.dtype());
      if (flt && n->op >= BinOp::BitAnd) return true;  // floats have no bitwise operators
      if (is_division(n->op) && !flt) {
        auto d = int_imm(n->b);
        if (!d || *d == 0) return true;
      }
      return can_fail(n->a) || can_fail(n->b);
    }
    case ExprKind::Not:
      return can_fail(static_cast<const NotNode*>(e.get())->a);
    case ExprKind::Select: {
      auto* n = static_cast<const SelectNode*>(e.get());
      return can_fail(n->cond) || can_fail(n->t) || can_fail(n->f);
    }
    case ExprKind::Cast:
      return can_fail(static_cast<const CastNode*>(e.get())->value);
    default:
      return true;  // loads (bounds), calls (arity, names), strings
  }
}

}  // namespace tl::arith
