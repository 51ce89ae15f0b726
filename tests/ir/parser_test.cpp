// The IR text parser: expressions of every kind and every precedence corner, every statement
// kind, source locations, and malformed inputs rejected with `FILE:LINE:COL: expected X, got Y`.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "tl/ir_equal.h"
#include "tl/ir_ops.h"
#include "tl/parser.h"
#include "tl/printer.h"
#include "tl/verifier.h"

namespace tl {
namespace {

// A function with a name of every kind in scope; expression tests append `v = <expr>` to the
// kernel body and read the Let back.
constexpr std::string_view kPrelude = R"(N = T.dynamic("N")

@T.prim_func
def f(A: T.Tensor((N, 16), "float16"), x: T.float32, n: T.int64):
    with T.Kernel(4, is_npu=True) as (cid, vid):
        acc = T.alloc_var("float32")
        u = T.alloc_ub((16, 16), "float16")
)";

const std::vector<Stmt>& kernel_body(const PrimFunc& f) {
  auto* seq = f->body.as<SeqNode>();
  EXPECT_TRUE(seq && seq->stmts.size() == 1);
  auto* k = seq->stmts[0].as<KernelNode>();
  EXPECT_TRUE(k);
  return k->body.as<SeqNode>()->stmts;
}

Expr parse_expr(const std::string& e) {
  PrimFunc f = parse(std::string(kPrelude) + "        v = " + e + "\n");
  auto* let = kernel_body(f).back().as<LetNode>();
  EXPECT_TRUE(let) << e;
  return let ? let->value : Expr();
}

// Free variables and buffers compare by name in structural_equal(Expr, Expr), so expected
// trees can be built from same-named stand-ins.
const Var cid("cid"), vid("vid"), x("x", f32), n("n", i64);
const Buffer A = BufferNode::make("A", f16, {Var("N"), 16}, MemScope::GM);
const Buffer acc = BufferNode::make("acc", f32, {1}, MemScope::Var);

Expr B(BinOp op, Expr a, Expr b) {
  return BinaryNode::make(op, std::move(a), std::move(b));
}
Expr I(int64_t v, DType t = i32) {
  return IntImmNode::make(t, v);
}
Expr F(double v, DType t = f32) {
  return FloatImmNode::make(t, v);
}

void expect_round_trip(const Expr& e) {
  std::string text = print(e);
  Expr p;
  try {
    p = parse_expr(text);
  } catch (const Error& err) {
    ADD_FAILURE() << text << ": " << err.what();
    return;
  }
  EXPECT_TRUE(structural_equal(p, e)) << text << " parsed as " << print(p);
  EXPECT_EQ(print(p), text);
}

TEST(Parser, LiteralsOfEveryKind) {
  EXPECT_TRUE(structural_equal(parse_expr("5"), I(5)));
  EXPECT_TRUE(structural_equal(parse_expr("-5"), I(-5)));
  EXPECT_TRUE(structural_equal(parse_expr("True"), I(1, DType::Bool)));
  EXPECT_TRUE(structural_equal(parse_expr("False"), I(0, DType::Bool)));
  EXPECT_TRUE(structural_equal(parse_expr("1.5"), F(1.5)));
  EXPECT_TRUE(structural_equal(parse_expr("T.int64(5)"), I(5, i64)));
  EXPECT_TRUE(structural_equal(parse_expr("T.int64(-9223372036854775808)"),
                               I(std::numeric_limits<int64_t>::min(), i64)));
  EXPECT_TRUE(structural_equal(parse_expr("-2147483648"), I(std::numeric_limits<int32_t>::min())));
  EXPECT_TRUE(structural_equal(parse_expr("T.uint8(200)"), I(200, u8)));
  EXPECT_TRUE(structural_equal(parse_expr("T.float16(1.5)"), F(1.5, f16)));
  EXPECT_TRUE(structural_equal(parse_expr("T.bfloat16(-2)"), F(-2.0, bf16)));
  EXPECT_TRUE(structural_equal(parse_expr("T.bool(True)"), I(1, DType::Bool)));
  EXPECT_TRUE(structural_equal(parse_expr("T.float16(float(\"-inf\"))"),
                               F(-std::numeric_limits<double>::infinity(), f16)));
  Expr str = parse_expr(R"("a\"b\\c\n\t\x01")");
  auto* s = str.as<StringImmNode>();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->value, std::string("a\"b\\c\n\t\x01"));
  double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(parse_expr("float(\"inf\")").as<FloatImmNode>()->value, inf);
  EXPECT_EQ(parse_expr("float(\"-inf\")").as<FloatImmNode>()->value, -inf);
  EXPECT_TRUE(std::isnan(parse_expr("float(\"nan\")").as<FloatImmNode>()->value));
}

