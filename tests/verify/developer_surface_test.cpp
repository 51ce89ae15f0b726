// The developer-mode surface of tl::T (docs/developer_mode.md): the `cid`-only T::Kernel with
// `threads`, element assignment `c(i, j) = ...`, multi-dimensional T::Parallel, T::gemm and
// T::clear; that it prints and parses back, and the verifier's developer rules (no scopes, no
// user syncs, no physically placed buffers, developer ops only in developer kernels).
#include <gtest/gtest.h>

#include "tl/ir_equal.h"
#include "tl/parser.h"
#include "tl/printer.h"
#include "verify_test_util.h"

namespace tl {
namespace {

using testing::Clean;
using testing::HasDiag;
using testing::Reports;

/// A developer matmul-add: every construct of the surface once.
PrimFunc matmul_add(int threads) {
  auto A = T::Tensor("A", {128, 64}, f16);
  auto B = T::Tensor("B", {64, 128}, f16);
  auto D = T::Tensor("D", {128, 128}, f16);
  auto C = T::Tensor("C", {128, 128}, f16);
  return T::prim_func("matmul_add", {A, B, D, C}, [&] {
    T::Kernel(
        1,
        [&](Expr cid) {
          auto a = T::alloc_shared("a", {128, 64}, f16);
          auto b = T::alloc_shared("b", {64, 128}, f16);
          auto c = T::alloc_fragment("c", {128, 128}, f32);
          auto d = T::alloc_shared("d", {128, 128}, f16);
          T::copy(A.at({cid * 128, 0}), a);
          T::copy(B, b);
          T::clear(c);
          T::gemm(a, b, c);
          T::copy(D, d);
          T::Parallel({128, 128}, [&](Expr i, Expr j) { d(i, j) = cast(f16, c(i, j)) + d(i, j); });
          T::copy(d, C);
        },
        {.threads = threads});
  });
}

const KernelNode* any_kernel_of(const PrimFunc& f) {
  for (const auto& s :
       f->body.as<SeqNode>() ? f->body.as<SeqNode>()->stmts : std::vector<Stmt>{f->body})
    if (auto* k = s.as<KernelNode>()) return k;
  return nullptr;
}

TEST(DeveloperSurface, KernelHasNoVidAndKeepsThreads) {
  PrimFunc f = matmul_add(2);
  const KernelNode* k = any_kernel_of(f);
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->developer());
  EXPECT_EQ(k->threads, 2);
  EXPECT_NE(print(f).find("with T.Kernel(1, threads=2) as cid:"), std::string::npos) << print(f);
}

TEST(DeveloperSurface, PrintsAndParsesBack) {
  for (int threads : {1, 2}) {
    PrimFunc f = matmul_add(threads);
    std::string text = print(f);
    PrimFunc g = parse(text, "matmul_add.tl");
    EXPECT_EQ(print(g), text);
    EXPECT_TRUE(structural_equal(f, g)) << first_difference(f, g);
    EXPECT_EQ(structural_hash(f), structural_hash(g));
  }
  // Threads are part of the kernel's identity.
  EXPECT_FALSE(structural_equal(matmul_add(1), matmul_add(2)));
  EXPECT_NE(structural_hash(matmul_add(1)), structural_hash(matmul_add(2)));
}

TEST(DeveloperSurface, ElementAssignmentIsAStoreAtItsLine) {
  int line = 0;
  auto X = T::Tensor("X", {16, 32}, f32);
  PrimFunc f = T::prim_func("k", {X}, [&] {
    T::Kernel(1, [&](Expr) {
      auto x = T::alloc_shared("x", {16, 32}, f32);
      T::copy(X, x);
      T::Parallel({16, 32}, [&](Expr i, Expr j) {
        line = __LINE__ + 1;
        x(i, j) = x(i, j) * 2.0 + 1.0;
      });
      T::copy(x, X);
    });
  });
  std::string text = print(f);
  EXPECT_NE(text.find("for i in T.Parallel(16):"), std::string::npos) << text;
  EXPECT_NE(text.find("for j in T.Parallel(32):"), std::string::npos) << text;
  EXPECT_NE(text.find("x[i, j] = x[i, j] * 2.0 + 1.0"), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("developer_surface_test.cpp:{}", line)), std::string::npos)
      << text;
}

