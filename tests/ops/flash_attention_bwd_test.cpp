// cann_ops_tilelang FlashAttention backward (include/cann_ops_tilelang/attention.h) against the
// fp64 reference of tests/ops/flash_attention_bwd_ref.h: dq, dk, dv of the forward op's o for
// fp16/bf16, BSHD and BHSD, causal or not, sequence tails S = 1, 7, 33, 273 (none a multiple of
// the 64 x 64 tiles) and S = 128 (a multiple). The forward op supplies o and lse, as in
// training. Also: bad inputs (message text, located at this file), empty tensors (no launch),
// NaN propagation (the vector cast pass keeps it), the same bits on every run, one compiled kernel
// set for every B and S, and the opt-in benchmark cases (tests/ops/ops_bench.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "cann_ops_tilelang/attention.h"
#include "common/error_of.h"
#include "ops/flash_attention_bwd_ref.h"
#include "ops/flash_attention_case.h"
#include "ops/ops_bench.h"
#include "ops/ops_seed.h"
#include "ops/ops_testing.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

using fa_case::Case;
using fa_case::name;
using fa_case::shape_of;

std::vector<Case> grid() {
  const int level = opstest::test_level();
  if (level == 0) return {{1, 33, 2, 64, DType::Float16, true, true}};
  std::vector<Case> v;
  for (int64_t S : {1, 7, 33, 273}) {
    // Each S causal and not, each dtype and layout.
    v.push_back({2, S, 2, 128, DType::Float16, true, S == 7 || S == 273});
    v.push_back({1, S, 3, 64, DType::BFloat16, false, S != 7});
    v.push_back({1, S, 1, 64, DType::Float16, S != 33, S == 1 || S == 33});
  }
  // S a multiple of the tile sizes: no clipped tile.
  v.push_back({1, 128, 2, 128, DType::BFloat16, true, false});
  v.push_back({1, 128, 1, 64, DType::Float16, false, true});
  if (level >= 2) v.push_back({1, 1000, 2, 128, DType::BFloat16, true, true});
  return v;
}

// P and dS are rounded to the I/O dtype before the cube's products (as FlashAttention kernels
// do), o comes from the forward in that dtype, and exp is the chip's approximation. Gradients
// are sums of many such terms; the bound is relative to the tensor's largest value.
std::string close(const std::vector<double>& got, const std::vector<double>& want, int64_t D,
                  DType dt, const char* what) {
  double mx = 0;
  for (double w : want) mx = std::max(mx, std::abs(w));
  const double t = dt == DType::BFloat16 ? 3e-2 : 6e-3;
  // At S = 1 dq is exactly 0 and what comes is the rounding of o (dP - Delta cancels): the
  // floor is the inputs' scale.
  return opstest::allclose(got, want, D, {t, t * std::max(mx, 0.1)}, what);
}

class FlashAttentionBwdGrid : public ::testing::TestWithParam<Case> {};

TEST_P(FlashAttentionBwdGrid, MatchesFp64Reference) {
  const Case c = GetParam();
  const uint64_t seed = opstest::test_seed();
  tl::Device dev;
  auto q = tl::randn(dev, shape_of(c), c.dt, seed);
  auto k = tl::randn(dev, shape_of(c), c.dt, seed + 1);
  auto v = tl::randn(dev, shape_of(c), c.dt, seed + 2);
  auto dout = tl::randn(dev, shape_of(c), c.dt, seed + 3);
  const FlashAttentionConfig cfg{.causal = c.causal,
                                 .layout = c.bshd ? AttentionLayout::BSHD : AttentionLayout::BHSD};
  auto fwd = flash_attention(q, k, v, cfg);
  auto g = flash_attention_backward(dout, q, k, v, fwd.o, fwd.lse, cfg);
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.D));
  auto want = opstest::ref::flash_attention_backward(dout.to_vector(), q.to_vector(), k.to_vector(),
                                                     v.to_vector(), c.B, c.S, c.H, c.D, c.bshd,
                                                     c.causal, scale);
  EXPECT_EQ(g.dq.shape(), q.shape());
  EXPECT_EQ(g.dk.shape(), q.shape());
  EXPECT_EQ(g.dv.shape(), q.shape());
  EXPECT_EQ(close(g.dq.to_vector(), want.dq, c.D, c.dt, "dq"), "");
  EXPECT_EQ(close(g.dk.to_vector(), want.dk, c.D, c.dt, "dk"), "");
  EXPECT_EQ(close(g.dv.to_vector(), want.dv, c.D, c.dt, "dv"), "");
  if (c.S > 1) {  // at S = 1, dS = P (dP - Delta) = 0 (one key): dq and dk are exactly 0, and
                  // calc_diff of rounding noise against 0 is 1 (allclose above still bounds them)
    EXPECT_LT(opstest::calc_diff(g.dq.to_vector(), want.dq), 1e-4);
    EXPECT_LT(opstest::calc_diff(g.dk.to_vector(), want.dk), 1e-4);
  }
  EXPECT_LT(opstest::calc_diff(g.dv.to_vector(), want.dv), 1e-4);
  opstest::record_gm_peak(dev);
}

