// cann_ops_tilelang softmax's edges: bad inputs give tl::Error naming the op, the argument, what
// was expected and what came, located at the caller's line (this file); empty tensors launch
// nothing; NaN propagates to its own row only; -inf logits give exact zeros (a whole chunk of
// them too, in the chunked schedule), a row of nothing but -inf gives NaN as torch does; one
// compiled kernel serves every row count; the resident kernels run without a hazard or a
// time-order effect.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cann_ops_tilelang/softmax.h"
#include "common/error_of.h"
#include "ops/ops_checked.h"
#include "ops/ops_seed.h"
#include "ops/ops_testing.h"
#include "ops/softmax_ref.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

using tltest::error_of;

#define EXPECT_CONTAINS(s, sub) EXPECT_NE((s).find(sub), std::string::npos) << (s)

TEST(SoftmaxEdges, BadInputsAreLocatedErrorsNamingTheArgument) {
  tl::Device dev;
  auto x = tl::randn(dev, {4, 130}, DType::BFloat16, 1);
  auto xi = tl::Tensor::empty(dev, {4, 130}, DType::Int32);
  auto m = error_of([&] { softmax(xi); });
  EXPECT_CONTAINS(m,
                  "softmax: argument 'x' has the wrong dtype: expected bfloat16 or float16 or "
                  "float32, got int32");
  EXPECT_CONTAINS(m, "tests/ops/softmax_edges_test.cpp:");
  EXPECT_CONTAINS(error_of([&] {
                    log_softmax(tl::Tensor::empty(dev, {4, 0}, DType::Float32));
                  }),
                  "log_softmax: argument 'x' has an empty last dimension: expected at least 1 "
                  "column, got 0");
  EXPECT_CONTAINS(error_of([&] { softmax(tl::Tensor::empty(dev, {}, DType::Float32)); }),
                  "softmax: argument 'x' has the wrong rank: expected at least 1 dimension(s), "
                  "got 0");
  auto wide = tl::randn(dev, {4, 256}, DType::BFloat16, 4);
  EXPECT_CONTAINS(error_of([&] { softmax(wide.slice(1, 0, 130)); }),
                  "softmax: argument 'x' must be contiguous: expected row-major strides for shape "
                  "[4, 130], got strides [256, 1]");
  EXPECT_CONTAINS(error_of([&] { softmax(tl::Tensor()); }), "argument 'x' must be a tensor");
  // backward: dy's shape, dtype, device
  auto y = softmax(x);
  auto dy5 = tl::randn(dev, {5, 130}, DType::BFloat16, 2);
  EXPECT_CONTAINS(error_of([&] { softmax_backward(dy5, y); }),
                  "softmax_backward: argument 'dy' has the wrong shape: expected [4, 130], got "
                  "[5, 130]");
  auto dyf = tl::randn(dev, {4, 130}, DType::Float32, 2);
  EXPECT_CONTAINS(error_of([&] { log_softmax_backward(dyf, y); }),
                  "log_softmax_backward: argument 'dy' has the wrong dtype: expected bfloat16 "
                  "(the dtype of 'y'), got float32");
  tl::Device other;
  auto dyo = tl::randn(other, {4, 130}, DType::BFloat16, 2);
  EXPECT_CONTAINS(error_of([&] { softmax_backward(dyo, y); }),
                  "softmax_backward: argument 'dy' is on another device");
  EXPECT_CONTAINS(error_of([&] {
                    softmax_backward(tl::randn(dev, {4, 130}, DType::BFloat16, 3),
                                     tl::Tensor::empty(dev, {4, 130}, DType::Float64));
                  }),
                  "softmax_backward: argument 'y' has the wrong dtype");
}

TEST(SoftmaxEdges, EmptyTensorsLaunchNothing) {
  tl::Device dev;
  clear_kernel_cache();
  for (auto shape : std::vector<std::vector<int64_t>>{{0, 130}, {2, 0, 7168}}) {
    auto x = tl::Tensor::empty(dev, shape, DType::BFloat16);
    EXPECT_EQ(softmax(x).shape(), shape);
    EXPECT_EQ(log_softmax(x).shape(), shape);
    EXPECT_EQ(softmax_backward(x, x).shape(), shape);
    EXPECT_EQ(log_softmax_backward(x, x).shape(), shape);
  }
  EXPECT_EQ(kernel_cache_stats().misses, 0);  // nothing built, nothing launched
}

