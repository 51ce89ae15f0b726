// The Prover's recordings (tl/replay.h, replay::Prover; docs/compiler.md, "Compile latency"): a
// Prover records each op execution's events on the bodies as they are and builds a rewrite's
// streams from them, so every recording its questions read must hold the stream its ranges point
// into. The recordings take the replayed streams by move, not by copy; the recording of the
// attempt at one set of streams for every block is kept when that attempt fails (a rewrite's
// attempt then fails the same way), and it must hold the streams of the cores that succeeded
// before the one that failed. These tests ask the questions that read such a recording.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "tl/error.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/parser.h"
#include "tl/replay.h"

namespace tl {
namespace {

/// The kernel's Cube and Vector scope bodies, and the kernel.
const KernelNode* scopes(const PrimFunc& f, std::array<Stmt, 2>& bodies) {
  const KernelNode* k = nullptr;
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (auto* n = s.as<KernelNode>()) k = n;
    if (auto* sc = s.as<ScopeNode>()) bodies[sc->core == CoreKind::Cube ? 0 : 1] = sc->body;
  });
  return k;
}

/// Two blocks; the Cube refills L1 in a loop of `trips` (its walk needs no cid; MTE2 may overlap
/// itself: a barrier orders the refills), the Vector
/// scope's flag pair runs only in block 0 (`cid < 1`, which the walk with cid unknown cannot
/// decide). The attempt at one set of streams for both blocks unrolls the Cube, then fails on
/// AIV 0's decision; the blocks then split into the cid ranges [0, 0] and [1, 1].
std::string cube_then_undecided_vector(int trips) {
  return R"(@T.prim_func
def cube_then_undecided_vector(A: T.Tensor((16, 16), "float16")):
    with T.Kernel(2, is_npu=True) as (cid, vid):
        with T.Scope("Cube"):
            a = T.alloc_L1((16, 16), "float16", address=0)
            for k in T.serial()" +
         std::to_string(trips) + R"():
                T.copy(A[0:16, 0:16], a)
                T.pipe_barrier("MTE2", auto=True)
        with T.Scope("Vector"):
            u = T.alloc_ub((16, 16), "float32", address=0)
            if cid < 1:
                T.set_flag("V", "MTE2", 0, auto=True)
                T.wait_flag("V", "MTE2", 0, auto=True)
            T.tile.add(u, u, u)
)";
}

// A question first walks the rewrite over the failed attempt's recording (Prover::streams): the
// Cube's op executions are taken from it. Before the fix the recording of that attempt kept no
// stream for the Cube (it succeeded; only the failing core's was kept, and the Cube's, returned
// for the attempt, was dropped with it), so the question copied events out of an empty stream
// (python/tests/test_tla_cross_read_order.py crashed in guard_loop_credits).
TEST(ReplayProver, AFailedAttemptKeepsTheStreamsOfTheCoresBeforeTheFailure) {
  for (int trips : {1, 7, 33}) {
    SCOPED_TRACE("trips " + std::to_string(trips));
    PrimFunc f = parse(cube_then_undecided_vector(trips));
    std::array<Stmt, 2> bodies;
    const KernelNode* k = scopes(f, bodies);
    ASSERT_NE(k, nullptr);
    ASSERT_FALSE(replay::unroll_block(*k, bodies[0], bodies[1], default_target(), {}, true));
    ASSERT_EQ(
        replay::unroll_blocks(*k, bodies[0], bodies[1], default_target(), {}, true, 64).size(), 2u);
    for (bool on : {true, false}) {
      replay::set_shortcuts(on);
      replay::Prover prover(*k, bodies.data(), default_target(), 64, 5'000'000);
      bool clean = false, holds = false;
      EXPECT_NO_THROW({
        clean = prover.clean();
        holds = prover.holds(bodies.data());  // the same bodies: a rewrite that changes nothing
      });
      replay::set_shortcuts(true);
      SCOPED_TRACE(on ? "shortcuts on" : "shortcuts off");
      EXPECT_TRUE(clean);
      EXPECT_TRUE(holds);
    }
  }
}

}  // namespace
}  // namespace tl
