// The cube branching on a flag the vector cores write (issue 30, the cubeflag round of
// docs/ops.md "FlashAttention forward"): what a lazily rescaled FlashAttention needs to keep P V
// in L0C across kv steps. Each step the AIVs reduce a row of G to its maximum, vid 0 stores
// "flush" (max > 0) into a GM flag word with a scalar store and writes it back (T.dcci), and both
// AIVs raise a mode-2 cross-core flag; the AIC waits for it, drops its cached line of the flag
// word (T.dcci), loads the word into a let and, when it is set, drains its L0C accumulator to GM
// before starting a new sum. Expert mode expresses all of it today (scalar GM load on the AIC,
// `if` on a let, cross-core wait): these tests pin that down on the functional, hazard-checked
// and timed runs, and show the hazard checker naming each missing piece of the protocol.
#include <gtest/gtest.h>

#include <random>

#include "tl/npu/npu.h"
// after tl/npu/npu.h, which declares what it uses
#include "npu/fidelity.h"
#include "tl/npu/timing.h"
#include "tl/runtime.h"

namespace tl {
namespace {

using fidelity::launch_error;

struct Drop {
  bool cube_dcci = false;    // the AIC's dcci before its load of the flag word
  bool vector_dcci = false;  // vid 0's dcci after its store of the flag word
  bool cube_wait = false;    // the AIC's wait for the AIVs' flag
};

/// O[t] (t < N) holds the sum of the steps since the previous flush when step t flushes, O[N]
/// the last sum; step t adds X_t W (16 x 16 fp16, fp32 in L0C). Step t flushes when t > 0 and
/// max(G[t, :]) > 0.
std::string cube_flag_kernel(int n, Drop drop = {}) {
  return fmt::format(R"(@T.prim_func
def cube_flag(X: T.Tensor(({4}, 16), "float16"), W: T.Tensor((16, 16), "float16"), G: T.Tensor(({0}, 16), "float32"), F: T.Tensor(({0},), "int32"), O: T.Tensor(({5}, 16, 16), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Cube"):
            a = T.alloc_L1((16, 16), "float16")
            w = T.alloc_L1((16, 16), "float16")
            c = T.alloc_L0C((16, 16), "float32")
            T.copy(W, w)
            for t in T.serial({0}):
                T.copy(X[t * 16:t * 16 + 16, 0:16], a)
                {1}T.wait_cross_flag(0)
                {2}T.dcci(F[t:t + 1])
                flush = F[t]
                T.set_cross_flag("MTE2", 1, mode=2)
                if flush != 0:
                    T.barrier_all()
                    T.copy(c, O[t:t + 1, 0:16, 0:16])
                T.barrier_all()
                T.gemm_v0(a, w, c, t == 0 or flush != 0)
                T.barrier_all()
            T.copy(c, O[{0}:{0} + 1, 0:16, 0:16])
        with T.Scope("Vector"):
            g = T.alloc_ub((1, 16), "float32")
            mx = T.alloc_ub((8,), "float32")
            for t in T.serial({0}):
                if t > 0:
                    T.wait_cross_flag(1)
                if vid == 0:
                    T.copy(G[t:t + 1, 0:16], g)
                    T.set_flag("MTE2", "V", 0)
                    T.wait_flag("MTE2", "V", 0)
                    T.reduce_max(g, mx[0:1])
                    T.set_flag("V", "S", 0)
                    T.wait_flag("V", "S", 0)
                    F[t] = T.if_then_else(t > 0 and mx[0] > 0.0, 1, 0)
                    {3}T.dcci(F[t:t + 1])
                T.set_cross_flag("MTE3", 0, mode=2)
            T.wait_cross_flag(1)
)",
                     n, drop.cube_wait ? "# " : "", drop.cube_dcci ? "# " : "",
                     drop.vector_dcci ? "# " : "", n * 16, n + 1);
}

struct Case {
  std::vector<double> x, w, g;
  std::vector<double> expect;  // O, N + 1 tiles of 16 x 16
};

/// Inputs: X and W small integers (exact in fp16 and in every fp32 sum), G's row maxima
/// positive where `flush(t)` says so.
template <class Flush>
Case make_case(int n, uint32_t seed, Flush flush) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> small(-3, 3);
  Case c;
  c.x.resize(static_cast<size_t>(n) * 256);
  c.w.resize(256);
  c.g.assign(static_cast<size_t>(n) * 16, -1.0);
  for (auto& v : c.x) v = small(rng);
  for (auto& v : c.w) v = small(rng);
  c.expect.assign(static_cast<size_t>(n + 1) * 256, 0.0);
  std::vector<double> acc(256, 0.0);
  for (int t = 0; t < n; ++t) {
    const bool f = t > 0 && flush(t);
    if (flush(t)) c.g[static_cast<size_t>(t) * 16 + static_cast<size_t>(t % 16)] = 0.5;
    if (f) {
      std::copy(acc.begin(), acc.end(), c.expect.begin() + static_cast<ptrdiff_t>(t) * 256);
      std::fill(acc.begin(), acc.end(), 0.0);
    }
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j)
        for (int k = 0; k < 16; ++k)
          acc[static_cast<size_t>(i * 16 + j)] +=
              c.x[static_cast<size_t>(t) * 256 + static_cast<size_t>(i * 16 + k)] *
              c.w[static_cast<size_t>(k * 16 + j)];
  }
  std::copy(acc.begin(), acc.end(), c.expect.begin() + static_cast<ptrdiff_t>(n) * 256);
  return c;
}

/// Runs the kernel on `c`; returns O, or the launch's error in `err`.
std::vector<double> run(const std::string& text, int n, const Case& c, LaunchOptions opt,
                        std::string* err = nullptr) {
  Device dev;
  const DType f16 = DType::Float16, f32 = DType::Float32;
  Tensor X = from_vector(dev, {n * 16, 16}, f16, c.x), W = from_vector(dev, {16, 16}, f16, c.w),
         G = from_vector(dev, {n, 16}, f32, c.g),
         F = from_vector(dev, {n}, DType::Int32, std::vector<double>(static_cast<size_t>(n), 0)),
         O = from_vector(dev, {n + 1, 16, 16}, f32,
                         std::vector<double>(static_cast<size_t>(n + 1) * 256, 0.0));
  std::string e = launch_error(text, dev, {X, W, G, F, O}, opt);
  if (err) *err = e;
  return e.empty() ? O.to_vector() : std::vector<double>{};
}

TEST(CubeFlag, TheCubeDrainsL0COnTheStepsTheVectorCoresFlag) {
  for (int n : {1, 7, 33}) {
    for (int pattern = 0; pattern < 3; ++pattern) {
      SCOPED_TRACE(fmt::format("N = {}, pattern {}", n, pattern));
      std::mt19937 rng(static_cast<uint32_t>(n * 10 + pattern));
      std::vector<bool> flags(static_cast<size_t>(n));
      for (int t = 0; t < n; ++t)
        flags[static_cast<size_t>(t)] = pattern == 0   ? false
                                        : pattern == 1 ? true
                                                       : (rng() % 3 == 0);
      const Case c = make_case(n, static_cast<uint32_t>(n + pattern), [&](int t) {
        return static_cast<bool>(flags[static_cast<size_t>(t)]);
      });
      const std::string text = cube_flag_kernel(n);
      EXPECT_EQ(run(text, n, c, {.threads = 1}), c.expect);
      std::string err;
      EXPECT_EQ(run(text, n, c, {.threads = 1, .check_hazards = true}, &err), c.expect);
      EXPECT_EQ(err, "");
      npu::Profile prof;
      EXPECT_EQ(run(text, n, c, {.threads = 1, .profile = &prof}, &err), c.expect);
      EXPECT_EQ(err, "");
      EXPECT_TRUE(prof.time_order_effects.empty());
    }
  }
}

// A flush costs the cube a fixpipe drain and the restart; a step without one costs the flag's
// round trip only. The timed model sees the branch the data takes.
TEST(CubeFlag, TimedModeChargesTheFlushesTheDataAsksFor) {
  const int n = 33;
  auto cycles = [&](bool all) {
    const Case c = make_case(n, 5, [&](int) { return all; });
    npu::Profile prof;
    std::string err;
    run(cube_flag_kernel(n), n, c, {.threads = 1, .profile = &prof}, &err);
    EXPECT_EQ(err, "");
    return prof.total_cycles;
  };
  const double none = cycles(false), every = cycles(true);
  EXPECT_GT(every, none) << none << " " << every;
}

// Each piece of the protocol, left out, is reported: the AIC's load of the flag word without
// dropping its cached line, the AIV's store without writing it back, and the load unordered
// after the store without the cross-core wait.
TEST(CubeFlag, TheHazardCheckerNamesEachMissingPieceOfTheProtocol) {
  const int n = 7;
  const Case c = make_case(n, 3, [](int t) { return t % 2 == 1; });
  auto error = [&](Drop drop) {
    std::string err;
    run(cube_flag_kernel(n, drop), n, c, {.threads = 1, .check_hazards = true}, &err);
    return err;
  };
  const std::string cube = error({.cube_dcci = true});
  EXPECT_NE(cube.find("a scalar load of GM that DMA or another core wrote reads this core's data "
                      "cache"),
            std::string::npos)
      << cube;
  const std::string vec = error({.vector_dcci = true});
  EXPECT_NE(vec.find("a scalar store to GM stays in the storing core's data cache"),
            std::string::npos)
      << vec;
  const std::string wait = error({.cube_wait = true});
  // Without the wait the AIC runs ahead: its load comes first in the replay (a WAR pair on F),
  // and the AIVs' sets are left pending.
  EXPECT_NE(wait.find("hazard on GM: store (S, block 0 AIV0) writes F element"), std::string::npos)
      << wait;
  EXPECT_NE(wait.find("cross flag left set: cross-core flag 0"), std::string::npos) << wait;
}

}  // namespace
}  // namespace tl
