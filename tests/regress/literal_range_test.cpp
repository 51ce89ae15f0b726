// Regressions of issue 10 item 5 (compiler side): values fit their dtype. IR text literals
// out of range for their dtype (`T.int8(300)`, `2147483648` as an int32) parsed into
// immediates no dtype can hold; DSL immediates were kept unwrapped (so they printed as such
// literals) and casts of constants did not fold like the operators do. Now the parser rejects
// them naming the literal, the dtype and its range, every immediate holds its value wrapped
// to its dtype, and DSL folding gives exactly what the interpreter computes.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "pass/pass_test_util.h"
#include "tl/arith.h"
#include "tl/ir_equal.h"
#include "tl/ir_ops.h"
#include "tl/parser.h"
#include "tl/printer.h"

namespace tl {
namespace {

using testing::error_of;

/// A kernel whose Let binds `value` (IR text of an expression).
std::string with_value(const std::string& value) {
  return "@T.prim_func\ndef k():\n    with T.Kernel(1, is_npu=True) as (cid, vid):\n        x = " +
         value + "\n";
}

std::string parse_error(const std::string& value) {
  return error_of([&] { parse(with_value(value)); });
}

TEST(LiteralRange, TypedLiteralOutOfRangeNamesLiteralDtypeAndRange) {
  std::string msg = parse_error("T.int8(300)");
  EXPECT_NE(msg.find("300"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[-128, 127]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("<ir>:4:"), std::string::npos) << msg;  // the line and column of the literal
  for (const char* bad :
       {"T.int8(-129)", "T.uint8(256)", "T.uint8(-1)", "T.int16(32768)", "T.uint32(4294967296)",
        "T.int64(9223372036854775808)", "T.uint64(-1)", "T.bool(2)"})
    EXPECT_FALSE(parse_error(bad).empty()) << bad;
}

TEST(LiteralRange, PlainLiteralIsAnInt32) {
  std::string msg = parse_error("2147483648");
  EXPECT_NE(msg.find("2147483648"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[-2147483648, 2147483647]"), std::string::npos) << msg;
  EXPECT_FALSE(parse_error("-2147483649").empty());
  EXPECT_FALSE(parse_error("-(-2147483648)").empty());  // negation leaving int32
  EXPECT_FALSE(parse_error("-T.int8(-128)").empty());
  EXPECT_FALSE(parse_error("-T.uint16(3)").empty());
}

TEST(LiteralRange, EveryDtypesBoundsParseAndPrintBack) {
  for (const char* ok :
       {"-2147483648", "2147483647", "T.int8(-128)", "T.int8(127)", "T.uint8(255)", "T.uint8(0)",
        "T.int64(-9223372036854775808)", "T.int64(9223372036854775807)",
        "T.uint64(18446744073709551615)", "T.uint32(4294967295)", "-T.int8(127)", "-T.uint8(0)"}) {
    SCOPED_TRACE(ok);
    PrimFunc f = parse(with_value(ok));
    std::string text = print(f);
    EXPECT_TRUE(structural_equal(parse(text), f)) << text;
  }
  // uint64 values of 2^63 and above are held as their two's complement and print unsigned.
  PrimFunc f = parse(with_value("T.uint64(18446744073709551615)"));
  EXPECT_NE(print(f).find("T.uint64(18446744073709551615)"), std::string::npos) << print(f);
}

TEST(LiteralRange, SliceExtentMustFitInt32) {
  std::string msg = error_of([&] {
    parse(R"(@T.prim_func
def k(A: T.Tensor((8,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((8,), "float32")
            T.copy(A[-2147483648:2147483647], a)
)");
  });
  EXPECT_NE(msg.find("extent"), std::string::npos) << msg;
}

TEST(LiteralRange, ImmediatesHoldTheirValueWrapped) {
  EXPECT_EQ(as_const_int(IntImmNode::make(i8, 300)), 44);
  EXPECT_EQ(as_const_int(IntImmNode::make(u8, -1)), 255);
  EXPECT_EQ(as_const_int(IntImmNode::make(i32, int64_t{1} << 32)), 0);
  EXPECT_EQ(as_const_int(IntImmNode::make(boolean, 5)), 1);
  // ... so they print as literals of their dtype and parse back.
  for (auto [t, v] : {std::pair{i8, int64_t{300}}, std::pair{u16, int64_t{-7}},
                      std::pair{i32, int64_t{3000000000}}}) {
    Expr e = IntImmNode::make(t, v);
    EXPECT_NO_THROW(parse(with_value(print(e)))) << print(e);
  }
}

TEST(LiteralRange, DslCastOfAConstantFoldsAndWraps) {
  EXPECT_EQ(as_const_int(cast(i8, Expr(300))), 44);
  EXPECT_EQ(as_const_int(cast(u8, Expr(-1))), 255);
  EXPECT_EQ(as_const_int(cast(i32, Expr(int64_t{1} << 40))), 0);
  EXPECT_EQ(cast(i8, Expr(300)).dtype(), i8);
}

/// Property: for random immediates of random integer dtypes, every DSL operator folds to the
/// value the interpreter computes for the unfolded node, in the node's dtype.
TEST(LiteralRange, DslFoldingWrapsAsTheInterpreter) {
  const DType types[] = {i8, i16, i32, i64, u8, u16, u32, u64, boolean};
  using Op = Expr (*)(Expr, Expr);
  const std::pair<BinOp, Op> ops[] = {
      {BinOp::Add, [](Expr a, Expr b) { return a + b; }},
      {BinOp::Sub, [](Expr a, Expr b) { return a - b; }},
      {BinOp::Mul, [](Expr a, Expr b) { return a * b; }},
      {BinOp::FloorDiv, [](Expr a, Expr b) { return a / b; }},
      {BinOp::FloorMod, [](Expr a, Expr b) { return a % b; }},
      {BinOp::Min, [](Expr a, Expr b) { return min(a, b); }},
      {BinOp::Max, [](Expr a, Expr b) { return max(a, b); }},
      {BinOp::LT, [](Expr a, Expr b) { return a < b; }},
      {BinOp::Shl, [](Expr a, Expr b) { return shift_left(a, b); }},
      {BinOp::Shr, [](Expr a, Expr b) { return shift_right(a, b); }},
      {BinOp::BitXor, [](Expr a, Expr b) { return bitwise_xor(a, b); }},
      {BinOp::TruncDiv, [](Expr a, Expr b) { return truncdiv(a, b); }},
  };
  const int64_t edges[] = {0,
                           1,
                           -1,
                           2,
                           127,
                           128,
                           255,
                           256,
                           32767,
                           65535,
                           2147483647,
                           -2147483648LL,
                           4294967295LL,
                           std::numeric_limits<int64_t>::max(),
                           std::numeric_limits<int64_t>::min()};
  std::mt19937_64 rng(10);
  for (int trial = 0; trial < 4000; ++trial) {
    DType ta = types[rng() % std::size(types)], tb = types[rng() % std::size(types)];
    auto value = [&] {
      return rng() % 2 ? edges[rng() % std::size(edges)] : static_cast<int64_t>(rng());
    };
    Expr a = IntImmNode::make(ta, value()), b = IntImmNode::make(tb, value());
    const auto& [op, fn] = ops[rng() % std::size(ops)];
    Expr raw = BinaryNode::make(op, a, b);
    std::optional<arith::Value> want;
    try {
      want = arith::evaluate(raw);
    } catch (const Error&) {  // division by zero: stays in the IR, fails at run time
    }
    Expr folded = fn(a, b);
    SCOPED_TRACE(print(raw));
    EXPECT_EQ(folded.dtype(), raw.dtype());
    if (!want) continue;
    ASSERT_TRUE(as_const_int(folded).has_value()) << print(folded);
    EXPECT_EQ(*as_const_int(folded), want->i);
    // Casting the folded immediate is folding the cast.
    DType tc = types[rng() % std::size(types)];
    EXPECT_EQ(as_const_int(cast(tc, folded)), arith::evaluate(CastNode::make(tc, folded)).i)
        << dtype_name(tc);
  }
}

}  // namespace
}  // namespace tl
