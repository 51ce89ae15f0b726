// Unit tests of tl/arith.h: the dtype and folding rules at their edges (wrapping, INT64_MIN,
// shifts, division by zero), the evaluator's float and cast rules, bounds, modular sets, the
// overlap test, substitution and cloning, and the launcher's use of the evaluator for
// dynamic shapes and block counts.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tl/arith.h"
#include "tl/ir_equal.h"
#include "tl/ir_functor.h"
#include "tl/jit.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/npu/trace.h"
#include "tl/parser.h"
#include "tl/pass.h"
#include "tl/printer.h"

namespace tl {
namespace {

using arith::Interval;
using arith::Overlap;
using arith::Value;

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

/// An immediate's dtype and value, as "int32 -2147483648".
std::string imm_str(const Expr& e) {
  auto* n = e.as<IntImmNode>();
  if (!n) return "not an immediate: " + print(e);
  return fmt::format("{} {}", dtype_name(e.dtype()), n->value);
}

std::string eval_error(const Expr& e) {
  try {
    arith::evaluate(e);
  } catch (const Error& err) {
    return err.what();
  }
  return "";
}

// ---- Folding ---------------------------------------------------------------------------------

TEST(ArithFold, Int32MaxPlusOneWrapsInTheDslAndInSimplify) {
  Expr dsl = Expr(std::numeric_limits<int32_t>::max()) + 1;
  EXPECT_EQ(imm_str(dsl), "int32 -2147483648");
  Expr raw = BinaryNode::make(BinOp::Add, Expr(std::numeric_limits<int32_t>::max()), Expr(1));
  EXPECT_EQ(imm_str(simplify(raw)), "int32 -2147483648");
  EXPECT_EQ(arith::evaluate(raw).i, -2147483648LL);
}

TEST(ArithFold, MixedWidthsTakeBinaryNodeMakesDtype) {
  Expr a = IntImmNode::make(DType::Int16, 5);
  Expr dsl = a + 70000;
  Expr raw = BinaryNode::make(BinOp::Add, a, Expr(70000));
  EXPECT_EQ(dsl.dtype(), raw.dtype());
  EXPECT_EQ(imm_str(dsl), "int32 70005");
  // int8 with uint8: equal widths, the left operand's dtype; the sum wraps to it.
  Expr w = IntImmNode::make(DType::Int8, 100) + IntImmNode::make(DType::UInt8, 200);
  EXPECT_EQ(imm_str(w), "int8 44");
  EXPECT_EQ(arith::promote(DType::Int32, DType::UInt32), DType::Int32);
  EXPECT_EQ(arith::promote(DType::Bool, DType::Int8), DType::Int8);
  EXPECT_EQ(arith::promote(DType::Int64, DType::Float16), DType::Float16);
  EXPECT_EQ(arith::binary_dtype(BinOp::LT, DType::Int64, DType::Int64), DType::Bool);
}

TEST(ArithFold, Int64EdgesWrapWithoutHostUB) {
  Expr mn = Expr(kI64Min), mx = Expr(kI64Max);
  EXPECT_EQ(imm_str(floordiv(mn, Expr(int64_t{-1}))), fmt::format("int64 {}", kI64Min));
  EXPECT_EQ(imm_str(truncdiv(mn, Expr(int64_t{-1}))), fmt::format("int64 {}", kI64Min));
  EXPECT_EQ(imm_str(floormod(mn, Expr(int64_t{-1}))), "int64 0");
  EXPECT_EQ(imm_str(truncmod(mn, Expr(int64_t{-1}))), "int64 0");
  EXPECT_EQ(imm_str(mx + Expr(int64_t{1})), fmt::format("int64 {}", kI64Min));
  EXPECT_EQ(imm_str(mn - Expr(int64_t{1})), fmt::format("int64 {}", kI64Max));
  EXPECT_EQ(imm_str(mn * Expr(int64_t{-1})), fmt::format("int64 {}", kI64Min));
  EXPECT_EQ(imm_str(-mn), fmt::format("int64 {}", kI64Min));
  EXPECT_EQ(imm_str(-Expr(std::numeric_limits<int32_t>::min())), "int32 -2147483648");
  EXPECT_EQ(imm_str(floormod(mx, Expr(int64_t{-2}))), "int64 -1");  // floor(x / -2) * -2 overflows
  // Shift amounts are taken modulo 64; >> is arithmetic.
  EXPECT_EQ(imm_str(shift_left(Expr(int64_t{1}), Expr(64))), "int64 1");
  EXPECT_EQ(imm_str(shift_left(Expr(int64_t{1}), Expr(63))), fmt::format("int64 {}", kI64Min));
  EXPECT_EQ(imm_str(shift_right(Expr(-8), Expr(65))), "int32 -4");
  EXPECT_EQ(imm_str(shift_left(Expr(1), Expr(31))), "int32 -2147483648");
  // simplify folds the raw nodes the same way.
  EXPECT_EQ(imm_str(simplify(BinaryNode::make(BinOp::FloorDiv, mn, Expr(int64_t{-1})))),
            fmt::format("int64 {}", kI64Min));
  EXPECT_EQ(imm_str(simplify(BinaryNode::make(BinOp::Add, mx, Expr(int64_t{1})))),
            fmt::format("int64 {}", kI64Min));
}

TEST(ArithFold, FloorAndTruncDivisionOfNegatives) {
  EXPECT_EQ(imm_str(Expr(-7) / 2), "int32 -4");
  EXPECT_EQ(imm_str(Expr(-7) % 2), "int32 1");
  EXPECT_EQ(imm_str(truncdiv(-7, 2)), "int32 -3");
  EXPECT_EQ(imm_str(truncmod(-7, 2)), "int32 -1");
  EXPECT_EQ(imm_str(Expr(7) % -2), "int32 -1");
  EXPECT_EQ(imm_str(ceildiv(Expr(-7), Expr(2))), "int32 -3");
  EXPECT_EQ(imm_str(ceildiv(Expr(7), Expr(2))), "int32 4");
}

TEST(ArithFold, DivisionByAConstantZeroStaysForRunTime) {
  EXPECT_FALSE(arith::fold_binary(BinOp::FloorDiv, Expr(7), Expr(0)).defined());
  Expr e = Expr(7) / 0;
  ASSERT_TRUE(e.as<BinaryNode>()) << print(e);
  EXPECT_EQ(eval_error(e), "division by zero in 7 // 0");
  EXPECT_EQ(eval_error(truncmod(Expr(int64_t{5}), Expr(int64_t{0}))),
            "division by zero in T.truncmod(T.int64(5), T.int64(0))");
  // x * 0 keeps an x that can fail; i * 0 folds.
  Var i("i");
  EXPECT_EQ(print(i / 0 * 0), "i // 0 * 0");
  EXPECT_EQ(imm_str(i * 0), "int32 0");
  EXPECT_EQ(imm_str(i % 1), "int32 0");
  EXPECT_TRUE(arith::can_fail(i / 0));
  EXPECT_TRUE(arith::can_fail(i / i));
  EXPECT_FALSE(arith::can_fail(i / 3 + select(i < 2, i, -i)));
}

TEST(ArithFold, IdentitiesKeepTheNodesDtype) {
  Var i("i"), n("n", DType::Int64);
  EXPECT_EQ(print(i + 0), "i");
  EXPECT_EQ(print(i * 1), "i");
  EXPECT_EQ(print(i + Expr(int64_t{0})), "i + T.int64(0)");  // int64, not i's int32
  EXPECT_EQ((i + Expr(int64_t{0})).dtype(), DType::Int64);
  EXPECT_EQ(print(n + 0), "n");
}

TEST(ArithFold, ImmediatesConvertAsACast) {
  EXPECT_EQ(imm_str(imm(DType::Int8, 300)), "int8 44");
  EXPECT_EQ(imm_str(imm(DType::Int32, -2.9)), "int32 -2");
  EXPECT_EQ(imm_str(imm(DType::Int64, 1e300)), "int64 9200000000000000000");
  EXPECT_EQ(imm_str(imm(DType::Int32, std::nan(""))), "int32 0");
  EXPECT_EQ(imm_str(imm(DType::Bool, 0.5)), "bool 1");
  EXPECT_EQ(imm_str(imm(DType::UInt8, -1)), "uint8 255");
  EXPECT_EQ(imm_str(arith::fold_cast(DType::Int8, Expr(200))), "int8 -56");
  EXPECT_EQ(imm_str(arith::fold_not(Expr(3))), "bool 0");
  EXPECT_EQ(imm_str(Expr(3) < 4), "bool 1");
}

// Issue 27: imm() kept the double it was given, so T.float16(0.1) held 0.1, a value no
// float16 has, and T.Parallel refused `x * T.float16(0.1)` as mixed precision.
TEST(ArithConst, FloatImmediatesHoldTheValueOfTheirDtype) {
  auto value = [](Expr e) { return e.as<FloatImmNode>()->value; };
  EXPECT_EQ(value(imm(DType::Float16, 0.1)), 0.0999755859375);
  EXPECT_EQ(value(imm(DType::BFloat16, 0.1)), 0.10009765625);
  EXPECT_EQ(value(imm(DType::Float32, 0.1)), double(0.1f));
  EXPECT_EQ(value(imm(DType::Float64, 0.1)), 0.1);
  EXPECT_EQ(value(imm(DType::Float8E4M3, 0.1)), 0.1015625);
  EXPECT_EQ(value(imm(DType::Float8E5M2, 0.1)), 0.09375);
  EXPECT_EQ(value(imm(DType::Float16, 70000.0)), std::numeric_limits<double>::infinity());
  EXPECT_EQ(value(imm(DType::Float16, -std::numeric_limits<double>::infinity())),
            -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(value(imm(DType::Float16, std::nan("")))));
  EXPECT_EQ(value(imm(DType::Float16, 1.5)), 1.5);  // exact values stay as written
}

// ---- The evaluator -----------------------------------------------------------------------------

TEST(ArithEval, FloatsRoundToTheNodesDtype) {
  Expr one = imm(DType::Float16, 1.0), tiny = imm(DType::Float16, 0.0004);
  EXPECT_EQ(arith::evaluate(one + tiny).f, 1.0);  // below half an fp16 ulp
  EXPECT_EQ(arith::evaluate(imm(DType::Float32, 1.0) + imm(DType::Float32, 0.0004)).f,
            double(1.0f + 0.0004f));
  EXPECT_EQ(arith::evaluate(imm(DType::Float16, 70000.0)).f,
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(arith::evaluate(floordiv(imm(DType::Float32, -7.0), imm(DType::Float32, 2.0))).f, -4.0);
  EXPECT_EQ(arith::evaluate(imm(DType::Float32, 1.0) / imm(DType::Float32, 0.0)).f,
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(arith::evaluate(imm(DType::Float32, 2.5) < imm(DType::Float32, 3.0)).i, 1);
  EXPECT_EQ(arith::evaluate(sqrt(imm(DType::Float32, 2.0))).f, double(std::sqrt(2.0f)));
  EXPECT_EQ(arith::evaluate(pow(imm(DType::Float32, 2.0), imm(DType::Float32, 10.0))).f, 1024.0);
  EXPECT_EQ(arith::evaluate(abs(Expr(-5))).i, 5);  // an integer intrinsic truncates and wraps
}

TEST(ArithEval, CastsSelectsAndErrors) {
  EXPECT_EQ(arith::evaluate(cast(DType::Int32, imm(DType::Float32, -2.75))).i, -2);
  EXPECT_EQ(arith::evaluate(cast(DType::Int8, imm(DType::Float32, 1000.0))).i,
            -24);  // truncate, then wrap
  EXPECT_EQ(arith::evaluate(cast(DType::Bool, imm(DType::Float32, 0.25))).i, 1);
  EXPECT_EQ(arith::evaluate(cast(DType::Float16, Expr(2049))).f, 2048.0);
  EXPECT_EQ(arith::evaluate(!Expr(0)).i, 1);
  // A select's value takes the select's dtype: int32 with uint32 is int32.
  Expr s = select(Expr(false), Expr(1), IntImmNode::make(DType::UInt32, 4294967295));
  EXPECT_EQ(s.dtype(), DType::Int32);
  EXPECT_EQ(arith::evaluate(s).i, -1);
  // Both branches are evaluated.
  EXPECT_EQ(eval_error(select(Expr(true), Expr(1), Expr(1) / 0)), "division by zero in 1 // 0");
  Var x("x");
  EXPECT_EQ(eval_error(x + 1), "unbound variable x");
  EXPECT_EQ(arith::evaluate(x * 3 - 1, {{x.node(), Value::of_int(-5)}}).i, -16);
  EXPECT_NE(eval_error(bitwise_and(imm(DType::Float32, 1.0), imm(DType::Float32, 2.0)))
                .find("bitwise operator & on a float"),
            std::string::npos);
  EXPECT_EQ(eval_error(CallNode::make(DType::Float32, "tanh", {imm(DType::Float32, 1.0)})),
            "unknown intrinsic T.tanh");
  EXPECT_EQ(eval_error(CallNode::make(DType::Float32, "pow", {imm(DType::Float32, 1.0)})),
            "T.pow takes 2 argument(s), got 1");
}

// ---- Bounds and modular sets -------------------------------------------------------------------

TEST(ArithBound, IntervalsFollowTheOperators) {
  Var i("i"), j("j"), b("b", DType::Int8);
  arith::VarIntervals env = {{i.node(), {0, 15}}, {j.node(), {-3, 5}}, {b.node(), {0, 100}}};
  auto iv = [&](const Expr& e) {
    Interval r = arith::bound(e, env);
    return fmt::format("[{}, {}]", r.lo, r.hi);
  };
  EXPECT_EQ(iv(i * 8 + 4), "[4, 124]");
  EXPECT_EQ(iv(i - j), "[-5, 18]");
  EXPECT_EQ(iv(i * j), "[-45, 75]");
  EXPECT_EQ(iv(i / 4), "[0, 3]");
  EXPECT_EQ(iv(j / 2), "[-2, 2]");
  EXPECT_EQ(iv(truncdiv(j, 2)), "[-1, 2]");
  EXPECT_EQ(iv(j % 4), "[0, 3]");
  EXPECT_EQ(iv(truncmod(j, 4)), "[-3, 3]");
  EXPECT_EQ(iv(i / j), "[-15, 15]");  // j = 0 fails, so it is not a value
  EXPECT_EQ(iv(min(i, j) + max(i, 2)), "[-1, 20]");
  EXPECT_EQ(iv(i < 16), "[1, 1]");
  EXPECT_EQ(iv(select(j < 0, i, j)), "[-3, 15]");
  EXPECT_EQ(iv(shift_left(i, 2)), "[0, 60]");
  EXPECT_EQ(iv(bitwise_and(i, j)), "[0, 15]");
  // int8 b in [0, 100]: b + b may wrap, so the whole int8 range; b + 20 cannot.
  EXPECT_EQ(iv(b + b), "[-128, 127]");
  EXPECT_EQ(iv(b + IntImmNode::make(DType::Int8, 20)), "[20, 120]");
  EXPECT_EQ(iv(cast(DType::UInt8, j)), "[0, 255]");
  EXPECT_EQ(iv(cast(DType::UInt8, i)), "[0, 15]");
  Var free("k");
  EXPECT_EQ(iv(free), "[-2147483648, 2147483647]");
  EXPECT_EQ(iv(Var("u", DType::UInt64)), fmt::format("[{}, {}]", kI64Min, kI64Max));
}

TEST(ArithModular, CoefficientsAndWrapping) {
  Var i("i"), k("k", DType::Int8);
  auto ms = [](const Expr& e, const arith::VarIntervals& env = {}) {
    auto m = arith::modular_set(e, {}, env);
    return fmt::format("({}, {})", m.coeff, m.base);
  };
  EXPECT_EQ(ms(i * 8 + 4), "(8, 4)");
  EXPECT_EQ(ms(i * 8 - 3), "(8, 5)");
  EXPECT_EQ(ms((i * 8 + 4) / 4), "(2, 1)");
  EXPECT_EQ(ms((i * 8 + 4) % 4), "(0, 0)");
  EXPECT_EQ(ms(i * 6 + 4 * i), "(2, 0)");
  EXPECT_EQ(ms(i * 12 % 8), "(4, 0)");
  EXPECT_EQ(ms(select(i < 3, i * 4 + 2, i * 6)), "(2, 0)");
  EXPECT_EQ(ms(Expr(17)), "(0, 17)");
  // Unbounded i: i * 6 may wrap in int32, which keeps only the factor 2; bounded, it cannot.
  EXPECT_EQ(ms(i * 6 + 3), "(2, 1)");
  EXPECT_EQ(ms(i * 6 + 3, {{i.node(), {0, 1000}}}), "(6, 3)");
  EXPECT_EQ(ms(k * IntImmNode::make(DType::Int8, 3)), "(1, 0)");
  EXPECT_EQ(ms(k * IntImmNode::make(DType::Int8, 64)), "(64, 0)");
  arith::VarModular mods = {{i.node(), {4, 1}}};
  EXPECT_EQ(arith::modular_set(i * 2, mods, {{i.node(), {0, 100}}}).coeff, 8);
  EXPECT_EQ(arith::modular_set(i * 2, mods, {{i.node(), {0, 100}}}).base, 2);
  EXPECT_TRUE((arith::ModularSet{8, 4}).contains(-4));
  EXPECT_FALSE((arith::ModularSet{8, 4}).contains(2));
}

// ---- Overlap ------------------------------------------------------------------------------------

TEST(ArithOverlap, ExactForConstantDifferencesIntervalsOtherwise) {
  Buffer A = BufferNode::make("A", DType::Float32, {Expr(128), Expr(64)}, MemScope::UB);
  Var i("i"), j("j");
  arith::VarIntervals env = {{i.node(), {0, 7}}, {j.node(), {0, 7}}};
  auto ov = [&](BufferRegion a, BufferRegion b) { return arith::regions_overlap(a, b, env); };
  // Consecutive 8-row tiles never overlap, whatever i is; the same tile always does.
  EXPECT_EQ(ov(A.region({i * 8, 0}, {8, 64}), A.region({i * 8 + 8, 0}, {8, 64})), Overlap::No);
  EXPECT_EQ(ov(A.region({i * 8, 0}, {8, 64}), A.region({i * 8 + 7, 0}, {8, 64})), Overlap::Yes);
  EXPECT_EQ(ov(A.region({i * 8, 0}, {8, 64}), A.region({i * 8, 0}, {8, 64})), Overlap::Yes);
  // Disjoint columns.
  EXPECT_EQ(ov(A.region({i, 0}, {8, 32}), A.region({i, 32}, {8, 32})), Overlap::No);
  // i vs j: rows [8i, 8i+8) and [8j, 8j+8) meet only when i == j.
  EXPECT_EQ(ov(A.region({i * 8, 0}, {8, 64}), A.region({j * 8, 0}, {8, 64})), Overlap::Maybe);
  // Intervals: i in [0, 7] puts [i, i + 1) below [64, 72).
  EXPECT_EQ(ov(A.region({i, 0}, {1, 64}), A.region({j + 64, 0}, {8, 64})), Overlap::No);
  // An empty region meets nothing.
  EXPECT_EQ(ov(A.region({i, 0}, {0, 64}), A.region({i, 0}, {8, 64})), Overlap::No);
  // A shared opaque term cancels: floordiv(j, 3) is the same value in both starts.
  EXPECT_EQ(ov(A.region({j / 3 * 4 + i, 0}, {4, 64}), A.region({j / 3 * 4 + i + 4, 0}, {4, 64})),
            Overlap::No);
  // Symbolic extents: [i, i + j) and [i + 8, ...) are disjoint because j <= 7.
  EXPECT_EQ(ov(A.region({i, 0}, {j, 64}), A.region({i + 8, 0}, {4, 64})), Overlap::No);
  EXPECT_EQ(ov(A.region({i, 0}, {j, 64}), A.region({i + 3, 0}, {4, 64})), Overlap::Maybe);
}

TEST(ArithOverlap, AWrappingStartIsNotAffine) {
  // In int8, b * 2 wraps for b >= 64: rows b * 2 and b * 2 + 1 still differ by one, but
  // (b * 2 + 127) - b * 2 is not 127 once the sum wraps.
  Buffer A = BufferNode::make("A", DType::Float32, {Expr(256)}, MemScope::UB);
  Var b("b", DType::Int8);
  Expr two = IntImmNode::make(DType::Int8, 2), k = IntImmNode::make(DType::Int8, 127);
  arith::VarIntervals env = {{b.node(), {0, 100}}};
  EXPECT_EQ(arith::regions_overlap(A.region({b * two}, {1}), A.region({b * two + k}, {1}), env),
            Overlap::Maybe);
  EXPECT_EQ(arith::regions_overlap(A.region({b * two}, {1}), A.region({b * two}, {1}), env),
            Overlap::Yes);
}

// ---- Substitution and cloning -----------------------------------------------------------------

TEST(ArithSubstitute, ReplacesFreeVariablesInExpressionsAndStatements) {
  Var i("i"), n("n");
  Expr e = i * 8 + n;
  EXPECT_EQ(print(arith::substitute(e, {{i.node(), Expr(3)}})), "3 * 8 + n");
  EXPECT_EQ(print(simplify(arith::substitute(e, {{i.node(), Expr(3)}}))), "n + 24");
  EXPECT_TRUE(arith::substitute(e, {}).same_as(e));
  EXPECT_TRUE(arith::substitute(e, {{Var("other").node(), Expr(1)}}).same_as(e));

  // A loop over n whose body declares a buffer of n elements: the buffer is rebuilt.
  Var k("k");
  Buffer buf = BufferNode::make("t", DType::Float32, {n}, MemScope::UB);
  Stmt body =
      SeqNode::make({AllocateNode::make(buf), StoreNode::make(buf, {k}, imm(DType::Float32, 1.0))});
  Stmt loop = ForNode::make(k, Expr(0), n, ForKind::Serial, 0, body);
  Stmt s = arith::substitute(loop, {{n.node(), Expr(16)}});
  auto* f = s.as<ForNode>();
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->var.same_as(k));
  EXPECT_EQ(print(f->extent), "16");
  auto* seq = f->body.as<SeqNode>();
  Buffer nb = seq->stmts[0].as<AllocateNode>()->buffer;
  EXPECT_FALSE(nb.same_as(buf));
  EXPECT_EQ(print(nb->shape[0]), "16");
  EXPECT_TRUE(seq->stmts[1].as<StoreNode>()->buffer.same_as(nb));
  // Substituting a variable the statement binds is a caller's bug: an internal error.
  try {
    arith::substitute(loop, {{k.node(), Expr(0)}});
    ADD_FAILURE() << "expected an internal error";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("k is bound inside the statement"), std::string::npos)
        << e.what();
  }
}

const KernelNode* any_kernel_of(const PrimFunc& f) {
  const KernelNode* k = nullptr;
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (!k) k = s.as<KernelNode>();
  });
  return k;
}

