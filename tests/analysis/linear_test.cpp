// Unit tests of the one linear-form decomposition (tl/linear.h): the form's arithmetic, its
// overflow (too many terms, a coefficient or constant beyond int64), and decompose() with a
// user's leaf rule -- the two users' rules (variables as atoms; let values as interned atoms)
// are what the overlap test and the block replay rely on.
#include <gtest/gtest.h>

#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/linear.h"

namespace tl {
namespace {

using arith::LinearForm;
using L4 = LinearForm<4>;

/// Variables by identity, as the replay keys them.
std::optional<L4> var_leaf(const Expr& e) {
  if (auto* v = e.as<VarNode>())
    return L4::atom(static_cast<int64_t>(reinterpret_cast<uintptr_t>(v) >> 1));
  return std::nullopt;
}

TEST(LinearForm, AddCancelsAndKeepsTermsSorted) {
  L4 a = L4::atom(7, 3).add(L4::atom(2, 5), 1).add(L4::constant_of(4), 1);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a.begin()[0].first, 2);  // sorted by key
  EXPECT_EQ(a.begin()[1].second, 3);
  EXPECT_EQ(a.constant(), 4);
  L4 b = a;
  b.add(L4::constant_of(8), 1);
  EXPECT_TRUE(a.same_terms(b));
  EXPECT_EQ(b.minus(a), 8);
  b.add(L4::atom(7), -3);  // the atom 7 cancels out
  EXPECT_EQ(b.size(), 1u);
  EXPECT_FALSE(a.same_terms(b));
  EXPECT_EQ(a.minus(b), std::nullopt);
  EXPECT_TRUE(L4::constant_of(9).is_constant());
}

TEST(LinearForm, OverflowOnTooManyTermsOrBeyondInt64) {
  L4 a;
  for (int k = 0; k < 4; ++k) a.add(L4::atom(k), 1);
  EXPECT_FALSE(a.overflow());
  a.add(L4::atom(99), 1);  // a fifth term
  EXPECT_TRUE(a.overflow());
  EXPECT_FALSE(a.is_constant());
  L4 big = L4::atom(1, INT64_MAX);
  big.add(L4::atom(1), 2);
  EXPECT_TRUE(big.overflow());
  L4 c = L4::constant_of(INT64_MAX);
  c.add(L4::constant_of(1), 1);
  EXPECT_TRUE(c.overflow());
  EXPECT_EQ(c.minus(L4{}), std::nullopt);
}

TEST(LinearForm, DecomposeAffineIndexExpressions) {
  Var i("i"), j("j");
  Expr a = i * 8 + j * 2 + 28, b = (i + 1) * 8 + j * 2 - 4;
  auto fa = arith::decompose<4>(a, var_leaf), fb = arith::decompose<4>(b, var_leaf);
  ASSERT_TRUE(fa && fb);
  EXPECT_EQ(fa->size(), 2u);
  EXPECT_EQ(fb->minus(*fa), -24);
  // 3 * i - i * 3 is the constant 0; a product of two unknowns is not linear.
  auto z = arith::decompose<4>(i * 3 - 3 * i, var_leaf);
  ASSERT_TRUE(z);
  EXPECT_TRUE(z->is_constant());
  EXPECT_EQ(z->constant(), 0);
  EXPECT_EQ(arith::decompose<4>(i * j, var_leaf), std::nullopt);
  // Other operators fold on constants only.
  auto q = arith::decompose<4>(BinaryNode::make(BinOp::FloorDiv, Expr(17), Expr(4)), var_leaf);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->constant(), 4);
  EXPECT_EQ(arith::decompose<4>(floordiv(i, 4), var_leaf), std::nullopt);
}

TEST(LinearForm, DecomposeWrapsConstantsToTheDtype) {
  // int8: 100 + 100 wraps to -56, as the evaluator computes it.
  Expr e = BinaryNode::make(BinOp::Add, IntImmNode::make(DType::Int8, 100),
                            IntImmNode::make(DType::Int8, 100));
  auto f = arith::decompose<4>(e, var_leaf);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->constant(), -56);
  // A cast to int8 of 300 wraps to 44.
  auto g = arith::decompose<4>(CastNode::make(DType::Int8, Expr(300)), var_leaf);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->constant(), 44);
}

TEST(LinearForm, LeafRuleDecidesAtoms) {
  // A leaf rule that knows i = 5 folds it in: the replay's bound loop variables.
  Var i("i"), n("n");
  auto known = [&](const Expr& e) -> std::optional<L4> {
    if (e.same_as(i)) return L4::constant_of(5);
    return var_leaf(e);
  };
  auto f = arith::decompose<4>(i * 4 + n * 64, known);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->constant(), 20);
  EXPECT_EQ(f->size(), 1u);
}

TEST(LinearForm, NodesThatDoNotCombineGoToTheLeafRule) {
  // insert_syncs' loop coefficient: v one atom, every loop-invariant leaf (n, n * m, n / 2, a
  // cast) another; a node mixing v non-linearly is not linear.
  Var v("v"), n("n"), m("m");
  auto leaf = [&](const Expr& e) -> std::optional<L4> {
    bool has_v = false;
    pre_order_visit(
        LetNode::make(Var("_"), e), [](const Stmt&) {},
        [&](const Expr& x) { has_v = has_v || x.same_as(v); });
    if (e.same_as(v)) return L4::atom(1);
    if (!has_v) return L4::atom(2);
    return std::nullopt;
  };
  auto c = [&](const Expr& e) -> std::optional<int64_t> {
    auto f = arith::decompose<4>(e, leaf, /*through_casts=*/false);
    if (!f) return std::nullopt;
    return arith::coefficient_of(*f, 1);
  };
  EXPECT_EQ(c(v * 8 + n * m + 4), 8);
  EXPECT_EQ(c(v * 8 + floordiv(n, 2) - v * 2), 6);
  EXPECT_EQ(c(n * m), 0);
  EXPECT_EQ(c(v * n), std::nullopt);
  EXPECT_EQ(c(floordiv(v, 2) + v), std::nullopt);
  // A cast is a leaf here (through_casts=false), and folded through by default.
  Expr cast_v = CastNode::make(DType::Int64, v * 8);
  EXPECT_EQ(c(cast_v), std::nullopt);
  auto through = arith::decompose<4>(cast_v, leaf);
  ASSERT_TRUE(through);
  EXPECT_EQ(arith::coefficient_of(*through, 1), 8);
}

TEST(LinearForm, ConstantDifferenceAndOverlapStillExact) {
  // The overlap test on the public form: 8 * i and 8 * i + 8 differ by 8 whatever i is.
  Var i("i");
  EXPECT_EQ(arith::constant_difference(i * 8 + 8, i * 8), 8);
  EXPECT_EQ(arith::constant_difference(i * 8, Var("k") * 8), std::nullopt);
}

}  // namespace
}  // namespace tl
