// The timing model's vector rows against A2's measured per-instruction costs (docs/hardware.md
// section 4, "Vector"; docs/calibration.md, "Vector cost rows"): one cycle a 256-byte repeat for
// the simple ops, 32 elements a cycle for exp and div (2 cycles a fp32 repeat, 4 a fp16 one), a
// whole-repeat reduce of 7 cycles per row after the row's other repeats are folded at the simple
// rate, and the functions AscendC composes (sigmoid, ...) at their former figure. The literal
// cycle counts are the published measurements where one exists (pto-isa's 910B3 vexp: 287
// cycles for 128 fp32 repeats), so a row changed without evidence fails here.
#include <gtest/gtest.h>

#include <map>

#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/op.h"
#include "tl/parser.h"
#include "tl/pass.h"
#include "tl/runtime.h"
#include "tl/target.h"

namespace tl {
namespace {

/// Cycles (end - start) of each instruction of a one-AIV kernel over x ([rows, cols] of
/// `dtype`, loaded from X) and y, z of the same shape, r ([rows]) and c ([cols]), by
/// instruction name (the last of a name wins). `body` is indented for the `if vid == 0` block.
/// `bank_groups` off keeps the planner's default layout (docs/compiler.md, "plan_memory").
std::map<std::string, double> cycles_of(int64_t rows, int64_t cols, const std::string& dtype,
                                        const std::string& body, bool bank_groups = true) {
  const std::string text = fmt::format(R"(@T.prim_func
def f(X: T.Tensor(({0}, {1}), "{2}")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub(({0}, {1}), "{2}")
            y = T.alloc_ub(({0}, {1}), "{2}")
            z = T.alloc_ub(({0}, {1}), "{2}")
            r = T.alloc_ub(({0},), "{2}")
            c = T.alloc_ub(({1},), "{2}")
            if vid == 0:
                T.copy(X, x)
                T.barrier_all()
{3})",
                                       rows, cols, dtype, body);
  Device dev;
  const DType dt = dtype == "float16" ? f16 : f32;
  Tensor X = from_vector(dev, {rows, cols}, dt, std::vector<double>(rows * cols, 0.5));
  npu::Profile prof;
  // Timing only: y, z, r and c are never copied out, so nothing stale reaches GM.
  CompileOptions opt;
  opt.dev.bank_groups = bank_groups;
  compile(parse(text), dev.target(), opt).launch(dev, {X}, {.threads = 1, .profile = &prof});
  std::map<std::string, double> d;
  for (const auto& i : prof.instrs) d[i.name] = i.end - i.start;
  return d;
}

const std::string kIndent = "                ";
std::string line(const std::string& s) {
  return kIndent + s + "\n" + kIndent + "T.barrier_all()\n";
}

// exp: 2.00 cycles a fp32 repeat + 31 (pto-isa's 910B3 vexp, 1-128 repeats: 287 at 128); a fp16
// repeat holds twice the elements and takes twice as long, so the same [64, 128] costs the same.
TEST(VectorRates, ExpIsThirtyTwoElementsACycle) {
  EXPECT_DOUBLE_EQ(cycles_of(64, 128, "float32", line("T.tile.exp(y, x)"))["tile.exp"], 287);
  EXPECT_DOUBLE_EQ(cycles_of(64, 128, "float16", line("T.tile.exp(y, x)"))["tile.exp"], 287);
  EXPECT_DOUBLE_EQ(cycles_of(64, 128, "float32", line("T.tile.ln(y, x)"))["tile.ln"], 287);
  EXPECT_DOUBLE_EQ(cycles_of(64, 128, "float32", line("T.tile.sqrt(y, x)"))["tile.sqrt"], 287);
  // Tails: at least one repeat; a partial repeat is a whole one.
  for (int64_t n : {1, 7, 33, 1000, 4097}) {
    const double reps = std::max<int64_t>(1, (n * 4 + 255) / 256);
    EXPECT_DOUBLE_EQ(cycles_of(1, n, "float32", line("T.tile.exp(y, x)"))["tile.exp"],
                     31 + 2 * reps)
        << n;
  }
}

// The simple ops: one repeat a cycle + 24 (asc-devkit's add example on A2, "128 half data per
// cycle"; pto-isa's 910B3 single-source vmuls / vmaxs / vrsqrt, 1.00-1.07 a repeat); two sources
// in one bank group take two beats (pto-isa's vadd with sources 16 KB apart: 2.11 a repeat).
// rsqrt and reciprocal are single instructions at that rate.
TEST(VectorRates, SimpleOpsTakeARepeatACycle) {
  for (int64_t n : {1, 7, 33, 1000, 4097}) {
    const double reps = std::max<int64_t>(1, (n * 4 + 255) / 256);
    auto d = cycles_of(1, n, "float32",
                       line("T.tile.add(y, x, x)") + line("T.tile.mul(z, x, 2.0)") +
                           line("T.tile.rsqrt(y, x)") + line("T.tile.reciprocal(z, x)"));
    for (const char* op : {"tile.add", "tile.mul", "tile.rsqrt", "tile.reciprocal"})
      EXPECT_DOUBLE_EQ(d[op], 24 + reps) << op << " " << n;
  }
  // [64, 128] fp32: the default layout puts x, y and z 32 KB apart, the same bank groups: y + x
  // conflicts.
  const std::string body = line("T.tile.add(z, y, x)") + line("T.tile.div(z, y, x)");
  auto d = cycles_of(64, 128, "float32", body, /*bank_groups=*/false);
  EXPECT_DOUBLE_EQ(d["tile.add"], 24 + 2 * 128);
  EXPECT_DOUBLE_EQ(d["tile.div"], 31 + 2 * 2 * 128);  // pto-isa's 910B3 vdiv: 4.03 x repeat + 31
  // The planner's bank-group placement moves y to the other group: one beat a repeat.
  d = cycles_of(64, 128, "float32", body);
  EXPECT_DOUBLE_EQ(d["tile.add"], 24 + 128);
  EXPECT_DOUBLE_EQ(d["tile.div"], 31 + 2 * 128);
}

// Functions AscendC builds of several instructions keep the former figure, 8 cycles a repeat
// (no measurement): sigmoid of [64, 128] fp32.
TEST(VectorRates, CompositeFunctionsKeepTheirFormerCost) {
  auto d = cycles_of(64, 128, "float32", line("T.tile.sigmoid(y, x)") + line("T.tile.tanh(z, x)"));
  EXPECT_DOUBLE_EQ(d["tile.sigmoid"], 31 + 8 * 128);
  EXPECT_DOUBLE_EQ(d["tile.tanh"], 31 + 8 * 128);
  EXPECT_EQ(*find_op("tile.silu")->cost, CostClass::VecComposite);  // "vec_composite"
}

// A row reduce: 7 cycles a row (vcmax / vcadd, one whole repeat each) after the row's other
// repeats are folded at the simple rate, + 46. [64, 128] fp32 is pto-isa's fitted TROWMAX
// (0.0625 x 64 x 128 + 48 = 560); rows of one repeat or less cost 7 each (its fits: 7.0 a row for
// 8-64 fp32 columns). Over the first dimension only the fold is left.
TEST(VectorRates, ARowReduceIsAWholeRepeatReducePerRow) {
  auto d = cycles_of(64, 128, "float32", line("T.reduce_max(x, r, dim=-1)"));
  EXPECT_DOUBLE_EQ(d["reduce_max"], 46 + 7 * 64 + 64);
  d = cycles_of(64, 64, "float32", line("T.reduce_sum(x, r, dim=-1)"));
  EXPECT_DOUBLE_EQ(d["reduce_sum"], 46 + 7 * 64);
  d = cycles_of(64, 128, "float16", line("T.reduce_max(x, r, dim=-1)"));
  EXPECT_DOUBLE_EQ(d["reduce_max"], 46 + 7 * 64);
  d = cycles_of(64, 128, "float32", line("T.reduce_max(x, c, dim=0)"));
  EXPECT_DOUBLE_EQ(d["reduce_max"], 46 + 128);
  // Tails: one row of n columns is one whole-repeat reduce and n's other repeats.
  for (int64_t n : {1, 7, 33, 1000, 4097}) {
    const int64_t reps = std::max<int64_t>(1, (n * 4 + 255) / 256);
    d = cycles_of(1, n, "float32", line("T.reduce_sum(x, r, dim=-1)"));
    EXPECT_DOUBLE_EQ(d["reduce_sum"], 46 + 7 + (reps - 1)) << n;
  }
  // Rows shorter than a repeat still take a whole reduce each: [64, 8] fp32 is 8 repeats.
  d = cycles_of(64, 8, "float32", line("T.reduce_max(x, r, dim=-1)"));
  EXPECT_DOUBLE_EQ(d["reduce_max"], 46 + 7 * 64);
}

}  // namespace
}  // namespace tl
