// cann_ops_tilelang SwiGLU's edges: bad inputs give tl::Error naming the op, the argument, what
// was expected and what came, located at the caller's line (this file); empty tensors launch
// nothing; NaN propagates to its own element only (and, through dweight, to its own token); one
// compile per key whatever the token count; the backward's two-source vector instructions read
// sources in opposite UB bank groups.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "cann_ops_tilelang/activation.h"
#include "common/error_of.h"
#include "ops/ops_seed.h"
#include "ops/ops_testing.h"
#include "tl/npu/trace.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

using tltest::error_of;

#define EXPECT_CONTAINS(s, sub) EXPECT_NE((s).find(sub), std::string::npos) << (s)

TEST(SwigluEdges, BadInputsAreLocatedErrorsNamingTheArgument) {
  tl::Device dev;
  auto x = tl::randn(dev, {4, 512}, DType::BFloat16, 1);
  auto xi = tl::Tensor::empty(dev, {4, 512}, DType::Int32);
  auto m = error_of([&] { swiglu(xi); });
  EXPECT_CONTAINS(m,
                  "swiglu: argument 'x' has the wrong dtype: expected bfloat16 or float16 or "
                  "float32, got int32");
  EXPECT_CONTAINS(m, "tests/ops/swiglu_edges_test.cpp:");
  EXPECT_CONTAINS(error_of([&] {
                    swiglu(tl::randn(dev, {4, 33}, DType::Float32, 2));
                  }),
                  "argument 'x' has a last dimension that cannot be split into a | b: expected an "
                  "even size of at least 2, got 33");
  // halves of 40 bf16 = 80 bytes
  EXPECT_CONTAINS(error_of([&] {
                    swiglu(tl::randn(dev, {4, 80}, DType::BFloat16, 3));
                  }),
                  "argument 'x' has halves that break the 32-byte row alignment: expected H (the "
                  "width of a and b) a multiple of 16 bfloat16 elements, got H = 40");
  EXPECT_CONTAINS(error_of([&] {
                    swiglu(tl::randn(dev, {5, 256}, DType::BFloat16, 4), {},
                           {.split = SwigluSplit::Rows, .clamp = std::nullopt});
                  }),
                  "argument 'x' has a row count that cannot be split into a over b: expected an "
                  "even number of rows, got 5");
  auto w = tl::uniform(dev, {5}, DType::Float32, 5);
  EXPECT_CONTAINS(error_of([&] { swiglu(x, w); }),
                  "swiglu: argument 'weight' has the wrong shape: expected [4], got [5]");
  auto wb = tl::uniform(dev, {4}, DType::BFloat16, 6);
  EXPECT_CONTAINS(error_of([&] { swiglu(x, wb); }),
                  "argument 'weight' has the wrong dtype: expected float32, got bfloat16");
  EXPECT_CONTAINS(
      error_of([&] { swiglu(x, {}, {.clamp = 0.0}); }),
      "argument 'clamp' is out of range: expected a finite limit >= 2^-60 (8.7e-19), got 0");
  EXPECT_CONTAINS(error_of([&] { swiglu(x, {}, {.clamp = NAN}); }),
                  "argument 'clamp' is out of range");
  auto wide = tl::randn(dev, {4, 1024}, DType::BFloat16, 7);
  EXPECT_CONTAINS(error_of([&] { swiglu(wide.slice(1, 0, 512)); }),
                  "argument 'x' must be contiguous");
  EXPECT_CONTAINS(error_of([&] { swiglu(tl::Tensor()); }), "argument 'x' must be a tensor");
  auto dy = tl::randn(dev, {4, 512}, DType::BFloat16, 8);
  EXPECT_CONTAINS(
      error_of([&] { swiglu_backward(dy, x); }),
      "swiglu_backward: argument 'dy' has the wrong shape: expected [4, 256], got [4, 512]");
  auto dyf = tl::randn(dev, {4, 256}, DType::Float16, 9);
  EXPECT_CONTAINS(error_of([&] { swiglu_backward(dyf, x); }),
                  "argument 'dy' has the wrong dtype: expected bfloat16 (the dtype of 'x'), got "
                  "float16");
}