TEST(Parser, FloatLiteralsRoundTripBitExactly) {
  const double values[] = {0.1,
                           1.0 / 3,
                           1e20,
                           1e-300,
                           5e-324 /* subnormal */,
                           -0.0,
                           0.0,
                           -2.5,
                           3.4028234663852886e38,
                           123456789.125,
                           6.02214076e23,
                           std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity()};
  for (double v : values) {
    for (DType t : {f32, f16, f64}) {
      Expr e = F(v, t);
      Expr p = parse_expr(print(e));
      auto* fi = p.as<FloatImmNode>();
      ASSERT_TRUE(fi) << print(e);
      EXPECT_EQ(fi->dtype, t);
      EXPECT_EQ(std::memcmp(&fi->value, &v, sizeof v), 0)
          << print(e) << " read back as " << fi->value;
    }
  }
  // -0.0 prints as a negative literal and reads back with its sign.
  EXPECT_EQ(print(F(-0.0)), "-0.0");
  EXPECT_TRUE(std::signbit(parse_expr("-0.0").as<FloatImmNode>()->value));
}

TEST(Parser, PrecedenceCornersRoundTrip) {
  Expr c = cid, v = vid;
  const Expr cases[] = {
      B(BinOp::Sub, c, B(BinOp::Sub, v, 1)),              // cid - (vid - 1)
      B(BinOp::Sub, B(BinOp::Sub, c, v), 1),              // cid - vid - 1
      B(BinOp::Mul, B(BinOp::Add, c, v), 2),              // (cid + vid) * 2
      B(BinOp::FloorDiv, c, B(BinOp::Mul, v, 2)),         // cid // (vid * 2)
      B(BinOp::FloorMod, B(BinOp::FloorDiv, c, 4), 3),    // cid // 4 % 3
      B(BinOp::Div, x, B(BinOp::Div, x, 2.0)),            // x / (x / 2.0)
      B(BinOp::Sub, c, I(-5)),                            // cid - -5
      B(BinOp::Mul, I(-1), c),                            // -1 * cid
      B(BinOp::Mul, F(-1.5), x),                          // -1.5 * x
      B(BinOp::Sub, I(0), B(BinOp::Sub, I(0), c)),        // nested negation: 0 - (0 - cid)
      B(BinOp::Sub, F(0.0), x),                           // 0.0 - x
      B(BinOp::Mul, x, F(-1.0)),                          // -x
      B(BinOp::Mul, B(BinOp::Mul, x, F(-1.0)), F(-1.0)),  // --x
      B(BinOp::Sub, x, B(BinOp::Mul, B(BinOp::Add, x, 1.0), F(-1.0))),  // x - -(x + 1.0)
      B(BinOp::Mul, F(2.0), F(-1.0)),                                   // 2.0 * -1.0 (not -2.0)
      B(BinOp::And, B(BinOp::LT, c, v),
        B(BinOp::Or, B(BinOp::EQ, c, 1), NotNode::make(B(BinOp::GE, v, 2)))),
      B(BinOp::Or, B(BinOp::And, B(BinOp::LT, c, 1), B(BinOp::GT, v, 0)), B(BinOp::NE, c, v)),
      NotNode::make(B(BinOp::And, B(BinOp::LT, c, 1), B(BinOp::LE, v, 0))),
      NotNode::make(NotNode::make(B(BinOp::EQ, c, 0))),
      B(BinOp::EQ, B(BinOp::EQ, c, v), I(0, DType::Bool)),  // (cid == vid) == False
      B(BinOp::LT, c, B(BinOp::LT, v, 1)),                  // cid < (vid < 1)
      B(BinOp::EQ, NotNode::make(B(BinOp::LT, c, 1)), I(1, DType::Bool)),
      B(BinOp::Add, c, NotNode::make(B(BinOp::LT, c, 1))),
      B(BinOp::BitOr, B(BinOp::BitXor, c, B(BinOp::BitAnd, v, 3)), B(BinOp::Shl, c, 2)),
      B(BinOp::BitAnd, B(BinOp::BitOr, c, v), B(BinOp::BitXor, c, 1)),
      B(BinOp::Shr, B(BinOp::Add, c, v), 1),
      B(BinOp::Add, c, B(BinOp::Shl, v, 1)),
      B(BinOp::Shl, B(BinOp::Shl, c, 1), B(BinOp::Shr, v, 2)),
      B(BinOp::Add, n, c),  // int64 + int32 promotes
      B(BinOp::Min, B(BinOp::Max, c, 0), B(BinOp::TruncDiv, v, 2)),
      B(BinOp::TruncMod, B(BinOp::Add, c, 1), B(BinOp::Sub, v, 1)),
      SelectNode::make(B(BinOp::LT, c, 2), x, F(-std::numeric_limits<double>::infinity())),
      CastNode::make(f16, B(BinOp::Mul, x, 2.0)),
      CastNode::make(i64, c),
      CallNode::make(f32, "exp", {x}),
      CallNode::make(f32, "log", {B(BinOp::Add, x, 1.0)}),
      CallNode::make(f32, "pow", {x, F(2.0)}),
      CallNode::make(f32, "rsqrt", {CallNode::make(f32, "abs", {x})}),
      CallNode::make(f32, "sigmoid", {CallNode::make(f32, "sqrt", {x})}),
      LoadNode::make(A, {B(BinOp::FloorMod, c, 4), 3}),
      B(BinOp::Add, LoadNode::make(acc, {0}), x),
      StringImmNode::make("hello \"world\"\n"),
      B(BinOp::Mul, I(7, i64), F(1.5, f16)),
      F(std::numeric_limits<double>::quiet_NaN()),
  };
  for (const Expr& e : cases) expect_round_trip(e);
}

