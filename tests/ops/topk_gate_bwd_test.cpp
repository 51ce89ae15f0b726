// cann_ops_tilelang's top-k gate backward (include/cann_ops_tilelang/moe.h,
// topk_gate_backward) against the fp64 reference of tests/ops/topk_gate_ref.h, and the
// reference itself against central finite differences of the forward's fp64 weights (so the
// formula of docs/ops.md is checked, not only copied). Grid over OPS_TILELANG_TEST_LEVEL:
// tokens 1, 7, 33, 4001 (tails of the 8-token tile), E = 256, k = 8 and E = 64, k = 16,
// bf16/fp16/fp32, the three scorings, normalised or not; the indices distinct random experts.
// The must-show cases: T = 4001, E = 256, k = 8 with forced ties (the indices the forward chose
// among dozens of equal keys), T = 0 (no launch), bad inputs (message text), NaN propagation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "cann_ops_tilelang/moe.h"
#include "common/error_of.h"
#include "ops/ops_seed.h"
#include "ops/ops_testing.h"
#include "ops/topk_gate_ref.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

struct Case {
  int64_t T, E, k;
  DType dt;
  GateScoring scoring;
  bool normalize;
};

std::string name(const Case& c) {
  return fmt::format("T{}_E{}_k{}_{}_s{}{}", c.T, c.E, c.k, tl::dtype_name(c.dt),
                     static_cast<int>(c.scoring), c.normalize ? "_norm" : "");
}

void PrintTo(const Case& c, std::ostream* os) {
  *os << name(c);
}

std::vector<Case> grid() {
  using S = GateScoring;
  if (opstest::test_level() == 0) return {{7, 256, 8, DType::Float32, S::Sigmoid, true}};
  std::vector<Case> v;
  for (int64_t T : {1, 7, 33, 4001}) v.push_back({T, 256, 8, DType::BFloat16, S::Sigmoid, true});
  v.push_back({33, 256, 8, DType::Float32, S::Sigmoid, true});
  v.push_back({33, 256, 8, DType::Float16, S::Softmax, true});
  v.push_back({7, 256, 8, DType::Float32, S::Softmax, false});
  v.push_back({33, 256, 8, DType::Float32, S::None, false});
  v.push_back({33, 64, 16, DType::Float32, S::None, true});
  v.push_back({1000, 64, 16, DType::BFloat16, S::Softmax, true});
  if (opstest::test_level() >= 2) v.push_back({16384, 256, 8, DType::BFloat16, S::Sigmoid, true});
  return v;
}

/// k distinct experts per token, in random order.
std::vector<int64_t> random_indices(int64_t T, int64_t E, int64_t k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> out(T * k), all(E);
  for (int64_t t = 0; t < T; ++t) {
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    std::copy(all.begin(), all.begin() + k, out.begin() + t * k);
  }
  return out;
}

/// "" when the kernel's dz matches the fp64 reference for these inputs.
std::string check(const Case& c, const tl::Tensor& dw, const tl::Tensor& z,
                  const std::vector<int64_t>& idx, const tl::Tensor& dz) {
  auto s = opstest::ref::gate_scores(z.to_vector(), c.T, c.E, static_cast<int>(c.scoring));
  std::vector<double> mag;
  auto want = opstest::ref::gate_backward(dw.to_vector(), idx, s, c.T, c.E, c.k,
                                          static_cast<int>(c.scoring), c.normalize, 2.5, &mag);
  // The chip's sigmoid / exp are approximations (docs/virtual_npu.md): every term carries
  // their relative error, which `mag` scales; the I/O rounding is the dtype's tolerance.
  for (auto& m : mag) m *= 10;
  return opstest::allclose(dz.to_vector(), want, c.E, opstest::tolerance(c.dt), "dlogits", &mag);
}

class TopkGateBwdGrid : public ::testing::TestWithParam<Case> {};

