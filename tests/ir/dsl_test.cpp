// The DSL builds the IR it is asked for: statements, locations, start-point regions.
#include <gtest/gtest.h>

#include "tl/ir_equal.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"
#include "tl/printer.h"

namespace tl {
namespace {

TEST(Dsl, GemmPrintsWithLocations) {
  auto f = build_kernel(find_kernel("gemm"));
  std::string text = print(f);
  EXPECT_NE(text.find("T.gemm_v0(A_L1, B_L1, C_L0C, k == 0)"), std::string::npos) << text;
  EXPECT_NE(text.find("# @examples/gemm.cpp:"), std::string::npos) << text;
  EXPECT_NE(text.find("T.copy(A[cid // 4 * 128:cid // 4 * 128 + 128, k * 64:k * 64 + 64], A_L1)"),
            std::string::npos)
      << text;
}

TEST(Dsl, HashIgnoresNamesAndLocations) {
  auto a = build_kernel(find_kernel("gemm"));
  auto b = build_kernel(find_kernel("gemm"));
  EXPECT_TRUE(structural_equal(a, b)) << first_difference(a, b);
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  auto c = build_kernel(find_kernel("gemm"), {{"K", "512"}});
  EXPECT_FALSE(structural_equal(a, c));
  EXPECT_NE(structural_hash(a), structural_hash(c));
}

TEST(Dsl, StatementOutsidePrimFuncIsAUserError) {
  EXPECT_THROW(T::barrier_all(), Error);
}

}  // namespace
}  // namespace tl

namespace tl {
namespace {
TEST(Dsl, NamesMustBeIdentifiers) {
  for (const char* bad : {"in", "a b", "T", "1x", ""}) {
    EXPECT_THROW(T::prim_func("f", {T::Tensor("A", {16}, f32)},
                              [&] {
                                T::Kernel(1, [&](Expr, Expr) {
                                  T::Scope(Core::Vector, [&] { T::alloc_ub(bad, {16}, f32); });
                                });
                              }),
                 Error)
        << bad;
  }
  EXPECT_THROW(
      T::prim_func("f", {T::Tensor("a b", {16}, f32)}, [&] { T::Kernel(1, [&](Expr, Expr) {}); }),
      Error);
}
}  // namespace
}  // namespace tl