/// Binder names of `f` that occur more than once.
std::vector<std::string> repeated_binders(const PrimFunc& f) {
  std::map<std::string, int> count;
  for (const auto& d : f->dynamics) ++count[d.name()];
  for (const auto& p : f->params) ++count[p.name()];
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (auto* n = s.as<ForNode>()) ++count[n->var.name()];
    if (auto* n = s.as<LetNode>()) ++count[n->var.name()];
    if (auto* n = s.as<AllocateNode>()) ++count[n->buffer->name];
    if (auto* n = s.as<KernelNode>()) {
      ++count[n->cid.name()];
      if (n->vid.defined()) ++count[n->vid.name()];  // developer kernels bind no vid
    }
  });
  std::vector<std::string> out;
  for (const auto& [name, c] : count)
    if (c > 1) out.push_back(name);
  return out;
}

TEST(ArithClone, EveryExampleClonesToAnEqualFunctionWithFreshBinders) {
  for (const KernelEntry* entry : registered_kernels()) {
    SCOPED_TRACE(entry->name);
    PrimFunc f = build_kernel(*entry);
    PrimFunc c = arith::clone_fresh(f);
    EXPECT_TRUE(structural_equal(f, c)) << first_difference(f, c);
    EXPECT_EQ(print(c), print(f));  // the DSL's names are unique, so they are kept
    const KernelNode *k0 = any_kernel_of(f), *k1 = any_kernel_of(c);
    ASSERT_TRUE(k0 && k1);
    EXPECT_FALSE(k0->cid.same_as(k1->cid));
    EXPECT_TRUE(repeated_binders(c).empty());
  }
}

