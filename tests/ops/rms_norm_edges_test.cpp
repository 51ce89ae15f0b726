// cann_ops_tilelang RMSNorm's edges: bad inputs give tl::Error naming the op, the argument, what
// was expected and what came, located at the caller's line (this file); empty tensors launch
// nothing and return empty outputs; NaN propagates to its own row only; the compiled-kernel
// cache compiles once per generator key whatever M is; dW is bitwise reproducible.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "cann_ops_tilelang/norm.h"
#include "common/error_of.h"
#include "ops/ops_seed.h"
#include "ops/ops_testing.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

using tltest::error_of;

#define EXPECT_CONTAINS(s, sub) EXPECT_NE((s).find(sub), std::string::npos) << (s)

TEST(RmsNormEdges, BadInputsAreLocatedErrorsNamingTheArgument) {
  tl::Device dev;
  auto x = tl::randn(dev, {4, 256}, DType::BFloat16, 1);
  auto w = tl::randn(dev, {256}, DType::BFloat16, 2);
  // dtype
  auto xi = tl::Tensor::empty(dev, {4, 256}, DType::Int32);
  auto m = error_of([&] { rms_norm(xi, w); });
  EXPECT_CONTAINS(m,
                  "rms_norm: argument 'x' has the wrong dtype: expected bfloat16 or float16 or "
                  "float32, got int32");
  EXPECT_CONTAINS(m, "tests/ops/rms_norm_edges_test.cpp:");
  // weight shape
  auto w2 = tl::randn(dev, {128}, DType::BFloat16, 3);
  EXPECT_CONTAINS(error_of([&] { rms_norm(x, w2); }),
                  "argument 'weight' has the wrong shape: expected [256], got [128]");
  // weight dtype
  auto wf = tl::randn(dev, {256}, DType::Float32, 3);
  EXPECT_CONTAINS(
      error_of([&] { rms_norm(x, wf); }),
      "argument 'weight' has the wrong dtype: expected bfloat16 (the dtype of 'x'), got float32");
  // contiguity: a column slice of a wider tensor
  auto wide = tl::randn(dev, {4, 512}, DType::BFloat16, 4);
  EXPECT_CONTAINS(error_of([&] { rms_norm(wide.slice(1, 0, 256), w); }),
                  "argument 'x' must be contiguous: expected row-major strides for shape [4, 256], "
                  "got strides [512, 1]");
  // alignment: 100 bf16 = 200 bytes per row
  auto xa = tl::randn(dev, {4, 100}, DType::BFloat16, 5),
       wa = tl::randn(dev, {100}, DType::BFloat16, 6);
  EXPECT_CONTAINS(error_of([&] { rms_norm(xa, wa); }),
                  "argument 'x' has a last dimension that breaks the 32-byte row alignment: "
                  "expected a multiple of 16 "
                  "bfloat16 elements (32 bytes), got 100");
  // device
  tl::Device other;
  auto wo = tl::randn(other, {256}, DType::BFloat16, 7);
  EXPECT_CONTAINS(error_of([&] { rms_norm(x, wo); }), "argument 'weight' is on another device");
  // residual shape; undefined x; eps
  auto r = tl::randn(dev, {5, 256}, DType::BFloat16, 8);
  EXPECT_CONTAINS(error_of([&] { rms_norm(x, w, r); }),
                  "argument 'residual' has the wrong shape: expected [4, 256], got [5, 256]");
  EXPECT_CONTAINS(error_of([&] { rms_norm(tl::Tensor(), w); }), "argument 'x' must be a tensor");
  EXPECT_CONTAINS(error_of([&] { rms_norm(x, w, {}, {.eps = -1}); }),
                  "argument 'eps' is out of range");
  EXPECT_CONTAINS(error_of([&] { rms_norm(x, w, {}, {.eps = NAN}); }),
                  "argument 'eps' is out of range");
  // hidden size too large for UB
  auto xh = tl::Tensor::empty(dev, {1, 65536}, DType::Float32),
       wh = tl::Tensor::empty(dev, {65536}, DType::Float32);
  EXPECT_CONTAINS(error_of([&] { rms_norm(xh, wh); }),
                  "has a hidden size the kernel cannot hold in UB");
  // backward: dy shape
  auto dy = tl::randn(dev, {4, 128}, DType::BFloat16, 9);
  EXPECT_CONTAINS(
      error_of([&] { rms_norm_backward(dy, x, w); }),
      "rms_norm_backward: argument 'dy' has the wrong shape: expected [4, 256], got [4, 128]");
}

