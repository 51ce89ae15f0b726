// Regressions of issue 27 (adversarial review): unary minus on floats was built as `0 - x`, so
// -(+0.0) was +0.0 and 1 / -(+0.0) was +inf (IEEE and torch: -0.0 and -inf), on the scalar
// unit and in vectorised element loops alike, in fp32 and fp16. A float `-x` is now a sign
// flip, `x * -1` (exact for every x: +-0, inf, NaN, subnormals), printed `-x` and parsed back
// to the same node; an integer `-x` stays `0 - x`.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "tl/ir_equal.h"
#include "tl/ir_ops.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/parser.h"
#include "tl/printer.h"
#include "tl/runtime.h"

namespace tl {
namespace {

/// Z = -X and R = 1 / -X on a tile (T::Parallel: vectorised, the vector unit) and ZS, RS the
/// same element by element from GM in a T::serial loop (the scalar unit).
PrimFunc negate(int n, DType dt) {
  auto X = T::Tensor("X", {n}, dt);
  auto Z = T::Tensor("Z", {n}, dt), R = T::Tensor("R", {n}, dt);
  auto ZS = T::Tensor("ZS", {n}, dt), RS = T::Tensor("RS", {n}, dt);
  return T::prim_func("negate", {X, Z, R, ZS, RS}, [&] {
    T::Kernel(1, [&](Expr) {
      auto x = T::alloc_shared("x", {n}, dt);
      auto z = T::alloc_shared("z", {n}, dt);
      auto r = T::alloc_shared("r", {n}, dt);
      T::copy(X, x);
      T::Parallel(n, [&](Expr i) {
        z(i) = -x(i);
        r(i) = imm(dt, 1.0) / -x(i);
      });
      T::copy(z, Z);
      T::copy(r, R);
      T::serial(n, [&](Expr i) {
        ZS(i) = -X(i);
        RS(i) = imm(dt, 1.0) / -X(i);
      });
    });
  });
}

/// The inputs: signed zeros first, then values whose negation and reciprocal are exact or
/// rounded once, infinities, NaN and a subnormal of each dtype.
std::vector<double> inputs(int n, DType dt) {
  const double sub = dt == DType::Float16 ? std::ldexp(3.0, -24) : std::ldexp(3.0, -149);
  const std::vector<double> pattern = {0.0,
                                       -0.0,
                                       1.5,
                                       -2.0,
                                       0.1,
                                       std::numeric_limits<double>::infinity(),
                                       -std::numeric_limits<double>::infinity(),
                                       std::nan(""),
                                       sub,
                                       -sub,
                                       1000.0};
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = pattern[i % pattern.size()] * (i < 11 ? 1.0 : 1.0 + i / 4096.0);
  return v;
}

/// Rounds to `dt` (fp16 through the device's own conversion, by a round trip in a tensor).
double in_dtype(Device& dev, DType dt, double v) {
  return from_vector(dev, {1}, dt, {v}).to_vector()[0];
}

void expect_same(double got, double want, const char* what, int i) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << "[" << i << "] = " << got << ", want NaN";
    return;
  }
  EXPECT_EQ(std::signbit(got), std::signbit(want))
      << what << "[" << i << "] = " << got << ", want " << want;
  if (std::isinf(want) || want == 0)
    EXPECT_EQ(got, want) << what << "[" << i << "]";
  else
    EXPECT_NEAR(got, want, std::abs(want) * 1e-3) << what << "[" << i << "]";
}

// Before the fix: Z[0] and ZS[0] (-(+0.0)) were +0.0 and R[0], RS[0] (1 / -(+0.0)) were +inf,
// for both dtypes and both paths; every other element was right.
TEST(UnaryMinus, NegatesZeroToMinusZeroOnTheScalarAndVectorPaths) {
  for (DType dt : {DType::Float32, DType::Float16}) {
    for (int n : {1, 7, 33, 1000, 4097}) {
      SCOPED_TRACE(fmt::format("{} n={}", dtype_name(dt), n));
      Device dev;
      std::vector<double> xs = inputs(n, dt);
      Tensor X = from_vector(dev, {n}, dt, xs);
      std::vector<Tensor> outs;
      for (int k = 0; k < 4; ++k) outs.push_back(Tensor::empty(dev, {n}, dt));
      compile(negate(n, dt), default_target(), {.cache = false})
          .launch(dev, {X, outs[0], outs[1], outs[2], outs[3]});
      std::vector<double> x = X.to_vector(), z = outs[0].to_vector(), r = outs[1].to_vector(),
                          zs = outs[2].to_vector(), rs = outs[3].to_vector();
      for (int i = 0; i < n; ++i) {
        const double neg = -x[i];                         // exact in any dtype
        const double rec = in_dtype(dev, dt, 1.0 / neg);  // the quotient rounded once
        expect_same(z[i], neg, "Z", i);
        expect_same(zs[i], neg, "ZS", i);
        expect_same(r[i], rec, "R", i);
        expect_same(rs[i], rec, "RS", i);
      }
      EXPECT_TRUE(std::signbit(z[0]) && std::signbit(zs[0]));
      EXPECT_EQ(r[0], -std::numeric_limits<double>::infinity());
      EXPECT_EQ(rs[0], -std::numeric_limits<double>::infinity());
    }
  }
}

// Before the fix the DSL built `0.0 - x`: the sign of a zero was lost (checked above) and the
// text printed as `0.0 - x`. Now `-x` prints as `-x` and `-x` in text parses to the DSL's node.
TEST(UnaryMinus, PrintsAsMinusXAndParsesBackToTheSameNode) {
  auto X = T::Tensor("X", {16}, DType::Float16);
  auto Y = T::Tensor("Y", {16}, DType::Float16);
  PrimFunc f = T::prim_func("neg", {X, Y}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector,
               [&] { T::serial(16, [&](Expr i) { Y(i) = -X(i) * -(X(i) + X(i)) - -X(i); }); });
    });
  });
  std::string text = print(f, {.locations = false});
  EXPECT_NE(text.find("Y[i] = -X[i] * -(X[i] + X[i]) - -X[i]"), std::string::npos) << text;
  PrimFunc g = parse(text);
  EXPECT_TRUE(structural_equal(f, g)) << first_difference(f, g);
  EXPECT_EQ(print(g, {.locations = false}), text);
  // `-x` written in text is the same node as the DSL's `-x`: x * -1 in x's dtype.
  Expr e = -X(0);
  auto* m = e.as<BinaryNode>();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->op, BinOp::Mul);
  EXPECT_EQ(m->dtype, DType::Float16);
  ASSERT_NE(m->b.as<FloatImmNode>(), nullptr);
  EXPECT_EQ(m->b.as<FloatImmNode>()->value, -1.0);
  // A literal folds (its sign flipped, zero included); an integer is `0 - x`, wrapping.
  Expr negated_zero = -Expr(0.0);  // kept alive: as<> points into it
  auto* lit = negated_zero.as<FloatImmNode>();
  ASSERT_NE(lit, nullptr);
  EXPECT_TRUE(std::signbit(lit->value));
  Var k("k", DType::Int32);
  EXPECT_EQ(print(-Expr(k)), "0 - k");
  EXPECT_EQ(print(-Expr(std::numeric_limits<int32_t>::min())),
            std::to_string(std::numeric_limits<int32_t>::min()));
}

}  // namespace
}  // namespace tl
