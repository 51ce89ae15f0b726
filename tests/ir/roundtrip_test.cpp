// print -> parse -> print round trips: every registered kernel (the registry grows as examples
// are added, so it is iterated, not listed) and a hand-built function with every statement
// kind, every expression kind and a call of every registered tile op.
#include <gtest/gtest.h>

#include <limits>

#include "tl/ir_equal.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"
#include "tl/op.h"
#include "tl/parser.h"
#include "tl/printer.h"

namespace tl {
namespace {

/// parse(print(f)) reprints identically and is structurally equal to f (with and without
/// locations in the text).
void expect_round_trip(const PrimFunc& f) {
  for (bool locations : {true, false}) {
    SCOPED_TRACE(locations ? "with locations" : "without locations");
    std::string text = print(f, {.locations = locations});
    PrimFunc g;
    try {
      g = parse(text, f->name + ".tl");
    } catch (const Error& e) {
      ADD_FAILURE() << e.what() << "\n" << text;
      continue;
    }
    EXPECT_EQ(print(g, {.locations = locations}), text);
    EXPECT_TRUE(structural_equal(g, f)) << first_difference(g, f) << "\n" << text;
    EXPECT_TRUE(structural_equal(f, g)) << first_difference(f, g);
    EXPECT_EQ(structural_hash(g), structural_hash(f));
  }
}

TEST(RoundTrip, EveryRegisteredKernel) {
  auto kernels = registered_kernels();
  ASSERT_FALSE(kernels.empty());
  for (const KernelEntry* k : kernels) {
    SCOPED_TRACE("kernel " + k->name);
    expect_round_trip(build_kernel(*k));
  }
}

// ---- A function with every statement kind, expression kind and tile op --------------------

/// A value of the attribute's type that differs from its default (so that it is printed).
AttrValue non_default(const AttrSpec& a) {
  switch (a.default_value.index()) {
    case 0:
      return !std::get<bool>(a.default_value);
    case 1:
      return std::get<int64_t>(a.default_value) + 1;
    case 2:
      return std::get<double>(a.default_value) - 2.5;
    default:
      if (!a.choices.empty())
        return a.choices.back() != std::get<std::string>(a.default_value) ? a.choices.back()
                                                                          : a.choices.front();
      return std::string("n=%d \"quoted\"\n\ttab \\ \x01");
  }
}

/// Calls every registered op with operands of the kinds its spec asks for, rotating through
/// the region forms the printer distinguishes (full, 0:e, literal lo:hi, lo:lo + e).
void emit_every_op(const Buffer& t, const Buffer& s, const Var& base, const Expr& i) {
  int n = 0;
  auto tile = [&]() -> TileArg {
    switch (n++ % 5) {
      case 0:
        return t;
      case 1:
        return t.region({0, 0}, {8, 16});
      case 2:
        return t.region({4, 0}, {4, 16});
      case 3:
        return t.region({base, i * 2}, {8, 2});
      default:
        return t.region({i, 1}, {base % 8, 4});
    }
  };
  auto scalar = [&]() -> TileArg {
    switch (n++ % 4) {
      case 0:
        return 2.5;
      case 1:
        return base + 1;
      case 2:
        return s();
      default:
        return i == 0;
    }
  };
  for (const OpDef* op : all_ops()) {
    std::vector<TileArg> args;
    for (const OperandSpec& spec : op->operands) {
      int copies = spec.variadic ? 3 : 1;
      for (int c = 0; c < copies; ++c) {
        bool as_tile = spec.kind == OperandKind::Tile ||
                       (spec.kind == OperandKind::TileOrScalar && n % 2 == 0);
        args.push_back(as_tile ? tile() : scalar());
      }
    }
    std::vector<Attr> attrs;
    for (const AttrSpec& a : op->attrs) attrs.push_back({a.name, non_default(a)});
    T::emit(op->name, std::move(args), std::move(attrs));
    // And once with defaults and without the optional operands.
    std::vector<TileArg> required;
    for (const OperandSpec& spec : op->operands) {
      if (spec.optional || spec.variadic) break;
      required.push_back(spec.kind == OperandKind::Scalar ? scalar() : tile());
    }
    T::emit(op->name, std::move(required));
  }
}

PrimFunc every_statement_expression_and_op() {
  auto M = T::dynamic("M");
  auto L = T::dynamic("L", i64);
  auto A = T::Tensor("A", {M, 64}, f16);
  auto Bt = T::Tensor("B", {L, 8}, f32, {16, 1});
  auto eps = T::Scalar("eps", f32);
  auto k = T::Scalar("k", i64);
  const double inf = std::numeric_limits<double>::infinity();
  return T::prim_func("every_op", {A, Bt, eps, k}, [&] {
    T::Kernel(M / 64, [&](Expr cid, Expr vid) {
      auto l1 = T::alloc_L1("l1", {64, 64}, f16, 0);
      auto l0a = T::alloc_L0A("l0a", {64, 64}, f16);
      auto l0b = T::alloc_L0B("l0b", {64, 64}, f16, 32768);
      auto l0c = T::alloc_L0C("l0c", {64, 64}, f32);
      auto ub = T::alloc_ub("ub", {16, 16}, f16, 256);
      auto sh = T::alloc_shared("sh", {8, 8}, f32);
      auto fr = T::alloc_fragment("fr", {8}, i32);
      auto acc = T::alloc_var("acc", f32, eps * 2.0);
      Var base = T::let("base", cid * 64 + vid);
      // Every expression kind and precedence level.
      T::let("e_arith", (base - (cid - 1)) * 3 / 2 % 5 - (-4));
      T::let("e_logic",
             (cid < 2 && !(vid == 1)) || (base >= 7 && base != 9) || cid <= 0 || vid > 1);
      T::let("e_bits", bitwise_or(bitwise_xor(cid, bitwise_and(vid, 3)),
                                  shift_left(cid, shift_right(base, 1))));
      T::let("e_minmax", min(max(cid, vid), truncdiv(base, 3)) + truncmod(base, -3));
      T::let("e_select", select(cid == 0, exp(eps), pow(eps, 2.0) - log(eps) * sqrt(eps)));
      T::let("e_call", rsqrt(abs(sigmoid(acc()))) / 3.0);
      T::let("e_cast", cast(f16, acc()) + imm(f16, 1.5) + imm(f16, -inf));
      T::let("e_i64", k * 2 + imm(i64, -7) + cast(i64, cid));
      T::let("e_float",
             Expr(0.1) + Expr(-0.0) + Expr(1e-300) + Expr(inf) + Expr(-inf) + (-Expr(eps)));
      T::let("e_load", A(base % 64, 3) + ub(1, 2));
      T::let("e_str", StringImmNode::make("a \"string\"\n"));
      T::let("e_bool", Expr(true) == !Expr(false));
      T::store(ub, {0, base % 16}, cast(f16, acc()));
      T::assign(acc, acc() + 1.0);
      T::Scope(Core::Cube, [&] {
        T::serial(4, [&](Expr i) {
          T::copy(A.at({base, i * 16}), l1.region({0, 0}, {64, 16}));
          T::set_flag(Pipe::MTE2, Pipe::MTE1, 0);
          T::wait_flag(Pipe::MTE2, Pipe::MTE1, 0);
          T::copy(l1, l0a, {.transpose = true});
          T::copy(l1, l0b);
          T::mma(l0a, l0b, l0c, i == 0);
        });
        T::unroll(2, [&](Expr) {});
        T::copy(l0c, A.at({base, 0}), {.enable_relu = true});
      });
      T::Scope(Core::Vector, [&] {
        T::Parallel(16, [&](Expr p) { T::store(ub, {p, 0}, imm(f16, 0.0)); });
        T::Pipelined(8, 2, [&](Expr) { T::pipe_barrier(Pipe::V); });
        T::serial(2, 10, [&](Expr i) {
          T::If(
              vid == 0, [&] { T::set_cross_flag(Pipe::FIX, i, 1); },
              [&] { T::wait_cross_flag(i); });
          T::If(i > 4, [&] { T::copy(A.at({0, 0}), ub, {.pad_value = -inf}); });
          T::If(
              i > 5, [&] {}, [&] {});
          emit_every_op(ub, acc, base, i);
        });
        T::printf("cid=%d acc=%f", {cid, acc()});
        T::dump_tensor(fr, 7);
        T::reduce_max(sh, fr, 1, false);
      });
      T::barrier_all();
      T::sync_all();
    });
  });
}

TEST(RoundTrip, EveryStatementExpressionAndOp) {
  PrimFunc f = every_statement_expression_and_op();
  std::string text = print(f);
  for (const OpDef* op : all_ops())
    EXPECT_NE(text.find("T." + op->name + "("), std::string::npos) << op->name;
  for (const char* s : {"T.alloc_L1(",
                        "T.alloc_L0A(",
                        "T.alloc_L0B(",
                        "T.alloc_L0C(",
                        "T.alloc_ub(",
                        "T.alloc_shared(",
                        "T.alloc_fragment(",
                        "T.alloc_var(",
                        "T.serial(",
                        "T.unroll(",
                        "T.Parallel(",
                        "T.Pipelined(",
                        ", min=",
                        "else:",
                        "pass",
                        "T.set_flag(",
                        "T.wait_flag(",
                        "T.pipe_barrier(",
                        "T.barrier_all()",
                        "T.set_cross_flag(",
                        "T.wait_cross_flag(",
                        "T.sync_all()",
                        "with T.Scope(",
                        "address=",
                        "strides=",
                        "T.dynamic(\"L\", \"int64\")",
                        "float(\"-inf\")"})
    EXPECT_NE(text.find(s), std::string::npos) << s;
  expect_round_trip(f);
}

}  // namespace
}  // namespace tl
