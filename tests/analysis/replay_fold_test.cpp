// The replay's loop fold (replay_run.cpp, Replayer::probe; docs/compiler.md, "Compile latency"):
// where the state with core 0 about to run a statement again is the state of its last visit,
// every clock moved by its timeline's issue count, and the events after it repeat that period,
// the replay skips the periods that follow. It must give every answer the replay without it
// gives (replay::set_shortcuts(false)), and must not skip where the periods differ: an iteration
// whose flags differ, a tail iteration that writes without a sync, and loops of one and two
// iterations (no period to compare). Each kernel is also lowered through elide_implied_syncs both
// ways, and the printed IR compared. The slot check of elide_channel_credits folds as well.
#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <string>
#include <vector>

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

/// A channel of `slots` slots as elide_channel_credits replays it (no accesses): the AIC pushes
/// `n` tiles (FIX), each announced by cross flag 0; each AIV pops every tile (MTE2) and raises
/// the credit, cross flag 1, which the AIC waits for before it overwrites a slot. `waits`: the
/// pushes (from the slots-th on) that wait for their credit.
struct Channel {
  std::vector<Stmt> syncs;  // the statements the events point at (a probe reads them)
  replay::Streams streams;
};
Channel channel(int n, int slots, const std::function<bool(int)>& waits) {
  Channel c;
  for (int i = 0; i < 4; ++i)
    c.syncs.push_back(SyncNode::make(i % 2 ? SyncKind::WaitCrossFlag : SyncKind::SetCrossFlag,
                                     Pipe::FIX, Pipe::MTE2, Expr(int64_t{i / 2}), 2));
  auto ev = [&](replay::Event::Kind kind, int pipe, int id, int sync) {
    replay::Event e;
    e.kind = kind;
    e.pipe = pipe;
    e.id = id;
    if (sync >= 0) e.sync = c.syncs[static_cast<size_t>(sync)].as<SyncNode>();
    return e;
  };
  const int fix = static_cast<int>(Pipe::FIX), mte2 = static_cast<int>(Pipe::MTE2);
  for (int t = 0; t < n; ++t) {
    if (t >= slots && waits(t)) c.streams[0].push_back(ev(replay::Event::WaitCross, 0, 1, 3));
    replay::Event push = ev(replay::Event::Op, fix, 0, -1);
    push.channel = 0;
    push.push = push.first = true;
    c.streams[0].push_back(push);
    c.streams[0].push_back(ev(replay::Event::SetCross, fix, 0, 0));
    for (int v : {1, 2}) {
      c.streams[v].push_back(ev(replay::Event::WaitCross, 0, 0, 1));
      replay::Event pop = ev(replay::Event::Op, mte2, 0, -1);
      pop.channel = 0;
      c.streams[v].push_back(pop);
      c.streams[v].push_back(ev(replay::Event::SetCross, mte2, 1, 2));
    }
  }
  return c;
}

/// The slot check of channel 0 (elide_channel_credits' question, with `dropped` the credit's id
/// or -1), with the fold or without it.
Answer slot_checked(const Channel& c, int slots, int dropped, bool fold) {
  Answer a;
  replay::Query q;
  q.dropped_cross = dropped;
  q.slot_channel = 0;
  q.skipped = &a.skipped;
  replay::set_shortcuts(fold);
  a.ordered = replay::replay(c.streams, {{nullptr, slots, 1}}, q);
  replay::set_shortcuts(true);
  return a;
}

// The slot check folds too (its pops of the skipped periods rebuilt), and refuses where only the
// last push does not wait for its credit: that push overwrites a slot an AIV may still read.
TEST(ReplayFold, SlotCheckFoldsAndFindsATailOverwrite) {
  const int n = 60, slots = 2;
  const Channel every = channel(n, slots, [](int) { return true; });
  Answer with = slot_checked(every, slots, -1, true),
         without = slot_checked(every, slots, -1, false);
  EXPECT_TRUE(with.ordered);
  EXPECT_TRUE(without.ordered);
  EXPECT_GE(with.skipped, 25u);  // periods of two tiles: the AIC runs two ahead, then waits
  EXPECT_EQ(without.skipped, 0u);
  // Without the credit the AIC runs ahead: the third push overwrites before the first pops.
  EXPECT_FALSE(slot_checked(every, slots, 1, true).ordered);
  EXPECT_FALSE(slot_checked(every, slots, 1, false).ordered);
  const Channel tail = channel(n, slots, [&](int t) { return t + 1 < n; });
  with = slot_checked(tail, slots, -1, true);
  without = slot_checked(tail, slots, -1, false);
  EXPECT_FALSE(without.ordered);
  EXPECT_FALSE(with.ordered);
  EXPECT_GE(with.skipped, 25u);  // folded up to the tail
}

}  // namespace
}  // namespace tl
