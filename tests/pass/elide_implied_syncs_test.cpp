// elide_implied_syncs: an intra-core flag goes when the other core's flags already carry its
// order (IR text in, text out), stays when nothing else does or the replay cannot know the
// protocol, and FlashAttention loses its slot credits on both cores while staying hazard-free
// (the mutation test in tests/npu/hazard_mutation_test.cpp deletes every sync that remains).
#include <set>

#include "pass_test_util.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"

namespace tl {
namespace {

// A ping-pong between the cube and the vector unit: the AIVs' credit for refilling u (V done
// reading it before MTE2 overwrites it) is implied, because the next tile only arrives after the
// cube saw the V work that read u (set_cross_flag on V drains it, and V knew MTE2's load).
constexpr std::string_view kPingPong = R"(@T.prim_func
def f(n: T.int32):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        ws = T.alloc_workspace((1, 1, 16, 16), "float32", channel_slots=1)
        with T.Scope("Cube"):
            c = T.alloc_L0C((16, 16), "float32", address=0)
            for k in T.serial(EXTENT):
                T.copy(c, ws[0:1, 0:1, 0:16, 0:16])
                T.set_cross_flag("FIX", 0, mode=2, auto=True)
                T.wait_cross_flag(1, auto=True)
        with T.Scope("Vector"):
            u = T.alloc_ub((16, 16), "float32", address=0)
            T.set_flag("V", "MTE2", 0, auto=True)
            for k in T.serial(EXTENT):
                T.wait_cross_flag(0, auto=True)
                T.wait_flag("V", "MTE2", 0, auto=True)
                T.copy(ws[0:1, 0:1, 0:16, 0:16], u)
                T.set_flag("MTE2", "V", 0, auto=True)
                T.wait_flag("MTE2", "V", 0, auto=True)
                T.tile.add(u, u, u)
                T.set_flag("V", "MTE2", 0, auto=True)
                T.set_cross_flag("V", 1, mode=2, auto=True)
            T.wait_flag("V", "MTE2", 0, auto=True)
)";

std::string ping_pong(const std::string& extent, bool with_credit = true) {
  std::string t(kPingPong);
  for (size_t at; (at = t.find("EXTENT")) != std::string::npos;) t.replace(at, 6, extent);
  if (!with_credit)
    for (size_t at; (at = t.find("T.set_flag(\"V\", \"MTE2\"")) != std::string::npos ||
                    (at = t.find("T.wait_flag(\"V\", \"MTE2\"")) != std::string::npos;) {
      size_t line = t.rfind('\n', at) + 1;
      t.erase(line, t.find('\n', at) + 1 - line);
    }
  return t;
}

std::string elided(const std::string& text) {
  return print(elide_implied_syncs(parse(text), default_target()), {.locations = false});
}

TEST(ElideImpliedSyncs, ACreditTheRoundTripImpliesGoesWithItsPreSetAndDrain) {
  for (const char* extent : {"1", "3"})
    EXPECT_EQ(elided(ping_pong(extent)),
              print(parse(ping_pong(extent, false)), {.locations = false}))
        << extent;
}

// Without the cube's wait for the vector unit nothing else orders the refill after the read:
// the credit stays. Neither can the replay know the protocol of a trip count it cannot count.
TEST(ElideImpliedSyncs, ACreditNothingElseImpliesOrAProtocolTheReplayCannotKnowStays) {
  std::string one_way = ping_pong("3");
  for (const char* line : {"                T.wait_cross_flag(1, auto=True)\n",
                           "                T.set_cross_flag(\"V\", 1, mode=2, auto=True)\n"})
    one_way.erase(one_way.find(line), std::string(line).size());
  EXPECT_EQ(elided(one_way), print(parse(one_way), {.locations = false}));
  EXPECT_EQ(elided(ping_pong("n")), print(parse(ping_pong("n")), {.locations = false}));
}

// The scalar unit's memory accesses are not in the streams: nothing is proven, nothing goes.
TEST(ElideImpliedSyncs, AScalarAccessToMemoryKeepsEveryFlag) {
  std::string text = ping_pong("3");
  const std::string add = "                T.tile.add(u, u, u)\n";
  text.replace(text.find(add), add.size(), add + "                u[0, 0] = T.float32(1.0)\n");
  EXPECT_EQ(elided(text), print(parse(text), {.locations = false}));
}

// A sync no block runs (its branch is taken by no cid of the launch) goes; the ops stay. When a
// block takes the branch, the barrier orders its two ops and stays.
TEST(ElideImpliedSyncs, ASyncNoBlockRunsGoes) {
  const std::string text = R"(@T.prim_func
def f():
    with T.Kernel(2, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            u = T.alloc_ub((16, 16), "float32", address=0)
            w = T.alloc_ub((16, 16), "float32", address=1024)
            if cid >= FIRST:
                T.tile.exp(u, u)
                T.pipe_barrier("V", auto=True)
                T.tile.exp(u, u)
            T.tile.exp(w, w)
)";
  auto with_first = [&](const char* first) {
    std::string t = text;
    t.replace(t.find("FIRST"), 5, first);
    return t;
  };
  std::string none = with_first("2"), dead = none;
  dead.erase(dead.find("                T.pipe_barrier"),
             std::string("                T.pipe_barrier(\"V\", auto=True)\n").size());
  EXPECT_EQ(elided(none), print(parse(dead), {.locations = false}));
  EXPECT_EQ(elided(with_first("1")), print(parse(with_first("1")), {.locations = false}));
}

/// The compiler's intra-core flags of `f`, as "SRC->DST" pipe pairs, per scope.
std::multiset<std::string> flag_pairs(const PrimFunc& f, CoreKind scope) {
  std::multiset<std::string> out;
  pre_order_visit(f->body, [&](const Stmt& s) {
    auto* sc = s.as<ScopeNode>();
    if (!sc || sc->core != scope) return;
    pre_order_visit(sc->body, [&](const Stmt& x) {
      if (auto* y = x.as<SyncNode>(); y && y->sync_kind == SyncKind::SetFlag)
        out.insert(std::string(pipe_name(y->src)) + "->" + std::string(pipe_name(y->dst)));
    });
  });
  return out;
}

// FlashAttention: every slot credit goes, the cube's (L0A/L0B for the loads, L0C for the Mmads)
// and the vector unit's (S and PV slots refilled by MTE2, P's slots rewritten by V); the data
// flags stay, and the kernel runs hazard-free. Where the cube runs ahead of any round trip (two
// kv-tiles, S = 128) or a tail tile adds work (S = 200) some credits order what no round trip
// does and stay: the mutation test runs those shapes.
TEST(ElideImpliedSyncs, FlashAttentionLosesItsSlotCreditsOnBothCores) {
  for (const char* S : {"320", "512", "1024"}) {
    SCOPED_TRACE(S);
    PrimFunc dev = build_kernel(find_kernel("flash_attention_dev"), {{"S", S}, {"D", "64"}});
    // Without hoist_above_channel_waits, whose earlier V load then needs its L0B credit.
    PassOptions keep, elide;
    keep.disabled_passes = {"hoist_above_channel_waits", "elide_implied_syncs"};
    elide.disabled_passes = {"hoist_above_channel_waits"};
    PrimFunc before = lower(dev, default_target(), keep);
    PrimFunc after = lower(dev, default_target(), elide);
    for (const char* credit : {"M->MTE1", "FIX->M"}) {
      EXPECT_GT(flag_pairs(before, CoreKind::Cube).count(credit), 0u) << credit;
      EXPECT_EQ(flag_pairs(after, CoreKind::Cube).count(credit), 0u) << credit;
    }
    for (const char* credit : {"V->MTE2", "MTE3->V"}) {
      EXPECT_GT(flag_pairs(before, CoreKind::Vector).count(credit), 0u) << credit;
      EXPECT_EQ(flag_pairs(after, CoreKind::Vector).count(credit), 0u) << credit;
    }
    for (const char* data : {"MTE2->MTE1", "MTE1->M", "M->FIX"})
      EXPECT_GT(flag_pairs(after, CoreKind::Cube).count(data), 0u) << data;
    for (const char* data : {"MTE2->V", "V->MTE3"})
      EXPECT_GT(flag_pairs(after, CoreKind::Vector).count(data), 0u) << data;
    Device device;
    auto k = compile(dev, default_target(), {.cache = false});
    std::vector<Arg> args;
    for (const auto& p : dev->params) {
      std::vector<int64_t> shape;
      for (const auto& e : p.tensor->shape) shape.push_back(*as_const_int(e));
      args.emplace_back(Tensor::empty(device, shape, p.tensor->dtype));
    }
    EXPECT_NO_THROW(k.launch(device, args, {.check_hazards = true}));
  }
}

// One core: a GEMM block of one output tile runs its tile loop once, so the credit for reusing
// C_f in the next tile orders nothing and goes; with two tiles per block it is needed, and the
// kernel comes back unchanged.
TEST(ElideImpliedSyncs, ALoopCreditNoSecondTripNeedsGoesOnOneCoreToo) {
  PassOptions keep;  // the passes after it too: guard_loop_credits drops a pre-set of its own
  keep.disabled_passes = {"elide_implied_syncs", "merge_flags", "guard_loop_credits"};
  PrimFunc one =
      lower(build_kernel(find_kernel("gemm_dev"), {{"M", "256"}, {"N", "128"}, {"K", "512"}}),
            default_target(), keep);
  EXPECT_EQ(flag_pairs(one, CoreKind::Cube).count("FIX->M"), 2u);  // the pre-set and the loop's set
  EXPECT_EQ(flag_pairs(elide_implied_syncs(one, default_target()), CoreKind::Cube).count("FIX->M"),
            0u);
  PrimFunc two = lower(build_kernel(find_kernel("gemm_dev"), {{"M", "256"},
                                                              {"N", "128"},
                                                              {"K", "896"},
                                                              {"bM", "64"},
                                                              {"bN", "128"},
                                                              {"bK", "128"},
                                                              {"blocks", "2"}}),
                       default_target(), keep);
  EXPECT_EQ(elide_implied_syncs(two, default_target()), two);
}

}  // namespace
}  // namespace tl
