// Property test of the one scoping rule (include/tl/ir.h: declarations bind to the end of the
// enclosing block; a Seq is only a list). Random expert kernels, many of them with symbols used
// outside their block, before their declaration, or wrapped in extra nested sequences, must get
// the same verdict from the verifier as their printed-and-parsed copy, and structurally equal
// functions must get the same verdict. This is the bug the rule fixes: the verifier used to open
// a scope per Seq while the printer and structural equality flattened them, so a pass that
// wrapped one Allocate in its own Seq produced a function that failed verification while its
// printed text (and the JIT cache's structurally equal twin) passed.
//
// The default run checks TL_SCOPING_ITERS=4000 random functions (well under a second).
#include <gtest/gtest.h>

#include <random>

#include "tl/ir_equal.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/npu/npu.h"
#include "tl/op.h"
#include "tl/parser.h"
#include "tl/printer.h"
#include "tl/verifier.h"

namespace tl {
namespace {

/// Random kernels over a small vocabulary: a GM tensor, UB tiles, scalar vars, Lets, loops,
/// ifs, tile ops and stores. Every symbol gets a unique name (as the DSL guarantees), and uses
/// pick from every symbol declared so far, in or out of scope.
class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  PrimFunc function() {
    names_ = 0;
    vars_.clear();
    bufs_.clear();
    gm_ = BufferNode::make("X", DType::Float32, {Expr(16), Expr(64)}, MemScope::GM);
    Var cid(fresh("cid")), vid(fresh("vid"));
    vars_.push_back(cid);
    vars_.push_back(vid);
    std::vector<Stmt> top;
    int n = 1 + pick(3);
    for (int i = 0; i < n; ++i) top.push_back(stmt(2));
    Stmt vector_body = block(std::move(top));
    Stmt body = seq({ScopeNode::make(CoreKind::Vector, vector_body)});
    Stmt kernel = KernelNode::make(Expr(2), cid, vid, body);
    return make_prim_func("k", {}, {Param{gm_, {}}}, seq({kernel}));
  }

  /// `f` with every statement list wrapped into random raw nested sequences (bypassing
  /// SeqNode::make's splicing): structurally equal to `f`.
  Stmt rewrap(const Stmt& s) {
    struct Wrap : IRMutator {
      Generator& g;
      explicit Wrap(Generator& gen) : g(gen) {}
      Stmt mutate_(const SeqNode* n, const Stmt& self) override {
        std::vector<Stmt> out;
        for (const auto& c : n->stmts) out.push_back(mutate(c));
        (void)self;
        // Group a random run of statements into an inner raw Seq.
        if (out.size() >= 1 && g.pick(2)) {
          size_t a = g.pick(static_cast<int>(out.size()));
          size_t b = a + 1 + g.pick(static_cast<int>(out.size() - a));
          std::vector<Stmt> inner(out.begin() + a, out.begin() + b);
          std::vector<Stmt> outer(out.begin(), out.begin() + a);
          outer.push_back(Stmt(std::make_shared<SeqNode>(std::move(inner), SourceLoc{})));
          outer.insert(outer.end(), out.begin() + b, out.end());
          out = std::move(outer);
        }
        return Stmt(std::make_shared<SeqNode>(std::move(out), n->loc));
      }
    } w(*this);
    return w.mutate(s);
  }

  int pick(int n) { return n <= 1 ? 0 : static_cast<int>(rng_() % static_cast<uint64_t>(n)); }

 private:
  std::string fresh(const char* base) { return fmt::format("{}{}", base, names_++); }

  /// A statement list: sometimes raw nested sequences, sometimes spliced ones.
  Stmt seq(std::vector<Stmt> stmts) { return SeqNode::make(std::move(stmts)); }
  Stmt block(std::vector<Stmt> stmts) {
    if (pick(3) == 0 && stmts.size() >= 2) {
      // An inner raw Seq inside the block: no scope of its own under the rule.
      size_t cut = 1 + pick(static_cast<int>(stmts.size() - 1));
      std::vector<Stmt> head(stmts.begin(), stmts.begin() + cut),
          tail(stmts.begin() + cut, stmts.end());
      std::vector<Stmt> both = {Stmt(std::make_shared<SeqNode>(std::move(head), SourceLoc{}))};
      both.insert(both.end(), tail.begin(), tail.end());
      return Stmt(std::make_shared<SeqNode>(std::move(both), SourceLoc{}));
    }
    return seq(std::move(stmts));
  }

