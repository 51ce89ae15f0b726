// cann_ops_tilelang softmax / log-softmax (include/cann_ops_tilelang/softmax.h) against the fp64
// references of tests/ops/softmax_ref.h, forward and backward, bf16/fp16/fp32: tails of rows 1,
// 7, 33, 1000, 4097, columns that are not whole 32-byte blocks (34 x 130), the one-pass
// schedule (7168) and the chunked one for rows larger than UB (129280). The grid depends on
// OPS_TILELANG_TEST_LEVEL (ops_seed.h): level 1 (the default) has 4096 x 7168 bf16 and a
// 64 x 129280 stand-in of the vocabulary shape (same key, same code path); level 2 adds
// 1024 x 129280. Also the chunked schedule forced onto small, ragged rows.
#include <gtest/gtest.h>

#include "cann_ops_tilelang/softmax.h"
#include "ops/ops_seed.h"
#include "ops/ops_testing.h"
#include "ops/softmax_ref.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

struct Case {
  int64_t M, N;
  DType dt;
};

std::string name(const Case& c) {
  return fmt::format("M{}_N{}_{}", c.M, c.N, tl::dtype_name(c.dt));
}

std::vector<Case> grid() {
  const int level = opstest::test_level();
  if (level == 0) return {{34, 130, DType::BFloat16}, {7, 512, DType::Float32}};
  std::vector<Case> v;
  for (DType dt : {DType::BFloat16, DType::Float16, DType::Float32}) {
    for (int64_t M : {1, 7, 33}) v.push_back({M, 7168, dt});
    v.push_back({34, 130, dt});
    v.push_back({1000, 1000, dt});
    v.push_back({4097, 37, dt});
  }
  v.push_back({4096, 7168, DType::BFloat16});
  v.push_back({64, 129280, DType::BFloat16});  // the vocabulary row: chunked (UB-sized chunks)
  v.push_back({7, 100003, DType::Float32});    // chunked, N odd: a ragged last chunk
  if (level >= 2) v.push_back({1024, 129280, DType::BFloat16});
  return v;
}

// Logits of a language model's scale: randn * 4, so exp spans many orders of magnitude.
tl::Tensor logits(tl::Device& dev, const Case& c, uint64_t seed) {
  auto v = tl::randn(dev, {c.M, c.N}, DType::Float32, seed).to_vector();
  for (auto& e : v) e *= 4;
  return tl::from_vector(dev, {c.M, c.N}, c.dt, v);
}

// gtest prints a parameter without PrintTo as its raw bytes, struct padding included: the test's
// ctest name then changes from one discovery to the next, and ctest runs a name that is gone.
void PrintTo(const Case& c, std::ostream* os) {
  *os << fmt::format("M{} N{} {}", c.M, c.N, tl::dtype_name(c.dt));
}

class SoftmaxGrid : public ::testing::TestWithParam<Case> {};

TEST_P(SoftmaxGrid, ForwardMatchesFp64Reference) {
  const Case c = GetParam();
  tl::Device dev;
  auto x = logits(dev, c, opstest::test_seed());
  const auto tol = opstest::tolerance(c.dt);
  for (bool log : {false, true}) {
    auto y = log ? log_softmax(x) : softmax(x);
    auto want = opstest::ref::softmax_fwd(x.to_vector(), c.M, c.N, log);
    EXPECT_EQ(opstest::allclose(y.to_vector(), want, c.N, tol, log ? "log_softmax" : "softmax"),
              "");
    EXPECT_LT(opstest::calc_diff(y.to_vector(), want), 1e-4);
  }
  opstest::record_gm_peak(dev);
}

TEST_P(SoftmaxGrid, BackwardMatchesFp64Reference) {
  const Case c = GetParam();
  if (c.M * c.N > 4097 * 1000 && opstest::test_level() < 2)
    GTEST_SKIP() << "backward at this size: level 2";
  const uint64_t seed = opstest::test_seed();
  tl::Device dev;
  auto x = logits(dev, c, seed);
  auto dy = tl::randn(dev, {c.M, c.N}, c.dt, seed + 1);
  const auto tol = opstest::tolerance(c.dt);
  for (bool log : {false, true}) {
    auto y = log ? log_softmax(x) : softmax(x);
    auto dx = log ? log_softmax_backward(dy, y) : softmax_backward(dy, y);
    auto want = opstest::ref::softmax_bwd(dy.to_vector(), y.to_vector(), c.M, c.N, log);
    // dx cancels a sum over the row: its error scales with the terms' magnitudes.
    auto scale = want.dx_abs;
    for (auto& s : scale) s *= (c.dt == DType::Float32 ? 1e-5 : tol.rtol) / opstest::kApprox;
    EXPECT_EQ(opstest::allclose(dx.to_vector(), want.dx, c.N, tol, "dx", &scale), "");
  }
  opstest::record_gm_peak(dev);
}

INSTANTIATE_TEST_SUITE_P(Grid, SoftmaxGrid, ::testing::ValuesIn(grid()),
                         [](const auto& info) { return name(info.param); });

// The chunked schedule on small rows, chunks forced narrow: 130 bf16 columns in chunks of 48
// (a last chunk of 34 columns, 68 bytes: neither a whole chunk nor whole 32-byte blocks).
TEST(SoftmaxChunks, ForcedChunksOnRaggedRows) {
  for (DType dt : {DType::BFloat16, DType::Float32}) {
    for (bool log : {false, true}) {
      for (bool backward : {false, true}) {
        SCOPED_TRACE(fmt::format("{} log={} backward={}", tl::dtype_name(dt), log, backward));
        tl::Device dev;
        const int64_t M = 33, N = 130;
        auto key = softmax_key(dt, N, log, backward, dev.target());
        key.chunk = 48;
        key.rows_per_tile = 16;  // the chunked schedule's (8 fp32 statistics per AIV)
        key.blocks = 3;
        ASSERT_EQ(key.chunks(), 3);
        auto kernel = tl::compile(softmax_kernel(key), dev.target());
        auto x = logits(dev, {M, N, dt}, opstest::test_seed());
        auto a = tl::randn(dev, {M, N}, dt, opstest::test_seed() + 1);
        auto out = tl::Tensor::empty(dev, {M, N}, dt);
        const auto tol = opstest::tolerance(dt);
        if (!backward) {
          kernel.launch(dev, {x, out});
          auto want = opstest::ref::softmax_fwd(x.to_vector(), M, N, log);
          EXPECT_EQ(opstest::allclose(out.to_vector(), want, N, tol, "y"), "");
        } else {
          auto y = log ? log_softmax(x) : softmax(x);
          kernel.launch(dev, {y, a, out});
          auto want = opstest::ref::softmax_bwd(a.to_vector(), y.to_vector(), M, N, log);
          auto scale = want.dx_abs;
          for (auto& s : scale) s *= (dt == DType::Float32 ? 1e-5 : tol.rtol) / opstest::kApprox;
          EXPECT_EQ(opstest::allclose(out.to_vector(), want.dx, N, tol, "dx", &scale), "");
        }
      }
    }
  }
}

}  // namespace
