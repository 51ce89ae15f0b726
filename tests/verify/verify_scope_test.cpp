// Verifier: operand memories, copy paths, core scopes and kernel structure.
#include "verify_test_util.h"

#include "tl/ir_ops.h"

namespace tl {
namespace {
using testing::Clean;
using testing::cube_kernel;
using testing::kernel;
using testing::Reports;
using testing::vector_kernel;

TEST(VerifyScope, VectorOpOnL1) {
  int bad = 0;
  auto f = kernel({}, [&] {
    auto x = T::alloc_L1("x_l1", {16, 64}, f16);
    T::Scope(Core::Vector, [&] {
      auto y = T::alloc_ub("y", {16, 64}, f16);
      bad = __LINE__ + 1;
      T::tile::add(x, y, y);
    });
  });
  auto ds = verify(f);
  EXPECT_TRUE(testing::HasDiag(ds, "vector-operand-scope", "T.tile.add", "dst", bad));
  for (const auto& d : ds)
    if (d.rule == "vector-operand-scope") {
      EXPECT_EQ(d.context, "buffer 'x_l1' in L1");
      EXPECT_NE(d.str().find("tests/verify/verify_scope_test.cpp:" + std::to_string(bad) +
                             ": T.tile.add: operand 'dst' (buffer 'x_l1' in L1): vector ops take "
                             "UB operands only, got L1 [rule: vector-operand-scope]"),
                std::string::npos)
          << d.str();
    }
}

// UB -> L1 is not a path on A2; the same kernel is clean on 950 (UB->L1 on MTE3, from the AIV).
PrimFunc ub_to_l1(int& bad) {
  auto X = T::Tensor("X", {16, 64}, f16);
  return kernel({X}, [&] {
    auto l1 = T::alloc_L1("l1", {16, 64}, f16);
    T::Scope(Core::Vector, [&] {
      auto x = T::alloc_ub("x", {16, 64}, f16);
      T::copy(X, x);
      T::set_flag(Pipe::MTE2, Pipe::MTE3, 0);
      T::wait_flag(Pipe::MTE2, Pipe::MTE3, 0);
      bad = __LINE__ + 1;
      T::copy(x, l1);
    });
  });
}
TEST(VerifyScope, UbToL1IllegalOnA2LegalOn950) {
  int bad = 0;
  auto f = ub_to_l1(bad);
  EXPECT_TRUE(Reports(f, "copy-path", "T.copy", "dst", bad, "A2"));
  EXPECT_TRUE(Clean(f, "950"));
}

TEST(VerifyScope, L0CToUbIllegalOnA2) {
  int bad = 0;
  auto f = kernel({}, [&] {
    auto u = T::alloc_ub("u", {16, 16}, f32);
    T::Scope(Core::Cube, [&] {
      auto c = T::alloc_L0C("c", {16, 16}, f32);
      bad = __LINE__ + 1;
      T::copy(c, u);
    });
  });
  EXPECT_TRUE(Reports(f, "copy-path", "T.copy", "dst", bad));
}

TEST(VerifyScope, GmToL0AIllegalOn950) {
  int bad = 0;
  auto A = T::Tensor("A", {16, 16}, f16);
  auto f = cube_kernel({A}, [&] {
    auto a = T::alloc_L0A("a", {16, 16}, f16);
    bad = __LINE__ + 1;
    T::copy(A, a);
  });
  EXPECT_TRUE(Clean(f, "A2"));
  EXPECT_TRUE(Reports(f, "copy-path", "T.copy", "dst", bad, "950"));
}

TEST(VerifyScope, CubeOpInVectorScope) {
  int bad = 0;
  auto f = kernel({}, [&] {
    auto a = T::alloc_L0A("a", {16, 16}, f16);
    auto b = T::alloc_L0B("b", {16, 16}, f16);
    auto c = T::alloc_L0C("c", {16, 16}, f32);
    T::Scope(Core::Vector, [&] {
      bad = __LINE__ + 1;
      T::mma(a, b, c, true);
    });
  });
  EXPECT_TRUE(Reports(f, "op-core-scope", "T.mma", "", bad));
}

TEST(VerifyScope, VectorOpInCubeScope) {
  int bad = 0;
  auto f = kernel({}, [&] {
    auto x = T::alloc_ub("x", {64}, f32);
    T::Scope(Core::Cube, [&] {
      bad = __LINE__ + 1;
      T::tile::exp(x, x);
    });
  });
  EXPECT_TRUE(Reports(f, "op-core-scope", "T.tile.exp", "", bad));
}

TEST(VerifyScope, OpOutsideAnyScope) {
  int bad = 0;
  auto f = kernel({}, [&] {
    auto x = T::alloc_ub("x", {64}, f32);
    bad = __LINE__ + 1;
    T::tile::exp(x, x);
  });
  EXPECT_TRUE(Reports(f, "op-outside-scope", "T.tile.exp", "", bad));
}

TEST(VerifyScope, CubeCopyInVectorScope) {
  int bad = 0;
  auto A = T::Tensor("A", {16, 16}, f16);
  auto f = kernel({A}, [&] {
    auto a = T::alloc_L1("a", {16, 16}, f16);
    T::Scope(Core::Vector, [&] {
      bad = __LINE__ + 1;
      T::copy(A, a);
    });
  });
  EXPECT_TRUE(Reports(f, "copy-core-scope", "T.copy", "", bad));
}

TEST(VerifyScope, L1AllocatedInVectorScope) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    bad = __LINE__ + 1;
    T::alloc_L1("a", {16, 16}, f16);
  });
  EXPECT_TRUE(Reports(f, "alloc-core-scope", "T.alloc_L1", "", bad));
}

