// Regressions of issue 10, item 8: a launch that runs for a long time says so, and one that
// would run forever can be stopped. The instruction budget (LaunchOptions::max_steps or
// TL_MAX_STEPS) fails a runaway loop with an error naming the innermost loop, its source line
// and the core, the same for any thread count; progress lines go to stderr for long launches
// only; printf output streams to the caller's stream while the launch runs, in (block, core,
// program) order for any thread count.
#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#include <sstream>
#include <streambuf>
#include <string>
#include <thread>
#include <vector>

#include "common/error_of.h"
#include "common/scoped_env.h"
#include "tl/ir_ops.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"

namespace tl {
namespace {

#define EXPECT_HAS(msg, part) \
  EXPECT_NE((msg).find(part), std::string::npos) << "missing \"" << (part) << "\" in: " << (msg)

using tltest::error_if_any;
using tltest::error_of;

/// `blocks` blocks; on the AIVs of block `runaway` a serial loop of `long_extent` iterations
/// (a loop that, for a test, might as well not end), on the others one of 10. Each iteration
/// accumulates into a scalar. `loop_line` receives the loop's source line.
PrimFunc spinner(int blocks, int runaway, int64_t long_extent, int* loop_line) {
  auto X = T::Tensor("X", {16}, DType::Float32);
  return T::prim_func("spinner", {X}, [&] {
    T::Kernel(blocks, [&](Expr cid, Expr) {
      T::Scope(Core::Vector, [&] {
        auto acc = T::alloc_var("acc", DType::Int64);
        T::store(acc, {0}, Expr(int64_t{0}));
        Expr extent = select(cid == runaway, Expr(long_extent), Expr(int64_t{10}));
        *loop_line = __LINE__ + 1;
        T::serial(extent, [&](Expr i) { T::store(acc, {0}, acc() + i); });
      });
    });
  });
}

TEST(NpuBudget, RunawayLoopStopsWithAnErrorNamingTheLoop) {
  int line = 0;
  auto k = compile(spinner(4, 2, 50'000'000, &line));
  Device dev;
  Tensor x = Tensor::empty(dev, {16}, DType::Float32);
  std::string first;
  for (int threads : {1, 2, 4}) {
    std::string m =
        error_of([&] { k.launch(dev, {x}, {.threads = threads, .max_steps = 200'000}); });
    EXPECT_HAS(m, "instruction budget of 200000 interpreter steps");
    EXPECT_HAS(m, "LaunchOptions::max_steps");
    EXPECT_HAS(m, "block 2 AIV0");
    EXPECT_HAS(m, "for i in T.serial");
    EXPECT_HAS(m, fmt::format("npu_budget_progress_test.cpp:{}", line));
    if (first.empty()) first = m;
    EXPECT_EQ(m, first) << "the error depends on the thread count";
  }
}

TEST(NpuBudget, WithinTheBudgetRunsNormally) {
  int line = 0;
  auto k = compile(spinner(2, 1, 1000, &line));
  Device dev;
  Tensor x = Tensor::empty(dev, {16}, DType::Float32);
  EXPECT_EQ(error_if_any([&] { k.launch(dev, {x}, {.max_steps = 100'000}); }), "");
  EXPECT_HAS(error_of([&] { k.launch(dev, {x}, {.max_steps = -1}); }),
             "max_steps must be positive");
}

using tltest::ScopedEnv;

TEST(NpuBudget, TlMaxStepsEnvironmentVariable) {
  // A loop of 3 million iterations: finishes without a budget (as on main), fails with one.
  int line = 0;
  auto k = compile(spinner(1, 0, 3'000'000, &line));
  Device dev;
  Tensor x = Tensor::empty(dev, {16}, DType::Float32);
  {
    ScopedEnv env("TL_MAX_STEPS", "100000");
    std::string m = error_of([&] { k.launch(dev, {x}); });
    EXPECT_HAS(m, "TL_MAX_STEPS");
    EXPECT_HAS(m, "for i in T.serial");
    EXPECT_HAS(m, fmt::format("npu_budget_progress_test.cpp:{}", line));
  }
  {
    ScopedEnv env("TL_MAX_STEPS", "1e5");  // a number that is an integer
    EXPECT_HAS(error_of([&] { k.launch(dev, {x}); }), "budget of 100000 interpreter steps");
  }
  {
    ScopedEnv env("TL_MAX_STEPS", "lots");
    std::string m = error_of([&] { k.launch(dev, {x}); });
    EXPECT_HAS(m, "TL_MAX_STEPS must be a positive integer");
    EXPECT_HAS(m, "'lots'");
  }
}

TEST(NpuProgress, LongLaunchesReportProgressOnStderrShortOnesStayQuiet) {
  int line = 0;
  // 4 blocks of about a million steps per AIV: over the two-million-step quiet threshold.
  auto k = compile(spinner(4, -1, 0, &line));
  auto long_k = compile(T::prim_func("long_launch", {T::Tensor("X", {16}, DType::Float32)}, [&] {
    T::Kernel(4, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        auto acc = T::alloc_var("acc", DType::Int64);
        T::serial(150'000, [&](Expr i) { T::store(acc, {0}, i); });
      });
    });
  }));
  Device dev;
  Tensor x = Tensor::empty(dev, {16}, DType::Float32);
  testing::internal::CaptureStderr();
  k.launch(dev, {x}, {.threads = 2, .progress_percent = 25});
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  testing::internal::CaptureStderr();
  long_k.launch(dev, {x}, {.threads = 2, .progress_percent = 25});
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_HAS(err, "launch long_launch: 100% of the blocks finished (4 of 4)");
  EXPECT_HAS(err, "interpreter steps");
  testing::internal::CaptureStderr();
  long_k.launch(dev, {x}, {.threads = 2});  // progress_percent = 0: quiet
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

/// A stream that records which host thread wrote each line.
class ThreadRecorder : public std::streambuf {
 public:
  std::string text;
  std::vector<std::thread::id> writers;  // per line
 protected:
  int overflow(int c) override {
    std::lock_guard<std::mutex> g(mu_);
    if (c == EOF) return 0;
    text += static_cast<char>(c);
    if (c == '\n') writers.push_back(std::this_thread::get_id());
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) overflow(static_cast<unsigned char>(s[i]));
    return n;
  }

 private:
  std::mutex mu_;
};

/// Every core of `blocks` blocks prints `lines` lines.
PrimFunc chatty(int blocks, int lines) {
  auto X = T::Tensor("X", {16}, DType::Float32);
  return T::prim_func("chatty", {X}, [&] {
    T::Kernel(blocks, [&](Expr cid, Expr vid) {
      T::serial(lines, [&](Expr i) { T::printf("b%d v%d line %d", {cid, vid, i}); });
    });
  });
}

TEST(NpuPrintf, OutputStreamsWhileTheLaunchRuns) {
  // With two host threads every core runs on a worker thread: lines that reach the stream from
  // a worker were written during the launch, not collected and written at its end.
  auto k = compile(chatty(2, 50));
  Device dev;
  Tensor x = Tensor::empty(dev, {16}, DType::Float32);
  ThreadRecorder rec;
  std::ostream os(&rec);
  k.launch(dev, {x}, {.threads = 2, .out = &os});
  ASSERT_EQ(rec.writers.size(), 2u * 3 * 50);
  const auto me = std::this_thread::get_id();
  size_t streamed = 0;
  for (auto id : rec.writers) streamed += id != me;
  // Block 0's AIC is first in the order: its lines at least go straight out.
  EXPECT_GE(streamed, 50u);
  EXPECT_NE(rec.writers[0], me);
}

TEST(NpuPrintf, OrderIsBlockCoreProgramForAnyThreadCount) {
  const int blocks = 30, lines = 20;  // more blocks than core groups: two waves
  auto k = compile(chatty(blocks, lines));
  Device dev;
  Tensor x = Tensor::empty(dev, {16}, DType::Float32);
  std::string want;
  for (int b = 0; b < blocks; ++b)
    for (int slot = 0; slot < 3; ++slot)
      for (int i = 0; i < lines; ++i)
        want += fmt::format("[block {} {}] b{} v{} line {}\n", b,
                            slot == 0   ? "AIC"
                            : slot == 1 ? "AIV0"
                                        : "AIV1",
                            b, slot == 2 ? 1 : 0, i);
  for (int threads : {1, 2, 8, 24}) {
    std::ostringstream os;
    k.launch(dev, {x}, {.threads = threads, .out = &os});
    EXPECT_EQ(os.str(), want) << threads << " threads";
  }
}

TEST(NpuPrintf, TimedLaunchPrintsEachLineOnce) {
  // A timed launch runs the kernel twice (program order, then simulated-time order); the lines
  // printed are those of the second run, once.
  auto k = compile(chatty(2, 3));
  Device dev;
  Tensor x = Tensor::empty(dev, {16}, DType::Float32);
  std::ostringstream fast, timed;
  k.launch(dev, {x}, {.threads = 2, .out = &fast});
  npu::Profile prof;
  k.launch(dev, {x}, {.threads = 2, .out = &timed, .profile = &prof});
  EXPECT_EQ(timed.str(), fast.str());
}

TEST(NpuPrintf, LinesHeldBeyondTheMemoryBoundKeepTheirOrder) {
  // The AIC prints first in the order but waits for both AIVs, so every AIV line is held until
  // the AIC finishes: about 10 MB, past the in-memory bound, so part of it goes through the
  // temporary file and must come back whole and in order.
  const int lines = 80'000;
  auto k = compile(T::prim_func("held", {T::Tensor("X", {16}, DType::Float32)}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Cube, [&] {
        T::printf("aic first");
        T::wait_cross_flag(1);
        T::printf("aic last");
      });
      T::Scope(Core::Vector, [&] {
        T::serial(lines, [&](Expr i) {
          T::printf("vid %d line %d, padded to make the held output large", {vid, i});
        });
        T::set_cross_flag(Pipe::MTE3, 1, 2);
      });
    });
  }));
  Device dev;
  Tensor x = Tensor::empty(dev, {16}, DType::Float32);
  std::ostringstream os;
  k.launch(dev, {x}, {.out = &os});
  std::string want = "[block 0 AIC] aic first\n[block 0 AIC] aic last\n";
  for (int v = 0; v < 2; ++v)
    for (int i = 0; i < lines; ++i)
      want += fmt::format("[block 0 AIV{}] vid {} line {}, padded to make the held output large\n",
                          v, v, i);
  ASSERT_GT(want.size(), size_t{9} << 20);
  EXPECT_TRUE(os.str() == want) << "output of " << os.str().size()
                                << " bytes differs from the expected " << want.size();
}

}  // namespace
}  // namespace tl
