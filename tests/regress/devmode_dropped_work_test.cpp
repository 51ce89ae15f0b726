// Regressions of issue 27's developer-mode findings: work the cube/vector split dropped without a
// word, and a scalar read of a tile its syncs did not order (docs/developer_mode.md, "Scalar work
// and GM element stores"). Each kernel runs three ways on the virtual NPU (fast, under the hazard
// checker, timed in simulated-time order) and is checked against a reference computed here; the
// sizes 1, 7, 33 and 1000 cover rows shorter than, equal to and longer than a 32-byte block and
// both sides of the scalar-or-staged decision for GM element loops. Each test's comment gives the
// wrong figure the code before the fix produced.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/parser.h"
#include "tl/printer.h"

namespace tl {
namespace {

constexpr int kSizes[] = {1, 7, 33, 1000};

using Make = std::function<std::vector<Tensor>(Device&)>;
using Values = std::vector<std::vector<double>>;  // every tensor argument's elements

/// Compiles `text` and launches it fast, under the hazard checker and timed, each on fresh
/// tensors from `make`; returns each launch's tensors (a hazard or a time-order effect fails).
/// `prints` receives each launch's printf output.
std::vector<Values> run3(const std::string& text, const Make& make,
                         std::vector<std::string>* prints = nullptr) {
  CompiledKernel k = compile(parse(text, "k.py"), default_target(), {.cache = false});
  std::vector<Values> out;
  for (int mode = 0; mode < 3; ++mode) {
    Device dev;
    std::vector<Tensor> ts = make(dev);
    std::vector<Arg> args(ts.begin(), ts.end());
    npu::Profile p;
    std::ostringstream printed;
    LaunchOptions o;
    o.out = &printed;
    o.check_hazards = mode == 1;
    if (mode == 2) o.profile = &p;
    k.launch(dev, args, o);
    EXPECT_TRUE(p.time_order_effects.empty()) << p.time_order_effects[0];
    Values v;
    for (const Tensor& t : ts) v.push_back(t.to_vector());
    out.push_back(std::move(v));
    if (prints) prints->push_back(printed.str());
  }
  return out;
}

/// The largest |got - want| over one tensor.
double max_err(const std::vector<double>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double e = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i)
    e = std::max(e, std::abs(got[i] - want[i]));
  return e;
}

std::vector<double> iota(int n, double start = 0.5) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + i;
  return v;
}

// ---- GM element stores --------------------------------------------------------------------------

// `X[i] = X[i] + 1` in T.Parallel, in T.serial and at the top level. Before the fix the lowered
// kernel was `with T.Kernel(1) as (cid, vid): pass`: X came back unchanged, every element 1.0
// off (the top-level form: element 0 off by 1.0).
TEST(DevmodeDroppedWork, GmElementStoresInParallelSerialAndTopLevelAreKept) {
  for (const char* loop : {"T.Parallel", "T.serial", "top"})
    for (int n : kSizes) {
      const bool top = std::string(loop) == "top";
      std::string text = top ? fmt::format(R"(@T.prim_func
def f(X: T.Tensor(({},), "float32")):
    with T.Kernel(1, threads=1) as cid:
        X[{}] = X[{}] + 1.0
)",
                                           n, n - 1, n - 1)
                             : fmt::format(R"(@T.prim_func
def f(X: T.Tensor(({},), "float32")):
    with T.Kernel(1, threads=1) as cid:
        for i in {}({}):
            X[i] = X[i] + 1.0
)",
                                           n, loop, n);
      std::vector<double> want = iota(n);
      for (int i = top ? n - 1 : 0; i < n; ++i) want[static_cast<size_t>(i)] += 1.0;
      auto make = [&](Device& d) { return std::vector<Tensor>{from_vector(d, {n}, f32, iota(n))}; };
      for (const Values& v : run3(text, make))
        EXPECT_EQ(max_err(v[0], want), 0.0) << loop << " n = " << n;
    }
}

