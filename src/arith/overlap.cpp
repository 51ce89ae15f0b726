// The symbolic overlap test of two regions of one buffer. Each region start is written as a
// linear form, sum of coeff * atom + const, where atoms are variables and the subexpressions
// that are not affine or may wrap (a wrapping sum is not the sum of its parts); the
// difference of the two starts then cancels shared atoms, so `A[8*i : 8*i + 8]` and
// `A[8*i + 8 : ...]` are exactly disjoint whatever i is. What does not cancel is bounded by
// intervals.
#include <algorithm>
#include <vector>

#include "interval_math.h"
#include "tl/linear.h"

namespace tl::arith {

using detail::i128;
using detail::Wide;

namespace {

/// Same value whenever the variables have the same values: equal structure, variables by
/// identity, no loads (memory may change between the two evaluations).
bool identical(const Expr& a, const Expr& b) {
  if (a.kind() == ExprKind::Load || b.kind() == ExprKind::Load) return false;
  if (a.same_as(b)) return true;
  if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  std::vector<Expr> xs, ys;  // the operands to compare next
  switch (a.kind()) {
    case ExprKind::IntImm:
      return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value;
    case ExprKind::Binary:
      if (a.as<BinaryNode>()->op != b.as<BinaryNode>()->op) return false;
      xs = {a.as<BinaryNode>()->a, a.as<BinaryNode>()->b};
      ys = {b.as<BinaryNode>()->a, b.as<BinaryNode>()->b};
      break;
    case ExprKind::Not:
      xs = {a.as<NotNode>()->a}, ys = {b.as<NotNode>()->a};
      break;
    case ExprKind::Select:
      xs = {a.as<SelectNode>()->cond, a.as<SelectNode>()->t, a.as<SelectNode>()->f};
      ys = {b.as<SelectNode>()->cond, b.as<SelectNode>()->t, b.as<SelectNode>()->f};
      break;
    case ExprKind::Cast:
      xs = {a.as<CastNode>()->value}, ys = {b.as<CastNode>()->value};
      break;
    case ExprKind::Call:
      if (a.as<CallNode>()->name != b.as<CallNode>()->name) return false;
      xs = a.as<CallNode>()->args, ys = b.as<CallNode>()->args;
      break;
    default:
      return false;  // distinct variables, floats (NaN), strings
  }
  return std::equal(xs.begin(), xs.end(), ys.begin(), ys.end(), identical);
}

// Coefficients stay far inside 64 bits, so products with 64-bit atom bounds fit in 128; anything
// larger (or a form of more terms) becomes an atom.
constexpr i128 kMaxCoeff = i128(1) << 56;
constexpr size_t kMaxTerms = 64;

/// sum of coeff * atom + c (tl/linear.h; atoms are keys into the Linearizer's table), with the
/// value's interval.
struct Linear {
  LinearForm<kMaxTerms> form;
  Interval iv{0, 0};
};

bool tame(const Linear& x) {
  if (x.form.overflow()) return false;
  for (const auto& t : x.form)
    if (detail::abs128(t.second) > kMaxCoeff) return false;
  return true;
}

class Linearizer {
 public:
  /// `exact`: integer arithmetic is taken as mathematical (no wrap), for index expressions whose
  /// variables' ranges are not known here but which never wrap in a valid kernel.
  explicit Linearizer(const VarIntervals& vars, bool exact = false) : vars_(vars), exact_(exact) {}

