// Modular sets of integer expressions: value = coeff * k + base. Coefficients combine by the
// usual rules (sum: gcd; product: gcd of the cross terms; division by a constant that divides
// the coefficient). Wrapping to an n-bit dtype subtracts a multiple of 2^n, so when an
// operation may wrap (its exact interval leaves the dtype, interval_math.h) only the
// power-of-two part of the coefficient, at most 2^n, survives.
#include <algorithm>

#include "interval_math.h"

namespace tl::arith {

using detail::i128;
using detail::Wide;

bool ModularSet::contains(int64_t v) const {
  if (coeff == 0) return v == base;
  return detail::floormod(i128(v) - base, coeff) == 0;
}

namespace {

/// A modular set in 128 bits (coeff >= 0) with the value's interval.
struct Facts {
  i128 coeff, base;
  Interval iv;
};

i128 lowest_bit(i128 c) {
  return c & -c;
}

/// `v` wrapped to dtype t, from 128 bits (the low 64 bits are the two's-complement value).
int64_t wrap128(i128 v, DType t) {
  return wrap(t, static_cast<int64_t>(static_cast<uint64_t>(v)));
}

/// The facts of a value computed as `coeff * k + base` (exactly, in range `exact` if known),
/// then wrapped to `t` with interval `iv`.
Facts settle(i128 coeff, i128 base, const std::optional<Wide>& exact, DType t, Interval iv) {
  if (iv.is_point()) return {0, iv.lo, iv};
  if (is_bool(t)) return {1, 0, iv};  // v != 0 is not a modular reduction
  coeff = detail::abs128(coeff);
  bool wraps = !exact || !detail::fits(*exact, t);
  if (coeff == 0) return wraps ? Facts{0, wrap128(base, t), iv} : Facts{0, base, iv};
  i128 cap = i128(1) << std::min(dtype_bits(t), 62);
  if (wraps || coeff > cap)
    coeff = std::min(lowest_bit(coeff), cap);  // a divisor of coeff: still sound
  return {coeff, detail::floormod(base, coeff), iv};
}

/// Values of either set.
Facts join(const Facts& a, const Facts& b, Interval iv) {
  i128 c = detail::gcd128(detail::gcd128(a.coeff, b.coeff), a.base - b.base);
  if (c == 0) return {0, a.base, iv};
  if (c > (i128(1) << 62)) c = std::min(lowest_bit(c), i128(1) << 62);  // two far-apart constants
  return {c, detail::floormod(a.base, c), iv};
}

class Modular {
 public:
  Modular(const VarModular& mods, const VarIntervals& vars) : mods_(mods), vars_(vars) {}

  Facts of(const Expr& e) {
    DType t = e.dtype();
    switch (e.kind()) {
      case ExprKind::Var: {
        Interval iv = bound(e, vars_);
        auto it = mods_.find(static_cast<const VarNode*>(e.get()));
        if (it == mods_.end()) return settle(1, 0, Wide{iv.lo, iv.hi}, t, iv);
        return settle(it->second.coeff, it->second.base, Wide{iv.lo, iv.hi}, t, iv);
      }
      case ExprKind::Binary: {
        auto* n = static_cast<const BinaryNode*>(e.get());
        if (is_float(n->a.dtype()) || is_float(n->b.dtype()) || is_float(t)) break;
        return binary(n->op, t, of(n->a), of(n->b));
      }
      case ExprKind::Select: {
        auto* n = static_cast<const SelectNode*>(e.get());
        if (is_float(t)) break;
        Interval c = bound(n->cond, vars_);
        Facts x = convert(of(n->t), n->t.dtype(), t), y = convert(of(n->f), n->f.dtype(), t);
        if (c.lo > 0 || c.hi < 0) return x;
        if (c.lo == 0 && c.hi == 0) return y;
        return join(x, y, bound(e, vars_));
      }
      case ExprKind::Cast: {
        auto* n = static_cast<const CastNode*>(e.get());
        if (is_float(t) || is_float(n->value.dtype())) break;
        return convert(of(n->value), n->value.dtype(), t);
      }
      default:
        break;
    }
    Interval iv = bound(e, vars_);  // immediates, and what has no modular structure
    return settle(1, 0, Wide{iv.lo, iv.hi}, t, iv);
  }

