// Interval bounds of integer expressions. Each operator's exact result interval is computed
// in 128 bits from its operands' intervals; when it fits the node's dtype, wrapping cannot
// happen and the interval stands, otherwise the dtype's full range is the only sound answer.
#include <algorithm>
#include <initializer_list>

#include "interval_math.h"

namespace tl::arith {

using detail::i128;
using detail::Wide;

Interval Interval::of_dtype(DType t) {
  return {dtype_min(t), dtype_max(t)};
}

namespace detail {
namespace {

Wide hull(std::initializer_list<i128> xs) {
  Wide w{*xs.begin(), *xs.begin()};
  for (i128 x : xs) {
    w.lo = std::min(w.lo, x);
    w.hi = std::max(w.hi, x);
  }
  return w;
}

/// Quotients at the corners of `a` x (each sign part of `b`): x / y is monotone in x and, for
/// y of one sign, in y, and floor/trunc preserve that order.
std::optional<Wide> divide(BinOp op, const Interval& a, const Interval& b) {
  std::optional<Wide> out;
  auto part = [&](i128 ylo, i128 yhi) {
    if (ylo > yhi) return;
    for (i128 x : {i128(a.lo), i128(a.hi)})
      for (i128 y : {ylo, yhi}) {
        i128 q = op == BinOp::FloorDiv ? floordiv(x, y) : x / y;
        if (!out) out = Wide{q, q};
        out->lo = std::min(out->lo, q);
        out->hi = std::max(out->hi, q);
      }
  };
  part(std::max<i128>(b.lo, 1), b.hi);
  part(b.lo, std::min<i128>(b.hi, -1));
  if (!out) return Wide{0, 0};  // the divisor is always zero: every evaluation fails
  return out;
}

/// The remainder lies strictly between -|y| and |y|, with the divisor's sign (floor) or the
/// dividend's sign (trunc); for a non-negative dividend it is also at most the dividend.
Wide remainder(BinOp op, const Interval& a, const Interval& b) {
  if (op == BinOp::FloorMod) {
    if (b.lo == b.hi && b.lo > 0 && floordiv(a.lo, b.lo) == floordiv(a.hi, b.lo))  // one period
      return {floormod(a.lo, b.lo), floormod(a.hi, b.lo)};
    i128 lo = b.lo <= -1 ? i128(b.lo) + 1 : 0, hi = b.hi >= 1 ? i128(b.hi) - 1 : 0;
    if (a.lo >= 0 && b.lo >= 0) hi = std::min<i128>(hi, a.hi);
    return {lo, hi};
  }
  i128 m = std::max(abs128(b.lo), abs128(b.hi)) - 1;
  i128 lo = a.lo >= 0 ? 0 : std::max<i128>(-m, a.lo), hi = a.hi <= 0 ? 0 : std::min<i128>(m, a.hi);
  return {std::min<i128>(lo, 0), std::max<i128>(hi, 0)};
}

int bit_length(int64_t v) {  // v >= 0
  int n = 0;
  while (v > 0) {
    ++n;
    v >>= 1;
  }
  return n;
}

}  // namespace

std::optional<Wide> exact_binary(BinOp op, const Interval& a, const Interval& b) {
  const i128 al = a.lo, ah = a.hi, bl = b.lo, bh = b.hi;
  switch (op) {
    case BinOp::Add:
      return Wide{al + bl, ah + bh};
    case BinOp::Sub:
      return Wide{al - bh, ah - bl};
    case BinOp::Mul:
      return hull({al * bl, al * bh, ah * bl, ah * bh});
    case BinOp::Div:
    case BinOp::TruncDiv:
    case BinOp::FloorDiv:
      return divide(op, a, b);
    case BinOp::FloorMod:
    case BinOp::TruncMod:
      return remainder(op, a, b);
    case BinOp::Min:
      return Wide{std::min(al, bl), std::min(ah, bh)};
    case BinOp::Max:
      return Wide{std::max(al, bl), std::max(ah, bh)};
    case BinOp::Shl:
      if (bl < 0 || bh > 63) return std::nullopt;  // the amount would be taken modulo 64
      return hull(
          {al * (i128(1) << bl), al * (i128(1) << bh), ah * (i128(1) << bl), ah * (i128(1) << bh)});
    case BinOp::Shr:
      if (bl < 0 || bh > 63) return std::nullopt;
      return hull({al >> int(bl), al >> int(bh), ah >> int(bl), ah >> int(bh)});
    case BinOp::BitAnd:  // clearing bits of a non-negative value keeps it in [0, value]
      if (al >= 0 && bl >= 0) return Wide{0, std::min(ah, bh)};
      if (al >= 0) return Wide{0, ah};
      if (bl >= 0) return Wide{0, bh};
      return std::nullopt;
    case BinOp::BitOr:
    case BinOp::BitXor: {
      if (al < 0 || bl < 0) return std::nullopt;
      i128 top = (i128(1) << bit_length(std::max(a.hi, b.hi))) - 1;
      return Wide{op == BinOp::BitOr ? std::max(al, bl) : 0, top};
    }
    default:
      return std::nullopt;  // comparisons and logic: bool results, see bound_binary
  }
}

Interval bound_binary(BinOp op, DType t, const Interval& a, const Interval& b) {
  auto truth = [](bool always, bool never) -> Interval {
    if (always) return {1, 1};
    if (never) return {0, 0};
    return {0, 1};
  };
  auto nonzero = [](const Interval& x) { return x.lo > 0 || x.hi < 0; };
  auto zero = [](const Interval& x) { return x.lo == 0 && x.hi == 0; };
  switch (op) {
    case BinOp::EQ:
      return truth(a.is_point() && b.is_point() && a.lo == b.lo, a.hi < b.lo || b.hi < a.lo);
    case BinOp::NE:
      return truth(a.hi < b.lo || b.hi < a.lo, a.is_point() && b.is_point() && a.lo == b.lo);
    case BinOp::LT:
      return truth(a.hi < b.lo, a.lo >= b.hi);
    case BinOp::LE:
      return truth(a.hi <= b.lo, a.lo > b.hi);
    case BinOp::GT:
      return truth(a.lo > b.hi, a.hi <= b.lo);
    case BinOp::GE:
      return truth(a.lo >= b.hi, a.hi < b.lo);
    case BinOp::And:
      return truth(nonzero(a) && nonzero(b), zero(a) || zero(b));
    case BinOp::Or:
      return truth(nonzero(a) || nonzero(b), zero(a) && zero(b));
    default:
      break;
  }
  auto w = exact_binary(op, a, b);
  return w ? narrow(*w, t) : Interval::of_dtype(t);
}

Interval bound_cast(DType t, DType from, const Interval& a) {
  if (is_bool(t)) return {a.lo > 0 || a.hi < 0 ? 1 : 0, a.lo == 0 && a.hi == 0 ? 0 : 1};
  if (is_float(from) || is_float(t)) return Interval::of_dtype(t);
  return narrow(widen(a), t);
}

}  // namespace detail

namespace {

class Bounder {
 public:
  explicit Bounder(const VarIntervals& vars) : vars_(vars) {}