TEST(RmsNormEdges, EmptyTensorsLaunchNothing) {
  tl::Device dev;
  clear_kernel_cache();
  auto x = tl::Tensor::empty(dev, {0, 7168}, DType::BFloat16);
  auto x3 = tl::Tensor::empty(dev, {2, 0, 7168}, DType::BFloat16);
  auto w = tl::randn(dev, {7168}, DType::BFloat16, 1);
  auto out = rms_norm(x, w, x, {.return_rstd = true});
  EXPECT_EQ(out.y.shape(), (std::vector<int64_t>{0, 7168}));
  EXPECT_EQ(out.residual.shape(), (std::vector<int64_t>{0, 7168}));
  EXPECT_EQ(out.rstd.shape(), (std::vector<int64_t>{0}));
  auto out3 = rms_norm(x3, w, {}, {.return_rstd = true});
  EXPECT_EQ(out3.rstd.shape(), (std::vector<int64_t>{2, 0}));
  auto g = rms_norm_backward(x, x, w);
  EXPECT_EQ(g.dx.shape(), (std::vector<int64_t>{0, 7168}));
  for (double v : g.dw.to_vector()) ASSERT_EQ(v, 0.0);  // a sum over no rows
  EXPECT_EQ(kernel_cache_stats().misses, 0);            // nothing was compiled, nothing launched
}

TEST(RmsNormEdges, NanStaysInItsRow) {
  tl::Device dev;
  auto x = tl::randn(dev, {9, 256}, DType::BFloat16, opstest::test_seed());
  auto w = tl::uniform(dev, {256}, DType::BFloat16, 2, 0.5, 1.5);
  x.set(2 * 256 + 17, NAN);  // row 2
  x.set(8 * 256 + 3, NAN);   // row 8: the tail tile
  auto out = rms_norm(x, w, {}, {.return_rstd = true});
  auto y = out.y.to_vector();
  auto rstd = out.rstd.to_vector();
  for (int64_t i = 0; i < 9; ++i) {
    const bool nan_row = i == 2 || i == 8;
    EXPECT_EQ(std::isnan(rstd[i]), nan_row) << "row " << i;
    for (int64_t j = 0; j < 256; ++j)
      ASSERT_EQ(std::isnan(y[i * 256 + j]), nan_row) << i << ", " << j;
  }
  auto g = rms_norm_backward(tl::randn(dev, {9, 256}, DType::BFloat16, 3), x, w);
  auto dx = g.dx.to_vector();
  for (int64_t j = 0; j < 256; ++j) {
    ASSERT_TRUE(std::isnan(dx[2 * 256 + j]));
    ASSERT_FALSE(std::isnan(dx[3 * 256 + j]));
  }
  for (double v : g.dw.to_vector()) ASSERT_TRUE(std::isnan(v));  // dW sums every row
}

TEST(RmsNormEdges, OneCompilePerKeyWhateverTheRowCount) {
  tl::Device dev;
  clear_kernel_cache();
  auto w = tl::uniform(dev, {512}, DType::Float16, 2, 0.5, 1.5);
  for (int64_t M : {1, 7, 33, 100}) rms_norm(tl::randn(dev, {M, 512}, DType::Float16, M), w);
  EXPECT_EQ(kernel_cache_stats().misses, 1);
  EXPECT_EQ(kernel_cache_stats().hits, 3);
  rms_norm(tl::randn(dev, {3, 512}, DType::Float16, 1), w, {},
           {.return_rstd = true});  // another key
  EXPECT_EQ(kernel_cache_stats().misses, 2);
}

