// The backward ops' edges, completing issue 30's "at least 3 bad-input tests per op asserting
// the message text, an empty-tensor test and a NaN-propagation test per op" (docs/must_show.md):
// the per-domain edge tests cover every forward, but some backwards had only one or two bad
// inputs there (rms_norm_backward, swiglu_backward, rope_backward, log_softmax and
// log_softmax_backward) and softmax_backward / log_softmax_backward had no NaN test. Each bad
// input here is one the op's own Checker refuses, asserted by its full text and located at this
// file; each NaN test puts one NaN in dy and checks that it reaches its own row and no other.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cann_ops_tilelang/activation.h"
#include "cann_ops_tilelang/norm.h"
#include "cann_ops_tilelang/rope.h"
#include "cann_ops_tilelang/softmax.h"
#include "common/error_of.h"
#include "ops/ops_seed.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

using tltest::error_of;

#define EXPECT_CONTAINS(s, sub) EXPECT_NE((s).find(sub), std::string::npos) << (s)

TEST(BackwardEdges, RmsNormBackwardBadInputs) {
  tl::Device dev, other;
  auto x = tl::randn(dev, {4, 256}, DType::BFloat16, 1);
  auto w = tl::randn(dev, {256}, DType::BFloat16, 2);
  auto dy = tl::randn(dev, {4, 256}, DType::BFloat16, 3);
  auto m = error_of([&] { rms_norm_backward(tl::randn(dev, {4, 256}, DType::Float32, 4), x, w); });
  EXPECT_CONTAINS(m,
                  "rms_norm_backward: argument 'dy' has the wrong dtype: expected bfloat16 (the "
                  "dtype of 'x'), got float32");
  EXPECT_CONTAINS(m, "tests/ops/backward_edges_test.cpp:");
  EXPECT_CONTAINS(error_of([&] {
                    rms_norm_backward(tl::randn(other, {4, 256}, DType::BFloat16, 5), x, w);
                  }),
                  "rms_norm_backward: argument 'dy' is on another device: expected the device of "
                  "'x', got a different Device");
  EXPECT_CONTAINS(error_of([&] { rms_norm_backward(dy, x, w, NAN); }),
                  "rms_norm_backward: argument 'eps' is out of range: expected eps >= 0, got nan");
  auto wide = tl::randn(dev, {4, 512}, DType::BFloat16, 6);
  EXPECT_CONTAINS(error_of([&] { rms_norm_backward(wide.slice(1, 0, 256), x, w); }),
                  "rms_norm_backward: argument 'dy' must be contiguous");
  EXPECT_CONTAINS(error_of([&] { rms_norm_backward(dy, x, tl::Tensor()); }),
                  "rms_norm_backward: argument 'weight' must be a tensor");
}

TEST(BackwardEdges, SwigluBackwardBadInputs) {
  tl::Device dev, other;
  auto x = tl::randn(dev, {4, 512}, DType::BFloat16, 1);
  auto dy = tl::randn(dev, {4, 256}, DType::BFloat16, 2);
  auto m = error_of([&] { swiglu_backward(dy, tl::randn(dev, {4, 511}, DType::BFloat16, 3)); });
  EXPECT_CONTAINS(m, "swiglu_backward: argument 'x' has a last dimension that cannot be split");
  EXPECT_CONTAINS(m, "tests/ops/backward_edges_test.cpp:");
  EXPECT_CONTAINS(error_of([&] {
                    swiglu_backward(tl::randn(other, {4, 256}, DType::BFloat16, 4), x);
                  }),
                  "swiglu_backward: argument 'dy' is on another device");
  EXPECT_CONTAINS(error_of([&] {
                    swiglu_backward(dy, tl::randn(dev, {4, 512}, DType::Int32, 5));
                  }),
                  "swiglu_backward: argument 'x' has the wrong dtype: expected bfloat16 or "
                  "float16 or float32, got int32");
  EXPECT_CONTAINS(error_of([&] { swiglu_backward(tl::Tensor(), x); }),
                  "swiglu_backward: argument 'dy' must be a tensor");
}