// `Y[i] = y[i] * 0.5 + 1` from a tile: before the fix Y kept its zeros (off by up to 4.25 at n = 7,
// 500.75 at n = 1000).
TEST(DevmodeDroppedWork, GmElementStoresFromATileAreKept) {
  for (const char* loop : {"T.Parallel", "T.serial"})
    for (int n : kSizes) {
      std::string text = fmt::format(R"(@T.prim_func
def f(X: T.Tensor(({},), "float32"), Y: T.Tensor(({},), "float32")):
    with T.Kernel(1, threads=1) as cid:
        y = T.alloc_shared(({},), "float32")
        T.copy(X, y)
        for i in {}({}):
            Y[i] = y[i] * 0.5 + 1.0
)",
                                     n, n, n, loop, n);
      std::vector<double> want;
      for (double x : iota(n))
        want.push_back(static_cast<double>(static_cast<float>(x * 0.5 + 1.0)));
      for (const Values& v : run3(text, [&](Device& d) {
             return std::vector<Tensor>{from_vector(d, {n}, f32, iota(n)), full(d, {n}, f32, 0.0)};
           }))
        EXPECT_EQ(max_err(v[1], want), 0.0) << loop << " n = " << n;
    }
}

// ---- scalar work
// ---------------------------------------------------------------------------------

// `if cid == 1: bias = 100.0` on a T.alloc_var, read by the vector work: before the fix the
// branch was dropped, and block 1's rows came out 100.0 too small.
TEST(DevmodeDroppedWork, AnIfHoldingOnlyAScalarStoreIsKept) {
  const std::string text = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((16, 64), "float32")):
    with T.Kernel(2, threads=1) as cid:
        x = T.alloc_shared((8, 64), "float32")
        bias = T.alloc_var("float32")
        bias[0] = 0.0
        if cid == 1:
            bias[0] = 100.0
        T.copy(X[cid * 8:cid * 8 + 8, 0:64], x)
        for i in T.Parallel(8):
            for j in T.Parallel(64):
                x[i, j] = x[i, j] + bias[0]
        T.copy(x, Y[cid * 8:cid * 8 + 8, 0:64])
)";
  std::vector<double> x = iota(16 * 64), want = x;
  for (size_t i = 8 * 64; i < want.size(); ++i) want[i] += 100.0;
  for (const Values& v : run3(text, [&](Device& d) {
         return std::vector<Tensor>{from_vector(d, {16, 64}, f32, x), full(d, {16, 64}, f32, 0.0)};
       }))
    EXPECT_EQ(max_err(v[1], want), 0.0);
}

