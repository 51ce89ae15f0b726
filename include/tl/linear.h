// The one linear-form decomposition of integer expressions: c + sum(coeff * atom), where an
// atom is whatever a user cannot (or chooses not to) look into -- a variable, a dynamic size,
// a let value, a product of two unknowns -- identified by an int64 key the user assigns.
// Address and index arithmetic is compared in this form: two expressions whose forms have the
// same terms differ by a constant, whatever the atoms' values (`8*i + 8` and `8*i` are 8
// apart). Owned by arith (docs/architecture.md); its users are the symbolic overlap test
// (arith::regions_overlap, arith::constant_difference) and the block replay of
// src/analysis/ (byte ranges of GM regions).
//
// The form holds at most N terms inline (no allocation: the replay builds one per bound of
// every region of every unrolled instruction); one more term, or a coefficient or constant
// that leaves int64, sets `overflow`, which callers take as "not linear". decompose() walks an
// expression with the user's rules for leaves, so each user keeps its own notion of an atom
// (a variable by identity, an interned let value, a wrapping subexpression).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "tl/arith.h"
#include "tl/ir.h"

namespace tl::arith {

template <size_t N>
class LinearForm {
 public:
  using Term = std::pair<int64_t, int64_t>;  // atom key, coefficient (never 0); sorted by key

  static LinearForm constant_of(int64_t v) {
    LinearForm l;
    l.c_ = v;
    return l;
  }
  static LinearForm atom(int64_t key, int64_t coeff = 1) {
    LinearForm l;
    l.add_term(key, coeff);
    return l;
  }

  int64_t constant() const { return c_; }
  void set_constant(int64_t v) { c_ = v; }
  /// No atoms (and no overflow): the expression is the constant.
  bool is_constant() const { return n_ == 0 && !overflow_; }
  bool overflow() const { return overflow_; }
  size_t size() const { return n_; }
  const Term* begin() const { return t_.data(); }
  const Term* end() const { return t_.data() + n_; }
  std::vector<Term> terms() const { return {begin(), end()}; }
  /// The same atoms with the same coefficients: the two differ by a constant.
  bool same_terms(const LinearForm& o) const {
    return n_ == o.n_ && std::equal(begin(), end(), o.begin());
  }

  /// this += k * o.
  LinearForm& add(const LinearForm& o, int64_t k) {
    int64_t kc;
    overflow_ = overflow_ || o.overflow_ || __builtin_mul_overflow(k, o.c_, &kc) ||
                __builtin_add_overflow(c_, kc, &c_);
    for (const Term& x : o) {
      int64_t v;
      if (__builtin_mul_overflow(k, x.second, &v))
        overflow_ = true;
      else
        add_term(x.first, v);
    }
    return *this;
  }
  /// this - o when it is a constant (every atom cancels); nullopt otherwise.
  std::optional<int64_t> minus(const LinearForm& o) const {
    LinearForm d = *this;
    d.add(o, -1);
    if (!d.is_constant()) return std::nullopt;
    return d.c_;
  }

 private:
  void add_term(int64_t a, int64_t v) {
    if (v == 0) return;
    size_t i = 0;
    while (i < n_ && t_[i].first < a) ++i;
    if (i < n_ && t_[i].first == a) {
      if (__builtin_add_overflow(t_[i].second, v, &t_[i].second)) overflow_ = true;
      if (t_[i].second == 0) {
        std::copy(t_.begin() + i + 1, t_.begin() + n_, t_.begin() + i);
        --n_;
      }
      return;
    }
    if (n_ == N) {
      overflow_ = true;
      return;
    }
    std::copy_backward(t_.begin() + i, t_.begin() + n_, t_.begin() + n_ + 1);
    t_[i] = {a, v};
    ++n_;
  }

  int64_t c_ = 0;
  size_t n_ = 0;
  bool overflow_ = false;
  std::array<Term, N> t_{};
};

/// The linear form of integer expression `e`: immediates are constants; Add, Sub and Mul by a
/// constant combine their operands' forms; an operator on two constants folds (a constant
/// result is wrapped to the node's dtype, as the evaluator does); integer casts pass through
/// when `through_casts`. Every other node -- a variable, a load, a cast, an operator whose
/// operands' forms do not combine (a product of two unknowns, a division) -- is handed to
/// `leaf`, which returns its form (an atom, a constant it knows) or nullopt (not linear: the
/// whole result is nullopt, as it is when an operand of an operator is not linear).
/// Arithmetic is taken as exact (no wrap of non-constant values): meant for index and address
/// expressions of valid kernels. nullopt on overflow.
template <size_t N, class Leaf>
std::optional<LinearForm<N>> decompose(const Expr& e, Leaf&& leaf, bool through_casts = true) {
  using L = LinearForm<N>;
  switch (e.kind()) {
    case ExprKind::IntImm:
      return L::constant_of(static_cast<const IntImmNode*>(e.get())->value);
    case ExprKind::Cast: {
      auto* c = static_cast<const CastNode*>(e.get());
      if (!through_casts) return leaf(e);
      if (!is_int(c->dtype)) return std::nullopt;
      auto x = decompose<N>(c->value, leaf, through_casts);
      if (x && x->is_constant()) x->set_constant(wrap(c->dtype, x->constant()));
      return x;
    }
    case ExprKind::Binary:
      break;
    default:
      return leaf(e);
  }
  auto* b = static_cast<const BinaryNode*>(e.get());
  auto x = decompose<N>(b->a, leaf, through_casts);
  if (!x) return std::nullopt;
  auto y = decompose<N>(b->b, leaf, through_casts);
  if (!y) return std::nullopt;
  std::optional<L> r;
  switch (b->op) {
    case BinOp::Add:
      r = x->add(*y, 1);
      break;
    case BinOp::Sub:
      r = x->add(*y, -1);
      break;
    case BinOp::Mul:
      if (y->is_constant())
        r = L{}.add(*x, y->constant());
      else if (x->is_constant())
        r = L{}.add(*y, x->constant());
      break;
    default:
      if (x->is_constant() && y->is_constant() && is_int(b->dtype))
        if (auto v = int_binary(b->op, b->dtype, x->constant(), y->constant()))
          r = L::constant_of(*v);
      break;
  }
  if (!r) return leaf(e);  // the operands' forms do not combine
  if (r->overflow()) return std::nullopt;
  if (r->is_constant() && is_int(b->dtype))
    r->set_constant(wrap(b->dtype, r->constant()));  // the dtype's wrap
  return r;
}

/// The coefficient of atom `key` in `f` (0 when absent).
template <size_t N>
int64_t coefficient_of(const LinearForm<N>& f, int64_t key) {
  for (const auto& t : f)
    if (t.first == key) return t.second;
  return 0;
}

}  // namespace tl::arith
