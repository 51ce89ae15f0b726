// vectorize_parallel: T.Parallel element loops -> vector tile ops. IR text in / exact IR text
// out for each mapping (1-3 dims, broadcasts, scalars, casts, selects, temporaries, partial and
// symbolic regions), errors with their reason and source line, the scalar fallback, and the
// numeric contract: a fuzzer runs random expression trees vectorised and as serial scalar
// loops on the virtual NPU and compares the outputs bit for bit.
//
// The numeric contract is tested in vectorize_parallel_fuzz_test.cpp (random expression trees,
// the exhaustive intrinsic table) and vectorize_parallel_runs_test.cpp (chosen loops).
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "pass/pass_test_util.h"
#include "pass/vectorize_parallel_util.h"
#include "tl/arith.h"
#include "tl/npu/npu.h"
#include "tl/op.h"
#include "tl/runtime.h"
#include "tl/verifier.h"

namespace tl {
namespace {

using namespace vptest;
using testing::error_of;

std::string error_text(const std::string& text) {
  return error_of([&] { vectorize_parallel(parse(text, "k.py"), default_target()); });
}

// ---- IR text in, IR text out -------------------------------------------------------------------
// (The first two cases, one- and two-dimensional elementwise loops:
// tests/pass/vectorize_parallel.tl.)

TEST(VectorizeParallel, AnOperandReadingTheDestinationKeepsTheFirstOperandInATemporary) {
  // c * ... reads c's old values after a * b is computed: a * b cannot go into c first.
  constexpr std::string_view decls = R"(            a = T.alloc_ub((16, 32), "float32")
            b = T.alloc_ub((16, 32), "float32")
            c = T.alloc_ub((16, 32), "float32")
)";
  EXPECT_EQ(vectorized(kernel(decls, R"(            for i in T.Parallel(16):
                for j in T.Parallel(32):
                    c[i, j] = a[i, j] * b[i, j] - c[i, j] * 2.0
)")),
            kernel(decls, R"(            vec_t0 = T.alloc_ub((16, 32), "float32")
            vec_t1 = T.alloc_ub((16, 32), "float32")
            T.tile.mul(vec_t0, a, b)
            T.tile.mul(vec_t1, c, 2.0)
            T.tile.sub(c, vec_t0, vec_t1)
)"));
}

TEST(VectorizeParallel, ThreeDimensionalMaxIsCompareAndSelect) {
  // tile.max gives NaN when either operand is NaN; the scalar loop's max(x, y) is
  // (x < y ? y : x), which keeps x when y is NaN: compare + select is the exact form.
  constexpr std::string_view decls = R"(            a = T.alloc_ub((2, 4, 16), "float32")
            b = T.alloc_ub((2, 4, 16), "float32")
            c = T.alloc_ub((2, 4, 16), "float32")
)";
  EXPECT_EQ(vectorized(kernel(decls, R"(            for i in T.Parallel(2):
                for j in T.Parallel(4):
                    for k in T.Parallel(16):
                        c[i, j, k] = T.max(a[i, j, k], b[i, j, k])
)")),
            kernel(decls, R"(            vec_t0 = T.alloc_ub((32,), "uint8")
            T.tile.compare(vec_t0, a, b)
            T.tile.select(c, vec_t0, b, a)
)"));
}

TEST(VectorizeParallel, RowBroadcastIsRowExpand) {
  // r[i] on the right of - maps to row_expand_sub; on the left of * it moves right (x * y is
  // commutative bit for bit).
  constexpr std::string_view decls = R"(            a = T.alloc_ub((16, 16), "float32")
            r = T.alloc_ub((16,), "float32")
            c = T.alloc_ub((16, 16), "float32")
            d = T.alloc_ub((16, 16), "float32")
)";
  EXPECT_EQ(vectorized(kernel(decls, R"(            for i in T.Parallel(16):
                for j in T.Parallel(16):
                    c[i, j] = a[i, j] - r[i]
                    d[i, j] = r[i] * a[i, j]
)")),
            kernel(decls, R"(            T.tile.row_expand_sub(c, a, r)
            T.tile.row_expand_mul(d, a, r)
)"));
}

TEST(VectorizeParallel, ColumnBroadcastGoesThroughATemporary) {
  constexpr std::string_view decls = R"(            a = T.alloc_ub((16, 32), "float16")
            q = T.alloc_ub((32,), "float16")
            c = T.alloc_ub((16, 32), "float16")
)";
  EXPECT_EQ(vectorized(kernel(decls, R"(            for i in T.Parallel(16):
                for j in T.Parallel(32):
                    c[i, j] = a[i, j] / q[j]
)")),
            kernel(decls, R"(            vec_t0 = T.alloc_ub((16, 32), "float16")
            T.tile.broadcast(vec_t0, q)
            T.tile.div(c, a, vec_t0)
)"));
}

TEST(VectorizeParallel, ScalarOperandsUseTheScalarFormsOrAFill) {
  // a * x + 1.0: the scalar forms of mul and add. 2.0 - a: sub has no scalar-first form, so
  // 2.0 fills a temporary.
  constexpr std::string_view decls = R"(            a = T.alloc_ub((64,), "float32")
            c = T.alloc_ub((64,), "float32")
            d = T.alloc_ub((64,), "float32")
)";
  EXPECT_EQ(vectorized(kernel(decls, R"(            for i in T.Parallel(64):
                c[i] = a[i] * x + 1.0
                d[i] = 2.0 - a[i]
)",
                              ", x: T.float32")),
            kernel(decls, R"(            vec_t0 = T.alloc_ub((64,), "float32")
            T.tile.mul(c, a, x)
            T.tile.add(c, c, 1.0)
            T.tile.fill(vec_t0, 2.0)
            T.tile.sub(d, vec_t0, a)
)",
                   ", x: T.float32"));
}

TEST(VectorizeParallel, CastsRoundOnceAndBfloat16ComputesInFloat32) {
  // The DEVMODE example: cast(c, f16) + d. bfloat16 has no vector arithmetic: both operands
  // widen to float32 (exact), multiply, and round once to bfloat16.
  constexpr std::string_view decls = R"(            cf = T.alloc_ub((16, 16), "float32")
            d = T.alloc_ub((16, 16), "float16")
            x = T.alloc_ub((16, 16), "bfloat16")
            y = T.alloc_ub((16, 16), "bfloat16")
)";
  EXPECT_EQ(vectorized(kernel(decls, R"(            for i in T.Parallel(16):
                for j in T.Parallel(16):
                    d[i, j] = T.cast(cf[i, j], "float16") + d[i, j]
                    y[i, j] = x[i, j] * y[i, j]
)")),
            kernel(decls, R"(            vec_t0 = T.alloc_ub((16, 16), "float16")
            vec_t1 = T.alloc_ub((16, 16), "float32")
            vec_t2 = T.alloc_ub((16, 16), "float32")
            T.tile.cast(vec_t0, cf, mode="CAST_RINT")
            T.tile.add(d, vec_t0, d)
            T.tile.cast(vec_t1, x)
            T.tile.cast(vec_t2, y)
            T.tile.mul(vec_t1, vec_t1, vec_t2)
            T.tile.cast(y, vec_t1, mode="CAST_RINT")
)"));
}

TEST(VectorizeParallel, IfThenElseIsCompareAndSelect) {
  constexpr std::string_view decls = R"(            a = T.alloc_ub((64,), "float32")
            b = T.alloc_ub((64,), "float32")
            c = T.alloc_ub((64,), "float32")
)";
  EXPECT_EQ(vectorized(kernel(decls, R"(            for i in T.Parallel(64):
                c[i] = T.if_then_else(a[i] < b[i], a[i], 0.0)
)")),
            kernel(decls, R"(            vec_t0 = T.alloc_ub((32,), "uint8")
            T.tile.compare(vec_t0, a, b)
            T.tile.select(c, vec_t0, a, 0.0, mode=1)
)"));
}

TEST(VectorizeParallel, NestedExpressionReusesDeadTemporaries) {
  // Six interior nodes, three temporaries: the let `t` is computed once and stays live until its
  // second use (abs) has read it; a temporary is free again once its last use is read, and an
  // op may write the temporary it reads (vec_t0 = vec_t0 * vec_t1).
  constexpr std::string_view decls = R"(            a = T.alloc_ub((64,), "float32")
            b = T.alloc_ub((64,), "float32")
            c = T.alloc_ub((64,), "float32")
)";
  EXPECT_EQ(vectorized(kernel(decls, R"(            for i in T.Parallel(64):
                t = a[i] - b[i]
                c[i] = (a[i] + b[i]) * t + T.abs(t) * T.sqrt(a[i])
)")),
            kernel(decls, R"(            vec_t0 = T.alloc_ub((64,), "float32")
            vec_t1 = T.alloc_ub((64,), "float32")
            T.tile.add(c, a, b)
            T.tile.sub(vec_t0, a, b)
            T.tile.mul(c, c, vec_t0)
            T.tile.abs(vec_t0, vec_t0)
            T.tile.sqrt(vec_t1, a)
            T.tile.mul(vec_t0, vec_t0, vec_t1)
            T.tile.add(c, c, vec_t0)
)"));
}

TEST(VectorizeParallel, PartialRegionOfABiggerBuffer) {
  // The loop walks big[8:16, 16:32]; rows 256 bytes apart, 64 bytes each (compact -> aligned
  // store, TileLang-Ascend issue 1194: the copy keeps each row's pitch).
  constexpr std::string_view decls = R"(            big = T.alloc_ub((32, 64), "float32")
            small = T.alloc_ub((8, 16), "float32")
)";
  EXPECT_EQ(vectorized(kernel(decls, R"(            for i in T.Parallel(8):
                for j in T.Parallel(16):
                    big[i + 8, j + 16] = small[i, j]
                    big[i + 16, j] = small[i, j] * 2.0
)")),
            kernel(decls, R"(            T.copy(small, big[8:16, 16:32])
            T.tile.mul(big[16:24, 0:16], small, 2.0)
)"));
}

TEST(VectorizeParallel, SymbolicOuterExtent) {
  // n rows of 32 (DEVMODE trap list): the regions' row count is symbolic, their rows are
  // aligned. The temporary is sized by the destination's 16 rows (a larger n would store out
  // of bounds) and used as its first n rows.
  constexpr std::string_view decls = R"(            a = T.alloc_ub((16, 32), "float32")
            c = T.alloc_ub((16, 32), "float32")
)";
  EXPECT_EQ(vectorized(kernel(decls, R"(            for i in T.Parallel(n):
                for j in T.Parallel(32):
                    c[i, j] = a[i, j] * 2.0 + c[i, j]
)",
                              ", n: T.int32")),
            kernel(decls, R"(            vec_t0 = T.alloc_ub((16, 32), "float32")
            T.tile.mul(vec_t0[0:n, 0:32], a[0:n, 0:32], 2.0)
            T.tile.add(c[0:n, 0:32], vec_t0[0:n, 0:32], c[0:n, 0:32])
)",
                   ", n: T.int32"));
}

TEST(VectorizeParallel, LoopInvariantConditionBranchesOnTheScalarUnit) {
  // A condition that does not depend on the loop is decided once: each branch computes its
  // value into the destination (no compare/select, any dtype).
  constexpr std::string_view decls = R"(            a = T.alloc_ub((16, 16), "bfloat16")
            c = T.alloc_ub((16, 16), "bfloat16")
)";
  EXPECT_EQ(vectorized(kernel(decls, R"(            for i in T.Parallel(16):
                for j in T.Parallel(16):
                    c[i, j] = T.if_then_else(x > 0.0, a[i, j] * a[i, j], a[i, j])
)",
                              ", x: T.float32")),
            kernel(decls, R"(            vec_t0 = T.alloc_ub((16, 16), "float32")
            vec_t1 = T.alloc_ub((16, 16), "float32")
            if x > 0.0:
                T.tile.cast(vec_t0, a)
                T.tile.cast(vec_t1, a)
                T.tile.mul(vec_t0, vec_t0, vec_t1)
                T.tile.cast(c, vec_t0, mode="CAST_RINT")
            else:
                T.copy(a, c)
)",
                   ", x: T.float32"));
}

// ---- errors: the reason and the loop's line -----------------------------------------------------

constexpr std::string_view kDecls = R"(            a = T.alloc_ub((16, 16), "float32")
            b = T.alloc_ub((16, 16), "float32")
            c = T.alloc_ub((16, 16), "float32")
            s = T.alloc_ub((16,), "float32")
            h = T.alloc_ub((16, 16), "int32")
)";

