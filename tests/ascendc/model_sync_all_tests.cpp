// SyncAll on the AscendC CPU model (src/ascendc_cpu/model.cpp, docs/ascendc.md "Cores, blocks
// and flags"): a barrier over every block, so each block's AIVs see the rows every other block
// stored before it; the same outputs and trace every run; and its bad uses as errors naming the
// cores and lines: a participant that finishes without arriving (deadlock), more blocks than
// can be resident at once, SyncAll<true> (AIVs only) called on the AIC, and a barrier whose
// callers disagree on who takes part. The kernels are small lambdas against kernel_operator.h.
#include <gtest/gtest.h>

#include <cstring>

#include "common/error_of.h"
#include "kernel_operator.h"
#include "tl/npu/npu.h"
#include "tl/npu/trace.h"

namespace tl::ascendc_tests {
namespace {

#define EXPECT_HAS(msg, text) EXPECT_NE((msg).find(text), std::string::npos) << (msg)

// Worker w = 2 * block + vid writes 16 fp32 values w + 1 to row w of W, SyncAll<true>, then
// copies row (w + 1) % workers of W to row w of Y: Y's row w must hold w + 2 (mod workers).
void neighbour_kernel(uint8_t* W, uint8_t* Y, bool sync) {
  if ASCEND_IS_AIV {
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> ub;
    pipe.InitBuffer(ub, 1024);
    AscendC::GlobalTensor<float> w_gm, y_gm;
    w_gm.SetGlobalBuffer((__gm__ float*)W);
    y_gm.SetGlobalBuffer((__gm__ float*)Y);
    const int32_t workers = AscendC::GetBlockNum() * 2, w = AscendC::GetBlockIdx();
    AscendC::LocalTensor<float> t = ub.GetWithOffset<float>(16, 0);
    AscendC::Duplicate(t, static_cast<float>(w + 1), 16);
    AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(0);
    AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(0);
    AscendC::DataCopy(w_gm[w * 16], t, 16);
    AscendC::SetFlag<AscendC::HardEvent::MTE3_MTE2>(0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE3_MTE2>(0);
    if (sync) AscendC::SyncAll<true>();
    AscendC::DataCopy(t, w_gm[(w + 1) % workers * 16], 16);
    AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE3>(0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE3>(0);
    AscendC::DataCopy(y_gm[w * 16], t, 16);
  }
}

struct Outcome {
  std::string error = "no error";
  std::vector<float> y;
  size_t events = 0;
};

Outcome run_neighbours(int blocks, bool sync, bool hazards = true) {
  Device dev;
  Tensor w = Tensor::empty(dev, {2 * blocks, 16}, DType::Float32);
  Tensor y = Tensor::empty(dev, {2 * blocks, 16}, DType::Float32);
  std::memset(w.data(), 0, static_cast<size_t>(w.nbytes()));
  std::memset(y.data(), 0, static_cast<size_t>(y.nbytes()));
  npu::Trace trace;
  Outcome r;
  try {
    ascendc_cpu::launch({.kernel = "neighbours",
                         .num_blocks = blocks,
                         .tensors = {{"W", w}, {"Y", y}},
                         .check_hazards = hazards,
                         .trace = &trace},
                        [&] { neighbour_kernel(w.data(), y.data(), sync); });
  } catch (const Error& e) {
    r.error = e.what();
  }
  const auto* p = reinterpret_cast<const float*>(y.data());
  r.y.assign(p, p + y.numel());
  for (const auto& c : trace.cores) r.events += c.events.size();
  return r;
}

TEST(AscendcModelSyncAll, EveryBlockSeesWhatTheOthersStoredBeforeIt) {
  for (int blocks : {1, 3, 24}) {
    SCOPED_TRACE(blocks);
    Outcome r = run_neighbours(blocks, true);
    ASSERT_EQ(r.error, "no error");
    const int workers = 2 * blocks;
    for (int w = 0; w < workers; ++w)
      for (int j = 0; j < 16; ++j) ASSERT_EQ(r.y[w * 16 + j], (w + 1) % workers + 1) << w;
  }
}

TEST(AscendcModelSyncAll, Deterministic) {
  Outcome a = run_neighbours(5, true), b = run_neighbours(5, true);
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.events, b.events);
  EXPECT_GT(a.events, 0u);
}

// Without the barrier, block 0 reads block 1's row before block 1 has run: the hazard checker
// names the unordered pair (and the value read is the stale one, which no check hides).
TEST(AscendcModelSyncAll, WithoutTheBarrierTheHazardCheckerNamesThePair) {
  Outcome r = run_neighbours(3, false);
  EXPECT_HAS(r.error, "RAW hazard on GM");
  EXPECT_HAS(r.error, "model_sync_all_tests.cpp:");
  Outcome quiet = run_neighbours(3, false, /*hazards=*/false);
  ASSERT_EQ(quiet.error, "no error");
  EXPECT_EQ(quiet.y[0], 0.0f) << "AIV0 of block 0 read worker 1's row before it was written";
}

TEST(AscendcModelSyncAll, ParticipantThatNeverArrivesIsADeadlock) {
  Device dev;
  Tensor x = Tensor::empty(dev, {64}, DType::Float16);
  std::string msg = tltest::error_of([&] {
    ascendc_cpu::launch({.kernel = "bad", .num_blocks = 3, .tensors = {{"X", x}}}, [&] {
      if ASCEND_IS_AIV {
        if (AscendC::GetBlockIdx() != 3) AscendC::SyncAll<true>();  // block 1 AIV1 skips it
      }
    });
  });
  EXPECT_HAS(msg, "deadlock at SyncAll: 5 of 6 participating cores arrived");
  EXPECT_HAS(msg, "block 0 AIV0: SyncAll at ");
  EXPECT_HAS(msg, "model_sync_all_tests.cpp:");
}

TEST(AscendcModelSyncAll, MoreBlocksThanCanBeResidentIsAnError) {
  Device dev;
  Tensor x = Tensor::empty(dev, {64}, DType::Float16);
  std::string msg = tltest::error_of([&] {
    ascendc_cpu::launch({.kernel = "bad", .num_blocks = 25, .tensors = {{"X", x}}}, [&] {
      if ASCEND_IS_AIV {
        AscendC::SyncAll<true>();
      }
    });
  });
  EXPECT_HAS(msg, "blocks 0..23 wait at a SyncAll and block 24 cannot start");
  EXPECT_HAS(msg, "24 AICs");
}

TEST(AscendcModelSyncAll, AivOnlyBarrierOnTheAicIsAnError) {
  Device dev;
  Tensor x = Tensor::empty(dev, {64}, DType::Float16);
  std::string msg = tltest::error_of([&] {
    ascendc_cpu::launch({.kernel = "bad", .num_blocks = 2, .tensors = {{"X", x}}},
                        [&] { AscendC::SyncAll<true>(); });
  });
  EXPECT_HAS(msg, "block 0 AIC");
  EXPECT_HAS(msg, "SyncAll<true> (isAIVOnly) synchronises the AIVs");
}

// SyncAll<false> on every core of every block: AIC and AIVs meet.
TEST(AscendcModelSyncAll, EveryCoreBarrier) {
  Device dev;
  Tensor x = Tensor::empty(dev, {64}, DType::Float16);
  std::string msg = tltest::error_if_any([&] {
    ascendc_cpu::launch({.kernel = "all", .num_blocks = 4, .tensors = {{"X", x}}}, [&] {
      AscendC::SyncAll<false>();
      AscendC::SyncAll<false>();
    });
  });
  EXPECT_EQ(msg, "");
}

// A block suspended at the barrier with its AIC waiting on a cross-core flag the AIVs set only
// after it: the barrier opens, the AIVs set the flag, the AIC goes on (no false deadlock).
TEST(AscendcModelSyncAll, CrossCoreWaitBehindTheBarrier) {
  Device dev;
  Tensor x = Tensor::empty(dev, {64}, DType::Float16);
  std::string msg = tltest::error_if_any([&] {
    ascendc_cpu::launch({.kernel = "mixed", .num_blocks = 3, .tensors = {{"X", x}}}, [&] {
      if ASCEND_IS_AIC {
        AscendC::CrossCoreWaitFlag(1);
      }
      if ASCEND_IS_AIV {
        AscendC::SyncAll<true>();
        AscendC::CrossCoreSetFlag<2, PIPE_MTE3>(1);
      }
    });
  });
  EXPECT_EQ(msg, "");
}

TEST(AscendcModelSyncAll, CallersDisagreeingOnWhoTakesPartIsAnError) {
  Device dev;
  Tensor x = Tensor::empty(dev, {64}, DType::Float16);
  std::string msg = tltest::error_of([&] {
    ascendc_cpu::launch({.kernel = "bad", .num_blocks = 1, .tensors = {{"X", x}}}, [&] {
      if ASCEND_IS_AIC {
        AscendC::SyncAll<false>();
      }
      if ASCEND_IS_AIV {
        AscendC::SyncAll<true>();
      }
    });
  });
  EXPECT_HAS(msg, "SyncAll<true> while other cores wait at SyncAll<false>");
}

}  // namespace
}  // namespace tl::ascendc_tests
