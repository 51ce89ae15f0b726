// vectorize_parallel: T.Parallel element loops -> vector tile ops. IR text in / exact IR text
// out for each mapping (1-3 dims, broadcasts, scalars, casts, selects, temporaries, partial and
// symbolic regions), errors with their reason and source line, the scalar fallback, and the
// numeric contract: a fuzzer runs random expression trees vectorised and as serial scalar
// loops on the virtual NPU and compares the outputs bit for bit.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "pass/pass_test_util.h"
#include "tl/arith.h"
#include "tl/npu/npu.h"
#include "tl/op.h"
#include "tl/runtime.h"
#include "tl/verifier.h"

namespace tl {
namespace {

using testing::error_of;

/// A vector-scope kernel around `body` (indented 12 spaces), with UB buffers declared.
std::string kernel(std::string_view decls, std::string_view body, std::string_view params = "") {
  return fmt::format(R"(@T.prim_func
def f(A: T.Tensor((64,), "float32"){}):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
{}{})",
                     params, decls, body);
}

std::string vectorized(const std::string& text, const VectorizeOptions& o = {}) {
  PrimFunc f = parse(text);
  PrimFunc g = vectorize_parallel(f, default_target(), o);
  // The output invariant: no Parallel loop left, and the expert spec holds.
  bool parallel = false;
  pre_order_visit(g->body, [&](const Stmt& s) {
    if (auto* l = s.as<ForNode>(); l && l->for_kind == ForKind::Parallel) parallel = true;
  });
  EXPECT_FALSE(parallel) << print(g);
  auto diags = verify(g, default_target());
  for (const auto& d : diags) ADD_FAILURE() << d.message << "\n" << print(g);
  return print(g, {.locations = false});
}

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
  EXPECT_NE(ir.find("for i in T.serial(16):\n                s[i] = A[i] + 1.0"), std::string::npos) << ir;
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
  EXPECT_NE(msg.find("k.py:6: T.Parallel: cannot vectorise: reduction inside T.Parallel: the scalar variable 's'"),
            std::string::npos)
      << msg;
}

TEST(VectorizeParallel, ErrorNonUnitStride) {
  std::string msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:8
                s[i] = a[i, 0] + 1.0
)"));
  EXPECT_NE(msg.find("k.py:8: T.Parallel: cannot vectorise: non-unit stride in the innermost dimension: operand "
                     "a[i, 0] walks dimension 0 of 'a' with i"),
            std::string::npos)
      << msg;
  msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(8):  # @k.py:9
                s[i] = a[0, i * 2]
)"));
  EXPECT_NE(msg.find("k.py:9: T.Parallel: cannot vectorise: non-unit stride in the innermost dimension: operand "
                     "a[0, i * 2] steps 2 element(s) of dimension 1 per iteration of i"),
            std::string::npos)
      << msg;
}