// A NaN makes its own row NaN (the row's sum is NaN), and only that row. Rows of 7168 (one
// pass) and 20000 fp32 (chunked); the NaN sits in the last chunk.
TEST(SoftmaxEdges, NanPropagatesToItsRowOnly) {
  for (int64_t N : {130, 7168, 60000}) {
    SCOPED_TRACE(N);
    tl::Device dev;
    auto v = tl::randn(dev, {9, N}, DType::Float32, opstest::test_seed()).to_vector();
    v[3 * N + N - 1] = std::numeric_limits<double>::quiet_NaN();
    auto x = tl::from_vector(dev, {9, N}, DType::Float32, v);
    for (bool log : {false, true}) {
      auto y = (log ? log_softmax(x) : softmax(x)).to_vector();
      for (int64_t i = 0; i < 9; ++i)
        for (int64_t j : {int64_t{0}, N / 2, N - 1})
          EXPECT_EQ(std::isnan(y[i * N + j]), i == 3) << "row " << i << " col " << j;
    }
  }
}

// -inf logits (masked tokens): exact zeros in softmax, -inf in log-softmax, the other columns
// right. In the chunked schedule (N = 60000 fp32) the whole first chunk is -inf: a running max
// of -inf must not make exp(-inf - (-inf)) = NaN; 7168 is the resident schedule. A row of only
// -inf is NaN, as in torch.
TEST(SoftmaxEdges, NegativeInfinityIsMasking) {
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t N : {130, 7168, 60000}) {
    SCOPED_TRACE(N);
    tl::Device dev;
    auto v = tl::randn(dev, {3, N}, DType::Float32, opstest::test_seed()).to_vector();
    for (int64_t j = 0; j < N / 2; ++j) v[j] = -inf;      // row 0: the first half masked
    for (int64_t j = 0; j < N; ++j) v[2 * N + j] = -inf;  // row 2: all masked
    auto x = tl::from_vector(dev, {3, N}, DType::Float32, v);
    for (bool log : {false, true}) {
      auto y = (log ? log_softmax(x) : softmax(x)).to_vector();
      auto want = opstest::ref::softmax_fwd(v, 3, N, log);
      for (int64_t j = 0; j < N; ++j) want[2 * N + j] = std::numeric_limits<double>::quiet_NaN();
      EXPECT_EQ(y[0], log ? -inf : 0.0);
      EXPECT_EQ(opstest::allclose(y, want, N, opstest::tolerance(DType::Float32), "y"), "");
    }
  }
}

TEST(SoftmaxEdges, OneKernelForEveryRowCount) {
  tl::Device dev;
  clear_kernel_cache();
  for (int64_t M : {1, 7, 33}) softmax(tl::randn(dev, {M, 130}, DType::Float16, 1));
  EXPECT_EQ(kernel_cache_stats().misses, 1);
  EXPECT_EQ(kernel_cache_stats().hits, 2);
}

// The resident kernels (softmax_resident.cpp) under the hazard checker, then in timed mode with
// no output differing from program order: 1157 rows of 1024 give 8-row tiles, 3 or 4 per AIV
// (so the second slot and the prefetch run) and a tail of 5 rows.
TEST(SoftmaxEdges, ResidentKernelsHaveNoHazardNorTimeOrderEffect) {
  for (DType dt : {DType::BFloat16, DType::Float32}) {
    SCOPED_TRACE(tl::dtype_name(dt));
    tl::Device dev;
    const int64_t M = 1157, N = 1024;
    for (bool backward : {false, true})
      EXPECT_TRUE(softmax_key(dt, N, false, backward, dev.target()).resident);
    auto x = tl::randn(dev, {M, N}, dt, opstest::test_seed());
    auto dy = tl::randn(dev, {M, N}, dt, opstest::test_seed() + 1);
    auto calls = [&] {
      auto y = softmax(x), ly = log_softmax(x);
      softmax_backward(dy, y);
      log_softmax_backward(dy, ly);
    };
    opstest::expect_hazard_free_and_time_order_free(calls, 4);
  }
}