// A scalar row-sum loop over a tile, its sum subtracted by the vector unit: before the fix the
// loop was dropped and s stayed 0 (every output off by the row sum, 2048.0 here).
TEST(DevmodeDroppedWork, AScalarLoopOverATileIsKept) {
  const std::string text = R"(@T.prim_func
def f(X: T.Tensor((8, 64), "float32"), Y: T.Tensor((8, 64), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((8, 64), "float32")
        s = T.alloc_var("float32")
        T.copy(X, x)
        s[0] = 0.0
        for j in T.serial(64):
            s[0] = s[0] + x[0, j]
        for i in T.Parallel(8):
            for j in T.Parallel(64):
                x[i, j] = x[i, j] - s[0]
        T.copy(x, Y)
)";
  std::vector<double> x = iota(8 * 64), want = x;
  double s = 0;
  for (int j = 0; j < 64; ++j) s += x[static_cast<size_t>(j)];
  for (double& w : want) w -= s;
  for (const Values& v : run3(text, [&](Device& d) {
         return std::vector<Tensor>{from_vector(d, {8, 64}, f32, x), full(d, {8, 64}, f32, 0.0)};
       }))
    EXPECT_EQ(max_err(v[1], want), 0.0);
}

// A counter in a GEMM's K loop, read on the vector side: the K loop is the cube's, and the
// vector side's copy of it was dropped, so n stayed 0 there (every output 2.0 too small). The
// vector side now runs the loop with only the counter in it.
TEST(DevmodeDroppedWork, ACounterInTheCubesKLoopReadOnTheVectorSideIsCounted) {
  const std::string text = R"(@T.prim_func
def f(A: T.Tensor((32, 64), "float16"), B: T.Tensor((64, 32), "float16"), C: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        b = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        d = T.alloc_shared((32, 32), "float32")
        n = T.alloc_var("int32")
        n[0] = 0
        T.tile.fill(c, 0.0)
        for k in T.serial(2):
            T.copy(A[0:32, k * 32:k * 32 + 32], a)
            T.copy(B[k * 32:k * 32 + 32, 0:32], b)
            T.gemm(a, b, c)
            n[0] = n[0] + 1
        for i in T.Parallel(32):
            for j in T.Parallel(32):
                d[i, j] = c[i, j] + T.cast(n[0], "float32")
        T.copy(d, C)
)";
  // A = 1 and B = 1/64: every product sums to exactly 1.
  std::vector<double> want(32 * 32, 1.0 + 2.0);
  for (const Values& v : run3(text, [&](Device& d) {
         return std::vector<Tensor>{full(d, {32, 64}, f16, 1.0), full(d, {64, 32}, f16, 1.0 / 64),
                                    full(d, {32, 32}, f32, 0.0)};
       }))
    EXPECT_EQ(max_err(v[2], want), 0.0);
}

// Every scalar statement kind in one mixed kernel: variables and their declarations, a let
// inside a loop of scalar work, a counter in the cube's loop, a branch on a tile element holding
// a store into a tile, a GM element store and a print (docs/developer_mode.md, "Scalar work and
// GM element stores"). Before the fix the vector side lost the counter loop and the row-sum
// loop (n = 0 and s = 0 there), and the top-level store to F ran on both cores, the cube storing
// its n = 2 and AIV 0 its n = 0: the hazard checker reported the two stores to F[0] unordered
// (a WAW between the AIC and AIV 0).
TEST(DevmodeDroppedWork, EveryScalarStatementKindRunsWhereItIsNeeded) {
  const std::string text = R"(@T.prim_func
def f(A: T.Tensor((32, 64), "float16"), C: T.Tensor((32, 32), "float32"), X: T.Tensor((16, 64), "float32"), F: T.Tensor((4,), "int32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        x = T.alloc_shared((16, 64), "float32")
        n = T.alloc_var("int32")
        s = T.alloc_var("float32")
        n[0] = 0
        for k in T.serial(2):
            T.copy(A[0:32, k * 32:k * 32 + 32], a)
            T.gemm(a, a, c, k == 0)
            n[0] = n[0] + 1
        T.copy(c, C)
        T.copy(X, x)
        s[0] = 0.0
        for j in T.serial(64):
            v = x[0, j] * 0.5
            s[0] = s[0] + v
        if x[0, 0] > s[0]:
            x[0, 1] = T.cast(n[0], "float32")
        F[cid] = n[0]
        T.printf(n[0], fmt="n %d")
        T.copy(x, X)
)";
  for (double first : {4000.0, -4000.0}) {
    // A = 1/8: each 32 x 32 product entry is 32 / 64 = 0.5, two of them 1.0.
    std::vector<double> x = iota(16 * 64), want_x;
    x[0] = first;
    double s = 0;
    for (int j = 0; j < 64; ++j) s += x[static_cast<size_t>(j)] * 0.5;
    want_x = x;
    if (first > s) want_x[1] = 2.0;
    std::vector<std::string> prints;
    for (const Values& v : run3(
             text,
             [&](Device& d) {
               return std::vector<Tensor>{full(d, {32, 64}, f16, 0.125),
                                          full(d, {32, 32}, f32, 0.0),
                                          from_vector(d, {16, 64}, f32, x), full(d, {4}, i32, 0.0)};
             },
             &prints)) {
      EXPECT_EQ(max_err(v[1], std::vector<double>(32 * 32, 1.0)), 0.0) << first;
      EXPECT_EQ(max_err(v[2], want_x), 0.0) << first;
      EXPECT_EQ(max_err(v[3], {2, 0, 0, 0}), 0.0) << first;
    }
    for (const std::string& p : prints) EXPECT_EQ(p, "[block 0 AIV0] n 2\n") << first;
  }
}

// ---- a scalar read of a tile --------------------------------------------------------------------

// `if x[0, 0] > 0:` after the copy into x: insert_syncs ordered the copy before the condition
// with MTE2 -> S, but the condition's load was no instruction of its own, so the hazard checker
// found the branch's V work unordered after the copy (3 unordered pairs) and timed mode failed
// ("took a different path in simulated-time order than in program order"). The condition is
// now read into a let first.
TEST(DevmodeDroppedWork, AConditionOnATileElementIsOrderedAfterTheCopy) {
  const std::string text = R"(@T.prim_func
def f(X: T.Tensor((8, 64), "float32"), Y: T.Tensor((8, 64), "float32")):
    with T.Kernel(1, threads=1) as cid:
        x = T.alloc_shared((8, 64), "float32")
        T.copy(X, x)
        if x[0, 0] > 0:
            for i in T.Parallel(8):
                for j in T.Parallel(64):
                    x[i, j] = x[i, j] * 2.0
        T.copy(x, Y)
)";
  for (double sign : {1.0, -1.0}) {
    std::vector<double> x = iota(8 * 64), want;
    for (double& e : x) e *= sign;
    for (double e : x) want.push_back(sign > 0 ? 2 * e : e);
    for (const Values& v : run3(text, [&](Device& d) {
           return std::vector<Tensor>{from_vector(d, {8, 64}, f32, x), full(d, {8, 64}, f32, 0.0)};
         }))
      EXPECT_EQ(max_err(v[1], want), 0.0) << sign;
  }
  std::string ir = print(compile(parse(text, "k.py"), default_target(), {.cache = false}).func(),
                         {.locations = false});
  EXPECT_NE(ir.find("cond = x[0, 0] > 0"), std::string::npos) << ir;
}

// ---- the data cache
// ------------------------------------------------------------------------------

// Scalar stores to X that DMA then reads, and a DMA write of Y that the scalar unit then loads:
// each needs a dcci (DataCacheCleanAndInvalid), or the hazard checker reports the stale cache
// line ("a scalar store to GM stays in the storing core's data cache until a dcci"; "a scalar
// load of GM that DMA or another core wrote reads this core's data cache"). Before the fix both
// loops were dropped (X unchanged, Z all zeros: off by up to 2 * 64.5 + 1 = 130.0); with the
// loops kept and no dcci the checker reported both.
TEST(DevmodeDroppedWork, ScalarGmAccessesGetTheirDataCacheMaintenance) {
  const std::string text = R"(@T.prim_func
def f(X: T.Tensor((64,), "float32"), Y: T.Tensor((64,), "float32"), Z: T.Tensor((64,), "float32")):
    with T.Kernel(1, threads=1) as cid:
        y = T.alloc_shared((64,), "float32")
        for i in T.serial(64):
            X[i] = X[i] + 1.0
        T.copy(X, y)
        for i in T.Parallel(64):
            y[i] = y[i] * 2.0
        T.copy(y, Y)
        for j in T.serial(64):
            Z[j] = Y[j] + 1.0
)";
  std::vector<double> x = iota(64), y, z;
  for (double e : x) {
    y.push_back((e + 1) * 2);
    z.push_back((e + 1) * 2 + 1);
  }
  for (const Values& v : run3(text, [&](Device& d) {
         return std::vector<Tensor>{from_vector(d, {64}, f32, x), full(d, {64}, f32, 0.0),
                                    full(d, {64}, f32, 0.0)};
       })) {
    EXPECT_EQ(max_err(v[1], y), 0.0);
    EXPECT_EQ(max_err(v[2], z), 0.0);
  }
}