TEST(VectorizeParallel, ErrorCrossIterationRead) {
  std::string msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:10
                for j in T.Parallel(8):  # @k.py:11
                    c[i, j] = c[i, j + 1] * 2.0
)"));
  EXPECT_NE(msg.find("k.py:10: T.Parallel: cannot vectorise: cross-iteration read: c[i, j + 1] is read while "
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
  EXPECT_NE(msg.find("k.py:11: T.Parallel: cannot vectorise: reduction inside T.Parallel: s[i] is written by "
                     "every iteration of j (use T.reduce_sum / reduce_max / reduce_min"),
            std::string::npos)
      << msg;
}

TEST(VectorizeParallel, ErrorUnalignedInnermostRun) {
  std::string msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(4):  # @k.py:12
                s[i] = s[i] * 2.0
)"));
  EXPECT_NE(msg.find("k.py:12: T.Parallel: cannot vectorise: unaligned innermost run: destination s[i] (region "
                     "s[0:4]) has rows of 4 x float32 = 16 bytes, not a multiple of the 32-byte UB block"),
            std::string::npos)
      << msg;
  msg = error_text(kernel(kDecls, R"(            for j in T.Parallel(8):  # @k.py:13
                s[j + 4] = s[j + 4] * 2.0
)"));
  EXPECT_NE(msg.find("k.py:13: T.Parallel: cannot vectorise: unaligned start: destination s[j + 4] (region "
                     "s[4:12]) starts 16 bytes into 's'; UB operands must start on a 32-byte boundary"),
            std::string::npos)
      << msg;
  // A symbolic innermost extent: its run cannot be proven whole blocks (DEVMODE trap list).
  msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(n):  # @k.py:14
                s[i] = s[i] * 2.0
)",
                          ", n: T.int32"));
  EXPECT_NE(msg.find("k.py:14: T.Parallel: cannot vectorise: unaligned innermost run"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not provably a multiple of the 32-byte UB block"), std::string::npos) << msg;
}

TEST(VectorizeParallel, ErrorUnsupportedOperationOrDtypeIsNamed) {
  std::string msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:15
                for j in T.Parallel(16):
                    c[i, j] = T.exp(a[i, j])
)"));
  EXPECT_NE(msg.find("k.py:15: T.Parallel: cannot vectorise: unsupported operation: T.exp on float32: tile.exp "
                     "computes in float32 and differs from the scalar loop's correctly rounded result"),
            std::string::npos)
      << msg;
  msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:16
                for j in T.Parallel(16):
                    h[i, j] = T.cast(a[i, j], "int32")
)"));
  EXPECT_NE(msg.find("k.py:16: T.Parallel: cannot vectorise: unsupported cast float32 -> int32: the scalar cast "
                     "truncates and wraps out-of-range values"),
            std::string::npos)
      << msg;
  msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:17
                for j in T.Parallel(16):
                    h[i, j] = h[i, j] // 3
)"));
  EXPECT_NE(msg.find("k.py:17: T.Parallel: cannot vectorise: unsupported operation: // on int32"), std::string::npos)
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
  o.remark = [&](const SourceLoc& loc, const std::string& m) { remarks.push_back(loc.str() + ": " + m); };
  std::string ir = print(vectorize_parallel(parse(text, "k.py"), default_target(), o), {.locations = false});
  EXPECT_NE(ir.find("T.tile.sub(vec_t0, a, b)\n            T.tile.exp(c, vec_t0)"), std::string::npos) << ir;
  ASSERT_EQ(remarks.size(), 1u);
  EXPECT_EQ(remarks[0], "k.py:7: T.exp on float32 vectorised as tile.exp, which may differ from the scalar loop in "
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
  EXPECT_NE(msg.find("k.py:5: T.Parallel: cannot vectorise: T.Parallel outside T.Scope(\"Vector\")"),
            std::string::npos)
      << msg;
  msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:8
                if i > 2:
                    s[i] = s[i] * 2.0
)"));
  EXPECT_NE(msg.find("k.py:8: T.Parallel: cannot vectorise: an if statement inside T.Parallel (the body may hold "
                     "only element stores and lets; write a condition as T.if_then_else)"),
            std::string::npos)
      << msg;
  msg = error_text(kernel(kDecls, R"(            for i in T.Parallel(2):  # @k.py:9
                for j in T.Parallel(2):
                    for k in T.Parallel(2):
                        for l in T.Parallel(8):
                            s[l] = s[l] * 2.0
)"));
  EXPECT_NE(msg.find("k.py:9: T.Parallel: cannot vectorise: a 4-deep T.Parallel nest (the vector unit takes 1 to 3 "
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
  o.remark = [&](const SourceLoc& loc, const std::string& m) { remarks.push_back(loc.str() + ": " + m); };
  PrimFunc g = vectorize_parallel(parse(text, "k.py"), default_target(), o);
  std::string ir = print(g, {.locations = false});
  EXPECT_NE(ir.find("for i in T.serial(16):\n                s[i] = a[i, 0] + 1.0"), std::string::npos) << ir;
  ASSERT_EQ(remarks.size(), 1u);
  EXPECT_EQ(remarks[0], "k.py:7: T.Parallel runs as a serial scalar loop (scalar_fallback): non-unit stride in the "
                        "innermost dimension: operand a[i, 0] walks dimension 0 of 'a' with i, whose elements are "
                        "not adjacent");
  // Kernels without Parallel loops come back unchanged (the same function).
  PrimFunc plain = parse(kernel(kDecls, "            T.tile.add(a, a, b)\n"));
  EXPECT_EQ(vectorize_parallel(plain, default_target()), plain);
}

// ---- the numeric contract: vectorised == serial scalar loop, bit for bit ------------------------

int test_level() {
  const char* e = std::getenv("TL_TEST_LEVEL");
  return e ? std::atoi(e) : 0;
}

/// Bytes equal, except that two NaNs are equal whatever their sign and payload: the scalar
/// unit's loads canonicalise NaNs (arith's double values carry no payload), the vector unit
/// keeps them, so NaN bits are not part of the contract (docs/compiler.md).
int64_t count_mismatches(const Tensor& want, const Tensor& got, std::string* first = nullptr) {
  if (std::memcmp(want.data(), got.data(), static_cast<size_t>(want.nbytes())) == 0) return 0;
  std::vector<double> w = want.to_vector(), g = got.to_vector();
  const int64_t es = dtype_bytes(want.dtype());
  int64_t bad = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (std::memcmp(want.data() + i * es, got.data() + i * es, static_cast<size_t>(es)) == 0) continue;
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (bad++ == 0 && first) *first = fmt::format("element {}: scalar loop {} (0x{:x}), vectorised {} (0x{:x})", i, w[i],
                                                  want.data()[i * es + es - 1], g[i], got.data()[i * es + es - 1]);
  }
  return bad;
}

/// Random T.Parallel expression trees over three full tiles a, b, c, a row vector r, a column
/// vector q, a float32 scalar x and literals. Float cases (float16 / bfloat16 / float32 mixed)
/// use + - * / min max abs sqrt rsqrt exp log casts and if_then_else on all six comparisons
/// (loop-dependent and loop-invariant conditions); integer cases (int16 or int32) use + - *
/// min max, & | (int16), << >> by a constant, and int -> float casts. Some cases bind a let
/// used twice (a shared temporary), and some store into an offset region of a bigger buffer.
class TreeGen {
 public:
  explicit TreeGen(uint64_t seed) : rng_(seed) {}

  struct Case {
    std::vector<int64_t> ext;
    std::string dtypes[6];  // a b c r q o
    std::string let;        // `t = <let>` before the store ("" for none)
    std::string expr;
    bool in_place = false;  // the store writes a instead of o
    int64_t offset = 0;     // o has `offset` more leading rows (elements in 1-D); stored at + offset
  };

  Case next() {
    static const std::vector<std::vector<int64_t>> shapes = {{128}, {256}, {16, 16}, {16, 32}, {8, 16}, {2, 16, 16}};
    Case c;
    c.ext = shapes[pick(shapes.size())];
    k_ = c.ext.size();
    int_ = pick(4) == 0;
    if (int_) {
      int_dtype_ = pick(2) ? "int16" : "int32";
      for (auto& d : c.dtypes) d = int_dtype_;
      if (c.ext.size() >= 2 && c.ext[0] == 8) c.dtypes[3] = "int32";  // 8-element rows: 32 bytes in int32 only
    } else {
      for (auto& d : c.dtypes) d = dtypes_[pick(3)];
      if (c.ext.size() >= 2 && c.ext[0] == 8) c.dtypes[3] = "float32";  // 8-element rows: 32 bytes in float32 only
    }
    has_let_ = pick(4) == 0;
    if (has_let_) {
      has_let_ = false;
      c.let = gen(1 + static_cast<int>(pick(2)));
      has_let_ = true;
    }
    c.expr = gen(1 + static_cast<int>(pick(4)));
    if (has_let_) c.expr = int_ ? "((" + c.expr + " + t) * t)" : "T.max(" + c.expr + " * t, t)";
    if (int_ && pick(3) == 0) {  // int -> float at the root
      c.expr = "T.cast(" + c.expr + ", \"" + (int_dtype_ == "int16" ? "float16" : "float32") + "\")";
      c.dtypes[5] = int_dtype_ == "int16" ? (pick(2) ? "float16" : "float32") : "float32";
    }
    c.in_place = !int_ && pick(6) == 0;
    if (!c.in_place && pick(4) == 0) c.offset = c.ext.size() == 1 ? 16 : 2;
    return c;
  }

 private:
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  std::string idx(size_t from, size_t to) const {
    static const char* v[] = {"i", "j", "k"};
    std::string s;
    for (size_t d = from; d < to; ++d) s += (s.empty() ? "" : ", ") + std::string(v[d]);
    return s;
  }
  std::string lit() {
    if (int_) {
      static const char* lits[] = {"3", "-2", "0", "1", "-7"};
      std::string v = lits[pick(5)];
      return int_dtype_ == "int16" ? "T.int16(" + v + ")" : v;
    }
    static const char* lits[] = {"0.5", "-1.25", "2.0", "T.float16(0.75)", "T.bfloat16(3.0)", "0.0", "-0.0"};
    return lits[pick(7)];
  }
  /// A loop variable used as a value: the innermost one, or either of two.
  std::string loop_var() {
    static const char* v[] = {"i", "j", "k"};
    return v[k_ == 2 && pick(2) ? 0 : k_ - 1];
  }
  /// An int32 index expression of the loop variables (masks: `j * 3 - i`, `k + 5`).
  std::string index_expr() {
    std::string a = loop_var();
    switch (pick(4)) {
      case 0: return a;
      case 1: return "(" + a + " * 3 - " + loop_var() + ")";
      case 2: return "(" + a + " + " + lit_int() + ")";
      default: return "(" + lit_int() + " - " + a + ")";
    }
  }
  std::string lit_int() {
    static const char* lits[] = {"3", "-2", "0", "17", "-7"};
    return lits[pick(5)];
  }
  std::string leaf() {
    if (int_ && int_dtype_ == "int32" && pick(8) == 0) return index_expr();
    switch (pick(k_ >= 2 ? 10 : 8)) {
      case 0: case 1: case 6: return "a[" + idx(0, k_) + "]";
      case 2: return "b[" + idx(0, k_) + "]";
      case 3: return "c[" + idx(0, k_) + "]";
      case 4: return int_ ? lit() : "x";
      case 5: return lit();
      case 7: return has_let_ ? "t" : "a[" + idx(0, k_) + "]";
      case 8: return "r[" + idx(0, k_ - 1) + "]";
      default: return "q[" + idx(1, k_) + "]";
    }
  }
  std::string gen(int depth) {
    if (depth <= 0) return leaf();
    std::string a = gen(depth - 1 - static_cast<int>(pick(2))), b = gen(depth - 1 - static_cast<int>(pick(2)));
    if (int_) {
      switch (pick(int_dtype_ == "int16" ? 9 : 7)) {
        case 0: return "(" + a + " + " + b + ")";
        case 1: return "(" + a + " - " + b + ")";
        case 2: return "(" + a + " * " + b + ")";
        case 3: return "T.min(" + a + ", " + b + ")";
        case 4: return "T.max(" + a + ", " + b + ")";
        case 5: return "(" + a + " << " + (int_dtype_ == "int16" ? "T.int16(" : "T.int32(") + std::to_string(pick(4)) + "))";
        case 6: return "(" + a + " >> " + (int_dtype_ == "int16" ? "T.int16(" : "T.int32(") + std::to_string(pick(4)) + "))";
        case 7: return "(" + a + " & " + b + ")";
        default: return "(" + a + " | " + b + ")";
      }
    }
    switch (pick(16)) {
      case 15: {  // a mask on positions: an int32 ordering of index expressions
        static const char* cmp[] = {"<", "<=", ">", ">=", "==", "!="};
        std::string rhs = pick(2) ? index_expr() : lit_int();
        return "T.if_then_else(" + index_expr() + " " + cmp[pick(6)] + " " + rhs + ", " + a + ", " + b + ")";
      }
      case 0: return "(" + a + " + " + b + ")";
      case 1: return "(" + a + " - " + b + ")";
      case 2: return "(" + a + " * " + b + ")";
      case 3: return "(" + a + " / " + b + ")";
      case 4: return "T.min(" + a + ", " + b + ")";
      case 5: return "T.max(" + a + ", " + b + ")";
      case 6: return "T.abs(" + a + ")";
      case 7: return "T.sqrt(" + a + ")";
      case 8: return pick(2) ? "T.rsqrt(T.cast(" + a + ", \"float16\"))" : "T.rsqrt(T.cast(" + a + ", \"bfloat16\"))";
      case 9: return pick(2) ? "T.exp(T.cast(" + a + ", \"bfloat16\"))" : "T.log(T.cast(" + a + ", \"bfloat16\"))";
      case 10:
      case 11: return "T.cast(" + a + ", \"" + dtypes_[pick(3)] + "\")";
      case 12: return "T.if_then_else(x " + std::string(pick(2) ? "<" : ">=") + " 0.5, " + a + ", " + b + ")";
      default: {
        static const char* cmp[] = {"<", "<=", ">", ">=", "==", "!="};
        std::string c = gen(depth - 1);
        return "T.if_then_else(" + a + " " + cmp[pick(6)] + " " + b + ", " + c + ", " + gen(depth - 1) + ")";
      }
    }
  }

  std::mt19937_64 rng_;
  size_t k_ = 1;
  bool int_ = false, has_let_ = false;
  std::string int_dtype_ = "int32";
  const std::vector<std::string> dtypes_ = {"float16", "bfloat16", "float32"};
};

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

std::vector<int64_t> buffer_shape(const TreeGen::Case& c, int b) {
  if (b == 3) return c.ext.size() > 1 ? std::vector<int64_t>(c.ext.begin(), c.ext.end() - 1) : std::vector<int64_t>{32};
  if (b == 4) return c.ext.size() > 1 ? std::vector<int64_t>(c.ext.begin() + 1, c.ext.end()) : std::vector<int64_t>{32};
  std::vector<int64_t> s = c.ext;
  if (b == 5) s[0] += c.offset;
  return s;
}

/// A kernel running `cases` (one T.Parallel loop each) on AIV 0: every buffer copied in from
/// GM, the destinations copied out; `loop` is "Parallel" or "serial".
std::string fuzz_kernel(const std::vector<TreeGen::Case>& cases, std::string_view loop) {
  std::string params, decls, in, body, out;
  static const char* names[] = {"a", "b", "c", "r", "q", "o"};
  static const char* vars[] = {"i", "j", "k"};
  auto rename = [](const std::string& e, size_t n) {  // the operands of case n: a -> a<n>
    std::string renamed;
    for (size_t p = 0; p < e.size(); ++p) {
      char ch = e[p];
      bool ident_start =
          p == 0 || !(std::isalnum(static_cast<unsigned char>(e[p - 1])) || e[p - 1] == '_' || e[p - 1] == '.');
      bool ident_end = p + 1 == e.size() || !(std::isalnum(static_cast<unsigned char>(e[p + 1])) || e[p + 1] == '_');
      if (ident_start && ((p + 1 < e.size() && e[p + 1] == '[' && std::strchr("abcrq", ch)) || (ch == 't' && ident_end))) {
        renamed += fmt::format("{}{}", ch, n);
        continue;
      }
      renamed += ch;
    }
    return renamed;
  };
  for (size_t n = 0; n < cases.size(); ++n) {
    const auto& c = cases[n];
    for (int b = 0; b < 6; ++b) {
      std::string nm = fmt::format("{}{}", names[b], n);
      std::string shape = shape_str(buffer_shape(c, b));
      params += fmt::format(", G{}: T.Tensor({}, \"{}\")", nm, shape, c.dtypes[b]);
      decls += fmt::format("            {} = T.alloc_ub({}, \"{}\")\n", nm, shape, c.dtypes[b]);
      in += fmt::format("                T.copy(G{}, {})\n", nm, nm);
    }
    std::string ind = "                ";
    for (size_t d = 0; d < c.ext.size(); ++d) {
      body += fmt::format("{}for {} in T.{}({}):\n", ind, vars[d], loop, c.ext[d]);
      ind += "    ";
    }
    std::string idx;
    for (size_t d = 0; d < c.ext.size(); ++d)
      idx += (d ? ", " : "") + std::string(vars[d]) + (d == 0 && c.offset ? fmt::format(" + {}", c.offset) : "");
    std::string dst = fmt::format("{}{}", c.in_place ? "a" : "o", n);
    if (!c.let.empty()) body += fmt::format("{}t{} = {}\n", ind, n, rename(c.let, n));
    body += fmt::format("{}{}[{}] = {}\n", ind, dst, idx, rename(c.expr, n));
    out += fmt::format("                T.copy({}, G{})\n", dst, dst);
  }
  return fmt::format(R"(@T.prim_func
def fz(x: T.float32{}):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
{}            if vid == 0:
{}                T.barrier_all()
{}                T.barrier_all()
{})",
                     params, decls, in, body, out);
}

