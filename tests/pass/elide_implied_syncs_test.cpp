// elide_implied_syncs: an intra-core flag goes when the other core's flags already carry its
// order, stays when nothing else does or the replay cannot know the protocol. IR text in, IR text
// out lives in tests/pass/elide_implied_syncs.tl and elide_implied_syncs_cases.tl. Kept here,
// because `tlc opt` prints IR and runs nothing and the kernels come from the kernel registry:
// FlashAttention loses its slot credits on both cores while staying hazard-free (the mutation
// test in tests/npu/hazard_mutation_test.cpp deletes every sync that remains), and gemm_dev's
// loop credit goes when no second trip needs it (the kernel as the same function otherwise).
#include <set>

#include "pass_test_util.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"

namespace tl {
namespace {

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
