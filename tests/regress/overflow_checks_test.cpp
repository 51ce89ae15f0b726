// Regressions of issue 10 item 1 (compiler side): the verifier's capacity, address and bounds
// checks, the planner and the NPU's compile step computed `address + bytes`, shape products and
// region ends in plain int64, so a UB buffer pinned at 2^63 - 32 or shaped (2^61, 8) fp32
// wrapped around to a small size, verified clean and crashed the launch. Every such value is
// now computed with checked (or saturating) arithmetic and reported.
#include <gtest/gtest.h>

#include <limits>

#include "pass/pass_test_util.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/parser.h"
#include "tl/storage.h"
#include "verify/verify_test_util.h"

namespace tl {
namespace {

using testing::error_of;
using testing::Reports;
using testing::vector_kernel;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

/// GM -> UB -> GM through `x`, which has `shape` (fp32) and `address`.
PrimFunc through_ub(std::vector<Expr> shape, int64_t address) {
  auto X = T::Tensor("X", {8}, f32);
  return vector_kernel({X}, [&] {
    auto x = T::alloc_ub("x", shape, f32, address);
    T::copy(X, x.region(std::vector<Expr>(shape.size(), Expr(0)), [&] {
      std::vector<Expr> e(shape.size(), Expr(1));
      e.back() = Expr(8);
      return e;
    }()));
    T::set_flag(Pipe::MTE2, Pipe::MTE3, 0);
    T::wait_flag(Pipe::MTE2, Pipe::MTE3, 0);
    T::copy(x.region(std::vector<Expr>(shape.size(), Expr(0)),
                     [&] {
                       std::vector<Expr> e(shape.size(), Expr(1));
                       e.back() = Expr(8);
                       return e;
                     }()),
            X);
  });
}

/// Every way of compiling `f` for the NPU is a tl::Error (never a crash or an internal error).
void expect_compile_errors(const PrimFunc& f) {
  for (bool verify : {true, false})
    for (bool lower : {true, false}) {
      SCOPED_TRACE(fmt::format("verify={} lower={}", verify, lower));
      EXPECT_THROW(compile(f, default_target(), {.verify = verify, .lower = lower, .cache = false}),
                   Error);
    }
}

TEST(OverflowChecks, UbAddressNearInt64MaxIsOutOfRange) {
  PrimFunc f = through_ub({Expr(8)}, kMax - 31);  // 2^63 - 32
  EXPECT_TRUE(Reports(f, "buffer-address-range", "T.alloc_ub", "address", 0));
  expect_compile_errors(f);
}

TEST(OverflowChecks, UbShapeWhoseBytesOverflowIsOverCapacity) {
  PrimFunc f = through_ub({Expr(int64_t{1} << 61), Expr(int64_t{8})}, -1);  // 2^64 fp32 elements
  EXPECT_TRUE(Reports(f, "buffer-capacity", "T.alloc_ub", "shape", 0));
  std::string msg = format_diagnostics(verify(f));
  EXPECT_NE(msg.find("overflows int64"), std::string::npos) << msg;
  expect_compile_errors(f);
}

TEST(OverflowChecks, SameThroughIrText) {
  const std::pair<const char*, const char*> cases[] = {
      {"T.alloc_ub((8,), \"float32\", address=9223372036854775776)", "x[0:8]"},
      {"T.alloc_ub((T.int64(2305843009213693952), T.int64(8)), \"float32\")", "x[0:1, 0:8]"}};
  for (auto [decl, region] : cases) {
    SCOPED_TRACE(decl);
    PrimFunc f = parse(fmt::format(R"(@T.prim_func
def k(X: T.Tensor((8,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = {}
            T.copy(X, {})
            T.set_flag("MTE2", "MTE3", 0)
            T.wait_flag("MTE2", "MTE3", 0)
            T.copy({}, X)
)",
                                   decl, region, region));
    EXPECT_FALSE(verify(f).empty());
    expect_compile_errors(f);
  }
}

TEST(OverflowChecks, RegionStartNearInt64MaxIsOutOfBounds) {
  auto X = T::Tensor("X", {8}, f32);
  PrimFunc f = vector_kernel({X}, [&] {
    auto x = T::alloc_ub("x", {64}, f32);
    T::copy(X, x.region({Expr(kMax - 3)}, {Expr(8)}));
  });
  EXPECT_TRUE(Reports(f, "region-out-of-bounds", "T.copy", "dst", 0));
}

TEST(OverflowChecks, GmTensorWhoseBytesOverflowIsReported) {
  auto X = T::Tensor("X", {Expr(int64_t{1} << 61), Expr(int64_t{8})}, f32);
  PrimFunc f = vector_kernel({X}, [&] { T::pipe_barrier(Pipe::V); });
  EXPECT_TRUE(Reports(f, "buffer-shape", "T.Tensor", "shape", 0));
}

TEST(OverflowChecks, SortCountsThatOverflowOrAreNegative) {
  auto f = [](Expr num) {
    return vector_kernel({}, [&] {
      auto s = T::alloc_ub("s", {64}, f32);
      T::init_sort_buf(s, num);
    });
  };
  EXPECT_TRUE(Reports(f(Expr(kMax / 2)), "sort-buffer-size", "T.init_sort_buf", "dst", 0));
  EXPECT_TRUE(Reports(f(Expr(-4)), "sort-count", "T.init_sort_buf", "dst", 0));
}

TEST(OverflowChecks, StorageBytesSaturates) {
  EXPECT_EQ(storage_bytes(MemScope::UB, f32, {int64_t{1} << 61, 8}), kMax);
  EXPECT_EQ(storage_bytes(MemScope::L1, f16, {kMax - 3, 32}), kMax);  // rows padded past int64
  EXPECT_EQ(storage_bytes(MemScope::UB, f32, {16, 8}), 512);
}

TEST(OverflowChecks, PlannerWithoutTheVerifierRejectsAPinnedAddressNearInt64Max) {
  PrimFunc f = through_ub({Expr(8)}, kMax - 31);
  PassOptions no_verify;
  no_verify.disabled_passes = {"verify"};
  std::string msg = error_of([&] { lower(f, default_target(), no_verify); });
  EXPECT_NE(msg.find("capacity"), std::string::npos) << msg;
}

}  // namespace
}  // namespace tl
