// Regression of issue 27, bug 2: "a `let` before `with T.Kernel` never runs". A Python
// prim_func's `n_offset = N // 2` above the kernel becomes a function-level Let; every core
// started at the kernel body, so n_offset read 0. The IR below is what the compiler emitted
// for the issue's kernel `half` (16 x N). Before the fix, on 16 x 128 every one of the 2048
// output elements was wrong (Y[:, 0:64] = X[:, 0:64] + 1 instead of Y[:, 64:128] =
// X[:, 64:128] + 1; on 16 x 100, 1376 of 1600), and the stale-data checker reported the four
// region addresses computed from n_offset ("the variable 'n_offset' (set at k.py:7) was never
// set in this launch") and the 512 invalid elements each block stored into Y. A let used as the
// block count failed the launch: "cannot evaluate the block count blocks: blocks is not bound yet".
#include <gtest/gtest.h>

#include "tl/npu/npu.h"
#include "tl/npu/stale.h"
#include "tl/npu/timing.h"
#include "tl/parser.h"
#include "tl/runtime.h"

namespace tl {
namespace {

constexpr const char* kHalf = R"(N = T.dynamic("N")

@T.prim_func
def k(X: T.Tensor((16, N), "float32"), Y: T.Tensor((16, N), "float32")):
    n_offset = N // 2  # @k.py:7
    with T.Kernel(2, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            if vid == 0:
                x = T.alloc_ub((8, 64), "float32", address=0)
                T.copy(X[cid * 8:cid * 8 + 8, n_offset:n_offset + T.min(N - n_offset, 64)], x[0:8, 0:T.min(N - n_offset, 64)], pad=True)
                T.set_flag("MTE2", "V", 0, auto=True)
                T.wait_flag("MTE2", "V", 0, auto=True)
                T.tile.add(x, x, 1.0)
                T.set_flag("V", "MTE3", 0, auto=True)
                T.wait_flag("V", "MTE3", 0, auto=True)
                T.copy(x[0:8, 0:T.min(N - n_offset, 64)], Y[cid * 8:cid * 8 + 8, n_offset:n_offset + T.min(N - n_offset, 64)], pad=True)
)";

TEST(Regress, Bug2ALetBeforeTheKernelRunsOnEveryCore) {
  for (int n : {128, 100}) {  // 100: the second half's 50 columns need the padded copy
    SCOPED_TRACE(n);
    Device dev;
    Tensor X = uniform(dev, {16, n}, f32, 1), Y = full(dev, {16, n}, f32, 0.0);
    std::vector<npu::StaleFinding> stale;
    compile(parse(kHalf))
        .launch(dev, {X, Y},
                {.check_hazards = true, .check_stale = true, .stale_findings = &stale});
    EXPECT_TRUE(stale.empty()) << stale[0].str();
    auto x = X.to_vector(), y = Y.to_vector();
    int64_t wrong = 0;
    for (int r = 0; r < 16; ++r)
      for (int c = 0; c < n; ++c) {
        const double want =
            c >= n / 2 && c < n / 2 + 64 ? static_cast<float>(x[r * n + c] + 1.0) : 0.0;
        wrong += y[r * n + c] != want;
      }
    EXPECT_EQ(wrong, 0);
  }
}

// A function-level let the launcher needs: the block count (and timed mode replays it too).
TEST(Regress, Bug2ALetBeforeTheKernelCanBeTheBlockCount) {
  constexpr const char* text = R"(M = T.dynamic("M")

@T.prim_func
def k(X: T.Tensor((M, 64), "float32"), Y: T.Tensor((M, 64), "float32")):
    blocks = (M + 7) // 8
    with T.Kernel(blocks, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            if vid == 0:
                x = T.alloc_ub((8, 64), "float32")
                T.copy(X[cid * 8:cid * 8 + T.min(M - cid * 8, 8), 0:64], x[0:T.min(M - cid * 8, 8), 0:64])
                T.set_flag("MTE2", "V", 0)
                T.wait_flag("MTE2", "V", 0)
                T.tile.add(x, x, 1.0)
                T.set_flag("V", "MTE3", 0)
                T.wait_flag("V", "MTE3", 0)
                T.copy(x[0:T.min(M - cid * 8, 8), 0:64], Y[cid * 8:cid * 8 + T.min(M - cid * 8, 8), 0:64])
)";
  Device dev;
  Tensor X = uniform(dev, {20, 64}, f32, 1), Y = full(dev, {20, 64}, f32, 0.0);
  npu::Profile prof;
  compile(parse(text)).launch(dev, {X, Y}, {.check_hazards = true, .profile = &prof});
  auto x = X.to_vector(), y = Y.to_vector();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], static_cast<float>(x[i] + 1.0)) << i;
  EXPECT_TRUE(prof.time_order_effects.empty());
}

}  // namespace
}  // namespace tl
