// cann_ops_tilelang GEMM (include/cann_ops_tilelang/gemm.h) against the fp64 BLAS reference
// of tests/ops/gemm_ref.h. Grid over OPS_TILELANG_TEST_LEVEL: tails M/N/K = 1, 7, 33 and
// 1142 x 1230 x 1079, the four transposes, fp16/bf16 in, fp16/bf16/fp32 out; level 1 has
// 1024^3, level 2 4096^3 (the must-show shape; minutes in fast mode). Also bad inputs (message
// text), empty and K = 0 tensors (no launch), NaN propagation, one kernel for every M.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "cann_ops_tilelang/gemm.h"
#include "common/error_of.h"
#include "ops/gemm_ref.h"
#include "ops/ops_seed.h"
#include "ops/ops_testing.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

struct Case {
  int64_t M, N, K;
  DType dt, out;
  bool ta, tb;
};

std::string name(const Case& c) {
  return fmt::format("M{}_N{}_K{}_{}_{}{}{}", c.M, c.N, c.K, tl::dtype_name(c.dt),
                     tl::dtype_name(c.out), c.ta ? "_ta" : "", c.tb ? "_tb" : "");
}

// gtest prints a parameter without PrintTo as its raw bytes, struct padding included: the test's
// ctest name then changes from one discovery to the next, and ctest runs a name that is gone.
void PrintTo(const Case& c, std::ostream* os) {
  *os << name(c);
}

std::vector<Case> grid() {
  const DType h = DType::Float16, b = DType::BFloat16, f = DType::Float32;
  if (opstest::test_level() == 0) return {{33, 7, 1, h, f, false, false}};
  std::vector<Case> v{{1, 1, 1, h, f, false, false},          {7, 33, 1, b, b, true, false},
                      {33, 7, 7, h, h, false, true},          {1, 33, 7, b, f, true, true},
                      {7, 1, 33, h, f, false, false},         {33, 33, 33, b, b, false, false},
                      {1142, 1230, 1079, h, h, false, false}, {1142, 1230, 1079, b, f, true, true},
                      {1142, 1230, 1079, h, f, false, true},  {1142, 1230, 1079, b, b, true, false},
                      {1024, 1024, 1024, h, h, false, false}};
  if (opstest::test_level() >= 2) v.push_back({4096, 4096, 4096, h, h, false, false});
  return v;
}

class GemmGrid : public ::testing::TestWithParam<Case> {};

TEST_P(GemmGrid, MatchesFp64Reference) {
  const Case c = GetParam();
  const uint64_t seed = opstest::test_seed();
  tl::Device dev;
  auto a = c.ta ? tl::randn(dev, {c.K, c.M}, c.dt, seed) : tl::randn(dev, {c.M, c.K}, c.dt, seed);
  auto b = c.tb ? tl::randn(dev, {c.N, c.K}, c.dt, seed + 1)
                : tl::randn(dev, {c.K, c.N}, c.dt, seed + 1);
  auto out = gemm(a, b, {.trans_a = c.ta, .trans_b = c.tb, .out_dtype = c.out});
  ASSERT_EQ(out.shape(), (std::vector<int64_t>{c.M, c.N}));
  ASSERT_EQ(out.dtype(), c.out);
  auto av = a.to_vector(), bv = b.to_vector();
  auto want = opstest::ref::gemm(av, bv, c.M, c.N, c.K, c.ta, c.tb);
  // fp32 accumulation: an error up to ~K * 2^-24 of sum |a||b| (kApprox scales it), plus the
  // output's rounding (the dtype's tolerance).
  auto scale = opstest::ref::gemm_abs(av, bv, c.M, c.N, c.K, c.ta, c.tb);
  for (auto& s : scale) s *= 1e-6 / opstest::kApprox;
  auto tol = opstest::tolerance(c.out);
  tol.rtol = c.out == DType::Float32 ? 1e-6 : tol.rtol;
  EXPECT_EQ(opstest::allclose(out.to_vector(), want, c.N, tol, "C", &scale), "");
  opstest::record_gm_peak(dev);
}

INSTANTIATE_TEST_SUITE_P(Grid, GemmGrid, ::testing::ValuesIn(grid()),
                         [](const auto& info) { return name(info.param); });

