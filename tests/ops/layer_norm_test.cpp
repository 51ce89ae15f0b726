// cann_ops_tilelang LayerNorm forward (include/cann_ops_tilelang/norm.h) against the fp64
// reference of tests/ops/layer_norm_ref.h: bf16/fp16/fp32, weight and bias each optional,
// mean / rstd outputs, tails of rows 1, 7, 33, 1000, 4097, hidden 7168, 5120 and a hidden size
// that is not whole 32-byte blocks (130). Level 1 (the default) has 4096 x 7168 bf16. Also the
// edges: bad inputs (message text), empty tensors (no launch), NaN propagation to its row only.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cann_ops_tilelang/norm.h"
#include "common/error_of.h"
#include "ops/layer_norm_ref.h"
#include "ops/ops_seed.h"
#include "ops/ops_testing.h"
#include "tl/printer.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

struct Case {
  int64_t M, H;
  DType dt;
  bool w, b, stats;
};

std::string name(const Case& c) {
  return fmt::format("M{}_H{}_{}{}{}{}", c.M, c.H, tl::dtype_name(c.dt), c.w ? "_w" : "",
                     c.b ? "_b" : "", c.stats ? "_stats" : "");
}

std::vector<Case> grid() {
  const int level = opstest::test_level();
  if (level == 0) return {{7, 130, DType::BFloat16, true, true, true}};
  std::vector<Case> v;
  for (DType dt : {DType::BFloat16, DType::Float16, DType::Float32}) {
    for (int64_t M : {1, 7, 33}) v.push_back({M, 7168, dt, M != 7, M != 1, M == 33});
    v.push_back({1000, 130, dt, true, false, true});
    v.push_back({33, 5120, dt, true, true, false});
    v.push_back({4097, 64, dt, false, true, true});
  }
  v.push_back({4096, 7168, DType::BFloat16, true, true, false});
  if (level >= 2) v.push_back({4099, 5120, DType::BFloat16, true, true, true});
  return v;
}

// gtest prints a parameter without PrintTo as its raw bytes, struct padding included: the test's
// ctest name then changes from one discovery to the next, and ctest runs a name that is gone.
void PrintTo(const Case& c, std::ostream* os) {
  *os << fmt::format("M{} H{} {} w{} b{} stats{}", c.M, c.H, tl::dtype_name(c.dt), c.w, c.b,
                     c.stats);
}

class LayerNormGrid : public ::testing::TestWithParam<Case> {};

TEST_P(LayerNormGrid, ForwardMatchesFp64Reference) {
  const Case c = GetParam();
  const uint64_t seed = opstest::test_seed();
  tl::Device dev;
  // An offset mean: subtracting it before the variance is what keeps fp32 accurate.
  auto xv = tl::randn(dev, {c.M, c.H}, DType::Float32, seed).to_vector();
  for (auto& e : xv) e = 3 + 2 * e;
  auto x = tl::from_vector(dev, {c.M, c.H}, c.dt, xv);
  tl::Tensor w = c.w ? tl::uniform(dev, {c.H}, c.dt, seed + 1, 0.5, 1.5) : tl::Tensor();
  tl::Tensor b = c.b ? tl::randn(dev, {c.H}, c.dt, seed + 2) : tl::Tensor();
  auto out = layer_norm(x, w, b, {.eps = 1e-5, .return_stats = c.stats});
  auto wv = c.w ? w.to_vector() : std::vector<double>();
  auto bv = c.b ? b.to_vector() : std::vector<double>();
  auto want = opstest::ref::layer_norm_fwd(x.to_vector(), c.w ? &wv : nullptr, c.b ? &bv : nullptr,
                                           c.M, c.H, 1e-5);
  const auto tol = opstest::tolerance(c.dt);
  // With a bias, y is the sum of the normalised term and b: the chip's rsqrt (1e-4 relative)
  // errs on the normalised term's magnitude, which the sum may cancel.
  std::vector<double> scale(want.y.size());
  for (size_t i = 0; i < scale.size(); ++i) {
    const double bias = c.b ? bv[i % c.H] : 0.0;
    scale[i] = std::abs(want.y[i] - bias) + std::abs(bias);
  }
  EXPECT_EQ(opstest::allclose(out.y.to_vector(), want.y, c.H, tol, "y", &scale), "");
  EXPECT_LT(opstest::calc_diff(out.y.to_vector(), want.y), 1e-4);
  if (c.stats) {
    EXPECT_EQ(opstest::allclose(out.mean.to_vector(), want.mean, 1, {1e-5, 1e-5}, "mean"), "");
    EXPECT_EQ(opstest::allclose(out.rstd.to_vector(), want.rstd, 1, {1e-4, 1e-5}, "rstd"), "");
  } else {
    EXPECT_FALSE(out.mean.defined());
  }
  opstest::record_gm_peak(dev);
}