TEST(ArithClone, ACopyNextToTheOriginalGetsNamesOfItsOwn) {
  // Two copies of a loop in one kernel: the printed function must still parse back.
  auto X = T::Tensor("X", {64}, DType::Float32);
  PrimFunc f = T::prim_func("twice", {X}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x_ub", {64}, DType::Float32);
        T::serial(2, [&](Expr i) {
          Var t = T::let("t", i * 32);
          T::copy(X.region({t}, {32}), x.region({t}, {32}));
        });
      });
    });
  });
  // Every Vector scope is followed by a fresh copy of its body.
  struct Twice : IRMutator {
    std::unordered_set<std::string> taken;
    Stmt original, copy;
    Stmt mutate_(const ScopeNode* n, const Stmt& self) override {
      original = n->body;
      copy = arith::clone_fresh(n->body, taken);
      return SeqNode::make({self, ScopeNode::make(n->core, copy)});
    }
  } twice;
  twice.taken = arith::names_in(f);
  PrimFunc g = with_body(f, twice.mutate(f->body));
  ASSERT_TRUE(twice.copy.defined()) << print(f);
  EXPECT_TRUE(repeated_binders(g).empty()) << print(g);
  std::string text = print(g, {.locations = false});
  EXPECT_NE(text.find("x_ub_1 = T.alloc_ub"), std::string::npos) << text;
  EXPECT_NE(text.find("for i_1 in T.serial(2)"), std::string::npos) << text;
  EXPECT_NE(text.find("t_1 = i_1 * 32"), std::string::npos) << text;
  EXPECT_TRUE(structural_equal(parse(text), g));
  EXPECT_TRUE(structural_equal(twice.original, twice.copy));
}