TEST_P(TopkGateBwdGrid, MatchesFp64Reference) {
  const Case c = GetParam();
  const uint64_t seed = opstest::test_seed();
  tl::Device dev;
  auto z = tl::randn(dev, {c.T, c.E}, c.dt, seed);
  auto dw = tl::randn(dev, {c.T, c.k}, DType::Float32, seed + 1);
  auto idx = random_indices(c.T, c.E, c.k, seed + 2);
  auto it =
      tl::from_vector(dev, {c.T, c.k}, DType::Int32, std::vector<double>(idx.begin(), idx.end()));
  TopkGateConfig cfg{.k = c.k, .scoring = c.scoring, .normalize = c.normalize, .route_scale = 2.5};
  auto dz = topk_gate_backward(dw, z, it, cfg);
  EXPECT_EQ(dz.shape(), (std::vector<int64_t>{c.T, c.E}));
  EXPECT_EQ(dz.dtype(), c.dt);
  EXPECT_EQ(check(c, dw, z, idx, dz), "");
  opstest::record_gm_peak(dev);
}

INSTANTIATE_TEST_SUITE_P(Grid, TopkGateBwdGrid, ::testing::ValuesIn(grid()),
                         [](const auto& info) { return name(info.param); });

/// The reference's formula against central differences of the fp64 forward (gate_weights with
/// the indices held fixed): d/dz_e sum_j dW_j W_j(z).
TEST(TopkGateBwd, ReferenceMatchesFiniteDifferences) {
  const int64_t T = 3, E = 32, k = 8;
  std::mt19937_64 rng(opstest::test_seed());
  std::normal_distribution<double> nd;
  std::vector<double> z(T * E), dw(T * k);
  for (auto& v : z) v = nd(rng);
  for (auto& v : dw) v = nd(rng);
  auto idx = random_indices(T, E, k, 7);
  for (int scoring : {0, 1, 2})
    for (bool normalize : {false, true}) {
      SCOPED_TRACE(fmt::format("scoring {} normalize {}", scoring, normalize));
      auto loss = [&](const std::vector<double>& zz) {
        auto w = opstest::ref::gate_weights(opstest::ref::gate_scores(zz, T, E, scoring), idx, T, E,
                                            k, normalize, 2.5);
        double l = 0;
        for (size_t i = 0; i < w.size(); ++i) l += w[i] * dw[i];
        return l;
      };
      auto got = opstest::ref::gate_backward(dw, idx, opstest::ref::gate_scores(z, T, E, scoring),
                                             T, E, k, scoring, normalize, 2.5);
      const double h = 1e-6;
      for (int64_t i = 0; i < T * E; ++i) {
        auto zp = z, zm = z;
        zp[i] += h;
        zm[i] -= h;
        const double fd = (loss(zp) - loss(zm)) / (2 * h);
        EXPECT_NEAR(got[i], fd, 1e-6 * (1 + std::abs(fd))) << i;
      }
    }
}

/// The indices the forward chose among forced ties (logits from five values): the backward
/// takes them as given, so its gradient lands on exactly the experts the forward picked.
TEST(TopkGateBwd, ForcedTiesT4001) {
  const uint64_t seed = opstest::test_seed();
  tl::Device dev;
  for (auto scoring : {GateScoring::Sigmoid, GateScoring::None, GateScoring::Softmax}) {
    SCOPED_TRACE(static_cast<int>(scoring));
    const Case c{4001, 256, 8, DType::Float32, scoring, true};
    std::mt19937_64 rng(seed);
    std::vector<double> zv(c.T * c.E);
    for (auto& x : zv) x = static_cast<double>(static_cast<int>(rng() % 5) - 2);
    auto z = tl::from_vector(dev, {c.T, c.E}, DType::Float32, zv);
    TopkGateConfig cfg{.k = c.k, .scoring = scoring, .normalize = true, .route_scale = 2.5};
    auto fwd = topk_gate(z, {}, cfg);
    auto iv = fwd.indices.to_vector();
    std::vector<int64_t> idx(iv.begin(), iv.end());
    auto dw = tl::randn(dev, {c.T, c.k}, DType::Float32, seed + 1);
    auto dz = topk_gate_backward(dw, z, fwd.indices, cfg);
    EXPECT_EQ(check(c, dw, z, idx, dz), "");
    if (scoring != GateScoring::Softmax) {
      // Sigmoid / None: exactly the chosen experts get a gradient.
      auto d = dz.to_vector();
      int64_t wrong = 0;
      for (int64_t t = 0; t < c.T; ++t)
        for (int64_t e = 0; e < c.E; ++e) {
          const bool chosen = std::count(idx.begin() + t * c.k, idx.begin() + (t + 1) * c.k, e);
          wrong += !chosen && d[t * c.E + e] != 0;
        }
      EXPECT_EQ(wrong, 0);
    }
  }
}

using tltest::error_of;