/// Inputs: mostly small values, with zeros of both signs, large and tiny values, infinities
/// and NaNs (floats); for integers, values across the dtype's range (products wrap).
std::vector<double> fuzz_values(std::mt19937_64& rng, int64_t n, DType t = DType::Float32) {
  std::uniform_real_distribution<double> u(-4, 4);
  std::uniform_int_distribution<int> kind(0, 99);
  std::vector<double> v(n);
  if (is_int(t)) {
    std::uniform_int_distribution<int64_t> full(arith::dtype_min(t), arith::dtype_max(t));
    for (auto& x : v) x = kind(rng) < 70 ? std::round(u(rng) * 8) : static_cast<double>(full(rng));
    return v;
  }
  for (auto& x : v) {
    int k = kind(rng);
    if (k < 70) x = u(rng);
    else if (k < 78) x = std::round(u(rng));
    else if (k < 82) x = 0.0;
    else if (k < 86) x = -0.0;
    else if (k < 90) x = u(rng) * 1e4;
    else if (k < 94) x = u(rng) * 1e-5;
    else if (k < 96) x = INFINITY;
    else if (k < 98) x = -INFINITY;
    else x = NAN;
  }
  return v;
}

TEST(VectorizeParallel, FuzzBitIdenticalToTheSerialScalarLoop) {
  const int trees = test_level() >= 1 ? 20000 : 2000;
  const int per_kernel = 10;
  TreeGen gen(20261201);
  std::mt19937_64 rng(7);
  Device dev(default_target());
  int accepted = 0, rejected = 0, launches = 0;
  std::map<std::string, int> reasons;
  std::map<std::string, int> ops_seen;  // which vector ops the accepted trees exercised
  std::vector<TreeGen::Case> batch;
  auto run_batch = [&] {
    std::string par = fuzz_kernel(batch, "Parallel"), ser = fuzz_kernel(batch, "serial");
    PrimFunc vec = vectorize_parallel(parse(par), default_target());
    CompiledKernel kv = compile(vec), ks = compile(parse(ser));
    std::vector<Arg> args_v = {Arg(0.375)}, args_s = {Arg(0.375)};
    std::vector<Tensor> outs_v, outs_s;
    for (const auto& c : batch)
      for (int b = 0; b < 6; ++b) {
        std::vector<int64_t> shape = buffer_shape(c, b);
        DType t = *parse_dtype(c.dtypes[b]);
        int64_t n = 1;
        for (int64_t x : shape) n *= x;
        Tensor tv = from_vector(dev, shape, t, fuzz_values(rng, n, t));
        Tensor ts = Tensor::empty(dev, shape, t);
        std::memcpy(ts.data(), tv.data(), static_cast<size_t>(tv.nbytes()));
        args_v.push_back(tv);
        args_s.push_back(ts);
        if (b == (c.in_place ? 0 : 5)) {
          outs_v.push_back(tv);
          outs_s.push_back(ts);
        }
      }
    kv.launch(dev, args_v, {.threads = 1});
    ks.launch(dev, args_s, {.threads = 1});
    ++launches;
    for (size_t n = 0; n < batch.size(); ++n) {
      std::string first;
      int64_t bad = count_mismatches(outs_s[n], outs_v[n], &first);
      EXPECT_EQ(bad, 0) << first << "\nexpression: " << batch[n].expr << "\n" << fuzz_kernel({batch[n]}, "Parallel")
                        << print(vectorize_parallel(parse(fuzz_kernel({batch[n]}, "Parallel")), default_target()),
                                 {.locations = false});
    }
    batch.clear();
  };
  for (int t = 0; t < trees; ++t) {
    TreeGen::Case c = gen.next();
    try {  // vectorisable on its own? (rejections are legitimate: they name a reason)
      PrimFunc g = vectorize_parallel(parse(fuzz_kernel({c}, "Parallel")), default_target());
      auto diags = verify(g, default_target());
      for (const auto& d : diags) ADD_FAILURE() << d.message << "\nexpression: " << c.expr << "\n" << print(g);
      if (!diags.empty()) break;
      pre_order_visit(g->body, [&](const Stmt& s) {
        if (auto* op = s.as<TileOpNode>())  // (the harness's own GM copies do not count)
          if (op->op->name != "copy" || (op->args[0].region.buffer->scope == MemScope::UB &&
                                             op->args[1].region.buffer->scope == MemScope::UB))
            ++ops_seen[op->op->name];
        if (s.as<IfNode>() && s.as<IfNode>()->else_case.defined()) ++ops_seen["(if on an invariant condition)"];
      });
    } catch (const Error& e) {
      ++rejected;
      std::string m = e.what();
      auto at = m.find("cannot vectorise: ");
      std::string reason = at == std::string::npos ? m : m.substr(at + 18, 40);
      ++reasons[reason];
      continue;
    }
    ++accepted;
    batch.push_back(c);
    if (static_cast<int>(batch.size()) == per_kernel) run_batch();
    if (::testing::Test::HasFailure()) break;
  }
  if (!batch.empty()) run_batch();
  std::string why, ops;
  for (const auto& [r, n] : reasons) why += fmt::format("  {:5} {}\n", n, r);
  for (const auto& [o, n] : ops_seen) ops += fmt::format(" {}:{}", o, n);
  std::printf("vectorize_parallel fuzz: %d trees, %d vectorised and bit-identical (%d launches), %d rejected:\n%s"
              "ops:%s\n",
              trees, accepted, launches, rejected, why.c_str(), ops.c_str());
  EXPECT_GE(accepted, trees / 2) << why;
  // Every mapped op family is exercised.
  // (tile.exp and tile.rsqrt are not among them: the chip's exp flushes subnormal results and
  // its rsqrt is an approximation, so neither is bit-identical to the scalar loop.)
  for (const char* op : {"tile.add", "tile.sub", "tile.mul", "tile.div", "tile.compare", "tile.select", "tile.cast",
                         "tile.abs", "tile.sqrt", "tile.ln", "tile.max", "tile.min",
                         "tile.bitwise_and", "tile.bitwise_or", "tile.shift_left", "tile.shift_right", "tile.fill",
                         "tile.broadcast", "tile.row_expand_add", "tile.row_expand_sub", "tile.row_expand_mul",
                         "tile.row_expand_div", "tile.arith_progression", "copy", "(if on an invariant condition)"})
    EXPECT_GT(ops_seen[op], 0) << op << " never exercised";
}

