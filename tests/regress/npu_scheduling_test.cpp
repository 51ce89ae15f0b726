// Regressions of the virtual NPU's block scheduler (issue 10, items 7 and 8): a kernel that
// is valid on hardware must run to completion on any number of host threads, with the same
// outputs and simulated cycles; a kernel that really deadlocks must be reported on any number
// of host threads, never hang. The kernels here mix `sync_all` over one core kind with
// cross-core flags that only the other side of the barrier can satisfy, which is what made
// the per-thread deadlock test wrong: a thread whose cores are all blocked may still be
// unblocked by another thread completing the barrier.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "common/error_of.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"

namespace tl {
namespace {

constexpr int kRows = 8, kCols = 64;  // per AIV

using tltest::error_if_any;
using tltest::error_of;

/// `blocks` blocks. One core kind runs `sync_all` and then releases the other kind with a
/// cross-core flag (mode 2); the released AIVs compute Y = X + 1 on their rows. `cube_barrier`:
/// the AIC syncs and signals the AIVs (the kernel); otherwise the AIVs sync, signal the
/// AIC, which waits and signals them back.
PrimFunc barrier_then_flag(int blocks, bool cube_barrier, int barriers = 1) {
  auto X = T::Tensor("X", {blocks * 2 * kRows, kCols}, DType::Float32);
  auto Y = T::Tensor("Y", {blocks * 2 * kRows, kCols}, DType::Float32);
  return T::prim_func(cube_barrier ? "cube_sync_all_then_flag" : "vector_sync_all_then_flag",
                      {X, Y}, [&] {
                        T::Kernel(blocks, [&](Expr cid, Expr vid) {
                          T::Scope(Core::Cube, [&] {
                            if (cube_barrier) {
                              for (int b = 0; b < barriers; ++b) T::sync_all();
                            } else {
                              T::wait_cross_flag(1);
                            }
                            T::set_cross_flag(Pipe::FIX, 0, 2);
                          });
                          T::Scope(Core::Vector, [&] {
                            auto x = T::alloc_ub("x", {kRows, kCols}, DType::Float32);
                            if (!cube_barrier) {
                              for (int b = 0; b < barriers; ++b) T::sync_all();
                              T::set_cross_flag(Pipe::MTE3, 1, 2);
                            }
                            T::wait_cross_flag(0);
                            T::copy(X.at({(cid * 2 + vid) * kRows, 0}), x);
                            T::set_flag(Pipe::MTE2, Pipe::V, 0);
                            T::wait_flag(Pipe::MTE2, Pipe::V, 0);
                            T::tile::add(x, x, 1.0);
                            T::set_flag(Pipe::V, Pipe::MTE3, 0);
                            T::wait_flag(Pipe::V, Pipe::MTE3, 0);
                            T::copy(x, Y.at({(cid * 2 + vid) * kRows, 0}));
                          });
                        });
                      });
}

void run_across_thread_counts(bool cube_barrier) {
  const int blocks = 24;
  auto k = compile(barrier_then_flag(blocks, cube_barrier));
  Device dev;
  Tensor X = uniform(dev, {blocks * 2 * kRows, kCols}, DType::Float32, 7);
  std::vector<double> want;
  for (double v : X.to_vector()) want.push_back(static_cast<float>(v + 1.0));
  double cycles = -1;
  for (int threads : {1, 2, 8, 24}) {
    for (int rep = 0; rep < 5; ++rep) {
      Tensor Y = Tensor::empty(dev, {blocks * 2 * kRows, kCols}, DType::Float32);
      std::string m = error_if_any([&] { k.launch(dev, {X, Y}, {.threads = threads}); });
      ASSERT_EQ(m, "") << threads << " threads, run " << rep;
      ASSERT_EQ(Y.to_vector(), want) << threads << " threads, run " << rep;
    }
    npu::Profile prof;
    Tensor Y = Tensor::empty(dev, {blocks * 2 * kRows, kCols}, DType::Float32);
    k.launch(dev, {X, Y}, {.threads = threads, .profile = &prof});
    EXPECT_EQ(Y.to_vector(), want) << threads << " threads, timed";
    if (cycles < 0) cycles = prof.total_cycles;
    EXPECT_EQ(prof.total_cycles, cycles) << threads << " threads";
  }
}

TEST(NpuScheduling, CubeSyncAllThenCrossFlagIsNoDeadlockOnAnyThreadCount) {
  run_across_thread_counts(true);
}

TEST(NpuScheduling, VectorSyncAllThenCrossFlagIsNoDeadlockOnAnyThreadCount) {
  run_across_thread_counts(false);
}

// Found by fuzz_ir_launch (fuzz/regressions/ir_launch/two_sync_alls_false_deadlock.ir): with two
// sync_alls in a row, a thread that passed the first and parked at the second counted the
// thread still parked on the first (whose barrier had completed, but which had not woken up
// yet) as waiting, and reported a deadlock. Many short launches on 2 threads hit the window.
TEST(NpuScheduling, ConsecutiveSyncAllsAreNoDeadlockOnAnyThreadCount) {
  for (bool cube : {true, false})
    for (int barriers : {2, 3}) {
      auto k = compile(barrier_then_flag(2, cube, barriers));
      Device dev;
      Tensor X = uniform(dev, {2 * 2 * kRows, kCols}, DType::Float32, 7);
      for (int threads : {2, 3})
        for (int rep = 0; rep < 200; ++rep) {
          Tensor Y = Tensor::empty(dev, {2 * 2 * kRows, kCols}, DType::Float32);
          std::string m = error_if_any([&] { k.launch(dev, {X, Y}, {.threads = threads}); });
          ASSERT_EQ(m, "") << (cube ? "cube" : "vector") << " barriers " << barriers << ", "
                           << threads << " threads, run " << rep;
        }
    }
}

/// 6 blocks; the AIVs of block `skip` do not call sync_all (a real deadlock); with
/// `stuck_aic`, block `skip`'s AIC waits for a cross flag nobody sets instead (it never
/// reaches the cube's barrier); with `oob`, block `skip`'s AIVs read out of bounds first.
PrimFunc broken_barrier(int skip, bool stuck_aic, bool oob) {
  auto X = T::Tensor("X", {64}, DType::Float32);
  auto off = T::Scalar("off", DType::Int32);
  return T::prim_func("broken_barrier", {X, off}, [&] {
    T::Kernel(6, [&](Expr cid, Expr) {
      if (stuck_aic) {
        T::Scope(Core::Cube, [&] {
          T::If(cid == skip, [&] { T::wait_cross_flag(3); });
          T::sync_all();
        });
      } else {
        T::Scope(Core::Vector, [&] {
          auto x = T::alloc_ub("x", {64}, DType::Float32);
          if (oob) T::If(cid == skip, [&] { T::copy(X.region({off}, {64}), x); });
          T::If(cid != skip, [&] { T::sync_all(); });
        });
      }
    });
  });
}

CompiledKernel compile_unverified(const PrimFunc& f) {
  try {
    return compile(f);
  } catch (const Error&) {
    return compile(f, default_target(), {.verify = false, .lower = false});
  }
}

TEST(NpuScheduling, SyncAllSkippedByOneBlockIsTheSameDeadlockOnEveryRun) {
  auto k = compile_unverified(broken_barrier(3, false, false));
  Device dev;
  Tensor x = Tensor::empty(dev, {64}, DType::Float32);
  for (int threads : {1, 2, 6}) {
    std::string first;
    for (int rep = 0; rep < 10; ++rep) {
      std::string m = error_of([&] { k.launch(dev, {x, 0}, {.threads = threads}); });
      EXPECT_NE(m.find("deadlock"), std::string::npos) << m;
      EXPECT_NE(m.find("T.sync_all()"), std::string::npos) << m;
      EXPECT_NE(m.find("10 of the 12 participating cores reached it"), std::string::npos) << m;
      EXPECT_NE(m.find("2 finished without reaching it (block 3 AIV0, block 3 AIV1)"),
                std::string::npos)
          << m;
      if (rep == 0) first = m;
      EXPECT_EQ(m, first) << threads << " threads: the error changed between runs";
    }
  }
}

TEST(NpuScheduling, CoreStuckBeforeTheBarrierIsNamedOnAnyThreadCount) {
  auto k = compile_unverified(broken_barrier(5, true, false));
  Device dev;
  Tensor x = Tensor::empty(dev, {64}, DType::Float32);
  for (int threads : {1, 2, 6})
    for (int rep = 0; rep < 5; ++rep) {
      std::string m = error_of([&] { k.launch(dev, {x, 0}, {.threads = threads}); });
      EXPECT_NE(m.find("deadlock"), std::string::npos) << m;
      EXPECT_NE(m.find("block 5 AIC blocked on T.wait_cross_flag(3)"), std::string::npos) << m;
    }
}

TEST(NpuScheduling, AnErrorBeforeTheBarrierIsReportedNotADeadlock) {
  // Block 2's AIVs fail before the barrier the other blocks wait at: the launch reports that
  // error (the barrier's deadlock is its consequence), on any thread count and every run.
  // As written: the pipeline would clip the copy at X's end (clip_expert_copies, issue 29).
  auto k =
      compile(broken_barrier(2, false, true), default_target(), {.verify = false, .lower = false});
  Device dev;
  Tensor x = Tensor::empty(dev, {64}, DType::Float32);
  for (int threads : {1, 2, 6})
    for (int rep = 0; rep < 5; ++rep) {
      std::string m = error_of([&] { k.launch(dev, {x, 32}, {.threads = threads}); });
      EXPECT_NE(m.find("out-of-bounds"), std::string::npos) << threads << " threads: " << m;
      EXPECT_NE(m.find("block 2 AIV0"), std::string::npos) << m;
    }
}

/// Two blocks on one host thread; each AIV reads a row of the shared S, hands a cross flag to
/// its AIC and waits for one back, then writes S + 1 to S and to its row of Y: a race between
/// the blocks (no flag orders them), so Y shows in which order the thread ran them.
PrimFunc shared_counter() {
  auto S = T::Tensor("S", {2 * kRows, kCols}, DType::Float32);
  auto Y = T::Tensor("Y", {4 * kRows, kCols}, DType::Float32);
  return T::prim_func("shared_counter", {S, Y}, [&] {
    T::Kernel(2, [&](Expr cid, Expr vid) {
      T::Scope(Core::Cube, [&] {
        T::wait_cross_flag(1);
        T::set_cross_flag(Pipe::FIX, 0, 2);
      });
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x", {kRows, kCols}, DType::Float32);
        T::copy(S.at({vid * kRows, 0}), x);
        T::set_cross_flag(Pipe::MTE2, 1, 2);
        T::wait_cross_flag(0);
        T::set_flag(Pipe::MTE2, Pipe::V, 0);
        T::wait_flag(Pipe::MTE2, Pipe::V, 0);
        T::tile::add(x, x, 1.0);
        T::set_flag(Pipe::V, Pipe::MTE3, 0);
        T::wait_flag(Pipe::V, Pipe::MTE3, 0);
        T::copy(x, S.at({vid * kRows, 0}));
        T::copy(x, Y.at({(cid * 2 + vid) * kRows, 0}));
      });
    });
  });
}