#define EXPECT_CONTAINS(s, sub) EXPECT_NE((s).find(sub), std::string::npos) << (s)

TEST(TopkGateBwdEdges, BadInputsAreLocatedErrorsNamingTheArgument) {
  tl::Device dev;
  auto z = tl::randn(dev, {4, 256}, DType::Float32, 1);
  auto dw = tl::randn(dev, {4, 8}, DType::Float32, 2);
  auto idx = tl::full(dev, {4, 8}, DType::Int32, 3.0);
  auto m = error_of([&] { topk_gate_backward(dw, z, tl::full(dev, {4, 8}, DType::Float32, 1)); });
  EXPECT_CONTAINS(m,
                  "topk_gate_backward: argument 'indices' has the wrong dtype: expected int32, got "
                  "float32");
  EXPECT_CONTAINS(m, "tests/ops/topk_gate_bwd_test.cpp:");
  EXPECT_CONTAINS(error_of([&] {
                    topk_gate_backward(tl::randn(dev, {4, 16}, DType::Float32, 2), z, idx);
                  }),
                  "argument 'dweights' has the wrong shape: expected [4, 8], got [4, 16]");
  EXPECT_CONTAINS(error_of([&] {
                    topk_gate_backward(dw, z, tl::full(dev, {4, 8}, DType::Int32, 256.0));
                  }),
                  "argument 'indices' holds an expert out of range: expected values in [0, 256), "
                  "got 256 at token 0, slot 0");
  EXPECT_CONTAINS(error_of([&] {
                    topk_gate_backward(dw, tl::randn(dev, {4, 100}, DType::Float32, 2), idx);
                  }),
                  "argument 'logits' has an expert count the sort cannot take");
  EXPECT_CONTAINS(error_of([&] { topk_gate_backward(dw, z, idx, {.k = 16}); }),
                  "argument 'dweights' has the wrong shape: expected [4, 16], got [4, 8]");
  EXPECT_CONTAINS(error_of([&] {
                    topk_gate_backward(tl::randn(dev, {4, 8}, DType::BFloat16, 2), z, idx);
                  }),
                  "argument 'dweights' has the wrong dtype: expected float32, got bfloat16");
}

TEST(TopkGateBwdEdges, NoTokensLaunchNothing) {
  tl::Device dev;
  clear_kernel_cache();
  auto dz = topk_gate_backward(tl::Tensor::empty(dev, {0, 8}, DType::Float32),
                               tl::Tensor::empty(dev, {0, 256}, DType::BFloat16),
                               tl::Tensor::empty(dev, {0, 8}, DType::Int32));
  EXPECT_EQ(dz.shape(), (std::vector<int64_t>{0, 256}));
  EXPECT_EQ(dz.dtype(), DType::BFloat16);
  EXPECT_EQ(kernel_cache_stats().misses, 0);
}

TEST(TopkGateBwdEdges, NaNLogitStaysInItsToken) {
  // A chosen NaN logit makes its token's normaliser NaN, so its token's chosen gradients are
  // NaN; no other token's.
  tl::Device dev;
  auto zv = tl::randn(dev, {9, 256}, DType::Float32, 5).to_vector();
  zv[3 * 256 + 17] = NAN;
  auto z = tl::from_vector(dev, {9, 256}, DType::Float32, zv);
  auto fwd = topk_gate(z);
  auto dz =
      topk_gate_backward(tl::randn(dev, {9, 8}, DType::Float32, 6), z, fwd.indices).to_vector();
  for (int64_t t = 0; t < 9; ++t) {
    int64_t nans = 0;
    for (int64_t e = 0; e < 256; ++e) nans += std::isnan(dz[t * 256 + e]);
    EXPECT_EQ(nans > 0, t == 3) << t;
  }
  EXPECT_TRUE(std::isnan(dz[3 * 256 + 17]));
}

TEST(TopkGateBwdEdges, OneKernelForEveryTokenCount) {
  tl::Device dev;
  clear_kernel_cache();
  for (int64_t T : {1, 9, 40})
    topk_gate_backward(tl::randn(dev, {T, 8}, DType::Float32, 1),
                       tl::randn(dev, {T, 256}, DType::BFloat16, 6),
                       tl::full(dev, {T, 8}, DType::Int32, 5.0));
  EXPECT_EQ(kernel_cache_stats().misses, 1);
  EXPECT_EQ(kernel_cache_stats().hits, 2);
}

}  // namespace