TEST(VectorizeParallel, IntrinsicExactnessTableMatchesExhaustiveRuns) {
  // For every float16 and bfloat16 input (all 65,536 bit patterns), the pass accepts a math
  // intrinsic exactly when the vector op matches the scalar loop on every input; the ones it
  // rejects do differ somewhere (so the rejection is not over-cautious on this domain).
  constexpr int64_t kChunk = 16384;
  Device dev(default_target());
  for (const char* dtype : {"float16", "bfloat16"})
    for (const char* fn : {"exp", "log", "sqrt", "rsqrt", "abs", "sigmoid"}) {
      std::string par = fmt::format(R"(@T.prim_func
def ex(GI: T.Tensor(({0},), "{1}"), GO: T.Tensor(({0},), "{1}")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            i_ub = T.alloc_ub(({0},), "{1}")
            o_ub = T.alloc_ub(({0},), "{1}")
            if vid == 0:
                T.copy(GI, i_ub)
                T.barrier_all()
                for p in T.Parallel({0}):
                    o_ub[p] = T.{2}(i_ub[p])
                T.barrier_all()
                T.copy(o_ub, GO)
)",
                                    kChunk, dtype, fn);
      std::string ser = par;
      ser.replace(ser.find("T.Parallel"), 10, "T.serial");
      bool accepted = true;
      try {
        vectorize_parallel(parse(par), default_target());
      } catch (const Error&) {
        accepted = false;
      }
      VectorizeOptions o;
      o.allow_inexact_math = true;
      o.remark = [](const SourceLoc&, const std::string&) {};
      CompiledKernel kv = compile(vectorize_parallel(parse(par), default_target(), o)), ks = compile(parse(ser));
      DType t = *parse_dtype(dtype);
      int64_t bad = 0;
      std::string first;
      for (int64_t chunk = 0; chunk < 65536 / kChunk; ++chunk) {
        Tensor in = Tensor::empty(dev, {kChunk}, t);
        for (int64_t e = 0; e < kChunk; ++e) {
          uint16_t bits = static_cast<uint16_t>(chunk * kChunk + e);
          std::memcpy(in.data() + 2 * e, &bits, 2);
        }
        Tensor ov = Tensor::empty(dev, {kChunk}, t), os = Tensor::empty(dev, {kChunk}, t);
        kv.launch(dev, {in, ov}, {.threads = 1});
        ks.launch(dev, {in, os}, {.threads = 1});
        bad += count_mismatches(os, ov, first.empty() ? &first : nullptr);
      }
      if (accepted) EXPECT_EQ(bad, 0) << "T." << fn << " on " << dtype << ": " << first;
      else EXPECT_GT(bad, 0) << "T." << fn << " on " << dtype << " is rejected but matches on every input";
      std::printf("T.%s on %s: %s, %lld of 65536 inputs differ as tile ops\n", fn, dtype,
                  accepted ? "vectorised" : "rejected", static_cast<long long>(bad));
    }
}