// The whole-row backward reads x and dy once, so it reads them past L2 (AscendC's
// SetL2CacheHint CACHE_MODE_DISABLE): only dx enters L2, and the footprint that makes writes
// cost HBM time is dx's (docs/ops.md, "RMSNorm" step 8: 16384 x 7168 612.1 -> 522.8 us). dx and
// the dW partials, which the reduction reads back, stay in the normal mode.
TEST(RmsNormEdges, WholeRowBackwardReadsXAndDyPastL2) {
  for (DType dt : {DType::BFloat16, DType::Float32}) {
    const RmsNormKey k =
        rms_norm_bwd_key(dt, 2048, tl::get_target("A2"), Checker("rms_norm_backward", {}));
    ASSERT_EQ(k.chunk, 0) << "the whole-row schedule";
    const tl::PrimFunc f = rms_norm_bwd_rows_kernel(k);
    std::map<std::string, tl::L2CacheMode> mode;
    for (const auto& p : f->params)
      if (p.is_tensor()) mode[p.name()] = p.tensor->l2_cache;
    EXPECT_EQ(mode.at("X"), tl::L2CacheMode::Disable);
    EXPECT_EQ(mode.at("DY"), tl::L2CacheMode::Disable);
    EXPECT_EQ(mode.at("DX"), tl::L2CacheMode::Normal);
    EXPECT_EQ(mode.at("DWP"), tl::L2CacheMode::Normal);
    EXPECT_EQ(mode.at("W"), tl::L2CacheMode::Normal);
  }
}

TEST(RmsNormEdges, DwIsBitwiseReproducible) {
  tl::Device dev;
  const uint64_t seed = opstest::test_seed();
  auto x = tl::randn(dev, {1001, 512}, DType::BFloat16, seed);
  auto dy = tl::randn(dev, {1001, 512}, DType::BFloat16, seed + 1);
  auto w = tl::uniform(dev, {512}, DType::BFloat16, seed + 2, 0.5, 1.5);
  auto bits = [](const tl::Tensor& t) {
    std::vector<int64_t> v;
    for (double d : t.to_vector()) v.push_back(static_cast<int64_t>(std::llround(d * 1e6)));
    return v;
  };
  auto a = rms_norm_backward(dy, x, w), b = rms_norm_backward(dy, x, w);
  EXPECT_EQ(opstest::bitwise_equal(bits(a.dw), bits(b.dw)), "");
  EXPECT_EQ(a.dw.to_vector(), b.dw.to_vector());
}

TEST(RmsNormEdges, OutputCastsRoundToNearest) {
  // The bf16 outputs come from fp32 through CAST_RINT: no systematic bias against fp64.
  tl::Device dev;
  auto x = tl::randn(dev, {64, 1024}, DType::BFloat16, opstest::test_seed());
  auto w = tl::Tensor::empty(dev, {1024}, DType::BFloat16);
  for (int64_t j = 0; j < 1024; ++j) w.set(j, 1.0);
  auto y = rms_norm(x, w).y.to_vector();
  std::vector<double> exact(y.size());
  auto xv = x.to_vector();
  for (int64_t i = 0; i < 64; ++i) {
    double ss = 0;
    for (int64_t j = 0; j < 1024; ++j) ss += xv[i * 1024 + j] * xv[i * 1024 + j];
    for (int64_t j = 0; j < 1024; ++j)
      exact[i * 1024 + j] = xv[i * 1024 + j] / std::sqrt(ss / 1024 + 1e-6);
  }
  EXPECT_LT(std::abs(opstest::rounding_bias(y, exact, DType::BFloat16)), 0.05);
}

}  // namespace