// The resident forward sums exp(x) with no max subtracted and checks each row's log-sum: rows
// outside [0, 80) (softmax) or [-40, 88) (log-softmax) take the max-subtracted fallback, in one
// tile with rows that do not, and in the tail tile. Logits + 200 (exp overflows), - 150 (every
// exp underflows), - 30 (softmax's sum below 1: its exp(x) of the smallest logits would lose bits
// below fp32's normal range; log-softmax's fast path), a row of -inf (NaN, as torch), a first half
// of -inf with the rest + 100, a +inf (NaN). Without the fallback rows 1, 2 and 6 come out NaN,
// infinite or zero. Under the hazard checker, then in timed mode with no time-order effect.
TEST(SoftmaxEdges, ResidentForwardRowsOutOfRangeTakeTheFallback) {
  const double inf = std::numeric_limits<double>::infinity();
  for (DType dt : {DType::BFloat16, DType::Float32}) {
    for (int64_t N : {1024, 7168}) {
      SCOPED_TRACE(fmt::format("{} N={}", tl::dtype_name(dt), N));
      tl::Device dev;
      const int64_t M = 37;  // 8-row tiles and a tail of 5 (1024), 2-row and a tail of 1 (7168)
      EXPECT_TRUE(softmax_key(dt, N, false, false, dev.target()).resident);
      auto v = tl::randn(dev, {M, N}, DType::Float32, opstest::test_seed()).to_vector();
      for (auto& e : v) e *= 4;
      for (int64_t j = 0; j < N; ++j) {
        v[1 * N + j] += 200;
        v[2 * N + j] -= 150;
        v[3 * N + j] -= 30;
        v[4 * N + j] = -inf;
        v[6 * N + j] = j < N / 2 ? -inf : v[6 * N + j] + 100;
        v[(M - 1) * N + j] += 200;  // the tail tile
        v[(M - 2) * N + j] -= 150;
      }
      v[8 * N + N / 3] = inf;
      auto x = tl::from_vector(dev, {M, N}, dt, v);
      for (bool log : {false, true}) {
        SCOPED_TRACE(log ? "log_softmax" : "softmax");
        RunOptions hazards;
        hazards.launch.check_hazards = true;
        std::vector<double> y;
        {
          ScopedRun s(hazards);
          y = (log ? log_softmax(x) : softmax(x)).to_vector();
        }
        auto want = opstest::ref::softmax_fwd(x.to_vector(), M, N, log);
        for (int64_t i : {int64_t{4}, int64_t{8}})  // torch: NaN (all -inf; inf - inf)
          for (int64_t j = 0; j < N; ++j)
            want[i * N + j] = std::numeric_limits<double>::quiet_NaN();
        EXPECT_EQ(opstest::allclose(y, want, N, opstest::tolerance(dt), "y"), "");
        RunOptions timed;
        timed.profile = true;
        {
          ScopedRun s(timed);
          (log ? log_softmax(x) : softmax(x));
        }
        ASSERT_EQ(timed.profiles.size(), 1u);
        for (const auto& e : timed.profiles[0].time_order_effects) ADD_FAILURE() << e;
      }
    }
  }
}

