// Regressions of issue 27, "vectorised fp32 division flushes subnormal quotients to zero while
// the scalar loop keeps them": `(x / z) * z` in a T.Parallel loop gave 0 instead of x.
//
// What the chip does (asc-devkit, "2201到3510架构变更", 计算单元, and its Subnormal
// compatibility example): the 2201 vector unit (A2/A3) keeps subnormals in every op; the 3510
// one (950) flushes subnormal inputs and results of Exp, Ln, Sqrt, Rsqrt, Reciprocal and Div
// (their INTRINSIC algorithms; the Div page's table: 1 / -5.0e-39 is -inf, 1.9e-39 / 7.7e-39
// is NaN). No flush is documented for the scalar unit; the model computes IEEE there. So on A2
// the vector ops keep subnormals and vectorize_parallel's division is bit-identical to the
// scalar loop; on 950 the six ops flush, and vectorize_parallel rejects them in element loops
// (allow_inexact_math accepts the difference with a remark, scalar_fallback runs them serial).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "pass/pass_test_util.h"
#include "tl/npu/npu.h"
#include "tl/parser.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/runtime.h"

namespace tl {
namespace {

/// A one-AIV kernel over 64 elements of `dtype`: copies A and B into UB, runs `body` (lines
/// indented 16 spaces; a, b, c are the UB tiles), copies c to C.
std::string kernel(const std::string& body, const char* dtype = "float32") {
  return fmt::format(R"(@T.prim_func
def f(A: T.Tensor((64,), "{0}"), B: T.Tensor((64,), "{0}"), C: T.Tensor((64,), "{0}")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((64,), "{0}")
            b = T.alloc_ub((64,), "{0}")
            c = T.alloc_ub((64,), "{0}")
            if vid == 0:
                T.copy(A, a)
                T.copy(B, b)
                T.barrier_all()
{1}                T.barrier_all()
                T.copy(c, C)
)",
                     dtype, body);
}

/// Runs `f` on `target` with inputs a, b; returns C.
std::vector<double> run(const PrimFunc& f, const Target& target, const std::vector<double>& a,
                        const std::vector<double>& b, DType t = DType::Float32) {
  Device dev(target);
  Tensor A = from_vector(dev, {64}, t, a), B = from_vector(dev, {64}, t, b),
         C = Tensor::empty(dev, {64}, t);
  compile(f, target, {.cache = false}).launch(dev, {A, B, C}, {.threads = 1});
  return C.to_vector();
}

/// Bit patterns of the fp32 values (NaNs compare by bits too).
std::vector<uint32_t> bits(const std::vector<double>& v) {
  std::vector<uint32_t> r;
  for (double x : v) r.push_back(std::bit_cast<uint32_t>(static_cast<float>(x)));
  return r;
}

const Target& a2() {
  return get_target("A2");
}
const Target& chip950() {
  return get_target("950");
}

// The issue's reproduction: x tiny, z = 8, (x / z) * z. x / z is subnormal for every x below
// 2^-123. Before the fix the vectorised loop gave +-0 for all 64 elements (tile.div flushed
// the quotient; measured), the serial loop x itself up to the quotient's lost bits.
TEST(SubnormalDivision, VectorisedQuotientTimesDivisorIsXOnA2) {
  std::string par = kernel(R"(                for i in T.Parallel(64):
                    c[i] = (a[i] / b[i]) * b[i]
)");
  std::string ser = par;
  ser.replace(ser.find("T.Parallel"), 10, "T.serial");
  std::vector<double> x(64), z(64, 8.0);
  for (int i = 0; i < 64; ++i) x[i] = std::ldexp(1.0 + i / 64.0, -127 - i % 20) * (i % 3 ? 1 : -1);
  auto vec = run(vectorize_parallel(parse(par), a2()), a2(), x, z);
  auto scal = run(parse(ser), a2(), x, z);
  EXPECT_EQ(bits(vec), bits(scal));
  int zeros = 0;
  for (int i = 0; i < 64; ++i) {
    zeros += vec[i] == 0;
    // (x / 8) * 8 loses the bits the subnormal quotient could not hold, nothing more.
    EXPECT_NEAR(vec[i], x[i], std::ldexp(8.0, -149)) << i;
  }
  EXPECT_EQ(zeros, 0);
}

TEST(SubnormalDivision, A2VectorOpsKeepSubnormalInputsAndResults) {
  // Each op against the IEEE fp32 result: 1e-30 / 1e10 = 1e-40, exp(-90) = 8.2e-40,
  // sqrt and ln of a subnormal, 1e-20 * 1e-20, and a subnormal difference.
  const float sub = 1e-40f;  // subnormal
  struct Case {
    const char* body;
    std::vector<double> a, b;
    float want;
  };
  const std::vector<Case> cases = {
      {"T.tile.div(c, a, b)", {1e-30}, {1e10}, 1e-30f / 1e10f},
      {"T.tile.div(c, a, 4.0)", {4e-39}, {1}, 4e-39f / 4.0f},
      {"T.tile.exp(c, a)", {-90}, {1}, std::exp(-90.0f)},
      {"T.tile.sqrt(c, a)", {sub}, {1}, std::sqrt(sub)},
      {"T.tile.ln(c, a)", {sub}, {1}, std::log(sub)},
      {"T.tile.mul(c, a, b)", {1e-20}, {1e-20}, 1e-20f * 1e-20f},
      {"T.tile.sub(c, a, b)", {1.5e-38}, {1.2e-38}, 1.5e-38f - 1.2e-38f},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.body);
    std::string text = kernel(fmt::format("                {}\n", k.body));
    std::vector<double> a(64, k.a[0]), b(64, k.b[0]);
    auto got = run(parse(text), a2(), a, b);
    EXPECT_EQ(std::bit_cast<uint32_t>(static_cast<float>(got[0])), std::bit_cast<uint32_t>(k.want))
        << got[0] << " want " << k.want;
    EXPECT_NE(got[0], 0.0);
  }
}

TEST(SubnormalDivision, RowExpandDivKeepsSubnormalQuotientsOnA2AndFlushesThemOn950) {
  std::string text = R"(@T.prim_func
def f(A: T.Tensor((2, 32), "float32"), B: T.Tensor((8,), "float32"), C: T.Tensor((2, 32), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((2, 32), "float32")
            b = T.alloc_ub((8,), "float32")
            c = T.alloc_ub((2, 32), "float32")
            if vid == 0:
                T.copy(A, a)
                T.copy(B, b)
                T.barrier_all()
                T.tile.row_expand_div(c, a, b[0:2])
                T.barrier_all()
                T.copy(c, C)
)";
  for (const Target* t : {&a2(), &chip950()}) {
    Device dev(*t);
    Tensor A = from_vector(dev, {2, 32}, f32, std::vector<double>(64, 1e-30));
    Tensor B = from_vector(dev, {8}, f32, std::vector<double>(8, 1e10)),
           C = Tensor::empty(dev, {2, 32}, f32);
    compile(parse(text), *t, {.cache = false}).launch(dev, {A, B, C}, {.threads = 1});
    EXPECT_EQ(C.to_vector()[0], t == &a2() ? static_cast<double>(1e-30f / 1e10f) : 0.0) << t->name;
  }
}

TEST(SubnormalDivision, The950FlushesTheSixOpsInputsAndResultsButNotAddMul) {
  const float neg_sub = std::bit_cast<float>(0x8036A794u), s1 = std::bit_cast<float>(0x0014440Bu),
              s2 = std::bit_cast<float>(0x0053E3CFu);
  auto one = [](const char* body, double a, double b = 1.0) {
    return run(parse(kernel(fmt::format("                {}\n", body))), chip950(),
               std::vector<double>(64, a), std::vector<double>(64, b))[0];
  };
  // The Div page's Subnormal table (950, INTRINSIC): 1 / -5.02e-39 = -inf, 1.86e-39 / 7.70e-39 =
  // NaN.
  EXPECT_EQ(one("T.tile.div(c, a, b)", 1.0, neg_sub), -INFINITY);
  EXPECT_TRUE(std::isnan(one("T.tile.div(c, a, b)", s1, s2)));
  EXPECT_EQ(one("T.tile.div(c, a, b)", 1e-30, 1e10), 0.0);  // a subnormal quotient
  EXPECT_EQ(one("T.tile.exp(c, a)", -90.0), 0.0);
  EXPECT_EQ(one("T.tile.sqrt(c, a)", 1e-40), 0.0);
  EXPECT_EQ(one("T.tile.ln(c, a)", 1e-40), -INFINITY);
  EXPECT_TRUE(std::isnan(one("T.tile.reciprocal(c, a)", 1e-40)));  // 1 / 0: undefined, NaN here
  // Not in the list: add, sub, mul keep subnormals.
  EXPECT_EQ(one("T.tile.mul(c, a, b)", 1e-20, 1e-20), static_cast<double>(1e-20f * 1e-20f));
  EXPECT_EQ(one("T.tile.add(c, a, b)", 1e-40, 0.0), static_cast<double>(1e-40f));
  // A half subnormal result of a half op is flushed too (subnormal in the op's dtype).
  auto h = run(parse(kernel("                T.tile.div(c, a, b)\n", "float16")), chip950(),
               std::vector<double>(64, 1e-4), std::vector<double>(64, 4.0), DType::Float16);
  EXPECT_EQ(h[0], 0.0);
  auto ha2 = run(parse(kernel("                T.tile.div(c, a, b)\n", "float16")), a2(),
                 std::vector<double>(64, 1e-4), std::vector<double>(64, 4.0), DType::Float16);
  EXPECT_NE(ha2[0], 0.0);
}

TEST(SubnormalDivision, VectorizeRejectsFlushingOpsOn950AndSaysWhy) {
  std::string par = kernel(R"(                for i in T.Parallel(64):  # @k.py:9
                    c[i] = (a[i] / b[i]) * b[i]
)");
  std::string msg = testing::error_of([&] { vectorize_parallel(parse(par, "k.py"), chip950()); });
  EXPECT_NE(
      msg.find("k.py:9: T.Parallel: cannot vectorise: unsupported operation: / on float32: "
               "tile.div on 950 "
               "flushes subnormal operands and results to zero, while the scalar loop keeps them "
               "(VectorizeOptions::allow_inexact_math accepts the difference)"),
      std::string::npos)
      << msg;
  std::string sq = kernel(R"(                for i in T.Parallel(64):  # @k.py:9
                    c[i] = T.sqrt(a[i])
)");
  msg = testing::error_of([&] { vectorize_parallel(parse(sq, "k.py"), chip950()); });
  EXPECT_NE(
      msg.find(
          "unsupported operation: T.sqrt on float32: tile.sqrt on 950 flushes subnormal operands"),
      std::string::npos)
      << msg;
  // allow_inexact_math: vectorised, with a remark naming the op.
  std::vector<std::string> remarks;
  VectorizeOptions o;
  o.allow_inexact_math = true;
  o.remark = [&](const SourceLoc& loc, const std::string& m) {
    remarks.push_back(loc.str() + ": " + m);
  };
  std::string ir =
      print(vectorize_parallel(parse(par, "k.py"), chip950(), o), {.locations = false});
  EXPECT_NE(ir.find("T.tile.div("), std::string::npos) << ir;
  ASSERT_EQ(remarks.size(), 1u);
  EXPECT_EQ(
      remarks[0],
      "k.py:9: / on float32 vectorised as tile.div, which flushes subnormals on 950 (the scalar "
      "loop keeps them)");
  // scalar_fallback: the loop stays serial, and computes what the scalar unit does.
  remarks.clear();
  VectorizeOptions fb;
  fb.scalar_fallback = true;
  fb.remark = o.remark;
  PrimFunc g = vectorize_parallel(parse(par, "k.py"), chip950(), fb);
  EXPECT_NE(print(g, {.locations = false}).find("for i in T.serial(64)"), std::string::npos);
  ASSERT_EQ(remarks.size(), 1u);
  std::vector<double> x(64, 1e-38), z(64, 8.0);
  EXPECT_NEAR(run(g, chip950(), x, z)[0], static_cast<double>(1e-38f), 1e-44);
  // On A2 nothing flushes: the same loop vectorises without a remark.
  remarks.clear();
  vectorize_parallel(parse(par, "k.py"), a2(), o);
  EXPECT_TRUE(remarks.empty());
}

TEST(SubnormalDivision, ArithmeticAndCastsProducingSubnormalsVectoriseBitIdenticallyOnA2) {
  // + - * / whose results are subnormal in float32, float16 and bfloat16, and the casts between
  // them: the vector code and the serial scalar loop agree bit for bit on inputs around the
  // smallest normals of each dtype.
  struct Case {
    const char* dtype;
    const char* expr;
    double ascale, bscale;   // inputs are +-scale * [0.25, 4)
    bool subnormal_results;  // most results are subnormal in the dtype
  };
  const std::vector<Case> cases = {
      {"float32", "a[i] / b[i]", 0x1p-120, 0x1p8, true},
      {"float32", "a[i] * b[i] * 0.0009765625", 0x1p-60, 0x1p-60, true},
      {"float32", "a[i] - b[i]", 0x1p-126, 0x1p-126, true},
      {"float32", "(a[i] / 16.0) * 16.0", 0x1p-124, 1, false},
      {"float16", "a[i] / b[i]", 0x1p-12, 0x1p4, true},
      {"float16", "a[i] * b[i]", 0x1p-8, 0x1p-8, true},
      {"float16", "a[i] - b[i]", 0x1p-14, 0x1p-14, true},
      {"bfloat16", "a[i] / b[i]", 0x1p-120, 0x1p8, true},
      {"bfloat16", "a[i] * b[i]", 0x1p-64, 0x1p-64, true},
      {"float32", "T.cast(T.cast(a[i], \"float16\"), \"float32\")", 0x1p-20, 1, false},
      {"float32", "T.cast(T.cast(a[i] / b[i], \"bfloat16\"), \"float32\")", 0x1p-120, 0x1p8, true},
  };
  std::mt19937_64 rng(27);
  std::uniform_real_distribution<double> u(0.25, 4.0);
  for (const auto& k : cases) {
    SCOPED_TRACE(fmt::format("{} on {}", k.expr, k.dtype));
    std::string par = kernel(fmt::format(R"(                for i in T.Parallel(64):
                    c[i] = {}
)",
                                         k.expr),
                             k.dtype);
    std::string ser = par;
    ser.replace(ser.find("T.Parallel"), 10, "T.serial");
    DType t = *parse_dtype(k.dtype);
    std::vector<double> a(64), b(64);
    for (int i = 0; i < 64; ++i) {
      a[i] = k.ascale * u(rng) * (i % 2 ? -1 : 1);
      b[i] = k.bscale * u(rng);
    }
    auto vec = run(vectorize_parallel(parse(par), a2()), a2(), a, b, t);
    auto scal = run(parse(ser), a2(), a, b, t);
    int subnormal = 0;
    for (int i = 0; i < 64; ++i) {
      EXPECT_EQ(std::bit_cast<uint64_t>(vec[i]), std::bit_cast<uint64_t>(scal[i]))
          << i << ": " << vec[i] << " vs " << scal[i];
      double smallest = t == DType::Float16 ? 0x1p-14 : 0x1p-126;
      subnormal += vec[i] != 0 && std::fabs(vec[i]) < smallest;
    }
    if (k.subnormal_results) {
      EXPECT_GT(subnormal, 8);  // the case reaches them
    }
  }
}

}  // namespace
}  // namespace tl
