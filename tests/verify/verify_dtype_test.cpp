// Verifier: dtype rules from the target tables (vector dtypes, casts, Mmad combos, fixpipe,
// compare/select/gather formats, transposed loads, atomics).
#include "verify_test_util.h"

namespace tl {
namespace {
using testing::Clean;
using testing::cube_kernel;
using testing::Reports;
using testing::vector_kernel;

TEST(VerifyDtype, MmaWithFp32TimesFp16) {
  // A2's Mmad table (docs/hardware.md section 5) has fp32 x fp32 -> fp32 but no mixed fp32 x fp16.
  int bad = 0;
  auto f = cube_kernel({}, [&] {
    auto a = T::alloc_L0A("a", {16, 16}, f32);
    auto b = T::alloc_L0B("b", {16, 16}, f16);
    auto c = T::alloc_L0C("c", {16, 16}, f32);
    bad = __LINE__ + 1;
    T::mma(a, b, c, true);
  });
  EXPECT_TRUE(Reports(f, "mma-dtype", "T.mma", "B", bad));
}

TEST(VerifyDtype, MmaFp16AccumulatorForbidden) {
  int bad = 0;
  auto f = cube_kernel({}, [&] {
    auto a = T::alloc_L0A("a", {16, 16}, f16);
    auto b = T::alloc_L0B("b", {16, 16}, f16);
    auto c = T::alloc_L0C("c", {16, 16}, f16);
    bad = __LINE__ + 1;
    T::mma(a, b, c, true);
  });
  EXPECT_TRUE(Reports(f, "mma-dtype", "T.mma", "C", bad));
}

TEST(VerifyDtype, DivOnInt32) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {64}, i32);
    bad = __LINE__ + 1;
    T::tile::div(x, x, x);
  });
  EXPECT_TRUE(Reports(f, "vector-dtype", "T.tile.div", "dst", bad));
}

TEST(VerifyDtype, AddMixesFp16AndFp32) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {64}, f16);
    auto y = T::alloc_ub("y", {64}, f32);
    bad = __LINE__ + 1;
    T::tile::add(x, x, y);
  });
  EXPECT_TRUE(Reports(f, "operand-dtype-mismatch", "T.tile.add", "src1", bad));
}

TEST(VerifyDtype, CastPairNotOnTarget) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {64}, f16);
    auto y = T::alloc_ub("y", {64}, bf16);
    bad = __LINE__ + 1;
    T::tile::cast(y, x, "CAST_RINT");
  });
  EXPECT_TRUE(Reports(f, "cast-pair", "T.tile.cast", "dst", bad));
}

TEST(VerifyDtype, CastModeNotAllowedForPair) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {64}, f16);
    auto y = T::alloc_ub("y", {64}, f32);
    bad = __LINE__ + 1;
    T::tile::cast(y, x, "CAST_RINT");  // fp16 -> fp32 is exact: CAST_NONE only
  });
  EXPECT_TRUE(Reports(f, "cast-mode", "T.tile.cast", "dst", bad));
}

TEST(VerifyDtype, Fp8CastOnlyOn950) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {64}, f32);
    auto y = T::alloc_ub("y", {64}, f8e4m3);
    bad = __LINE__ + 1;
    T::tile::cast(y, x, "CAST_RINT");
  });
  EXPECT_TRUE(Reports(f, "cast-pair", "T.tile.cast", "dst", bad, "A2"));
  EXPECT_TRUE(Clean(f, "950"));
}

TEST(VerifyDtype, FixpipeFp32ToFp32IntoL1) {
  int bad = 0;
  auto f = cube_kernel({}, [&] {
    auto c = T::alloc_L0C("c", {16, 16}, f32);
    auto l1 = T::alloc_L1("l1", {16, 16}, f32);
    bad = __LINE__ + 1;
    T::copy(c, l1);
  });
  EXPECT_TRUE(Reports(f, "fixpipe-dtype", "T.copy", "dst", bad));
}

TEST(VerifyDtype, CopyChangesDtypeOutsideFixpipe) {
  int bad = 0;
  auto X = T::Tensor("X", {64}, f16);
  auto f = vector_kernel({X}, [&] {
    auto x = T::alloc_ub("x", {64}, f32);
    bad = __LINE__ + 1;
    T::copy(X, x);
  });
  EXPECT_TRUE(Reports(f, "copy-dtype", "T.copy", "dst", bad));
}

TEST(VerifyDtype, CompareIntoFp32) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {64}, f32);
    auto m = T::alloc_ub("m", {64}, f32);
    bad = __LINE__ + 1;
    T::tile::compare(m, x, x, "LT");
  });
  EXPECT_TRUE(Reports(f, "compare-dst-dtype", "T.tile.compare", "dst", bad));
}

TEST(VerifyDtype, CompareNot256ByteMultiple) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {40}, f32);  // 160 bytes: 32 B rows but not 256 B
    auto m = T::alloc_ub("m", {32}, u8);
    bad = __LINE__ + 1;
    T::tile::compare(m, x, x, "LT");
  });
  EXPECT_TRUE(Reports(f, "compare-count-alignment", "T.tile.compare", "src0", bad));
}