  Linear of(const Expr& e) {
    DType t = e.dtype();
    if (e.kind() == ExprKind::IntImm) {
      int64_t v = wrap(t, e.as<IntImmNode>()->value);
      return {LinearForm<kMaxTerms>::constant_of(v), Interval::point(v)};
    }
    if (auto* n = e.as<BinaryNode>();
        n && is_int(t) && is_int(n->a.dtype()) && is_int(n->b.dtype()) &&
        (n->op == BinOp::Add || n->op == BinOp::Sub || n->op == BinOp::Mul)) {
      Linear a = of(n->a), b = of(n->b);
      auto exact = detail::exact_binary(n->op, a.iv, b.iv);
      if (exact_ ||
          (exact && detail::fits(*exact, t))) {  // no wrap: the value is the mathematical result
        Linear r;
        r.iv = exact && detail::fits(*exact, t) ? detail::narrow(*exact, t) : Interval::of_dtype(t);
        if (n->op != BinOp::Mul) {
          r.form.add(a.form, 1);
          r.form.add(b.form, n->op == BinOp::Add ? 1 : -1);
        } else if (a.form.size() == 0 || b.form.size() == 0) {
          const bool ka = a.form.size() == 0;
          r.form.add(ka ? b.form : a.form, ka ? a.form.constant() : b.form.constant());
        } else {
          return atom(e);
        }
        if (tame(r)) return r;
      }
      return atom(e);
    }
    // A floor division by a positive constant that divides every coefficient and the constant
    // (`(vid + 1) * 32 // 2` = 16 vid + 16, TileLang-Ascend's `vid * block_M // VEC_NUM`): the
    // quotient is exact, so it stays linear.
    if (auto* n = e.as<BinaryNode>(); n && is_int(t) && n->op == BinOp::FloorDiv &&
                                      n->b.kind() == ExprKind::IntImm &&
                                      n->b.as<IntImmNode>()->value > 0) {
      const int64_t c = n->b.as<IntImmNode>()->value;
      Linear a = of(n->a);
      bool divides = !a.form.overflow() && a.form.constant() % c == 0;
      for (const auto& term : a.form) divides = divides && term.second % c == 0;
      if (divides) {
        Linear r;
        r.iv = bound(e, vars_);
        r.form = LinearForm<kMaxTerms>::constant_of(a.form.constant() / c);
        for (const auto& term : a.form)
          r.form.add(LinearForm<kMaxTerms>::atom(term.first, term.second / c), 1);
        if (tame(r)) return r;
      }
      return atom(e);
    }
    if (auto* n = e.as<CastNode>(); n && is_int(t) && is_int(n->value.dtype())) {
      Linear v = of(n->value);
      if (detail::fits(detail::widen(v.iv), t)) return v;  // a cast that changes no value
    }
    return atom(e);
  }

  /// The interval of `x` from its atoms' intervals.
  Wide range(const Linear& x) {
    Wide w{x.form.constant(), x.form.constant()};
    for (const auto& t : x.form) {
      Interval a = bound(atoms_[static_cast<size_t>(t.first)], vars_);
      i128 p = t.second * i128(a.lo), q = t.second * i128(a.hi);
      w.lo += std::min(p, q);
      w.hi += std::max(p, q);
    }
    return w;
  }

 private:
  Linear atom(const Expr& e) {
    Interval iv = bound(e, vars_);
    if (iv.is_point()) return {LinearForm<kMaxTerms>::constant_of(iv.lo), iv};
    return {LinearForm<kMaxTerms>::atom(key(e)), iv};
  }

  /// The atom's key: the first identical atom's (identical() keeps loads apart).
  int64_t key(const Expr& e) {
    for (size_t i = 0; i < atoms_.size(); ++i)
      if (identical(atoms_[i], e)) return static_cast<int64_t>(i);
    atoms_.push_back(e);
    return static_cast<int64_t>(atoms_.size() - 1);
  }

  std::vector<Expr> atoms_;  // by key

  const VarIntervals& vars_;
  const bool exact_;
};

}  // namespace

std::optional<int64_t> constant_difference(const Expr& a, const Expr& b, const VarIntervals& vars) {
  Linearizer lin(vars, /*exact=*/true);
  return lin.of(a).form.minus(lin.of(b).form);
}

Overlap regions_overlap(const BufferRegion& a, const BufferRegion& b, const VarIntervals& vars) {
  TL_ASSERT(a.buffer.same_as(b.buffer), "regions_overlap: regions of two buffers ({} and {})",
            a.buffer->name, b.buffer->name);
  TL_ASSERT(a.ranges.size() == b.ranges.size(), "regions_overlap: ranks {} and {}", a.ranges.size(),
            b.ranges.size());
  Linearizer lin(vars);
  bool all_yes = true;
  for (size_t d = 0; d < a.ranges.size(); ++d) {
    const Range &ra = a.ranges[d], &rb = b.ranges[d];
    TL_ASSERT(ra.extent.defined() && rb.extent.defined(),
              "regions_overlap: a region without extents");
    Interval ea = bound(ra.extent, vars), eb = bound(rb.extent, vars);
    if (ea.hi <= 0 || eb.hi <= 0) return Overlap::No;
    Linear diff = lin.of(rb.min);
    diff.form.add(lin.of(ra.min).form, -1);
    if (diff.form.overflow()) {  // a difference beyond int64: nothing known in this dimension
      all_yes = false;
      continue;
    }
    Wide dd = lin.range(diff);
    // [amin, amin + ea) and [bmin, bmin + eb) meet iff both are non-empty and
    // -eb < bmin - amin < ea.
    if (ea.hi <= 0 || eb.hi <= 0 || dd.lo >= ea.hi || dd.hi <= -i128(eb.hi)) return Overlap::No;
    all_yes &= ea.lo > 0 && eb.lo > 0 && dd.hi < ea.lo && dd.lo > -i128(eb.lo);
  }
  return all_yes ? Overlap::Yes : Overlap::Maybe;
}

}  // namespace tl::arith