TEST(ArithClone, RepeatedBinderNamesBecomeUnique) {
  // Hand-built IR may reuse a name for two binders; the clone's printed text never does.
  auto X = T::Tensor("X", {8}, DType::Int32);
  Var c("cid"), v("vid"), a("x"), b("x"), i("X");
  Stmt body = SeqNode::make({
      ForNode::make(i, 0, 2, ForKind::Serial, 0, LetNode::make(a, i + 1)),
      LetNode::make(b, c * 2),
      LetNode::make(Var("x_1"), b + 1),
  });
  PrimFunc f = make_prim_func("dup", {}, {Param{X, {}}}, KernelNode::make(1, c, v, body));
  EXPECT_FALSE(repeated_binders(f).empty());
  PrimFunc g = arith::clone_fresh(f);
  EXPECT_TRUE(repeated_binders(g).empty()) << print(g);
  EXPECT_TRUE(structural_equal(f, g)) << first_difference(f, g);
  EXPECT_NE(print(g).find("for X_1 in"), std::string::npos) << print(g);
}

// ---- The launcher -------------------------------------------------------------------------------

TEST(ArithLaunch, DynamicShapesAndBlockCountsUseFloorDivision) {
  // With M = 5, (M - 7) // 4 is -1 (C truncation would say 0) and (M - 7) % 4 is 2 (not -2).
  auto M = T::dynamic("M");
  auto X = T::Tensor("X", {M}, DType::Int32);
  auto Y = T::Tensor("Y", {(M - 7) / 4 + 2}, DType::Int32);
  auto Z = T::Tensor("Z", {(M - 7) % 4 + 1}, DType::Int32);
  PrimFunc f = T::prim_func("floor_shapes", {X, Y, Z},
                            [&] { T::Kernel((M - 7) / 4 + 2, [&](Expr, Expr) {}); });
  auto k = compile(f);
  Device dev;
  auto launch = [&](int64_t m, int64_t y, int64_t z) {
    npu::Trace trace;
    k.launch(dev,
             {Tensor::empty(dev, {m}, DType::Int32), Tensor::empty(dev, {y}, DType::Int32),
              Tensor::empty(dev, {z}, DType::Int32)},
             {.trace = &trace});
    return trace.num_blocks;
  };
  EXPECT_EQ(launch(5, 1, 3), 1);
  EXPECT_EQ(launch(3, 1, 1), 1);   // (3 - 7) // 4 = -1, (3 - 7) % 4 = 0
  EXPECT_EQ(launch(15, 4, 1), 4);  // (15 - 7) // 4 = 2
  try {
    launch(5, 2, 3);
    FAIL() << "expected a shape error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'Y' must have shape [1], got [2]"), std::string::npos)
        << e.what();
  }
}

TEST(ArithLaunch, AShapeThatDividesByZeroIsALaunchError) {
  auto M = T::dynamic("M");
  auto X = T::Tensor("X", {M}, DType::Int32);
  auto Y = T::Tensor("Y", {8 / (M - 4)}, DType::Int32);
  PrimFunc f = T::prim_func("div_shape", {X, Y}, [&] { T::Kernel(1, [&](Expr, Expr) {}); });
  auto k = compile(f);
  Device dev;
  try {
    k.launch(dev, {Tensor::empty(dev, {4}, DType::Int32), Tensor::empty(dev, {1}, DType::Int32)});
    FAIL() << "expected a launch error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find(
            "cannot evaluate dimension 8 // (M - 4) of 'Y': division by zero in 8 // (M - 4)"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tl
