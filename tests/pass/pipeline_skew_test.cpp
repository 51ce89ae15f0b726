// T.Pipelined(..., skew=d) (src/pass/pipeline_loops.cpp): the part of a core's body before its
// first pop after a push runs d iterations ahead. Tested here: every (num_stages, skew) pair with
// skew < num_stages gives the serial result bit for bit under the hazard checker, for trip counts
// 0, 1, 2, 3, 5, 7 and a symbolic one (the prologue of d first parts and the epilogue of d second
// parts fold or guard correctly); the lowered cube issues QK^T(t + d) before its wait for P(t);
// the knob prints and parses; a skew that has no slot for every iteration in flight is an error.
#include <gtest/gtest.h>

#include <cmath>

#include "pass_test_util.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/parser.h"
#include "tl/printer.h"

namespace tl {
namespace {

using testing::error_of;

std::vector<double> wave(int64_t n, double phase) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = std::sin(0.61 * static_cast<double>(i) + phase) * 0.5;
  return v;
}

size_t count_before(const std::string& text, const std::string& what, size_t end) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos && at < end;
       at = text.find(what, at + 1))
    ++n;
  return n;
}

/// pipeline_loops_test.cpp's attention-shaped loop with a skew: per 32-row kv tile the cube
/// computes s = q k^T, the vector unit p = f16(s / 8) and the row maxima (used after the pop of
/// o, as FlashAttention's rescale is), the cube o = p v, the vector unit acc = acc / 2 + o rmax.
PrimFunc skewed_attention(int num_stages, int skew, Expr rows) {
  auto Q = T::Tensor("Q", {64, 32}, f16), K = T::Tensor("K", {rows, 32}, f16),
       V = T::Tensor("V", {rows, 32}, f16);
  auto O = T::Tensor("O", {64, 32}, f32);
  return T::prim_func("skewed_attention", {Q, K, V, O}, [&] {
    T::Kernel(1, [&](Expr) {
      auto q = T::alloc_shared("q", {64, 32}, f16), k = T::alloc_shared("k", {32, 32}, f16);
      auto v = T::alloc_shared("v", {32, 32}, f16), p = T::alloc_shared("p", {64, 32}, f16);
      auto s = T::alloc_fragment("s", {64, 32}, f32), o = T::alloc_fragment("o", {64, 32}, f32);
      auto acc = T::alloc_fragment("acc", {64, 32}, f32),
           rmax = T::alloc_fragment("rmax", {64}, f32);
      T::copy(Q, q);
      T::clear(acc);
      T::Pipelined("j", rows / 32, num_stages, {.skew = skew}, [&](Expr j) {
        T::copy(K.at({j * 32, 0}), k);
        T::copy(V.at({j * 32, 0}), v);
        T::gemm(q, k, s, {.transpose_B = true, .init = true});
        T::reduce_max(s, rmax, -1);
        T::Parallel({64, 32}, [&](Expr i, Expr c) { p(i, c) = cast(f16, s(i, c) * 0.125f); });
        T::gemm(p, v, o, {.init = true});
        T::Parallel({64, 32},
                    [&](Expr i, Expr c) { acc(i, c) = acc(i, c) * 0.5f + o(i, c) * rmax(i); });
      });
      T::copy(acc, O);
    });
  });
}

std::vector<double> run(int num_stages, int skew, int64_t tiles, bool symbolic) {
  const int64_t rows = tiles * 32;
  Expr r = symbolic ? Expr(T::dynamic("N")) : Expr(rows);
  auto kern = compile(skewed_attention(num_stages, skew, r));
  Device dev;
  Tensor q = from_vector(dev, {64, 32}, f16, wave(64 * 32, 0.1));
  Tensor k = from_vector(dev, {rows, 32}, f16, wave(rows * 32, 0.7));
  Tensor v = from_vector(dev, {rows, 32}, f16, wave(rows * 32, 1.3));
  Tensor o = from_vector(dev, {64, 32}, f32, std::vector<double>(64 * 32, -7.0));
  kern.launch(dev, {q, k, v, o}, {.check_hazards = true});
  return o.to_vector();
}