TEST(VerifyScope, NestedScopes) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    bad = __LINE__ + 1;
    T::Scope(Core::Vector, [] {});
  });
  EXPECT_TRUE(Reports(f, "nested-scope", "T.Scope", "", bad));
}

TEST(VerifyScope, DeveloperScopeInExpertMode) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    bad = __LINE__ + 1;
    T::alloc_shared("s", {16, 16}, f16);
  });
  EXPECT_TRUE(Reports(f, "developer-scope-in-expert-mode", "T.alloc_shared", "", bad));
}

TEST(VerifyScope, AtomicAddIntoUb) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {64}, f32), y = T::alloc_ub("y", {64}, f32);
    bad = __LINE__ + 1;
    T::atomic_add(y, x);
  });
  EXPECT_TRUE(Reports(f, "atomic-add-dst", "T.atomic_add", "dst", bad));
}

TEST(VerifyScope, GemmOperandInL0A) {
  int bad = 0;
  auto f = cube_kernel({}, [&] {
    auto a = T::alloc_L0A("a", {16, 16}, f16);
    auto b = T::alloc_L1("b", {16, 16}, f16);
    auto c = T::alloc_L0C("c", {16, 16}, f32);
    bad = __LINE__ + 1;
    T::gemm_v0(a, b, c, {.init = true});
  });
  EXPECT_TRUE(Reports(f, "cube-operand-scope", "T.gemm_v0", "A", bad));
}

TEST(VerifyScope, ScalarStoreToL0C) {
  int bad = 0;
  auto f = cube_kernel({}, [&] {
    auto c = T::alloc_L0C("c", {16, 16}, f32);
    bad = __LINE__ + 1;
    T::store(c, {0, 0}, imm(f32, 1.0));
  });
  EXPECT_TRUE(Reports(f, "scalar-access-scope", "T.store", "c", bad));
}

TEST(VerifyScope, DumpTensorOfL0A) {
  int bad = 0;
  auto f = cube_kernel({}, [&] {
    auto a = T::alloc_L0A("a", {16, 16}, f16);
    bad = __LINE__ + 1;
    T::dump_tensor(a);
  });
  EXPECT_TRUE(Reports(f, "dump-tensor-scope", "T.dump_tensor", "src", bad));
}

TEST(VerifyScope, ZeroBlocks) {
  int bad = 0;
  auto f = T::prim_func("k", {}, [&] {
    bad = __LINE__ + 1;
    T::Kernel(0, [](Expr, Expr) {});
  });
  EXPECT_TRUE(Reports(f, "kernel-num-blocks", "T.Kernel", "num_blocks", bad));
}

TEST(VerifyScope, TileOpBeforeTheKernel) {
  int bad = 0;
  auto X = T::Tensor("X", {64}, f32);
  auto f = T::prim_func("k", {X}, [&] {
    auto x = T::alloc_ub("x", {64}, f32);
    bad = __LINE__ + 1;
    T::copy(X, x);
    T::Kernel(1, [](Expr, Expr) {});
  });
  EXPECT_TRUE(Reports(f, "outside-kernel", "T.copy", "", bad));
}

TEST(VerifyScope, TwoKernelLaunches) {
  // The DSL refuses a second launch, so build the IR by hand.
  SourceLoc l1{"tests/verify/hand.cpp", 10}, l2{"tests/verify/hand.cpp", 11};
  Stmt k1 = KernelNode::make(1, Var("cid"), Var("vid"), SeqNode::make({}), l1);
  Stmt k2 = KernelNode::make(1, Var("cid2"), Var("vid2"), SeqNode::make({}), l2);
  auto f = make_prim_func("k", {}, {}, SeqNode::make({k1, k2}));
  EXPECT_TRUE(Reports(f, "kernel-count", "T.Kernel", "", 11));
  auto none = make_prim_func("k", {}, {}, SeqNode::make({}));
  EXPECT_TRUE(testing::HasDiag(verify(none), "kernel-count", "T.prim_func", "", 0));
}

}  // namespace
}  // namespace tl