TEST(Parser, PythonPrecedenceFromHandWrittenText) {
  Expr c = cid, v = vid;
  EXPECT_TRUE(structural_equal(parse_expr("cid + vid * 2"), B(BinOp::Add, c, B(BinOp::Mul, v, 2))));
  EXPECT_TRUE(structural_equal(parse_expr("cid - vid - 1"), B(BinOp::Sub, B(BinOp::Sub, c, v), 1)));
  EXPECT_TRUE(structural_equal(
      parse_expr("not cid < 1 and vid == 0 or False"),
      B(BinOp::Or, B(BinOp::And, NotNode::make(B(BinOp::LT, c, 1)), B(BinOp::EQ, v, 0)),
        I(0, DType::Bool))));
  EXPECT_TRUE(structural_equal(
      parse_expr("cid | vid ^ 1 & 2 << 3 + 4"),
      B(BinOp::BitOr, c,
        B(BinOp::BitXor, v,
          B(BinOp::BitAnd, I(1), B(BinOp::Shl, I(2), B(BinOp::Add, I(3), I(4))))))));
  // Unary minus folds into literals (also typed and parenthesised ones), else is 0 - operand
  // for an integer and operand * -1 (an exact sign flip) for a float.
  EXPECT_TRUE(structural_equal(parse_expr("-(5)"), I(-5)));
  EXPECT_TRUE(structural_equal(parse_expr("- -5"), I(5)));
  EXPECT_TRUE(structural_equal(parse_expr("-T.int64(3)"), I(-3, i64)));
  EXPECT_TRUE(structural_equal(parse_expr("-T.float16(1.5)"), F(-1.5, f16)));
  EXPECT_TRUE(structural_equal(parse_expr("-cid"), B(BinOp::Sub, I(0), c)));
  EXPECT_TRUE(structural_equal(parse_expr("-x"), B(BinOp::Mul, x, F(-1.0))));
  EXPECT_TRUE(structural_equal(
      parse_expr("-x * -(x + 1.0)"),
      B(BinOp::Mul, B(BinOp::Mul, x, F(-1.0)), B(BinOp::Mul, B(BinOp::Add, x, 1.0), F(-1.0)))));
  EXPECT_TRUE(structural_equal(parse_expr("-n"), B(BinOp::Sub, I(0, i64), n)));
  EXPECT_TRUE(structural_equal(parse_expr("-2 * cid"), B(BinOp::Mul, I(-2), c)));
  EXPECT_TRUE(structural_equal(parse_expr("-cid * 2"), B(BinOp::Mul, B(BinOp::Sub, I(0), c), 2)));
  // Raw nodes: nothing folds.
  EXPECT_TRUE(structural_equal(parse_expr("4 * 128"), B(BinOp::Mul, 4, 128)));
  EXPECT_TRUE(structural_equal(parse_expr("cid + 0"), B(BinOp::Add, c, 0)));
  EXPECT_TRUE(structural_equal(parse_expr("T.cast(cid, \"int32\")"), CastNode::make(i32, c)));
  // Lines inside brackets join, and comments are ignored.
  EXPECT_TRUE(structural_equal(parse_expr("(cid +  # a comment\n   vid)"), B(BinOp::Add, c, v)));
}