TEST(VectorizeParallel, AGmElementLoopRunsOnTheScalarUnitOrIsStagedThroughUbByCycles) {
  // An element loop over GM is no error (docs/developer_mode.md, "Scalar work and GM element
  // stores"). 16 elements: the scalar loop (11 cycles each) is cheaper than two GM round trips.
  std::string ir = vectorized(kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:7
                s[i] = A[i] + 1.0
)"));
  EXPECT_NE(ir.find("for i in T.serial(16):\n                s[i] = A[i] + 1.0"), std::string::npos)
      << ir;
  // 1000 elements: A is copied into a UB tile (padded to whole 32-byte blocks, the copies
  // DataCopyPad), the loop vectorised on it and the tile copied back.
  ir = vectorized(R"(@T.prim_func
def f(A: T.Tensor((1000,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            for i in T.Parallel(1000):
                A[i] = A[i] * 2.0
)");
  EXPECT_NE(ir.find(R"(            A_ub = T.alloc_ub((1000,), "float32")
            T.copy(A, A_ub)
            T.tile.mul(A_ub, A_ub, 2.0)
            T.copy(A_ub, A))"),
            std::string::npos)
      << ir;
  // A reduction into a scalar variable is the error it is over UB tiles: running the loop in
  // order would pick one order of the additions.
  std::string msg = error_text(R"(@T.prim_func
def f(A: T.Tensor((64,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            s = T.alloc_var("float32")
            for i in T.Parallel(64):  # @k.py:6
                s[0] = s[0] + A[i]
)");
  EXPECT_NE(msg.find("k.py:6: T.Parallel: cannot vectorise: reduction inside T.Parallel: the "
                     "scalar variable 's'"),
            std::string::npos)
      << msg;
}

TEST(VectorizeParallel, ErrorNonUnitStride) {
  std::string msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:8
                s[i] = a[i, 0] + 1.0
)"));
  EXPECT_NE(msg.find("k.py:8: T.Parallel: cannot vectorise: non-unit stride in the innermost "
                     "dimension: operand "
                     "a[i, 0] walks dimension 0 of 'a' with i"),
            std::string::npos)
      << msg;
  msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(8):  # @k.py:9
                s[i] = a[0, i * 2]
)"));
  EXPECT_NE(msg.find("k.py:9: T.Parallel: cannot vectorise: non-unit stride in the innermost "
                     "dimension: operand "
                     "a[0, i * 2] steps 2 element(s) of dimension 1 per iteration of i"),
            std::string::npos)
      << msg;
}

TEST(VectorizeParallel, ErrorCrossIterationRead) {
  std::string msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:10
                for j in T.Parallel(8):  # @k.py:11
                    c[i, j] = c[i, j + 1] * 2.0
)"));
  EXPECT_NE(
      msg.find(
          "k.py:10: T.Parallel: cannot vectorise: cross-iteration read: c[i, j + 1] is read while "
          "c[i, j] is written"),
      std::string::npos)
      << msg;
  // Disjoint halves of one buffer are independent.
  EXPECT_NO_THROW(vectorize_parallel(parse(kernel(kDecls, R"(            for i in T.Parallel(8):
                for j in T.Parallel(16):
                    c[i, j] = c[i + 8, j] * 2.0
)")),
                                     default_target()));
}

TEST(VectorizeParallel, ErrorReductionInsideParallel) {
  std::string msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:11
                for j in T.Parallel(16):
                    s[i] = s[i] + a[i, j]
)"));
  EXPECT_NE(
      msg.find(
          "k.py:11: T.Parallel: cannot vectorise: reduction inside T.Parallel: s[i] is written by "
          "every iteration of j (use T.reduce_sum / reduce_max / reduce_min"),
      std::string::npos)
      << msg;
}

TEST(VectorizeParallel, ErrorUnalignedInnermostRun) {
  std::string msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(4):  # @k.py:12
                s[i] = s[i] * 2.0
)"));
  EXPECT_NE(
      msg.find(
          "k.py:12: T.Parallel: cannot vectorise: unaligned innermost run: destination s[i] "
          "(region "
          "s[0:4]) has rows of 4 x float32 = 16 bytes, not a multiple of the 32-byte UB block"),
      std::string::npos)
      << msg;
  msg = error_text(kernel(kDecls, R"(            for j in T.Parallel(8):  # @k.py:13
                s[j + 4] = s[j + 4] * 2.0
)"));
  EXPECT_NE(
      msg.find(
          "k.py:13: T.Parallel: cannot vectorise: unaligned start: destination s[j + 4] (region "
          "s[4:12]) starts 16 bytes into 's'; UB operands must start on a 32-byte boundary"),
      std::string::npos)
      << msg;
  // A symbolic innermost extent: its run cannot be proven whole blocks (DEVMODE trap list).
  msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(n):  # @k.py:14
                s[i] = s[i] * 2.0
)",
                          ", n: T.int32"));
  EXPECT_NE(msg.find("k.py:14: T.Parallel: cannot vectorise: unaligned innermost run"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("not provably a multiple of the 32-byte UB block"), std::string::npos) << msg;
}

TEST(VectorizeParallel, ErrorUnsupportedOperationOrDtypeIsNamed) {
  std::string msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:15
                for j in T.Parallel(16):
                    c[i, j] = T.exp(a[i, j])
)"));
  EXPECT_NE(
      msg.find("k.py:15: T.Parallel: cannot vectorise: unsupported operation: T.exp on float32: "
               "tile.exp "
               "computes in float32 and differs from the scalar loop's correctly rounded result"),
      std::string::npos)
      << msg;
  msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:16
                for j in T.Parallel(16):
                    h[i, j] = T.cast(a[i, j], "int32")
)"));
  EXPECT_NE(msg.find("k.py:16: T.Parallel: cannot vectorise: unsupported cast float32 -> int32: "
                     "the scalar cast "
                     "truncates and wraps out-of-range values"),
            std::string::npos)
      << msg;
  msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:17
                for j in T.Parallel(16):
                    h[i, j] = h[i, j] // 3
)"));
  EXPECT_NE(msg.find("k.py:17: T.Parallel: cannot vectorise: unsupported operation: // on int32"),
            std::string::npos)
      << msg;
}

