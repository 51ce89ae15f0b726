// Unit tests of the access analysis (tl/access.h): a tile op's instructions, pipes and operand
// uses come from its OpDef alone -- the one default instruction of a copy and of a vector op,
// gemm_v0's template of barriers, scratch areas and a scalar operand, a variadic operand's
// every argument -- and touches_of says which buffers a statement reads and writes on which
// pipe, the accumulator of an mma(init=True) written only.
#include <gtest/gtest.h>

#include "tl/access.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/ops.h"

namespace tl {
namespace {

using analysis::Use;

Buffer tile(const char* name, MemScope s, int64_t rows = 16, int64_t cols = 16) {
  return BufferNode::make(name, DType::Float16, {Expr(rows), Expr(cols)}, s);
}
const TileOpNode& op_of(const Stmt& s) {
  return *s.as<TileOpNode>();
}

TEST(Access, CopyIsOneInstructionOnItsPathsPipe) {
  const Target& t = get_target("A2");
  Stmt in = make_tile_op(ops::copy(), {tile("g", MemScope::GM), tile("u", MemScope::UB)}, {}, {});
  auto is = analysis::instructions(op_of(in), t);
  ASSERT_EQ(is.size(), 1u);
  EXPECT_EQ(is[0].pipe, Pipe::MTE2);
  ASSERT_EQ(is[0].uses.size(), 2u);
  EXPECT_EQ(is[0].uses[0].kind, Use::Region);
  EXPECT_EQ(is[0].uses[0].arg, 0);
  EXPECT_TRUE(is[0].uses[0].read && !is[0].uses[0].write);
  EXPECT_EQ(is[0].uses[1].arg, 1);
  EXPECT_TRUE(!is[0].uses[1].read && is[0].uses[1].write);
  Stmt out = make_tile_op(ops::copy(), {tile("u", MemScope::UB), tile("g", MemScope::GM)}, {}, {});
  EXPECT_EQ(analysis::instructions(op_of(out), t)[0].pipe, Pipe::MTE3);
}

TEST(Access, VectorOpWritesItsDestinationOnV) {
  const Target& t = get_target("A2");
  Stmt add = make_tile_op(
      ops::tile::add(), {tile("d", MemScope::UB), tile("a", MemScope::UB), tile("b", MemScope::UB)},
      {}, {});
  auto is = analysis::instructions(op_of(add), t);
  ASSERT_EQ(is.size(), 1u);
  EXPECT_EQ(is[0].pipe, Pipe::V);
  int writes = 0, reads = 0;
  for (const Use& u : is[0].uses) {
    EXPECT_EQ(u.kind, Use::Region);
    writes += u.write, reads += u.read;
    if (u.write) {
      EXPECT_EQ(u.arg, 0);
    }
  }
  EXPECT_EQ(writes, 1);
  EXPECT_EQ(reads, 2);
}

TEST(Access, GemmV0TemplateBarriersScratchAndScalar) {
  const Target& t = get_target("A2");
  Stmt g = make_tile_op(ops::gemm_v0(),
                        {tile("a", MemScope::L1), tile("b", MemScope::L1), tile("c", MemScope::L0C),
                         TileArg(Expr(1))},
                        {}, {});
  auto is = analysis::instructions(op_of(g), t);
  ASSERT_EQ(is.size(), 5u);  // barrier, load, barrier, mmad, barrier
  for (size_t i : {0, 2, 4}) {
    EXPECT_TRUE(is[i].barrier_all);
    EXPECT_TRUE(is[i].uses.empty());
  }
  EXPECT_EQ(is[1].pipe, Pipe::MTE1);
  EXPECT_EQ(is[1].index, 1u);
  // A, B read; L0A, L0B scratch written; the scalar init read on the load's pipe.
  ASSERT_EQ(is[1].uses.size(), 5u);
  EXPECT_EQ(is[1].uses[2].kind, Use::Scratch);
  EXPECT_EQ(is[1].uses[2].scratch, MemScope::L0A);
  EXPECT_TRUE(is[1].uses[2].write && !is[1].uses[2].read);
  EXPECT_EQ(is[1].uses[4].kind, Use::Scalar);
  EXPECT_EQ(is[1].uses[4].arg, 3);
  // The mmad reads the scratch areas and reads and writes C.
  EXPECT_EQ(is[3].pipe, Pipe::M);
  ASSERT_EQ(is[3].uses.size(), 3u);
  EXPECT_EQ(is[3].uses[2].arg, 2);
  EXPECT_TRUE(is[3].uses[2].read && is[3].uses[2].write);
}

TEST(Access, VariadicOperandUsesEveryArgument) {
  const Target& t = get_target("A2");
  Var x("x");
  Stmt p = make_tile_op(ops::printf(), {TileArg(Expr(x)), TileArg(Expr(2)), TileArg(Expr(3))},
                        {{"fmt", std::string("%d %d %d")}}, {});
  auto is = analysis::instructions(op_of(p), t);
  ASSERT_EQ(is.size(), 1u);
  ASSERT_EQ(is[0].uses.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(is[0].uses[i].kind, Use::Scalar);
    EXPECT_EQ(is[0].uses[i].arg, i);
  }
}

TEST(Access, TouchesOfStatementsAndMmadInit) {
  const Target& t = get_target("A2");
  Buffer a = tile("a", MemScope::L0A), b = tile("b", MemScope::L0B), c = tile("c", MemScope::L0C);
  auto c_access = [&](int init) {
    Stmt m = make_tile_op(ops::mma(), {a, b, c, TileArg(Expr(init))}, {}, {});
    for (const analysis::Touch& x : analysis::touches_of(m, t))
      if (x.buffer == c.get()) {
        EXPECT_EQ(x.pipe, Pipe::M);
        return std::make_pair(x.read, x.write);
      }
    return std::make_pair(false, false);
  };
  EXPECT_EQ(c_access(1), std::make_pair(false, true));  // init=True: C only written
  EXPECT_EQ(c_access(0), std::make_pair(true, true));
  // Scalar loads and stores are the scalar pipe's.
  Buffer s = BufferNode::make("s", DType::Int32, {Expr(4)}, MemScope::UB);
  Stmt st = StoreNode::make(s, {Expr(0)}, LoadNode::make(s, {Expr(1)}));
  auto ts = analysis::touches_of(st, t);
  ASSERT_EQ(ts.size(), 2u);
  for (const auto& x : ts) {
    EXPECT_EQ(x.buffer, s.get());
    EXPECT_EQ(x.pipe, Pipe::S);
  }
}

TEST(Access, BytesBetweenTheCornersOfARegion) {
  // Row-major UB, fp16 16x16: rows 2..3 are bytes [64, 128); one element is its 2 bytes.
  EXPECT_EQ(analysis::bytes_between(MemScope::UB, DType::Float16, {16, 16}, {2, 0}, {3, 15}),
            std::make_pair(int64_t{64}, int64_t{128}));
  EXPECT_EQ(analysis::bytes_between(MemScope::UB, DType::Float32, {4, 8}, {1, 3}, {1, 3}),
            std::make_pair(int64_t{44}, int64_t{48}));
  // A fractal L1 tile: the corners' bytes bound the region, the whole tile is the widest.
  auto whole = analysis::bytes_between(MemScope::L1, DType::Float16, {32, 32}, {0, 0}, {31, 31});
  EXPECT_EQ(whole, std::make_pair(int64_t{0}, int64_t{32 * 32 * 2}));
}

}  // namespace
}  // namespace tl
