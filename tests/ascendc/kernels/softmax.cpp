// Test kernel: fp32 row softmax, 8 rows per AIV, in the emitted form (docs/ascendc.md): the
// reductions as ReduceMax / ReduceSum with Pattern::Reduce::AR, the row broadcasts as Brcb into
// a scratch tensor and the mask + repeat form of Sub / Mul per row (a second call for the
// partial last repeat), PipeBarrier<PIPE_V> between dependent vector instructions.
#include "kernel_operator.h"

namespace {
/// dst row = src row OP tmp block (one value per row, broadcast by a block stride of 0).
template <typename F>
void row_op(F op, const AscendC::LocalTensor<float>& row, const AscendC::LocalTensor<float>& b,
            int32_t P) {
  const int32_t full = P / 64, rest = P % 64;
  if (full > 0) op(row, row, b, 64, full, AscendC::BinaryRepeatParams(1, 1, 0, 8, 8, 0));
  if (rest > 0)
    op(row[full * 64], row[full * 64], b, rest, 1, AscendC::BinaryRepeatParams(1, 1, 0, 8, 8, 0));
}
}  // namespace

extern "C" __global__ __aicore__ void tl_test_softmax(GM_ADDR X, GM_ADDR Y, int32_t M, int32_t N) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  AscendC::TPipe pipe;
  AscendC::GlobalTensor<float> X_gm;
  X_gm.SetGlobalBuffer((__gm__ float*)X);
  AscendC::GlobalTensor<float> Y_gm;
  Y_gm.SetGlobalBuffer((__gm__ float*)Y);
  AscendC::TBuf<AscendC::TPosition::VECCALC> ub_buf;
  pipe.InitBuffer(ub_buf, 196352);
  int32_t cid = 0;
  int32_t vid = 0;
  if ASCEND_IS_AIV {
    cid = AscendC::GetBlockIdx() / 2;
    vid = AscendC::GetSubBlockIdx();
  }
  if ASCEND_IS_AIV {
    const int32_t P = (N + 7) / 8 * 8;
    const uint32_t xb = 8 * P * 4;
    AscendC::LocalTensor<float> x = ub_buf.GetWithOffset<float>(8 * P, 0);
    AscendC::LocalTensor<float> m = ub_buf.GetWithOffset<float>(8, xb);
    AscendC::LocalTensor<float> s = ub_buf.GetWithOffset<float>(8, xb + 32);
    AscendC::LocalTensor<float> ones = ub_buf.GetWithOffset<float>(8, xb + 64);
    AscendC::LocalTensor<float> tmp = ub_buf.GetWithOffset<float>(64, xb + 96);
    AscendC::LocalTensor<uint8_t> work = ub_buf.GetWithOffset<uint8_t>(256, xb + 352);
    const int32_t r0 = (cid * 2 + vid) * 8;
    const int32_t n = r0 < M ? (M - r0 < 8 ? M - r0 : 8) : 0;
    if (n > 0)
      AscendC::DataCopyPad(x, X_gm[r0 * N], AscendC::DataCopyExtParams(n, N * 4, 0, 0, 0),
                           AscendC::DataCopyPadExtParams<float>(true, 0, P - N, 0.0f));
    AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(0);
    uint32_t shape[2] = {8, static_cast<uint32_t>(N)};
    AscendC::ReduceMax<float, AscendC::Pattern::Reduce::AR>(m, x, work, shape, true);
    AscendC::Duplicate(ones, 1.0f, 8);
    AscendC::PipeBarrier<PIPE_V>();
    AscendC::Brcb(tmp, m, 1, AscendC::BrcbRepeatParams(1, 8));
    AscendC::PipeBarrier<PIPE_V>();
    auto sub = [](auto&&... a) { AscendC::Sub(a...); };
    auto mul = [](auto&&... a) { AscendC::Mul(a...); };
    for (int32_t r = 0; r < 8; ++r) row_op(sub, x[r * P], tmp[r * 8], P);
    AscendC::PipeBarrier<PIPE_V>();
    AscendC::Exp(x, x, 8 * P);
    AscendC::PipeBarrier<PIPE_V>();
    AscendC::ReduceSum<float, AscendC::Pattern::Reduce::AR>(s, x, work, shape, true);
    AscendC::PipeBarrier<PIPE_V>();
    AscendC::Div(s, ones, s, 8);
    AscendC::PipeBarrier<PIPE_V>();
    AscendC::Brcb(tmp, s, 1, AscendC::BrcbRepeatParams(1, 8));
    AscendC::PipeBarrier<PIPE_V>();
    for (int32_t r = 0; r < 8; ++r) row_op(mul, x[r * P], tmp[r * 8], P);
    AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(0);
    AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(0);
    if (n > 0) AscendC::DataCopyPad(Y_gm[r0 * N], x, AscendC::DataCopyExtParams(n, N * 4, 0, 0, 0));
  }
}