  Expr int_expr() {
    if (!vars_.empty() && pick(3)) {
      Expr v = vars_[pick(static_cast<int>(vars_.size()))];
      return pick(2) ? v : BinaryNode::make(BinOp::Add, v, Expr(pick(4)));
    }
    return Expr(pick(8));
  }
  Buffer any_buffer() { return bufs_[pick(static_cast<int>(bufs_.size()))]; }

  Stmt stmt(int depth) {
    int k = pick(depth > 0 ? 9 : 6);
    switch (k) {
      case 0:
      case 1: {  // an Allocate, alone or wrapped with its first use in a raw Seq
        Buffer b =
            BufferNode::make(fresh("ub"), DType::Float32, {Expr(16), Expr(64)}, MemScope::UB);
        bufs_.push_back(b);
        Stmt alloc = AllocateNode::make(b);
        if (pick(2)) return alloc;
        std::vector<Stmt> wrapped = {alloc};
        if (pick(2))
          wrapped.push_back(make_tile_op("tile.fill", {TileArg(b), TileArg(Expr(1.0))}, {}, {}));
        return Stmt(std::make_shared<SeqNode>(std::move(wrapped), SourceLoc{}));
      }
      case 2: {  // a Let
        Var v(fresh("v"));
        Stmt s = LetNode::make(v, int_expr());
        vars_.push_back(v);
        return s;
      }
      case 3:
      case 4: {  // a tile op on any buffer declared so far (in scope or not)
        if (bufs_.empty()) return LetNode::make(Var(fresh("v")), int_expr());
        Buffer d = any_buffer(), s = any_buffer();
        if (pick(2)) return make_tile_op("tile.exp", {TileArg(d), TileArg(s)}, {}, {});
        return make_tile_op("tile.add", {TileArg(d), TileArg(s), TileArg(Expr(2.0))}, {}, {});
      }
      case 5: {  // a copy in or out of GM
        if (bufs_.empty()) return LetNode::make(Var(fresh("v")), int_expr());
        Buffer b = any_buffer();
        if (pick(2)) return make_tile_op("copy", {TileArg(gm_), TileArg(b)}, {}, {});
        return make_tile_op("copy", {TileArg(b), TileArg(gm_)}, {}, {});
      }
      case 6:
      case 7: {  // a loop whose body is a block
        Var i(fresh("i"));
        vars_.push_back(i);
        std::vector<Stmt> body;
        int n = 1 + pick(3);
        for (int j = 0; j < n; ++j) body.push_back(stmt(depth - 1));
        return ForNode::make(i, Expr(0), int_expr(), ForKind::Serial, 0, block(std::move(body)));
      }
      default: {  // an if/else
        std::vector<Stmt> t, e;
        for (int j = 0, n = 1 + pick(2); j < n; ++j) t.push_back(stmt(depth - 1));
        for (int j = 0, n = pick(2); j < n; ++j) e.push_back(stmt(depth - 1));
        Expr cond = BinaryNode::make(BinOp::LT, int_expr(), Expr(4));
        return IfNode::make(cond, block(std::move(t)), e.empty() ? Stmt() : block(std::move(e)));
      }
    }
  }

