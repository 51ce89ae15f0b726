// The traps of DEVMODE.md section 6 (bugs of the anchor projects' developer modes) that no other
// test covers, each run end to end on the virtual NPU under the hazard checker. The others are
// tested where their pass is (docs/developer_mode.md, "Traps", maps every trap to its test):
// compact -> aligned UB store, symbolic-extent / non-unit-stride / 3-D Parallel loops
// (vectorize_parallel_test.cpp), a fragment only the vector uses (developer_lowering_test.cpp),
// if/else joins and WAR across a loop back-edge (insert_syncs_cases.tl).
#include <gtest/gtest.h>

#include <cmath>

#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/printer.h"

namespace tl {
namespace {

std::vector<double> ramp(int64_t n, double scale) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = std::sin(0.37 * static_cast<double>(i)) * scale;
  return v;
}

// tilelang-ascend issue 1641: MTE2 writes x, MTE3 reads it (a copy out), then V reads it. A sync
// pass that keeps only the latest access per buffer sees MTE3 as x's last user and orders V after
// MTE3 only, dropping the MTE2 -> V flag the V read needs. insert_syncs keeps every pending access.
TEST(DevmodeTraps, Issue1641MTE2WriteThenMTE3ReadThenVReadKeepsItsMTE2ToVFlag) {
  auto X = T::Tensor("X", {8, 64}, f32), Y = T::Tensor("Y", {8, 64}, f32),
       Z = T::Tensor("Z", {8, 64}, f32);
  PrimFunc f = T::prim_func("trap1641", {X, Y, Z}, [&] {
    T::Kernel(1, [&](Expr) {
      auto x = T::alloc_shared("x", {8, 64}, f32), z = T::alloc_shared("z", {8, 64}, f32);
      T::copy(X, x);
      T::copy(x, Y);
      T::Parallel({8, 64}, [&](Expr i, Expr j) { z(i, j) = x(i, j) * 2.0f; });
      T::copy(z, Z);
    });
  });
  auto kern = compile(f);
  std::string ir = print(kern.func(), {.locations = false});
  EXPECT_NE(ir.find("T.wait_flag(\"MTE2\", \"V\""), std::string::npos) << ir;
  Device dev;
  auto in = ramp(8 * 64, 3.0);
  Tensor x = from_vector(dev, {8, 64}, f32, in), y = Tensor::empty(dev, {8, 64}, f32),
         z = Tensor::empty(dev, {8, 64}, f32);
  ASSERT_NO_THROW(kern.launch(dev, {x, y, z}, {.check_hazards = true}));
  auto ys = y.to_vector(), zs = z.to_vector();
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(ys[i], static_cast<double>(static_cast<float>(in[i]))) << i;
    ASSERT_EQ(zs[i], static_cast<double>(static_cast<float>(in[i]) * 2.0f)) << i;
  }
}

// tilelang-ascend issues 1683 and 754: a float16 reduction over dim 0 and over dim -1 of a
// developer tile. Both reduce the right axis and accumulate in float32 (the vector unit's
// ReduceSum widens), whichever dimension is reduced.
TEST(DevmodeTraps, Issues1683And754Float16ReduceOverDimZeroAndMinusOne) {
  constexpr int R = 16, C = 64;
  auto X = T::Tensor("X", {R, C}, f16), S0 = T::Tensor("S0", {C}, f16),
       S1 = T::Tensor("S1", {R}, f16);
  PrimFunc f = T::prim_func("trap1683", {X, S0, S1}, [&] {
    T::Kernel(1, [&](Expr) {
      auto x = T::alloc_shared("x", {R, C}, f16);
      auto s0 = T::alloc_fragment("s0", {C}, f16), s1 = T::alloc_fragment("s1", {R}, f16);
      T::copy(X, x);
      T::reduce_sum(x, s0, 0);
      T::reduce_sum(x, s1, -1);
      T::copy(s0, S0);
      T::copy(s1, S1);
    });
  });
  auto kern = compile(f);
  Device dev;
  auto in = ramp(R * C, 1.0);
  Tensor x = from_vector(dev, {R, C}, f16, in), s0 = Tensor::empty(dev, {C}, f16),
         s1 = Tensor::empty(dev, {R}, f16);
  ASSERT_NO_THROW(kern.launch(dev, {x, s0, s1}, {.check_hazards = true}));
  auto xs = x.to_vector(), cols = s0.to_vector(), rows = s1.to_vector();
  for (int j = 0; j < C; ++j) {
    double want = 0;
    for (int i = 0; i < R; ++i) want += xs[i * C + j];
    EXPECT_NEAR(cols[j], want, 2e-3 * (1 + std::abs(want))) << "column " << j;
  }
  for (int i = 0; i < R; ++i) {
    double want = 0;
    for (int j = 0; j < C; ++j) want += xs[i * C + j];
    EXPECT_NEAR(rows[i], want, 2e-3 * (1 + std::abs(want))) << "row " << i;
  }
}

// tilelang-ascend issue 1378: a pipelined loop dropped its tail iterations and multiplied a
// symbolic extent. Developer-mode T::Pipelined loops (run serially until pipeline_loops exists)
// must run exactly their trip count for 0, 1, 2, 3, 5 and 7, a nonzero start, and a symbolic
// extent bound at launch.
TEST(DevmodeTraps, Issue1378PipelinedLoopsRunEveryTripCount) {
  auto run = [](int64_t rows, int64_t start, bool symbolic) {
    SCOPED_TRACE(fmt::format("rows {} start {} symbolic {}", rows, start, symbolic));
    Expr m = symbolic ? Expr(T::dynamic("M")) : Expr(rows);
    auto X = T::Tensor("X", {m, 64}, f32), Y = T::Tensor("Y", {m, 64}, f32);
    PrimFunc f = T::prim_func("trap1378", {X, Y}, [&] {
      T::Kernel(1, [&](Expr) {
        auto x = T::alloc_shared("x", {1, 64}, f32);
        T::Pipelined("k", m - start, 2, [&](Expr k) {
          T::copy(X.at({k + start, 0}), x);
          T::Parallel({1, 64}, [&](Expr i, Expr j) { x(i, j) = x(i, j) + 1.0f; });
          T::copy(x, Y.at({k + start, 0}));
        });
      });
    });
    auto kern = compile(f);
    Device dev;
    auto in = ramp(rows * 64, 2.0);
    Tensor x = from_vector(dev, {rows, 64}, f32, in);
    Tensor y = from_vector(dev, {rows, 64}, f32,
                           std::vector<double>(static_cast<size_t>(rows * 64), -7.0));
    ASSERT_NO_THROW(kern.launch(dev, {x, y}, {.check_hazards = true}));
    auto ys = y.to_vector();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < 64; ++c) {
        const double want =
            r < start ? -7.0 : static_cast<double>(static_cast<float>(in[r * 64 + c]) + 1.0f);
        ASSERT_EQ(ys[r * 64 + c], want) << "row " << r << " column " << c;
      }
  };
  for (int64_t n : {0, 1, 2, 3, 5, 7}) run(n, 0, false);
  run(7, 2, false);
  for (int64_t n : {0, 1, 5}) run(n, 0, true);
  run(6, 1, true);
}

}  // namespace
}  // namespace tl
