// cann_ops_tilelang's MoE top-k gate (include/cann_ops_tilelang/moe.h) against the fp64
// reference of tests/ops/topk_gate_ref.h: indices compared bit for bit, weights with allclose.
// Grid over OPS_TILELANG_TEST_LEVEL: tokens 1, 7, 33, 1000, 4001, 4097 (tails of the 8-token
// tile), bf16/fp16/fp32 logits, sigmoid/softmax/no scoring, with and without the selection bias,
// normalised or not. The must-show case: T = 4001, E = 256, k = 8 with forced ties (scores from
// five values, so every token has many equal keys; the expected order puts the smaller expert
// first). Also bad inputs (message text), T = 0 (no launch), NaN propagation.
#include <gtest/gtest.h>

#include <cmath>
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
  bool bias, normalize;
};

std::string name(const Case& c) {
  return fmt::format("T{}_E{}_k{}_{}_s{}{}{}", c.T, c.E, c.k, tl::dtype_name(c.dt),
                     static_cast<int>(c.scoring), c.bias ? "_bias" : "",
                     c.normalize ? "_norm" : "");
}

// gtest prints a parameter without PrintTo as its raw bytes, struct padding included: the test's
// ctest name then changes from one discovery to the next, and ctest runs a name that is gone.
void PrintTo(const Case& c, std::ostream* os) {
  *os << name(c);
}

std::vector<Case> grid() {
  using S = GateScoring;
  if (opstest::test_level() == 0) return {{7, 256, 8, DType::Float32, S::Sigmoid, true, true}};
  std::vector<Case> v;
  for (int64_t T : {1, 7, 33, 1000, 4097})
    v.push_back({T, 256, 8, DType::BFloat16, S::Sigmoid, true, true});
  v.push_back({33, 256, 8, DType::Float16, S::Softmax, false, true});
  v.push_back({33, 256, 8, DType::Float32, S::None, true, false});
  v.push_back({1000, 64, 16, DType::Float32, S::Softmax, true, true});
  v.push_back({7, 32, 32, DType::Float32, S::Sigmoid, false, true});
  v.push_back({4001, 256, 8, DType::Float32, S::Sigmoid, true, true});
  if (opstest::test_level() >= 2)
    v.push_back({16384, 256, 8, DType::BFloat16, S::Sigmoid, true, true});
  return v;
}

/// Indices equal bit for bit, except (when `near_ties`) where the kernel swapped two experts whose
/// reference keys are within the chip's approximate sigmoid/exp of each other.
std::string check_indices(const std::vector<int64_t>& got, const std::vector<int64_t>& want,
                          const std::vector<double>& key, int64_t E, int64_t k, bool near_ties) {
  if (!near_ties) return opstest::bitwise_equal(got, want);
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    const int64_t t = static_cast<int64_t>(i) / k;
    if (got[i] < 0 || got[i] >= E) return fmt::format("index {}: got {}", i, got[i]);
    const double a = key[t * E + got[i]], b = key[t * E + want[i]];
    if (std::abs(a - b) > 1e-6 * (1 + std::abs(b)))
      return fmt::format("token {} slot {}: got expert {} (key {}), expected {} (key {})", t, i % k,
                         got[i], a, want[i], b);
  }
  return "";
}

std::vector<int64_t> ints(const tl::Tensor& t) {
  auto v = t.to_vector();
  return std::vector<int64_t>(v.begin(), v.end());
}

struct Run {
  std::string idx, w;
};

Run run_case(const Case& c, const tl::Tensor& z, const tl::Tensor& bias, bool exact) {
  TopkGateConfig cfg{.k = c.k, .scoring = c.scoring, .normalize = c.normalize, .route_scale = 2.5};
  auto out = topk_gate(z, bias, cfg);
  auto bv = bias.defined() ? bias.to_vector() : std::vector<double>();
  auto s = opstest::ref::gate_scores(z.to_vector(), c.T, c.E, static_cast<int>(c.scoring));
  auto key = opstest::ref::gate_keys(s, c.bias ? &bv : nullptr, c.T, c.E);
  auto want = opstest::ref::gate_topk(key, c.T, c.E, c.k);
  auto got = ints(out.indices);
  Run r;
  r.idx = check_indices(got, want, key, c.E, c.k, !exact && c.scoring != GateScoring::None);
  auto ww = opstest::ref::gate_weights(s, got, c.T, c.E, c.k, c.normalize, 2.5);
  r.w = opstest::allclose(out.weights.to_vector(), ww, c.k, {2e-5, 1e-6}, "weights");
  return r;
}

class TopkGateGrid : public ::testing::TestWithParam<Case> {};

TEST_P(TopkGateGrid, MatchesFp64Reference) {
  const Case c = GetParam();
  const uint64_t seed = opstest::test_seed();
  tl::Device dev;
  auto z = tl::randn(dev, {c.T, c.E}, c.dt, seed);
  tl::Tensor b =
      c.bias ? tl::uniform(dev, {c.E}, DType::Float32, seed + 1, -0.1, 0.1) : tl::Tensor();
  auto r = run_case(c, z, b, false);
  EXPECT_EQ(r.idx, "");
  EXPECT_EQ(r.w, "");
  opstest::record_gm_peak(dev);
}

INSTANTIATE_TEST_SUITE_P(Grid, TopkGateGrid, ::testing::ValuesIn(grid()),
                         [](const auto& info) { return name(info.param); });

