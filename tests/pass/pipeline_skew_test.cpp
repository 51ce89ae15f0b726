// T.Pipelined(..., skew=d) (src/pass/pipeline_loops.cpp): the part of a core's body before its
// first pop after a push runs d iterations ahead. Tested here: every (num_stages, skew) pair with
// skew < num_stages gives the serial result bit for bit under the hazard checker, for trip counts
// 0, 1, 2, 3, 5, 7 and a symbolic one (the prologue of d first parts and the epilogue of d second
// parts fold or guard correctly); the lowered cube issues QK^T(t + d) before its wait for P(t);
// the knob prints and parses; a skew that has no slot for every iteration in flight is an error.
#include <gtest/gtest.h>

#include <cmath>

#include "mini_attention.h"
#include "pass_test_util.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/parser.h"
#include "tl/printer.h"

namespace tl {
namespace {

using testing::error_of;
using testing::mini_attention;
using testing::run_mini_attention;

size_t count_before(const std::string& text, const std::string& what, size_t end) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos && at < end;
       at = text.find(what, at + 1))
    ++n;
  return n;
}

// The serial loop (num_stages 1) is the one pipeline_loops_test.cpp checks against a host
// reference (mini_attention.h); every skewed schedule must give its bits.
TEST(PipelineSkew, EverySkewBelowTheStageCountGivesTheSerialResultBitForBit) {
  for (bool symbolic : {false, true})
    for (int64_t tiles : {0, 1, 2, 3, 5, 7}) {
      SCOPED_TRACE(fmt::format("tiles {} symbolic {}", tiles, symbolic));
      const std::vector<double> serial = run_mini_attention(1, tiles, symbolic, 1);
      for (int stages = 3; stages <= 4; ++stages)
        for (int skew = 2; skew < stages; ++skew) {
          SCOPED_TRACE(fmt::format("num_stages {} skew {}", stages, skew));
          ASSERT_EQ(run_mini_attention(stages, tiles, symbolic, skew), serial);
        }
    }
}

TEST(PipelineSkew, TheCubeIssuesQkOfIterationTPlusSkewBeforeItsWaitForP) {
  for (int skew : {1, 2, 3}) {
    SCOPED_TRACE(skew);
    PrimFunc f = compile(mini_attention(4, Expr(11 * 32), skew)).func();
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
    return print(mini_attention(3, Expr(5 * 32), skew), {.locations = false});
  };
  EXPECT_NE(text(2).find("T.Pipelined(5, num_stages=3, skew=2):"), std::string::npos) << text(2);
  EXPECT_EQ(text(1).find("skew="), std::string::npos) << text(1);
  PrimFunc back = parse(text(2));
  EXPECT_EQ(print(back, {.locations = false}), text(2));
  EXPECT_NE(print(parse(text(1)), {.locations = false}), text(2));
}

TEST(PipelineSkew, ASkewWithoutASlotForEveryIterationInFlightIsAnError) {
  EXPECT_NE(error_of([] {
              mini_attention(2, Expr(5 * 32), 2);
            }).find("T::Pipelined: skew must be >= 1 and below num_stages"),
            std::string::npos);
  EXPECT_NE(error_of([] { mini_attention(3, Expr(5 * 32), 0); }).find("got skew 0"),
            std::string::npos);
  // IR text is checked when the loop is lowered.
  std::string text = print(mini_attention(3, Expr(5 * 32), 2), {.locations = false});
  text.replace(text.find("skew=2"), 6, "skew=3");
  EXPECT_NE(error_of([&] {
              compile(parse(text));
            }).find("T.Pipelined(num_stages=3, skew=3): skew must be >= 1 and below num_stages"),
            std::string::npos);
}

}  // namespace
}  // namespace tl