// The library kernel's L0A / L0B slots are row bands of one [2R, C] buffer: whole-fractal tiles
// take the band copy of exec_move.cpp's whole_fractals_load, the tails the offset tables. The
// fast paths must give the plain paths' bytes (TL_NPU_PLAIN_PATHS=1; tests/npu/fast_paths_test.cpp
// does the same for the example kernels).
TEST(GemmFastPaths, SameBytesAsThePlainPaths) {
  struct Shape {
    int64_t M, N, K;
  };
  for (const DType dt : {DType::Float16, DType::BFloat16})
    for (const Shape s :
         {Shape{256, 512, 512}, Shape{33, 1000, 7}, Shape{1000, 7, 33}, Shape{1, 33, 1000}}) {
      tl::Device dev;
      auto a = tl::randn(dev, {s.M, s.K}, dt, 11);
      auto b = tl::randn(dev, {s.K, s.N}, dt, 12);
      std::vector<std::vector<uint8_t>> out;
      for (const char* plain : {"1", "0"}) {
        ::setenv("TL_NPU_PLAIN_PATHS", plain, 1);
        auto c = gemm(a, b, {.out_dtype = DType::Float32});
        out.emplace_back(c.data(), c.data() + c.nbytes());
      }
      ::unsetenv("TL_NPU_PLAIN_PATHS");
      EXPECT_TRUE(out[0] == out[1])
          << tl::dtype_name(dt) << " M " << s.M << " N " << s.N << " K " << s.K;
    }
}

using tltest::error_of;

#define EXPECT_CONTAINS(s, sub) EXPECT_NE((s).find(sub), std::string::npos) << (s)

TEST(GemmEdges, BadInputsAreLocatedErrorsNamingTheArgument) {
  tl::Device dev;
  auto a = tl::randn(dev, {16, 32}, DType::Float16, 1);
  auto b = tl::randn(dev, {32, 48}, DType::Float16, 2);
  auto m = error_of([&] { gemm(tl::randn(dev, {16, 32}, DType::Float32, 1), b); });
  EXPECT_CONTAINS(m,
                  "gemm: argument 'a' has the wrong dtype: expected float16 or bfloat16, got "
                  "float32");
  EXPECT_CONTAINS(m, "tests/ops/gemm_test.cpp:");
  EXPECT_CONTAINS(error_of([&] {
                    gemm(a, tl::randn(dev, {32, 48}, DType::BFloat16, 2));
                  }),
                  "argument 'b' has the wrong dtype: expected float16 (the dtype of 'a'), got "
                  "bfloat16");
  EXPECT_CONTAINS(error_of([&] {
                    gemm(a, tl::randn(dev, {31, 48}, DType::Float16, 2));
                  }),
                  "argument 'b' has the wrong shape: expected 32 (K of 'a') in dimension 0, got "
                  "shape [31, 48]");
  EXPECT_CONTAINS(error_of([&] { gemm(a, b, {.trans_b = true}); }),
                  "argument 'b' has the wrong shape: expected 32 (K of 'a') in dimension 1 "
                  "(transposed), got shape [32, 48]");
  EXPECT_CONTAINS(error_of([&] { gemm(a.reshape({512}), b); }),
                  "argument 'a' has the wrong rank: expected 2 dimensions, got 1");
  EXPECT_CONTAINS(error_of([&] { gemm(a, b, {.out_dtype = DType::Int32}); }),
                  "argument 'out_dtype' is not supported: expected float16 or bfloat16 or "
                  "float32, got int32");
  tl::Device other;
  EXPECT_CONTAINS(error_of([&] {
                    gemm(a, tl::randn(other, {32, 48}, DType::Float16, 2));
                  }),
                  "argument 'b' is on another device");
  auto wide = tl::randn(dev, {16, 64}, DType::Float16, 4);
  EXPECT_CONTAINS(error_of([&] { gemm(wide.slice(1, 0, 32), b); }),
                  "argument 'a' must be contiguous");
}

TEST(GemmEdges, EmptyAndKZeroLaunchNothing) {
  tl::Device dev;
  clear_kernel_cache();
  auto c0 = gemm(tl::Tensor::empty(dev, {0, 32}, DType::Float16),
                 tl::randn(dev, {32, 48}, DType::Float16, 1));
  EXPECT_EQ(c0.shape(), (std::vector<int64_t>{0, 48}));
  auto ck = gemm(tl::Tensor::empty(dev, {5, 0}, DType::BFloat16),
                 tl::Tensor::empty(dev, {0, 9}, DType::BFloat16), {.out_dtype = DType::Float32});
  EXPECT_EQ(ck.shape(), (std::vector<int64_t>{5, 9}));
  for (double v : ck.to_vector()) EXPECT_EQ(v, 0.0);
  EXPECT_EQ(kernel_cache_stats().misses, 0);
}

