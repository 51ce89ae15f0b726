// Regressions of issue 27 (adversarial review): a 2^31-iteration loop ran for hours and nothing
// could stop it (no budget by default, no way to cancel; Ctrl-C in Python was not seen until
// the launch returned). Now LaunchOptions::cancel stops a launch from another thread within
// milliseconds, and a default instruction budget (2^30 steps per core and block) fails a
// runaway loop with an error naming the loop and how to raise the budget. The Python side
// (KeyboardInterrupt on Ctrl-C) is python/tests/test_interrupt.py.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "common/error_of.h"
#include "npu/load_exp_store.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/runtime.h"

namespace tl {
namespace {

#define EXPECT_HAS(msg, part) \
  EXPECT_NE((msg).find(part), std::string::npos) << "missing \"" << (part) << "\" in: " << (msg)

/// `blocks` blocks whose AIVs each run a serial loop of `extent` iterations accumulating into
/// a scalar; `line` receives the loop's source line.
PrimFunc spinner(int blocks, int64_t extent, int* line) {
  auto X = T::Tensor("X", {16}, DType::Float32);
  return T::prim_func("spinner", {X}, [&] {
    T::Kernel(blocks, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        auto acc = T::alloc_var("acc", DType::Int64);
        T::store(acc, {0}, Expr(int64_t{0}));
        *line = __LINE__ + 1;
        T::serial(Expr(extent), [&](Expr i) { T::store(acc, {0}, acc() + i); });
      });
    });
  });
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Before the fix there was no LaunchOptions::cancel: this launch (2^31 iterations on each of 8
// AIVs, no budget) would have run for hours.
TEST(NpuCancel, AnotherThreadStopsAHugeLoopWithinMilliseconds) {
  int line = 0;
  auto k = compile(spinner(4, int64_t{1} << 31, &line));
  Device dev;
  Tensor x = Tensor::empty(dev, {16}, DType::Float32);
  for (int threads : {1, 2}) {
    std::atomic<bool> cancel{false};
    const auto start = Clock::now();
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      cancel = true;
    });
    std::string msg = tltest::error_of<LaunchCancelled>([&] {
      k.launch(dev, {x}, {.threads = threads, .max_steps = kNoStepBudget, .cancel = &cancel});
    });
    stopper.join();
    const double took = seconds_since(start);
    EXPECT_EQ(msg,
              "launch of kernel spinner cancelled (LaunchOptions::cancel was set); the tensors "
              "hold a partial "
              "result");
    EXPECT_LT(took, 2.0) << threads << " threads";
  }
}

TEST(NpuCancel, AFlagSetBeforeTheLaunchStopsItAtTheFirstBlock) {
  int line = 0;
  auto k = compile(spinner(40, 10, &line));  // many short blocks: never a whole chunk of steps
  Device dev;
  Tensor x = Tensor::empty(dev, {16}, DType::Float32);
  std::atomic<bool> cancel{true};
  EXPECT_THROW(k.launch(dev, {x}, {.cancel = &cancel}), LaunchCancelled);
  cancel = false;
  EXPECT_NO_THROW(k.launch(dev, {x}, {.cancel = &cancel}));
}

TEST(NpuCancel, TimedModeWithAnUnsetFlagGivesTheSameCyclesForAnyThreadCount) {
  auto k = compile(load_exp_store(16, 64, true));
  Device dev;
  Tensor X = Tensor::empty(dev, {32, 64}, f32), Y = Tensor::empty(dev, {32, 64}, f32);
  std::atomic<bool> cancel{false};
  npu::Profile plain;
  k.launch(dev, {X, Y}, {.threads = 1, .profile = &plain});
  for (int threads : {1, 2, 4}) {
    npu::Profile p;
    k.launch(dev, {X, Y}, {.threads = threads, .profile = &p, .cancel = &cancel});
    EXPECT_EQ(p.total_cycles, plain.total_cycles) << threads;
  }
}

// Before the fix there was no default budget: this launch ran its 2^31 iterations (hours).
// Now the default, 2^30 steps per core and block, stops it after about 2^29 iterations
// (a step is a loop iteration or a statement) with an error naming the loop. 2^30 steps take
// 20 s to 90 s of host time (85 s measured on the loaded 2-core VM), too long for every run
// of the suite: it runs with TL_TEST_LEVEL=1, like the exhaustive sweeps.
TEST(NpuBudget, TheDefaultBudgetStopsARunawayLoopNamingIt) {
  const char* level = std::getenv("TL_TEST_LEVEL");
  if (!level || std::atoi(level) < 1) GTEST_SKIP() << "2^30 interpreter steps: set TL_TEST_LEVEL=1";
  ASSERT_EQ(std::getenv("TL_MAX_STEPS"), nullptr) << "the test needs the default budget";
  int line = 0;
  auto k = compile(spinner(1, int64_t{1} << 31, &line));
  Device dev;
  Tensor x = Tensor::empty(dev, {16}, DType::Float32);
  std::string msg = tltest::error_of([&] { k.launch(dev, {x}, {.threads = 1}); });
  EXPECT_HAS(msg,
             "instruction budget of 1073741824 interpreter steps per core and block (the default "
             "budget, 2^30)");
  EXPECT_HAS(msg, "block 0 AIV0");
  EXPECT_HAS(msg, "for i in T.serial");
  EXPECT_HAS(msg, fmt::format("npu_cancel_test.cpp:{}", line));
  EXPECT_HAS(msg, "TL_MAX_STEPS=<steps> (0: none)");
  EXPECT_HAS(msg, "LaunchOptions::max_steps");
}

TEST(NpuBudget, ZeroOrNoneInTlMaxStepsAreAcceptedAndANegativeMaxStepsIsAnError) {
  int line = 0;
  auto k = compile(spinner(1, 1000, &line));
  Device dev;
  Tensor x = Tensor::empty(dev, {16}, DType::Float32);
  for (const char* v : {"0", "none"}) {
    ::setenv("TL_MAX_STEPS", v, 1);
    EXPECT_NO_THROW(k.launch(dev, {x})) << v;
    ::unsetenv("TL_MAX_STEPS");
  }
  std::string msg = tltest::error_of([&] { k.launch(dev, {x}, {.max_steps = -5}); });
  EXPECT_HAS(msg,
             "0 for the default (TL_MAX_STEPS, else 2^30) or tl::kNoStepBudget for none, got -5");
}

}  // namespace
}  // namespace tl
