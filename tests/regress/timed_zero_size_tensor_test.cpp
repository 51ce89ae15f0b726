// Regression (found by fuzz_ir_launch, fuzz/regressions/ir_launch/timed_zero_size_tensor.ir): a
// timed-mode launch with a tensor argument of no elements. The launch snapshot that timed mode
// replays from copied every tensor's bytes, including the 0 bytes of an empty tensor whose
// storage has no buffer: memcpy of a null pointer, undefined behaviour even for 0 bytes
// (UBSan: "null pointer passed as argument 1"). It only shows under UBSan (the asan and
// fuzz presets); elsewhere the test checks the launch still succeeds.
#include <gtest/gtest.h>

#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/parser.h"

namespace tl {
namespace {

TEST(TimedMode, ZeroSizeTensorArgument) {
  PrimFunc f = parse(R"(@T.prim_func
def empty_arg(A: T.Tensor((0,), "int32"), B: T.Tensor((4,), "int32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        for i in T.serial(0):
            A[i] = i
        B[cid] = 7
)");
  CompiledKernel k = compile(f, default_target(), {.cache = false});
  Device dev;
  Tensor a = Tensor::empty(dev, {0}, i32), b = Tensor::empty(dev, {4}, i32);
  npu::Profile prof;
  k.launch(dev, {a, b}, {.threads = 1, .profile = &prof});
  EXPECT_TRUE(prof.time_order_effects.empty());
  EXPECT_EQ(b.get(0), 7);
}

}  // namespace
}  // namespace tl
