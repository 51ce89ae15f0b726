// Verifier: shapes (elementwise, copy, gemm, reductions, sort family, broadcasts), UB alignment,
// cube fractals, buffer capacity and addresses, region bounds.
#include "verify_test_util.h"

namespace tl {
namespace {
using testing::Clean;
using testing::cube_kernel;
using testing::Reports;
using testing::vector_kernel;

TEST(VerifyShape, ElementwiseExtentsDiffer) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {16, 64}, f32), y = T::alloc_ub("y", {8, 64}, f32);
    bad = __LINE__ + 1;
    T::tile::add(x, x, y);
  });
  EXPECT_TRUE(Reports(f, "shape-mismatch", "T.tile.add", "src1", bad));
}

// Found by fuzz_ir_launch (fuzz/regressions/ir_launch/load_with_too_few_indices.ir): `x[i]` on
// a 2-D tile in IR text passed the verifier and reached an internal assertion of
// vectorize_parallel's overlap analysis. An element access names one index per dimension.
TEST(VerifyShape, ElementAccessWithTheWrongNumberOfIndices) {
  int load_line = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {8, 64}, f32), y = T::alloc_ub("y", {8, 64}, f32);
    load_line = __LINE__ + 1;
    T::store(y, {0, 0}, LoadNode::make(x, {Expr(1)}));
  });
  EXPECT_TRUE(Reports(f, "element-index-count", "T.store", "value", load_line));
  // The same in IR text (a store with one index too many, which the DSL rejects itself):
  // tests/pass/verify_errors.tl.
}

TEST(VerifyShape, CopyExtentsDiffer) {
  int bad = 0;
  auto X = T::Tensor("X", {64, 64}, f32);
  auto f = vector_kernel({X}, [&] {
    auto x = T::alloc_ub("x", {16, 64}, f32);
    bad = __LINE__ + 1;
    T::copy(X.region({0, 0}, {8, 64}), x);
  });
  EXPECT_TRUE(Reports(f, "copy-shape-mismatch", "T.copy", "dst", bad));
}

TEST(VerifyShape, CopyIgnoresLeadingOnes) {
  auto W = T::Tensor("W", {4, 16, 64}, f32);
  auto f = vector_kernel({W}, [&] {
    auto x = T::alloc_ub("x", {16, 64}, f32);
    T::copy(W.region({1, 0, 0}, {1, 16, 64}), x);
  });
  EXPECT_TRUE(Clean(f));
}

TEST(VerifyShape, UbRowOfSevenFp32) {
  int bad = 0;
  auto X = T::Tensor("X", {16, 7}, f32);
  auto f = vector_kernel({X}, [&] {
    auto x = T::alloc_ub("x", {16, 7}, f32);
    bad = __LINE__ + 1;
    T::copy(X, x);
  });
  EXPECT_TRUE(Reports(f, "ub-row-alignment", "T.copy", "dst", bad));
}

TEST(VerifyShape, UbRegionStartMisaligned) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {72}, f32);
    bad = __LINE__ + 1;
    T::tile::exp(x.region({3}, {64}), x.region({8}, {64}));
  });
  EXPECT_TRUE(Reports(f, "ub-start-alignment", "T.tile.exp", "dst", bad));
}

TEST(VerifyShape, RegionOutOfBounds) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {64}, f32);
    bad = __LINE__ + 1;
    T::tile::exp(x, x.region({0}, {72}));
  });
  EXPECT_TRUE(Reports(f, "region-out-of-bounds", "T.tile.exp", "src", bad));
}

TEST(VerifyShape, GemmKMismatch) {
  int bad = 0;
  auto f = cube_kernel({}, [&] {
    auto a = T::alloc_L1("a", {32, 64}, f16), b = T::alloc_L1("b", {32, 32}, f16);
    auto c = T::alloc_L0C("c", {32, 32}, f32);
    bad = __LINE__ + 1;
    T::gemm_v0(a, b, c, {.init = true});
  });
  EXPECT_TRUE(Reports(f, "gemm-shape", "T.gemm_v0", "B", bad));
}

TEST(VerifyShape, GemmTransposeFlagsAgree) {
  auto f = cube_kernel({}, [&] {
    auto a = T::alloc_L1("a", {64, 32}, f16), b = T::alloc_L1("b", {48, 64}, f16);
    auto c = T::alloc_L0C("c", {32, 48}, f32);
    T::gemm_v0(a, b, c, {.transpose_A = true, .transpose_B = true, .init = true});
  });
  EXPECT_TRUE(Clean(f));
}

TEST(VerifyShape, CubeOperandNotFractal) {
  int bad = 0;
  auto f = cube_kernel({}, [&] {
    auto a = T::alloc_L0A("a", {24, 16}, f16), b = T::alloc_L0B("b", {16, 16}, f16);
    auto c = T::alloc_L0C("c", {24, 16}, f32);
    bad = __LINE__ + 1;
    T::mma(a, b, c, true);
  });
  EXPECT_TRUE(Reports(f, "cube-fractal-shape", "T.mma", "A", bad));
}