// The streamed kernels (softmax_streamed.cpp) forced onto chunks of 1024: rows of 2048 (4 steps a
// row: the three slots' last round is partial) and 3072 (6 steps), 101 rows (2 or 3 per AIV: the
// slots carry over from row to row): against the reference, under the hazard checker, and in
// timed mode with no output differing from program order. The forward's rows 5, 7, 9 and 11 take
// its fallback (logits shifted by +200 and -150, a first chunk of -inf, a row of -inf): without
// it rows 5 and 7 come out NaN or infinite.
TEST(SoftmaxEdges, StreamedKernelsMatchWithoutHazardNorTimeOrderEffect) {
  for (DType dt : {DType::BFloat16, DType::Float32}) {
    for (bool log : {false, true}) {
      for (bool backward : {false, true}) {
        // 3168 in chunks of 1056: rows and chunks start off the 512-byte grid (bf16: eight
        // offsets modulo 512, fp32 four), so the chunk copies are split (softmax_streamed.cpp).
        for (auto [N, bN] : {std::pair<int64_t, int64_t>{2048, 1024}, {3072, 1024}, {3168, 1056}}) {
          SCOPED_TRACE(fmt::format("{} log={} backward={} N={} bN={}", tl::dtype_name(dt), log,
                                   backward, N, bN));
          tl::Device dev;
          const int64_t M = 101;
          auto key = softmax_key(dt, N, log, backward, dev.target());
          key.resident = false;
          key.streamed = true;
          key.rows_per_tile = 1;
          key.chunk = bN;
          auto kernel = tl::compile(softmax_kernel(key), dev.target());
          auto xs = tl::randn(dev, {M, N}, DType::Float32, opstest::test_seed()).to_vector();
          for (auto& e : xs) e *= 4;  // logits of a language model's scale
          if (!backward)  // rows whose sum of exp(x) leaves [e^-40, e^88): the fallback's
            for (int64_t j = 0; j < N; ++j) {
              xs[5 * N + j] += 200;  // exp(x) overflows
              xs[7 * N + j] -= 150;  // exp(x) underflows to 0
              if (j < 1024) xs[9 * N + j] = -std::numeric_limits<double>::infinity();
              xs[11 * N + j] = -std::numeric_limits<double>::infinity();  // NaN, as torch
              xs[13 * N + j] += 68;  // log s in [80, 88): softmax's plain first pass-2 step
            }
          if (!backward) {  // row 13 must exercise that branch (kCachedHi, softmax_streamed.cpp)
            double mx = -std::numeric_limits<double>::infinity(), sum = 0;
            for (int64_t j = 0; j < N; ++j) mx = std::max(mx, xs[13 * N + j]);
            for (int64_t j = 0; j < N; ++j) sum += std::exp(xs[13 * N + j] - mx);
            const double lse = mx + std::log(sum);
            ASSERT_TRUE(lse >= 80 && lse < 88) << lse;
          }
          auto x = tl::from_vector(dev, {M, N}, dt, xs);
          auto dy = tl::randn(dev, {M, N}, dt, opstest::test_seed() + 1);
          auto y = log ? log_softmax(x) : softmax(x);
          auto out = tl::Tensor::empty(dev, {M, N}, dt);
          std::vector<tl::Arg> args =
              backward ? std::vector<tl::Arg>{y, dy, out} : std::vector<tl::Arg>{x, out};
          RunOptions hazards;
          hazards.launch.check_hazards = true;
          {
            ScopedRun s(hazards);
            EXPECT_NO_THROW(launch(kernel, dev, args));
          }
          const auto tol = opstest::tolerance(dt);
          if (!backward) {
            auto want = opstest::ref::softmax_fwd(x.to_vector(), M, N, log);
            for (int64_t j = 0; j < N; ++j)  // a row of only -inf
              want[11 * N + j] = std::numeric_limits<double>::quiet_NaN();
            EXPECT_EQ(opstest::allclose(out.to_vector(), want, N, tol, "y"), "");
          } else {
            auto want = opstest::ref::softmax_bwd(dy.to_vector(), y.to_vector(), M, N, log);
            auto scale = want.dx_abs;
            for (auto& v : scale) v *= (dt == DType::Float32 ? 1e-5 : tol.rtol) / opstest::kApprox;
            EXPECT_EQ(opstest::allclose(out.to_vector(), want.dx, N, tol, "dx", &scale), "");
          }
          RunOptions timed;
          timed.profile = true;
          {
            ScopedRun s(timed);
            launch(kernel, dev, args);
          }
          ASSERT_EQ(timed.profiles.size(), 1u);
          for (const auto& e : timed.profiles[0].time_order_effects) ADD_FAILURE() << e;
        }
      }
    }
  }
}

}  // namespace
