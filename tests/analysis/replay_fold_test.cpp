// The replay's loop fold (replay_run.cpp, Replayer::probe; docs/compiler.md, "Compile latency"):
// where the state with core 0 about to run a statement again is the state of its last visit,
// every clock moved by its timeline's issue count, and the events after it repeat that period,
// the replay skips the periods that follow. It must give every answer the replay without it
// gives (replay::set_shortcuts(false)), and must not skip where the periods differ: an iteration
// whose flags differ, a tail iteration that writes without a sync, and loops of one and two
// iterations (no period to compare). Each kernel is also lowered through elide_implied_syncs both
// ways, and the printed IR compared.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "tl/ir_functor.h"
#include "tl/parser.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/replay.h"

namespace tl {
namespace {

/// A Vector scope that streams `n` row tiles of A through one UB buffer (MTE2 writes it, V
/// reads and writes it, a credit V -> MTE2 across the back edge), then writes it to B. `wait`
/// and `tail` are statements put at the head of the loop's V part and after it.
std::string looped_kernel(int n, const std::string& wait, const std::string& tail = "") {
  const std::string rows = std::to_string(n * 16);
  return R"(@T.prim_func
def looped(A: T.Tensor(()" +
         rows + R"(, 16), "float32"), B: T.Tensor((32, 16), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((16, 16), "float32", address=0)
            T.set_flag("V", "MTE2", 0, auto=True)
            for k in T.serial()" +
         std::to_string(n) + R"():
                T.wait_flag("V", "MTE2", 0, auto=True)
                T.copy(A[k * 16:k * 16 + 16, 0:16], x)
                T.set_flag("MTE2", "V", 1, auto=True)
)" + wait +
         R"(                T.tile.add(x, x, x)
                T.set_flag("V", "MTE2", 0, auto=True)
)" + tail +
         R"(            T.wait_flag("V", "MTE2", 0, auto=True)
            T.set_flag("V", "MTE3", 2, auto=True)
            T.wait_flag("V", "MTE3", 2, auto=True)
            T.copy(x, B[vid * 16:vid * 16 + 16, 0:16])
)";
}

const std::string kWait = "                T.wait_flag(\"MTE2\", \"V\", 1, auto=True)\n";

struct Answer {
  bool ordered = false;
  size_t skipped = 0;
};

/// The replay of the kernel's streams (every conflicting pair ordered, every set consumed), with
/// the fold or without it.
Answer replayed(const PrimFunc& f, bool fold) {
  const KernelNode* k = nullptr;
  std::array<Stmt, 2> bodies;
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (auto* n = s.as<KernelNode>()) k = n;
    if (auto* sc = s.as<ScopeNode>()) bodies[sc->core == CoreKind::Cube ? 0 : 1] = sc->body;
  });
  EXPECT_NE(k, nullptr);
  if (!k) return {};
  auto s = replay::unroll_block(*k, bodies[0], bodies[1], default_target(), {}, true);
  EXPECT_TRUE(s.has_value());
  if (!s) return {};
  Answer a;
  replay::Query q;
  q.accesses = q.balanced = true;
  q.skipped = &a.skipped;
  replay::set_shortcuts(fold);
  a.ordered = replay::replay(*s, {}, q);
  replay::set_shortcuts(true);
  return a;
}

/// The kernel after elide_implied_syncs, with the replay's shortcuts or without them.
std::string elided(const PrimFunc& f, bool shortcuts) {
  replay::set_shortcuts(shortcuts);
  std::string out = print(elide_implied_syncs(f, default_target()));
  replay::set_shortcuts(true);
  return out;
}

// 50 alike iterations: the fold skips most of them, with the answer of the replay without it.
TEST(ReplayFold, SkipsAlikeIterationsWithTheSameAnswer) {
  PrimFunc f = parse(looped_kernel(50, kWait));
  const Answer with = replayed(f, true), without = replayed(f, false);
  EXPECT_TRUE(with.ordered);
  EXPECT_TRUE(without.ordered);
  EXPECT_GE(with.skipped, 40u);
  EXPECT_LE(with.skipped, 48u);  // at least a period to compare and the last one to run
  EXPECT_EQ(without.skipped, 0u);
  EXPECT_EQ(elided(f, true), elided(f, false));
}

// Iteration 30 does not wait for its copy: its add is unordered after the copy, which only that
// iteration shows. The fold must not skip over it (the replay fails, as without the fold).
TEST(ReplayFold, RefusesWhereAnIterationDiffersInAFlag) {
  const std::string wait = "                if k != 30:\n    " + kWait;
  PrimFunc f = parse(looped_kernel(50, wait));
  const Answer with = replayed(f, true), without = replayed(f, false);
  EXPECT_FALSE(without.ordered);
  EXPECT_FALSE(with.ordered);
  EXPECT_LT(with.skipped, 30u);
  EXPECT_EQ(elided(f, true), elided(f, false));
  // A difference that orders more (iteration 30 alone raises and waits for a flag of its own):
  // ordered both ways, the periods before and after it folded apart.
  const std::string extra = kWait +
                            "                if k == 30:\n"
                            "                    T.set_flag(\"V\", \"MTE2\", 3, auto=True)\n"
                            "                    T.wait_flag(\"V\", \"MTE2\", 3, auto=True)\n";
  PrimFunc g = parse(looped_kernel(50, extra));
  const Answer g_with = replayed(g, true), g_without = replayed(g, false);
  EXPECT_TRUE(g_without.ordered);
  EXPECT_TRUE(g_with.ordered);
  EXPECT_GT(g_with.skipped, 0u);
  EXPECT_LE(g_with.skipped, 46u);  // iteration 30 and those compared around it run
  EXPECT_EQ(elided(g, true), elided(g, false));
}

// The last iteration alone refills x on MTE2 after the add without a sync: a conflict only the
// tail shows, which the fold must stop before.
TEST(ReplayFold, RefusesOverATailIteration) {
  const std::string tail =
      "                if k == 49:\n"
      "                    T.copy(A[0:16, 0:16], x)\n";
  PrimFunc f = parse(looped_kernel(50, kWait, tail));
  const Answer with = replayed(f, true), without = replayed(f, false);
  EXPECT_FALSE(without.ordered);
  EXPECT_FALSE(with.ordered);
  EXPECT_GE(with.skipped, 40u);  // folded up to the tail, which runs
  EXPECT_EQ(elided(f, true), elided(f, false));
}

// One and two iterations: no period repeats, nothing is skipped.
TEST(ReplayFold, NothingToFoldInOneOrTwoIterations) {
  for (int n : {1, 2}) {
    SCOPED_TRACE(n);
    PrimFunc f = parse(looped_kernel(n, kWait));
    const Answer with = replayed(f, true), without = replayed(f, false);
    EXPECT_TRUE(with.ordered);
    EXPECT_TRUE(without.ordered);
    EXPECT_EQ(with.skipped, 0u);
    EXPECT_EQ(elided(f, true), elided(f, false));
  }
}

}  // namespace
}  // namespace tl