  Interval of(const Expr& e) {
    DType t = e.dtype();
    switch (e.kind()) {
      case ExprKind::IntImm:
        return Interval::point(wrap(t, static_cast<const IntImmNode*>(e.get())->value));
      case ExprKind::Var: {
        Interval d = Interval::of_dtype(t);
        auto it = vars_.find(static_cast<const VarNode*>(e.get()));
        if (it == vars_.end()) return d;
        Interval r{std::max(it->second.lo, d.lo), std::min(it->second.hi, d.hi)};
        return r.lo <= r.hi ? r : d;  // no value is possible: any answer is sound
      }
      case ExprKind::Binary: {
        auto* n = static_cast<const BinaryNode*>(e.get());
        if (is_float(n->a.dtype()) || is_float(n->b.dtype())) return Interval::of_dtype(t);
        Interval a = of(n->a), b = of(n->b);
        return detail::bound_binary(n->op, t, a, b);
      }
      case ExprKind::Not: {
        const Expr& a = static_cast<const NotNode*>(e.get())->a;
        if (is_float(a.dtype())) return {0, 1};
        Interval x = of(a);
        return {x.lo == 0 && x.hi == 0 ? 1 : 0, x.lo > 0 || x.hi < 0 ? 0 : 1};
      }
      case ExprKind::Select: {
        auto* n = static_cast<const SelectNode*>(e.get());
        if (is_float(t)) return Interval::of_dtype(t);
        Interval c = of(n->cond);
        Interval x = detail::bound_cast(t, n->t.dtype(), of(n->t));
        Interval y = detail::bound_cast(t, n->f.dtype(), of(n->f));
        if (c.lo > 0 || c.hi < 0) return x;
        if (c.lo == 0 && c.hi == 0) return y;
        return {std::min(x.lo, y.lo), std::max(x.hi, y.hi)};
      }
      case ExprKind::Cast: {
        auto* n = static_cast<const CastNode*>(e.get());
        if (is_float(t) || is_float(n->value.dtype())) return Interval::of_dtype(t);
        return detail::bound_cast(t, n->value.dtype(), of(n->value));
      }
      default:
        return Interval::of_dtype(t);  // floats, loads, calls, strings
    }
  }

 private:
  const VarIntervals& vars_;
};

}  // namespace

Interval bound(const Expr& e, const VarIntervals& vars) {
  return Bounder(vars).of(e);
}

}  // namespace tl::arith
