// legalize_copies, IR text in, IR text out (docs/developer_mode.md, "Tails"): GM copies clipped
// to their tensors where the end is not provably inside, padded UB rows and the padded copy
// form, element loops and elementwise ops widened to the padded width (reductions not), partial
// L1 panels zero-filled before their copy, expert kernels untouched. The developer examples run
// with tails in tests/examples/developer_examples_test.cpp.
#include "pass_test_util.h"

#include "tl/target.h"

namespace tl {
namespace {

std::string legal(std::string_view text) {
  return testing::run_on_text(text, [](const PrimFunc& f) { return legalize_copies(f, get_target("A2")); });
}

// RowTailClipsBothSidesOfEveryGmCopy, CopiesProvablyInsideTheTensorAreUnchanged:
// tests/pass/legalize_copies.tl.

TEST(LegalizeCopies, RowsThatAreNotWholeBlocksArePaddedAndUseThePaddedCopy) {
  EXPECT_EQ(legal(R"(@T.prim_func
def f(X: T.Tensor((8, 37), "float32"), Z: T.Tensor((8, 37), "float32")):
    with T.Kernel(2, threads=1) as cid:
        x = T.alloc_ub((4, 37), "float32")
        z = T.alloc_ub((4, 37), "float32")
        T.copy(X[cid * 4:cid * 4 + 4, 0:37], x)
        for i in T.Parallel(4):
            for j in T.Parallel(37):
                z[i, j] = x[i, j] * T.float32(2)
        T.copy(z, Z[cid * 4:cid * 4 + 4, 0:37])
)"),
            R"(@T.prim_func
def f(X: T.Tensor((8, 37), "float32"), Z: T.Tensor((8, 37), "float32")):
    with T.Kernel(2, threads=1) as cid:
        x = T.alloc_ub((4, 40), "float32")
        z = T.alloc_ub((4, 40), "float32")
        T.copy(X[cid * 4:cid * 4 + 4, 0:37], x[0:4, 0:37], pad=True)
        for i in T.Parallel(4):
            for j in T.Parallel(40):
                z[i, j] = x[i, j] * 2.0
        T.copy(z[0:4, 0:37], Z[cid * 4:cid * 4 + 4, 0:37], pad=True)
)");
}

TEST(LegalizeCopies, TilesOfOneLogicalWidthShareOnePaddedWidth) {
  // 100 float32 are whole blocks but 100 float16 are not: both pad to 112, so the converting
  // element loop stays one aligned run per row on both sides.
  std::string out = legal(R"(@T.prim_func
def f(X: T.Tensor((4, 100), "float16"), Z: T.Tensor((4, 100), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_ub((4, 100), "float16")
        z = T.alloc_ub((4, 100), "float32")
        T.copy(X, x)
        for i in T.Parallel(4):
            for j in T.Parallel(100):
                z[i, j] = T.cast(x[i, j], "float32")
        T.copy(z, Z)
)");
  EXPECT_NE(out.find(R"(x = T.alloc_ub((4, 112), "float16"))"), std::string::npos) << out;
  EXPECT_NE(out.find(R"(z = T.alloc_ub((4, 112), "float32"))"), std::string::npos) << out;
  EXPECT_NE(out.find("for j in T.Parallel(112):"), std::string::npos) << out;
  EXPECT_NE(out.find("T.copy(z[0:4, 0:100], Z, pad=True)"), std::string::npos) << out;
}

TEST(LegalizeCopies, AnElementLoopThatIndexesOtherwiseKeepsItsExtent) {
  // x[i, 36 - j] would read before the row for j >= 37: the loop stays 37 wide (and
  // vectorize_parallel reports what it cannot do with it).
  std::string out = legal(R"(@T.prim_func
def f(X: T.Tensor((4, 37), "float32"), Z: T.Tensor((4, 37), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_ub((4, 37), "float32")
        z = T.alloc_ub((4, 37), "float32")
        T.copy(X, x)
        for i in T.Parallel(4):
            for j in T.Parallel(37):
                z[i, j] = x[i, 36 - j]
        T.copy(z, Z)
)");
  EXPECT_NE(out.find("for j in T.Parallel(37):"), std::string::npos) << out;
  EXPECT_NE(out.find(R"(x = T.alloc_ub((4, 40), "float32"))"), std::string::npos) << out;
}

TEST(LegalizeCopies, ElementwiseOpsWidenAndReductionsKeepTheLogicalWidth) {
  EXPECT_EQ(legal(R"(@T.prim_func
def f(X: T.Tensor((8, 37), "float32"), S: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_ub((8, 37), "float32")
        s = T.alloc_ub((8,), "float32")
        T.copy(X, x)
        T.tile.exp(x, x)
        T.reduce_sum(x, s)
        T.copy(s, S)
)"),
            R"(@T.prim_func
def f(X: T.Tensor((8, 37), "float32"), S: T.Tensor((8,), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_ub((8, 40), "float32")
        s = T.alloc_ub((8,), "float32")
        T.copy(X, x[0:8, 0:37], pad=True)
        T.tile.exp(x, x)
        T.reduce_sum(x[0:8, 0:37], s)
        T.copy(s, S)
)");
}

TEST(LegalizeCopies, APartialL1PanelIsZeroFilledBeforeItsCopy) {
  // K = 40 in panels of 32: the second panel has 8 columns; the other 24 would be the first
  // panel's stale data inside the product.
  EXPECT_EQ(legal(R"(@T.prim_func
def f(A: T.Tensor((32, 40), "float16"), C: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_L1((32, 32), "float16")
        c = T.alloc_L0C((32, 32), "float32")
        for k in T.serial(2):
            T.copy(A[0:32, k * 32:k * 32 + 32], a)
        T.copy(c, C)
)"),
            R"(@T.prim_func
def f(A: T.Tensor((32, 40), "float16"), C: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_L1((32, 32), "float16")
        c = T.alloc_L0C((32, 32), "float32")
        for k in T.serial(2):
            if T.min(40 - k * 32, 32) < 32:
                T.init_const(a, T.float16(0.0))
            T.copy(A[0:32, k * 32:k * 32 + T.min(40 - k * 32, 32)], a[0:32, 0:T.min(40 - k * 32, 32)])
        T.copy(c, C)
)");
}

TEST(LegalizeCopies, ATileLongerThanItsTensorIsClippedToAConstant) {
  EXPECT_EQ(legal(R"(@T.prim_func
def f(B: T.Tensor((72, 136), "float16")):
    with T.Kernel(1, threads=1) as cid:
        b = T.alloc_L1((32, 256), "float16")
        T.copy(B[0:32, 0:256], b)
)"),
            R"(@T.prim_func
def f(B: T.Tensor((72, 136), "float16")):
    with T.Kernel(1, threads=1) as cid:
        b = T.alloc_L1((32, 256), "float16")
        T.init_const(b, T.float16(0.0))
        T.copy(B[0:32, 0:136], b[0:32, 0:136])
)");
}

TEST(LegalizeCopies, DynamicTensorExtentsAreClippedAtRunTime) {
  std::string out = legal(R"(M = T.dynamic("M")
@T.prim_func
def f(X: T.Tensor((M, 64), "float32"), Z: T.Tensor((M, 64), "float32")):
    with T.Kernel((M + 7) // 8, threads=1) as cid:
        x = T.alloc_ub((8, 64), "float32")
        T.copy(X[cid * 8:cid * 8 + 8, 0:64], x)
        T.copy(x, Z[cid * 8:cid * 8 + 8, 0:64])
)");
  EXPECT_NE(out.find("T.copy(X[cid * 8:cid * 8 + T.min(M - cid * 8, 8), 0:64], x[0:T.min(M - cid * 8, 8), 0:64], clipped=True)"),
            std::string::npos)
      << out;
}

TEST(LegalizeCopies, TheAuthorsPadValueFillsTheTileOnClippedIterations) {
  // With pad_value the tile holds the value past the tensor: filled before the copy when the
  // copy is clipped, and the copy is not marked clipped (nothing is stale).
  EXPECT_EQ(legal(R"(@T.prim_func
def f(X: T.Tensor((13, 64), "float32"), Y: T.Tensor((13, 64), "float32")):
    with T.Kernel(2, threads=1) as cid:
        x = T.alloc_ub((8, 64), "float32")
        T.copy(X[cid * 8:cid * 8 + 8, 0:64], x, pad=True, pad_value=-1.0)
        T.copy(x, Y[cid * 8:cid * 8 + 8, 0:64])
)"),
            R"(@T.prim_func
def f(X: T.Tensor((13, 64), "float32"), Y: T.Tensor((13, 64), "float32")):
    with T.Kernel(2, threads=1) as cid:
        x = T.alloc_ub((8, 64), "float32")
        if T.min(13 - cid * 8, 8) < 8:
            T.tile.fill(x, -1.0)
        T.copy(X[cid * 8:cid * 8 + T.min(13 - cid * 8, 8), 0:64], x[0:T.min(13 - cid * 8, 8), 0:64], pad=True, pad_value=-1.0)
        T.copy(x[0:T.min(13 - cid * 8, 8), 0:64], Y[cid * 8:cid * 8 + T.min(13 - cid * 8, 8), 0:64])
)");
}

TEST(LegalizeCopies, ExpertKernelsAreUnchanged) {
  PrimFunc f = parse(R"(@T.prim_func
def f(X: T.Tensor((13, 64), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((4, 37), "float16")
            T.copy(X[0:4, 0:37], x, pad=True, pad_value=0.0)
)");
  EXPECT_EQ(legalize_copies(f, get_target("A2")), f);
}

}  // namespace
}  // namespace tl