// ---- two AIVs
// ------------------------------------------------------------------------------------

// A block's scalar GM store and debug print under threads = 2, whose tile work split_aiv
// splits by rows: both AIVs ran them, so a fast launch left C[0] = 2 (one increment per AIV; the
// hazard checker reported the two AIVs' unordered stores) and printed the line twice. They now
// run on AIV 0.
TEST(DevmodeDroppedWork, ABlocksGmStoreAndPrintRunOnceWithTwoAivs) {
  const std::string text = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((16, 64), "float32"), C: T.Tensor((8,), "int32")):
    with T.Kernel(1, threads=2) as cid:
        x = T.alloc_shared((16, 64), "float32")
        T.copy(X, x)
        for i in T.Parallel(16):
            for j in T.Parallel(64):
                x[i, j] = x[i, j] * 2.0
        T.copy(x, Y)
        C[0] = C[0] + 1
        T.printf(cid, fmt="block %d")
)";
  std::vector<std::string> prints;
  std::vector<double> x = iota(16 * 64), y;
  for (double e : x) y.push_back(2 * e);
  std::vector<double> c(8, 0.0);
  c[0] = 1;
  for (const Values& v : run3(
           text,
           [&](Device& d) {
             return std::vector<Tensor>{from_vector(d, {16, 64}, f32, x),
                                        full(d, {16, 64}, f32, 0.0), full(d, {8}, i32, 0.0)};
           },
           &prints)) {
    EXPECT_EQ(max_err(v[1], y), 0.0);
    EXPECT_EQ(max_err(v[2], c), 0.0);
  }
  for (const std::string& p : prints) EXPECT_EQ(p, "[block 0 AIV0] block 0\n");
}

