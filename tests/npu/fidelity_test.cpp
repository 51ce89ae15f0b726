// The virtual NPU against the chip's documented behaviour, one test per rule that a kernel could
// otherwise pass here and fail (or compute differently) on an A2: numbered as the items of the
// "Virtual NPU fidelity" issue. Each test fails on the model before the rule was added.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "common/example_checks.h"
#include "npu/fidelity.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/npu/stale.h"
#include "tl/npu/timing.h"
#include "tl/parser.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/runtime.h"

namespace tl {
namespace {

using fidelity::launch_error;
using fidelity::x_to_y_kernel;

/// C = A x B for 16 x 16 fp16 tiles, fixpiped to GM as `out` (fp16 or bf16).
std::string gemm_to(const char* out) {
  return fmt::format(R"(@T.prim_func
def f(A: T.Tensor((16, 16), "float16"), B: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "{0}")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Cube"):
            a = T.alloc_L1((16, 16), "float16")
            b = T.alloc_L1((16, 16), "float16")
            c = T.alloc_L0C((16, 16), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.barrier_all()
            T.gemm_v0(a, b, c, True)
            T.barrier_all()
            T.copy(c, C)
)",
                     out);
}

// Item 9: the fixpipe's F322F16 / F322BF16 conversion saturates: past the largest finite value
// (infinities included) it writes +-MAX, and NaN becomes 0. It used to round to inf.
TEST(Fidelity, FixpipeToHalfAndBfloat16Saturates) {
  for (const char* out : {"float16", "bfloat16"}) {
    SCOPED_TRACE(out);
    Device dev;
    // Row 0: 16 x 100 x 100 = 160,000 (past fp16's 65,504); row 1: -160,000; row 2: inf x 1;
    // row 3: NaN; other rows: 1 x 1 x 16 = 16.
    std::vector<double> a(256, 1.0), b(256, 1.0);
    for (int k = 0; k < 16; ++k) {
      a[0 * 16 + k] = 100;
      a[1 * 16 + k] = -100;
      a[2 * 16 + k] = k == 0 ? INFINITY : 0.0;
      a[3 * 16 + k] = k == 0 ? NAN : 0.0;
    }
    for (int k = 0; k < 16; ++k) b[k * 16 + 0] = 100;  // column 0 of B: 100 (row 0 and 1: +-1.6e5)
    Tensor A = from_vector(dev, {16, 16}, f16, a), B = from_vector(dev, {16, 16}, f16, b);
    Tensor C = Tensor::empty(dev, {16, 16}, *parse_dtype(out));
    compile(parse(gemm_to(out))).launch(dev, {A, B, C});
    std::vector<double> c = C.to_vector();
    const double mx = std::string(out) == "float16" ? 65504.0 : 3.3895313892515355e38;
    if (std::string(out) == "float16") {
      EXPECT_EQ(c[0 * 16 + 0], mx);   // 160,000 -> MAX, not inf
      EXPECT_EQ(c[1 * 16 + 0], -mx);  // -160,000 -> -MAX
    }
    EXPECT_EQ(c[2 * 16 + 0], mx);   // inf -> MAX
    EXPECT_EQ(c[3 * 16 + 0], 0.0);  // NaN -> 0
    EXPECT_EQ(c[4 * 16 + 0], 1600.0);
    EXPECT_EQ(c[4 * 16 + 1], 16.0);
  }
}

// Item 9: integer Mmad accumulation saturates at the int32 range; it used to wrap.
TEST(Fidelity, IntegerMmadAccumulationSaturates) {
  // 127 x 127 x 32 = 516,128 per Mmad; 4,200 accumulations pass INT32_MAX (about 4,161).
  const char* text = R"(@T.prim_func
def f(A: T.Tensor((16, 32), "int8"), B: T.Tensor((32, 16), "int8"), C: T.Tensor((16, 16), "int32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Cube"):
            a = T.alloc_L1((16, 32), "int8")
            b = T.alloc_L1((32, 16), "int8")
            c = T.alloc_L0C((16, 16), "int32")
            T.copy(A, a)
            T.copy(B, b)
            T.barrier_all()
            for k in T.serial(4200):
                T.gemm_v0(a, b, c, k == 0)
            T.barrier_all()
            T.copy(c, C)
)";
  Device dev;
  Tensor A = from_vector(dev, {16, 32}, DType::Int8, std::vector<double>(16 * 32, 127.0));
  std::vector<double> b(32 * 16, 127.0);
  for (int k = 0; k < 32; ++k) b[k * 16 + 1] = -127.0;  // column 1: the negative side
  Tensor B = from_vector(dev, {32, 16}, DType::Int8, b);
  Tensor C = Tensor::empty(dev, {16, 16}, i32);
  compile(parse(text)).launch(dev, {A, B, C});
  std::vector<double> c = C.to_vector();
  EXPECT_EQ(c[0], 2147483647.0);
  EXPECT_EQ(c[1], -2147483648.0);
}

/// AIV0 writes Y and sets cross flag 0 in mode 1; AIV1 reads Y after waiting for it. With
/// `both` false AIV1 only waits (the pattern that hangs on the chip), with it each AIV sets and
/// waits.
std::string mode1_kernel(bool both) {
  return fmt::format(R"(@T.prim_func
def f(X: T.Tensor((8, 64), "float32"), Y: T.Tensor((8, 64), "float32"), Z: T.Tensor((8, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((8, 64), "float32")
            if vid == 0:
                T.copy(X, a)
                T.set_flag("MTE2", "MTE3", 0)
                T.wait_flag("MTE2", "MTE3", 0)
                T.copy(a, Y)
                T.set_cross_flag("MTE3", 0, mode=1)
                T.wait_cross_flag(0)
            else:{}
                T.wait_cross_flag(0)
                T.copy(Y, a)
                T.set_flag("MTE2", "MTE3", 0)
                T.wait_flag("MTE2", "MTE3", 0)
                T.copy(a, Z)
)",
                     both ? "\n                T.set_cross_flag(\"MTE3\", 0, mode=1)" : "");
}

// Item 1: cross-core mode 1 is a rendezvous of the block's two AIVs (CrossCoreSetFlag, modeId
// 1): each AIV's counter advances only when both have set. An AIV that waits without setting
// hangs on the chip; it used to pass here as a point-to-point signal.
TEST(Fidelity, CrossCoreMode1NeedsBothAivsToSet) {
  for (bool timed : {false, true}) {
    SCOPED_TRACE(timed ? "timed" : "fast");
    Device dev;
    Tensor X = from_vector(dev, {8, 64}, f32, std::vector<double>(8 * 64, 3.0));
    Tensor Y = Tensor::empty(dev, {8, 64}, f32), Z = Tensor::empty(dev, {8, 64}, f32);
    npu::Profile prof;
    LaunchOptions opt{.threads = 1, .check_hazards = true};
    if (timed) opt.profile = &prof;
    std::string err = launch_error(mode1_kernel(false), dev, {X, Y, Z}, opt);
    EXPECT_NE(err.find("deadlock"), std::string::npos) << err;
    compile(parse(mode1_kernel(true))).launch(dev, {X, Y, Z}, opt);  // hazard-free, no deadlock
    EXPECT_EQ(Z.to_vector(), X.to_vector());
  }
}

// Item 5: a GM -> L1 copy whose rows end inside a 32-byte block zero-fills the rest of that
// block and nothing more. A K tail of 20 fp16 columns in a 32-wide tile gets columns 20-31
// zeroed (the partial block is 16-31); a K tail of 40 in a 64-wide tile gets 40-47 zeroed and
// 48-63 keep what L1 held, which in a hazard-checked or timed launch is poison (NaN).
TEST(Fidelity, NdToNzCopyZeroFillsOnlyThePartialBlock) {
  auto kernel = [](int k, int kt) {
    return fmt::format(R"(@T.prim_func
def f(A: T.Tensor((16, {0}), "float16"), B: T.Tensor(({1}, 16), "float16"), C: T.Tensor((16, 16), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Cube"):
            a = T.alloc_L1((16, {1}), "float16")
            b = T.alloc_L1(({1}, 16), "float16")
            c = T.alloc_L0C((16, 16), "float32")
            T.copy(A, a[0:16, 0:{0}])
            T.copy(B, b)
            T.barrier_all()
            T.gemm_v0(a, b, c, True)
            T.barrier_all()
            T.copy(c, C)
)",
                       k, kt);
  };
  for (auto [k, kt] : {std::pair{20, 32}, std::pair{40, 64}}) {
    SCOPED_TRACE(fmt::format("K tail {} in a {}-wide tile", k, kt));
    Device dev;
    Tensor A = uniform(dev, {16, k}, f16, 1),
           B = from_vector(dev, {kt, 16}, f16, std::vector<double>(kt * 16, 1.0));
    Tensor C = Tensor::empty(dev, {16, 16}, f32);
    std::vector<npu::StaleFinding> stale;
    compile(parse(kernel(k, kt)))
        .launch(dev, {A, B, C}, {.threads = 1, .check_hazards = true, .stale_findings = &stale});
    std::vector<double> a = A.to_vector(), c = C.to_vector();
    double row0 = 0;
    for (int j = 0; j < k; ++j) row0 += a[j];
    if (kt == 32) {
      EXPECT_NEAR(c[0], row0, 1e-3);  // the zero-filled block contributes nothing
      EXPECT_TRUE(stale.empty()) << stale[0].str();
    } else {
      EXPECT_TRUE(std::isnan(c[0])) << c[0];  // columns 48-63 are stale: clear the tile
      // ... which the stale-data checker reports: every output element reads them.
      ASSERT_EQ(stale.size(), 1u);
      EXPECT_EQ(stale[0].buffer, "C");
      EXPECT_EQ(stale[0].invalid, 256);
    }
  }
}

/// Two Mmads accumulating K = 32 into one M x N L0C tile from L0A/L0B halves, with
/// `barrier` between them.
std::string two_mmads(int m, int n, const char* barrier) {
  return fmt::format(R"(@T.prim_func
def f(A: T.Tensor(({0}, 32), "float16"), B: T.Tensor((32, {1}), "float16"), C: T.Tensor(({0}, {1}), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Cube"):
            a = T.alloc_L1(({0}, 32), "float16")
            b = T.alloc_L1((32, {1}), "float16")
            a0 = T.alloc_L0A(({0}, 16), "float16")
            a1 = T.alloc_L0A(({0}, 16), "float16")
            b0 = T.alloc_L0B((16, {1}), "float16")
            b1 = T.alloc_L0B((16, {1}), "float16")
            c = T.alloc_L0C(({0}, {1}), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.barrier_all()
            T.copy(a[0:{0}, 0:16], a0)
            T.copy(a[0:{0}, 16:32], a1)
            T.copy(b[0:16, 0:{1}], b0)
            T.copy(b[16:32, 0:{1}], b1)
            T.barrier_all()
            T.mma(a0, b0, c, True){2}
            T.mma(a1, b1, c, False)
            T.barrier_all()
            T.copy(c, C)
)",
                     m, n, barrier);
}

std::string hazard_text(const std::string& text, int m, int n) {
  Device dev;
  Tensor A = uniform(dev, {m, 32}, f16, 1), B = uniform(dev, {32, n}, f16, 2),
         C = Tensor::empty(dev, {m, n}, f32);
  return launch_error(text, dev, {A, B, C}, {.threads = 1, .check_hazards = true});
}

// Item 4: consecutive Mmads accumulating into an L0C tile of fewer than 10 fractals need
// PipeBarrier<PIPE_M> between them (Mmad sync notes); the hazard checker reports a missing one,
// insert_syncs inserts it, and a tile of 10 fractals or more needs none.
TEST(Fidelity, SmallMmadAccumulationNeedsAPipeMBarrier) {
  std::string missing = hazard_text(two_mmads(32, 32, ""), 32, 32);
  EXPECT_NE(missing.find("needs pipe_barrier(M) after the previous Mmad"), std::string::npos)
      << missing;
  EXPECT_NE(missing.find("32 x 32 tile (4 fractals"), std::string::npos) << missing;
  EXPECT_EQ(hazard_text(two_mmads(32, 32, "\n            T.pipe_barrier(\"M\")"), 32, 32), "");
  EXPECT_EQ(hazard_text(two_mmads(64, 160, ""), 64, 160), "");  // 4 x 10 = 40 fractals
  // insert_syncs, on the kernel without its syncs, puts the barrier between the two Mmads.
  std::string bare = two_mmads(32, 32, "");
  for (const char* line : {"            T.barrier_all()\n"})
    for (size_t at; (at = bare.find(line)) != std::string::npos;)
      bare.erase(at, std::string(line).size());
  const Target& t = default_target();
  std::string synced = print(insert_syncs(plan_memory(parse(bare), t), t), {.locations = false});
  size_t first = synced.find("T.mma(a0"), barrier = synced.find("T.pipe_barrier(\"M\""),
         second = synced.find("T.mma(a1");
  ASSERT_NE(barrier, std::string::npos) << synced;
  EXPECT_LT(first, barrier);
  EXPECT_LT(barrier, second);
  EXPECT_EQ(hazard_text(synced, 32, 32), "");
}

// Item 8: a block that ends with a flag still set (an intra-core set no wait consumed, a
// cross-core counter above zero) is reported by every launch, not only hazard-checked ones:
// on the chip the flag stays set for the next block or kernel on those cores.
TEST(Fidelity, FlagsLeftPendingAtBlockEndAreReported) {
  auto run = [](const std::string& body) {
    std::string text = R"(@T.prim_func
def f(X: T.Tensor((8, 64), "float32")):
    with T.Kernel(2, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((8, 64), "float32")
            T.copy(X, a)
)" + body;
    Device dev;
    Tensor X = from_vector(dev, {8, 64}, f32, std::vector<double>(512, 1.0));
    return launch_error(text, dev, {X});
  };
  std::string intra = run("            T.set_flag(\"MTE2\", \"V\", 0)\n");
  EXPECT_NE(intra.find("kernel f, block 0: flags left pending when the block ended"),
            std::string::npos)
      << intra;
  EXPECT_NE(
      intra.find("block 0 AIV0: set_flag(\"MTE2\", \"V\", 0) was never consumed by a wait_flag"),
      std::string::npos)
      << intra;
  std::string cross =
      run("            T.set_cross_flag(\"MTE2\", 3, mode=1)\n            "
          "T.set_cross_flag(\"MTE2\", 3, mode=1)\n            T.wait_cross_flag(3)\n");
  EXPECT_NE(cross.find("cross-core flag 3: 1 set(s) for AIV0 never consumed by a wait_cross_flag"),
            std::string::npos)
      << cross;
  EXPECT_EQ(run("            T.set_flag(\"MTE2\", \"V\", 0)\n            T.wait_flag(\"MTE2\", "
                "\"V\", 0)\n"),
            "");
}

// Item 6: an on-chip operand whose start is computed at run time is checked too. Row r of an
// 8 x 16 fp32 UB tile starts r * 64 bytes in: aligned for every r. x[r, r + 1 : r + 9] (eight
// values, a whole 32-byte run) starts 16 bytes into a block for r = 3: the chip raises an
// exception; the verifier cannot know r.
TEST(Fidelity, MisalignedOnChipStartsComputedAtRunTimeAreErrors) {
  auto run = [](const char* region) {
    std::string text = fmt::format(R"(@T.prim_func
def f(X: T.Tensor((8, 16), "float32"), r: T.int32):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((8, 16), "float32")
            if vid == 0:
                T.copy(X, x)
                T.barrier_all()
                T.tile.exp({0}, {0})
                T.barrier_all()
                T.copy(x, X)
)",
                                   region);
    Device dev;
    Tensor X = from_vector(dev, {8, 16}, f32, std::vector<double>(128, 0.0));
    return launch_error(text, dev, {X, Arg(int64_t{3})});
  };
  EXPECT_EQ(run("x[r:r + 1, 0:16]"), "");
  std::string err = run("x[r:r + 1, r + 1:r + 9]");
  EXPECT_NE(
      err.find(
          "T.tile.exp: operand 'dst' ('x' from element [3, 4]) starts at byte 208 of UB, not on a "
          "32-byte boundary"),
      std::string::npos)
      << err;
}

// Item 7: a vector instruction's destination may be exactly one of its sources (in place), never
// a partly overlapping region; reductions and MrgSort take no overlap at all.
TEST(Fidelity, PartialOverlapOfVectorOperandsIsAnError) {
  auto run = [](const char* op) {
    std::string text = fmt::format(R"(@T.prim_func
def f(X: T.Tensor((4, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((4, 64), "float32")
            if vid == 0:
                T.copy(X, x)
                T.barrier_all()
                {}
                T.barrier_all()
                T.copy(x, X)
)",
                                   op);
    Device dev;
    Tensor X = from_vector(dev, {4, 64}, f32, std::vector<double>(256, 1.0));
    return launch_error(text, dev, {X});
  };
  EXPECT_EQ(run("T.tile.add(x, x, x)"), "");  // in place: the same region
  EXPECT_EQ(run("T.tile.add(x[0:2, 0:64], x[2:4, 0:64], x[0:2, 0:64])"), "");  // disjoint halves
  std::string shifted = run("T.tile.add(x[1:3, 0:64], x[0:2, 0:64], x[0:2, 0:64])");
  EXPECT_NE(
      shifted.find("T.tile.add: 'dst' (x[1:3, 0:64]) and 'src0' (x[0:2, 0:64]) overlap partly"),
      std::string::npos)
      << shifted;
  std::string reduce = run("T.reduce_sum(x, x[0:1, 0:64], dim=0)");
  EXPECT_NE(reduce.find("T.reduce_sum takes no overlap between its destination and its sources"),
            std::string::npos)
      << reduce;
}

// Items 15 and 16: vector instructions count their elements (calCount, or a mask on a row's last
// repeat), so a UB operand may be any number of elements long as long as it starts on a 32-byte
// boundary: a per-row statistic of one fp32 is writable. DataCopyPad moves such rows both ways.
// The verifier used to demand whole 32-byte rows of every UB operand.
TEST(Fidelity, OneFloatStatisticsAndColumnTailsVerifyAndRun) {
  const char* text = R"(@T.prim_func
def f(X: T.Tensor((1, 37), "float32"), S: T.Tensor((1,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((1, 40), "float32")
            s = T.alloc_ub((1,), "float32")
            if vid == 0:
                T.copy(X, x[0:1, 0:37], pad=True)
                T.set_flag("MTE2", "V", 0)
                T.wait_flag("MTE2", "V", 0)
                T.reduce_sum(x[0:1, 0:37], s)
                T.pipe_barrier("V")
                T.tile.mul(s, s, 0.5)
                T.set_flag("V", "MTE3", 0)
                T.wait_flag("V", "MTE3", 0)
                T.copy(s, S, pad=True)
)";
  Device dev;
  std::vector<double> xs(37);
  for (int i = 0; i < 37; ++i) xs[i] = 0.25 * i;
  Tensor X = from_vector(dev, {1, 37}, f32, xs), S = Tensor::empty(dev, {1}, f32);
  compile(parse(text)).launch(dev, {X, S}, {.threads = 1, .check_hazards = true});
  double sum = 0;
  for (double v : xs) sum += v;
  EXPECT_EQ(S.to_vector()[0], 0.5 * sum);
}

// Item 11: Cast pairs and round modes follow AscendC Cast's A2 table (表 4): CAST_NONE only
// where the table lists it, float -> float rounds to an integral value (0.5: RINT 0, FLOOR 0,
// CEIL 1, ROUND 1, TRUNC 0, the doc's example), bfloat16 -> int32 exists.
TEST(Fidelity, CastPairsAndModesFollowTheA2Table) {
  auto cast_kernel = [](const char* from, const char* to, const char* mode) {
    return fmt::format(R"(@T.prim_func
def f(X: T.Tensor((64,), "{0}"), Y: T.Tensor((64,), "{1}")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((64,), "{0}")
            y = T.alloc_ub((64,), "{1}")
            if vid == 0:
                T.copy(X, x)
                T.barrier_all()
                T.tile.cast(y, x, mode="{2}")
                T.barrier_all()
                T.copy(y, Y)
)",
                       from, to, mode);
  };
  auto first = [&](const char* from, const char* to, const char* mode, double v) {
    Device dev;
    Tensor X = from_vector(dev, {64}, *parse_dtype(from), std::vector<double>(64, v));
    Tensor Y = Tensor::empty(dev, {64}, *parse_dtype(to));
    compile(parse(cast_kernel(from, to, mode))).launch(dev, {X, Y}, {.threads = 1});
    return Y.to_vector()[0];
  };
  EXPECT_EQ(first("float32", "float32", "CAST_RINT", 0.5), 0.0);
  EXPECT_EQ(first("float32", "float32", "CAST_FLOOR", 0.5), 0.0);
  EXPECT_EQ(first("float32", "float32", "CAST_CEIL", 0.5), 1.0);
  EXPECT_EQ(first("float32", "float32", "CAST_ROUND", 0.5), 1.0);
  EXPECT_EQ(first("float32", "float32", "CAST_TRUNC", 0.5), 0.0);
  EXPECT_EQ(first("bfloat16", "int32", "CAST_RINT", 2.5), 2.0);
  for (auto [from, to] : {std::pair{"float32", "bfloat16"}, std::pair{"float32", "int32"},
                          std::pair{"float16", "int32"}}) {
    std::string err;
    try {
      compile(parse(cast_kernel(from, to, "CAST_NONE")));
    } catch (const Error& e) {
      err = e.what();
    }
    EXPECT_NE(err.find("CAST_NONE"), std::string::npos) << from << " -> " << to << ": " << err;
  }
}

// Item 17: an expert example with column tails. elementwise_add takes rows of 1001 fp16 or 77
// fp32 (not whole 32-byte blocks): padded UB rows, DataCopyPad both ways, vector adds of the
// logical count. Hazard-checked and timed, against its reference.
TEST(Fidelity, ExpertElementwiseAddWithColumnTails) {
  for (const auto& p : std::vector<std::map<std::string, std::string>>{
           {{"M", "13"}, {"N", "1001"}, {"tile", "1001"}, {"blocks", "3"}},
           {{"M", "5"}, {"N", "77"}, {"tile", "77"}, {"blocks", "2"}, {"dtype", "float32"}}}) {
    SCOPED_TRACE(p.at("N"));
    const KernelEntry& k = find_kernel("elementwise_add");
    PrimFunc f = build_kernel(k, p);
    auto kern = compile(f);
    for (bool timed : {false, true}) {
      Device dev;
      auto args = ref::random_args(dev, f);
      npu::Profile prof;
      LaunchOptions opt{.threads = 1, .check_hazards = !timed};
      if (timed) opt.profile = &prof;
      kern.launch(dev, args, opt);
      EXPECT_EQ(ref::check_kernel("elementwise_add", resolve_kernel_args(k, p), args),
                std::optional<std::string>(""));
    }
  }
}

/// `op` of the vector unit on 64 fp32 values (a unary tile op, or "div" by `divisor`).
std::vector<double> vector_op(const char* op, const std::vector<double>& x, double divisor = 1.0) {
  std::string call = std::string(op) == "div"
                         ? fmt::format("T.tile.div(y, x, T.float32({}))", divisor)
                         : fmt::format("T.tile.{}(y, x)", op);
  std::string text = x_to_y_kernel(64, 64, call);
  Device dev;
  Tensor X = from_vector(dev, {64}, f32, x), Y = Tensor::empty(dev, {64}, f32);
  compile(parse(text)).launch(dev, {X, Y}, {.threads = 1});
  return Y.to_vector();
}

// Item 3: Rsqrt and Reciprocal are approximations on the chip (float within 1e-4 relative),
// undefined for x <= 0 / x == 0. The model: a deterministic relative error of at most 5e-5,
// NaN for the undefined inputs. (Subnormals: A2's vector unit keeps them, 950's flushes them
// in six ops; tests/regress/subnormal_division_test.cpp.)
TEST(Fidelity, RsqrtAndReciprocalAreApproximate) {
  std::vector<double> x(64);
  for (int i = 0; i < 64; ++i) x[i] = 0.37 + 1.93 * i;
  x[0] = 0.0;
  x[1] = -4.0;
  auto r = vector_op("rsqrt", x), q = vector_op("reciprocal", x);
  EXPECT_TRUE(std::isnan(r[0]) && std::isnan(r[1]) && std::isnan(q[0]))
      << r[0] << " " << r[1] << " " << q[0];
  int inexact = 0;
  for (int i = 2; i < 64; ++i) {
    const double rs = 1 / std::sqrt(static_cast<float>(x[i])), rc = 1 / static_cast<float>(x[i]);
    EXPECT_LE(std::fabs(r[i] / rs - 1), 1e-4) << x[i];
    EXPECT_LE(std::fabs(q[i] / rc - 1), 1e-4) << x[i];
    inexact += r[i] != static_cast<float>(rs);
  }
  EXPECT_GT(inexact, 10);  // not secretly exact
  auto again = vector_op("rsqrt", x);
  EXPECT_TRUE(std::equal(again.begin() + 2, again.end(), r.begin() + 2));  // deterministic
  std::vector<double> small(64, -90.0);
  EXPECT_EQ(vector_op("exp", small)[0],
            static_cast<double>(std::exp(-90.0f)));  // 8e-40, subnormal: kept on A2
  std::vector<double> tiny(64, 1e-30);
  EXPECT_EQ(vector_op("div", tiny, 1e10)[0],
            static_cast<double>(1e-30f / 1e10f));  // 1e-40: kept on A2
}

// Item 2: scalar loads and stores of GM go through each core's data cache, which DMA and the
// other cores do not see. A scalar load of bytes DMA wrote, or a DMA read of bytes a scalar
// store wrote, needs a T.dcci (DataCacheCleanAndInvalid) between them; happens-before alone
// (the flags here order the pipes) is not enough. The hazard checker reports the missing dcci.
TEST(Fidelity, ScalarGmAccessNeedsADcciAgainstDma) {
  auto check = [](const std::string& body) {
    std::string text = R"(@T.prim_func
def f(X: T.Tensor((8, 64), "float32"), Y: T.Tensor((8, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((8, 64), "float32")
            if vid == 0:
)" + body;
    Device dev;
    Tensor X = from_vector(dev, {8, 64}, f32, std::vector<double>(512, 2.0)),
           Y = Tensor::empty(dev, {8, 64}, f32);
    return launch_error(text, dev, {X, Y}, {.threads = 1, .check_hazards = true});
  };
  auto load_after_dma = [](const char* dcci) {
    return fmt::format(R"(                T.copy(X, a)
                T.set_flag("MTE2", "MTE3", 0)
                T.wait_flag("MTE2", "MTE3", 0)
                T.copy(a, Y)
                T.set_flag("MTE3", "S", 0)
                T.wait_flag("MTE3", "S", 0){}
                a[0, 0] = Y[0, 3] + 1.0
)",
                       dcci);
  };
  std::string stale = check(load_after_dma(""));
  EXPECT_NE(
      stale.find("a scalar load of GM that DMA or another core wrote reads this core's data cache"),
      std::string::npos)
      << stale;
  EXPECT_EQ(check(load_after_dma("\n                T.dcci(Y[0:1, 0:64])")), "");
  auto dma_after_store = [](const char* dcci) {
    return fmt::format(R"(                Y[0, 0] = 5.0{}
                T.set_flag("S", "MTE2", 0)
                T.wait_flag("S", "MTE2", 0)
                T.copy(Y, a)
)",
                       dcci);
  };
  std::string dirty = check(dma_after_store(""));
  EXPECT_NE(dirty.find("a scalar store to GM stays in the storing core's data cache"),
            std::string::npos)
      << dirty;
  EXPECT_EQ(check(dma_after_store("\n                T.dcci(Y, entire=True)")), "");
}

// Item 2, timed mode: the time-ordered replay models the data cache, so a missing dcci gives the
// stale numbers the chip would. A scalar load of bytes DMA rewrote returns the line the core
// cached before; a DMA read of bytes a scalar store wrote returns GM's old bytes. With the dcci,
// timed mode computes what program order does.
TEST(Fidelity, TimedModeReadsStaleDataWithoutADcci) {
  auto run = [](const std::string& body, bool timed) {
    std::string text = R"(@T.prim_func
def f(X: T.Tensor((8, 64), "float32"), Y: T.Tensor((8, 64), "float32"), Z: T.Tensor((8, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((8, 64), "float32")
            if vid == 0:
)" + body;
    Device dev;
    Tensor X = from_vector(dev, {8, 64}, f32, std::vector<double>(512, 2.0)),
           Y = from_vector(dev, {8, 64}, f32, std::vector<double>(512, 0.0)),
           Z = from_vector(dev, {8, 64}, f32, std::vector<double>(512, 0.0));
    npu::Profile prof;
    compile(parse(text)).launch(dev, {X, Y, Z}, {.threads = 1, .profile = timed ? &prof : nullptr});
    auto z = Z.to_vector();
    return std::pair<double, double>{z[0], z[1]};
  };
  auto load_after_dma = [](const char* dcci) {
    return fmt::format(R"(                T.copy(X, a)
                v = Y[0, 3]
                T.set_flag("MTE2", "MTE3", 0)
                T.wait_flag("MTE2", "MTE3", 0)
                T.copy(a, Y)
                T.set_flag("MTE3", "S", 0)
                T.wait_flag("MTE3", "S", 0){}
                a[0, 0] = Y[0, 3] + 1.0
                a[0, 1] = v
                T.set_flag("S", "MTE3", 1)
                T.wait_flag("S", "MTE3", 1)
                T.copy(a, Z)
)",
                       dcci);
  };
  // Program order: Y[0, 3] is 2 after the copy. Timed without the dcci: the line cached by the
  // first load still holds 0.
  EXPECT_EQ(run(load_after_dma(""), false).first, 3.0);
  EXPECT_EQ(run(load_after_dma(""), true).first, 1.0);
  EXPECT_EQ(run(load_after_dma("\n                T.dcci(Y[0:1, 0:64])"), true).first, 3.0);
  auto dma_after_store = [](const char* dcci) {
    return fmt::format(R"(                Y[0, 0] = 5.0{}
                T.set_flag("S", "MTE2", 0)
                T.wait_flag("S", "MTE2", 0)
                T.copy(Y, a)
                T.set_flag("MTE2", "MTE3", 0)
                T.wait_flag("MTE2", "MTE3", 0)
                T.copy(a, Z)
)",
                       dcci);
  };
  EXPECT_EQ(run(dma_after_store(""), false).first, 5.0);
  EXPECT_EQ(run(dma_after_store(""), true).first, 0.0);  // the store is still in the cache
  EXPECT_EQ(run(dma_after_store("\n                T.dcci(Y, entire=True)"), true).first, 5.0);
}

// Item 13: a statement written in a kernel helper is reported at the kernel line that called
// the helper, with the helper's line after it; the IR text keeps both (`# @k:40 via k:12`).
TEST(Fidelity, ReportsPointAtTheKernelLineThatCalledAHelper) {
  int helper_line = 0, call_line = 0;
  auto X = T::Tensor("X", {64}, f32);
  PrimFunc f = T::prim_func("helper_race", {X}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x", {64}, f32);
        auto load = [&](TL_LOC) {
          T::HelperCall at(loc);
          helper_line = __LINE__ + 1;
          T::copy(X, x);
        };
        T::If(vid == 0, [&] {
          call_line = __LINE__ + 1;
          load();
          T::tile::add(x, x, x);  // reads x with no MTE2 -> V sync after the helper's copy
        });
      });
    });
  });
  const std::string file = "tests/npu/fidelity_test.cpp";
  const std::string where =
      fmt::format("{}:{} (in a helper at {}:{})", file, call_line, file, helper_line);
  const std::string text = print(f, {.locations = true});
  EXPECT_NE(text.find(fmt::format("# @{}:{} via {}:{}", file, call_line, file, helper_line)),
            std::string::npos)
      << text;
  EXPECT_EQ(print(parse(text), {.locations = true}), text);
  Device dev;
  Tensor Xt = from_vector(dev, {64}, f32, std::vector<double>(64, 1.0));
  const std::string err = launch_error(text, dev, {Xt}, {.threads = 1, .check_hazards = true});
  EXPECT_NE(err.find("copy (MTE2, block 0 AIV0) writes x bytes [0, 256) at " + where),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace tl