 private:
  /// A value of dtype `from` converted to integer or bool dtype `t` (an integer cast wraps).
  static Facts convert(const Facts& f, DType from, DType t) {
    Interval iv = detail::bound_cast(t, from, f.iv);
    return settle(f.coeff, f.base, Wide{f.iv.lo, f.iv.hi}, t, iv);
  }

  static Facts binary(BinOp op, DType t, const Facts& a, const Facts& b) {
    Interval iv = detail::bound_binary(op, t, a.iv, b.iv);
    auto exact = detail::exact_binary(op, a.iv, b.iv);
    if (a.coeff == 0 && b.coeff == 0) {  // two constants: the value itself
      auto r = int_binary(op, t, static_cast<int64_t>(a.base), static_cast<int64_t>(b.base));
      if (!r) return {1, 0, iv};  // a division by zero: no evaluation succeeds
      return {0, *r, Interval::point(*r)};
    }
    const bool k_known = b.coeff == 0 && b.base != 0;  // a non-zero constant right operand
    switch (op) {
      case BinOp::Add:
        return settle(detail::gcd128(a.coeff, b.coeff), a.base + b.base, exact, t, iv);
      case BinOp::Sub:
        return settle(detail::gcd128(a.coeff, b.coeff), a.base - b.base, exact, t, iv);
      case BinOp::Mul: {
        i128 c =
            detail::gcd128(detail::gcd128(a.coeff * b.coeff, a.coeff * b.base), b.coeff * a.base);
        return settle(c, a.base * b.base, exact, t, iv);
      }
      case BinOp::Shl: {
        if (b.coeff != 0) break;
        i128 scale = i128(1) << int(b.base & 63);
        return settle(a.coeff * scale, a.base * scale, exact, t, iv);
      }
      case BinOp::Div:
      case BinOp::TruncDiv:
      case BinOp::FloorDiv: {
        if (!k_known || a.coeff == 0 || a.coeff % b.base != 0) break;
        // (c * j + r) / k = (c / k) * j + r / k when k divides c, for floor division; a
        // truncating division rounds the same way when the quotient is never negative.
        bool floor_like =
            op == BinOp::FloorDiv || (a.iv.lo >= 0 && b.base > 0) || (a.iv.hi <= 0 && b.base < 0);
        if (!floor_like) break;
        return settle(a.coeff / b.base, detail::floordiv(a.base, b.base), exact, t, iv);
      }
      case BinOp::FloorMod:
      case BinOp::TruncMod:
        if (!k_known) break;
        if (op == BinOp::FloorMod && a.coeff % b.base == 0) {  // x % k depends on x mod k only
          i128 r = detail::floormod(a.base, b.base);
          return settle(0, r, Wide{r, r}, t, iv);
        }
        // x - k * q keeps x's residue modulo any divisor of k.
        return settle(detail::gcd128(a.coeff, b.base), a.base, exact, t, iv);
      case BinOp::Min:
      case BinOp::Max: {
        Facts j = join(a, b, iv);
        return settle(j.coeff, j.base, exact, t, iv);
      }
      default:
        break;
    }
    return settle(1, 0, exact, t, iv);
  }

  const VarModular& mods_;
  const VarIntervals& vars_;
};

}  // namespace

ModularSet modular_set(const Expr& e, const VarModular& mods, const VarIntervals& vars) {
  Facts f = Modular(mods, vars).of(e);
  TL_ASSERT(f.coeff >= 0 && f.coeff <= INT64_MAX, "modular set coefficient out of range");
  return {static_cast<int64_t>(f.coeff), static_cast<int64_t>(f.base)};
}

}  // namespace tl::arith
