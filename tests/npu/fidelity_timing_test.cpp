// The virtual NPU's timing model against the chip's documented costs (items 18-22 of the
// "Virtual NPU fidelity" issue, as in fidelity_test.cpp, which holds the semantic rules): vector
// op rates, sort and top-k costs, scalar issue, the DMA queue, unaligned and strided GM rows,
// the launch overhead and bank conflicts. Each test fails on the model before the rule was added.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "common/example_checks.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/npu/stale.h"
#include "tl/npu/timing.h"
#include "tl/parser.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/runtime.h"

#include "npu/fidelity.h"

namespace tl {
namespace {

using fidelity::launch_error;
using fidelity::x_to_y_kernel;

/// Timed cycles of the first instruction called `name` when x_to_y_kernel runs on uniform X.
double x_to_y_cycles(int64_t x_len, int64_t y_len, const std::string& call,
                     const std::string& name) {
  Device dev;
  Tensor X = uniform(dev, {x_len}, f32, 3), Y = Tensor::empty(dev, {y_len}, f32);
  npu::Profile prof;
  // Timing only: y's part the op does not write (past a sort's entries) is copied to Y too,
  // which the stale-data checker would report.
  compile(parse(x_to_y_kernel(x_len, y_len, call)))
      .launch(dev, {X, Y}, {.threads = 1, .profile = &prof, .check_stale = false});
  for (const auto& i : prof.instrs)
    if (i.name == name) return i.end - i.start;
  return -1.0;
}

// Item 18 (part): costs from the right operand and rate. exp and div take two cycles a fp32
// repeat, add one (A2's measured rates, tests/npu/vector_rates_test.cpp); a compare counts its
// repeats on its fp32 sources, not on its bitmask; a narrowing cast on its source.
TEST(Fidelity, VectorCostsUseTheWidestOperandAndTheOpsRate) {
  const char* text = R"(@T.prim_func
def f(X: T.Tensor((64, 64), "float32"), H: T.Tensor((64, 64), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((64, 64), "float32")
            y = T.alloc_ub((64, 64), "float32")
            m = T.alloc_ub((512,), "uint8")
            h = T.alloc_ub((64, 64), "float16")
            if vid == 0:
                T.copy(X, x)
                T.barrier_all()
                T.tile.add(y, x, x)
                T.barrier_all()
                T.tile.exp(y, x)
                T.barrier_all()
                T.tile.div(y, x, x)
                T.barrier_all()
                T.tile.compare(m, x, y, mode="LT")
                T.barrier_all()
                T.tile.cast(h, x, mode="CAST_RINT")
                T.barrier_all()
                T.copy(h, H)
)";
  Device dev;
  Tensor X = from_vector(dev, {64, 64}, f32, std::vector<double>(4096, 1.0)),
         H = Tensor::empty(dev, {64, 64}, f16);
  npu::Profile prof;
  compile(parse(text)).launch(dev, {X, H}, {.threads = 1, .profile = &prof});
  std::map<std::string, double> cycles;
  std::map<std::string, int64_t> bytes;
  for (const auto& i : prof.instrs) {
    cycles[i.name] = i.end - i.start;
    bytes[i.name] = i.bytes;
  }
  const auto& c = default_target().costs;
  auto instr = [&](CostClass k, double per_repeat) {
    const auto& row = c.vector_cost(k);
    return row.head + row.tail + per_repeat * 64;  // [64, 64] fp32: 64 repeats
  };
  EXPECT_DOUBLE_EQ(cycles["tile.add"], instr(CostClass::VecSimple, 1));
  EXPECT_DOUBLE_EQ(cycles["tile.exp"], instr(CostClass::VecExpDiv, 2));  // "vec_exp_div"
  EXPECT_DOUBLE_EQ(cycles["tile.div"], instr(CostClass::VecExpDiv, 2));  // x / x: one source
  EXPECT_EQ(bytes["tile.compare"], 64 * 64 * 4);  // the sources, not the 512-byte bitmask
  EXPECT_EQ(bytes["tile.cast"], 64 * 64 * 4);     // the fp32 source of the narrowing cast
}

// Item 18 (part): a top-k costs by the length it sorts, not by the k entries it keeps (it cost
// 98 cycles for N = 64 and N = 4096 alike).
TEST(Fidelity, TopKCostGrowsWithTheSortedLength) {
  auto cycles = [](int n) {
    return x_to_y_cycles(n, 64, fmt::format("T.topk(y, x, 32, {})", n), "topk");
  };
  const double small = cycles(64), big = cycles(4096);
  EXPECT_GT(small, 0);
  EXPECT_GT(big, 30 * small) << small << " vs " << big;
}

// Item 18: a sort is Sort32 (a repeat per 32 scores) plus one MrgSort pass per factor of 4 in
// its length, each a repeat per 32 pairs written; a top-k's passes keep k entries per list.
TEST(Fidelity, SortCostsSort32PlusItsMergePasses) {
  auto cycles = [](const std::string& call) {
    return x_to_y_cycles(4096, 8192, call, call.starts_with("T.sort") ? "sort" : "topk");
  };
  const auto& row = default_target().costs.vector_cost(CostClass::VecSort);
  auto instr = [&](double repeats) { return row.head + row.tail + row.per_repeat * repeats; };
  // 4096 scores: Sort32 128 repeats, then 128 -> 32 -> 8 -> 2 -> 1 lists, 128 repeats each.
  EXPECT_DOUBLE_EQ(cycles("T.sort(y, x, 4096)"), 5 * instr(128));
  // top-32: the merges write 32 x 32, 8 x 32, 2 x 32 and 32 pairs.
  EXPECT_DOUBLE_EQ(cycles("T.topk(y, x, 32, 4096)"),
                   instr(128) + instr(32) + instr(8) + instr(2) + instr(1));
  // 100 scores: 4 runs, one pass.
  EXPECT_DOUBLE_EQ(cycles("T.sort(y, x, 100)"), instr(4) + instr(4));
}

// Profile of a one-block kernel on AIV0 with one fp16 [200, 64] tensor X.
npu::Profile profile_of(const std::string& body) {
  std::string text = R"(@T.prim_func
def f(X: T.Tensor((200, 64), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((64,), "float16")
            y = T.alloc_ub((64,), "float16")
            if vid == 0:
)" + body;
  Device dev;
  Tensor X = from_vector(dev, {200, 64}, f16, std::vector<double>(200 * 64, 1.0));
  npu::Profile prof;
  compile(parse(text)).launch(dev, {X}, {.threads = 1, .profile = &prof});
  return prof;
}

// Mean cycles between the starts of consecutive instructions called `name`, in steady state:
// over the last `span` intervals (default: half of them).
double mean_interval(const npu::Profile& p, const std::string& name, size_t span = 0) {
  std::vector<double> starts;
  for (const auto& i : p.instrs)
    if (i.name == name) starts.push_back(i.start);
  if (span == 0) span = starts.size() / 2;
  EXPECT_GT(starts.size(), span + 1);
  if (starts.size() <= span + 1) return 0;
  return (starts.back() - starts[starts.size() - 1 - span]) / static_cast<double>(span);
}

// Item 19: the scalar unit pays for loop control and address arithmetic. A loop of one-repeat
// adds issued one every ~2 cycles (the vector interval) before.
TEST(Fidelity, ScalarWorkCostsIssueCycles) {
  const auto& c = default_target().costs;
  // Per iteration: increment + compare-and-branch, and three operand addresses.
  auto p = profile_of(R"(                for i in T.serial(256):
                    T.tile.add(y, x, x)
)");
  EXPECT_GE(mean_interval(p, "tile.add"), (2 + 3) * c.scalar_alu_cycles);
  // The scalar unit's time shows in the S pipe's busy time.
  EXPECT_GE(p.cores[1].busy[static_cast<int>(Pipe::S)], 256 * 5 * c.scalar_alu_cycles);
  // An unrolled loop has no loop control.
  auto u = profile_of(R"(                for i in T.unroll(64):
                    T.tile.add(y, x, x)
)");
  EXPECT_GE(mean_interval(u, "tile.add"), 3 * c.scalar_alu_cycles);
  EXPECT_LT(mean_interval(u, "tile.add"), 5 * c.scalar_alu_cycles);
}

// Item 20: a DMA pipe holds pipe_queue_depth instructions; back-to-back 128-byte copies, each
// waiting out the GM latency, issue at most that many per latency (they cost 6.7 cycles each
// before: an unbounded queue overlapped every latency).
TEST(Fidelity, SmallCopiesAreBoundByTheDmaQueue) {
  const Target& t = default_target();
  const auto& c = t.costs;
  const double rate = std::min(c.copy_bytes_per_cycle.at("global->UB"),
                               c.copy_measured_bytes_per_s.at("global->UB") / (t.clock_ghz * 1e9));
  const double latency = c.copy_latency_bytes.at("global->UB") / rate;
  auto p = profile_of(R"(                for i in T.serial(200):
                    T.copy(X[i:i + 1, 0:64], x)
)");
  // Over whole rounds of the queue: copy i + depth issues when copy i has ended.
  const double per_copy = mean_interval(p, "copy global->UB", 3 * c.pipe_queue_depth);
  EXPECT_GE(per_copy, latency / c.pipe_queue_depth);
  EXPECT_LE(per_copy, (latency + 128 / rate) / c.pipe_queue_depth + 1);
  EXPECT_GE(per_copy, c.dma_issue_cycles);
}

// Item 22: GM rows off the 512-byte grid move at 70 % of the aligned bandwidth on A2 ("GM地址尽量
// 512B对齐"): a [64, 64] fp16 tile at column 64 (128 B into each 512 B row) against column 0.
TEST(Fidelity, UnalignedGmRowsCostMore) {
  const Target& t = default_target();
  const auto& c = t.costs;
  const char* text = R"(@T.prim_func
def f(X: T.Tensor((64, 256), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((64, 64), "float16")
            if vid == 0:
                T.copy(X[0:64, 0:64], x)
                T.pipe_barrier("MTE2")
                T.copy(X[0:64, 64:128], x)
)";
  Device dev;
  Tensor X = from_vector(dev, {64, 256}, f16, std::vector<double>(64 * 256, 1.0));
  npu::Profile prof;
  compile(parse(text)).launch(dev, {X}, {.threads = 1, .profile = &prof});
  std::vector<double> span;
  for (const auto& i : prof.instrs)
    if (i.name == "copy global->UB") span.push_back(i.end - i.start);
  ASSERT_EQ(span.size(), 2u);
  const double rate = std::min(c.copy_bytes_per_cycle.at("global->UB"),
                               c.copy_measured_bytes_per_s.at("global->UB") / (t.clock_ghz * 1e9));
  const double latency = c.copy_latency_bytes.at("global->UB") / rate;
  EXPECT_NEAR(span[0], latency + 8192 / rate, 1);
  EXPECT_NEAR(span[1], latency + 8192 / rate / c.gm_unaligned_efficiency, 1);
}

// Item 22: a profile's Task Duration is the kernel plus the documented launch overhead (what a
// profiler reports), and tlc's table prints both.
TEST(Fidelity, TaskDurationAddsTheLaunchOverhead) {
  auto p = profile_of(R"(                T.copy(X[0:1, 0:64], x)
)");
  const double overhead = default_target().costs.launch_overhead_us;
  EXPECT_GT(overhead, 0);
  EXPECT_EQ(p.launch_overhead_us, overhead);
  EXPECT_DOUBLE_EQ(p.task_us(), p.total_us + overhead);
  std::ostringstream table;
  npu::print_profile(p, table);
  EXPECT_NE(table.str().find(fmt::format("task duration {:.2f} us", p.task_us())),
            std::string::npos)
      << table.str();
}

// Item 22: UB bank conflicts (2201: 16 bank groups of 32-byte blocks, one row per group per beat).
// A repeat reads 8 blocks of each source; sources 8 blocks apart (mod 16) share a beat, sources
// 16 blocks apart take two.
TEST(Fidelity, SourcesInOneBankGroupTakeTwoBeats) {
  const char* text = R"(@T.prim_func
def f(X: T.Tensor((4160,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((4160,), "float32")
            y = T.alloc_ub((2048,), "float32")
            if vid == 0:
                T.copy(X, x)
                T.barrier_all()
                T.tile.add(y, x[0:2048], x[2112:4160])
                T.barrier_all()
                T.tile.mul(y, x[0:2048], x[2048:4096])
)";
  Device dev;
  Tensor X = from_vector(dev, {4160}, f32, std::vector<double>(4160, 1.0));
  npu::Profile prof;
  compile(parse(text)).launch(dev, {X}, {.threads = 1, .profile = &prof});
  std::map<std::string, double> d;
  for (const auto& i : prof.instrs) d[i.name] = i.end - i.start;
  const auto& row = default_target().costs.vector_cost(CostClass::VecSimple);
  const double repeats = 2048 * 4 / 256;
  EXPECT_DOUBLE_EQ(d["tile.add"],
                   row.head + row.tail + row.per_repeat * repeats);  // 264 blocks apart
  EXPECT_DOUBLE_EQ(d["tile.mul"],
                   row.head + row.tail + 2 * row.per_repeat * repeats);  // 256 blocks apart
}

// Item 21: a strided region costs per-row repeats: a [64, 16] fp32 slice of a [64, 64] tile takes
// one 256-byte repeat per row (64), not 16 repeats' worth of bytes.
TEST(Fidelity, AStridedRegionCostsARepeatPerRow) {
  const char* text = R"(@T.prim_func
def f(X: T.Tensor((64, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((64, 64), "float32")
            c = T.alloc_ub((64, 16), "float32")
            if vid == 0:
                T.copy(X, x)
                T.barrier_all()
                T.tile.add(c, c, c)
                T.barrier_all()
                T.tile.mul(x[0:64, 0:16], x[0:64, 0:16], x[0:64, 0:16])
                T.barrier_all()
                T.copy(x, X)
)";
  Device dev;
  Tensor X = from_vector(dev, {64, 64}, f32, std::vector<double>(4096, 1.0));
  npu::Profile prof;
  compile(parse(text)).launch(dev, {X}, {.threads = 1, .profile = &prof});
  std::map<std::string, const npu::TimedInstr*> by;
  for (const auto& i : prof.instrs) by[i.name] = &i;
  ASSERT_TRUE(by.count("tile.add") && by.count("tile.mul"));
  EXPECT_EQ(by["tile.add"]->bytes, 64 * 16 * 4);  // contiguous: 16 repeats
  EXPECT_EQ(by["tile.mul"]->bytes, 64 * 256);     // strided: a repeat per row
  EXPECT_GT(by["tile.mul"]->end - by["tile.mul"]->start,
            2 * (by["tile.add"]->end - by["tile.add"]->start));
}

}  // namespace
}  // namespace tl
