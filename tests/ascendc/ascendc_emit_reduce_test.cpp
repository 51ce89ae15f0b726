// The AscendC emitter's reductions and progressions (src/ascendc/emit_reduce.cpp,
// emit_progression.cpp; docs/ascendc.md "Reductions"): the per-row count form with its
// documented sharedTmpBuffer in the emitted text, a row width that is not whole 32-byte blocks,
// clear=False, the scratch's size; ArithProgression where its values are exact integers and an
// error naming the construct and its line where they would not be.
#include <gtest/gtest.h>

#include "tl/ascendc.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"
#include "tl/pass.h"

namespace tl {
namespace {

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

std::string emit_of(const PrimFunc& f) {
  return ascendc::emit(lower(f, default_target()), default_target());
}

// softmax_dev with rows of 33 fp32 (UB rows padded to 40): per row ReduceMax / ReduceSum over
// the 33 logical columns, each into its own slot + work area (8 + 8 floats: 33 floats are one
// repeat; ReduceMax needs a value and an index: still 8), gathered by one WholeReduce.
TEST(AscendCEmitReduce, RowsNotWhole32ByteBlocks) {
  const std::string text =
      emit_of(build_kernel(find_kernel("softmax_dev"), {{"M", "7"}, {"N", "33"}}));
  EXPECT_HAS(text,
             "AscendC::ReduceMax<float>(tl_scratch_float32[tl_r * 16], x_0[(tl_r * 40)], "
             "tl_scratch_float32[8 + tl_r * 16], 33);");
  EXPECT_HAS(text,
             "AscendC::WholeReduceMax<float>(m, tl_scratch_float32, 1, 4, 1, 1, 2, "
             "AscendC::ReduceOrder::ORDER_ONLY_VALUE);");
  EXPECT_HAS(text, "AscendC::WholeReduceSum<float>(s, tl_scratch_float32, 1, 4, 1, 1, 2);");
  // The scratch: 4 rows x 16 floats (the Brcb scratch is smaller), not rows x cols x 4 + 256.
  EXPECT_HAS(text, "tl_ub.GetWithOffset<float>(64, ");
}

// The documented minimum grows with the row: 1024 fp32 are 16 repeats, so ReduceSum's work is
// 16 floats and ReduceMax's (value and index per repeat) 32: slots of 24 and 40 floats.
TEST(AscendCEmitReduce, WorkAreaIsTheDocumentedMinimum) {
  const std::string text = emit_of(build_kernel(find_kernel("softmax_dev"), {}));
  EXPECT_HAS(text,
             "AscendC::ReduceSum<float>(tl_scratch_float32[tl_r_2 * 24], x_0[(tl_r_2 * "
             "1024)], tl_scratch_float32[8 + tl_r_2 * 24], 1024);");
  EXPECT_HAS(text,
             "AscendC::ReduceMax<float>(tl_scratch_float32[tl_r * 40], x_0[(tl_r * 1024)], "
             "tl_scratch_float32[8 + tl_r * 40], 1024);");
}

PrimFunc reduce_kernel(bool clear, bool max, int* line) {
  auto X = T::Tensor("X", {8, 64}, DType::Float32);
  auto S = T::Tensor("S", {8}, DType::Float32);
  return T::prim_func("red", {X, S}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        Buffer x = T::alloc_ub("x", {8, 64}, DType::Float32);
        Buffer s = T::alloc_ub("s", {8}, DType::Float32);
        T::copy(X, x);
        T::copy(S, s);
        T::pipe_barrier(Pipe::ALL);
        *line = __LINE__ + 1;
        max ? T::reduce_max(x, s, -1, clear) : T::reduce_sum(x, s, -1, clear);
        T::pipe_barrier(Pipe::ALL);
        T::copy(s, S);
      });
    });
  });
}

// clear=False: the gathered row sums go to scratch, then dst += them (the VM: sum, then + dst).
TEST(AscendCEmitReduce, SumWithoutClearAddsToDst) {
  int line = 0;
  const std::string text = emit_of(reduce_kernel(false, false, &line));
  EXPECT_HAS(text,
             "AscendC::WholeReduceSum<float>(tl_scratch_float32, tl_scratch_float32[8], 1, "
             "8, 1, 1, 2);");
  EXPECT_HAS(text, "AscendC::Add(s, tl_scratch_float32, s, 8);");
}

TEST(AscendCEmitReduce, MaxWithoutClearIsAnErrorNamingItsLine) {
  int line = 0;
  try {
    emit_of(reduce_kernel(false, true, &line));
    FAIL() << "emitted reduce_max with clear=False";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_HAS(msg, "T.reduce_max with clear=False has no AscendC form");
    EXPECT_HAS(msg, fmt::format("ascendc_emit_reduce_test.cpp:{}", line));
  }
}

PrimFunc progression_kernel(DType t, double first, double diff, int* line) {
  auto Y = T::Tensor("Y", {64}, t);
  return T::prim_func("prog", {Y}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        Buffer y = T::alloc_ub("y", {64}, t);
        *line = __LINE__ + 1;
        T::tile::arith_progression(y, imm(t, first), imm(t, diff));
        T::pipe_barrier(Pipe::ALL);
        T::copy(y, Y);
      });
    });
  });
}

TEST(AscendCEmitReduce, ArithProgressionOfExactIntegers) {
  int line = 0;
  EXPECT_HAS(emit_of(progression_kernel(DType::Float32, -5, 2, &line)),
             "AscendC::ArithProgression<float>(y, -5.0f, 2.0f, 64);");
  EXPECT_HAS(emit_of(progression_kernel(DType::Int32, 7, 3, &line)),
             "AscendC::ArithProgression<int32_t>(y, ");
}

// Values past 2^24 in fp32 (or fractional steps) would round step by step in the API but once
// in the VM: an error naming the construct and its line, not a different result.
TEST(AscendCEmitReduce, ArithProgressionThatWouldRoundIsAnError) {
  for (auto [first, diff] :
       {std::pair{16777200.0, 1.0}, std::pair{0.0, 0.1}, std::pair{4.0, -1.0}}) {
    int line = 0;
    try {
      emit_of(progression_kernel(DType::Float32, first, diff, &line));
      FAIL() << "emitted a progression from " << first << " by " << diff;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_HAS(msg, "T.tile.arith_progression");
      EXPECT_HAS(msg, fmt::format("ascendc_emit_reduce_test.cpp:{}", line));
    }
  }
}

}  // namespace
}  // namespace tl
