// CompileOptions::dev (docs/developer_mode.md, "Options"): every developer-mode automation can be
// switched off; a combination where an enabled automation needs a disabled one is a tl::Error
// naming both (before any cache lookup); the options are part of the JIT cache key; switching
// an automation off shows up where it should (the hazard checker without insert_syncs, a
// run-time bounds error without legalize_copies, the vectoriser's error without its options).
#include <gtest/gtest.h>

#include "common/example_checks.h"
#include "pass_test_util.h"
#include "tl/jit.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"

namespace tl {
namespace {

using testing::error_of;

PrimFunc registered(const std::string& name, std::map<std::string, std::string> params) {
  return build_kernel(find_kernel(name), params);
}

TEST(DeveloperOptions, AnAutomationWhoseInputIsOffIsRejectedNamingBoth) {
  PrimFunc f = registered("add_dev", {});
  struct Case {
    DeveloperOptions dev;
    const char* on;
    const char* off;
  };
  auto with = [](auto set) {
    DeveloperOptions d;
    set(d);
    return d;
  };
  const Case cases[] = {
      {with([](DeveloperOptions& d) {
         d.infer_scopes = false;
         d.split_cube_vector = false;
         d.vectorize = false;
         d.insert_syncs = false;
         d.legalize_copies = false;
         d.mask_tails = false;
       }),
       "lower_cube_ops", "infer_scopes"},
      {with([](DeveloperOptions& d) {
         d.infer_scopes = false;
         d.lower_cube_ops = false;
         d.mask_tails = false;
       }),
       "legalize_copies", "infer_scopes"},
      {with([](DeveloperOptions& d) {
         d.infer_scopes = false;
         d.lower_cube_ops = false;
       }),
       "mask_tails", "infer_scopes"},
      {with([](DeveloperOptions& d) { d.lower_cube_ops = false; }), "split_cube_vector",
       "lower_cube_ops"},
      {with([](DeveloperOptions& d) { d.split_cube_vector = false; }), "vectorize",
       "split_cube_vector"},
      {with([](DeveloperOptions& d) {
         d.split_cube_vector = false;
         d.vectorize = false;
       }),
       "insert_syncs", "split_cube_vector"},
      {with([](DeveloperOptions& d) {
         d.vectorize = false;
         d.scalar_fallback = true;
       }),
       "scalar_fallback", "vectorize"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.dev.fingerprint());
    std::string msg = error_of([&] { compile(f, default_target(), {.dev = c.dev}); });
    EXPECT_NE(msg.find(fmt::format("'{}' is on but needs '{}', which is off", c.on, c.off)),
              std::string::npos)
        << msg;
  }
}

TEST(DeveloperOptions, TheOptionsArePartOfTheCacheKey) {
  PrimFunc f = registered("add_dev", {});
  DeveloperOptions no_syncs;
  no_syncs.insert_syncs = false;
  EXPECT_NE(jit::cache_key(npu_backend(), f, default_target(), {}),
            jit::cache_key(npu_backend(), f, default_target(), {.dev = no_syncs}));
  // Two compiles of one function with different options are two kernels.
  auto with = compile(f, default_target(), {.disk_cache = false});
  auto without = compile(f, default_target(), {.disk_cache = false, .dev = no_syncs});
  EXPECT_NE(print(with.func()), print(without.func()));
}

TEST(DeveloperOptions, WithoutInsertSyncsTheHazardCheckerReportsTheUnorderedPairs) {
  PrimFunc f = registered("add_dev", {{"M", "8"}, {"N", "256"}, {"bM", "4"}});
  DeveloperOptions d;
  d.insert_syncs = false;
  auto kern = compile(f, default_target(), {.disk_cache = false, .dev = d});
  EXPECT_EQ(print(kern.func()).find("set_flag"), std::string::npos);
  Device dev;
  auto args = ref::random_args(dev, f);
  std::string msg = error_of([&] { kern.launch(dev, args, {.check_hazards = true}); });
  EXPECT_NE(msg.find("RAW hazard on UB"), std::string::npos) << msg;
}

// The automations of "Developer mode II" only change speed: switched off, a kernel keeps its
// bits, hazard-checked, and its IR shows what is missing (more syncs, no slots, AIV 0 alone).
TEST(DeveloperOptions, PipeliningTheAivSplitAndSyncMinimisationChangeOnlySpeed) {
  PrimFunc f = registered("flash_attention_dev", {{"S", "200"}, {"D", "64"}});
  auto syncs = [](const PrimFunc& g) {
    size_t n = 0;
    pre_order_visit(g->body, [&](const Stmt& s) { n += s.kind() == StmtKind::Sync; });
    return n;
  };
  auto run = [&](const CompiledKernel& k) {
    Device dev;
    auto args = ref::random_args(dev, f);
    k.launch(dev, args, {.check_hazards = true});
    return std::get<Tensor>(args.back().value).to_vector();
  };
  auto all = compile(f, default_target(), {.disk_cache = false});
  const std::vector<double> want = run(all);
  for (int off = 0; off < 3; ++off) {
    DeveloperOptions d;
    (off == 0 ? d.pipeline_loops : off == 1 ? d.split_aiv : d.minimise_syncs) = false;
    SCOPED_TRACE(d.fingerprint());
    auto k = compile(f, default_target(), {.disk_cache = false, .dev = d});
    const std::string ir = print(k.func(), {.locations = false});
    if (off == 0) {
      EXPECT_EQ(ir.find("v_1 = T.alloc"), std::string::npos) << ir;
    } else if (off == 1) {
      EXPECT_NE(ir.find("if vid == 0"), std::string::npos) << ir;
    } else {
      EXPECT_GT(syncs(k.func()), syncs(all.func()));
    }
    EXPECT_EQ(run(k), want);
  }
}

/// Every switch of the registry, flipped from its default (and the switches that need it off
/// with it, so the combination is valid): the developer kernels still compile to the same
/// results, or stop with a tl::Error (at compile time, or from the hazard or stale-data checker
/// at run time): never a silent wrong result. A switch added to the registry is covered here
/// without an edit.
TEST(DeveloperOptions, EverySwitchFlippedGivesTheSameResultsOrAnError) {
  struct Kernel {
    const char* name;
    std::map<std::string, std::string> params;
  };
  // A cube-vector kernel with a channel and tails, and a vector one with row and column tails.
  const Kernel kernels[] = {
      {"matmul_add_dev", {{"M", "130"}, {"N", "100"}, {"K", "72"}, {"bM", "64"}, {"bN", "64"}}},
      {"softmax_dev", {{"M", "50"}, {"N", "37"}}}};
  int matched = 0;
  for (const Kernel& kk : kernels) {
    PrimFunc f = registered(kk.name, kk.params);
    auto run = [&](const DeveloperOptions& d) {
      auto k = compile(f, default_target(), {.disk_cache = false, .dev = d});
      Device dev;
      auto args = ref::random_args(dev, f);
      k.launch(dev, args, {.check_hazards = true});
      return std::get<Tensor>(args.back().value).to_vector();
    };
    const std::vector<double> want = run({});
    for (const Switch& s : switch_registry()) {
      DeveloperOptions d;
      d.*s.field = !s.default_on();
      for (bool changed = true; changed;) {  // what needs a switch that is off goes off too
        changed = false;
        for (const Switch& t : switch_registry())
          for (auto need : t.needs)
            if (d.*t.field && !(d.*find_switch(need)->field)) {
              d.*t.field = false;
              changed = true;
            }
      }
      SCOPED_TRACE(fmt::format("{} with {}", kk.name, d.fingerprint()));
      std::vector<double> got;
      try {
        got = run(d);
      } catch (const Error& e) {
        std::printf("  %s, %s flipped: %s\n", kk.name, std::string(s.name).c_str(),
                    std::string(e.what()).substr(0, 100).c_str());
        continue;  // a clear error is an allowed answer
      }
      ++matched;
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-3 * (1 + std::abs(want[i]))) << "element " << i;
    }
  }
  // Most flips lower and run (those that error are printed above): the test is not vacuous.
  EXPECT_GE(matched, static_cast<int>(switch_registry().size()));
}

// merge_flags off keeps A's and B's panel flags apart (more syncs, the same result); it is part
// of minimise_syncs, so switching minimise_syncs off alone is valid.
TEST(DeveloperOptions, MergeFlagsOffKeepsEachSourceItsFlag) {
  PrimFunc f = registered("gemm_dev", {{"M", "256"}, {"N", "256"}, {"K", "1024"}});
  auto sets = [](const PrimFunc& g) {
    size_t n = 0;
    pre_order_visit(g->body, [&](const Stmt& s) {
      auto* y = s.as<SyncNode>();
      n += y && y->sync_kind == SyncKind::SetFlag && y->src == Pipe::MTE2;
    });
    return n;
  };
  DeveloperOptions merge, no_minimise;
  merge.merge_flags = true;  // off by default: it costs cycles (docs/developer_mode.md)
  no_minimise.minimise_syncs = false;
  EXPECT_NO_THROW(no_minimise.validate());
  EXPECT_FALSE(DeveloperOptions{}.merge_flags);
  // merge_flags on with minimise_syncs off: its pass is gated on minimise_syncs, so the switch
  // did nothing, silently (before: validate() accepted it and the kernel kept every flag).
  // Now an error naming both switches.
  DeveloperOptions merge_alone = merge;
  merge_alone.minimise_syncs = false;
  try {
    merge_alone.validate();
    ADD_FAILURE() << "merge_flags without minimise_syncs accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'merge_flags' is on but needs 'minimise_syncs', which is "
                                         "off"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(compile(f, default_target(), {.disk_cache = false, .dev = merge_alone}), Error);
  auto merged = compile(f, default_target(), {.disk_cache = false, .dev = merge});
  auto apart = compile(f, default_target(), {.disk_cache = false});
  EXPECT_EQ(sets(apart.func()), 2 * sets(merged.func()));
  Device dev;
  auto args = ref::random_args(dev, f);
  merged.launch(dev, args, {.check_hazards = true});
  const std::vector<double> want = std::get<Tensor>(args.back().value).to_vector();
  apart.launch(dev, args, {.check_hazards = true});
  EXPECT_EQ(std::get<Tensor>(args.back().value).to_vector(), want);
}

TEST(DeveloperOptions, WithoutLegalizeCopiesATailBlockIsARunTimeBoundsError) {
  PrimFunc f = registered("add_dev", {{"M", "13"}, {"N", "256"}, {"bM", "4"}});
  DeveloperOptions d;
  d.legalize_copies = false;
  auto kern = compile(f, default_target(), {.disk_cache = false, .dev = d});
  Device dev;
  auto args = ref::random_args(dev, f);
  std::string msg = error_of([&] { kern.launch(dev, args); });
  EXPECT_NE(msg.find("out-of-bounds access to 'X'"), std::string::npos) << msg;
  // With it (the default) the same kernel runs and matches.
  auto ok = compile(f);
  EXPECT_NO_THROW(ok.launch(dev, args));
}

// allow_inexact_math is on by default (issue 29: as on the chip); off asks for exact math, which
// makes the loop an error naming the switch, or, with scalar_fallback, a serial loop. Before
// the flip the default compile was the error.
TEST(DeveloperOptions, InexactMathIsTheDefaultAndExactMathAndScalarFallbackAreOptIn) {
  auto X = T::Tensor("X", {8, 64}, f32), Y = T::Tensor("Y", {8, 64}, f32);
  PrimFunc f = T::prim_func("exp_dev", {X, Y}, [&] {
    T::Kernel(1, [&](Expr) {
      auto x = T::alloc_shared("x", {8, 64}, f32);
      T::copy(X, x);
      T::Parallel({8, 64}, [&](Expr i, Expr j) { x(i, j) = exp(x(i, j)); });
      T::copy(x, Y);
    });
  });
  DeveloperOptions exact_math;
  exact_math.allow_inexact_math = false;
  std::string msg =
      error_of([&] { compile(f, default_target(), {.cache = false, .dev = exact_math}); });
  EXPECT_NE(msg.find("allow_inexact_math"), std::string::npos) << msg;
  auto kern = compile(f, default_target(), {.cache = false});  // the default: the vector exp
  EXPECT_NE(print(kern.func()).find("T.tile.exp"), std::string::npos);
  DeveloperOptions serial;
  serial.allow_inexact_math = false;
  serial.scalar_fallback = true;
  auto slow = compile(f, default_target(), {.cache = false, .dev = serial});
  EXPECT_EQ(print(slow.func()).find("T.tile.exp"), std::string::npos);
  EXPECT_EQ(print(slow.func()).find("T.Parallel"), std::string::npos);  // the whole nest is serial
  // Both run and agree with each other to the vector exp's last-bit difference.
  Device dev;
  auto args = ref::random_args(dev, f);
  kern.launch(dev, args);  // X is only read: both launches see the same input
  std::vector<double> fast = std::get<Tensor>(args[1].value).to_vector();
  slow.launch(dev, args);
  std::vector<double> exact = std::get<Tensor>(args[1].value).to_vector();
  ASSERT_EQ(fast.size(), exact.size());
  for (size_t i = 0; i < fast.size(); ++i)
    EXPECT_NEAR(fast[i], exact[i], 1e-6 * std::abs(exact[i]) + 1e-30) << i;
}

}  // namespace
}  // namespace tl