/// Runs `text` (a kernel with T.Parallel loops) vectorised and with the loops serial on the
/// virtual NPU, with the same random float inputs for every tensor parameter and `scalars`
/// for the scalar ones; expects the tensors to end bit-identical.
void expect_same_as_serial(const std::string& text, std::vector<Arg> scalars = {}) {
  PrimFunc par = parse(text);
  std::string ser_text = text;
  for (size_t at; (at = ser_text.find("T.Parallel(")) != std::string::npos;) ser_text.replace(at, 10, "T.serial");
  CompiledKernel kv = compile(vectorize_parallel(par, default_target())), ks = compile(parse(ser_text));
  Device dev(default_target());
  std::mt19937_64 rng(11);
  std::vector<Arg> av = scalars, as = scalars;
  std::vector<Tensor> tv, ts;
  for (const Param& p : par->params) {
    if (!p.is_tensor()) continue;
    std::vector<int64_t> shape;
    for (const auto& e : p.tensor->shape) shape.push_back(*as_const_int(e));
    int64_t n = 1;
    for (int64_t x : shape) n *= x;
    Tensor v = from_vector(dev, shape, p.tensor->dtype, fuzz_values(rng, n, p.tensor->dtype)), s = Tensor::empty(dev, shape, p.tensor->dtype);
    std::memcpy(s.data(), v.data(), static_cast<size_t>(v.nbytes()));
    tv.push_back(v);
    ts.push_back(s);
  }
  av.insert(av.end(), tv.begin(), tv.end());
  as.insert(as.end(), ts.begin(), ts.end());
  kv.launch(dev, av, {.threads = 1});
  ks.launch(dev, as, {.threads = 1});
  for (size_t i = 0; i < tv.size(); ++i) {
    std::string first;
    EXPECT_EQ(count_mismatches(ts[i], tv[i], &first), 0) << "tensor " << i << ": " << first;
  }
}