TEST(VerifyDtype, CompareInt32OnlyEq) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {64}, i32);
    auto m = T::alloc_ub("m", {32}, u8);
    T::tile::compare(m, x, x, "EQ");
    bad = __LINE__ + 1;
    T::tile::compare(m, x, x, "LT");
  });
  auto ds = verify(f);
  EXPECT_TRUE(testing::HasDiag(ds, "compare-mode", "T.tile.compare", "src0", bad));
  EXPECT_EQ(ds.size(), 1u) << format_diagnostics(ds);
}

TEST(VerifyDtype, CompareMaskTooSmall) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {128}, f32);
    auto m = T::alloc_ub("m", {8}, u8);
    bad = __LINE__ + 1;
    T::tile::compare(m, x, x, "GT");
  });
  EXPECT_TRUE(Reports(f, "compare-dst-size", "T.tile.compare", "dst", bad));
}

TEST(VerifyDtype, TransposedLoadOfFp32) {
  int bad = 0;
  auto f = cube_kernel({}, [&] {
    auto a = T::alloc_L1("a", {16, 16}, f32);
    auto a0 = T::alloc_L0A("a0", {16, 16}, f32);
    bad = __LINE__ + 1;
    T::copy(a, a0, {.transpose = true});
  });
  EXPECT_TRUE(Reports(f, "transpose-16bit", "T.copy", "src", bad));
}

TEST(VerifyDtype, ReluOptionOnGmToUb) {
  int bad = 0;
  auto X = T::Tensor("X", {64}, f32);
  auto f = vector_kernel({X}, [&] {
    auto x = T::alloc_ub("x", {64}, f32);
    bad = __LINE__ + 1;
    T::copy(X, x, {.enable_relu = true});
  });
  EXPECT_TRUE(Reports(f, "copy-option", "T.copy", "src", bad));
}

TEST(VerifyDtype, SelectWithFp16Mask) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {128}, f16);
    auto m = T::alloc_ub("m", {128}, f16);
    bad = __LINE__ + 1;
    T::tile::select(x, m, x, x);
  });
  EXPECT_TRUE(Reports(f, "select-mask-dtype", "T.tile.select", "mask", bad));
}

TEST(VerifyDtype, SelectMode2WithScalar) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {128}, f16);
    auto m = T::alloc_ub("m", {32}, u8);
    bad = __LINE__ + 1;
    T::tile::select(x, m, x, imm(f16, 0.0), 2);
  });
  EXPECT_TRUE(Reports(f, "select-mode", "T.tile.select", "src1", bad));
}

TEST(VerifyDtype, GatherWithInt32Offsets) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto s = T::alloc_ub("s", {64}, f32), d = T::alloc_ub("d", {64}, f32);
    auto o = T::alloc_ub("o", {64}, i32);
    bad = __LINE__ + 1;
    T::tile::gather(d, s, o);
  });
  EXPECT_TRUE(Reports(f, "gather-offset-dtype", "T.tile.gather", "offsets", bad));
}

TEST(VerifyDtype, GatherInPlace) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto s = T::alloc_ub("s", {64}, f32);
    auto o = T::alloc_ub("o", {64}, u32);
    bad = __LINE__ + 1;
    T::tile::gather(s, s, o);
  });
  EXPECT_TRUE(Reports(f, "gather-alias", "T.tile.gather", "src", bad));
}

TEST(VerifyDtype, AtomicAddOfUint8) {
  int bad = 0;
  auto Y = T::Tensor("Y", {64}, u8);
  auto f = vector_kernel({Y}, [&] {
    auto x = T::alloc_ub("x", {64}, u8);
    bad = __LINE__ + 1;
    T::atomic_add(Y, x);
  });
  EXPECT_TRUE(Reports(f, "atomic-add-dtype", "T.atomic_add", "dst", bad));
}

TEST(VerifyDtype, GatherMaskWithoutPatternOrMask) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto s = T::alloc_ub("s", {64}, f32), d = T::alloc_ub("d", {64}, f32);
    bad = __LINE__ + 1;
    T::tile::gather_mask(d, s, std::string(""));
  });
  EXPECT_TRUE(Reports(f, "gather-mask-source", "T.tile.gather_mask", "", bad));
}

TEST(VerifyDtype, SelectMaskTooShort) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {512}, f16);
    auto m = T::alloc_ub("m", {32}, u8);  // 256 bits for 512 elements
    bad = __LINE__ + 1;
    T::tile::select(x, m, x, x, 2);
  });
  EXPECT_TRUE(Reports(f, "select-mask-size", "T.tile.select", "mask", bad));
}

TEST(VerifyDtype, EmptyBufferShape) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    bad = __LINE__ + 1;
    T::alloc_ub("e", {0, 64}, f32);
  });
  EXPECT_TRUE(Reports(f, "buffer-shape", "T.alloc_ub", "shape", bad));
}

}  // namespace
}  // namespace tl
