// The developer-mode passes on IR text (docs/developer_mode.md): infer_scopes (placement by
// use, and the errors for uses it cannot place), lower_cube_ops (gemm -> L1 -> L0A/L0B loads
// and Mmads in K chunks, clear folded into init), split_cube_vector (projection on each core,
// vector work on AIV 0), and a developer GEMM run end to end on the virtual NPU.
#include <cmath>

#include "common/references.h"
#include "pass/pass_test_util.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/target.h"

namespace tl {
namespace {

using testing::error_of;
using testing::run_on_text;

std::string placed(std::string_view text) {
  return run_on_text(text, [](const PrimFunc& f) { return infer_scopes(f, default_target()); });
}
std::string cube_lowered(std::string_view text) {
  return run_on_text(text, [](const PrimFunc& f) {
    return lower_cube_ops(infer_scopes(f, default_target()), default_target());
  });
}
std::string split(std::string_view text) {
  return run_on_text(text, [](const PrimFunc& f) {
    const Target& t = default_target();
    return split_cube_vector(lower_cube_ops(infer_scopes(f, t), t), t);
  });
}

// ---- infer_scopes ----------------------------------------------------------------------------

TEST(InferScopes, GemmOperandsGoToL1AndTheAccumulatorToL0C) {
  EXPECT_EQ(placed(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        b = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.copy(A, a)
        T.copy(A, b)
        T.gemm(a, b, c, True)
        T.copy(c, A)
)"),
            R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_L1((32, 32), "float16")
        b = T.alloc_L1((32, 32), "float16")
        c = T.alloc_L0C((32, 32), "float32")
        T.copy(A, a)
        T.copy(A, b)
        T.gemm(a, b, c, True)
        T.copy(c, A)
)");
}

TEST(InferScopes, FragmentOperandsAreLoadedStraightIntoL0AAndL0B) {
  std::string out = placed(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_fragment((32, 32), "float16")
        b = T.alloc_fragment((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.copy(A, a)
        T.copy(A, b)
        T.gemm(a, b, c, True)
)");
  EXPECT_NE(out.find("a = T.alloc_L0A((32, 32)"), std::string::npos) << out;
  EXPECT_NE(out.find("b = T.alloc_L0B((32, 32)"), std::string::npos) << out;
  EXPECT_NE(out.find("c = T.alloc_L0C((32, 32)"), std::string::npos) << out;
}

TEST(InferScopes, VectorUsesAndCopyOnlyBuffersGoToUB) {
  std::string out = placed(R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((16, 64), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((16, 64), "float32")
        y = T.alloc_fragment((16, 64), "float32")
        z = T.alloc_shared((16, 64), "float32")
        s = T.alloc_fragment((16, 64), "float32")
        T.copy(X, x)
        T.tile.exp(y, x)
        for i in T.Parallel(16):
            for j in T.Parallel(64):
                s[i, j] = y[i, j]
        T.copy(X, z)
        T.copy(z, Y)
        T.copy(s, Y)
)");
  for (const char* b : {"x", "y", "z", "s"})
    EXPECT_NE(out.find(fmt::format("{} = T.alloc_ub((16, 64)", b)), std::string::npos) << b << "\n" << out;
}

TEST(InferScopes, AClearedAccumulatorStaysInL0C) {
  std::string out = placed(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.tile.fill(c, 0.0)
        T.copy(A, a)
        T.gemm(a, a, c, False)
)");
  EXPECT_NE(out.find("c = T.alloc_L0C((32, 32)"), std::string::npos) << out;
}

TEST(InferScopes, ABufferBothCoresUseNamesBothUses) {
  std::string msg = error_of([] {
    placed(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")  # @k.py:5
        c = T.alloc_fragment((32, 32), "float32")
        T.copy(A, a)
        T.gemm(a, a, c, True)  # @k.py:7
        T.tile.exp(a, a)  # @k.py:8
)");
  });
  EXPECT_NE(msg.find("k.py:5: buffer 'a' (k.py:5) is used by the cube core (`T.gemm(a, a, c, True)` at k.py:7) and "
                     "by the vector cores (`T.tile.exp(a, a)` at k.py:8)"),
            std::string::npos)
      << msg;
}

TEST(InferScopes, ASharedAccumulatorIsAnError) {
  std::string msg = error_of([] {
    placed(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_shared((32, 32), "float32")  # @k.py:5
        T.gemm(a, a, c, True)
)");
  });
  EXPECT_NE(msg.find("k.py:5: buffer 'c' (k.py:5) is the accumulator of"), std::string::npos) << msg;
  EXPECT_NE(msg.find("make it with T::alloc_fragment"), std::string::npos) << msg;
}

TEST(InferScopes, ExpertKernelsAreReturnedUnchanged) {
  PrimFunc f = parse(R"(@T.prim_func
def f(X: T.Tensor((16,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((16,), "float32")
            T.copy(X, x)
)");
  const Target& t = default_target();
  EXPECT_EQ(infer_scopes(f, t), f);
  EXPECT_EQ(lower_cube_ops(f, t), f);
  EXPECT_EQ(split_cube_vector(f, t), f);
}

TEST(InferScopes, AViewLivesWhereItsBaseDoes) {
  std::string out = placed(R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((16, 64), "float32")
        xi = T.view(x, "int32")
        T.copy(X, x)
        T.tile.exp(x, x)
)");
  EXPECT_NE(out.find("x = T.alloc_ub((16, 64)"), std::string::npos) << out;
  EXPECT_NE(out.find("xi = T.view(x, \"int32\")"), std::string::npos) << out;
}

TEST(InferScopes, TwoFragmentOperandPositionsAreAnError) {
  std::string msg = error_of([] {
    placed(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_fragment((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.gemm(a, a, c, True)
)");
  });
  EXPECT_NE(msg.find("buffer 'a' is used in two gemm operand positions"), std::string::npos) << msg;
}

// ---- lower_cube_ops --------------------------------------------------------------------------

TEST(LowerCubeOps, ClearBeforeTheKLoopBecomesInitOnTheFirstIteration) {
  EXPECT_EQ(cube_lowered(R"(@T.prim_func
def f(A: T.Tensor((32, 64), "float16"), B: T.Tensor((64, 32), "float16"), C: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        b = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.tile.fill(c, 0.0)
        for k in T.serial(2):
            T.copy(A[0:32, k * 32:k * 32 + 32], a)
            T.copy(B[k * 32:k * 32 + 32, 0:32], b)
            T.gemm(a, b, c, False)
        T.copy(c, C)
)"),
            R"(@T.prim_func
def f(A: T.Tensor((32, 64), "float16"), B: T.Tensor((64, 32), "float16"), C: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_L1((32, 32), "float16")
        b = T.alloc_L1((32, 32), "float16")
        c = T.alloc_L0C((32, 32), "float32")
        for k in T.serial(2):
            T.copy(A[0:32, k * 32:k * 32 + 32], a)
            T.copy(B[k * 32:k * 32 + 32, 0:32], b)
            a_l0a = T.alloc_L0A((32, 32), "float16")
            b_l0b = T.alloc_L0B((32, 32), "float16")
            T.copy(a, a_l0a)
            T.copy(b, b_l0b)
            T.mma(a_l0a, b_l0b, c, k == 0)
        T.copy(c, C)
)");
}

TEST(LowerCubeOps, LongKIsChunkedIntoTwoAlternatingSlots) {
  // K = 1024 fp16 with M = N = 64: two slots of 64 x K chunks must fit 64 KiB L0A, so the chunk
  // is 256 and the four chunks alternate between slot 0 and slot 1.
  std::string out = cube_lowered(R"(@T.prim_func
def f(A: T.Tensor((64, 1024), "float16"), B: T.Tensor((1024, 64), "float16")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((64, 1024), "float16")
        b = T.alloc_shared((1024, 64), "float16")
        c = T.alloc_fragment((64, 64), "float32")
        T.copy(A, a)
        T.copy(B, b)
        T.gemm(a, b, c, True)
)");
  EXPECT_NE(out.find("a_l0a = T.alloc_L0A((128, 256), \"float16\")"), std::string::npos) << out;
  EXPECT_NE(out.find("b_l0b = T.alloc_L0B((512, 64), \"float16\")"), std::string::npos) << out;
  EXPECT_NE(out.find("T.copy(a[0:64, 768:1024], a_l0a[64:128, 0:256])"), std::string::npos) << out;
  EXPECT_NE(out.find("T.mma(a_l0a[0:64, 0:256], b_l0b[0:256, 0:64], c, True)"), std::string::npos) << out;
  EXPECT_NE(out.find("T.mma(a_l0a[64:128, 0:256], b_l0b[256:512, 0:64], c, False)"), std::string::npos) << out;
  EXPECT_EQ(out.find("gemm"), std::string::npos) << out;
}

/// A 64 x 512 fp32 accumulator `c` (all of L0C) beside a 64 x 64 one `s`, both written from
/// scratch; `tail` is what follows the gemms. C has `c_rows` rows, the kernel `blocks` blocks.
std::string two_accumulators(std::string_view tail, int c_rows = 64, int blocks = 1) {
  return fmt::format(R"(@T.prim_func
def f(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 512), "float16"), C: T.Tensor(({}, 512), "float32"), S: T.Tensor((64, 64), "float32")):
    with T.Kernel({}, threads=1) as cid:
        a = T.alloc_shared((64, 64), "float16")
        b = T.alloc_shared((64, 512), "float16")
        c = T.alloc_fragment((64, 512), "float32")
        s = T.alloc_fragment((64, 64), "float32")
        T.copy(A, a)
        T.copy(B, b)
        T.gemm(a, a, s, True)
        T.gemm(a, b, c, True)
{})",
                     c_rows, blocks, tail);
}

// Two accumulators that do not fit L0C together (a 64 x 512 fp32 one is all of it): the one
// written from scratch and then copied out whole is computed in column chunks, in two L0C slots,
// each drained to its columns of the destination as soon as it is done; its A chunk is loaded
// once for every column chunk.
TEST(LowerCubeOps, AnAccumulatorThatDoesNotFitL0CIsComputedAndDrainedInColumnChunks) {
  std::string out = cube_lowered(two_accumulators("        T.copy(s, S)\n        T.copy(c, C)\n"));
  EXPECT_EQ(out.find("c = T.alloc_L0C"), std::string::npos) << out;
  // 112 KiB left beside s: two slots of 64 x 224 would fit; 128 divides 512.
  EXPECT_NE(out.find("c_part = T.alloc_L0C((128, 128), \"float32\")"), std::string::npos) << out;
  EXPECT_EQ(out.find("T.copy(c, C)"), std::string::npos) << out;
  EXPECT_NE(out.find("T.mma(a_l0a, b_l0b[0:64, 0:128], c_part[0:64, 0:128], True)\n"
                     "        T.copy(c_part[0:64, 0:128], C[0:64, 0:128])"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("T.mma(a_l0a, b_l0b[64:128, 0:128], c_part[64:128, 0:128], True)\n"
                     "        T.copy(c_part[64:128, 0:128], C[0:64, 128:256])"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("T.copy(c_part[64:128, 0:128], C[0:64, 384:512])"), std::string::npos) << out;
  EXPECT_EQ(out.find("T.copy(a, a_l0a)", out.find("C[0:64, 0:128]")), std::string::npos) << out;
  EXPECT_NE(out.find("T.copy(s, S)"), std::string::npos) << out;
}

// An accumulator that is read again, or accumulated into (init not True), is never split: the
// kernel does not fit and plan_memory says so.
TEST(LowerCubeOps, AnAccumulatorWithOtherUsesIsNotSplit) {
  std::string out = cube_lowered(two_accumulators("        T.copy(s, S)\n        T.copy(c, C)\n        T.copy(c, C)\n"));
  EXPECT_NE(out.find("c = T.alloc_L0C((64, 512)"), std::string::npos) << out;
  EXPECT_EQ(out.find("c_part"), std::string::npos) << out;
  // Nor when the drain would have to move above a let its region names.
  out = cube_lowered(two_accumulators("        row = cid * 64\n        T.copy(s, S)\n        T.copy(c, C[row:row + 64, 0:512])\n", 128, 2));
  EXPECT_EQ(out.find("c_part"), std::string::npos) << out;
}

// Two gemms whose L0A slots would exceed L0A together (Q K^T with a 64 x 512 Q chunked by 256,
// and P V): the larger gets the next smaller K chunk until both fit.
TEST(LowerCubeOps, GemmsShareL0AAndL0B) {
  std::string out = cube_lowered(R"(@T.prim_func
def f(Q: T.Tensor((64, 512), "float16"), K: T.Tensor((64, 512), "float16"), V: T.Tensor((64, 64), "float16"), O: T.Tensor((64, 64), "float32")):
    with T.Kernel(1, threads=1) as cid:
        q = T.alloc_shared((64, 512), "float16")
        k = T.alloc_shared((64, 512), "float16")
        v = T.alloc_shared((64, 64), "float16")
        s = T.alloc_fragment((64, 64), "float32")
        o = T.alloc_fragment((64, 64), "float32")
        T.copy(Q, q)
        T.copy(K, k)
        T.copy(V, v)
        T.gemm(q, k, s, True, transpose_B=True)
        T.gemm(v, v, o, True)
        T.copy(o, O)
)");
  // Alone, q's chunk would be 256 (two 32 KiB slots, all of L0A); with v's 8 KiB it is 128.
  EXPECT_NE(out.find("q_l0a = T.alloc_L0A((128, 128), \"float16\")"), std::string::npos) << out;
  EXPECT_NE(out.find("v_l0a = T.alloc_L0A((64, 64), \"float16\")"), std::string::npos) << out;
  EXPECT_NE(out.find("k_l0b = T.alloc_L0B((256, 64), \"float16\")"), std::string::npos) << out;
}

TEST(LowerCubeOps, TransposedOperandsAreLoadedTransposed) {
  std::string out = cube_lowered(R"(@T.prim_func
def f(Q: T.Tensor((32, 64), "float16"), K: T.Tensor((32, 64), "float16")):
    with T.Kernel(1, threads=1) as cid:
        q = T.alloc_shared((32, 64), "float16")
        k = T.alloc_shared((32, 64), "float16")
        s = T.alloc_fragment((32, 32), "float32")
        T.copy(Q, q)
        T.copy(K, k)
        T.gemm(q, k, s, True, transpose_B=True)
)");
  EXPECT_NE(out.find("T.copy(k, k_l0b, transpose=True)"), std::string::npos) << out;
}

TEST(LowerCubeOps, AClearNotFollowedByItsGemmIsAnError) {
  std::string msg = error_of([] {
    cube_lowered(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.copy(A, a)
        T.gemm(a, a, c, True)
        T.tile.fill(c, 0.0)  # @k.py:8
)");
  });
  EXPECT_NE(msg.find("k.py:8: T.clear of the accumulator 'c' is not followed by a T.gemm"), std::string::npos)
      << msg;
}

TEST(LowerCubeOps, FillingAnAccumulatorWithNonZeroIsAnError) {
  std::string msg = error_of([] {
    cube_lowered(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.tile.fill(c, 1.0)  # @k.py:6
        T.gemm(a, a, c, False)
)");
  });
  EXPECT_NE(msg.find("k.py:6: T.fill of the accumulator 'c' with a value other than 0"), std::string::npos)
      << msg;
}

TEST(LowerCubeOps, AFragmentOperandAlreadyInL0IsMultipliedDirectly) {
  std::string out = cube_lowered(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_fragment((32, 32), "float16")
        b = T.alloc_fragment((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.copy(A, a)
        T.copy(A, b)
        T.gemm(a, b, c, True)
)");
  EXPECT_NE(out.find("T.mma(a, b, c, True)"), std::string::npos) << out;
  EXPECT_EQ(out.find("_l0a"), std::string::npos) << out;
}

TEST(LowerCubeOps, ClearBeforeNestedLoopsInitsOnTheFirstIterationOfEach) {
  std::string out = cube_lowered(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.tile.fill(c, 0.0)
        for i in T.serial(2):
            for k in T.serial(3, min=1):
                T.copy(A, a)
                T.gemm(a, a, c, False)
        T.copy(c, A)
)");
  EXPECT_NE(out.find("T.mma(a_l0a, a_l0b, c, i == 0 and k == 1)"), std::string::npos) << out;
}

// ---- split_cube_vector -----------------------------------------------------------------------

TEST(SplitCubeVector, EachCoreGetsItsOwnWorkAndTheSharedSkeleton) {
  EXPECT_EQ(split(R"(@T.prim_func
def f(A: T.Tensor((64, 32), "float16"), X: T.Tensor((64, 64), "float32")):
    with T.Kernel(2, threads=1) as cid:
        row = cid * 32
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        x = T.alloc_shared((32, 64), "float32")
        T.copy(A[row:row + 32, 0:32], a)
        T.gemm(a, a, c, True)
        T.copy(c, X[row:row + 32, 0:32])
        for i in T.serial(2):
            T.copy(X[row:row + 32, 0:64], x)
            T.tile.exp(x, x)
            T.copy(x, X[row:row + 32, 0:64])
)"),
            R"(@T.prim_func
def f(A: T.Tensor((64, 32), "float16"), X: T.Tensor((64, 64), "float32")):
    with T.Kernel(2, is_npu=True) as (cid, vid):
        with T.Scope("Cube"):
            row = cid * 32
            a = T.alloc_L1((32, 32), "float16")
            c = T.alloc_L0C((32, 32), "float32")
            T.copy(A[row:row + 32, 0:32], a)
            a_l0a = T.alloc_L0A((32, 32), "float16")
            a_l0b = T.alloc_L0B((32, 32), "float16")
            T.copy(a, a_l0a)
            T.copy(a, a_l0b)
            T.mma(a_l0a, a_l0b, c, True)
            T.copy(c, X[row:row + 32, 0:32])
        with T.Scope("Vector"):
            if vid == 0:
                row = cid * 32
                x = T.alloc_ub((32, 64), "float32")
                for i in T.serial(2):
                    T.copy(X[row:row + 32, 0:64], x)
                    T.tile.exp(x, x)
                    T.copy(x, X[row:row + 32, 0:64])
)");
}

TEST(SplitCubeVector, AConditionOnTheOtherCoresDataIsAnError) {
  std::string msg = error_of([] {
    split(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16"), X: T.Tensor((32,), "int32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((32,), "int32")
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.copy(X, x)
        if x[0] > 0:  # @k.py:8
            T.copy(A, a)
            T.gemm(a, a, c, True)
)");
  });
  EXPECT_NE(msg.find("k.py:8: `if x[0] > 0` at k.py:8: its condition reads 'x' (UB), which lives on the Vector "
                     "core, but it also controls work of the Cube core"),
            std::string::npos)
      << msg;
}

TEST(SplitCubeVector, AValueComputedFromVectorDataStaysOnTheVectorSide) {
  // The cube projection drops `m` (it reads UB); the vector side keeps and uses it.
  std::string out = split(R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((16, 64), "float32")
        T.copy(X, x)
        m = x[0, 0]
        T.tile.add(x, x, m)
        T.copy(x, X)
)");
  EXPECT_EQ(out.find("Cube"), std::string::npos) << out;
  EXPECT_NE(out.find("m = x[0, 0]"), std::string::npos) << out;
  // Used by the cube's work, it is an error naming the use.
  std::string msg = error_of([] {
    split(R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), A: T.Tensor((64, 32), "float16")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((16, 64), "float32")
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.copy(X, x)
        m = T.cast(x[0, 0], "int32")
        T.copy(A[m:m + 32, 0:32], a)  # @k.py:10
        T.gemm(a, a, c, True)
)");
  });
  EXPECT_NE(msg.find("k.py:10: `T.copy(A[m:m + 32, 0:32], a)` at k.py:10 uses 'm', which is computed from the other "
                     "core's memory"),
            std::string::npos)
      << msg;
}

TEST(LowerCubeOps, MalformedGemmsAreUserErrors) {
  for (const char* body : {"T.gemm(a[0:0, 0:32], a, c, True)", "T.gemm(a, a[0:16, 0:32], c, True)",
                           "T.gemm(a, a, c[0:16, 0:32], True)"}) {
    std::string text = fmt::format(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.copy(A, a)
        {}
)", body);
    std::string msg = error_of([&] { cube_lowered(text); });
    EXPECT_NE(msg.find("T.gemm: "), std::string::npos) << body << ": " << msg;
  }
}

TEST(SplitCubeVector, ScalarStatementsGoWhereTheyAreNeeded) {
  std::string out = split(R"(@T.prim_func
def f(A: T.Tensor((32, 64), "float16"), C: T.Tensor((32, 32), "float32"), X: T.Tensor((16, 64), "float32"), F: T.Tensor((4,), "int32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        x = T.alloc_shared((16, 64), "float32")
        n = T.alloc_var("int32")
        s = T.alloc_var("float32")
        unused = cid * 3
        n[0] = 0
        for k in T.serial(2):
            T.copy(A[0:32, k * 32:k * 32 + 32], a)
            T.gemm(a, a, c, k == 0)
            n[0] = n[0] + 1
        T.copy(c, C)
        T.copy(X, x)
        s[0] = 0.0
        for j in T.serial(64):
            s[0] = s[0] + x[0, j]
        if x[0, 0] > s[0]:
            x[0, 1] = T.cast(n[0], "float32")
        F[cid] = n[0]
        T.printf(n[0], fmt="%d")
        T.copy(x, X)
)");
  // The cube keeps its work only: the counter n, the row sum s, the branch, the GM store and the
  // print are the vector side's, and the K loop is on both, the vector side's holding only n's
  // increment. `unused` is needed nowhere. The condition reads a tile: it is read into a let.
  EXPECT_EQ(out, R"(@T.prim_func
def f(A: T.Tensor((32, 64), "float16"), C: T.Tensor((32, 32), "float32"), X: T.Tensor((16, 64), "float32"), F: T.Tensor((4,), "int32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Cube"):
            a = T.alloc_L1((32, 32), "float16")
            c = T.alloc_L0C((32, 32), "float32")
            for k in T.serial(2):
                T.copy(A[0:32, k * 32:k * 32 + 32], a)
                a_l0a = T.alloc_L0A((32, 32), "float16")
                a_l0b = T.alloc_L0B((32, 32), "float16")
                T.copy(a, a_l0a)
                T.copy(a, a_l0b)
                T.mma(a_l0a, a_l0b, c, k == 0)
            T.copy(c, C)
        with T.Scope("Vector"):
            if vid == 0:
                x = T.alloc_ub((16, 64), "float32")
                n = T.alloc_var("int32")
                s = T.alloc_var("float32")
                n[0] = 0
                for k in T.serial(2):
                    n[0] = n[0] + 1
                T.copy(X, x)
                s[0] = 0.0
                for j in T.serial(64):
                    s[0] = s[0] + x[0, j]
                cond = x[0, 0] > s[0]
                if cond:
                    x[0, 1] = T.cast(n[0], "float32")
                F[cid] = n[0]
                T.printf(n[0], fmt="%d")
                T.copy(x, X)
)");
}

TEST(SplitCubeVector, AScalarBothCoresNeedIsComputedOnBoth) {
  // n (from a GM element) bounds the cube's loop and feeds the vector work: each core computes
  // it. A condition that reads GM is read into a let first.
  std::string out = split(R"(@T.prim_func
def f(A: T.Tensor((32, 64), "float16"), C: T.Tensor((32, 32), "float32"), X: T.Tensor((16, 64), "float32"), K: T.Tensor((2,), "int32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        x = T.alloc_shared((16, 64), "float32")
        n = T.alloc_var("int32")
        n[0] = K[0] // 32
        for k in T.serial(n[0]):
            T.copy(A[0:32, k * 32:k * 32 + 32], a)
            T.gemm(a, a, c, k == 0)
        T.copy(c, C)
        T.copy(X, x)
        if K[1] > 0:
            T.tile.add(x, x, T.cast(n[0], "float32"))
        T.copy(x, X)
)");
  EXPECT_NE(out.find(R"(        with T.Scope("Cube"):
            a = T.alloc_L1((32, 32), "float16")
            c = T.alloc_L0C((32, 32), "float32")
            n = T.alloc_var("int32")
            n[0] = K[0] // 32
            for k in T.serial(n[0]):)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(R"(                n = T.alloc_var("int32")
                n[0] = K[0] // 32
                T.copy(X, x)
                cond = K[1] > 0
                if cond:
                    T.tile.add(x, x, T.cast(n[0], "float32")))"),
            std::string::npos)
      << out;
}

TEST(SplitCubeVector, AVectorOnlyKernelHasNoCubeScope) {
  std::string out = split(R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((16, 64), "float32")
        T.copy(X, x)
        T.tile.exp(x, x)
        T.copy(x, X)
)");
  EXPECT_NE(out.find("with T.Scope(\"Vector\"):\n            if vid == 0:"), std::string::npos) << out;
  EXPECT_EQ(out.find("Cube"), std::string::npos) << out;
}

TEST(SplitCubeVector, AnIfOnAParameterGuardsTheWorkOfBothCores) {
  // `n > 0` reads no core's data: each core keeps the if around its own part of the branch.
  std::string out = split(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float32"), X: T.Tensor((16, 64), "float32"), n: T.int32):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        x = T.alloc_shared((16, 64), "float32")
        if n > 0:
            T.copy(A, a)
            T.gemm(a, a, c, True)
            T.copy(c, C)
            T.copy(X, x)
            T.tile.exp(x, x)
            T.copy(x, X)
)");
  size_t cube = out.find("with T.Scope(\"Cube\"):"), vec = out.find("with T.Scope(\"Vector\"):");
  ASSERT_NE(cube, std::string::npos) << out;
  ASSERT_NE(vec, std::string::npos) << out;
  std::string cube_part = out.substr(cube, vec - cube), vec_part = out.substr(vec);
  EXPECT_NE(cube_part.find("if n > 0:"), std::string::npos) << out;
  EXPECT_NE(cube_part.find("T.mma("), std::string::npos) << out;
  EXPECT_EQ(cube_part.find("T.tile.exp"), std::string::npos) << out;
  EXPECT_NE(vec_part.find("if n > 0:"), std::string::npos) << out;
  EXPECT_NE(vec_part.find("T.tile.exp(x, x)"), std::string::npos) << out;
  EXPECT_EQ(vec_part.find("T.mma("), std::string::npos) << out;
}

TEST(SplitCubeVector, ACubeOnlyKernelHasNoVectorScope) {
  std::string out = split(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.copy(A, a)
        T.gemm(a, a, c, True)
        T.copy(c, C)
)");
  EXPECT_NE(out.find("with T.Scope(\"Cube\"):"), std::string::npos) << out;
  EXPECT_EQ(out.find("Vector"), std::string::npos) << out;
}

TEST(SplitCubeVector, PipelinedLoopsKeepTheirStagesForPipelineLoops) {
  std::string out = split(R"(@T.prim_func
def f(X: T.Tensor((64, 64), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((16, 64), "float32")
        for t in T.Pipelined(4, num_stages=2):
            T.copy(X[t * 16:t * 16 + 16, 0:64], x)
            T.tile.exp(x, x)
            T.copy(x, X[t * 16:t * 16 + 16, 0:64])
)");
  EXPECT_NE(out.find("for t in T.Pipelined(4, num_stages=2):"), std::string::npos) << out;
}

TEST(SplitCubeVector, ALoopWithWorkOnBothCoresIsInBothScopes) {
  std::string out = split(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16"), X: T.Tensor((16, 64), "float32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        x = T.alloc_shared((16, 64), "float32")
        for r in T.serial(3):
            T.copy(A, a)
            T.gemm(a, a, c, r == 0)
            T.copy(X, x)
            T.tile.exp(x, x)
            T.copy(x, X)
)");
  size_t cube = out.find("with T.Scope(\"Cube\"):"), vec = out.find("with T.Scope(\"Vector\"):");
  ASSERT_NE(cube, std::string::npos) << out;
  ASSERT_NE(vec, std::string::npos) << out;
  EXPECT_NE(out.find("for r in T.serial(3):", cube), std::string::npos) << out;
  EXPECT_NE(out.find("for r in T.serial(3):", vec), std::string::npos) << out;
  EXPECT_EQ(out.find("T.mma", vec), std::string::npos) << out;
  EXPECT_EQ(out.find("T.tile.exp", cube), out.find("T.tile.exp", vec)) << out;
}

TEST(SplitCubeVector, ThePrintedResultParsesBackAndVerifies) {
  PrimFunc f = parse(R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32")):
    with T.Kernel(1, threads=2) as cid:
        vid = 3
        x = T.alloc_shared((16, 64), "float32")
        T.copy(X, x)
        T.tile.exp(x, x)
        T.copy(x, X)
)");
  const Target& t = default_target();
  PrimFunc g = split_cube_vector(infer_scopes(f, t), t);
  std::string text = print(g);
  EXPECT_NE(text.find("as (cid, vid_1):"), std::string::npos) << text;  // the user's `vid` keeps its name
  EXPECT_EQ(print(parse(text)), text);
  EXPECT_TRUE(verify(g, t).empty()) << format_diagnostics(verify(g, t));
}

// ---- end to end ------------------------------------------------------------------------------

PrimFunc developer_gemm(int M, int N, int K, int bM, int bN, int bK) {
  auto A = T::Tensor("A", {M, K}, f16);
  auto B = T::Tensor("B", {K, N}, f16);
  auto C = T::Tensor("C", {M, N}, f16);
  const int n_tiles = N / bN;
  return T::prim_func("gemm_dev", {A, B, C}, [&] {
    T::Kernel((M / bM) * n_tiles, [&](Expr cid) {
      Expr bx = cid / n_tiles, by = cid % n_tiles;
      auto a = T::alloc_shared("A_s", {bM, bK}, f16);
      auto b = T::alloc_shared("B_s", {bK, bN}, f16);
      auto c = T::alloc_fragment("C_f", {bM, bN}, f32);
      T::clear(c);
      T::serial("k", K / bK, [&](Expr k) {
        T::copy(A.at({bx * bM, k * bK}), a);
        T::copy(B.at({k * bK, by * bN}), b);
        T::gemm(a, b, c);
      });
      T::copy(c, C.at({bx * bM, by * bN}));
    });
  });
}

TEST(DeveloperLowering, SwitchingOffAPassALaterOneNeedsIsAnError) {
  PrimFunc f = developer_gemm(64, 64, 64, 32, 32, 32);
  auto without = [](std::vector<std::string> passes) {
    PassOptions o;
    o.disabled_passes = std::move(passes);
    return o;
  };
  std::string msg = error_of([&] { lower(f, default_target(), without({"infer_scopes"})); });
  EXPECT_NE(msg.find("disabled passes: 'infer_scopes' is off but 'lower_cube_ops', which lowers what it leaves, is on"),
            std::string::npos)
      << msg;
  // Switching off the whole tail of the chain is allowed (to look at the IR), and so is
  // insert_syncs alone (to see what the hazard checker says without it).
  EXPECT_NO_THROW(lower(f, default_target(), without({"insert_syncs"})));
  PrimFunc unlowered;
  EXPECT_NO_THROW(unlowered = lower(f, default_target(),
                                    without({"split_cube_vector", "vectorize_parallel", "pipeline_loops", "verify_lowered",
                                             "insert_syncs", "insert_channel_syncs"})));
  // ... but such a kernel does not run: the virtual NPU says why.
  std::string run = error_of([&] { compile(unlowered, default_target(), {.verify = false, .lower = false}); });
  EXPECT_NE(run.find("this developer kernel (T::Kernel without vid) was not lowered"), std::string::npos) << run;
}

TEST(DeveloperLowering, GemmLowersWithoutGemmV0OrBarriersAndMatchesTheReference) {
  const int M = 128, N = 256, K = 512;
  auto kern = compile(developer_gemm(M, N, K, 64, 128, 256));
  std::string ir = print(kern.func(), {.locations = false});
  EXPECT_EQ(ir.find("T.gemm"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("barrier_all"), std::string::npos) << ir;
  EXPECT_NE(ir.find("T.mma("), std::string::npos) << ir;
  Device dev;
  Tensor A = uniform(dev, {M, K}, f16, 1), B = uniform(dev, {K, N}, f16, 2), C = Tensor::empty(dev, {M, N}, f16);
  kern.launch(dev, {A, B, C});
  EXPECT_EQ(ref::compare(C.to_vector(), ref::matmul(A.to_vector(), B.to_vector(), M, N, K), N, 1e-3 * std::sqrt(K),
                         1e-3),
            "");
}

TEST(DeveloperLowering, SplitKGemmAccumulatesIntoGmWithAtomicAdd) {
  // Each of 4 blocks multiplies one K slice and adds its accumulator into C with T.atomic_add
  // (the fixpipe's atomic add from L0C): the sum over blocks is the product.
  PrimFunc f = parse(R"(@T.prim_func
def f(A: T.Tensor((64, 256), "float16"), B: T.Tensor((256, 64), "float16"), C: T.Tensor((64, 64), "float32")):
    with T.Kernel(4, threads=1) as cid:
        a = T.alloc_shared((64, 64), "float16")
        b = T.alloc_shared((64, 64), "float16")
        c = T.alloc_fragment((64, 64), "float32")
        T.copy(A[0:64, cid * 64:cid * 64 + 64], a)
        T.copy(B[cid * 64:cid * 64 + 64, 0:64], b)
        T.gemm(a, b, c, True)
        T.atomic_add(C, c)
)");
  auto kern = compile(f);
  for (bool hazards : {false, true}) {
    Device dev;
    Tensor A = uniform(dev, {64, 256}, f16, 1), B = uniform(dev, {256, 64}, f16, 2);
    Tensor C = from_vector(dev, {64, 64}, f32, std::vector<double>(64 * 64, 0.0));
    kern.launch(dev, {A, B, C}, {.check_hazards = hazards});
    EXPECT_EQ(ref::compare(C.to_vector(), ref::matmul(A.to_vector(), B.to_vector(), 64, 64, 256), 64, 1e-4, 1e-4), "");
  }
}

TEST(DeveloperLowering, ReductionsOverEachAxisOfA3DTile) {
  // reduce_* over axis 0, 1 and 2 of a (4, 16, 64) tile: the destination is the source without
  // that axis, each output reducing the values along it (the verifier's shapes and the virtual
  // NPU's semantics agree; a 3-D reduce over axis 1 once failed at run time).
  PrimFunc f = parse(R"(@T.prim_func
def f(X: T.Tensor((4, 16, 64), "float32"), Y: T.Tensor((4, 16), "float32"), Z: T.Tensor((16, 64), "float32"), W: T.Tensor((4, 64), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((4, 16, 64), "float32")
        y = T.alloc_fragment((4, 16), "float32")
        z = T.alloc_fragment((16, 64), "float32")
        w = T.alloc_fragment((4, 64), "float32")
        T.copy(X, x)
        T.reduce_sum(x, y, dim=-1)
        T.reduce_max(x, z, dim=0)
        T.reduce_min(x, w, dim=1)
        T.copy(y, Y)
        T.copy(z, Z)
        T.copy(w, W)
)");
  auto kern = compile(f);
  Device dev;
  Tensor X = uniform(dev, {4, 16, 64}, f32, 3), Y = Tensor::empty(dev, {4, 16}, f32),
         Z = Tensor::empty(dev, {16, 64}, f32), W = Tensor::empty(dev, {4, 64}, f32);
  kern.launch(dev, {X, Y, Z, W}, {.check_hazards = true});
  std::vector<double> x = X.to_vector(), y = Y.to_vector(), z = Z.to_vector(), w = W.to_vector();
  auto at = [&](int a, int b, int c) { return x[(a * 16 + b) * 64 + c]; };
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 16; ++b) {
      double sum = 0;
      for (int c = 0; c < 64; ++c) sum += at(a, b, c);
      EXPECT_NEAR(y[a * 16 + b], sum, 1e-5) << a << ", " << b;
    }
  for (int b = 0; b < 16; ++b)
    for (int c = 0; c < 64; ++c) {
      double m = at(0, b, c);
      for (int a = 1; a < 4; ++a) m = std::max(m, at(a, b, c));
      EXPECT_EQ(z[b * 64 + c], m) << b << ", " << c;
    }
  for (int a = 0; a < 4; ++a)
    for (int c = 0; c < 64; ++c) {
      double m = at(a, 0, c);
      for (int b = 1; b < 16; ++b) m = std::min(m, at(a, b, c));
      EXPECT_EQ(w[a * 64 + c], m) << a << ", " << c;
    }
}

TEST(DeveloperLowering, ColumnSumsOfATailBlockSumOnlyItsRows) {
  // 13 rows in blocks of 8, column sums and column sums of squares accumulated with
  // atomic_add: block 1's 3 stale rows must not enter the sums (legalize_copies narrows the
  // reductions to the valid rows). Stale rows hold whatever UB held, so a first launch leaves
  // 1000s there (the test fails by 3000 per column without the narrowing).
  // The kernel over `rows` rows (13: the tail case; 16: whole blocks, to warm UB up).
  auto column_sums = [](int rows) {
    return parse(fmt::format(R"(@T.prim_func
def f(X: T.Tensor(({}, 64), "float32"), S: T.Tensor((64,), "float32"), Q: T.Tensor((64,), "float32")):
    with T.Kernel(2, threads=1) as cid:
        x = T.alloc_shared((8, 64), "float32")
        y = T.alloc_shared((8, 64), "float32")
        s = T.alloc_fragment((64,), "float32")
        q = T.alloc_fragment((64,), "float32")
        T.copy(X[cid * 8:cid * 8 + 8, 0:64], x)
        T.reduce_sum(x, s, dim=0)
        for i in T.Parallel(8):
            for j in T.Parallel(64):
                y[i, j] = x[i, j] * x[i, j]
        T.reduce_sum(y, q, dim=0)
        T.atomic_add(S, s)
        T.atomic_add(Q, q)
)",
                             rows));
  };
  auto kern = compile(column_sums(13)), warm = compile(column_sums(16));
  for (bool hazards : {false, true}) {
    Device dev;
    // Full blocks of large values first: what the tail block would find in its stale rows.
    Tensor big = from_vector(dev, {16, 64}, f32, std::vector<double>(16 * 64, 1000.0));
    Tensor S0 = from_vector(dev, {64}, f32, std::vector<double>(64, 0.0)), Q0 = from_vector(dev, {64}, f32, std::vector<double>(64, 0.0));
    warm.launch(dev, {big, S0, Q0}, {.threads = 1});
    Tensor X = uniform(dev, {13, 64}, f32, 5);
    Tensor S = from_vector(dev, {64}, f32, std::vector<double>(64, 0.0)), Q = from_vector(dev, {64}, f32, std::vector<double>(64, 0.0));
    kern.launch(dev, {X, S, Q}, {.threads = 1, .check_hazards = hazards});
    std::vector<double> x = X.to_vector(), sv = S.to_vector(), qv = Q.to_vector();
    for (int j = 0; j < 64; ++j) {
      double sum = 0, sq = 0;
      for (int i = 0; i < 13; ++i) {
        sum += x[i * 64 + j];
        sq += x[i * 64 + j] * x[i * 64 + j];
      }
      EXPECT_NEAR(sv[j], sum, 1e-4) << "column " << j;
      EXPECT_NEAR(qv[j], sq, 1e-4) << "column " << j;
    }
  }
}

}  // namespace
}  // namespace tl
