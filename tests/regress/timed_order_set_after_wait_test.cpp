// Regression (found by fuzz_ir_launch, fuzz/regressions/ir_launch/timed_set_after_wait.ir): a
// set_flag queued on a pipe right after a wait_flag on that pipe, with no instruction of the
// pipe between them (`set_flag(V, MTE2); wait_flag(V, MTE2); set_flag(MTE2, V);
// wait_flag(MTE2, V)`), is a flag chain V -> MTE2 -> V: the second set waits in MTE2's queue
// behind the wait, so it fires only after the V work before the first set has ended, and the V
// instructions after the second wait are ordered after that work. The hazard checker knew this
// (a set carries its pipe's knowledge, including what waits joined); the timing model fired a
// pipe's set_flag (and set_cross_flag) when the pipe's earlier *instructions* had ended,
// ignoring the floor that the earlier wait put on the pipe. The set fired at once, the later V
// instruction overlapped the earlier one, and the time-ordered replay computed a write-after-
// read race that the synchronisation forbids (an RMSNorm variant: 4094 of 8192 outputs wrong).
// The tests check that the timed result equals program order and that the simulated times
// respect the chain.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/parser.h"

namespace tl {
namespace {

/// The fuzz reproducer: RMSNorm whose second loop re-reads the last X tile; its only sync
/// before the V op that overwrites xf_ub (read by the previous iteration's final cast) is the
/// V -> MTE2 -> V chain with no MTE2 instruction inside.
constexpr const char* kRmsNorm = R"(@T.prim_func
def rms_norm(X: T.Tensor((32, 256), "bfloat16"), W: T.Tensor((256,), "bfloat16"), Y: T.Tensor((32, 256), "bfloat16"), eps: T.float32):
    with T.Kernel(2, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            wf_ub = T.alloc_ub((256,), "float32")
            xb_ub = T.alloc_ub((8, 128), "bfloat16")
            xf_ub = T.alloc_ub((8, 128), "float32")
            yb_ub = T.alloc_ub((8, 128), "bfloat16")
            ss_ub = T.alloc_ub((8,), "float32")
            w_ub = T.alloc_ub((256,), "bfloat16")
            T.copy(W, w_ub)
            T.set_flag("MTE2", "V", 0)
            T.wait_flag("MTE2", "V", 0)
            T.tile.cast(wf_ub, w_ub)
            for i in T.serial(1):
                if i * 4 + (cid * 2 + vid) < 4:
                    acc_ub = T.alloc_ub((8, 128), "float32")
                    wb_ub = T.alloc_ub((8, 128), "float32")
                    row0 = (i * 4 + (cid * 2 + vid)) * 8
                    T.tile.fill(acc_ub, 0.0)
                    for i_1 in T.serial(2):
                        T.set_flag("V", "MTE2", 0)
                        T.wait_flag("V", "MTE2", 0)
                        T.copy(X[row0:row0 + 8, i_1 * 128:i_1 * 128 + 128], xb_ub)
                        T.set_flag("MTE2", "V", 0)
                        T.wait_flag("MTE2", "V", 0)
                        T.tile.cast(xf_ub, xb_ub)
                        T.pipe_barrier("V")
                        T.tile.mul(xf_ub, xf_ub, xf_ub)
                        T.pipe_barrier("V")
                        T.tile.add(acc_ub, acc_ub, xf_ub)
                    T.pipe_barrier("V")
                    T.reduce_sum(acc_ub, ss_ub)
                    T.pipe_barrier("V")
                    T.tile.mul(ss_ub, ss_ub, 0.00390625)
                    T.pipe_barrier("V")
                    T.tile.add(ss_ub, ss_ub, eps)
                    T.pipe_barrier("V")
                    T.tile.rsqrt(ss_ub, ss_ub)
                    for i_2 in T.serial(2):
                        T.set_flag("V", "MTE2", 0)
                        T.wait_flag("V", "MTE2", 0)
                        T.set_flag("MTE2", "V", 0)
                        T.wait_flag("MTE2", "V", 0)
                        T.tile.cast(xf_ub, xb_ub)
                        T.tile.broadcast(wb_ub, wf_ub[i_2 * 128:i_2 * 128 + 128])
                        T.pipe_barrier("V")
                        T.tile.row_expand_mul(xf_ub, xf_ub, ss_ub)
                        T.pipe_barrier("V")
                        T.tile.mul(xf_ub, xf_ub, wb_ub)
                        T.set_flag("MTE3", "V", 1)
                        T.wait_flag("MTE3", "V", 1)
                        T.pipe_barrier("V")
                        T.tile.cast(yb_ub, xf_ub, mode="CAST_RINT")
                        T.set_flag("V", "MTE3", 1)
                        T.wait_flag("V", "MTE3", 1)
                        T.copy(yb_ub, Y[row0:row0 + 8, i_2 * 128:i_2 * 128 + 128])
)";

/// The minimal form: mul reads a_ub, fill overwrites it, ordered only by the chain.
constexpr const char* kChain = R"(@T.prim_func
def chain(X: T.Tensor((16, 128), "float32"), Y: T.Tensor((16, 128), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a_ub = T.alloc_ub((8, 128), "float32")
            b_ub = T.alloc_ub((8, 128), "float32")
            T.copy(X[vid * 8:vid * 8 + 8, 0:128], a_ub)
            T.set_flag("MTE2", "V", 0)
            T.wait_flag("MTE2", "V", 0)
            T.tile.mul(b_ub, a_ub, a_ub)
            T.set_flag("V", "MTE2", 0)
            T.wait_flag("V", "MTE2", 0)
            T.set_flag("MTE2", "V", 0)
            T.wait_flag("MTE2", "V", 0)
            T.tile.fill(a_ub, 1.0)
            T.set_flag("V", "MTE3", 0)
            T.wait_flag("V", "MTE3", 0)
            T.copy(b_ub, Y[vid * 8:vid * 8 + 8, 0:128])
)";

/// The same chain ending in a cross-core flag: AIV0's set_cross_flag on MTE2 follows a
/// wait_flag(MTE3, MTE2) that orders it after AIV0's GM write of Y; AIV1 then reads Y. Mode 1
/// is a rendezvous of the two AIVs: both set, both wait.
constexpr const char* kCrossChain = R"(@T.prim_func
def cross_chain(X: T.Tensor((8, 128), "float32"), Y: T.Tensor((8, 128), "float32"), Z: T.Tensor((8, 128), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a_ub = T.alloc_ub((8, 128), "float32")
            if vid == 0:
                T.copy(X, a_ub)
                T.set_flag("MTE2", "MTE3", 0)
                T.wait_flag("MTE2", "MTE3", 0)
                T.copy(a_ub, Y)
                T.set_flag("MTE3", "MTE2", 0)
                T.wait_flag("MTE3", "MTE2", 0)
                T.set_cross_flag("MTE2", 0, mode=1)
                T.wait_cross_flag(0)
            else:
                T.set_cross_flag("MTE2", 0, mode=1)
                T.wait_cross_flag(0)
                T.copy(Y, a_ub)
                T.set_flag("MTE2", "MTE3", 0)
                T.wait_flag("MTE2", "MTE3", 0)
                T.copy(a_ub, Z)
)";

std::vector<double> values(const Tensor& t) {
  return t.to_vector();
}

TEST(TimedOrder, SetFlagAfterWaitOnItsPipeKeepsTheChainRmsNorm) {
  CompiledKernel k = compile(parse(kRmsNorm), default_target(), {.cache = false});
  auto run = [&](bool timed, bool hazards, npu::Profile* prof) {
    Device dev;
    Tensor x = uniform(dev, {32, 256}, bf16, 1, -2.0, 2.0),
           w = uniform(dev, {256}, bf16, 2, -2.0, 2.0);
    Tensor y = Tensor::empty(dev, {32, 256}, bf16);
    LaunchOptions opt{.threads = 1, .check_hazards = hazards};
    if (timed) opt.profile = prof;
    k.launch(dev, {x, w, y, 0.5}, opt);
    return values(y);
  };
  std::vector<double> functional = run(false, false, nullptr);
  EXPECT_NO_THROW(run(false, true, nullptr));  // race-free: the hazard checker passes it
  npu::Profile prof;
  std::vector<double> timed = run(true, false, &prof);
  EXPECT_TRUE(prof.time_order_effects.empty()) << prof.time_order_effects.front();
  EXPECT_EQ(timed, functional);
}

TEST(TimedOrder, SetFlagAfterWaitOnItsPipeKeepsTheChain) {
  CompiledKernel k = compile(parse(kChain), default_target(), {.cache = false});
  Device dev;
  Tensor x = uniform(dev, {16, 128}, f32, 3, -2.0, 2.0), y = Tensor::empty(dev, {16, 128}, f32);
  EXPECT_NO_THROW(k.launch(dev, {x, y}, {.threads = 1, .check_hazards = true}));
  y = Tensor::empty(dev, {16, 128}, f32);
  npu::Profile prof;
  k.launch(dev, {x, y}, {.threads = 1, .profile = &prof});
  EXPECT_TRUE(prof.time_order_effects.empty()) << prof.time_order_effects.front();
  for (int64_t i = 0; i < x.numel(); ++i)
    ASSERT_EQ(y.get(i), static_cast<double>(static_cast<float>(x.get(i) * x.get(i))))
        << "element " << i;
  // On each AIV the fill starts once the mul has ended.
  for (int core : {1, 2}) {
    const npu::TimedInstr *mul = nullptr, *fill = nullptr;
    for (const auto& ti : prof.instrs)
      if (ti.core == core && ti.pipe == Pipe::V) (mul ? fill : mul) = &ti;
    ASSERT_TRUE(mul && fill);
    EXPECT_GE(fill->start, mul->end)
        << "core " << core << ": " << mul->name << " [" << mul->start << ", " << mul->end << "), "
        << fill->name << " starts at " << fill->start;
  }
}

TEST(TimedOrder, SetCrossFlagAfterWaitOnItsPipeKeepsTheChain) {
  CompiledKernel k = compile(parse(kCrossChain), default_target(), {.cache = false});
  Device dev;
  Tensor x = uniform(dev, {8, 128}, f32, 4, -2.0, 2.0);
  Tensor y = full(dev, {8, 128}, f32, 0.0), z = full(dev, {8, 128}, f32, 0.0);
  EXPECT_NO_THROW(k.launch(dev, {x, y, z}, {.threads = 1, .check_hazards = true}));
  // Fresh outputs: the timed run must not find the functional run's Y in GM already.
  y = full(dev, {8, 128}, f32, 0.0);
  z = full(dev, {8, 128}, f32, 0.0);
  npu::Profile prof;
  k.launch(dev, {x, y, z}, {.threads = 1, .profile = &prof});
  EXPECT_TRUE(prof.time_order_effects.empty()) << prof.time_order_effects.front();
  EXPECT_EQ(values(z), values(x));
}

}  // namespace
}  // namespace tl
