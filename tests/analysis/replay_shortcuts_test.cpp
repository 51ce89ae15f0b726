// The block replay's shortcuts (tl/replay.h, replay::set_shortcuts; docs/compiler.md, "Compile
// latency") must not change a single answer: one set of streams for the blocks whose decisions
// are each one value over cid's range, and a Prover block that walks as an earlier block does
// neither built nor replayed. Every registered developer kernel, at its defaults and at the
// shapes where the unrolled tile counts grow or the tail tiles differ between blocks (the shapes
// of docs/compiler.md's compile-time table and its tail shapes), is lowered with the shortcuts
// and without them; the printed IR must be the same byte for byte. The third shortcut, an `and`
// / `or` decided by one side (the guards of guard_loop_credits), and the fourth, every unit of
// guard_loop_credits guarded at once in one question (replay::Prover::holds_all), have tests of
// their own where they must refuse, as has the fifth, elide_implied_syncs' candidates screened and
// then asked in groups (replay::screen). The unroll's fold (a loop's alike middle iterations
// stored once, replay::Stream) is off with the shortcuts too; its own test compares the streams
// (tests/analysis/replay_unroll_fold_test.cpp).
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <string>
#include <vector>

#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/kernel_registry.h"
#include "tl/parser.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/replay.h"

namespace tl {
namespace {

struct Case {
  std::string kernel;
  std::map<std::string, std::string> sets;
};

/// The shapes of the compile-time benchmark and the tails (rows or panels not a multiple of the
/// tile, a last block with fewer tiles, pipelined loops with an odd count).
std::vector<Case> shapes() {
  return {
      {"gemm_dev", {{"M", "2048"}, {"N", "2048"}, {"K", "2048"}}},
      {"gemm_dev", {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}}},
      {"flash_attention_dev", {{"H", "16"}, {"S", "4096"}}},
      {"gemm_dev", {{"M", "1000"}, {"N", "777"}, {"K", "333"}}},
      {"gemm_dev", {{"M", "2048"}, {"N", "1024"}, {"K", "3000"}, {"num_stages", "3"}}},
      {"gemm_dev", {{"M", "1024"}, {"N", "2048"}, {"K", "1024"}, {"blocks", "7"}}},
      {"flash_attention_dev", {{"S", "273"}}},
      {"flash_attention_dev", {{"S", "1000"}, {"num_stages", "3"}}},
      {"flash_attention_dev", {{"S", "777"}, {"H", "3"}, {"num_stages", "4"}}},
      {"matmul_add_dev", {{"M", "100"}, {"N", "300"}, {"K", "70"}}},
      {"softmax_dev", {{"M", "1000"}, {"N", "333"}}},
      {"softmax_dev", {{"M", "4096"}, {"N", "4096"}, {"tiles", "22"}}},
      {"softmax_dev", {{"M", "1000"}, {"N", "1000"}, {"tiles", "7"}, {"num_stages", "3"}}},
      {"gelu_dev", {{"M", "16416"}, {"tiles", "171"}}},
      {"gelu_dev", {{"M", "1000"}, {"tiles", "7"}}},
      {"gelu_dev", {{"M", "4097"}, {"N", "33"}, {"tiles", "33"}}},
      {"rms_norm_dev", {{"M", "8192"}, {"N", "4096"}, {"tiles", "128"}}},
      {"rms_norm_dev", {{"M", "4097"}, {"N", "777"}, {"tiles", "33"}, {"dtype", "float16"}}},
      {"add_dev", {{"M", "4097"}, {"N", "33"}, {"bM", "7"}}},
      {"flash_attention_dev", {{"H", "12"}, {"S", "32768"}}},
      // Loops around the unroll's fold (tl/replay.h, Stream): 8 and 33 kv pairs, a long K loop.
      {"flash_attention_dev", {{"S", "1152"}}},
      {"flash_attention_dev", {{"S", "4352"}, {"H", "2"}}},
      {"gemm_dev", {{"M", "512"}, {"N", "512"}, {"K", "65536"}}},
      {"matmul_add_dev", {{"M", "100"}, {"N", "300"}, {"K", "7000"}}},
  };
}

bool developer(const PrimFunc& f) {
  bool dev = false;
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (auto* k = s.as<KernelNode>()) dev |= !k->vid.defined();
  });
  return dev;
}