TEST(NpuScheduling, AFastLaunchRunsAGroupWhileItMovesBeforeTheNext) {
  // scheduler.cpp, run_thread: in a plain functional launch a thread runs block 0's cores until
  // none can move (here: to the end) before block 1's, which then reads block 0's S + 1; the
  // sweep of one run per core (TL_NPU_PLAIN_PATHS=1, and every recording launch, the stale-data
  // checker's too) had both blocks read S before either wrote it.
  auto k = compile(shared_counter(), default_target(), {.verify = false});
  Device dev;
  for (bool plain : {false, true}) {
    ::setenv("TL_NPU_PLAIN_PATHS", plain ? "1" : "0", 1);
    Tensor S = Tensor::empty(dev, {2 * kRows, kCols}, DType::Float32);
    Tensor Y = Tensor::empty(dev, {4 * kRows, kCols}, DType::Float32);
    k.launch(dev, {S, Y}, {.threads = 1, .check_stale = false});  // ctest sets TL_CHECK_STALE
    const std::vector<double> y = Y.to_vector();
    const size_t row = kRows * kCols;
    EXPECT_EQ(y[0], 1.0) << "plain " << plain;                      // block 0 AIV0
    EXPECT_EQ(y[3 * row], plain ? 1.0 : 2.0) << "plain " << plain;  // block 1 AIV1
  }
  ::unsetenv("TL_NPU_PLAIN_PATHS");
}

}  // namespace
}  // namespace tl
