// simplify: what its IR-file tests cannot say. IR text in, IR text out (constant folding and
// identities on integer expressions, wrapping integers, floor-rounding // and %, division by zero
// left for run time, floats untouched, bounds, regions, conditions and constant branches) lives
// in tests/pass/simplify.tl and simplify_cases.tl. Kept here, because `tlc opt` prints text and
// cannot show it:
// - that a kernel where nothing folds comes back as the same function object (no copy);
// - the expression entry point simplify(Expr), which no IR file reaches.
#include "pass/pass_test_util.h"

namespace tl {
namespace {

TEST(Simplify, ReturnsTheSameFunctionWhenNothingFolds) {
  PrimFunc f = parse(R"(@T.prim_func
def f(A: T.Tensor((64, 64), "float16"), n: T.int64, x: T.float32):
    with T.Kernel(4, is_npu=True) as (cid, vid):
        a = cid * 4 + vid
)");
  EXPECT_EQ(simplify(f), f);
}

TEST(Simplify, ExpressionEntryPoint) {
  Var i("i");
  Expr e = BinaryNode::make(BinOp::Add, BinaryNode::make(BinOp::Mul, i, 1),
                            IntImmNode::make(DType::Int32, 0));
  EXPECT_TRUE(simplify(e).same_as(i));
}

}  // namespace
}  // namespace tl