std::string lowered(const PrimFunc& f, bool shortcuts) {
  replay::set_shortcuts(shortcuts);
  std::string out = print(lower(f, default_target()));
  replay::set_shortcuts(true);
  return out;
}

TEST(ReplayShortcuts, SameLoweredIrWithAndWithout) {
  std::vector<Case> cases;
  for (const KernelEntry* e : registered_kernels()) cases.push_back({e->name, {}});
  for (const Case& c : shapes()) cases.push_back(c);
  int developer_kernels = 0;
  for (const Case& c : cases) {
    PrimFunc f = build_kernel(find_kernel(c.kernel), c.sets);
    if (!developer(f)) continue;
    ++developer_kernels;
    std::string label = c.kernel;
    for (const auto& [k, v] : c.sets) label += " " + k + "=" + v;
    EXPECT_EQ(lowered(f, true), lowered(f, false)) << label;
  }
  EXPECT_GE(developer_kernels, 20);  // the registry's developer kernels and the shapes
}

// The shortcut applies where it should: gelu_dev with 171 row tiles per block reads cid in its
// trip count (min(rows - cid * 171, 171)), which is 171 for every one of its 24 blocks. One set
// of streams stands for the 24 (weight 24); without the shortcut each block has its own, and
// both replay clean.
TEST(ReplayShortcuts, OneSetForBlocksThatDecideAlike) {
  PrimFunc f = lower(build_kernel(find_kernel("gelu_dev"), {{"M", "16416"}, {"tiles", "171"}}),
                     default_target());
  const KernelNode* k = nullptr;
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (auto* n = s.as<KernelNode>()) k = n;
  });
  ASSERT_NE(k, nullptr);
  std::array<Stmt, 2> bodies;
  pre_order_visit(k->body, [&](const Stmt& s) {
    if (auto* sc = s.as<ScopeNode>()) bodies[sc->core == CoreKind::Cube ? 0 : 1] = sc->body;
  });
  replay::Query q;
  q.accesses = q.balanced = true;
  std::vector<int64_t> weights;
  auto one = replay::unroll_blocks(*k, bodies[0], bodies[1], default_target(), {}, true, 64, false,
                                   &weights);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(weights, std::vector<int64_t>{24});
  EXPECT_TRUE(replay::replay(one[0], {}, q));
  replay::set_shortcuts(false);
  auto each = replay::unroll_blocks(*k, bodies[0], bodies[1], default_target(), {}, true, 64, false,
                                    &weights);
  replay::set_shortcuts(true);
  ASSERT_EQ(each.size(), 24u);
  EXPECT_EQ(weights, std::vector<int64_t>(24, 1));
  for (const auto& b : each) {
    EXPECT_TRUE(replay::replay(b, {}, q));
    for (int c = 0; c < 3; ++c) EXPECT_EQ(b[c].size(), one[0][c].size());
  }
}

/// The kernel's Cube and Vector scope bodies, and the kernel.
const KernelNode* scopes(const PrimFunc& f, std::array<Stmt, 2>& bodies) {
  const KernelNode* k = nullptr;
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (auto* n = s.as<KernelNode>()) k = n;
    if (auto* sc = s.as<ScopeNode>()) bodies[sc->core == CoreKind::Cube ? 0 : 1] = sc->body;
  });
  return k;
}

/// A Vector scope whose flag pair sits under `cond` in a loop of 3 (k bound, n unknown).
std::string guarded_kernel(const std::string& cond) {
  return R"(@T.prim_func
def guarded(n: T.int32):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            u = T.alloc_ub((16, 16), "float32", address=0)
            for k in T.serial(3):
                if )" +
         cond + R"(:
                    T.set_flag("V", "MTE2", 0, auto=True)
                    T.wait_flag("V", "MTE2", 0, auto=True)
                T.tile.add(u, u, u)
)";
}