TEST(BackwardEdges, LogSoftmaxAndTheSoftmaxBackwardsBadInputs) {
  tl::Device dev, other;
  auto y = tl::randn(dev, {4, 130}, DType::BFloat16, 1);
  auto dy = tl::randn(dev, {4, 130}, DType::BFloat16, 2);
  // log_softmax: dtype, an empty last dimension, rank 0
  auto m = error_of([&] { log_softmax(tl::randn(dev, {4, 130}, DType::Int32, 3)); });
  EXPECT_CONTAINS(m,
                  "log_softmax: argument 'x' has the wrong dtype: expected bfloat16 or float16 or "
                  "float32, got int32");
  EXPECT_CONTAINS(m, "tests/ops/backward_edges_test.cpp:");
  EXPECT_CONTAINS(error_of([&] {
                    log_softmax(tl::Tensor::empty(dev, {4, 0}, DType::Float32));
                  }),
                  "log_softmax: argument 'x' has an empty last dimension: expected at least 1 "
                  "column, got 0");
  EXPECT_CONTAINS(error_of([&] { log_softmax(tl::Tensor()); }),
                  "log_softmax: argument 'x' must be a tensor");
  // log_softmax_backward: dy's shape, dtype and device against y's
  EXPECT_CONTAINS(error_of([&] {
                    log_softmax_backward(tl::randn(dev, {4, 128}, DType::BFloat16, 4), y);
                  }),
                  "log_softmax_backward: argument 'dy' has the wrong shape: expected [4, 130], "
                  "got [4, 128]");
  EXPECT_CONTAINS(error_of([&] {
                    log_softmax_backward(tl::randn(dev, {4, 130}, DType::Float16, 5), y);
                  }),
                  "log_softmax_backward: argument 'dy' has the wrong dtype: expected bfloat16 "
                  "(the dtype of 'y'), got float16");
  EXPECT_CONTAINS(error_of([&] {
                    log_softmax_backward(tl::randn(other, {4, 130}, DType::BFloat16, 6), y);
                  }),
                  "log_softmax_backward: argument 'dy' is on another device");
  EXPECT_CONTAINS(error_of([&] {
                    log_softmax_backward(dy, tl::randn(dev, {4, 130}, DType::Float64, 7));
                  }),
                  "log_softmax_backward: argument 'y' has the wrong dtype");
}

TEST(BackwardEdges, RopeBackwardBadInputs) {
  tl::Device dev, other;
  auto dy = tl::randn(dev, {4, 2, 128}, DType::Float16, 1);
  auto cs = tl::uniform(dev, {8, 64}, DType::Float32, 2);
  auto m = error_of([&] { rope_backward(dy.reshape({8, 128}), cs, cs); });
  EXPECT_CONTAINS(m,
                  "rope_backward: argument 'dy' has the wrong rank: expected 3 dimensions "
                  "[tokens, heads, head_dim], got 2");
  EXPECT_CONTAINS(m, "tests/ops/backward_edges_test.cpp:");
  EXPECT_CONTAINS(error_of([&] {
                    rope_backward(dy, tl::uniform(dev, {8, 64}, DType::Float16, 3), cs);
                  }),
                  "rope_backward: argument 'cos' has the wrong dtype: expected float32, got "
                  "float16");
  EXPECT_CONTAINS(error_of([&] {
                    rope_backward(dy, cs, tl::uniform(other, {8, 64}, DType::Float32, 4));
                  }),
                  "rope_backward: argument 'sin' is on another device");
  auto pos = tl::from_vector(dev, {4}, DType::Int32, {0, 1, 9, 2});
  EXPECT_CONTAINS(error_of([&] { rope_backward(dy, cs, cs, pos); }),
                  "rope_backward: argument 'positions' has a value out of range: expected 0 <= "
                  "positions[t] < 8 (cos rows), got positions[2] = 9");
}

// One NaN in dy (row 3): softmax's dx = y (dy - sum(dy y)) and log-softmax's dx = dy - exp(y)
// sum(dy) carry it through the row's sum to every column of row 3, and to no other row. Both
// schedules: 130 columns (one pass) and 7168 (resident), and the chunked 60000 fp32.
TEST(BackwardEdges, SoftmaxBackwardsNanStaysInItsRow) {
  for (int64_t N : {130, 7168, 60000}) {
    SCOPED_TRACE(N);
    tl::Device dev;
    auto x = tl::randn(dev, {9, N}, DType::Float32, opstest::test_seed());
    auto d = tl::randn(dev, {9, N}, DType::Float32, opstest::test_seed() + 1).to_vector();
    d[3 * N + N / 3] = std::numeric_limits<double>::quiet_NaN();
    auto dy = tl::from_vector(dev, {9, N}, DType::Float32, d);
    for (bool log : {false, true}) {
      auto y = log ? log_softmax(x) : softmax(x);
      auto dx = (log ? log_softmax_backward(dy, y) : softmax_backward(dy, y)).to_vector();
      for (int64_t i = 0; i < 9; ++i)
        for (int64_t j : {int64_t{0}, N / 3, N - 1})
          EXPECT_EQ(std::isnan(dx[i * N + j]), i == 3)
              << "log " << log << " row " << i << " col " << j;
    }
  }
}

}  // namespace