INSTANTIATE_TEST_SUITE_P(Grid, LayerNormGrid, ::testing::ValuesIn(grid()),
                         [](const auto& info) { return name(info.param); });

using tltest::error_of;

#define EXPECT_CONTAINS(s, sub) EXPECT_NE((s).find(sub), std::string::npos) << (s)

TEST(LayerNormEdges, BadInputsAreLocatedErrorsNamingTheArgument) {
  tl::Device dev;
  auto x = tl::randn(dev, {4, 256}, DType::BFloat16, 1);
  auto m = error_of([&] { layer_norm(tl::Tensor::empty(dev, {4, 256}, DType::Int32)); });
  EXPECT_CONTAINS(m,
                  "layer_norm: argument 'x' has the wrong dtype: expected bfloat16 or float16 "
                  "or float32, got int32");
  EXPECT_CONTAINS(m, "tests/ops/layer_norm_test.cpp:");
  EXPECT_CONTAINS(error_of([&] { layer_norm(x, tl::randn(dev, {128}, DType::BFloat16, 2)); }),
                  "layer_norm: argument 'weight' has the wrong shape: expected [256], got [128]");
  EXPECT_CONTAINS(error_of([&] { layer_norm(x, {}, tl::randn(dev, {256}, DType::Float32, 2)); }),
                  "layer_norm: argument 'bias' has the wrong dtype: expected bfloat16 (the dtype "
                  "of 'x'), got float32");
  EXPECT_CONTAINS(error_of([&] { layer_norm(x, {}, {}, {.eps = -1}); }),
                  "layer_norm: argument 'eps' is out of range: expected eps >= 0, got -1");
  EXPECT_CONTAINS(error_of([&] {
                    layer_norm(tl::Tensor::empty(dev, {2, 0}, DType::Float32));
                  }),
                  "argument 'x' has an empty last dimension");
  EXPECT_CONTAINS(error_of([&] {
                    layer_norm(tl::Tensor::empty(dev, {1, 65536}, DType::Float32));
                  }),
                  "layer_norm: argument 'x' has a hidden size the kernel cannot hold in UB");
}

TEST(LayerNormEdges, EmptyTensorsLaunchNothing) {
  tl::Device dev;
  clear_kernel_cache();
  auto x = tl::Tensor::empty(dev, {0, 7168}, DType::BFloat16);
  auto out = layer_norm(x, {}, {}, {.return_stats = true});
  EXPECT_EQ(out.y.shape(), x.shape());
  EXPECT_EQ(out.mean.shape(), std::vector<int64_t>{0});
  EXPECT_EQ(kernel_cache_stats().misses, 0);
}

TEST(LayerNormEdges, NanPropagatesToItsRowOnly) {
  tl::Device dev;
  auto v = tl::randn(dev, {9, 130}, DType::Float32, opstest::test_seed()).to_vector();
  v[8 * 130 + 129] = std::numeric_limits<double>::quiet_NaN();  // the tail tile's last column
  auto x = tl::from_vector(dev, {9, 130}, DType::Float32, v);
  auto y = layer_norm(x, {}, {}, {.return_stats = true});
  auto yv = y.y.to_vector(), mv = y.mean.to_vector();
  for (int64_t i = 0; i < 9; ++i) {
    EXPECT_EQ(std::isnan(mv[i]), i == 8) << i;
    for (int64_t j : {0, 64, 129}) EXPECT_EQ(std::isnan(yv[i * 130 + j]), i == 8) << i << "," << j;
  }
}

// Rows of whole 32-byte blocks load without pad_value (a padded copy waits for the V pipe and
// stops the pipeline's prefetch: docs/ops.md, "LayerNorm"); ragged rows keep the pad. The key
// takes the widest row tile whose load fits twice: 1-row tiles at 5120 (2 rows left no room).
TEST(LayerNormEdges, AlignedRowsLoadUnpaddedIntoTwoBuffers) {
  tl::Device dev;
  const Checker check("layer_norm", {});
  for (int64_t H : {5120, 7168}) {
    auto k = layer_norm_key(DType::BFloat16, H, true, true, false, dev.target(), check);
    EXPECT_EQ(k.rows_per_tile, 1) << H;
    EXPECT_EQ(tl::print(layer_norm_kernel(k)).find("pad=True"), std::string::npos) << H;
  }
  auto ragged = layer_norm_key(DType::BFloat16, 130, true, true, false, dev.target(), check);
  EXPECT_NE(tl::print(layer_norm_kernel(ragged)).find("pad=True"), std::string::npos);
}

}  // namespace
