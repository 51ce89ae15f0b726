// The time-ordered replay's shortcuts (src/npu/replay_isolation.h, replay_snapshot.cpp) change
// nothing it computes:
//   - a timed launch with data gives the fast (program-order) launch's bytes, and the cycles
//     of a timing-only launch, on 1 and 2 host threads: the examples, the library's
//     FlashAttention (AIC and AIVs exchanging cross-core flags) on tails, the library's RMSNorm
//     on rows that are not a multiple of its row tile;
//   - with every synchronisation of every example deleted in turn (racy kernels, stale and torn
//     operands), executing isolated ops in place gives the same bytes, the same time-order
//     effects and the same errors as the read-at-start, land-at-end mechanism for every op
//     (TL_REPLAY_IN_PLACE=0).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "cann_ops_tilelang/attention.h"
#include "cann_ops_tilelang/core.h"
#include "cann_ops_tilelang/norm.h"
#include "example_cases.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"

namespace tl {
namespace {

enum class Mode { Fast, TimingOnly, TimedData };

struct Outcome {
  std::vector<std::vector<uint8_t>> bytes;  // every tensor argument after the launch
  std::vector<std::string> effects;
  std::string error;
  double cycles = 0;
  int64_t ops = 0, in_place = 0;
  bool skipped = false;  // Profile::replay_skipped
};

/// Sets TL_REPLAY_IN_PLACE=0 for one scope.
struct RuleOnly {
  RuleOnly() { setenv("TL_REPLAY_IN_PLACE", "0", 1); }
  ~RuleOnly() { unsetenv("TL_REPLAY_IN_PLACE"); }
};

Outcome launch(const PrimFunc& f, const ArgsFn& make, Mode mode, int threads) {
  Device dev;
  Outcome r;
  auto args = make(dev);
  try {
    auto kern = compile(f, default_target(), {.cache = false});
    npu::Profile prof;
    LaunchOptions opt;
    opt.threads = threads;
    if (mode != Mode::Fast) opt.profile = &prof;
    opt.timing_only = mode == Mode::TimingOnly;
    kern.launch(dev, args, opt);
    r.effects = prof.time_order_effects;
    r.cycles = prof.total_cycles;
    r.ops = prof.replay_ops;
    r.in_place = prof.replay_in_place;
    r.skipped = prof.replay_skipped;
  } catch (const Error& e) {
    r.error = e.what();
    return r;
  }
  for (auto& a : args)
    if (auto* t = std::get_if<Tensor>(&a.value)) {
      const auto* p = reinterpret_cast<const uint8_t*>(t->data());
      r.bytes.emplace_back(p, p + t->nbytes());
    }
  return r;
}

std::vector<ExampleCase> with_library_cases() {
  std::vector<ExampleCase> out = {
      gemm_case(),          minicv_case(),    flash_attention_case(),
      rms_norm_case(2),     rms_norm_case(1), flash_attention_pipelined_case(),
      gemm_pipelined_case()};
  const Target& target = default_target();
  for (int64_t S : {1, 33, 200}) {
    const int64_t H = 3, D = 64;
    auto key = cann_ops_tilelang::flash_attention_key(
        DType::Float16, H, D, false, cann_ops_tilelang::AttentionLayout::BHSD, 0.125, target);
    out.push_back({fmt::format("library flash_attention S={}", S),
                   cann_ops_tilelang::flash_attention_kernel(key),
                   [=](Device& dev) -> std::vector<Arg> {
                     std::vector<Arg> a;
                     for (int i = 0; i < 3; ++i)
                       a.emplace_back(uniform(dev, {1, H, S, D}, f16, 11 + i));
                     a.emplace_back(Tensor::empty(dev, {1, H, S, D}, f16));
                     a.emplace_back(Tensor::empty(dev, {1, H, S}, f32));
                     a.emplace_back(cann_ops_tilelang::flash_attention_idx(dev, key));
                     return a;
                   },
                   {}});
  }
  // 7 and 33 rows: a partial row tile of 8 (one row in the second); the residual and rstd
  // outputs too.
  for (int64_t M : {7, 33}) {
    const int64_t H = 1024, padded = (M + 7) / 8 * 8;
    cann_ops_tilelang::Checker check("timed_replay_test", Loc::current());
    auto key = cann_ops_tilelang::rms_norm_fwd_key(DType::BFloat16, H, true, true, target, check);
    out.push_back({fmt::format("library rms_norm M={} H={}", M, H),
                   cann_ops_tilelang::rms_norm_fwd_kernel(key),
                   [=](Device& dev) -> std::vector<Arg> {
                     return {randn(dev, {M, H}, bf16, 21),
                             randn(dev, {M, H}, bf16, 22),
                             uniform(dev, {H}, bf16, 23, 0.5, 1.5),
                             Tensor::empty(dev, {M, H}, bf16),
                             Tensor::empty(dev, {M, H}, bf16),
                             Tensor::empty(dev, {padded}, f32),
                             1e-6};
                   },
                   {}});
  }
  return out;
}

TEST(TimedReplay, OutputsAndCyclesMatchFastAndTimingOnly) {
  for (const auto& c : with_library_cases()) {
    SCOPED_TRACE(c.name);
    const Outcome fast = launch(c.f, c.args, Mode::Fast, 1);
    ASSERT_EQ(fast.error, "");
    for (int threads : {1, 2}) {
      SCOPED_TRACE(fmt::format("{} host thread(s)", threads));
      const Outcome timing = launch(c.f, c.args, Mode::TimingOnly, threads),
                    timed = launch(c.f, c.args, Mode::TimedData, threads);
      ASSERT_EQ(timing.error, "");
      ASSERT_EQ(timed.error, "");
      EXPECT_TRUE(timed.bytes == fast.bytes) << c.name << ": timed mode differs from fast mode";
      EXPECT_EQ(timed.effects, std::vector<std::string>{});
      EXPECT_EQ(timed.cycles, timing.cycles);
      EXPECT_GT(timing.cycles, 0);
      // A synchronised kernel's ops mostly run alone on their bytes: the shortcut is taken.
      EXPECT_GT(timed.ops, 0);
      EXPECT_GT(timed.in_place, timed.ops / 2) << timed.in_place << " of " << timed.ops;
      // Synchronised: simulated time orders every conflicting pair as the functional run did,
      // so the replay is skipped (replay_order.cpp); its ops count as run in place.
      EXPECT_TRUE(timed.skipped);
      if (timed.skipped) {
        EXPECT_EQ(timed.in_place, timed.ops);
      }
      RuleOnly rule;
      const Outcome exact = launch(c.f, c.args, Mode::TimedData, threads);
      EXPECT_TRUE(exact.bytes == timed.bytes);
      EXPECT_EQ(exact.cycles, timed.cycles);
      EXPECT_EQ(exact.in_place, 0);
      EXPECT_FALSE(exact.skipped);
      EXPECT_EQ(exact.ops, timed.ops);
    }
  }
}

TEST(TimedReplay, InPlaceMatchesTheRuleOnEveryMissingSync) {
  int differing = 0, compared = 0, some_in_place = 0, skipped = 0, skipped_racy = 0;
  for (const auto& c : with_library_cases()) {
    if (c.name.rfind("library", 0) == 0) continue;  // mutations of the examples only
    const Outcome right = launch(c.f, c.args, Mode::Fast, 1);
    for (const auto& m : mutations(c.f)) {
      SCOPED_TRACE(c.name + " without " + m.label);
      const PrimFunc f = without(c.f, m);
      const Outcome fast = launch(f, c.args, Mode::TimedData, 2);
      Outcome exact;
      {
        RuleOnly rule;
        exact = launch(f, c.args, Mode::TimedData, 2);
      }
      ++compared;
      some_in_place += fast.in_place > 0;
      skipped += fast.skipped;
      EXPECT_FALSE(exact.skipped);
      // A skipped replay keeps the functional run's bytes: right only if the race did not
      // change them (the timing model ordered the unsynchronised pair as the functional run).
      if (fast.skipped) {
        EXPECT_TRUE(fast.effects.empty());
        skipped_racy += fast.bytes != right.bytes;
      }
      EXPECT_EQ(fast.error, exact.error);
      EXPECT_TRUE(fast.bytes == exact.bytes);
      EXPECT_EQ(fast.effects, exact.effects);
      EXPECT_EQ(fast.cycles, exact.cycles);
      differing += fast.error.empty() && fast.bytes != right.bytes;
    }
  }
  std::printf(
      "  %d deletions compared, %d with wrong data, %d with ops run in place, %d replays "
      "skipped (%d of them not program order's bytes)\n",
      compared, differing, some_in_place, skipped, skipped_racy);
  // The comparison covers racy results, not only right ones.
  EXPECT_GE(differing, 70);
  EXPECT_GE(some_in_place, compared / 2);
}

}  // namespace
}  // namespace tl
