// simplify: constant folding and identities on integer expressions, IR text in / text out.
// Every expected value is the one the IR semantics (ir.h) give: wrapping integers,
// floor-rounding // and %, division by zero left for run time, floats untouched.
#include "pass/pass_test_util.h"

namespace tl {
namespace {

using testing::run_on_text;

std::string simplified(std::string_view text) {
  return run_on_text(text, [](const PrimFunc& f) { return simplify(f); });
}

// Wraps `v = <expr>` lines into a kernel with names of several dtypes in scope.
std::string kernel(std::string_view lets) {
  return std::string(R"(@T.prim_func
def f(A: T.Tensor((64, 64), "float16"), n: T.int64, x: T.float32):
    with T.Kernel(4, is_npu=True) as (cid, vid):
        u = T.alloc_ub((16, 16), "int32")
)") + std::string(lets);
}

TEST(Simplify, KeepsWhatCanFailAtRunTime) {
  // Division by zero is a run-time error naming the expression: it stays. `x * 0` and `x % 1`
  // drop x only when evaluating x cannot fail (a load can be out of bounds).
  EXPECT_EQ(simplified(kernel("        a = cid // 0\n"
                              "        b = u[cid, 0] * 0\n"
                              "        c = cid * 0\n"
                              "        d = u[0, cid] % 1\n"
                              "        e = vid % 1\n"
                              "        g = cid // vid * 0\n"
                              "        h = T.if_then_else(True, cid, cid // vid)\n"
                              "        i = T.if_then_else(True, cid, vid + 1)\n")),
            kernel("        a = cid // 0\n"
                   "        b = u[cid, 0] * 0\n"
                   "        c = 0\n"
                   "        d = u[0, cid] % 1\n"
                   "        e = 0\n"
                   "        g = cid // vid * 0\n"
                   "        h = T.if_then_else(True, cid, cid // vid)\n"
                   "        i = cid\n"));
}

TEST(Simplify, WrapsToTheDtypeAndKeepsDtypes) {
  // int8 100 + 100 wraps to -56; int32 overflow wraps; n + 0 keeps int64 n; cid + int64(0)
  // is int64, so it cannot become the int32 cid.
  EXPECT_EQ(simplified(kernel("        a = T.int8(100) + T.int8(100)\n"
                              "        b = 2147483647 + 1\n"
                              "        c = n + 0\n"
                              "        d = cid + T.int64(0)\n"
                              "        e = T.cast(300, \"uint8\")\n"
                              "        g = T.cast(cid, \"int32\")\n"
                              "        h = 1 << 4\n")),
            kernel("        a = T.int8(-56)\n"
                   "        b = -2147483648\n"
                   "        c = n\n"
                   "        d = cid + T.int64(0)\n"
                   "        e = T.uint8(44)\n"
                   "        g = cid\n"
                   "        h = 16\n"));
}

TEST(Simplify, ComparisonsLogicAndSelects) {
  EXPECT_EQ(simplified(kernel("        a = 1 < 2\n"
                              "        b = not 3 == 3\n"
                              "        c = T.if_then_else(2 < 1, cid, vid)\n"
                              "        d = 1 < 2 and cid == 0\n"
                              "        e = 1 > 2 and cid == 0\n"
                              "        g = 1 > 2 or vid == 1\n"
                              "        h = cid < 4 * 2\n")),
            kernel("        a = True\n"
                   "        b = False\n"
                   "        c = vid\n"
                   "        d = cid == 0\n"
                   "        e = False\n"
                   "        g = vid == 1\n"
                   "        h = cid < 8\n"));
}

TEST(Simplify, LeavesFloatArithmeticAlone) {
  std::string text = kernel("        a = x * 1.0 + 0.0\n"
                            "        b = 1.5 * 2.0\n");
  EXPECT_EQ(simplified(text), text);
}

TEST(Simplify, RewritesLoopBoundsRegionsAndConditions) {
  constexpr std::string_view in = R"(@T.prim_func
def f(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
    with T.Kernel(2 * 2, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            u = T.alloc_ub((16, 64), "float16")
            for k in T.serial(2 * 2):
                if cid * 1 < 4 + 0:
                    T.copy(A[k * 16 + 0:k * 16 + 0 + 16, 0:64], u)
                    T.copy(u, B[k * 16:k * 16 + 8 * 2, 0:64])
)";
  constexpr std::string_view out = R"(@T.prim_func
def f(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
    with T.Kernel(4, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            u = T.alloc_ub((16, 64), "float16")
            for k in T.serial(4):
                if cid < 4:
                    T.copy(A[k * 16:k * 16 + 16, 0:64], u)
                    T.copy(u, B[k * 16:k * 16 + 16, 0:64])
)";
  EXPECT_EQ(simplified(in), out);
}

// A branch on a constant is the branch that runs, so insert_syncs never orders code that cannot
// run (a pipelined loop's written-out iteration whose tail zero-fill became `if False`); a
// branch that declares a buffer stays an if, whose block bounds the buffer's life.
TEST(Simplify, ABranchOnAConstantIsTheBranchThatRuns) {
  constexpr std::string_view in = R"(@T.prim_func
def f(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
    with T.Kernel(4, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            u = T.alloc_ub((16, 64), "float16")
            if 2 < 1:
                T.init_const(u, T.float16(0.0))
            if 1 < 2:
                T.copy(A[0:16, 0:64], u)
            if 0 == 1:
                T.copy(A[16:32, 0:64], u)
            else:
                T.copy(A[32:48, 0:64], u)
            if 1 == 1:
                w = T.alloc_ub((16, 64), "float16")
                T.copy(u, w)
                T.copy(w, B[0:16, 0:64])
)";
  constexpr std::string_view out = R"(@T.prim_func
def f(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
    with T.Kernel(4, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            u = T.alloc_ub((16, 64), "float16")
            T.copy(A[0:16, 0:64], u)
            T.copy(A[32:48, 0:64], u)
            if True:
                w = T.alloc_ub((16, 64), "float16")
                T.copy(u, w)
                T.copy(w, B[0:16, 0:64])
)";
  EXPECT_EQ(simplified(in), out);
}

TEST(Simplify, ReturnsTheSameFunctionWhenNothingFolds) {
  PrimFunc f = parse(kernel("        a = cid * 4 + vid\n"));
  EXPECT_EQ(simplify(f), f);
}

TEST(Simplify, ExpressionEntryPoint) {
  Var i("i");
  Expr e = BinaryNode::make(BinOp::Add, BinaryNode::make(BinOp::Mul, i, 1), IntImmNode::make(DType::Int32, 0));
  EXPECT_TRUE(simplify(e).same_as(i));
}

}  // namespace
}  // namespace tl
