// Internal to src/arith: exact (unwrapped) interval arithmetic in 128 bits, shared by the
// bounds, the modular sets and the overlap test, which all need to know whether an operation
// can leave its dtype (and so wrap) before trusting the mathematical result.
#pragma once

#include "tl/arith.h"

namespace tl::arith::detail {

using i128 = __int128;

/// A closed interval of mathematical integers (results before wrapping to a dtype).
struct Wide {
  i128 lo, hi;
};

inline Wide widen(const Interval& a) {
  return {a.lo, a.hi};
}
/// Whether every value of `w` is a held value of dtype `t` (so wrapping leaves it unchanged).
inline bool fits(const Wide& w, DType t) {
  return w.lo >= dtype_min(t) && w.hi <= dtype_max(t);
}
/// `w` if it fits `t`, else the full range of `t`: what a wrapping operation guarantees.
inline Interval narrow(const Wide& w, DType t) {
  if (!fits(w, t)) return Interval::of_dtype(t);
  return {static_cast<int64_t>(w.lo), static_cast<int64_t>(w.hi)};
}

/// The exact interval of the mathematical result of integer `a op b` (before wrapping), or
/// nullopt when the operator is not one whose result is tracked exactly (comparisons and
/// logic, bitwise operators with negative operands, shifts by amounts outside [0, 63]).
/// Division operators skip a zero divisor (that evaluation fails).
std::optional<Wide> exact_binary(BinOp op, const Interval& a, const Interval& b);

/// The interval of integer `a op b` wrapped to `t` (bound() of a Binary node).
Interval bound_binary(BinOp op, DType t, const Interval& a, const Interval& b);
/// The interval of a value of dtype `from` in `a`, cast to integer or bool dtype `t`.
Interval bound_cast(DType t, DType from, const Interval& a);

/// Floor division of 128-bit values (b != 0).
inline i128 floordiv(i128 a, i128 b) {
  i128 q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
inline i128 floormod(i128 a, i128 b) {
  return a - floordiv(a, b) * b;
}
inline i128 abs128(i128 a) {
  return a < 0 ? -a : a;
}
inline i128 gcd128(i128 a, i128 b) {
  a = abs128(a);
  b = abs128(b);
  while (b != 0) {
    i128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

}  // namespace tl::arith::detail