TEST(VectorizeParallel, InexactMathOnlyOnRequestWithARemark) {
  std::string text = kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:7
                for j in T.Parallel(16):
                    c[i, j] = T.exp(a[i, j] - b[i, j])
)");
  std::vector<std::string> remarks;
  VectorizeOptions o;
  o.allow_inexact_math = true;
  o.remark = [&](const SourceLoc& loc, const std::string& m) {
    remarks.push_back(loc.str() + ": " + m);
  };
  std::string ir =
      print(vectorize_parallel(parse(text, "k.py"), default_target(), o), {.locations = false});
  EXPECT_NE(ir.find("T.tile.sub(vec_t0, a, b)\n            T.tile.exp(c, vec_t0)"),
            std::string::npos)
      << ir;
  ASSERT_EQ(remarks.size(), 1u);
  EXPECT_EQ(
      remarks[0],
      "k.py:7: T.exp on float32 vectorised as tile.exp, which may differ from the scalar loop in "
      "the last bit");
}

TEST(VectorizeParallel, ErrorOutsideAVectorScopeAndTooDeep) {
  std::string text = R"(@T.prim_func
def f(A: T.Tensor((64,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        a = T.alloc_ub((64,), "float32")
        for i in T.Parallel(64):  # @k.py:5
            a[i] = a[i] + 1.0
)";
  std::string msg = error_text(text);
  EXPECT_NE(
      msg.find("k.py:5: T.Parallel: cannot vectorise: T.Parallel outside T.Scope(\"Vector\")"),
      std::string::npos)
      << msg;
  msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:8
                if i > 2:
                    s[i] = s[i] * 2.0
)"));
  EXPECT_NE(msg.find("k.py:8: T.Parallel: cannot vectorise: an if statement inside T.Parallel (the "
                     "body may hold "
                     "only element stores and lets; write a condition as T.if_then_else)"),
            std::string::npos)
      << msg;
  msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(2):  # @k.py:9
                for j in T.Parallel(2):
                    for k in T.Parallel(2):
                        for l in T.Parallel(8):
                            s[l] = s[l] * 2.0
)"));
  EXPECT_NE(msg.find("k.py:9: T.Parallel: cannot vectorise: a 4-deep T.Parallel nest (the vector "
                     "unit takes 1 to 3 "
                     "dimensions)"),
            std::string::npos)
      << msg;
}

