// Test kernel: elementwise Z = X + Y in the emitted form (docs/ascendc.md: one TBuf per memory,
// buffers from GetWithOffset at planned byte offsets, DataCopyPad for rows that are not whole
// 32-byte blocks, SetFlag/WaitFlag between the pipes). Compiled three times (kernels.h): fp16,
// fp32, and fp16 with TL_MUTANT_NO_WAIT, where the WaitFlag<MTE2_V> is deleted.
#include "kernel_operator.h"

#ifndef TL_ADD_NAME
#define TL_ADD_NAME tl_test_add_f16
#define TL_ADD_T half
#endif

extern "C" __global__ __aicore__ void TL_ADD_NAME(GM_ADDR X, GM_ADDR Y, GM_ADDR Z, int32_t M,
                                                  int32_t N, int32_t R) {
  using T = TL_ADD_T;
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  AscendC::TPipe pipe;
  AscendC::GlobalTensor<T> X_gm;
  X_gm.SetGlobalBuffer((__gm__ T*)X);
  AscendC::GlobalTensor<T> Y_gm;
  Y_gm.SetGlobalBuffer((__gm__ T*)Y);
  AscendC::GlobalTensor<T> Z_gm;
  Z_gm.SetGlobalBuffer((__gm__ T*)Z);
  AscendC::TBuf<AscendC::TPosition::VECCALC> ub_buf;
  pipe.InitBuffer(ub_buf, 196352);
  int32_t cid = 0;
  int32_t vid = 0;
  if ASCEND_IS_AIC {
    cid = AscendC::GetBlockIdx();
  }
  if ASCEND_IS_AIV {
    cid = AscendC::GetBlockIdx() / 2;
    vid = AscendC::GetSubBlockIdx();
  }
  if ASCEND_IS_AIV {
    const int32_t per_block = 32 / sizeof(T);
    const int32_t pitch = (N + per_block - 1) / per_block * per_block;  // padded UB row
    const uint32_t bytes = R * pitch * sizeof(T);
    AscendC::LocalTensor<T> x = ub_buf.GetWithOffset<T>(R * pitch, 0);
    AscendC::LocalTensor<T> y = ub_buf.GetWithOffset<T>(R * pitch, bytes);
    AscendC::LocalTensor<T> z = ub_buf.GetWithOffset<T>(R * pitch, 2 * bytes);
    const int32_t r0 = (cid * 2 + vid) * R;
    const int32_t n = r0 < M ? (M - r0 < R ? M - r0 : R) : 0;
    if (n > 0) {
      AscendC::DataCopyPad(x, X_gm[r0 * N], AscendC::DataCopyExtParams(n, N * sizeof(T), 0, 0, 0),
                           AscendC::DataCopyPadExtParams<T>(true, 0, pitch - N, T(0)));
      AscendC::DataCopyPad(y, Y_gm[r0 * N], AscendC::DataCopyExtParams(n, N * sizeof(T), 0, 0, 0),
                           AscendC::DataCopyPadExtParams<T>(true, 0, pitch - N, T(0)));
    }
    AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(0);
#ifndef TL_MUTANT_NO_WAIT
    AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(0);
#endif
    AscendC::Add(z, x, y, R * pitch);
    AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(0);
    AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(0);
    if (n > 0)
      AscendC::DataCopyPad(Z_gm[r0 * N], z, AscendC::DataCopyExtParams(n, N * sizeof(T), 0, 0, 0));
  }
}