// Every statement kind, written as the printer writes it.
constexpr std::string_view kEveryStatement = R"(M = T.dynamic("M")
L = T.dynamic("L", "int64")

@T.prim_func
def every_stmt(A: T.Tensor((M, 64), "float16"), B: T.Tensor((L, 8), "float32", strides=(16, 1)), eps: T.float32):  # @k.cpp:3
    with T.Kernel(M // 64, is_npu=True) as (cid, vid):  # @k.cpp:4
        l1 = T.alloc_L1((64, 64), "float16", address=0)  # @k.cpp:5
        l0a = T.alloc_L0A((64, 64), "float16")  # @k.cpp:6
        l0b = T.alloc_L0B((64, 64), "float16")
        l0c = T.alloc_L0C((64, 64), "float32", address=128)
        ub = T.alloc_ub((16, 16), "float16")
        sh = T.alloc_shared((8,), "int32")
        fr = T.alloc_fragment((8, 8), "float32")
        acc = T.alloc_var("float32")  # @k.cpp:12
        acc[0] = eps * 2.0  # @k.cpp:13
        base = cid * 64  # @k.cpp:14
        ub[0, base % 16] = T.cast(acc[0], "float16")
        with T.Scope("Cube"):  # @k.cpp:16
            for i in T.serial(4):  # @k.cpp:17
                T.copy(A[base:base + 64, i * 16:i * 16 + 16], l1[0:64, 0:16])  # @k.cpp:18
                T.set_flag("MTE2", "MTE1", 0)
                T.wait_flag("MTE2", "MTE1", 0)
                T.gemm_v0(l1, l1, l0c, i == 0, transpose_B=True)
            for u in T.unroll(2):
                pass
        with T.Scope("Vector"):
            for p in T.Parallel(16):
                ub[p, 0] = T.float16(0.0)
            for k in T.Pipelined(8, num_stages=2):
                T.tile.add(ub, ub, 1.0)
                T.pipe_barrier("V")
            for i in T.serial(8, min=2):  # @k.cpp:32
                if vid == 0:  # @k.cpp:33
                    T.set_cross_flag("FIX", i, mode=2)
                else:
                    T.wait_cross_flag(i)  # @k.cpp:36
                if i > 4 and vid != 1:
                    pass
            T.reduce_sum(ub[0:8, 4:8], sh[0:4], dim=1, clear=False)
            T.printf(cid, acc[0], fmt="cid=%d acc=%f")
        T.barrier_all()
        T.sync_all()
)";

