// vectorize_parallel's numeric contract on chosen loops: kernels whose mapping needs care (compact
// to aligned stores, short max/min compared in granule-sized copies, symbolic extents, three
// dimensions, loop variables as values, int32 orderings at the extremes) run vectorised and with
// their loops serial on the virtual NPU, and the tensors must end bit-identical. These stay in
// C++: they run kernels on the virtual NPU with data and compare the results. The printed
// mappings of the short max and of loop variables as values are checked in
// tests/pass/vectorize_parallel_mappings.tl.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "pass/pass_test_util.h"
#include "pass/vectorize_parallel_util.h"
#include "tl/arith.h"
#include "tl/npu/npu.h"
#include "tl/op.h"
#include "tl/runtime.h"
#include "tl/verifier.h"

namespace tl {
namespace {

using namespace vptest;

/// Runs `text` (a kernel with T.Parallel loops) vectorised and with the loops serial on the
/// virtual NPU, with the same random float inputs for every tensor parameter and `scalars`
/// for the scalar ones; expects the tensors to end bit-identical.
void expect_same_as_serial(const std::string& text, std::vector<Arg> scalars = {}) {
  PrimFunc par = parse(text);
  std::string ser_text = text;
  for (size_t at; (at = ser_text.find("T.Parallel(")) != std::string::npos;)
    ser_text.replace(at, 10, "T.serial");
  CompiledKernel kv = compile(vectorize_parallel(par, default_target())),
                 ks = compile(parse(ser_text));
  Device dev(default_target());
  std::mt19937_64 rng(11);
  std::vector<Arg> av = scalars, as = scalars;
  std::vector<Tensor> tv, ts;
  for (const Param& p : par->params) {
    if (!p.is_tensor()) continue;
    std::vector<int64_t> shape;
    for (const auto& e : p.tensor->shape) shape.push_back(*as_const_int(e));
    int64_t n = 1;
    for (int64_t x : shape) n *= x;
    Tensor v = from_vector(dev, shape, p.tensor->dtype, fuzz_values(rng, n, p.tensor->dtype)),
           s = Tensor::empty(dev, shape, p.tensor->dtype);
    std::memcpy(s.data(), v.data(), static_cast<size_t>(v.nbytes()));
    tv.push_back(v);
    ts.push_back(s);
  }
  av.insert(av.end(), tv.begin(), tv.end());
  as.insert(as.end(), ts.begin(), ts.end());
  kv.launch(dev, av, {.threads = 1});
  ks.launch(dev, as, {.threads = 1});
  for (size_t i = 0; i < tv.size(); ++i) {
    std::string first;
    EXPECT_EQ(count_mismatches(ts[i], tv[i], &first), 0) << "tensor " << i << ": " << first;
  }
}

TEST(VectorizeParallel, CompactToAlignedStoreRunsLikeTheScalarLoop) {
  // DEVMODE trap (TileLang-Ascend issue 1194): a compact (8, 16) tile stored into rows of a
  // (32, 64) tile: each destination row keeps its 128-byte pitch, nothing is stored flat.
  expect_same_as_serial(R"(@T.prim_func
def f(GS: T.Tensor((8, 16), "float16"), GB: T.Tensor((32, 64), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            small = T.alloc_ub((8, 16), "float16")
            big = T.alloc_ub((32, 64), "float16")
            if vid == 0:
                T.copy(GS, small)
                T.copy(GB, big)
                T.barrier_all()
                for i in T.Parallel(8):
                    for j in T.Parallel(16):
                        big[i + 8, j + 16] = small[i, j] * T.float16(2.0) + big[i + 8, j + 16]
                T.barrier_all()
                T.copy(big, GB)
)");
}

TEST(VectorizeParallel, ShortMaxAndMinRunLikeTheScalarLoopNaNsIncluded) {
  expect_same_as_serial(R"(@T.prim_func
def f(GA: T.Tensor((32,), "float32"), GB: T.Tensor((32,), "float32"), GC: T.Tensor((32,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((32,), "float32")
            b = T.alloc_ub((32,), "float32")
            c = T.alloc_ub((32,), "float32")
            if vid == 0:
                T.copy(GA, a)
                T.copy(GB, b)
                T.barrier_all()
                for i in T.Parallel(32):
                    c[i] = T.max(a[i], b[i])
                for i in T.Parallel(32):
                    a[i] = T.min(c[i], T.float32(0.5))
                T.barrier_all()
                T.copy(a, GA)
                T.copy(c, GC)
)");
}

TEST(VectorizeParallel, SymbolicExtentAndThreeDimensionsRunLikeTheScalarLoop) {
  // n rows chosen at launch; a 3-D loop over a sub-block with row and column broadcasts.
  expect_same_as_serial(R"(@T.prim_func
def f(n: T.int32, GA: T.Tensor((16, 32), "float32"), GC: T.Tensor((16, 32), "float32"), GX: T.Tensor((4, 8, 32), "bfloat16"), GR: T.Tensor((4, 8), "float32"), GQ: T.Tensor((8, 32), "bfloat16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 32), "float32")
            c = T.alloc_ub((16, 32), "float32")
            x = T.alloc_ub((4, 8, 32), "bfloat16")
            r = T.alloc_ub((4, 8), "float32")
            q = T.alloc_ub((8, 32), "bfloat16")
            if vid == 0:
                T.copy(GA, a)
                T.copy(GC, c)
                T.copy(GX, x)
                T.copy(GR, r)
                T.copy(GQ, q)
                T.barrier_all()
                for i in T.Parallel(n):
                    for j in T.Parallel(32):
                        c[i, j] = c[i, j] + a[i, j] * 0.5
                for i in T.Parallel(2):
                    for j in T.Parallel(8):
                        for k in T.Parallel(32):
                            x[i + 1, j, k] = T.cast(T.cast(x[i + 1, j, k], "float32") - r[i + 1, j], "bfloat16") * q[j, k]
                T.barrier_all()
                T.copy(c, GC)
                T.copy(x, GX)
)",
                        {Arg(int64_t{11})});
}

TEST(VectorizeParallel, LoopVariablesAsValuesMaskKeysAndCausalPositions) {
  // A key mask (the innermost variable against a launch-time length, as attention masks keys
  // past S) and a causal mask (both variables), run against the serial loop. The int32
  // orderings take the exact compare sequence (A2 compares int32 for equality only).
  expect_same_as_serial(R"(@T.prim_func
def f(n: T.int32, d: T.int32, GA: T.Tensor((16, 64), "float32"), GC: T.Tensor((16, 64), "float32"), GB: T.Tensor((64,), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32")
            c = T.alloc_ub((16, 64), "float32")
            b = T.alloc_ub((64,), "float16")
            if vid == 0:
                T.copy(GA, a)
                T.copy(GC, c)
                T.copy(GB, b)
                T.barrier_all()
                for i in T.Parallel(16):
                    for j in T.Parallel(64):
                        a[i, j] = T.if_then_else(d * 64 + j < n, a[i, j] * 0.5, T.float32(float("-inf")))
                for i in T.Parallel(16):
                    for j in T.Parallel(64):
                        c[i, j] = T.if_then_else(i * 4 + d >= j, c[i, j], 0.0)
                for j in T.Parallel(64):
                    b[j] = T.if_then_else(j != n, T.cast(j, "float16"), b[j])
                T.barrier_all()
                T.copy(a, GA)
                T.copy(c, GC)
                T.copy(b, GB)
)",
                        {Arg(int64_t{37}), Arg(int64_t{0})});
}

TEST(VectorizeParallel, Int32OrderingsAreExactAtTheExtremes) {
  // Pairs that round to one float32 (2^31 - 128 and its neighbours), pairs whose difference
  // wraps int32 (INT32_MIN against INT32_MAX), equal pairs: each ordering of each pair equals
  // the integer comparison.
  const std::vector<double> xs = {2147483520.0,
                                  2147483647.0,
                                  -2147483648.0,
                                  2147483647.0,
                                  5,
                                  -5,
                                  16777217,
                                  0,
                                  2147483521.0,
                                  -2147483647.0,
                                  7,
                                  7,
                                  2147483584.0,
                                  2147483583.0,
                                  1,
                                  -1};
  std::vector<double> ys = {2147483521.0,
                            2147483520.0,
                            2147483647.0,
                            -2147483648.0,
                            5,
                            5,
                            16777216,
                            -0.0,
                            2147483520.0,
                            -2147483648.0,
                            7,
                            8,
                            2147483583.0,
                            2147483584.0,
                            1,
                            1};
  std::vector<double> a(64 * 4), b(64 * 4);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = xs[i % xs.size()];
    b[i] = ys[(i + i / xs.size()) % ys.size()];
  }
  Device dev(default_target());
  PrimFunc f = vectorize_parallel(parse(R"(@T.prim_func
def f(GA: T.Tensor((4, 64), "int32"), GB: T.Tensor((4, 64), "int32"), GO: T.Tensor((4, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((4, 64), "int32")
            b = T.alloc_ub((4, 64), "int32")
            o = T.alloc_ub((4, 64), "float32")
            if vid == 0:
                T.copy(GA, a)
                T.copy(GB, b)
                T.barrier_all()
                for i in T.Parallel(4):
                    for j in T.Parallel(64):
                        o[i, j] = T.if_then_else(a[i, j] < b[i, j], 1.0, 0.0) + T.if_then_else(a[i, j] <= b[i, j], 2.0, 0.0) + T.if_then_else(a[i, j] > b[i, j], 4.0, 0.0) + T.if_then_else(a[i, j] >= b[i, j], 8.0, 0.0) + T.if_then_else(a[i, j] != b[i, j], 16.0, 0.0)
                T.barrier_all()
                T.copy(o, GO)
)"),
                                  default_target());
  Tensor ta = from_vector(dev, {4, 64}, i32, a), tb = from_vector(dev, {4, 64}, i32, b),
         to = Tensor::empty(dev, {4, 64}, f32);
  compile(f).launch(dev, {ta, tb, to}, {.threads = 1});
  std::vector<double> got = to.to_vector();
  for (size_t i = 0; i < a.size(); ++i) {
    auto x = static_cast<int64_t>(a[i]), y = static_cast<int64_t>(b[i]);
    double want = (x < y) * 1 + (x <= y) * 2 + (x > y) * 4 + (x >= y) * 8 + (x != y) * 16;
    EXPECT_EQ(got[i], want) << x << " vs " << y;
  }
}

}  // namespace
}  // namespace tl
