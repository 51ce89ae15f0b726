// The CPU model's row reductions in the form the emitter writes them (docs/ascendc.md,
// "Reductions"; src/ascendc/emit_reduce.cpp): per row a count-form ReduceSum / ReduceMax into a
// 32-byte slot with its own sharedTmpBuffer, then one WholeReduceSum / WholeReduceMax with a
// one-element mask gathering the slots into consecutive values. Checked against an fp64
// reference at tail widths (rows not whole 32-byte blocks), hazard checker on; and the bad uses
// of the sharedTmpBuffer (smaller than the documented minimum, misaligned) and of WholeReduceMax
// (an order the model does not compute) are errors naming the call. ArithProgression: its exact
// integer values at the same tail counts, and a negative diffValue as an error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/error_of.h"
#include "kernel_operator.h"
#include "tl/npu/npu.h"

namespace tl::ascendc_tests {
namespace {

#define EXPECT_HAS(msg, text) EXPECT_NE((msg).find(text), std::string::npos) << (msg)

/// R rows of C fp32 from X: Y[r] = sum of row r, Z[r] = max of row r, both on the model.
void row_reductions(int R, int C, uint8_t* X, uint8_t* Y, uint8_t* Z) {
  if ASCEND_IS_AIV {
    if (AscendC::GetSubBlockIdx() != 0) return;
    const int P = (C + 7) / 8 * 8;  // UB row pitch: whole 32-byte blocks
    const int W = std::max(8, ((C + 63) / 64 * 2 + 7) / 8 * 8);  // ReduceMax's tmp bounds both
    const int slot = 8 + W;
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> ub;
    pipe.InitBuffer(ub, 160 * 1024);
    auto x = ub.GetWithOffset<float>(R * P, 0);
    auto sums = ub.GetWithOffset<float>(64, R * P * 4);
    auto maxes = ub.GetWithOffset<float>(64, R * P * 4 + 256);
    auto tmp = ub.GetWithOffset<float>(R * slot, R * P * 4 + 512);
    AscendC::GlobalTensor<float> gx, gy, gz;
    gx.SetGlobalBuffer((__gm__ float*)X);
    gy.SetGlobalBuffer((__gm__ float*)Y);
    gz.SetGlobalBuffer((__gm__ float*)Z);
    AscendC::DataCopyPad(x, gx, AscendC::DataCopyExtParams(R, C * 4, 0, 0, 0),
                         AscendC::DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
    AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(0);
    for (int r = 0; r < R; ++r)
      AscendC::ReduceSum<float>(tmp[r * slot], x[r * P], tmp[8 + r * slot], C);
    AscendC::PipeBarrier<PIPE_V>();
    AscendC::WholeReduceSum<float>(sums, tmp, 1, R, 1, 1, slot / 8);
    AscendC::PipeBarrier<PIPE_V>();
    for (int r = 0; r < R; ++r)
      AscendC::ReduceMax<float>(tmp[r * slot], x[r * P], tmp[8 + r * slot], C);
    AscendC::PipeBarrier<PIPE_V>();
    AscendC::WholeReduceMax<float>(maxes, tmp, 1, R, 1, 1, slot / 8,
                                   AscendC::ReduceOrder::ORDER_ONLY_VALUE);
    AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(0);
    AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(0);
    AscendC::DataCopyPad(gy, sums, AscendC::DataCopyExtParams(1, R * 4, 0, 0, 0));
    AscendC::DataCopyPad(gz, maxes, AscendC::DataCopyExtParams(1, R * 4, 0, 0, 0));
  }
}

class RowReduceModel : public testing::TestWithParam<int> {};

TEST_P(RowReduceModel, SumAndMaxAgainstFp64) {
  const int C = GetParam();
  for (int R : {1, 7}) {
    Device dev;
    Tensor x = randn(dev, {R, C}, DType::Float32, 5);
    Tensor y = Tensor::empty(dev, {R}, DType::Float32), z = Tensor::empty(dev, {R}, DType::Float32);
    ascendc_cpu::launch({.kernel = "row_reduce", .tensors = {{"X", x}, {"Y", y}, {"Z", z}}},
                        [&] { row_reductions(R, C, x.data(), y.data(), z.data()); });
    const auto xv = x.to_vector(), yv = y.to_vector(), zv = z.to_vector();
    for (int r = 0; r < R; ++r) {
      double sum = 0, mx = -INFINITY, mag = 0;
      for (int c = 0; c < C; ++c) {
        sum += xv[r * C + c];
        mag += std::abs(xv[r * C + c]);
        mx = std::max(mx, xv[r * C + c]);
      }
      // fp32 accumulation: a bound of a few ulps per addition level of the magnitude sum.
      EXPECT_NEAR(yv[r], sum, 1e-6 * mag * std::log2(C + 1.0) + 1e-30) << "R " << R << " row " << r;
      EXPECT_EQ(zv[r], mx) << "R " << R << " row " << r;  // a max rounds nothing
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tails, RowReduceModel, testing::Values(1, 7, 33, 1000, 4097),
                         [](const testing::TestParamInfo<int>& p) {
                           return fmt::format("C{}", p.param);
                         });

// ArithProgression on the model: exact integer values at tail counts, fp32 and int32 (the
// only values the emitter emits it for: docs/ascendc.md "Reductions").
TEST_P(RowReduceModel, ArithProgressionValues) {
  const int C = GetParam();
  Device dev;
  Tensor f = Tensor::empty(dev, {C}, DType::Float32), i = Tensor::empty(dev, {C}, DType::Int32);
  ascendc_cpu::launch({.kernel = "progression", .tensors = {{"F", f}, {"I", i}}}, [&] {
    if ASCEND_IS_AIV {
      if (AscendC::GetSubBlockIdx() != 0) return;
      AscendC::TPipe pipe;
      AscendC::TBuf<AscendC::TPosition::VECCALC> ub;
      pipe.InitBuffer(ub, 64 * 1024);
      const int bytes = (C * 4 + 31) / 32 * 32;
      auto uf = ub.GetWithOffset<float>(bytes / 4, 0);
      auto ui = ub.GetWithOffset<int32_t>(bytes / 4, bytes);
      AscendC::GlobalTensor<float> gf;
      AscendC::GlobalTensor<int32_t> gi;
      gf.SetGlobalBuffer((__gm__ float*)f.data());
      gi.SetGlobalBuffer((__gm__ int32_t*)i.data());
      AscendC::ArithProgression<float>(uf, -5.0f, 2.0f, C);
      AscendC::ArithProgression<int32_t>(ui, 7, 3, C);
      AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(0);
      AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(0);
      AscendC::DataCopyPad(gf, uf, AscendC::DataCopyExtParams(1, C * 4, 0, 0, 0));
      AscendC::DataCopyPad(gi, ui, AscendC::DataCopyExtParams(1, C * 4, 0, 0, 0));
    }
  });
  const auto fv = f.to_vector(), iv = i.to_vector();
  for (int k = 0; k < C; ++k) {
    ASSERT_EQ(fv[k], -5.0 + 2.0 * k) << k;
    ASSERT_EQ(iv[k], 7.0 + 3.0 * k) << k;
  }
}

/// The message of the error running `body` on one block over a GM tensor raises (a test
/// failure if none).
template <typename F>
std::string kernel_error(F body) {
  Device dev;
  Tensor x = randn(dev, {64}, DType::Float32, 1);
  return tltest::error_of([&] {
    ascendc_cpu::launch({.kernel = "bad", .tensors = {{"X", x}}}, [&] { body(); });
  });
}

TEST(AscendcModelBadUse, ArithProgressionNegativeDiff) {
  std::string msg = kernel_error([] {
    if ASCEND_IS_AIV {
      AscendC::TPipe pipe;
      AscendC::TBuf<AscendC::TPosition::VECCALC> ub;
      pipe.InitBuffer(ub, 1024);
      AscendC::ArithProgression<float>(ub.Get<float>(), 0.0f, -1.0f, 64);
    }
  });
  EXPECT_HAS(msg, "ArithProgression: diffValue -1 (the API takes diffValue >= 0)");
}

TEST(AscendcModelBadUse, ReduceSumTmpBelowTheDocumentedMinimum) {
  std::string msg = kernel_error([] {
    if ASCEND_IS_AIV {
      AscendC::TPipe pipe;
      AscendC::TBuf<AscendC::TPosition::VECCALC> ub;
      pipe.InitBuffer(ub, 8192);
      auto src = ub.GetWithOffset<float>(1000, 0);
      auto dst = ub.GetWithOffset<float>(8, 4096);
      auto tmp = ub.GetWithOffset<float>(8, 4128);  // 1000 floats are 16 repeats: 16 needed
      AscendC::ReduceSum<float>(dst, src, tmp, 1000);
    }
  });
  EXPECT_HAS(msg, "ReduceSum: sharedTmpBuffer holds 8 elements; count 1000 needs at least 16");
  EXPECT_HAS(msg, "model_reduce_tests.cpp:");
}

TEST(AscendcModelBadUse, ReduceMaxTmpBelowTheDocumentedMinimum) {
  std::string msg = kernel_error([] {
    if ASCEND_IS_AIV {
      AscendC::TPipe pipe;
      AscendC::TBuf<AscendC::TPosition::VECCALC> ub;
      pipe.InitBuffer(ub, 8192);
      auto src = ub.GetWithOffset<float>(1000, 0);
      auto dst = ub.GetWithOffset<float>(8, 4096);
      auto tmp = ub.GetWithOffset<float>(16, 4128);  // a value and an index per repeat: 32
      AscendC::ReduceMax<float>(dst, src, tmp, 1000);
    }
  });
  EXPECT_HAS(msg, "ReduceMax: sharedTmpBuffer holds 16 elements; count 1000 needs at least 32");
}

TEST(AscendcModelBadUse, ReduceTmpMisaligned) {
  std::string msg = kernel_error([] {
    if ASCEND_IS_AIV {
      AscendC::TPipe pipe;
      AscendC::TBuf<AscendC::TPosition::VECCALC> ub;
      pipe.InitBuffer(ub, 8192);
      auto src = ub.GetWithOffset<float>(64, 0);
      auto dst = ub.GetWithOffset<float>(8, 256);
      auto tmp = ub.GetWithOffset<float>(64, 512);
      AscendC::ReduceSum<float>(dst, src, tmp[4], 64);
    }
  });
  EXPECT_HAS(msg, "sharedTmpBuffer at byte 528 of UB is not 32-byte aligned");
}

TEST(AscendcModelBadUse, WholeReduceMaxWithIndex) {
  std::string msg = kernel_error([] {
    if ASCEND_IS_AIV {
      AscendC::TPipe pipe;
      AscendC::TBuf<AscendC::TPosition::VECCALC> ub;
      pipe.InitBuffer(ub, 8192);
      auto src = ub.GetWithOffset<float>(64, 0);
      auto dst = ub.GetWithOffset<float>(8, 256);
      AscendC::WholeReduceMax<float>(dst, src, 64, 1, 1, 1, 8);  // ORDER_VALUE_INDEX
    }
  });
  EXPECT_HAS(msg, "WholeReduceMax: only ReduceOrder::ORDER_ONLY_VALUE is modelled");
}

}  // namespace
}  // namespace tl::ascendc_tests