/// Logits from five values and a bias from two: every token has dozens of equal keys, and the
/// distinct keys are far apart (so the chip's approximate sigmoid cannot reorder them): the
/// order must be exactly "descending key, smaller expert first".
TEST(TopkGate, ForcedTiesT4001PickTheSmallerExpertFirst) {
  const uint64_t seed = opstest::test_seed();
  tl::Device dev;
  for (auto scoring : {GateScoring::Sigmoid, GateScoring::None, GateScoring::Softmax}) {
    SCOPED_TRACE(static_cast<int>(scoring));
    const Case c{4001, 256, 8, DType::Float32, scoring, scoring != GateScoring::Softmax, true};
    std::mt19937_64 rng(seed);
    std::vector<double> zv(c.T * c.E), bv(c.E);
    for (auto& x : zv) x = static_cast<double>(static_cast<int>(rng() % 5) - 2);
    for (auto& x : bv) x = (rng() % 2) * 0.5;
    auto z = tl::from_vector(dev, {c.T, c.E}, DType::Float32, zv);
    auto b = c.bias ? tl::from_vector(dev, {c.E}, DType::Float32, bv) : tl::Tensor();
    auto r = run_case(c, z, b, true);
    EXPECT_EQ(r.idx, "");
    EXPECT_EQ(r.w, "");
  }
}

using tltest::error_of;

#define EXPECT_CONTAINS(s, sub) EXPECT_NE((s).find(sub), std::string::npos) << (s)

TEST(TopkGateEdges, BadInputsAreLocatedErrorsNamingTheArgument) {
  tl::Device dev;
  auto z = tl::randn(dev, {4, 256}, DType::Float32, 1);
  auto m = error_of([&] { topk_gate(tl::Tensor::empty(dev, {4, 256}, DType::Int32)); });
  EXPECT_CONTAINS(m,
                  "topk_gate: argument 'logits' has the wrong dtype: expected bfloat16 or "
                  "float16 or float32, got int32");
  EXPECT_CONTAINS(m, "tests/ops/topk_gate_test.cpp:");
  EXPECT_CONTAINS(error_of([&] {
                    topk_gate(tl::randn(dev, {4, 100}, DType::Float32, 2));
                  }),
                  "argument 'logits' has an expert count the sort cannot take: expected E a "
                  "positive multiple of 32, got 100");
  EXPECT_CONTAINS(error_of([&] { topk_gate(tl::randn(dev, {256}, DType::Float32, 2)); }),
                  "argument 'logits' has the wrong rank: expected 2 dimensions [T, E], got 1");
  EXPECT_CONTAINS(error_of([&] { topk_gate(z, tl::randn(dev, {128}, DType::Float32, 3)); }),
                  "argument 'bias' has the wrong shape: expected [256], got [128]");
  EXPECT_CONTAINS(error_of([&] { topk_gate(z, tl::randn(dev, {256}, DType::BFloat16, 3)); }),
                  "argument 'bias' has the wrong dtype: expected float32, got bfloat16");
  EXPECT_CONTAINS(error_of([&] { topk_gate(z, {}, {.k = 6}); }),
                  "argument 'k' is out of range: expected a multiple of 8 in [8, 256] (E), got 6");
  EXPECT_CONTAINS(error_of([&] { topk_gate(z, {}, {.k = 512}); }), "argument 'k' is out of range");
  EXPECT_CONTAINS(error_of([&] { topk_gate(z, {}, {.route_scale = NAN}); }),
                  "argument 'route_scale' is not finite");
  auto wide = tl::randn(dev, {4, 512}, DType::Float32, 4);
  EXPECT_CONTAINS(error_of([&] { topk_gate(wide.slice(1, 0, 256)); }),
                  "argument 'logits' must be contiguous");
  EXPECT_CONTAINS(error_of([&] {
                    topk_gate(tl::Tensor::empty(dev, {1, 65536}, DType::Float32));
                  }),
                  "has more experts than a 8-token tile holds in UB");
}

TEST(TopkGateEdges, NoTokensLaunchNothing) {
  tl::Device dev;
  clear_kernel_cache();
  auto z = tl::Tensor::empty(dev, {0, 256}, DType::BFloat16);
  auto out = topk_gate(z, tl::randn(dev, {256}, DType::Float32, 1));
  EXPECT_EQ(out.weights.shape(), (std::vector<int64_t>{0, 8}));
  EXPECT_EQ(out.indices.shape(), (std::vector<int64_t>{0, 8}));
  EXPECT_EQ(out.indices.dtype(), DType::Int32);
  EXPECT_EQ(kernel_cache_stats().misses, 0);  // nothing compiled, nothing launched
}

TEST(TopkGateEdges, NaNLogitStaysInItsToken) {
  // The chip's sort puts NaN first: a NaN logit is chosen, and its token's normalised weights
  // are NaN; the other tokens are untouched.
  tl::Device dev;
  auto zv = tl::randn(dev, {9, 256}, DType::Float32, 5).to_vector();
  zv[3 * 256 + 17] = NAN;
  auto z = tl::from_vector(dev, {9, 256}, DType::Float32, zv);
  auto out = topk_gate(z);
  auto w = out.weights.to_vector();
  auto idx = ints(out.indices);
  EXPECT_EQ(idx[3 * 8], 17);
  for (int64_t t = 0; t < 9; ++t)
    for (int64_t j = 0; j < 8; ++j) EXPECT_EQ(std::isnan(w[t * 8 + j]), t == 3) << t << "," << j;
}

TEST(TopkGateEdges, OneKernelForEveryTokenCount) {
  tl::Device dev;
  clear_kernel_cache();
  for (int64_t T : {1, 9, 40}) topk_gate(tl::randn(dev, {T, 256}, DType::BFloat16, 6));
  EXPECT_EQ(kernel_cache_stats().misses, 1);
  EXPECT_EQ(kernel_cache_stats().hits, 2);
}

}  // namespace
