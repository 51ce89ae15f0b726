// Regression (found on topk_gate_backward, commit c9a5fd7): a scalar store whose index reads
// UB (`out_ub[idx_ub[i]] = ...`, a scatter) read the index too early in timed mode with data.
// The time-ordered replay (docs/virtual_npu.md, "Data in simulated-time order") records a
// statement's trace events before asking whether simulated time has reached it, and recording
// a store resolves its address: the index was evaluated when the interpreter reached the
// statement (right after the wait_flag(MTE2, S) was issued), not at the store's own cycle, after
// the wait is satisfied and the MTE2 copy into idx_ub has landed. It read the launch's poison
// (-1) and failed with an out-of-bounds store into out_ub. A store's index, like its value, must
// see UB as it is at the store's cycle. The kernel below scatters X through a permutation held
// in UB; fast, hazard-checked and timed runs must all give the permuted X. The same for a `let`
// whose UB load's index is itself a UB load (a gather).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/parser.h"

namespace tl {
namespace {

/// Y[idx[i]] = X[i] for i < N, on AIV0 through UB; the scatter is a scalar loop whose store
/// index reads idx_ub.
std::string scatter_kernel(int n) {
  return fmt::format(R"(@T.prim_func
def scatter(X: T.Tensor(({0},), "float32"), IDX: T.Tensor(({0},), "int32"), Y: T.Tensor(({0},), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            if vid == 0:
                x_ub = T.alloc_ub(({0},), "float32")
                idx_ub = T.alloc_ub(({0},), "int32")
                y_ub = T.alloc_ub(({0},), "float32")
                T.copy(X, x_ub)
                T.copy(IDX, idx_ub)
                T.set_flag("MTE2", "S", 0)
                T.wait_flag("MTE2", "S", 0)
                for i in T.serial({0}):
                    y_ub[idx_ub[i]] = x_ub[i]
                T.set_flag("S", "MTE3", 0)
                T.wait_flag("S", "MTE3", 0)
                T.copy(y_ub, Y)
)",
                     n);
}

/// Y[i] = X[idx[i]]: a let whose load index is a UB load (a gather), then a UB store.
std::string gather_kernel(int n) {
  return fmt::format(R"(@T.prim_func
def gather(X: T.Tensor(({0},), "float32"), IDX: T.Tensor(({0},), "int32"), Y: T.Tensor(({0},), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            if vid == 0:
                x_ub = T.alloc_ub(({0},), "float32")
                idx_ub = T.alloc_ub(({0},), "int32")
                y_ub = T.alloc_ub(({0},), "float32")
                T.copy(X, x_ub)
                T.copy(IDX, idx_ub)
                T.set_flag("MTE2", "S", 0)
                T.wait_flag("MTE2", "S", 0)
                for i in T.serial({0}):
                    v = x_ub[idx_ub[i]]
                    y_ub[i] = v
                T.set_flag("S", "MTE3", 0)
                T.wait_flag("S", "MTE3", 0)
                T.copy(y_ub, Y)
)",
                     n);
}

enum class Mode { Fast, Hazards, Timed };

/// Runs the kernel on X = 0.5 * i + 1 and a reversing-and-rotating permutation; returns Y.
std::vector<double> run(const std::string& src, int n, Mode mode) {
  CompiledKernel k = compile(parse(src), default_target(), {.cache = false});
  Device dev;
  std::vector<double> xs(n), perm(n);
  for (int i = 0; i < n; ++i) {
    xs[i] = 0.5 * i + 1;
    perm[i] = (n - 1 - i + 3) % n;
  }
  Tensor x = from_vector(dev, {n}, f32, xs), idx = from_vector(dev, {n}, i32, perm);
  Tensor y = full(dev, {n}, f32, -7.0);
  npu::Profile prof;
  LaunchOptions opt{.threads = 1, .check_hazards = mode == Mode::Hazards};
  if (mode == Mode::Timed) opt.profile = &prof;
  k.launch(dev, {x, idx, y}, opt);
  if (mode == Mode::Timed) {
    EXPECT_TRUE(prof.time_order_effects.empty()) << prof.time_order_effects.front();
  }
  return y.to_vector();
}

TEST(TimedStoreIndex, AScatterWhoseStoreIndexReadsUbSeesTheIndexAtItsCycle) {
  for (int n : {1, 7, 33, 1000}) {
    std::vector<double> want(n);
    for (int i = 0; i < n; ++i) want[(n - 1 - i + 3) % n] = 0.5 * i + 1;
    const std::string src = scatter_kernel(n);
    for (Mode m : {Mode::Fast, Mode::Hazards, Mode::Timed})
      EXPECT_EQ(run(src, n, m), want) << "n = " << n << ", mode " << static_cast<int>(m);
  }
}

TEST(TimedStoreIndex, AGatherWhoseLoadIndexReadsUbSeesTheIndexAtItsCycle) {
  for (int n : {1, 7, 33, 1000}) {
    std::vector<double> want(n);
    for (int i = 0; i < n; ++i) want[i] = 0.5 * ((n - 1 - i + 3) % n) + 1;
    const std::string src = gather_kernel(n);
    for (Mode m : {Mode::Fast, Mode::Hazards, Mode::Timed})
      EXPECT_EQ(run(src, n, m), want) << "n = " << n << ", mode " << static_cast<int>(m);
  }
}

}  // namespace
}  // namespace tl
