// Verifier: synchronization rules and symbol scoping.
#include "verify_test_util.h"

#include "tl/ir_ops.h"

namespace tl {
namespace {
using testing::Clean;
using testing::cube_kernel;
using testing::kernel;
using testing::Reports;
using testing::vector_kernel;

TEST(VerifySync, EventIdNine) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    bad = __LINE__ + 1;
    T::set_flag(Pipe::MTE2, Pipe::V, 9);
  });
  EXPECT_TRUE(Reports(f, "event-id-range", "T.set_flag", "event_id", bad));
}

// Found by fuzz_ir_launch (fuzz/regressions/ir_launch/event_id_constant_expression.ir): an
// event id written as a constant expression passed the verifier, then simplify folded it to
// 210 and the pass manager's invariant check failed. Constants are judged folded.
TEST(VerifySync, EventIdAsAConstantExpression) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    bad = __LINE__ + 1;
    T::set_flag(Pipe::MTE2, Pipe::V, BinaryNode::make(BinOp::Sub, Expr(255), Expr(45)));
    T::wait_flag(Pipe::MTE2, Pipe::V, BinaryNode::make(BinOp::Sub, Expr(255), Expr(45)));
  });
  EXPECT_TRUE(Reports(f, "event-id-range", "T.set_flag", "event_id", bad));
}

// Issue 29: ids 6 and 7 were "reserved by the runtime on A2" (flash_attn_bhsd_expert_h16_d128.py
// was rejected at its set_flag("FIX", "M", 6)). AscendC's SetFlag/WaitFlag page gives A2 / A3 /
// 950 event ids 0-7 for hand-written flags; only TPipe/TQue code must take them from
// AllocEventID/FetchEventID, and TileLang-Ascend's kernels use TBufs, no TQue.
TEST(VerifySync, EventIdsSixAndSevenAreTheAuthors) {
  auto f = vector_kernel({}, [&] {
    T::set_flag(Pipe::V, Pipe::MTE3, 6);
    T::wait_flag(Pipe::V, Pipe::MTE3, 6);
    T::set_flag(Pipe::MTE2, Pipe::V, 7);
    T::wait_flag(Pipe::MTE2, Pipe::V, 7);
  });
  EXPECT_TRUE(Clean(f));
}

TEST(VerifySync, PipePairWithoutHardEvent) {
  int bad = 0;
  auto f = cube_kernel({}, [&] {
    bad = __LINE__ + 1;
    T::set_flag(Pipe::MTE1, Pipe::S, 0);
  });
  EXPECT_TRUE(Reports(f, "hard-event", "T.set_flag", "pipes", bad));
}

TEST(VerifySync, CubePipeInVectorScope) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    bad = __LINE__ + 1;
    T::set_flag(Pipe::MTE1, Pipe::V, 0);
  });
  EXPECT_TRUE(Reports(f, "pipe-core", "T.set_flag", "src", bad));
}

TEST(VerifySync, BarrierOnScalarPipe) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    bad = __LINE__ + 1;
    T::pipe_barrier(Pipe::S);
  });
  EXPECT_TRUE(Reports(f, "pipe-barrier-pipe", "T.pipe_barrier", "pipe", bad));
}

TEST(VerifySync, FlagOutsideScope) {
  int bad = 0;
  auto f = kernel({}, [&] {
    bad = __LINE__ + 1;
    T::set_flag(Pipe::MTE2, Pipe::V, 0);
  });
  EXPECT_TRUE(Reports(f, "op-outside-scope", "T.set_flag", "", bad));
}

TEST(VerifySync, CrossFlagId16) {
  int bad = 0;
  auto f = cube_kernel({}, [&] {
    bad = __LINE__ + 1;
    T::set_cross_flag(Pipe::FIX, 16, 2);
  });
  EXPECT_TRUE(Reports(f, "cross-flag-id-range", "T.set_cross_flag", "event_id", bad));
}

TEST(VerifySync, CrossFlagIdOfSyncAll) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    bad = __LINE__ + 1;
    T::wait_cross_flag(12);
  });
  EXPECT_TRUE(Reports(f, "cross-flag-reserved", "T.wait_cross_flag", "event_id", bad));
}

TEST(VerifySync, CrossFlagMode3) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    bad = __LINE__ + 1;
    T::set_cross_flag(Pipe::MTE3, 0, 3);
  });
  EXPECT_TRUE(Reports(f, "cross-flag-mode", "T.set_cross_flag", "mode", bad));
}

TEST(VerifySync, CrossFlagOnScalarPipe) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    bad = __LINE__ + 1;
    T::set_cross_flag(Pipe::S, 0, 2);
  });
  EXPECT_TRUE(Reports(f, "cross-flag-pipe", "T.set_cross_flag", "pipe", bad));
}

TEST(VerifySymbols, LoopVarUsedAfterItsLoop) {
  int bad = 0;
  auto X = T::Tensor("X", {64, 64}, f32);
  auto f = vector_kernel({X}, [&] {
    auto x = T::alloc_ub("x", {1, 64}, f32);
    Expr leaked;
    T::serial(64, [&](Expr i) {
      leaked = i;
      T::copy(X.region({i, 0}, {1, 64}), x);
    });
    bad = __LINE__ + 1;
    T::copy(x, X.region({leaked, 0}, {1, 64}));
  });
  EXPECT_TRUE(Reports(f, "undefined-var", "T.copy", "dst", bad));
}

TEST(VerifySymbols, VarNeverBound) {
  int bad = 0;
  Var ghost("ghost");
  auto f = vector_kernel({}, [&] {
    auto x = T::alloc_ub("x", {64}, f32);
    bad = __LINE__ + 1;
    T::tile::fill(x, cast(f32, ghost));
  });
  EXPECT_TRUE(Reports(f, "undefined-var", "T.tile.fill", "value", bad));
}

TEST(VerifySymbols, BufferUsedOutsideItsBlock) {
  int bad = 0;
  auto f = vector_kernel({}, [&] {
    Buffer inner;
    T::serial(4, [&](Expr) { inner = T::alloc_ub("inner", {64}, f32); });
    bad = __LINE__ + 1;
    T::tile::exp(inner, inner);
  });
  EXPECT_TRUE(Reports(f, "undefined-buffer", "T.tile.exp", "dst", bad));
}

TEST(VerifySymbols, BufferFromTheOtherScope) {
  int bad = 0;
  auto f = kernel({}, [&] {
    Buffer l1;
    T::Scope(Core::Cube, [&] { l1 = T::alloc_L1("l1", {16, 16}, f16); });
    T::Scope(Core::Cube, [&] {
      bad = __LINE__ + 1;
      T::dump_tensor(l1);
    });
  });
  EXPECT_TRUE(Reports(f, "undefined-buffer", "T.dump_tensor", "src", bad));
}

TEST(VerifySymbols, VarBoundTwice) {
  // Hand-built: the same Var bound by a loop nested in a loop over it.
  Var i("i");
  SourceLoc outer{"tests/verify/hand.cpp", 20}, inner{"tests/verify/hand.cpp", 21};
  Stmt body = ForNode::make(i, 0, 4, ForKind::Serial, 0, SeqNode::make({}), inner);
  Stmt loop = ForNode::make(i, 0, 4, ForKind::Serial, 0, SeqNode::make({body}), outer);
  Stmt k = KernelNode::make(1, Var("cid"), Var("vid"), SeqNode::make({loop}), outer);
  auto f = make_prim_func("k", {}, {}, SeqNode::make({k}));
  EXPECT_TRUE(Reports(f, "rebound-symbol", "T.serial", "i", 21));
}

}  // namespace
}  // namespace tl
