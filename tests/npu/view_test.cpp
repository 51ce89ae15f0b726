// T::view: a buffer's bytes reinterpreted as another dtype of the same width (no new storage).
// Here: the index lanes of sort's float (value, index) pairs seen as int32 through a view and
// picked out with gather_mask, which shows their bits (the positions as floats, as the chip
// holds them). Also its text form, its verifier rules and its placement (a view shares its
// base's address and keeps the base live).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <numeric>

#include "pass/pass_test_util.h"
#include "tl/arith.h"
#include "tl/ir_equal.h"
#include "tl/ir_functor.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/parser.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/verifier.h"

namespace tl {
namespace {

constexpr int kN = 64;  // scores sorted per AIV

/// Scores [kN] -> the index lanes of the scores sorted descending (ties: smaller index first),
/// read as int32: the bits of each position as a float.
PrimFunc argsort_kernel() {
  auto S = T::Tensor("S", {kN}, f32);
  auto I = T::Tensor("I", {kN}, DType::Int32);
  return T::prim_func("argsort", {S, I}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        T::If(vid == 0, [&] {
          auto s = T::alloc_ub("s", {kN}, f32);
          auto pairs = T::alloc_ub("pairs", {2 * kN}, f32);
          auto idx = T::alloc_ub("idx", {kN}, DType::Int32);
          T::copy(S, s);
          T::set_flag(Pipe::MTE2, Pipe::V, 0);
          T::wait_flag(Pipe::MTE2, Pipe::V, 0);
          T::sort(pairs, s, kN);
          // The (value, index) entries as int32 lanes: odd lanes are the index lanes' bits.
          auto lanes = T::view("lanes", pairs, DType::Int32);
          T::pipe_barrier(Pipe::V);
          T::tile::gather_mask(idx, lanes, "P1010");
          T::set_flag(Pipe::V, Pipe::MTE3, 0);
          T::wait_flag(Pipe::V, Pipe::MTE3, 0);
          T::copy(idx, I);
        });
      });
    });
  });
}

TEST(View, SortIndexLanesThroughAnInt32View) {
  PrimFunc f = argsort_kernel();
  ASSERT_TRUE(verify(f).empty()) << format_diagnostics(verify(f));
  Device dev;
  std::vector<double> scores(kN);
  for (int i = 0; i < kN; ++i) scores[i] = static_cast<double>((i * 37) % 11) - 5;  // ties
  Tensor S = from_vector(dev, {kN}, f32, scores), I = Tensor::empty(dev, {kN}, DType::Int32);
  compile(f, default_target(), {.cache = false}).launch(dev, {S, I}, {.check_hazards = true});
  std::vector<int> want(kN);
  std::iota(want.begin(), want.end(), 0);
  std::stable_sort(want.begin(), want.end(), [&](int a, int b) { return scores[a] > scores[b]; });
  auto got = I.to_vector();
  for (int i = 0; i < kN; ++i)
    ASSERT_EQ(got[i], std::bit_cast<int32_t>(static_cast<float>(want[i]))) << "position " << i;
}

TEST(View, BitsOfAFloatAsInt32) {
  auto Y = T::Tensor("Y", {8, 8}, DType::Int32);
  PrimFunc f = T::prim_func("bits", {Y}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        T::If(vid == 0, [&] {
          auto x = T::alloc_ub("x", {8, 8}, f32);
          T::tile::fill(x, 1.0);
          auto xi = T::view("xi", x, DType::Int32);
          T::set_flag(Pipe::V, Pipe::MTE3, 0);
          T::wait_flag(Pipe::V, Pipe::MTE3, 0);
          T::copy(xi, Y);
        });
      });
    });
  });
  Device dev;
  Tensor y = Tensor::empty(dev, {8, 8}, DType::Int32);
  compile(f).launch(dev, {y});
  for (double v : y.to_vector()) ASSERT_EQ(v, 0x3f800000);
}

TEST(View, PrintsParsesAndIsPlacedAtItsBase) {
  PrimFunc f = argsort_kernel();
  std::string text = print(f, {.locations = false});
  EXPECT_NE(text.find("lanes = T.view(pairs, \"int32\")"), std::string::npos) << text;
  PrimFunc g = parse(print(f));
  EXPECT_TRUE(structural_equal(f, g)) << first_difference(f, g);
  EXPECT_TRUE(verify(g).empty());
  // After planning the view has its base's address, in the printed and the parsed form.
  PrimFunc planned = lower(f, default_target());
  int64_t base = testing::address_of(planned, "pairs"),
          view = testing::address_of(planned, "lanes");
  EXPECT_GE(base, 0);
  EXPECT_EQ(view, base);
  EXPECT_TRUE(verify(planned, default_target(), {.spec = Spec::Planned}).empty());
  EXPECT_TRUE(structural_equal(planned, parse(print(planned))));
}

TEST(View, CloneFreshRebindsTheViewToTheClonedBase) {
  PrimFunc f = argsort_kernel();
  PrimFunc g = arith::clone_fresh(f);
  EXPECT_TRUE(structural_equal(f, g)) << first_difference(f, g);
  EXPECT_TRUE(verify(g).empty()) << format_diagnostics(verify(g));
}

TEST(View, KeepsItsBaseLive) {
  // `a` is last used through its view; `b`, declared after that use, must not share a's bytes
  // before it. The planner sees the view's uses as a's.
  auto Y = T::Tensor("Y", {8, 8}, DType::Int32);
  PrimFunc f = T::prim_func("live", {Y}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        auto a = T::alloc_ub("a", {8, 8}, f32);
        T::tile::fill(a, 1.0);
        auto ai = T::view("ai", a, DType::Int32);
        auto b = T::alloc_ub("b", {8, 8}, f32);
        T::tile::fill(b, 2.0);
        T::pipe_barrier(Pipe::V);
        T::tile::add(ai, ai, ai);
      });
    });
  });
  PrimFunc planned = lower(f, default_target());
  int64_t a = testing::address_of(planned, "a"), b = testing::address_of(planned, "b");
  EXPECT_NE(a, b);
}

TEST(View, VerifierRules) {
  auto X = T::Tensor("X", {8, 8}, f32);
  auto width = T::prim_func("w", {X}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x", {8, 16}, f32);
        T::view("xh", x, f16);
      });
    });
  });
  auto ds = verify(width);
  ASSERT_EQ(ds.size(), 1u) << format_diagnostics(ds);
  EXPECT_EQ(ds[0].rule, "view-dtype-width");
  EXPECT_EQ(ds[0].op, "T.view");
  auto gm = T::prim_func("g", {X}, [&] {
    T::Kernel(1,
              [&](Expr, Expr) { T::Scope(Core::Vector, [&] { T::view("xi", X, DType::Int32); }); });
  });
  ds = verify(gm);
  ASSERT_EQ(ds.size(), 1u) << format_diagnostics(ds);
  EXPECT_EQ(ds[0].rule, "view-scope");
}

}  // namespace
}  // namespace tl