TEST(DeveloperSurface, ThreeDimensionalParallelAndVarAssignment) {
  auto X = T::Tensor("X", {2, 4, 8}, f32);
  PrimFunc f = T::prim_func("k", {X}, [&] {
    T::Kernel(1, [&](Expr) {
      auto x = T::alloc_shared("x", {2, 4, 8}, f32);
      auto s = T::alloc_var("s", f32, 0.0);
      s() = s() + 1.0;
      T::Parallel({2, 4, 8}, [&](Expr i, Expr j, Expr k) { x(i, j, k) = s(); });
      T::copy(x, X);
    });
  });
  std::string text = print(f);
  EXPECT_NE(text.find("for k in T.Parallel(8):"), std::string::npos) << text;
  EXPECT_NE(text.find("s[0] = s[0] + 1.0"), std::string::npos) << text;
  EXPECT_TRUE(Clean(f));
}

TEST(DeveloperSurface, ParallelNeedsOneExtentPerIndex) {
  try {
    T::prim_func("k", {}, [&] {
      T::Kernel(1, [&](Expr) { T::Parallel({4, 4, 4}, [&](Expr, Expr) {}); });
    });
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a body of 2 indices needs 2 extents, got 3"),
              std::string::npos)
        << e.what();
  }
}

TEST(DeveloperSurface, ThreadsOtherThanOneOrTwoAreRejected) {
  try {
    T::prim_func("k", {}, [&] { T::Kernel(1, [&](Expr) {}, {.threads = 4}); });
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("threads must be 1 or 2"), std::string::npos) << e.what();
  }
  for (const char* bad :
       {"threads=3) as cid:", "threads=0) as cid:", "threads=2) as (cid, vid):"}) {
    std::string text = fmt::format(
        "@T.prim_func\ndef k():\n    with T.Kernel(1, {}\n        T.printf(\"x\")\n", bad);
    EXPECT_THROW(parse(text, "k.tl"), Error) << text;
  }
}

TEST(DeveloperSurface, DeveloperKernelVerifiesClean) {
  EXPECT_TRUE(Clean(matmul_add(2)));
}

TEST(DeveloperVerify, ScopesSyncsAndPhysicalBuffersAreTheCompilersJob) {
  int scope_line = 0, sync_line = 0, ub_line = 0;
  PrimFunc f = T::prim_func("k", {}, [&] {
    T::Kernel(1, [&](Expr) {
      ub_line = __LINE__ + 1;
      T::alloc_ub("x", {16}, f32);
      sync_line = __LINE__ + 1;
      T::pipe_barrier(Pipe::V);
      scope_line = __LINE__ + 1;
      T::Scope(Core::Vector, [] {});
    });
  });
  EXPECT_TRUE(Reports(f, "developer-physical-scope", "T.alloc_ub", "", ub_line));
  EXPECT_TRUE(Reports(f, "developer-user-sync", "T.pipe_barrier", "", sync_line));
  EXPECT_TRUE(Reports(f, "developer-scope", "T.Scope", "", scope_line));
}

TEST(DeveloperVerify, DeveloperOpsAndLoopsStayOutOfExpertKernels) {
  int gemm_line = 0, par_line = 0, shared_line = 0;
  PrimFunc f = T::prim_func("k", {}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Cube, [&] {
        auto a = T::alloc_L1("a", {16, 16}, f16);
        auto b = T::alloc_L1("b", {16, 16}, f16);
        auto c = T::alloc_L0C("c", {16, 16}, f32);
        gemm_line = __LINE__ + 1;
        T::gemm(a, b, c);
      });
      T::Scope(Core::Vector, [&] {
        shared_line = __LINE__ + 1;
        auto x = T::alloc_shared("x", {16}, f32);
        par_line = __LINE__ + 1;
        T::Parallel(16, [&](Expr i) { x(i) = 0.0; });
      });
    });
  });
  EXPECT_TRUE(Reports(f, "developer-op-in-expert-mode", "T.gemm", "", gemm_line));
  // A T.Parallel in the Vector scope is an expert loop too (issue 29): no report for it.
  EXPECT_FALSE(HasDiag(verify(f), "developer-loop-in-expert-mode", "T.Parallel", "", par_line));
  EXPECT_TRUE(Reports(f, "developer-scope-in-expert-mode", "T.alloc_shared", "", shared_line));
}

}  // namespace
}  // namespace tl