// The serial loop (num_stages 1) is pipeline_loops_test.cpp's, checked there against a host
// reference; every skewed schedule must give its bits.
TEST(PipelineSkew, EverySkewBelowTheStageCountGivesTheSerialResultBitForBit) {
  for (bool symbolic : {false, true})
    for (int64_t tiles : {0, 1, 2, 3, 5, 7}) {
      SCOPED_TRACE(fmt::format("tiles {} symbolic {}", tiles, symbolic));
      const std::vector<double> serial = run(1, 1, tiles, symbolic);
      for (int stages = 3; stages <= 4; ++stages)
        for (int skew = 2; skew < stages; ++skew) {
          SCOPED_TRACE(fmt::format("num_stages {} skew {}", stages, skew));
          ASSERT_EQ(run(stages, skew, tiles, symbolic), serial);
        }
    }
}

TEST(PipelineSkew, TheCubeIssuesQkOfIterationTPlusSkewBeforeItsWaitForP) {
  for (int skew : {1, 2, 3}) {
    SCOPED_TRACE(skew);
    PrimFunc f = compile(skewed_attention(4, skew, Expr(11 * 32))).func();
    std::string ir = print(f, {.locations = false});
    // Every iteration in flight has its slot: 4 per channel, v and rmax.
    EXPECT_EQ(count_before(ir, "T.alloc_workspace((1, 4, ", ir.size()), 3u) << ir;
    for (const char* b : {"v_3 = T.alloc_L1", "rmax_3 = T.alloc_ub"})
      EXPECT_NE(ir.find(b), std::string::npos) << b << "\n" << ir;
    // The cube's prologue computes the first `skew` tiles' scores (one mma each, k = 32) before
    // its steady loop, whose steps then run QK^T(t + skew) before P V(t).
    const size_t loop = ir.find("for j_o in T.serial(");
    ASSERT_NE(loop, std::string::npos) << ir;
    EXPECT_EQ(count_before(ir, "T.mma(q_l0a", loop), static_cast<size_t>(skew)) << ir;
    EXPECT_EQ(count_before(ir, "T.mma(p_l1", loop), 0u) << ir;
  }
}

TEST(PipelineSkew, TheKnobPrintsAndParsesAndSkewOneIsTheDefault) {
  auto text = [](int skew) {
    return print(skewed_attention(3, skew, Expr(5 * 32)), {.locations = false});
  };
  EXPECT_NE(text(2).find("T.Pipelined(5, num_stages=3, skew=2):"), std::string::npos) << text(2);
  EXPECT_EQ(text(1).find("skew="), std::string::npos) << text(1);
  PrimFunc back = parse(text(2));
  EXPECT_EQ(print(back, {.locations = false}), text(2));
  EXPECT_NE(print(parse(text(1)), {.locations = false}), text(2));
}

TEST(PipelineSkew, ASkewWithoutASlotForEveryIterationInFlightIsAnError) {
  EXPECT_NE(error_of([] {
              skewed_attention(2, 2, Expr(5 * 32));
            }).find("T::Pipelined: skew must be >= 1 and below num_stages"),
            std::string::npos);
  EXPECT_NE(error_of([] { skewed_attention(3, 0, Expr(5 * 32)); }).find("got skew 0"),
            std::string::npos);
  // IR text is checked when the loop is lowered.
  std::string text = print(skewed_attention(3, 2, Expr(5 * 32)), {.locations = false});
  text.replace(text.find("skew=2"), 6, "skew=3");
  EXPECT_NE(error_of([&] {
              compile(parse(text));
            }).find("T.Pipelined(num_stages=3, skew=3): skew must be >= 1 and below num_stages"),
            std::string::npos);
}

}  // namespace
}  // namespace tl