TEST(VectorizeParallel, ScalarFallbackIsSerialWithARemark) {
  std::string text = kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:7
                s[i] = a[i, 0] + 1.0
)");
  std::vector<std::string> remarks;
  VectorizeOptions o;
  o.scalar_fallback = true;
  o.remark = [&](const SourceLoc& loc, const std::string& m) {
    remarks.push_back(loc.str() + ": " + m);
  };
  PrimFunc g = vectorize_parallel(parse(text, "k.py"), default_target(), o);
  std::string ir = print(g, {.locations = false});
  EXPECT_NE(ir.find("for i in T.serial(16):\n                s[i] = a[i, 0] + 1.0"),
            std::string::npos)
      << ir;
  ASSERT_EQ(remarks.size(), 1u);
  EXPECT_EQ(
      remarks[0],
      "k.py:7: T.Parallel runs as a serial scalar loop (scalar_fallback): non-unit stride in the "
      "innermost dimension: operand a[i, 0] walks dimension 0 of 'a' with i, whose elements are "
      "not adjacent");
  // Kernels without Parallel loops come back unchanged (the same function).
  PrimFunc plain = parse(kernel(kDecls, "            T.tile.add(a, a, b)\n"));
  EXPECT_EQ(vectorize_parallel(plain, default_target()), plain);
}

}  // namespace
}  // namespace tl