// The shortcut decides `k >= 0 or n // 4 > 0` by its first side (True, whatever n), as simplify
// folds it: the streams exist, the same both ways. With `4 // n`, which fails for n = 0, the
// other side can fail and simplify keeps it: the shortcut must refuse, and with n unknown the
// protocol is not static (no streams, both ways), as before the shortcut.
TEST(ReplayShortcuts, AnOrDecidedByOneSideOnlyWhereTheOtherCannotFail) {
  for (bool can_fail : {false, true}) {
    PrimFunc f = parse(guarded_kernel(can_fail ? "k >= 0 or 4 // n > 0" : "k >= 0 or n // 4 > 0"));
    std::array<Stmt, 2> bodies;
    const KernelNode* k = scopes(f, bodies);
    ASSERT_NE(k, nullptr);
    for (bool on : {true, false}) {
      replay::set_shortcuts(on);
      auto s = replay::unroll_block(*k, bodies[0], bodies[1], default_target(), {}, true);
      replay::set_shortcuts(true);
      SCOPED_TRACE(std::string(can_fail ? "can fail" : "cannot fail") + (on ? ", on" : ", off"));
      ASSERT_EQ(s.has_value(), !can_fail);
      if (s) {
        EXPECT_EQ((*s)[1].size(), 9u);  // 3 x (set, wait, add) on AIV 0
      }
    }
  }
}

/// Two loop credits as insert_syncs leaves them (MTE1 -> MTE2, ids 0 and 1, one per L1 buffer
/// the loop refills): guard_loop_credits' units. With `pre`, MTE1 reads `a` before the loop, and
/// only the pre-set of id 0 orders that read before the first refill of `a`: that unit must keep
/// its pre-set and drain, while the unit of id 1 is guarded.
std::string two_units(bool pre) {
  return R"(@T.prim_func
def two_units(A: T.Tensor((16, 16), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Cube"):
            a = T.alloc_L1((16, 16), "float16", address=0)
            b = T.alloc_L1((16, 16), "float16", address=512)
            a0 = T.alloc_L0A((16, 16), "float16", address=0)
            b0 = T.alloc_L0B((16, 16), "float16", address=0)
)" + std::string(pre ? "            T.copy(a, a0)\n" : "") +
         R"(            T.set_flag("MTE1", "MTE2", 0, auto=True)
            T.set_flag("MTE1", "MTE2", 1, auto=True)
            for k in T.serial(3):
                T.wait_flag("MTE1", "MTE2", 0, auto=True)
                T.copy(A[0:16, 0:16], a)
                T.set_flag("MTE2", "MTE1", 0, auto=True)
                T.wait_flag("MTE1", "MTE2", 1, auto=True)
                T.copy(A[0:16, 0:16], b)
                T.set_flag("MTE2", "MTE1", 1, auto=True)
                T.wait_flag("MTE2", "MTE1", 0, auto=True)
                T.copy(a, a0)
                T.set_flag("MTE1", "MTE2", 0, auto=True)
                T.wait_flag("MTE2", "MTE1", 1, auto=True)
                T.copy(b, b0)
                T.set_flag("MTE1", "MTE2", 1, auto=True)
            T.wait_flag("MTE1", "MTE2", 0, auto=True)
            T.wait_flag("MTE1", "MTE2", 1, auto=True)
)";
}

/// The Cube body with both units guarded as guard_loop_credits guards them (the pre-sets and
/// drains gone, the loop's MTE1 -> MTE2 waits under `k > 0`, its sets under `k + 1 < 3`), every
/// other statement the same node (the Prover takes the ops' events from its recording).
class GuardBoth : public IRMutator {
 public:
  using IRMutator::mutate_;

