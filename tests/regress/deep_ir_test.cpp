// Regressions of issue 10 item 6: deep expressions and nests built in C++ loops overflowed the
// stack (30k terms crashed `compile`, 1M crashed the destructor), and names the DSL accepted
// (`None`, `lambda`, empty or spaced function names) printed but did not parse back. The IR
// now holds at most kMaxNestingDepth levels (the parser's limit) and kMaxExprNodes nodes per
// expression tree, rejecting anything beyond with a tl::Error that names the limit and the
// DSL source line; and one name rule (is_ir_name) serves the DSL and the parser.
#include <gtest/gtest.h>

#include <functional>

#include "pass/pass_test_util.h"
#include "tl/arith.h"
#include "tl/ir_equal.h"
#include "tl/ir_ops.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/parser.h"
#include "tl/printer.h"
#include "tl/verifier.h"

namespace tl {
namespace {

using testing::error_of;

/// Expressions of depth exactly `depth` over `n`, in the shapes a C++ loop builds them: left
/// and right operator chains, nested calls, casts and selects.
std::vector<Expr> deep_exprs(const Expr& n, int depth) {
  using Wrap = std::function<Expr(const Expr&, int)>;
  const Wrap wraps[] = {
      [&](const Expr& e, int) { return e + 1; },
      [&](const Expr& e, int) { return Expr(2) - e; },
      [&](const Expr& e, int i) { return i % 2 ? min(e, n) : min(Expr(1000), e); },
      [&](const Expr& e, int i) { return cast(i % 2 ? i64 : i32, e); },
      [&](const Expr& e, int) { return select(n > 0, e, n); },
  };
  std::vector<Expr> out;
  for (const Wrap& wrap : wraps) {
    Expr e = n;
    for (int i = 1; e->nest.depth < depth; ++i) e = wrap(e, i);
    out.push_back(e);
  }
  return out;
}

/// The value of `e` for n = nv.
int64_t value_of(const Expr& e, const Var& n, int nv) {
  return arith::evaluate(e, {{n.node(), arith::Value::of_int(nv)}}).i;
}

/// Stores each expression of `exprs(n)` into Y[k] (one AIV does the stores).
PrimFunc storing(const std::function<std::vector<Expr>(Expr)>& exprs, size_t count) {
  auto Y = T::Tensor("Y", {static_cast<int64_t>(count)}, i32);
  auto n = T::Scalar("n", i32);
  return T::prim_func("deep", {Y, n}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        T::If(vid == 0, [&] {
          auto es = exprs(n);
          for (size_t k = 0; k < es.size(); ++k)
            T::store(Y, {static_cast<int>(k)}, cast(i32, es[k]));
        });
      });
    });
  });
}

TEST(DeepIr, ExpressionsAtTheLimitVerifyPrintParseAndRun) {
  const int nv = 7;
  const int depth = kMaxNestingDepth - 1;  // the store's cast to int32 may add one
  Var n("n");
  auto expected = deep_exprs(n, depth);
  for (const Expr& e : expected) EXPECT_EQ(e->nest.depth, depth);
  PrimFunc f = storing([&](Expr m) { return deep_exprs(m, depth); }, expected.size());
  EXPECT_TRUE(verify(f).empty()) << format_diagnostics(verify(f));
  std::string text = print(f);
  PrimFunc g = parse(text);
  EXPECT_TRUE(structural_equal(f, g));
  EXPECT_EQ(print(g), text);
  auto k = compile(g, default_target(), {.cache = false});
  Device dev;
  Tensor Y = Tensor::empty(dev, {static_cast<int64_t>(expected.size())}, i32);
  k.launch(dev, {Y, nv});
  auto y = Y.to_vector();
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(y[i], static_cast<double>(static_cast<int32_t>(value_of(expected[i], n, nv)))) << i;
}

TEST(DeepIr, ExpressionOneLevelDeeperIsAnErrorNamingTheLimit) {
  Var n("n");
  for (const Expr& e : deep_exprs(n, kMaxNestingDepth)) {
    EXPECT_EQ(e->nest.depth, kMaxNestingDepth);
    std::string msg = error_of([&] { cast(i8, e); });
    EXPECT_NE(msg.find("more than 200 levels"), std::string::npos) << msg;
  }
}

TEST(DeepIr, ThirtyThousandTermsInTheDslAreAnErrorAtTheStatement) {
  int line = 0;
  std::string msg = error_of([&] {
    auto Y = T::Tensor("Y", {1}, i32);
    T::prim_func("k", {Y}, [&] {
      T::Kernel(1, [&](Expr, Expr) {
        line = __LINE__ + 1;
        T::Scope(Core::Vector, [&] {
          Expr e = 0;
          for (int i = 0; i < 30000; ++i) e = e + Y(0);
          T::store(Y, {0}, e);
        });
      });
    });
  });
  EXPECT_NE(msg.find("more than 200 levels"), std::string::npos) << msg;
  EXPECT_NE(msg.find(fmt::format("deep_ir_test.cpp:{}", line)), std::string::npos) << msg;
}

TEST(DeepIr, MillionTermChainIsRejectedNotDestroyedRecursively) {
  Expr x = Var("x");
  Expr e = x;
  int built = 0;
  try {
    for (int i = 0; i < 1000000; ++i, ++built) e = e + x;
  } catch (const Error&) {
  }
  EXPECT_EQ(built, kMaxNestingDepth - 1);
}

