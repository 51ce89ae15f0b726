// The symbolic overlap test of two regions of one buffer. Each region start is written as a
// linear form, sum of coeff * atom + const, where atoms are variables and the subexpressions
// that are not affine or may wrap (a wrapping sum is not the sum of its parts); the
// difference of the two starts then cancels shared atoms, so `A[8*i : 8*i + 8]` and
// `A[8*i + 8 : ...]` are exactly disjoint whatever i is. What does not cancel is bounded by
// intervals.
#include <algorithm>
#include <vector>

#include "interval_math.h"

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

struct Term {
  Expr atom;
  i128 coeff;
};

/// sum of coeff * atom + c, with the value's interval.
struct Linear {
  std::vector<Term> terms;
  i128 c = 0;
  Interval iv{0, 0};
};

// Coefficients and constants stay far inside 128 bits, so sums of products with 64-bit atom
// bounds cannot overflow; anything larger becomes an atom.
constexpr i128 kMaxCoeff = i128(1) << 56;
constexpr size_t kMaxTerms = 64;

void add_scaled(Linear& x, const Linear& y, i128 k) {
  for (const auto& t : y.terms) {
    auto same = [&](const Term& u) { return identical(u.atom, t.atom); };
    auto it = std::find_if(x.terms.begin(), x.terms.end(), same);
    if (it != x.terms.end())
      it->coeff += k * t.coeff;
    else
      x.terms.push_back({t.atom, k * t.coeff});
  }
  x.c += k * y.c;
  std::erase_if(x.terms, [](const Term& u) { return u.coeff == 0; });
}

bool tame(const Linear& x) {
  if (x.terms.size() > kMaxTerms || detail::abs128(x.c) > (i128(1) << 120)) return false;
  for (const auto& t : x.terms)
    if (detail::abs128(t.coeff) > kMaxCoeff) return false;
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
      return {{}, v, Interval::point(v)};
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
          add_scaled(r, a, 1);
          add_scaled(r, b, n->op == BinOp::Add ? 1 : -1);
        } else if (a.terms.empty() || b.terms.empty()) {
          add_scaled(r, a.terms.empty() ? b : a, a.terms.empty() ? a.c : b.c);
        } else {
          return atom(e);
        }
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
    Wide w{x.c, x.c};
    for (const auto& t : x.terms) {
      Interval a = bound(t.atom, vars_);
      i128 p = t.coeff * a.lo, q = t.coeff * a.hi;
      w.lo += std::min(p, q);
      w.hi += std::max(p, q);
    }
    return w;
  }

 private:
  Linear atom(const Expr& e) {
    Interval iv = bound(e, vars_);
    if (iv.is_point()) return {{}, iv.lo, iv};
    return {{Term{e, 1}}, 0, iv};
  }

  const VarIntervals& vars_;
  const bool exact_;
};

}  // namespace

std::optional<int64_t> constant_difference(const Expr& a, const Expr& b, const VarIntervals& vars) {
  Linearizer lin(vars, /*exact=*/true);
  Linear diff = lin.of(a);
  add_scaled(diff, lin.of(b), -1);
  if (!diff.terms.empty() || diff.c > INT64_MAX || diff.c < INT64_MIN) return std::nullopt;
  return static_cast<int64_t>(diff.c);
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
    Linear diff = lin.of(rb.min);
    add_scaled(diff, lin.of(ra.min), -1);
    Wide dd = lin.range(diff);
    Interval ea = bound(ra.extent, vars), eb = bound(rb.extent, vars);
    // [amin, amin + ea) and [bmin, bmin + eb) meet iff both are non-empty and
    // -eb < bmin - amin < ea.
    if (ea.hi <= 0 || eb.hi <= 0 || dd.lo >= ea.hi || dd.hi <= -i128(eb.hi)) return Overlap::No;
    all_yes &= ea.lo > 0 && eb.lo > 0 && dd.hi < ea.lo && dd.lo > -i128(eb.lo);
  }
  return all_yes ? Overlap::Yes : Overlap::Maybe;
}

}  // namespace tl::arith