INSTANTIATE_TEST_SUITE_P(Grid, FlashAttentionBwdGrid, ::testing::ValuesIn(grid()),
                         [](const auto& info) { return name(info.param); });

using tltest::error_of;

#define EXPECT_CONTAINS(s, sub) EXPECT_NE((s).find(sub), std::string::npos) << (s)

TEST(FlashAttentionBwdEdges, BadInputsAreLocatedErrorsNamingTheArgument) {
  tl::Device dev;
  auto q = tl::randn(dev, {1, 8, 2, 64}, DType::Float16, 1);
  auto lse = tl::Tensor::empty(dev, {1, 2, 8}, DType::Float32);
  auto m = error_of([&] {
    flash_attention_backward(q, tl::randn(dev, {1, 8, 2, 64}, DType::Float32, 1), q, q, q, lse);
  });
  EXPECT_CONTAINS(m,
                  "flash_attention_backward: argument 'q' has the wrong dtype: expected float16 "
                  "or bfloat16, got float32");
  EXPECT_CONTAINS(m, "tests/ops/flash_attention_bwd_test.cpp:");
  EXPECT_CONTAINS(error_of([&] {
                    flash_attention_backward(tl::randn(dev, {1, 8, 2, 64}, DType::BFloat16, 2), q,
                                             q, q, q, lse);
                  }),
                  "flash_attention_backward: argument 'dout' has the wrong dtype: expected "
                  "float16 (the dtype of 'q'), got bfloat16");
  EXPECT_CONTAINS(
      error_of([&] {
        flash_attention_backward(q, q, q, q, tl::randn(dev, {1, 9, 2, 64}, DType::Float16, 3), lse);
      }),
      "flash_attention_backward: argument 'o' has the wrong shape: expected [1, 8, 2, "
      "64], got [1, 9, 2, 64]");
  EXPECT_CONTAINS(
      error_of([&] {
        flash_attention_backward(q, q, q, q, q, tl::Tensor::empty(dev, {1, 8, 2}, DType::Float32));
      }),
      "flash_attention_backward: argument 'lse' has the wrong shape: expected [1, 2, "
      "8], got [1, 8, 2]");
  EXPECT_CONTAINS(
      error_of([&] {
        flash_attention_backward(q, q, q, q, q, tl::Tensor::empty(dev, {1, 2, 8}, DType::Float16));
      }),
      "flash_attention_backward: argument 'lse' has the wrong dtype: expected float32, "
      "got float16");
  EXPECT_CONTAINS(error_of([&] {
                    auto q96 = tl::randn(dev, {1, 8, 2, 96}, DType::Float16, 5);
                    flash_attention_backward(q96, q96, q96, q96, q96, lse);
                  }),
                  "flash_attention_backward: argument 'q' has an unsupported head dimension: "
                  "expected D = 64 or 128 (the last dimension), got 96");
  EXPECT_CONTAINS(error_of([&] {
                    auto q3 = tl::randn(dev, {8, 2, 64}, DType::Float16, 4);
                    flash_attention_backward(q3, q3, q3, q3, q3, lse);
                  }),
                  "flash_attention_backward: argument 'q' has the wrong rank: expected 4 "
                  "dimensions (BSHD), got 3");
  EXPECT_CONTAINS(error_of([&] { flash_attention_backward(q, q, q, q, q, lse, {.scale = 0.0}); }),
                  "flash_attention_backward: argument 'scale' is out of range: expected a finite "
                  "scale > 0, got 0");
}

TEST(FlashAttentionBwdEdges, EmptyTensorsLaunchNothing) {
  tl::Device dev;
  const auto before = kernel_cache_stats();
  for (auto shape : {std::vector<int64_t>{1, 0, 2, 64}, std::vector<int64_t>{0, 5, 2, 64},
                     std::vector<int64_t>{1, 5, 0, 128}}) {
    auto q = tl::Tensor::empty(dev, shape, DType::BFloat16);
    auto lse = tl::Tensor::empty(dev, {shape[0], shape[2], shape[1]}, DType::Float32);
    auto g = flash_attention_backward(q, q, q, q, q, lse);
    EXPECT_EQ(g.dq.shape(), shape);
    EXPECT_EQ(g.dk.shape(), shape);
    EXPECT_EQ(g.dv.shape(), shape);
  }
  const auto after = kernel_cache_stats();
  EXPECT_EQ(after.hits + after.misses,
            before.hits + before.misses);  // nothing compiled or looked up
}