TEST(GemmEdges, NaNStaysInItsRowAndColumn) {
  tl::Device dev;
  auto av = tl::randn(dev, {40, 24}, DType::Float16, 3).to_vector();
  auto bv = tl::randn(dev, {24, 20}, DType::Float16, 4).to_vector();
  av[5 * 24 + 3] = NAN;    // row 5 of C
  bv[11 * 20 + 17] = NAN;  // column 17 of C
  auto c = gemm(tl::from_vector(dev, {40, 24}, DType::Float16, av),
                tl::from_vector(dev, {24, 20}, DType::Float16, bv), {.out_dtype = DType::Float32})
               .to_vector();
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t j = 0; j < 20; ++j)
      EXPECT_EQ(std::isnan(c[i * 20 + j]), i == 5 || j == 17) << i << "," << j;
}

// The dynamic M's tail tile (issue 30): legalize_copies no longer zero-fills a partial A panel
// along M (its stale rows only reach rows of C the clipped store drops; docs/ops.md "GEMM"), so
// the tails at the brief's sizes, every transpose, with a K tail too (K = 300: panels of 256 and
// 44, that one still zero-filled).
TEST(GemmTails, DynamicMTailsMatchFp64Reference) {
  const DType h = DType::Float16;
  int i = 0;
  for (int64_t M : {1, 7, 33, 1000, 4097}) {
    const bool ta = i % 2 == 1, tb = i % 4 >= 2;
    ++i;
    SCOPED_TRACE(fmt::format("M {} trans_a {} trans_b {}", M, ta, tb));
    const int64_t N = 96, K = 300;
    tl::Device dev;
    auto a = ta ? tl::randn(dev, {K, M}, h, 10 + M) : tl::randn(dev, {M, K}, h, 10 + M);
    auto b = tb ? tl::randn(dev, {N, K}, h, 20 + M) : tl::randn(dev, {K, N}, h, 20 + M);
    auto out = gemm(a, b, {.trans_a = ta, .trans_b = tb, .out_dtype = DType::Float32});
    auto av = a.to_vector(), bv = b.to_vector();
    auto want = opstest::ref::gemm(av, bv, M, N, K, ta, tb);
    auto scale = opstest::ref::gemm_abs(av, bv, M, N, K, ta, tb);
    for (auto& x : scale) x *= 1e-6 / opstest::kApprox;
    auto tol = opstest::tolerance(DType::Float32);
    tol.rtol = 1e-6;
    EXPECT_EQ(opstest::allclose(out.to_vector(), want, N, tol, "C", &scale), "");
  }
}

// The tail tile's A panel keeps the rows past M of the panel its core loaded before: with N in
// one tile and 24 AICs, core 0 takes rows 0-127 and then 3072-3076 (M = 3077). A NaN in row 100
// stays in the stale part of the tail panel, whose rows of C are never stored.
TEST(GemmTails, AFullTilesNaNStaysOutOfTheTailTileOnItsCore) {
  tl::Device dev;
  const int64_t M = 3077, N = 32, K = 48;
  auto av = tl::randn(dev, {M, K}, DType::Float16, 5).to_vector();
  auto bv = tl::randn(dev, {K, N}, DType::Float16, 6).to_vector();
  av[100 * K + 7] = NAN;
  auto c = gemm(tl::from_vector(dev, {M, K}, DType::Float16, av),
                tl::from_vector(dev, {K, N}, DType::Float16, bv), {.out_dtype = DType::Float32})
               .to_vector();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) ASSERT_EQ(std::isnan(c[i * N + j]), i == 100) << i << "," << j;
}

TEST(GemmEdges, OneKernelForEveryM) {
  tl::Device dev;
  clear_kernel_cache();
  auto b = tl::randn(dev, {64, 32}, DType::Float16, 1);
  for (int64_t M : {1, 130, 300}) gemm(tl::randn(dev, {M, 64}, DType::Float16, 2), b);
  EXPECT_EQ(kernel_cache_stats().misses, 1);
  EXPECT_EQ(kernel_cache_stats().hits, 2);
}

}  // namespace
