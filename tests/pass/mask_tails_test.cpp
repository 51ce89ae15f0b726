// mask_tails, IR text in, IR text out (docs/developer_mode.md, "Tails"): the stale part of a
// tile filled by a copy legalize_copies will clip never reaches a result. Reductions over a
// stale dimension are narrowed, accumulating element loops are narrowed or masked on the
// clipped iterations, ops that combine what they read get their identity in the stale part, a
// stale part the compiler cannot place is an error naming the statement, the tile and the
// reason, and so is a copy out that could store stale rows. The kernels run on tails in
// tests/regress/tail_accumulator_test.cpp and python/tests/test_tails.py.
#include "pass_test_util.h"

#include "tl/target.h"

namespace tl {
namespace {

std::string masked(std::string_view text) {
  return testing::run_on_text(text, [](const PrimFunc& f) { return mask_tails(f, get_target("A2")); });
}

std::string error_of(std::string_view text) {
  return testing::error_of([&] { masked(text); });
}

// AnAccumulatingLoopRunsAsWrittenAfterANeutralFillOfTheStalePart: tests/pass/mask_tails.tl.

TEST(MaskTails, AnAccumulatingLoopWithNoNeutralFillSelectsTheOldValue) {
  // `acc + |x| + 1` is acc for no value of x: on the clipped iterations the loop keeps the old
  // value past the valid columns (a select), else it runs as written.
  EXPECT_EQ(masked(R"(@T.prim_func
def f(X: T.Tensor((8, 100), "float32"), Y: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_ub((8, 64), "float32")
        acc = T.alloc_ub((8, 64), "float32")
        s = T.alloc_ub((8,), "float32")
        T.tile.fill(acc, 0.0)
        for c in T.serial(2):
            T.copy(X[0:8, c * 64:c * 64 + 64], x)
            for i in T.Parallel(8):
                for j in T.Parallel(64):
                    acc[i, j] = acc[i, j] + T.abs(x[i, j]) + 1.0
        T.reduce_sum(acc, s)
        T.copy(s, Y)
)"),
            R"(@T.prim_func
def f(X: T.Tensor((8, 100), "float32"), Y: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_ub((8, 64), "float32")
        acc = T.alloc_ub((8, 64), "float32")
        s = T.alloc_ub((8,), "float32")
        T.tile.fill(acc, 0.0)
        for c in T.serial(2):
            T.copy(X[0:8, c * 64:c * 64 + 64], x)
            if T.min(100 - c * 64, 64) < 64:
                for i in T.Parallel(8):
                    for j in T.Parallel(64):
                        acc[i, j] = T.if_then_else(j < T.min(100 - c * 64, 64), acc[i, j] + T.abs(x[i, j]) + 1.0, acc[i, j])
            else:
                for i in T.Parallel(8):
                    for j in T.Parallel(64):
                        acc[i, j] = acc[i, j] + T.abs(x[i, j]) + 1.0
        T.reduce_sum(acc, s)
        T.copy(s, Y)
)");
}

TEST(MaskTails, AnAccumulatingLoopOverStaleRowsIsNarrowed) {
  // Column sums over row tiles: the stale rows of the last tile narrow the loop (whole rows: no
  // select, and nothing extra on the tiles that are not clipped).
  EXPECT_EQ(masked(R"(@T.prim_func
def f(X: T.Tensor((13, 64), "float32"), Y: T.Tensor((64,), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_ub((8, 64), "float32")
        acc = T.alloc_ub((8, 64), "float32")
        s = T.alloc_ub((64,), "float32")
        T.tile.fill(acc, 0.0)
        for r in T.serial(2):
            T.copy(X[r * 8:r * 8 + 8, 0:64], x)
            for i in T.Parallel(8):
                for j in T.Parallel(64):
                    acc[i, j] = acc[i, j] + x[i, j]
        T.reduce_sum(acc, s, dim=0)
        T.copy(s, Y)
)"),
            R"(@T.prim_func
def f(X: T.Tensor((13, 64), "float32"), Y: T.Tensor((64,), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_ub((8, 64), "float32")
        acc = T.alloc_ub((8, 64), "float32")
        s = T.alloc_ub((64,), "float32")
        T.tile.fill(acc, 0.0)
        for r in T.serial(2):
            T.copy(X[r * 8:r * 8 + 8, 0:64], x)
            for i in T.Parallel(T.min(13 - r * 8, 8)):
                for j in T.Parallel(64):
                    acc[i, j] = acc[i, j] + x[i, j]
        T.reduce_sum(acc, s, dim=0)
        T.copy(s, Y)
)");
}

TEST(MaskTails, AccumulatingTileOpsReadTheirIdentityInTheStalePart) {
  // T.tile.add and T.tile.max both read the clipped chunk: 0 then -inf past the valid columns, each
  // filled on the clipped iterations only.
  EXPECT_EQ(masked(R"(@T.prim_func
def f(X: T.Tensor((8, 100), "float32"), Y: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_ub((8, 64), "float32")
        acc = T.alloc_ub((8, 64), "float32")
        m = T.alloc_ub((8, 64), "float32")
        s = T.alloc_ub((8,), "float32")
        T.tile.fill(acc, 0.0)
        T.tile.fill(m, float("-inf"))
        for c in T.serial(2):
            T.copy(X[0:8, c * 64:c * 64 + 64], x)
            T.tile.add(acc, acc, x)
            T.tile.max(m, m, x)
        T.reduce_sum(acc, s)
        T.copy(s, Y)
)"),
            R"(@T.prim_func
def f(X: T.Tensor((8, 100), "float32"), Y: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_ub((8, 64), "float32")
        acc = T.alloc_ub((8, 64), "float32")
        m = T.alloc_ub((8, 64), "float32")
        s = T.alloc_ub((8,), "float32")
        T.tile.fill(acc, 0.0)
        T.tile.fill(m, float("-inf"))
        for c in T.serial(2):
            T.copy(X[0:8, c * 64:c * 64 + 64], x)
            if T.min(100 - c * 64, 64) < 64:
                for tail0 in T.Parallel(8):
                    for tail1 in T.Parallel(64):
                        x[tail0, tail1] = T.if_then_else(tail1 < T.min(100 - c * 64, 64), x[tail0, tail1], 0.0)
            T.tile.add(acc, acc, x)
            if T.min(100 - c * 64, 64) < 64:
                for tail0_1 in T.Parallel(8):
                    for tail1_1 in T.Parallel(64):
                        x[tail0_1, tail1_1] = T.if_then_else(tail1_1 < T.min(100 - c * 64, 64), x[tail0_1, tail1_1], float("-inf"))
            T.tile.max(m, m, x)
        T.reduce_sum(acc, s)
        T.copy(s, Y)
)");
}

TEST(MaskTails, ASortReadsMinusInfinityPastTheTensor) {
  // A 128-entry sort of 100 values: the 28 stale entries hold -inf and sort last (always clipped:
  // no guard).
  EXPECT_EQ(masked(R"(@T.prim_func
def f(X: T.Tensor((100,), "float32"), Y: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_ub((128,), "float32")
        y = T.alloc_ub((128,), "float32")
        T.copy(X[0:128], x)
        T.sort(y, x, 128)
        T.copy(y, Y)
)"),
            R"(@T.prim_func
def f(X: T.Tensor((100,), "float32"), Y: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_ub((128,), "float32")
        y = T.alloc_ub((128,), "float32")
        T.copy(X[0:128], x)
        for tail0 in T.Parallel(128):
            x[tail0] = T.if_then_else(tail0 < 100, x[tail0], float("-inf"))
        T.sort(y, x, 128)
        T.copy(y, Y)
)");
}

TEST(MaskTails, AReductionOverAClippedDimensionReadsOnlyTheValidRows) {
  // 13 rows in blocks of 8: block 1's tile has 5 valid rows and 3 stale ones. Both column sums (of
  // x, and of y computed from x element by element) reduce the valid rows only; the row maxima
  // of y (over columns, a dimension that is not stale) are left as they are.
  EXPECT_EQ(masked(R"(@T.prim_func
def f(X: T.Tensor((13, 64), "float32"), S: T.Tensor((64,), "float32"), Q: T.Tensor((64,), "float32")):
    with T.Kernel(2, threads=1) as cid:
        x = T.alloc_ub((8, 64), "float32")
        y = T.alloc_ub((8, 64), "float32")
        s = T.alloc_ub((64,), "float32")
        q = T.alloc_ub((64,), "float32")
        T.copy(X[cid * 8:cid * 8 + 8, 0:64], x)
        T.reduce_sum(x, s, dim=0)
        for i in T.Parallel(8):
            for j in T.Parallel(64):
                y[i, j] = x[i, j] * x[i, j]
        T.reduce_sum(y, q, dim=0)
        T.reduce_max(y, x[0:8, 0:1])
        T.atomic_add(S, s)
        T.atomic_add(Q, q)
)"),
            R"(@T.prim_func
def f(X: T.Tensor((13, 64), "float32"), S: T.Tensor((64,), "float32"), Q: T.Tensor((64,), "float32")):
    with T.Kernel(2, threads=1) as cid:
        x = T.alloc_ub((8, 64), "float32")
        y = T.alloc_ub((8, 64), "float32")
        s = T.alloc_ub((64,), "float32")
        q = T.alloc_ub((64,), "float32")
        T.copy(X[cid * 8:cid * 8 + 8, 0:64], x)
        T.reduce_sum(x[0:T.min(13 - cid * 8, 8), 0:64], s, dim=0)
        for i in T.Parallel(8):
            for j in T.Parallel(64):
                y[i, j] = x[i, j] * x[i, j]
        T.reduce_sum(y[0:T.min(13 - cid * 8, 8), 0:64], q, dim=0)
        T.reduce_max(y, x[0:8, 0:1])
        T.atomic_add(S, s)
        T.atomic_add(Q, q)
)");
}

TEST(MaskTails, ATileCrossingIntoTheCubeHasItsStaleRowsZeroed) {
  // A gemm operand produced in UB: its stale rows would enter every product along K, so they are
  // zeroed (one fill of the stale rows) before the crossing copy.
  EXPECT_EQ(masked(R"(@T.prim_func
def f(X: T.Tensor((13, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((13, 64), "float32")):
    with T.Kernel(2, threads=1) as cid:
        x = T.alloc_ub((8, 64), "float16")
        xl = T.alloc_L1((8, 64), "float16")
        T.copy(X[cid * 8:cid * 8 + 8, 0:64], x)
        T.copy(x, xl)
)"),
            R"(@T.prim_func
def f(X: T.Tensor((13, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((13, 64), "float32")):
    with T.Kernel(2, threads=1) as cid:
        x = T.alloc_ub((8, 64), "float16")
        xl = T.alloc_L1((8, 64), "float16")
        T.copy(X[cid * 8:cid * 8 + 8, 0:64], x)
        if T.min(13 - cid * 8, 8) < 8:
            T.tile.fill(x[T.min(13 - cid * 8, 8):T.min(13 - cid * 8, 8) + (8 - T.min(13 - cid * 8, 8)), 0:64], T.float16(0.0))
        T.copy(x, xl)
)");
}

TEST(MaskTails, AStalePartAReductionCannotPlaceIsAnErrorNamingWhy) {
  // After the loop (which may run no iteration, or leave the last copy's clip) the stale part of
  // x is not known: a reduction of it is an error, not a reduction of stale rows.
  std::string msg = error_of(R"(@T.prim_func
def f(X: T.Tensor((13, 64), "float32"), S: T.Tensor((64,), "float32"), n: T.int32):
    with T.Kernel(2, threads=1) as cid:
        x = T.alloc_ub((8, 64), "float32")
        s = T.alloc_ub((64,), "float32")
        for k in T.serial(n):
            T.copy(X[cid * 8:cid * 8 + 8, 0:64], x)
            T.reduce_sum(x, s, dim=0)
        T.reduce_max(x, s, dim=0)
        T.atomic_add(S, s)
)");
  EXPECT_NE(msg.find("`T.reduce_max(x, s, dim=0)` reads 'x'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a branch or a loop leaves it in more than one way"), std::string::npos) << msg;
  EXPECT_NE(msg.find("pad_value"), std::string::npos) << msg;
  // A tile the kernel writes in part after a clipped copy: which rows are valid is no longer
  // known (the fill of rows 5-7 is right for block 1 only).
  msg = error_of(R"(@T.prim_func
def f(X: T.Tensor((13, 64), "float32"), S: T.Tensor((64,), "float32")):
    with T.Kernel(2, threads=1) as cid:
        x = T.alloc_ub((8, 64), "float32")
        s = T.alloc_ub((64,), "float32")
        T.copy(X[cid * 8:cid * 8 + 8, 0:64], x)
        T.tile.fill(x[5:8, 0:64], 0.0)
        T.reduce_sum(x, s, dim=0)
        T.atomic_add(S, s)
)");
  EXPECT_NE(msg.find("a part of it was written since"), std::string::npos) << msg;
}

TEST(MaskTails, ACopyOutThatCouldStoreStaleRowsIsAnError) {
  // y is computed from x, which holds 13 - 8 cid valid rows; Y has 16 rows, so block 1's copy
  // out would store three stale rows inside Y.
  std::string msg = error_of(R"(@T.prim_func
def f(X: T.Tensor((13, 64), "float32"), Y: T.Tensor((16, 64), "float32")):
    with T.Kernel(2, threads=1) as cid:
        x = T.alloc_ub((8, 64), "float32")
        y = T.alloc_ub((8, 64), "float32")
        T.copy(X[cid * 8:cid * 8 + 8, 0:64], x)
        for i in T.Parallel(8):
            for j in T.Parallel(64):
                y[i, j] = x[i, j] + 1.0
        T.copy(y, Y[cid * 8:cid * 8 + 8, 0:64])
)");
  EXPECT_NE(msg.find("may store elements of 'y' past its valid part"), std::string::npos) << msg;
  EXPECT_NE(msg.find("valid below T.min(13 - cid * 8, 8) in dimension 0"), std::string::npos) << msg;
}

TEST(MaskTails, ACopyOutClippedLikeItsSourceAndAPadValueNeedNothing) {
  // Copies out clipped the same way store only valid rows; a copy with the author's pad_value
  // defines its tail (legalize_copies fills it), so nothing is stale.
  const char* in = R"(@T.prim_func
def f(X: T.Tensor((13, 64), "float32"), Y: T.Tensor((13, 64), "float32"), S: T.Tensor((64,), "float32")):
    with T.Kernel(2, threads=1) as cid:
        x = T.alloc_ub((8, 64), "float32")
        s = T.alloc_ub((64,), "float32")
        T.copy(X[cid * 8:cid * 8 + 8, 0:64], x)
        T.copy(x, Y[cid * 8:cid * 8 + 8, 0:64])
        T.copy(X[cid * 8:cid * 8 + 8, 0:64], x, pad=True, pad_value=0.0)
        T.reduce_sum(x, s, dim=0)
        T.atomic_add(S, s)
)";
  EXPECT_EQ(masked(in), print(parse(in), {.locations = false}));
}

TEST(MaskTails, ExpertKernelsAreUnchanged) {
  PrimFunc f = parse(R"(@T.prim_func
def f(X: T.Tensor((13, 64), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((4, 37), "float16")
            T.copy(X[0:4, 0:37], x, pad=True, pad_value=0.0)
)");
  EXPECT_EQ(mask_tails(f, get_target("A2")), f);
}

}  // namespace
}  // namespace tl