 protected:
  Stmt mutate_(const ForNode* n, const Stmt& self) override {
    ++depth_;
    loop_ = Expr(n->var);
    Stmt out = IRMutator::mutate_(n, self);
    --depth_;
    return out;
  }
  Stmt mutate_(const SyncNode* n, const Stmt& self) override {
    if (n->src != Pipe::MTE1 || n->dst != Pipe::MTE2) return self;
    if (depth_ == 0) return Stmt();  // a pre-set or a drain
    const bool wait = n->sync_kind == SyncKind::WaitFlag;
    return IfNode::make(wait ? loop_ > 0 : loop_ + 1 < 3, self, {}, n->loc);
  }

 private:
  int depth_ = 0;
  Expr loop_;
};

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Every unit guarded in one question (guard_loop_credits, Prover::holds_all) answers for the
// units' questions one by one only where each of them holds: with `pre` the joint replay finds
// the read of `a` unordered and refuses, and the pass falls back to the questions one by one,
// which guard the unit of id 1 alone, as without the shortcut. It refuses too where the budget
// has room for one question but not for the two it answers for.
TEST(ReplayShortcuts, AllUnitsAtOnceOnlyWhereEveryQuestionHolds) {
  for (bool pre : {false, true}) {
    SCOPED_TRACE(pre ? "MTE1 reads a before the loop" : "no read before the loop");
    PrimFunc f = parse(two_units(pre));
    std::array<Stmt, 2> bodies;
    const KernelNode* k = scopes(f, bodies);
    ASSERT_NE(k, nullptr);
    std::array<Stmt, 2> joint = {GuardBoth().mutate(bodies[0]), bodies[1]};
    ASSERT_EQ(count(print(joint[0]), "if k > 0:"), 2u);
    size_t events = 0;
    for (const auto& set :
         replay::unroll_blocks(*k, bodies[0], bodies[1], default_target(), {}, true, 64))
      for (const auto& stream : set) events += stream.size();
    ASSERT_GT(events, 0u);
    replay::Prover prover(*k, bodies.data(), default_target(), 64, 5'000'000);
    ASSERT_TRUE(prover.clean());
    EXPECT_EQ(prover.holds_all(joint.data(), 2), !pre);
    // Room for one question of this size, not two.
    replay::Prover tight(*k, bodies.data(), default_target(), 64, events);
    EXPECT_FALSE(tight.holds_all(joint.data(), 2));
    EXPECT_EQ(tight.holds(joint.data()), !pre);
    replay::set_shortcuts(false);
    replay::Prover off(*k, bodies.data(), default_target(), 64, 5'000'000);
    EXPECT_FALSE(off.holds_all(joint.data(), 2));
    const std::string without = print(guard_loop_credits(f, default_target()));
    replay::set_shortcuts(true);
    const std::string with = print(guard_loop_credits(f, default_target()));
    EXPECT_EQ(with, without);
    EXPECT_EQ(count(with, "if k > 0:"), pre ? 1u : 2u);
    // Unit 0's pre-set and loop set, or its loop set alone; unit 1's loop set.
    EXPECT_EQ(count(with, "T.set_flag(\"MTE1\", \"MTE2\""), pre ? 3u : 2u);
    EXPECT_EQ(count(with, "\n            T.set_flag(\"MTE1\", \"MTE2\", 0"), pre ? 1u : 0u);
  }
}