// A NaN in query 5 (causal, BHSD, S = 200, 64 x 64 tiles): dq only in row 5 (each row of dq is
// its own row of dS); dv in the keys query 5 sees (0 ... 5: P is exactly 0 where masked); dk in
// every key of the kv tile that meets q tile 0 (0 ... 63: the tile product dS^T Q multiplies
// q_5's NaN by the masked zeros of dS, 0 * NaN = NaN, as any matmul does); no NaN in the kv
// tiles that never meet q tile 0 (keys 64 ...).
TEST(FlashAttentionBwdEdges, NanStaysInTheTilesItFeeds) {
  tl::Device dev;
  const int64_t S = 200, D = 64;
  auto q = tl::randn(dev, {1, 1, S, D}, DType::Float16, 7);
  auto k = tl::randn(dev, {1, 1, S, D}, DType::Float16, 8);
  auto v = tl::randn(dev, {1, 1, S, D}, DType::Float16, 9);
  auto dout = tl::randn(dev, {1, 1, S, D}, DType::Float16, 10);
  auto qv = q.to_vector();
  qv[5 * D + 3] = std::nan("");
  q = tl::from_vector(dev, {1, 1, S, D}, DType::Float16, qv);
  const FlashAttentionConfig cfg{.causal = true, .layout = AttentionLayout::BHSD};
  auto fwd = flash_attention(q, k, v, cfg);
  auto g = flash_attention_backward(dout, q, k, v, fwd.o, fwd.lse, cfg);
  auto dq = g.dq.to_vector(), dk = g.dk.to_vector(), dv = g.dv.to_vector();
  auto row_nan = [&](const std::vector<double>& t, int64_t i) {
    return std::any_of(t.begin() + i * D, t.begin() + (i + 1) * D,
                       [](double x) { return std::isnan(x); });
  };
  for (int64_t i = 0; i < S; ++i) {
    EXPECT_EQ(row_nan(dq, i), i == 5) << "dq row " << i;
    EXPECT_EQ(row_nan(dv, i), i <= 5) << "dv row " << i;
    EXPECT_EQ(row_nan(dk, i), i < 64) << "dk row " << i;
  }
}

// dQ is accumulated in L0C by one core per q tile (no atomic adds across cores, docs/ops.md),
// so the gradients are the same bits on every run.
TEST(FlashAttentionBwdEdges, SameInputsGiveTheSameBits) {
  tl::Device dev;
  const std::vector<int64_t> shape{2, 100, 2, 64};
  auto q = tl::randn(dev, shape, DType::BFloat16, 21),
       k = tl::randn(dev, shape, DType::BFloat16, 22),
       v = tl::randn(dev, shape, DType::BFloat16, 23),
       d = tl::randn(dev, shape, DType::BFloat16, 24);
  auto fwd = flash_attention(q, k, v);
  auto a = flash_attention_backward(d, q, k, v, fwd.o, fwd.lse);
  auto b = flash_attention_backward(d, q, k, v, fwd.o, fwd.lse);
  EXPECT_EQ(a.dq.to_vector(), b.dq.to_vector());
  EXPECT_EQ(a.dk.to_vector(), b.dk.to_vector());
  EXPECT_EQ(a.dv.to_vector(), b.dv.to_vector());
}

TEST(FlashAttentionBwdEdges, OneKernelSetServesEveryBatchAndLength) {
  tl::Device dev;
  clear_kernel_cache();
  for (int64_t S : {5, 64, 130}) {
    for (int64_t B : {1, 3}) {
      auto q = tl::randn(dev, {B, S, 2, 64}, DType::BFloat16, S + B);
      auto lse = tl::randn(dev, {B, 2, S}, DType::Float32, S);
      flash_attention_backward(q, q, q, q, q, lse);
    }
  }
  EXPECT_EQ(kernel_cache_stats().misses, 3);  // the dq, the dk / dv and the cast pass
  EXPECT_EQ(kernel_cache_stats().hits, 15);
}

// The benchmarks (opt-in, tests/ops/ops_bench.h): S = 1024 with 16 heads of 128, causal or not,
// as the forward's.
std::vector<opsbench::Case> bench_cases() {
  std::vector<opsbench::Case> v;
  for (bool causal : {false, true}) {
    const DType dt = DType::BFloat16;
    const int64_t B = 1, S = 1024, H = 16;
    const std::string s =
        fmt::format("B{} S{} H{} D128 bfloat16 BSHD{}", B, S, H, causal ? " causal" : "");
    v.push_back({"flash_attention_backward", s, [=](tl::Device& d) {
                   auto t = [&] { return tl::Tensor::empty(d, {B, S, H, 128}, dt); };
                   auto lse = tl::Tensor::empty(d, {B, H, S}, DType::Float32);
                   flash_attention_backward(t(), t(), t(), t(), t(), lse, {.causal = causal});
                   return flash_attention_backward_cost(B, S, H, 128, dt, causal);
                 }});
  }
  return v;
}
OPS_BENCH(flash_attention_bwd_test, bench_cases())

}  // namespace
