// Issue 27, bug 1: a developer kernel that accumulates clipped tiles over a loop carried the
// stale part of the last (clipped) tile into its accumulator. A chunked row sum of squares over
// 64-column chunks at N = 100 was 33-41 % off (the columns past N kept the previous chunk's
// data), and the column-sum analogue (13 rows in tiles of 8, accumulate, reduce over rows) was
// off by 4.4-5.9; the hazard checker and timed mode were silent. mask_tails (docs/
// developer_mode.md, "Tails") updates only the valid part on the clipped iterations. These run
// the kernels on tails (sizes 1, 7, 33, 1000, 4097; rows not a multiple of the block) against
// fp64, under the hazard checker, after a launch that leaves large values in UB (what a stale
// read would find), and check that switching the pass off brings the bug back.
#include <gtest/gtest.h>

#include <cmath>

#include "pass/pass_test_util.h"
#include "tl/jit.h"
#include "tl/npu/npu.h"
#include "tl/npu/stale.h"
#include "tl/runtime.h"
#include "tl/target.h"

namespace tl {
namespace {

PrimFunc row_sum_of_squares(int M, int N) {
  return parse(fmt::format(R"(@T.prim_func
def f(X: T.Tensor(({0}, {1}), "float32"), Y: T.Tensor(({0},), "float32")):
    with T.Kernel(({0} + 7) // 8, threads=1) as cid:
        x = T.alloc_shared((8, 64), "float32")
        acc = T.alloc_fragment((8, 64), "float32")
        s = T.alloc_fragment((8,), "float32")
        T.tile.fill(acc, 0.0)
        for c in T.serial(({1} + 63) // 64):
            T.copy(X[cid * 8:cid * 8 + 8, c * 64:c * 64 + 64], x)
            for i in T.Parallel(8):
                for j in T.Parallel(64):
                    acc[i, j] = acc[i, j] + x[i, j] * x[i, j]
        T.reduce_sum(acc, s)
        T.copy(s, Y[cid * 8:cid * 8 + 8])
)",
                           M, N));
}

PrimFunc column_sums(int M, int N) {
  return parse(fmt::format(R"(@T.prim_func
def f(X: T.Tensor(({0}, {1}), "float32"), Y: T.Tensor(({1},), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((8, {1}), "float32")
        acc = T.alloc_fragment((8, {1}), "float32")
        s = T.alloc_fragment(({1},), "float32")
        T.tile.fill(acc, 0.0)
        for r in T.serial(({0} + 7) // 8):
            T.copy(X[r * 8:r * 8 + 8, 0:{1}], x)
            for i in T.Parallel(8):
                for j in T.Parallel({1}):
                    acc[i, j] = acc[i, j] + x[i, j]
        T.reduce_sum(acc, s, dim=0)
        T.copy(s, Y)
)",
                           M, N));
}

/// Fills every AIV's UB with 1000s: what a stale element would read.
void dirty_ub(Device& dev) {
  PrimFunc f = parse(R"(@T.prim_func
def f(X: T.Tensor((2048, 64), "float32")):
    with T.Kernel(256, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((512, 64), "float32", address=0)
            T.tile.fill(x, 1000.0)
)");
  Tensor X = Tensor::empty(dev, {2048, 64}, f32);
  compile(f).launch(dev, {X}, {.threads = 1});
}

/// Largest relative error of the row sums of squares of an M x N input.
/// `findings`, if given, receives the stale-data checker's findings instead of an error.
double row_error(int M, int N, bool mask_tails, bool hazards,
                 std::vector<npu::StaleFinding>* findings = nullptr) {
  Device dev;
  dirty_ub(dev);
  Tensor X = uniform(dev, {M, N}, f32, 11);
  Tensor Y = Tensor::empty(dev, {M}, f32);
  CompileOptions opt;
  opt.dev.mask_tails = mask_tails;
  compile(row_sum_of_squares(M, N), default_target(), opt)
      .launch(dev, {X, Y},
              {.threads = 1,
               .check_hazards = hazards,
               .check_stale = findings ? std::optional<bool>(true) : std::nullopt,
               .stale_findings = findings});
  std::vector<double> x = X.to_vector(), y = Y.to_vector();
  double worst = 0;
  for (int i = 0; i < M; ++i) {
    double ref = 0;
    for (int j = 0; j < N; ++j) ref += x[i * N + j] * x[i * N + j];
    worst = std::max(worst, std::abs(y[i] - ref) / std::max(ref, 1e-30));
  }
  return worst;
}

double column_error(int M, int N, bool mask_tails,
                    std::vector<npu::StaleFinding>* findings = nullptr) {
  Device dev;
  dirty_ub(dev);
  Tensor X = uniform(dev, {M, N}, f32, 12);
  Tensor Y = Tensor::empty(dev, {N}, f32);
  CompileOptions opt;
  opt.dev.mask_tails = mask_tails;
  compile(column_sums(M, N), default_target(), opt)
      .launch(dev, {X, Y},
              {.threads = 1,
               .check_hazards = mask_tails,
               .check_stale = findings ? std::optional<bool>(true) : std::nullopt,
               .stale_findings = findings});
  std::vector<double> x = X.to_vector(), y = Y.to_vector();
  double worst = 0;
  for (int j = 0; j < N; ++j) {
    double ref = 0;
    for (int i = 0; i < M; ++i) ref += x[i * N + j];
    worst = std::max(worst, std::abs(y[j] - ref));
  }
  return worst;
}

TEST(TailAccumulator, AChunkedRowSumOfSquaresReadsNoStaleColumn) {
  for (auto [M, N] :
       {std::pair{1, 1}, {7, 7}, {13, 33}, {13, 100}, {9, 1000}, {3, 4097}, {16, 128}}) {
    SCOPED_TRACE(fmt::format("{} x {}", M, N));
    EXPECT_LT(row_error(M, N, true, true), 1e-5);
  }
}

TEST(TailAccumulator, ColumnSumsOfATailBlockReadNoStaleRow) {
  for (auto [M, N] : {std::pair{1, 64}, {7, 64}, {13, 64}, {33, 128}, {1000, 32}}) {
    SCOPED_TRACE(fmt::format("{} x {}", M, N));
    EXPECT_LT(column_error(M, N, true), 1e-6 * M);
  }
}

TEST(TailAccumulator, WithoutMaskTailsTheStalePartEntersTheSums) {
  // The pass is what the fix hangs on: off, the bug is back (the figures of the issue), and the
  // stale-data checker names it: the stored sums come from the clipped copy's stale columns.
  std::vector<npu::StaleFinding> rows, cols;
  EXPECT_GT(row_error(13, 100, false, false, &rows), 0.05);
  EXPECT_GT(column_error(13, 64, false, &cols), 1.0);
  for (auto* f : {&rows, &cols}) {
    ASSERT_EQ(f->size(), 1u);
    EXPECT_EQ(f->front().kind, npu::StaleFinding::Kind::StoreToGM);
    EXPECT_EQ(f->front().buffer, "Y");
    EXPECT_NE(f->front().origin.find("stale since the clipped copy"), std::string::npos)
        << f->front().origin;
  }
}

}  // namespace
}  // namespace tl