// The AIVs taking alternate iterations of a loop of 3-row tiles (odd: no row split): a scalar
// store to the same element in every iteration was not checked (only tile ops' GM writes were),
// so both AIVs stored to C[0], unordered (the hazard checker: a WAW on C[0] between AIV 0 and
// AIV 1); and the print outside the loop ran on both. Such a store now keeps the loop on AIV 0; a
// store to C[t], its own element in each iteration, still splits it.
TEST(DevmodeDroppedWork, TheIterationSplitChecksScalarGmStoresAndPrintsOnce) {
  for (const char* index : {"0", "t"}) {
    const std::string text = fmt::format(R"(@T.prim_func
def f(X: T.Tensor((15, 64), "float32"), Y: T.Tensor((15, 64), "float32"), C: T.Tensor((8,), "int32")):
    with T.Kernel(1, threads=2) as cid:
        x = T.alloc_shared((3, 64), "float32")
        T.printf(cid, fmt="block %d")
        for t in T.serial(5):
            T.copy(X[t * 3:t * 3 + 3, 0:64], x)
            for i in T.Parallel(3):
                for j in T.Parallel(64):
                    x[i, j] = x[i, j] * 3.0
            T.copy(x, Y[t * 3:t * 3 + 3, 0:64])
            C[{}] = t + 1
)",
                                         index);
    std::vector<std::string> prints;
    std::vector<double> x = iota(15 * 64), y, c(8, 0.0);
    for (double e : x) y.push_back(3 * e);
    for (int t = 0; t < 5; ++t) c[std::string(index) == "0" ? 0 : static_cast<size_t>(t)] = t + 1;
    for (const Values& v : run3(
             text,
             [&](Device& d) {
               return std::vector<Tensor>{from_vector(d, {15, 64}, f32, x),
                                          full(d, {15, 64}, f32, 0.0), full(d, {8}, i32, 0.0)};
             },
             &prints)) {
      EXPECT_EQ(max_err(v[1], y), 0.0) << index;
      EXPECT_EQ(max_err(v[2], c), 0.0) << index;
    }
    for (const std::string& p : prints) EXPECT_EQ(p, "[block 0 AIV0] block 0\n") << index;
  }
}

}  // namespace
}  // namespace tl