  std::mt19937_64 rng_;
  int names_ = 0;
  Buffer gm_;
  std::vector<Var> vars_;
  std::vector<Buffer> bufs_;
};

int iterations() {
  const char* v = std::getenv("TL_SCOPING_ITERS");
  return v && *v ? std::atoi(v) : 4000;
}

/// "valid" or the diagnostics.
std::string verdict(const PrimFunc& f) {
  auto ds = verify(f);
  return ds.empty() ? "valid" : "invalid";
}

TEST(ScopingProperty, VerifierAgreesWithPrintParseAndStructuralEquality) {
  Generator gen(20261130);
  int valid = 0, invalid = 0, unparsed = 0;
  const int n = iterations();
  for (int it = 0; it < n; ++it) {
    PrimFunc f = gen.function();
    std::string v = verdict(f);
    (v == "valid" ? valid : invalid)++;
    std::string text = print(f);
    // The printed text of an invalid function may not parse (a name used before or outside
    // its declaration is a parse error); that is the same verdict.
    PrimFunc g;
    try {
      g = parse(text);
    } catch (const Error&) {
      ++unparsed;
      ASSERT_EQ(v, "invalid") << "a valid function's text does not parse:\n" << text;
      continue;
    }
    ASSERT_EQ(v, verdict(g)) << "verify(f) and verify(parse(print(f))) disagree:\n"
                             << format_diagnostics(verify(f)) << "---\n"
                             << format_diagnostics(verify(g)) << "---\n"
                             << text;
    ASSERT_TRUE(structural_equal(f, g)) << first_difference(f, g) << "\n" << text;
    // A structurally equal twin with other block structure gets the same verdict and hash.
    PrimFunc twin = with_body(f, gen.rewrap(f->body));
    ASSERT_TRUE(structural_equal(f, twin));
    ASSERT_EQ(structural_hash(f), structural_hash(twin));
    ASSERT_EQ(v, verdict(twin)) << text;
  }
  // Both verdicts are well represented, so the property is not vacuous.
  EXPECT_GT(valid, n / 10) << valid << " valid of " << n;
  EXPECT_GT(invalid, n / 10) << invalid << " invalid of " << n;
  RecordProperty("functions", n);
  RecordProperty("valid", valid);
  RecordProperty("invalid_unparsable", unparsed);
}

TEST(ScopingProperty, SeqMakeSplicesNestedSequences) {
  Buffer b = BufferNode::make("b", DType::Float32, {Expr(8), Expr(64)}, MemScope::UB);
  Stmt alloc = AllocateNode::make(b);
  Stmt fill = make_tile_op("tile.fill", {TileArg(b), TileArg(Expr(0.0))}, {}, {});
  Stmt s = SeqNode::make({SeqNode::make({alloc}), Stmt(), fill});
  auto* q = s.as<SeqNode>();
  ASSERT_NE(q, nullptr);
  ASSERT_EQ(q->stmts.size(), 2u);
  EXPECT_TRUE(q->stmts[0].same_as(alloc));
  EXPECT_TRUE(q->stmts[1].same_as(fill));
}

/// The regression of the issue: one Allocate wrapped in its own sequence (what any pass that
/// expands a statement into several produces) used to fail verification while its printed
/// text passed, and the JIT cache matched the two.
TEST(ScopingProperty, AllocateInItsOwnSequenceVerifiesAndCompiles) {
  Buffer X = BufferNode::make("X", DType::Float32, {Expr(16), Expr(64)}, MemScope::GM);
  Buffer b = BufferNode::make("b", DType::Float32, {Expr(16), Expr(64)}, MemScope::UB);
  auto build = [&](bool raw_nesting) {
    Stmt alloc = AllocateNode::make(b);
    Stmt wrapped = raw_nesting
                       ? Stmt(std::make_shared<SeqNode>(std::vector<Stmt>{alloc}, SourceLoc{}))
                       : SeqNode::make({alloc});
    std::vector<Stmt> vec = {wrapped, make_tile_op("copy", {TileArg(X), TileArg(b)}, {}, {}),
                             SyncNode::make(SyncKind::SetFlag, Pipe::MTE2, Pipe::MTE3, Expr(0), 0),
                             SyncNode::make(SyncKind::WaitFlag, Pipe::MTE2, Pipe::MTE3, Expr(0), 0),
                             make_tile_op("copy", {TileArg(b), TileArg(X)}, {}, {})};
    Stmt body = ScopeNode::make(CoreKind::Vector, SeqNode::make(vec));
    Stmt k = KernelNode::make(Expr(1), Var("cid"), Var("vid"), SeqNode::make({body}));
    return make_prim_func("k", {}, {Param{X, {}}}, SeqNode::make({k}));
  };
  for (bool raw : {false, true}) {
    PrimFunc f = build(raw);
    EXPECT_TRUE(verify(f).empty()) << format_diagnostics(verify(f));
    EXPECT_TRUE(verify(parse(print(f))).empty());
    EXPECT_NO_THROW(compile(f, default_target(), {.cache = false}));
  }
}

}  // namespace
}  // namespace tl