TEST(SwigluEdges, EmptyTensorsLaunchNothing) {
  tl::Device dev;
  clear_kernel_cache();
  auto x = tl::Tensor::empty(dev, {0, 1024}, DType::BFloat16);
  auto w = tl::Tensor::empty(dev, {0}, DType::Float32);
  EXPECT_EQ(swiglu(x, w, {.clamp = 10.0}).shape(), (std::vector<int64_t>{0, 512}));
  auto x3 = tl::Tensor::empty(dev, {2, 0, 1024}, DType::Float16);
  EXPECT_EQ(swiglu(x3).shape(), (std::vector<int64_t>{2, 0, 512}));
  EXPECT_EQ(swiglu(x, {}, {.split = SwigluSplit::Rows, .clamp = std::nullopt}).shape(),
            (std::vector<int64_t>{0, 1024}));
  auto g = swiglu_backward(tl::Tensor::empty(dev, {0, 512}, DType::BFloat16), x, w);
  EXPECT_EQ(g.dx.shape(), (std::vector<int64_t>{0, 1024}));
  EXPECT_EQ(g.dweight.shape(), (std::vector<int64_t>{0}));
  EXPECT_EQ(kernel_cache_stats().misses, 0);  // nothing was compiled, nothing launched
}

TEST(SwigluEdges, NanStaysInItsElement) {
  tl::Device dev;
  const int64_t T = 9, H = 256;
  auto x = tl::randn(dev, {T, 2 * H}, DType::BFloat16, opstest::test_seed());
  auto w = tl::uniform(dev, {T}, DType::Float32, 2, 0.5, 1.5);
  x.set(2 * 2 * H + 17, NAN);     // a of token 2, column 17
  x.set(8 * 2 * H + H + 3, NAN);  // b of token 8 (the tail tile), column 3
  for (bool clamp : {false, true}) {
    SwigluConfig cfg;
    if (clamp) cfg.clamp = 10.0;
    auto y = swiglu(x, w, cfg).to_vector();
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < H; ++j)
        ASSERT_EQ(std::isnan(y[i * H + j]), (i == 2 && j == 17) || (i == 8 && j == 3))
            << i << ", " << j << " clamp " << clamp;
  }
  auto g = swiglu_backward(tl::randn(dev, {T, H}, DType::BFloat16, 3), x, w);
  auto dx = g.dx.to_vector();
  auto dw = g.dweight.to_vector();
  ASSERT_TRUE(std::isnan(dx[2 * 2 * H + 17]));      // da at the NaN a
  ASSERT_TRUE(std::isnan(dx[2 * 2 * H + H + 17]));  // db = g silu(a): NaN too
  ASSERT_TRUE(std::isnan(dx[8 * 2 * H + 3]));       // da = g b ...: NaN
  ASSERT_FALSE(std::isnan(dx[3 * 2 * H + 17]));
  for (int64_t i = 0; i < T; ++i) EXPECT_EQ(std::isnan(dw[i]), i == 2 || i == 8) << i;
}

// With a clamp the backward's masks are compare + select bitmasks: a NaN compares false, so the
// gradient through its own clamp is 0 (torch's clamp backward), while the NaN still reaches the
// other half's gradient (db = g silu(NaN); da = g b' ... with b' = NaN), and only there.
TEST(SwigluEdges, ClampedBackwardNanGoesWhereTorchPutsIt) {
  tl::Device dev;
  const int64_t T = 19, H = 576;  // 19 rows: the 16-row tiles' tail tile holds the NaN b
  auto x = tl::randn(dev, {T, 2 * H}, DType::BFloat16, opstest::test_seed());
  x.set(2 * 2 * H + 17, NAN);        // a of token 2, column 17
  x.set(18 * 2 * H + H + 3, NAN);    // b of token 18, column 3
  x.set(5 * 2 * H + 40, 20.0);       // a clamped
  x.set(5 * 2 * H + H + 41, -30.0);  // b clamped
  auto dx = swiglu_backward(tl::randn(dev, {T, H}, DType::BFloat16, 3), x, {}, {.clamp = 10.0})
                .dx.to_vector();
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < 2 * H; ++j) {
      const bool nan = (i == 2 && j == H + 17) || (i == 18 && j == 3);
      ASSERT_EQ(std::isnan(dx[i * 2 * H + j]), nan) << i << ", " << j;
    }
  EXPECT_EQ(dx[2 * 2 * H + 17], 0.0);      // da at the NaN a: 0 through its clamp
  EXPECT_EQ(dx[18 * 2 * H + H + 3], 0.0);  // db at the NaN b
  EXPECT_EQ(dx[5 * 2 * H + 40], 0.0);      // a = 20 > L
  EXPECT_EQ(dx[5 * 2 * H + H + 41], 0.0);  // b = -30 < -L
  EXPECT_NE(dx[5 * 2 * H + H + 40], 0.0);  // b of the clamped a: g silu(L)
}