TEST(VectorizeParallel, CompactToAlignedStoreRunsLikeTheScalarLoop) {
  // DEVMODE trap (TileLang-Ascend issue 1194): a compact (8, 16) tile stored into rows of a
  // (32, 64) tile: each destination row keeps its 128-byte pitch, nothing is stored flat.
  expect_same_as_serial(R"(@T.prim_func
def f(GS: T.Tensor((8, 16), "float16"), GB: T.Tensor((32, 64), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            small = T.alloc_ub((8, 16), "float16")
            big = T.alloc_ub((32, 64), "float16")
            if vid == 0:
                T.copy(GS, small)
                T.copy(GB, big)
                T.barrier_all()
                for i in T.Parallel(8):
                    for j in T.Parallel(16):
                        big[i + 8, j + 16] = small[i, j] * T.float16(2.0) + big[i + 8, j + 16]
                T.barrier_all()
                T.copy(big, GB)
)");
}

TEST(VectorizeParallel, AShortMaxIsComparedInGranuleSizedCopies) {
  // 32 fp32 row statistics are 128 bytes, half of tile.compare's 256-byte granule (the running
  // max of a 32-row attention tile). The operands are copied into 64-element temporaries and
  // compared there; the select takes the loop's 32 elements.
  constexpr std::string_view decls = R"(            a = T.alloc_ub((32,), "float32")
            b = T.alloc_ub((32,), "float32")
)";
  EXPECT_EQ(vectorized(kernel(decls, R"(            for i in T.Parallel(32):
                a[i] = T.max(a[i], b[i])
)")),
            kernel(decls, R"(            vec_t0 = T.alloc_ub((64,), "float32")
            vec_t1 = T.alloc_ub((64,), "float32")
            vec_t2 = T.alloc_ub((32,), "uint8")
            T.copy(a, vec_t0[0:32])
            T.copy(b, vec_t1[0:32])
            T.tile.compare(vec_t2, vec_t0, vec_t1)
            T.tile.select(a, vec_t2, b, a)
)"));
}

TEST(VectorizeParallel, ShortMaxAndMinRunLikeTheScalarLoopNaNsIncluded) {
  expect_same_as_serial(R"(@T.prim_func
def f(GA: T.Tensor((32,), "float32"), GB: T.Tensor((32,), "float32"), GC: T.Tensor((32,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((32,), "float32")
            b = T.alloc_ub((32,), "float32")
            c = T.alloc_ub((32,), "float32")
            if vid == 0:
                T.copy(GA, a)
                T.copy(GB, b)
                T.barrier_all()
                for i in T.Parallel(32):
                    c[i] = T.max(a[i], b[i])
                for i in T.Parallel(32):
                    a[i] = T.min(c[i], T.float32(0.5))
                T.barrier_all()
                T.copy(a, GA)
                T.copy(c, GC)
)");
}

TEST(VectorizeParallel, SymbolicExtentAndThreeDimensionsRunLikeTheScalarLoop) {
  // n rows chosen at launch; a 3-D loop over a sub-block with row and column broadcasts.
  expect_same_as_serial(R"(@T.prim_func
def f(n: T.int32, GA: T.Tensor((16, 32), "float32"), GC: T.Tensor((16, 32), "float32"), GX: T.Tensor((4, 8, 32), "bfloat16"), GR: T.Tensor((4, 8), "float32"), GQ: T.Tensor((8, 32), "bfloat16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 32), "float32")
            c = T.alloc_ub((16, 32), "float32")
            x = T.alloc_ub((4, 8, 32), "bfloat16")
            r = T.alloc_ub((4, 8), "float32")
            q = T.alloc_ub((8, 32), "bfloat16")
            if vid == 0:
                T.copy(GA, a)
                T.copy(GC, c)
                T.copy(GX, x)
                T.copy(GR, r)
                T.copy(GQ, q)
                T.barrier_all()
                for i in T.Parallel(n):
                    for j in T.Parallel(32):
                        c[i, j] = c[i, j] + a[i, j] * 0.5
                for i in T.Parallel(2):
                    for j in T.Parallel(8):
                        for k in T.Parallel(32):
                            x[i + 1, j, k] = T.cast(T.cast(x[i + 1, j, k], "float32") - r[i + 1, j], "bfloat16") * q[j, k]
                T.barrier_all()
                T.copy(c, GC)
                T.copy(x, GX)
)",
                        {Arg(int64_t{11})});
}

TEST(VectorizeParallel, ALoopVariableAgainstAnInvariantIsAFloatProgressionAndOneCompare) {
  // `j < n`: j's values 0..63 in float32 (exact) against n clamped to [-1, 64] (exact, and no
  // outcome changes): two ops, however large n is.
  constexpr std::string_view decls = R"(            a = T.alloc_ub((16, 64), "float32")
)";
  EXPECT_EQ(vectorized(kernel(decls, R"(            for i in T.Parallel(16):
                for j in T.Parallel(64):
                    a[i, j] = T.if_then_else(j < n, a[i, j], T.float32(float("-inf")))
)", ", n: T.int32")),
            kernel(std::string(decls) + R"(            vec_t0 = T.alloc_ub((64,), "float32")
            vec_t1 = T.alloc_ub((16, 64), "float32")
            vec_t2 = T.alloc_ub((128,), "uint8")
)",
                   R"(            T.tile.arith_progression(vec_t0, 0.0, 1.0)
            T.tile.broadcast(vec_t1, vec_t0)
            T.tile.compare(vec_t2, vec_t1, T.cast(T.max(T.min(n, 64), -1), "float32"))
            T.tile.select(a, vec_t2, a, float("-inf"), mode=1)
)", ", n: T.int32"));
}

TEST(VectorizeParallel, ALoopVariableInAnExpressionIsAnInt32ProgressionAndTheExactOrdering) {
  // `j + d < n`: j's values as int32, `+ d` on the vector unit, then the int32 ordering:
  // float32 difference, or the int32 difference where both sides round to one float32.
  constexpr std::string_view decls = R"(            a = T.alloc_ub((16, 64), "float32")
)";
  EXPECT_EQ(vectorized(kernel(decls, R"(            for i in T.Parallel(16):
                for j in T.Parallel(64):
                    a[i, j] = T.if_then_else(j + d < n, a[i, j], T.float32(float("-inf")))
)", ", n: T.int32, d: T.int32")),
            kernel(std::string(decls) + R"(            vec_t0 = T.alloc_ub((64,), "int32")
            vec_t1 = T.alloc_ub((16, 64), "int32")
            vec_t2 = T.alloc_ub((16, 64), "int32")
            vec_t3 = T.alloc_ub((16, 64), "float32")
            vec_t4 = T.alloc_ub((128,), "uint8")
            vec_t5 = T.alloc_ub((16, 64), "float32")
            vec_t6 = T.alloc_ub((16, 64), "float32")
)",
                   R"(            T.tile.arith_progression(vec_t0, 0, 1)
            T.tile.broadcast(vec_t1, vec_t0)
            T.tile.add(vec_t1, vec_t1, d)
            T.tile.sub(vec_t2, vec_t1, n)
            T.tile.cast(vec_t3, vec_t1, mode="CAST_RINT")
            T.tile.compare(vec_t4, vec_t3, T.cast(n, "float32"), mode="EQ")
            T.tile.sub(vec_t5, vec_t3, T.cast(n, "float32"))
            T.tile.cast(vec_t3, vec_t2, mode="CAST_RINT")
            T.tile.select(vec_t6, vec_t4, vec_t3, vec_t5)
            T.tile.compare(vec_t4, vec_t6, 0.0)
            T.tile.select(a, vec_t4, a, float("-inf"), mode=1)
)", ", n: T.int32, d: T.int32"));
}

TEST(VectorizeParallel, LoopVariablesAsValuesMaskKeysAndCausalPositions) {
  // A key mask (the innermost variable against a launch-time length, as attention masks keys
  // past S) and a causal mask (both variables), run against the serial loop. The int32
  // orderings take the exact compare sequence (A2 compares int32 for equality only).
  expect_same_as_serial(R"(@T.prim_func
def f(n: T.int32, d: T.int32, GA: T.Tensor((16, 64), "float32"), GC: T.Tensor((16, 64), "float32"), GB: T.Tensor((64,), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32")
            c = T.alloc_ub((16, 64), "float32")
            b = T.alloc_ub((64,), "float16")
            if vid == 0:
                T.copy(GA, a)
                T.copy(GC, c)
                T.copy(GB, b)
                T.barrier_all()
                for i in T.Parallel(16):
                    for j in T.Parallel(64):
                        a[i, j] = T.if_then_else(d * 64 + j < n, a[i, j] * 0.5, T.float32(float("-inf")))
                for i in T.Parallel(16):
                    for j in T.Parallel(64):
                        c[i, j] = T.if_then_else(i * 4 + d >= j, c[i, j], 0.0)
                for j in T.Parallel(64):
                    b[j] = T.if_then_else(j != n, T.cast(j, "float16"), b[j])
                T.barrier_all()
                T.copy(a, GA)
                T.copy(c, GC)
                T.copy(b, GB)
)",
                        {Arg(int64_t{37}), Arg(int64_t{0})});
}

TEST(VectorizeParallel, Int32OrderingsAreExactAtTheExtremes) {
  // Pairs that round to one float32 (2^31 - 128 and its neighbours), pairs whose difference
  // wraps int32 (INT32_MIN against INT32_MAX), equal pairs: each ordering of each pair equals
  // the integer comparison.
  const std::vector<double> xs = {2147483520.0, 2147483647.0, -2147483648.0, 2147483647.0, 5, -5, 16777217, 0,
                                  2147483521.0, -2147483647.0, 7, 7, 2147483584.0, 2147483583.0, 1, -1};
  std::vector<double> ys = {2147483521.0, 2147483520.0, 2147483647.0, -2147483648.0, 5, 5, 16777216, -0.0,
                            2147483520.0, -2147483648.0, 7, 8, 2147483583.0, 2147483584.0, 1, 1};
  std::vector<double> a(64 * 4), b(64 * 4);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = xs[i % xs.size()];
    b[i] = ys[(i + i / xs.size()) % ys.size()];
  }
  Device dev(default_target());
  PrimFunc f = vectorize_parallel(parse(R"(@T.prim_func
def f(GA: T.Tensor((4, 64), "int32"), GB: T.Tensor((4, 64), "int32"), GO: T.Tensor((4, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((4, 64), "int32")
            b = T.alloc_ub((4, 64), "int32")
            o = T.alloc_ub((4, 64), "float32")
            if vid == 0:
                T.copy(GA, a)
                T.copy(GB, b)
                T.barrier_all()
                for i in T.Parallel(4):
                    for j in T.Parallel(64):
                        o[i, j] = T.if_then_else(a[i, j] < b[i, j], 1.0, 0.0) + T.if_then_else(a[i, j] <= b[i, j], 2.0, 0.0) + T.if_then_else(a[i, j] > b[i, j], 4.0, 0.0) + T.if_then_else(a[i, j] >= b[i, j], 8.0, 0.0) + T.if_then_else(a[i, j] != b[i, j], 16.0, 0.0)
                T.barrier_all()
                T.copy(o, GO)
)"), default_target());
  Tensor ta = from_vector(dev, {4, 64}, i32, a), tb = from_vector(dev, {4, 64}, i32, b), to = Tensor::empty(dev, {4, 64}, f32);
  compile(f).launch(dev, {ta, tb, to}, {.threads = 1});
  std::vector<double> got = to.to_vector();
  for (size_t i = 0; i < a.size(); ++i) {
    auto x = static_cast<int64_t>(a[i]), y = static_cast<int64_t>(b[i]);
    double want = (x < y) * 1 + (x <= y) * 2 + (x > y) * 4 + (x >= y) * 8 + (x != y) * 16;
    EXPECT_EQ(got[i], want) << x << " vs " << y;
  }
}

}  // namespace
}  // namespace tl