/// A Vector scope with four compiler flags (units): id 2 orders V's read of x before MTE2 refills
/// it, a conflict three steps after its set; ids 0 and 1 each order V's write of u before MTE3
/// reads it, 3,000 loop steps later (a barrier in the loop: unrolled), so either is implied by the
/// other but not both; id 3, after the loop, orders V's last write of w before MTE3 reads it. Each
/// AIV writes its own rows.
std::string screened_kernel() {
  return R"(@T.prim_func
def screened(A: T.Tensor((16, 16), "float32"), B: T.Tensor((32, 16), "float32"), C: T.Tensor((32, 16), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            u = T.alloc_ub((16, 16), "float32", address=0)
            w = T.alloc_ub((16, 16), "float32", address=1024)
            x = T.alloc_ub((16, 16), "float32", address=2048)
            T.tile.add(x, x, x)
            T.set_flag("V", "MTE2", 2, auto=True)
            T.wait_flag("V", "MTE2", 2, auto=True)
            T.copy(A[0:16, 0:16], x)
            T.tile.add(u, u, u)
            T.set_flag("V", "MTE3", 0, auto=True)
            T.wait_flag("V", "MTE3", 0, auto=True)
            T.set_flag("V", "MTE3", 1, auto=True)
            T.wait_flag("V", "MTE3", 1, auto=True)
            for k in T.serial(1500):
                T.tile.add(w, w, w)
                T.pipe_barrier("V")
            T.copy(u, B[vid * 16:vid * 16 + 16, 0:16])
            T.tile.add(w, w, w)
            T.set_flag("V", "MTE3", 3, auto=True)
            T.wait_flag("V", "MTE3", 3, auto=True)
            T.copy(w, C[vid * 16:vid * 16 + 16, 0:16])
)";
}

// The screen refuses a unit only where its replay fails within the cap from the unit's first
// event, resumed from the state just before it: id 2 (three steps) and id 3 (three steps, after
// 3,000 loop steps: the resumed state, not a replay from the start). Ids 0 and 1 each replay
// ordered alone, and with a cap of one step nothing is refused. The pass then asks ids 0 and 1 as
// a group, which fails (together they leave u's read unordered), and splits it: id 0 goes (id 1
// implies it), id 1 stays, as the questions one by one decide.
TEST(ReplayShortcuts, ScreenRefusesOnlyWhatFailsAndGroupsSplit) {
  PrimFunc f = parse(screened_kernel());
  std::array<Stmt, 2> bodies;
  const KernelNode* k = scopes(f, bodies);
  ASSERT_NE(k, nullptr);
  std::map<int64_t, std::vector<const SyncNode*>> by_id;
  pre_order_visit(bodies[1], [&](const Stmt& s) {
    if (auto* y = s.as<SyncNode>(); y && y->sync_kind != SyncKind::PipeBarrier)
      by_id[y->event_id.as<IntImmNode>()->value].push_back(y);
  });
  ASSERT_EQ(by_id.size(), 4u);
  const std::vector<std::vector<const SyncNode*>> units = {by_id[2], by_id[0], by_id[1], by_id[3]};
  auto s = replay::unroll_block(*k, bodies[0], bodies[1], default_target(), {}, true);
  ASSERT_TRUE(s.has_value());
  ASSERT_GT((*s)[1].size(), 3000u);
  replay::Query q;
  q.accesses = true;
  ASSERT_TRUE(replay::replay(*s, {}, q));
  for (size_t cap : {size_t{1}, size_t{2048}, size_t{1'000'000}}) {
    SCOPED_TRACE("cap " + std::to_string(cap));
    std::vector<bool> refused;
    replay::screen(*s, {}, q, nullptr, units, cap, refused);
    const bool found = cap > 1;
    EXPECT_EQ(refused, (std::vector<bool>{found, false, false, found}));
  }
  replay::set_shortcuts(false);
  const std::string without = print(elide_implied_syncs(f, default_target()));
  replay::set_shortcuts(true);
  const std::string with = print(elide_implied_syncs(f, default_target()));
  EXPECT_EQ(with, without);
  EXPECT_EQ(count(with, "T.set_flag(\"V\", \"MTE3\", 0"), 0u);
  EXPECT_EQ(count(with, "T.wait_flag(\"V\", \"MTE3\", 0"), 0u);
  for (int id : {1, 3}) EXPECT_EQ(count(with, "\"V\", \"MTE3\", " + std::to_string(id)), 2u) << id;
  EXPECT_EQ(count(with, "T.set_flag(\"V\", \"MTE2\", 2"), 1u);
}

}  // namespace
}  // namespace tl
