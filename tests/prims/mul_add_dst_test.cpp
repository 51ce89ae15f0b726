// T.tile.mul_add_dst's typed C++ DSL call (T::tile::mul_add_dst, src/prims/mul_add_dst.cpp):
// dst = src0 * src1 + dst on the regions of tail_regions (sizes that are not whole 32-byte rows,
// rows not a multiple of the block, offsets into a larger tile), for every dtype A2 allows,
// against the reference below (this file is its only home); the in-place form (dst also a
// source); and the verifier's errors for mismatched operands, naming the operand.
// Before: there was no T::tile::mul_add_dst (C++ kernels wrote T::emit("tile.mul_add_dst", ...)).
#include <gtest/gtest.h>

#include "common/error_of.h"
#include "npu/vector_ops.h"

namespace tl {
namespace {

using namespace optest;

/// The vector unit's result: the product and the sum in fp32, rounded once to the dtype.
double reference(DType t, double a, double b, double d) {
  const float p = static_cast<float>(a) * static_cast<float>(b);
  return vr(t, p + static_cast<float>(d));
}

TEST(PrimMulAddDst, DslCallOnTailsMatchesTheReference) {
  int checked = 0;
  for (DType t : legal("tile.mul_add_dst"))
    for (const Region& rg : tail_regions(dtype_bytes(t))) {
      SCOPED_TRACE(fmt::format("mul_add_dst {} {}", dtype_name(t), rg.str()));
      Device dev;
      Tensor d = input(dev, rg.shape, t, 51), a = input(dev, rg.shape, t, 52),
             b = input(dev, rg.shape, t, 53);
      const auto d0 = d.to_vector(), av = a.to_vector(), bv = b.to_vector();
      run_one_op(dev, {{"d", rg.shape, t}, {"a", rg.shape, t}, {"b", rg.shape, t}}, {},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                   T::tile::mul_add_dst(rg.of(ub[0]), rg.of(ub[1]), rg.of(ub[2]));
                 },
                 {d, a, b});
      auto want = d0;  // outside the region dst keeps its values
      for (int64_t f : rg.flat()) want[f] = reference(t, av[f], bv[f], d0[f]);
      EXPECT_EQ(diff_exact(d.to_vector(), want), "");
      ++checked;
    }
  EXPECT_GT(checked, 4);
}

TEST(PrimMulAddDst, InPlaceReadsTheOldDestination) {
  for (int64_t n : {1, 7, 33, 1000, 4097}) {
    SCOPED_TRACE(n);
    const DType t = DType::Float32;
    const int64_t padded = (n + 7) / 8 * 8;
    Device dev;
    Tensor d = input(dev, {padded}, t, 61), a = input(dev, {padded}, t, 62);
    const auto d0 = d.to_vector(), av = a.to_vector();
    run_one_op(dev, {{"d", {padded}, t}, {"a", {padded}, t}}, {},
               [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                 // dst = dst * a + dst: dst is src0 and the accumulator.
                 T::tile::mul_add_dst(ub[0].region({0}, {n}), ub[0].region({0}, {n}),
                                      ub[1].region({0}, {n}));
               },
               {d, a});
    auto want = d0;
    for (int64_t i = 0; i < n; ++i) want[i] = reference(t, d0[i], av[i], d0[i]);
    EXPECT_EQ(diff_exact(d.to_vector(), want), "");
  }
}

using tltest::error_of;

TEST(PrimMulAddDst, MismatchedOperandsAreErrorsNamingThem) {
  auto run = [](int64_t n0, int64_t n1, DType t1) {
    Device dev;
    Tensor d = input(dev, {64}, DType::Float32, 1), a = input(dev, {64}, t1, 2);
    run_one_op(dev, {{"d", {64}, DType::Float32}, {"a", {64}, t1}}, {},
               [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                 T::tile::mul_add_dst(ub[0].region({0}, {n0}), ub[1].region({0}, {n1}),
                                      ub[1].region({0}, {n1}));
               },
               {d, a});
  };
  const std::string shape = error_of([&] { run(16, 8, DType::Float32); });
  EXPECT_NE(shape.find("'src0' has 8 elements, 'dst' 16"), std::string::npos) << shape;
  const std::string dtype = error_of([&] { run(16, 16, DType::Float16); });
  EXPECT_NE(dtype.find("expected the dtype of 'dst' (float32), got float16"), std::string::npos)
      << dtype;
  Device dev;
  Tensor x = input(dev, {64}, DType::Int32, 3);
  const std::string ints = error_of([&] {
    run_one_op(dev, {{"x", {64}, DType::Int32}}, {},
               [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                 T::tile::mul_add_dst(ub[0], ub[0], ub[0]);
               },
               {x});
  });
  EXPECT_NE(ints.find("T.tile.mul_add_dst on A2 takes float16, float32, got int32"),
            std::string::npos)
      << ints;
}

}  // namespace
}  // namespace tl
