// Bad use of the AscendC API on the CPU model: each is an error naming the AscendC call, the
// core and the line of the kernel source (as the virtual NPU reports a bad tile op), never a
// silent result. The kernels here are small lambdas written against kernel_operator.h.
#include <gtest/gtest.h>

#include "common/error_of.h"
#include "kernel_operator.h"
#include "tl/npu/npu.h"

namespace tl::ascendc_tests {
namespace {

/// Runs `body` as a kernel of `blocks` blocks over GM tensor X (64 fp16).
template <typename F>
void run_kernel(F body, int blocks = 1) {
  Device dev;
  Tensor x = randn(dev, {64}, DType::Float16, 1);
  ascendc_cpu::launch({.kernel = "bad", .num_blocks = blocks, .tensors = {{"X", x}}},
                      [&] { body(x.data()); });
}

/// The message of the error running `body` as a one-block kernel raises (a test failure if none).
template <typename F>
std::string kernel_error(F body) {
  return tltest::error_of([&] { run_kernel(body); });
}

#define EXPECT_HAS(msg, text) EXPECT_NE((msg).find(text), std::string::npos) << (msg)

TEST(AscendcModelBadUse, EventIdOutOfRange) {
  std::string msg = kernel_error([](uint8_t*) {
    if ASCEND_IS_AIV {
      AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(9);
    }
  });
  EXPECT_HAS(msg, "event id 9 is outside [0, 8)");
  EXPECT_HAS(msg, "SetFlag");
  EXPECT_HAS(msg, "model_bad_use_tests.cpp:");
}

TEST(AscendcModelBadUse, MisalignedGetWithOffset) {
  std::string msg = kernel_error([](uint8_t*) {
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> ub;
    pipe.InitBuffer(ub, 1024);
    auto t = ub.GetWithOffset<half>(16, 16);
    (void)t;
  });
  EXPECT_HAS(msg, "GetWithOffset: bufOffset 16 is not a multiple of 32 bytes");
  EXPECT_HAS(msg, "block 0 AIC");
}

TEST(AscendcModelBadUse, DataCopyCountNotWholeBlocks) {
  std::string msg = kernel_error([](uint8_t* X) {
    if ASCEND_IS_AIV {
      AscendC::TPipe pipe;
      AscendC::TBuf<AscendC::TPosition::VECCALC> ub;
      pipe.InitBuffer(ub, 1024);
      AscendC::GlobalTensor<half> g;
      g.SetGlobalBuffer((__gm__ half*)X);
      AscendC::DataCopy(ub.Get<half>(), g, 7);  // 14 bytes: DataCopy would drop them
    }
  });
  EXPECT_HAS(msg, "DataCopy");
  EXPECT_HAS(msg, "not a multiple of 32");
}

TEST(AscendcModelBadUse, CountPastTheLocalTensor) {
  std::string msg = kernel_error([](uint8_t*) {
    if ASCEND_IS_AIV {
      AscendC::TPipe pipe;
      AscendC::TBuf<AscendC::TPosition::VECCALC> ub;
      pipe.InitBuffer(ub, 4096);
      auto a = ub.GetWithOffset<float>(64, 0);
      auto b = ub.GetWithOffset<float>(64, 256);
      AscendC::Add(b, a, a, 128);
    }
  });
  EXPECT_HAS(msg, "Add: dst covers 128 elements of a LocalTensor of 64");
}

TEST(AscendcModelBadUse, GmAddressOutsideTheLaunchTensors) {
  std::string msg = kernel_error([](uint8_t*) {
    if ASCEND_IS_AIV {
      static half foreign[32];
      AscendC::TPipe pipe;
      AscendC::TBuf<AscendC::TPosition::VECCALC> ub;
      pipe.InitBuffer(ub, 1024);
      AscendC::GlobalTensor<half> g;
      g.SetGlobalBuffer(foreign);
      AscendC::DataCopy(ub.Get<half>(), g, 32);
    }
  });
  EXPECT_HAS(msg, "lies in no tensor of the launch");
}

TEST(AscendcModelBadUse, VectorCallOnTheAic) {
  std::string msg = kernel_error([](uint8_t*) {
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> ub;
    pipe.InitBuffer(ub, 1024);
    auto a = ub.GetWithOffset<float>(64, 0);
    AscendC::Exp(a, a, 64);  // outside `if ASCEND_IS_AIV`
  });
  EXPECT_HAS(msg, "block 0 AIC");
  EXPECT_HAS(msg, "runs on the AIVs");
}

TEST(AscendcModelBadUse, FlagSetTwice) {
  std::string msg = kernel_error([](uint8_t*) {
    if ASCEND_IS_AIV {
      AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(1);
      AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(1);
    }
  });
  EXPECT_HAS(msg, "already set");
}

TEST(AscendcModelBadUse, CrossCoreDeadlock) {
  std::string msg = kernel_error([](uint8_t*) {
    if ASCEND_IS_AIC {
      AscendC::CrossCoreWaitFlag(3);  // no AIV ever sets it
    }
  });
  EXPECT_HAS(msg, "deadlock");
  EXPECT_HAS(msg, "CrossCoreWaitFlag");
}

// Cross-core flags that do pair up run through: AIVs -> AIC (mode 2), AIC -> AIVs (mode 2).
TEST(AscendcModel, CrossCoreHandshake) {
  EXPECT_EQ(tltest::error_if_any([] {
              run_kernel(
                  [](uint8_t*) {
                    if ASCEND_IS_AIV {
                      AscendC::CrossCoreSetFlag<2, PIPE_MTE3>(4);
                      AscendC::CrossCoreWaitFlag(5);
                    }
                    if ASCEND_IS_AIC {
                      AscendC::CrossCoreWaitFlag(4);
                      AscendC::CrossCoreSetFlag<2, PIPE_FIX>(5);
                    }
                  },
                  3);
            }),
            "");
}

}  // namespace
}  // namespace tl::ascendc_tests