// A shape written as a constant expression is a static extent: the compiler reads static extents
// as literals, and the verifier once took `1 * 16` for a dynamic size and reported an int64
// overflow. A dynamic extent stays as written.
TEST(Parser, ConstantShapeExpressionsFoldToLiterals) {
  PrimFunc f = parse(R"(N = T.dynamic("N")

@T.prim_func
def k(X: T.Tensor((1 * 16, 16), "float32"), Y: T.Tensor((N * 2, 16), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((4 * 2, 16 // 2 + 8), "float32")
            T.copy(X[vid * 8:vid * 8 + 8, 0:16], x)
            T.copy(x, Y[vid * 8:vid * 8 + 8, 0:16])
)",
                     "shape.tl");
  EXPECT_EQ(as_const_int(f->params[0].tensor->shape[0]), 16);
  EXPECT_FALSE(as_const_int(f->params[1].tensor->shape[0]));
  auto* scope = kernel_body(f)[0].as<ScopeNode>();
  ASSERT_TRUE(scope);
  auto* ub = scope->body.as<SeqNode>()->stmts[0].as<AllocateNode>();
  ASSERT_TRUE(ub);
  EXPECT_EQ(as_const_int(ub->buffer->shape[0]), 8);
  EXPECT_EQ(as_const_int(ub->buffer->shape[1]), 16);
  EXPECT_TRUE(verify(f).empty()) << print(f);
  EXPECT_NE(print(f).find("T.Tensor((16, 16)"), std::string::npos) << print(f);
}

TEST(Parser, EveryStatementKindReadsBackAndReprints) {
  PrimFunc f = parse(kEveryStatement, "every.tl");
  EXPECT_EQ(print(f), kEveryStatement);
  EXPECT_EQ(f->name, "every_stmt");
  ASSERT_EQ(f->dynamics.size(), 2u);
  EXPECT_EQ(f->dynamics[1].dtype(), i64);
  ASSERT_EQ(f->params.size(), 3u);
  EXPECT_EQ(f->params[1].tensor->strides.size(), 2u);
  EXPECT_EQ(f->params[2].scalar.dtype(), f32);
  // Shapes refer to the dynamic symbols by binding.
  EXPECT_TRUE(f->params[0].tensor->shape[0].same_as(f->dynamics[0]));

  const auto& body = kernel_body(f);
  ASSERT_EQ(body.size(), 15u);
  auto* l1 = body[0].as<AllocateNode>();
  ASSERT_TRUE(l1);
  EXPECT_EQ(l1->buffer->scope, MemScope::L1);
  EXPECT_EQ(l1->buffer->address, 0);
  EXPECT_EQ(body[6].as<AllocateNode>()->buffer->scope, MemScope::Fragment);
  auto* var = body[7].as<AllocateNode>();
  EXPECT_EQ(var->buffer->scope, MemScope::Var);
  auto* store = body[8].as<StoreNode>();
  ASSERT_TRUE(store);
  EXPECT_TRUE(store->buffer.same_as(var->buffer));
  auto* let = body[9].as<LetNode>();
  ASSERT_TRUE(let);
  EXPECT_EQ(let->var.name(), "base");
  // A later use of `base` is the Let's variable, not a fresh one.
  auto* store2 = body[10].as<StoreNode>();
  auto* idx = store2->indices[1].as<BinaryNode>();
  ASSERT_TRUE(idx);
  EXPECT_TRUE(idx->a.same_as(let->var));

  // Sync statements carry the DSL's pipe conventions.
  auto* barrier = body[13].as<SyncNode>();
  ASSERT_TRUE(barrier);
  EXPECT_EQ(barrier->sync_kind, SyncKind::BarrierAll);
  EXPECT_EQ(barrier->src, Pipe::ALL);

  auto* vec = body[12].as<ScopeNode>();
  ASSERT_TRUE(vec);
  EXPECT_EQ(vec->core, CoreKind::Vector);
  const auto& vs = vec->body.as<SeqNode>()->stmts;
  auto* pipelined = vs[1].as<ForNode>();
  ASSERT_TRUE(pipelined);
  EXPECT_EQ(pipelined->for_kind, ForKind::Pipelined);
  EXPECT_EQ(pipelined->num_stages, 2);
  auto* ranged = vs[2].as<ForNode>();
  EXPECT_TRUE(structural_equal(ranged->min, I(2)));
  auto* reduce = vs[3].as<TileOpNode>();
  ASSERT_TRUE(reduce);
  EXPECT_EQ(reduce->attr_int("dim"), 1);
  EXPECT_FALSE(reduce->attr_bool("clear"));
  // ub[0:8, 4:8]: both literal, so the extent is hi - lo.
  EXPECT_TRUE(structural_equal(reduce->args[0].region.ranges[1].min, I(4)));
  EXPECT_TRUE(structural_equal(reduce->args[0].region.ranges[1].extent, I(4)));
  auto* pf = vs[4].as<TileOpNode>();
  ASSERT_EQ(pf->args.size(), 2u);
  EXPECT_EQ(pf->attr_str("fmt"), "cid=%d acc=%f");

  // The copy's region A[base:base + 64, ...] has extents 64 and 16.
  auto* cube = body[11].as<ScopeNode>();
  auto* loop = cube->body.as<SeqNode>()->stmts[0].as<ForNode>();
  auto* copy = loop->body.as<SeqNode>()->stmts[0].as<TileOpNode>();
  ASSERT_TRUE(copy);
  const auto& r = copy->args[0].region;
  EXPECT_TRUE(r.ranges[0].min.same_as(let->var));
  EXPECT_TRUE(structural_equal(r.ranges[0].extent, I(64)));
  EXPECT_TRUE(structural_equal(r.ranges[1].extent, I(16)));
  auto* gemm = loop->body.as<SeqNode>()->stmts[3].as<TileOpNode>();
  EXPECT_TRUE(gemm->attr_bool("transpose_B"));
  EXPECT_TRUE(gemm->args[3].is_scalar());
}

TEST(Parser, LocationsAreReadBack) {
  PrimFunc f = parse(kEveryStatement, "every.tl");
  EXPECT_EQ(f->loc.str(), "k.cpp:3");
  auto* k = f->body.as<SeqNode>()->stmts[0].as<KernelNode>();
  EXPECT_EQ(k->loc.str(), "k.cpp:4");
  const auto& body = kernel_body(f);
  EXPECT_EQ(body[0]->loc.str(), "k.cpp:5");
  EXPECT_EQ(body[1]->loc.str(), "k.cpp:6");
  EXPECT_FALSE(body[2]->loc.known());
  EXPECT_EQ(body[8]->loc.str(), "k.cpp:13");
  EXPECT_EQ(body[11]->loc.str(), "k.cpp:16");
  auto* vec = body[12].as<ScopeNode>();
  auto* loop = vec->body.as<SeqNode>()->stmts[2].as<ForNode>();
  EXPECT_EQ(loop->loc.str(), "k.cpp:32");
  auto* iff = loop->body.as<SeqNode>()->stmts[0].as<IfNode>();
  EXPECT_EQ(iff->loc.str(), "k.cpp:33");
  EXPECT_EQ(iff->else_case.as<SeqNode>()->stmts[0]->loc.str(), "k.cpp:36");
  // Allocated buffers record their statement's location too.
  EXPECT_EQ(body[0].as<AllocateNode>()->buffer->loc.str(), "k.cpp:5");

  // Paths with colons, ordinary comments, comment-only lines.
  PrimFunc g = parse(R"(# a leading comment
@T.prim_func
def g():  # @C:/src/g.cpp:7
    # a comment line
    with T.Kernel(1, is_npu=True) as (cid, vid):  # not a location
        T.barrier_all()  # @C:/src/g.cpp:12
)");
  EXPECT_EQ(g->loc.file, "C:/src/g.cpp");
  EXPECT_EQ(g->loc.line, 7);
  EXPECT_FALSE(g->body.as<SeqNode>()->stmts[0]->loc.known());
  auto* gk = g->body.as<SeqNode>()->stmts[0].as<KernelNode>();
  EXPECT_EQ(gk->body.as<SeqNode>()->stmts[0]->loc.str(), "C:/src/g.cpp:12");
}

TEST(Parser, AnyConsistentIndentationAndScoping) {
  PrimFunc f = parse(R"(@T.prim_func
def f(A: T.Tensor((8,), "int32")):
  with T.Kernel(2, is_npu=True) as (cid, vid):
        for i in T.serial(4):
         x = i + 1
         A[x] = x
        x = cid
        A[x] = 0
)");
  const auto& body = kernel_body(f);
  ASSERT_EQ(body.size(), 3u);
  auto* loop = body[0].as<ForNode>();
  auto* inner_let = loop->body.as<SeqNode>()->stmts[0].as<LetNode>();
  auto* outer_let = body[1].as<LetNode>();
  auto* store = body[2].as<StoreNode>();
  // The loop's `x` went out of scope with its block; the later `x` is the outer Let.
  EXPECT_TRUE(store->indices[0].same_as(outer_let->var));
  EXPECT_FALSE(store->indices[0].same_as(inner_let->var));
  EXPECT_EQ(print(f, {.locations = false}), R"(@T.prim_func
def f(A: T.Tensor((8,), "int32")):
    with T.Kernel(2, is_npu=True) as (cid, vid):
        for i in T.serial(4):
            x = i + 1
            A[x] = x
        x = cid
        A[x] = 0
)");
}

// ---- Malformed input --------------------------------------------------------------------------

constexpr std::string_view kHead = R"(@T.prim_func
def f(A: T.Tensor((64, 64), "float16")):
    with T.Kernel(4, is_npu=True) as (cid, vid):
        u = T.alloc_ub((16, 16), "float16")
)";

/// Parses kHead + `body`; the error must be at `pos` ("LINE:COL") and contain every fragment.
void expect_error(std::string_view text, std::string_view pos, std::vector<std::string> fragments,
                  bool with_head = true) {
  std::string src = with_head ? std::string(kHead) + std::string(text) : std::string(text);
  try {
    parse(src, "bad.tl");
    ADD_FAILURE() << "no error for:\n" << src;
  } catch (const Error& e) {
    std::string msg = e.what();
    std::string prefix = fmt::format("bad.tl:{}", pos);
    if (!pos.empty() && pos.back() != ':') prefix += ": ";
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << msg << "\n  does not start with " << prefix;
    for (const auto& f : fragments)
      EXPECT_NE(msg.find(f), std::string::npos) << msg << "\n  lacks: " << f;
  }
}

TEST(ParserErrors, ReportLineColumnExpectedAndGot) {
  expect_error("", "1:1", {"expected '@T.prim_func', got end of input"}, false);
  expect_error("def f():\n    pass\n", "1:1", {"expected '@T.prim_func', got 'def'"}, false);
  expect_error("@T.prim_func\ndef f(A: T.Tensor((4,) \"int32\")):\n    pass\n", "2:24",
               {"expected ',', got string \"int32\""}, false);
  expect_error("        for i in T.serial(4)\n            pass\n", "5:29",
               {"expected ':', got end of line"});
  expect_error("        x = y + 1\n", "5:13", {"undefined name 'y'"});
  expect_error("        T.frobnicate(u)\n", "5:11", {"unknown tile primitive 'T.frobnicate'"});
  expect_error("        T.copy(1, u)\n", "5:11", {"T.copy: operand 'src' must be a buffer"});
  expect_error("        T.copy(A, u, bogus=True)\n", "5:11", {"T.copy has no attribute 'bogus'"});
  expect_error("        T.reduce_sum(u, u, dim=0, u)\n", "5:35",
               {"expected an attribute 'name=value'", "got 'u'"});
  expect_error("        v = T.alloc_ub((16,), \"float17\")\n", "5:31",
               {"expected a dtype string", "got string \"float17\""});
  expect_error("        T.set_flag(\"MTE9\", \"V\", 0)\n", "5:20",
               {"expected a pipe", "got string \"MTE9\""});
  expect_error("        T.pipe_barrier(\"V)\n", "5:27",
               {"expected the closing \" of the string, got end of line"});
  expect_error("        x = 1 < 2 < 3\n", "5:19", {"expected no second comparison", "got '<'"});
  expect_error("        for i in T.serial(4):\n          x = 1\n            y = 2\n", "7:13",
               {"expected a statement, got an indented block"});
  expect_error("        for i in T.serial(4):\n            x = 1\n          y = 2\n", "7:11",
               {"expected an indentation of 8 spaces", "got 10"});
  expect_error("        x = 1\n\ty = 2\n", "6:1", {"expected spaces for indentation, got a tab"});
  expect_error("        T.barrier_all() 5\n", "5:25", {"expected end of line, got number 5"});
  expect_error("        cid[0] = 1\n", "5:9", {"expected a buffer, got scalar variable 'cid'"});
  expect_error("        x = u + 1\n", "5:13", {"expected a scalar expression, got buffer 'u'"});
  expect_error("        x = 99999999999999999999\n", "5:13",
               {"expected an integer literal below 2^64"});
  expect_error("        x = 9223372036854775808\n", "5:13", {"out of range for int32"});
  expect_error("        x = 1e999\n", "5:13", {"expected a float literal in range, got 1e999"});
  expect_error("        x = T.exp(1.0, 2.0)\n", "5:15", {"expected 1 argument for T.exp, got 2"});
  expect_error("        x = T.frob(1)\n", "5:15", {"unknown function 'T.frob'"});
  expect_error("        x = float(\"infinity\")\n", "5:19",
               {"expected \"inf\", \"-inf\" or \"nan\""});
  expect_error("        x = u[0:4, 0:4]\n", "5:16", {"expected ']', got ':'"});
  expect_error("        for i in T.Pipelined(4):\n            pass\n", "5:31",
               {"expected 'num_stages='"});
  expect_error("        with T.Scope(\"Tensor\"):\n            pass\n", "5:22",
               {"expected \"Cube\" or \"Vector\", got string \"Tensor\""});
  expect_error("        T.set_cross_flag(\"FIX\", 0, mode=3)\n", "5:41",
               {"expected mode in [0, 2], got 3"});
  expect_error("        for = 3\n", "5:13", {"expected a loop variable name, got '='"});
  expect_error("        x = 1 $ 2\n", "5:15",
               {"expected a name, number, string or operator, got '$'"});
  expect_error("        pass\n@T.prim_func\n", "6:1", {"expected end of input"});
  expect_error("        x = (1 + 2\n", "6:1", {"expected ')', got end of line"});
}

TEST(ParserErrors, DepthIsCapped) {
  std::string deep_parens =
      "        x = " + std::string(300, '(') + "1" + std::string(300, ')') + "\n";
  expect_error(deep_parens, "5:", {"nested too deeply"});
  std::string long_chain = "        x = 1";
  for (int i = 0; i < 100000; ++i) long_chain += " + 1";
  expect_error(long_chain + "\n", "5:", {"nested too deeply"});
  std::string minus = "        x = " + std::string(5000, '-') + "cid\n";
  expect_error(minus, "5:", {"nested too deeply"});
  std::string nots = "        x = ";
  for (int i = 0; i < 5000; ++i) nots += "not ";
  expect_error(nots + "True\n", "5:", {"nested too deeply"});
  std::string blocks;
  for (int i = 0; i < 300; ++i) blocks += std::string(8 + 4 * i, ' ') + "if True:\n";
  blocks += std::string(8 + 4 * 300, ' ') + "pass\n";
  expect_error(blocks, "", {"blocks nested too deeply"});
}

}  // namespace
}  // namespace tl