TEST(DeepIr, SharedSubexpressionsCountOncePerUse) {
  Expr e = Var("x");
  std::string msg = error_of([&] {
    for (int i = 0; i < 40; ++i) e = e + e;  // 40 levels, 2^41 nodes as printed
  });
  EXPECT_NE(msg.find("65536 nodes"), std::string::npos) << msg;
  EXPECT_LE(e->nest.size, kMaxExprNodes);
}

/// `levels` loops nested inside the vector scope, the innermost storing into Y.
PrimFunc nest(int levels) {
  auto Y = T::Tensor("Y", {1}, i32);
  return T::prim_func("nest", {Y}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        std::function<void(int, Expr)> loop = [&](int k, Expr acc) {
          if (k == levels) {
            T::If(vid == 0, [&] { T::store(Y, {0}, acc); });
            return;
          }
          T::serial(fmt::format("i{}", k), 1,
                    [&](Expr i) { loop(k + 1, k % 2 ? acc : acc + i + 1); });
        };
        loop(0, 0);
      });
    });
  });
}

TEST(DeepIr, StatementNestsAtTheLimitParseBackAndRun) {
  // Seq(Kernel(Scope(196 loops(If(Store))))): 200 levels.
  PrimFunc f = nest(kMaxNestingDepth - 4);
  EXPECT_EQ(f->body->depth, kMaxNestingDepth);
  std::string text = print(f);
  PrimFunc g = parse(text);
  EXPECT_TRUE(structural_equal(f, g));
  auto k = compile(g, default_target(), {.cache = false});
  Device dev;
  Tensor Y = Tensor::empty(dev, {1}, i32);
  k.launch(dev, {Y});
  EXPECT_EQ(Y.to_vector()[0], (kMaxNestingDepth - 4 + 1) / 2);
}

TEST(DeepIr, StatementNestOneLevelDeeperIsAnErrorAtTheStatement) {
  std::string msg = error_of([&] { nest(kMaxNestingDepth - 3); });
  EXPECT_NE(msg.find("statements nested too deeply (more than 200 levels"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("deep_ir_test.cpp:"), std::string::npos) << msg;
  // The same nest in text is rejected by the parser at the same depth.
  std::string text = print(nest(kMaxNestingDepth - 4));
  size_t store = text.find("Y[0] = ");
  ASSERT_NE(store, std::string::npos);
  size_t bol = text.rfind('\n', store) + 1;
  std::string indent(store - bol, ' ');
  text.replace(bol, store - bol, indent + "for j in T.serial(1):\n" + indent + "    ");
  msg = error_of([&] { parse(text); });
  EXPECT_NE(msg.find("nested too deeply (more than 200 levels)"), std::string::npos) << msg;
  // And IR built by hand in a loop stops there too (1M levels would crash the destructor).
  Stmt s = SeqNode::make({});
  int built = 0;
  try {
    for (int i = 0; i < 1000000; ++i, ++built)
      s = ForNode::make(Var("i"), 0, 1, ForKind::Serial, 0, s);
  } catch (const Error&) {
  }
  EXPECT_EQ(built, kMaxNestingDepth - 1);
}

/// Names the DSL accepts are exactly those the parser accepts (and those print and parse back).
TEST(DeepIr, DslAndParserShareOneNameRule) {
  const std::string names[] = {"ok",
                               "_x9",
                               "None",
                               "lambda",
                               "",
                               "a b",
                               "import",
                               "from",
                               "elif",
                               "9x",
                               "x-y",
                               "T",
                               "True",
                               "pass",
                               "\xc3\xa9t\xc3\xa9",
                               std::string(kMaxIrNameBytes, 'n'),
                               std::string(kMaxIrNameBytes + 1, 'n')};
  for (const std::string& name : names) {
    SCOPED_TRACE(name.substr(0, 20));
    const bool valid = is_ir_name(name);
    auto as_function = [&] {
      auto X = T::Tensor("X", {8}, f32);
      return T::prim_func(name, {X}, [&] { T::Kernel(1, [&](Expr, Expr) {}); });
    };
    auto as_buffer = [&] {
      return T::prim_func("k", {},
                          [&] { T::Kernel(1, [&](Expr, Expr) { T::alloc_ub(name, {8}, f32); }); });
    };
    auto as_param = [&] {
      auto X = T::Tensor(name, {8}, f32);
      return T::prim_func("k", {X}, [&] { T::Kernel(1, [&](Expr, Expr) {}); });
    };
    auto as_dynamic = [&] {
      auto X = T::Tensor("X", {T::dynamic(name)}, f32);
      return T::prim_func("k", {X}, [&] { T::Kernel(1, [&](Expr, Expr) {}); });
    };
    auto as_loop = [&] {
      return T::prim_func(
          "k", {}, [&] { T::Kernel(1, [&](Expr, Expr) { T::serial(name, 2, [&](Expr) {}); }); });
    };
    auto as_let = [&] {
      return T::prim_func("k", {}, [&] { T::Kernel(1, [&](Expr, Expr) { T::let(name, 1); }); });
    };
    for (const auto& build : std::vector<std::function<PrimFunc()>>{
             as_function, as_buffer, as_param, as_dynamic, as_loop, as_let}) {
      if (!valid) {
        EXPECT_THROW(build(), Error);
        continue;
      }
      PrimFunc f = build();
      EXPECT_TRUE(structural_equal(parse(print(f)), f)) << print(f);
    }
  }
}

}  // namespace
}  // namespace tl