TEST(VerifyShape, Int8KMustBeMultipleOf32) {
  int bad = 0;
  auto f = cube_kernel({}, [&] {
    auto a = T::alloc_L0A("a", {16, 16}, i8), b = T::alloc_L0B("b", {16, 16}, i8);
    auto c = T::alloc_L0C("c", {16, 16}, i32);
    bad = __LINE__ + 1;
    T::mma(a, b, c, true);
  });
  EXPECT_TRUE(Reports(f, "cube-fractal-shape", "T.mma", "A", bad));
}

TEST(VerifyShape, ReduceDstShape) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {16, 64}, f32), r = T::alloc_ub("r", {64}, f32);
    bad = __LINE__ + 1;
    T::reduce_sum(x, r, -1);
  });
  EXPECT_TRUE(Reports(f, "reduce-shape", "T.reduce_sum", "dst", bad));
}

TEST(VerifyShape, ReduceKeepsOrDropsDim) {
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {16, 64}, f32);
    auto r = T::alloc_ub("r", {16}, f32), c = T::alloc_ub("c", {64}, f32);
    T::reduce_max(x, r, -1);
    T::reduce_max(x, c, 0);
  });
  EXPECT_TRUE(Clean(f));
}

TEST(VerifyShape, ReduceDimOutOfRange) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {16, 64}, f32), r = T::alloc_ub("r", {16}, f32);
    bad = __LINE__ + 1;
    T::reduce_min(x, r, 2);
  });
  EXPECT_TRUE(Reports(f, "reduce-dim", "T.reduce_min", "src", bad));
}

TEST(VerifyShape, SortDstTooSmall) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto s = T::alloc_ub("s", {64}, f32), d = T::alloc_ub("d", {64}, f32);
    bad = __LINE__ + 1;
    T::sort(d, s, 64);  // 64 pairs of 8 B need 128 fp32
  });
  EXPECT_TRUE(Reports(f, "sort-buffer-size", "T.sort", "dst", bad));
}

TEST(VerifyShape, TopkLargerThanSource) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto s = T::alloc_ub("s", {64}, f32), d = T::alloc_ub("d", {256}, f32);
    bad = __LINE__ + 1;
    T::topk(d, s, 80, 64);
  });
  EXPECT_TRUE(Reports(f, "sort-count", "T.topk", "k", bad));
}

TEST(VerifyShape, BroadcastIncompatible) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto s = T::alloc_ub("s", {1, 24}, f32), d = T::alloc_ub("d", {16, 64}, f32);
    bad = __LINE__ + 1;
    T::tile::broadcast(d, s);
  });
  EXPECT_TRUE(Reports(f, "broadcast-shape", "T.tile.broadcast", "src", bad));
}

TEST(VerifyShape, RowExpandNeedsOneValuePerRow) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {16, 64}, f32), r = T::alloc_ub("r", {8, 8}, f32);
    bad = __LINE__ + 1;
    T::tile::row_expand_mul(x, x, r);
  });
  EXPECT_TRUE(Reports(f, "row-expand-shape", "T.tile.row_expand_mul", "src1", bad));
}

TEST(VerifyShape, TransposeIsOne16x16Block) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {32, 32}, f16), y = T::alloc_ub("y", {32, 32}, f16);
    bad = __LINE__ + 1;
    T::tile::transpose(y, x);
  });
  EXPECT_TRUE(Reports(f, "transpose-shape", "T.tile.transpose", "dst", bad));
}

TEST(VerifyShape, UbBufferLargerThanUb) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    bad = __LINE__ + 1;
    T::alloc_ub("big", {200 * 1024}, u8);
  });
  EXPECT_TRUE(Reports(f, "buffer-capacity", "T.alloc_ub", "shape", bad, "A2"));
  EXPECT_TRUE(Clean(f, "950"));  // 248 KB of UB
}

TEST(VerifyShape, L0AAddressMisaligned) {
  int bad = 0;
  auto f = cube_kernel({}, [&] {
    bad = __LINE__ + 1;
    T::alloc_L0A("a", {16, 16}, f16, 100);
  });
  EXPECT_TRUE(Reports(f, "buffer-address-alignment", "T.alloc_L0A", "address", bad));
}

TEST(VerifyShape, AddressPastTheEnd) {
  int bad = 0;
  auto f = cube_kernel({}, [&] {
    bad = __LINE__ + 1;
    T::alloc_L0B("b", {128, 256}, f16, 512);
  });
  EXPECT_TRUE(Reports(f, "buffer-address-range", "T.alloc_L0B", "address", bad));
}

}  // namespace
}  // namespace tl
