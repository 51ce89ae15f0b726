// pipeline_loops (src/pass/pipeline_loops.cpp): which buffers get slots and which do not, the
// cross-core skew, the errors, and the must-show of issue 13 that results do not depend on the
// schedule: every num_stages from 1 to 4 and trip counts 0, 1, 2, 3, 5, 7 and symbolic give
// bit-identical outputs, under the hazard checker, for a loop whose work crosses cores both ways
// (the FlashAttention shape: scores to the vector unit, probabilities back, a product out).
#include <gtest/gtest.h>

#include <cmath>

#include "mini_attention.h"
#include "pass_test_util.h"
#include "tl/arith.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/parser.h"
#include "tl/printer.h"

namespace tl {
namespace {

using testing::error_of;
using testing::mini_attention;
using testing::run_mini_attention;
using testing::wave;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Must-show 2 (bit-identity): 4 schedules x 6 trip counts, constant and symbolic. The serial
// schedule is checked against a host reference, so the comparison is not between wrong results.
TEST(PipelineLoops, EveryStageCountAndTripCountGivesTheSerialResultBitForBit) {
  for (bool symbolic : {false, true})
    for (int64_t tiles : {0, 1, 2, 3, 5, 7}) {
      SCOPED_TRACE(fmt::format("tiles {} symbolic {}", tiles, symbolic));
      std::vector<double> serial = run_mini_attention(1, tiles, symbolic);
      // Host reference of the serial schedule (fp16 inputs, fp32 sums, p rounded to fp16).
      auto qv = wave(64 * 32, 0.1), kv = wave(tiles * 32 * 32, 0.7),
           vv = wave(tiles * 32 * 32, 1.3);
      auto h = [](double x) { return arith::round_float(f16, x); };
      std::vector<double> acc(64 * 32, 0.0);
      for (int64_t t = 0; t < tiles; ++t) {
        std::vector<double> s(64 * 32), o(64 * 32, 0.0), rmax(64, -INFINITY);
        for (int i = 0; i < 64; ++i)
          for (int c = 0; c < 32; ++c) {
            double sum = 0;
            for (int d = 0; d < 32; ++d) sum += h(qv[i * 32 + d]) * h(kv[(t * 32 + c) * 32 + d]);
            s[i * 32 + c] = sum;
            rmax[i] = std::max(rmax[i], sum);
          }
        for (int i = 0; i < 64; ++i)
          for (int c = 0; c < 32; ++c)
            for (int r = 0; r < 32; ++r)
              o[i * 32 + c] += h(s[i * 32 + r] * 0.125) * h(vv[(t * 32 + r) * 32 + c]);
        for (int i = 0; i < 64 * 32; ++i) acc[i] = acc[i] * 0.5 + o[i] * rmax[i / 32];
      }
      for (size_t i = 0; i < acc.size(); ++i)
        ASSERT_NEAR(serial[i], acc[i], 2e-3 + 2e-3 * std::abs(acc[i])) << i;
      for (int stages = 2; stages <= 4; ++stages) {
        SCOPED_TRACE(fmt::format("num_stages {}", stages));
        ASSERT_EQ(run_mini_attention(stages, tiles, symbolic), serial);
      }
    }
}

// A loop that starts at 2 with a symbolic extent (IR text: the DSL's loops start at 0).
TEST(PipelineLoops, ANonzeroStartAndASymbolicExtentRunEveryIterationOnce) {
  for (int stages = 1; stages <= 4; ++stages)
    for (int64_t rows : {2, 3, 4, 5, 7, 9}) {
      SCOPED_TRACE(fmt::format("num_stages {} rows {}", stages, rows));
      PrimFunc f = parse(fmt::format(R"(n = T.dynamic("n")

@T.prim_func
def start2(X: T.Tensor((n, 64), "float32"), Y: T.Tensor((n, 64), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((1, 64), "float32")
        for r in T.Pipelined(n - 2, num_stages={}, min=2):
            T.copy(X[r:r + 1, 0:64], x)
            T.tile.mul(x, x, 3.0)
            T.copy(x, Y[r:r + 1, 0:64])
)",
                                     stages));
      auto kern = compile(f);
      Device dev;
      auto in = wave(rows * 64, 0.2);
      Tensor xs = from_vector(dev, {rows, 64}, f32, in);
      Tensor ys = from_vector(dev, {rows, 64}, f32,
                              std::vector<double>(static_cast<size_t>(rows * 64), -1.0));
      ASSERT_NO_THROW(kern.launch(dev, {xs, ys}, {.check_hazards = true}));
      auto yv = ys.to_vector();
      for (int64_t i = 0; i < rows * 64; ++i)
        ASSERT_EQ(yv[i], i < 2 * 64 ? -1.0 : static_cast<double>(static_cast<float>(in[i]) * 3.0f))
            << i;
    }
}

TEST(PipelineLoops, BothCoresRunTheirFirstPartOneIterationAheadWithSlotsForWhatCrosses) {
  PrimFunc f = compile(mini_attention(2, Expr(7 * 32))).func();
  std::string ir = print(f, {.locations = false});
  EXPECT_EQ(ir.find("Pipelined"), std::string::npos) << ir;
  // Every channel has two slots; v (loaded before the first pop, read after it) two buffers;
  // rmax (computed before the push of p, read after the pop of o) too.
  EXPECT_EQ(count(ir, "T.alloc_workspace((1, 2, "), 3u) << ir;
  for (const char* b :
       {"v_0 = T.alloc_L1", "v_1 = T.alloc_L1", "rmax_0 = T.alloc_ub", "rmax_1 = T.alloc_ub"})
    EXPECT_NE(ir.find(b), std::string::npos) << b << "\n" << ir;
  // The accumulator is carried from one iteration to the next: one buffer.
  EXPECT_EQ(ir.find("acc_0"), std::string::npos) << ir;
  // The cube's prologue: the first tile's scores are pushed before the loop, so inside it the
  // next tile's QK^T comes before this tile's wait for p.
  const size_t loop = ir.find("for j_o in T.serial(3):");
  ASSERT_NE(loop, std::string::npos) << ir;
  EXPECT_LT(ir.find("T.mma(q_l0a_0"), loop) << ir;
}

TEST(PipelineLoops, SwitchedOffTheLoopsRunSeriallyWithTheSameBits) {
  PrimFunc f = mini_attention(2, Expr(5 * 32));
  CompileOptions off;
  off.dev.pipeline_loops = false;
  auto serial = compile(f, default_target(), off);
  std::string ir = print(serial.func(), {.locations = false});
  EXPECT_NE(ir.find("for j in T.serial(5):"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("v_0"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("T.alloc_workspace((1, 2, "), std::string::npos) << ir;
  std::vector<std::vector<double>> outs;
  for (const CompiledKernel& kern : {serial, compile(f)}) {
    Device dev;
    Tensor q = from_vector(dev, {64, 32}, f16, wave(64 * 32, 0.1));
    Tensor k = from_vector(dev, {160, 32}, f16, wave(160 * 32, 0.7));
    Tensor v = from_vector(dev, {160, 32}, f16, wave(160 * 32, 1.3));
    Tensor o = Tensor::empty(dev, {64, 32}, f32);
    kern.launch(dev, {q, k, v, o}, {.check_hazards = true});
    outs.push_back(o.to_vector());
  }
  EXPECT_EQ(outs[0], outs[1]);
}

// A tail tile split over two AIVs: split_aiv guards each AIV's clipped copy with `if rows > 0`
// (an AIV with no rows left skips it). That is still the write that makes the tile private to
// its iteration, so the row tiles get two slots; before, the loop stayed serial.
TEST(PipelineLoops, ATileWrittenByAnAivsGuardedCopyGetsSlots) {
  PrimFunc f = build_kernel(find_kernel("softmax_dev"),
                            {{"M", "200"}, {"N", "64"}, {"bM", "8"}, {"tiles", "4"}});
  std::string ir = print(compile(f).func(), {.locations = false});
  EXPECT_NE(
      ir.find("if T.max(T.min(T.min(200 - (cid * 4 + t_o * 2) * 8, 8) - vid * 4, 4), 0) > 0:"),
      std::string::npos)
      << ir;
  for (const char* b : {"x_0 = T.alloc_ub", "x_1 = T.alloc_ub"})
    EXPECT_NE(ir.find(b), std::string::npos) << b << "\n" << ir;
}

TEST(PipelineLoops, ScratchTouchedByOnePipeAndLoopCarriedBuffersKeepOneCopy) {
  auto X = T::Tensor("X", {8, 64}, f32), Y = T::Tensor("Y", {8, 64}, f32),
       Z = T::Tensor("Z", {1, 64}, f32);
  PrimFunc f = T::prim_func("versions", {X, Y, Z}, [&] {
    T::Kernel(1, [&](Expr) {
      auto x = T::alloc_shared("x", {1, 64}, f32), t = T::alloc_fragment("t", {1, 64}, f32);
      auto y = T::alloc_shared("y", {1, 64}, f32), sum = T::alloc_fragment("sum", {1, 64}, f32);
      T::clear(sum);
      T::Pipelined("r", 8, 2, [&](Expr r) {
        T::copy(X.at({r, 0}), x);                                                 // MTE2, V: slots
        T::Parallel({1, 64}, [&](Expr i, Expr j) { t(i, j) = x(i, j) * 2.0f; });  // V only: one
        T::Parallel({1, 64}, [&](Expr i, Expr j) { y(i, j) = t(i, j) + 1.0f; });  // V, MTE3: slots
        T::Parallel({1, 64},
                    [&](Expr i, Expr j) { sum(i, j) = sum(i, j) + t(i, j); });  // carried: one
        T::copy(y, Y.at({r, 0}));
      });
      T::copy(sum, Z);
    });
  });
  auto kern = compile(f);
  std::string ir = print(kern.func(), {.locations = false});
  for (const char* b :
       {"x_0 = T.alloc_ub", "x_1 = T.alloc_ub", "y_0 = T.alloc_ub", "y_1 = T.alloc_ub"})
    EXPECT_NE(ir.find(b), std::string::npos) << b << "\n" << ir;
  for (const char* b : {"t_0", "sum_0"})
    EXPECT_EQ(ir.find(b), std::string::npos) << b << "\n" << ir;
  Device dev;
  auto in = wave(8 * 64, 0.3);
  Tensor xs = from_vector(dev, {8, 64}, f32, in), ys = Tensor::empty(dev, {8, 64}, f32),
         zs = Tensor::empty(dev, {1, 64}, f32);
  ASSERT_NO_THROW(kern.launch(dev, {xs, ys, zs}, {.check_hazards = true}));
  auto yv = ys.to_vector(), zv = zs.to_vector();
  for (int c = 0; c < 64; ++c) {
    float sum = 0;
    for (int r = 0; r < 8; ++r) {
      float t = static_cast<float>(in[r * 64 + c]) * 2.0f;
      ASSERT_EQ(yv[r * 64 + c], static_cast<double>(t + 1.0f));
      sum += t;
    }
    ASSERT_EQ(zv[c], static_cast<double>(sum));
  }
}

TEST(PipelineLoops, ABufferWhoseSlotsWouldNotFitKeepsOneCopy) {
  // 128 KiB of UB per tile: two would not fit in A2's 192 KiB, so the loop keeps one (correct,
  // serialised) instead of failing to plan.
  auto X = T::Tensor("X", {1024, 128}, f32), Y = T::Tensor("Y", {1024, 128}, f32);
  PrimFunc f = T::prim_func("big_tile", {X, Y}, [&] {
    T::Kernel(1, [&](Expr) {
      auto x = T::alloc_shared("x", {256, 128}, f32);
      T::Pipelined("r", 4, 2, [&](Expr r) {
        T::copy(X.at({r * 256, 0}), x);
        T::copy(x, Y.at({r * 256, 0}));
      });
    });
  });
  auto kern = compile(f);
  std::string ir = print(kern.func(), {.locations = false});
  EXPECT_EQ(ir.find("x_0"), std::string::npos) << ir;
  Device dev;
  auto in = wave(1024 * 128, 0.9);
  Tensor xs = from_vector(dev, {1024, 128}, f32, in), ys = Tensor::empty(dev, {1024, 128}, f32);
  ASSERT_NO_THROW(kern.launch(dev, {xs, ys}, {.check_hazards = true}));
  EXPECT_EQ(ys.to_vector(), xs.to_vector());
}

TEST(PipelineLoops, APipelinedLoopInsideAnotherOnOneCoreIsAnErrorAtTheInnerLoop) {
  auto X = T::Tensor("X", {8, 64}, f32);
  PrimFunc f = T::prim_func("nested", {X}, [&] {
    T::Kernel(1, [&](Expr) {
      auto x = T::alloc_shared("x", {1, 64}, f32);
      T::Pipelined("a", 2, 2, [&](Expr a) {
        T::Pipelined("b", 4, 2, [&](Expr b) {
          T::copy(X.at({a * 4 + b, 0}), x);
          T::copy(x, X.at({a * 4 + b, 0}));
        });
      });
    });
  });
  std::string msg = error_of([&] { compile(f); });
  EXPECT_NE(msg.find("pipeline_loops_test.cpp:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("T.Pipelined inside another T.Pipelined loop on the vector core"),
            std::string::npos)
      << msg;
}

// The developer examples themselves: every num_stages gives the serial result bit for bit.
TEST(PipelineLoops, DeveloperExamplesGiveTheSameBitsForEveryStageCount) {
  struct Case {
    std::string kernel;
    std::map<std::string, std::string> params;
  };
  for (const Case& c : std::vector<Case>{
           {"gemm_dev",
            {{"M", "128"}, {"N", "128"}, {"K", "320"}, {"bM", "64"}, {"bN", "64"}, {"bK", "64"}}},
           {"gemm_dev",
            {{"M", "64"}, {"N", "64"}, {"K", "112"}, {"bM", "64"}, {"bN", "64"}, {"bK", "16"}}},
           {"flash_attention_dev", {{"S", "200"}, {"D", "64"}}},
           {"flash_attention_dev", {{"S", "448"}, {"D", "64"}}},
           {"flash_attention_dev", {{"S", "200"}, {"D", "512"}}},
           {"softmax_dev", {{"M", "200"}, {"N", "64"}, {"bM", "8"}, {"tiles", "5"}}}}) {
    SCOPED_TRACE(c.kernel);
    std::vector<double> first;
    for (int stages = 1; stages <= 4; ++stages) {
      SCOPED_TRACE(stages);
      auto params = c.params;
      params["num_stages"] = std::to_string(stages);
      PrimFunc f = build_kernel(find_kernel(c.kernel), params);
      Device dev;
      std::vector<Arg> args;
      std::vector<Tensor> tensors;
      int seed = 0;
      for (const Param& p : f->params) {
        std::vector<int64_t> shape;
        int64_t n = 1;
        for (const Expr& e : p.tensor->shape) n *= shape.emplace_back(*as_const_int(e));
        tensors.push_back(from_vector(dev, shape, p.tensor->dtype, wave(n, 0.4 * ++seed)));
      }
      for (const Tensor& t : tensors) args.emplace_back(t);
      ASSERT_NO_THROW(compile(f).launch(dev, args, {.check_hazards = true}));
      std::vector<double> out = tensors.back().to_vector();
      if (stages == 1)
        first = out;
      else
        ASSERT_EQ(out, first);
    }
  }
}

}  // namespace
}  // namespace tl