TEST(SwigluEdges, ClampedElementsHaveZeroGradient) {
  tl::Device dev;
  auto x = tl::from_vector(dev, {1, 32}, DType::Float32,
                           {20, -20, 5,  0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                            1,  1,   30, -30, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  auto dy = tl::full(dev, {1, 16}, DType::Float32, 1.0);
  auto dx = swiglu_backward(dy, x, {}, {.clamp = 10.0}).dx.to_vector();
  EXPECT_EQ(dx[0], 0.0);       // a = 20 > L: clamped
  EXPECT_NE(dx[1], 0.0);       // a = -20: a <= L keeps its gradient
  EXPECT_EQ(dx[16 + 2], 0.0);  // b = 30 > L
  EXPECT_EQ(dx[16 + 3], 0.0);  // b = -30 < -L
  EXPECT_NE(dx[16 + 0], 0.0);  // b = 1 with a = 20 -> silu(10)
}

TEST(SwigluEdges, OneCompilePerKeyWhateverTheTokenCount) {
  tl::Device dev;
  clear_kernel_cache();
  for (int64_t T : {1, 7, 33, 100}) swiglu(tl::randn(dev, {T, 512}, DType::Float16, T));
  EXPECT_EQ(kernel_cache_stats().misses, 1);
  EXPECT_EQ(kernel_cache_stats().hits, 3);
}

// The backward's fp32 tiles are declared so that every two-source vector instruction reads
// sources in opposite UB bank groups (swiglu_kernel.cpp; docs/ops.md, "SwiGLU"). Counted on one
// timing-only launch of the library's key for [T, 2 x 9216] bf16: no instruction pays the
// conflict rate (the four-tile order had s (g - db) conflict on every tile; with the clamp the
// db select did, its mask sitting after the other's, until plan_memory placed bank groups:
// docs/compiler.md, "plan_memory").
TEST(SwigluEdges, BackwardTwoSourceOpsAvoidBankConflicts) {
  tl::Device dev;
  const int64_t T = 32, H = 9216;  // two 16-row tiles of each chunk
  for (bool clamp : {false, true}) {
    SwigluConfig cfg;
    if (clamp) cfg.clamp = 10.0;
    const auto key = swiglu_key(DType::BFloat16, H, true, cfg, false, dev.target(),
                                Checker("swiglu_backward", {}));
    ASSERT_EQ(key.rows_per_tile, 16);
    ASSERT_EQ(key.chunk, 512);  // on GM's 512-byte grid (swiglu_key)
    auto k = tl::compile(swiglu_bwd_kernel(key), dev.target());
    std::vector<tl::Arg> args{tl::Tensor::empty(dev, {T, H}, DType::BFloat16),
                              tl::Tensor::empty(dev, {T, 2 * H}, DType::BFloat16),
                              tl::Tensor::empty(dev, {T, 2 * H}, DType::BFloat16)};
    if (clamp) args.emplace_back(10.0);
    tl::npu::Trace trace;
    k.launch(dev, args, {.trace = &trace, .timing_only = true});
    int two_source = 0, selects = 0;
    std::map<std::string, int> conflicts;  // op name -> instructions at the conflict rate
    for (const auto& c : trace.cores)
      for (const auto& e : c.events) {
        const bool binary = e.name == "tile.mul" || e.name == "tile.sub" || e.name == "tile.add" ||
                            e.name == "tile.select" || e.name == "tile.compare";
        two_source += binary;
        selects += e.name == "tile.select";
        if (binary && e.bank_conflict) ++conflicts[e.name];
      }
    EXPECT_GT(two_source, 0);
    EXPECT_EQ(selects > 0, clamp);
    EXPECT_TRUE(conflicts.empty())
        << conflicts.begin()->first << ": " << conflicts.begin()->second << " instructions";
  }
}

}  // namespace
