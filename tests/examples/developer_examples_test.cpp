// The developer-mode examples (docs/developer_mode.md) at several sizes, tails included:
// they match their references under the hazard checker (0 hazards, 0 deadlocks, flags
// balanced) and in timed mode; their lowered IR has no barrier_all / PIPE_ALL and their
// unlowered IR no sync, no T::Scope, no physical memory and no vid (the compiler did all of it).
#include <gtest/gtest.h>

#include "common/example_checks.h"
#include "tl/ir_functor.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/printer.h"
#include "tl/storage.h"

namespace tl {
namespace {

struct DevCase {
  std::string kernel;
  std::map<std::string, std::string> params;
};

std::vector<DevCase> cases() {
  return {
      {"gemm_dev", {}},
      {"gemm_dev",
       {{"M", "256"}, {"N", "128"}, {"K", "512"}, {"bM", "64"}, {"bN", "128"}, {"bK", "128"}}},
      {"gemm_dev",
       {{"M", "64"},
        {"N", "64"},
        {"K", "2048"},
        {"bM", "64"},
        {"bN", "64"},
        {"bK", "1024"}}},  // K chunks
      {"add_dev", {}},
      {"add_dev", {{"M", "6"}, {"N", "4096"}, {"bM", "3"}, {"dtype", "float32"}}},
      {"add_dev", {{"M", "16"}, {"N", "512"}, {"bM", "16"}, {"dtype", "int32"}}},
      {"rms_norm_dev", {}},
      {"gelu_dev", {}},
      {"softmax_dev", {}},
      {"softmax_dev", {{"M", "24"}, {"N", "2048"}, {"bM", "8"}}},
      {"softmax_dev", {{"M", "32"}, {"N", "64"}, {"bM", "16"}}},
      {"gelu_dev", {{"M", "6"}, {"N", "512"}, {"bM", "3"}, {"dtype", "float16"}}},
      {"gelu_dev", {{"M", "8"}, {"N", "4096"}, {"bM", "1"}}},
      {"rms_norm_dev", {{"M", "48"}, {"N", "512"}, {"rM", "8"}, {"dtype", "float16"}}},
      {"rms_norm_dev", {{"M", "32"}, {"N", "256"}, {"rM", "16"}}},
      // Row and column tails, lowered by the compiler (legalize_copies): a last block with fewer
      // rows, rows that are not whole 32-byte blocks (padded UB rows, DataCopyPad both ways).
      {"add_dev", {{"M", "13"}, {"N", "100"}, {"bM", "4"}}},
      {"add_dev", {{"M", "7"}, {"N", "77"}, {"bM", "2"}, {"dtype", "int16"}}},
      {"gelu_dev", {{"M", "13"}, {"N", "1001"}, {"bM", "4"}, {"dtype", "float16"}}},
      {"gelu_dev", {{"M", "5"}, {"N", "37"}, {"bM", "2"}}},
      {"rms_norm_dev", {{"M", "37"}, {"N", "1029"}, {"rM", "8"}}},
      {"rms_norm_dev", {{"M", "17"}, {"N", "100"}, {"rM", "16"}, {"dtype", "float16"}}},
      // 8 rows of 2053: fits UB only because plan_memory lets dead tiles' bytes be reused
      // (insert_syncs orders the reuse).
      {"rms_norm_dev", {{"M", "37"}, {"N", "2053"}, {"rM", "8"}}},
      {"softmax_dev", {{"M", "129"}, {"N", "1000"}, {"bM", "8"}}},
      {"softmax_dev", {{"M", "9"}, {"N", "37"}, {"bM", "8"}}},
      // GEMM tails in M, N and K (a partial K panel is zero-filled in L1 before its copy).
      {"gemm_dev",
       {{"M", "200"}, {"N", "136"}, {"K", "72"}, {"bM", "64"}, {"bN", "64"}, {"bK", "32"}}},
      {"gemm_dev",
       {{"M", "40"},
        {"N", "24"},
        {"K", "1000"},
        {"bM", "32"},
        {"bN", "16"},
        {"bK", "256"},
        {"dtype", "bfloat16"}}},
      // The accumulator crosses from the cube to the vector unit (a compiler-made workspace
      // channel with a cross-core flag; AIV 1 runs the flag protocol alone).
      {"matmul_add_dev", {}},
      {"matmul_add_dev",
       {{"M", "200"}, {"N", "136"}, {"K", "72"}, {"bM", "64"}, {"bN", "64"}, {"bK", "32"}}},
      {"matmul_add_dev",
       {{"M", "40"},
        {"N", "24"},
        {"K", "1000"},
        {"bM", "32"},
        {"bN", "16"},
        {"bK", "256"},
        {"dtype", "bfloat16"}}},
      // S, P and PV cross cores once per kv-tile (channels with credits inside the loop).
      {"flash_attention_dev", {}},
      {"flash_attention_dev",
       {{"B", "2"}, {"H", "2"}, {"S", "128"}, {"D", "64"}, {"bM", "64"}, {"bN", "32"}}},
      {"flash_attention_dev",
       {{"S", "192"}, {"D", "96"}, {"bM", "64"}, {"bN", "64"}, {"dtype", "bfloat16"}}},
      // Query and key tails: the last q-tile and kv-tile are clipped and zero-padded by the
      // compiler; the kernel masks the keys past S.
      {"flash_attention_dev", {{"S", "200"}, {"D", "128"}}},
      {"flash_attention_dev",
       {{"B", "2"}, {"S", "77"}, {"D", "80"}, {"bM", "64"}, {"bN", "32"}, {"dtype", "bfloat16"}}},
      // 32-row tiles: the row statistics are 128 bytes, half a compare granule (an element
      // loop's max of them is compared in granule-sized copies:
      // VectorizeParallel.AShortMaxIsComparedInGranuleSizedCopies).
      {"flash_attention_dev", {{"S", "200"}, {"D", "64"}, {"bM", "32"}, {"bN", "128"}}},
      // D = 512: P V (64 x 512 fp32) is all of L0C, so lower_cube_ops computes it in column
      // chunks, each drained to the vector unit as it is done, and Q K^T's K chunks shrink so
      // both gemms' L0A slots fit.
      {"flash_attention_dev", {{"S", "128"}, {"D", "512"}}},
      {"flash_attention_dev", {{"S", "100"}, {"D", "512"}, {"dtype", "bfloat16"}}},
  };
}

std::string describe(const DevCase& c) {
  std::string s = c.kernel;
  for (const auto& [k, v] : c.params) s += fmt::format(" {}={}", k, v);
  return s;
}

TEST(DeveloperExamples, MatchTheirReferencesHazardCheckedAndTimed) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(describe(c));
    const KernelEntry& k = find_kernel(c.kernel);
    PrimFunc f = build_kernel(k, c.params);
    CompiledKernel kern = compile(f);
    for (bool timed : {false, true}) {
      Device dev;
      auto args = ref::random_args(dev, f);
      npu::Profile prof;
      LaunchOptions opt{.check_hazards = !timed};
      if (timed) opt.profile = &prof;
      ASSERT_NO_THROW(kern.launch(dev, args, opt));
      auto check = ref::check_kernel(k.name, resolve_kernel_args(k, c.params), args);
      ASSERT_TRUE(check.has_value());
      EXPECT_EQ(*check, "") << (timed ? "timed" : "hazard-checked");
      if (timed) {
        EXPECT_GT(prof.total_cycles, 0);
      }
    }
  }
}

TEST(DeveloperExamples, TheCompilerDidTheHardwareWork) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(describe(c));
    PrimFunc f = build_kernel(find_kernel(c.kernel), c.params);
    // As written: no sync, no scope, no physical memory, no vid.
    pre_order_visit(f->body, [&](const Stmt& s) {
      EXPECT_NE(s.kind(), StmtKind::Sync) << print(s);
      EXPECT_NE(s.kind(), StmtKind::Scope) << print(s);
      if (auto* a = s.as<AllocateNode>()) {
        EXPECT_FALSE(is_planned_scope(a->buffer->scope)) << a->buffer->name;
      }
      if (auto* kn = s.as<KernelNode>()) {
        EXPECT_TRUE(kn->developer());
      }
    });
    // Lowered: every sync the compiler's, none of them a full barrier.
    std::string ir = print(compile(f).func(), {.locations = false});
    EXPECT_EQ(ir.find("barrier_all"), std::string::npos) << ir;
    EXPECT_EQ(ir.find("\"ALL\""), std::string::npos) << ir;
    EXPECT_EQ(ir.find("gemm_v0"), std::string::npos) << ir;
    EXPECT_NE(ir.find("auto=True"), std::string::npos) << ir;
  }
}

/// Simulated cycles of `kernel` at `params` (timed mode, profile only).
double cycles(const std::string& kernel, const std::map<std::string, std::string>& params) {
  PrimFunc f = build_kernel(find_kernel(kernel), params);
  Device dev;
  auto args = ref::random_args(dev, f);
  npu::Profile prof;
  LaunchOptions opt;
  opt.profile = &prof;
  opt.timing_only = true;
  compile(f).launch(dev, args, opt);
  return prof.total_cycles;
}

// Issue "Developer mode I", must-show 8 (no pipelining yet): gemm_dev at least 0.95x the
// cycles-speed of its serial expert twin. Simulated cycles are deterministic, so this is a
// property of the compiler's output, not a host timing.
TEST(DeveloperExamples, GemmDevIsAtLeastAsFastAsTheSerialExpertGemm) {
  std::map<std::string, std::string> p = {{"M", "512"},  {"N", "512"},  {"K", "512"},
                                          {"bM", "128"}, {"bN", "256"}, {"bK", "64"}};
  double dev = cycles("gemm_dev", p), expert = cycles("gemm", p);
  std::printf("  gemm_dev %.0f cycles, gemm %.0f cycles: %.2fx\n", dev, expert, expert / dev);
  EXPECT_GE(expert / dev, 0.95);
}

// Issue 13 (Developer mode II), must-show 2: T.Pipelined with 2 stages against 1, and must-show
// 3: against the pipelined expert twins. Simulated cycles are deterministic, so these are
// properties of the compiler's output. Floors sit just under today's ratios, so they can only
// improve; where they are below the targets, docs/developer_mode.md says why.
TEST(DeveloperExamples, PipeliningTheGemmKLoopOverlapsLoadsAndMmads) {
  std::map<std::string, std::string> serial = {{"num_stages", "1"}}, two = {{"num_stages", "2"}};
  double s1 = cycles("gemm_dev", serial), s2 = cycles("gemm_dev", two),
         expert = cycles("gemm_pipelined", {});
  std::printf(
      "  gemm_dev 1024^3: 1 stage %.0f, 2 stages %.0f cycles (%.2fx); gemm_pipelined %.0f (dev at "
      "%.2fx)\n",
      s1, s2, s1 / s2, expert, expert / s2);
  // merge_flags off by default (issue 28) made both faster, the serial one more (37,162 ->
  // 34,469 cycles; 2 stages 24,919 -> 24,574), so the ratio fell from 1.52x to 1.40x.
  EXPECT_GE(s1 / s2, 1.38);      // today 1.40x
  EXPECT_GE(expert / s2, 0.95);  // today 1.01x
}

// Without split_aiv the developer kernel's softmax runs on one AIV per block where the expert
// kernels split the rows over both: that is the remaining gap to flash_attention_pipelined.
TEST(DeveloperExamples, PipeliningFlashAttentionRunsTheCubeAndTheSoftmaxATileApart) {
  std::map<std::string, std::string> serial = {{"S", "512"}, {"D", "128"}, {"num_stages", "1"}};
  std::map<std::string, std::string> two = {{"S", "512"}, {"D", "128"}, {"num_stages", "2"}};
  std::map<std::string, std::string> expert_p = {{"S", "512"}, {"D", "128"}, {"bD", "128"}};
  double s1 = cycles("flash_attention_dev", serial), s2 = cycles("flash_attention_dev", two);
  double expert = cycles("flash_attention_pipelined", expert_p),
         serial_expert = cycles("flash_attention", expert_p);
  std::printf(
      "  flash_attention_dev S=512 D=128: 1 stage %.0f, 2 stages %.0f cycles (%.2fx); "
      "flash_attention %.0f "
      "(dev at %.2fx); flash_attention_pipelined %.0f (dev at %.2fx)\n",
      s1, s2, s1 / s2, serial_expert, serial_expert / s2, expert, expert / s2);
  EXPECT_GE(s1 / s2, 1.55);            // today 1.63x
  EXPECT_GE(serial_expert / s2, 1.0);  // faster than the serial expert kernel
  EXPECT_GE(expert / s2, 0.78);        // today 0.80x
}

// Must-shows 2 and 3 at the first shape, S = 512, D = 512 (the expert's defaults): the
// developer kernel computes P V in column chunks (lower_cube_ops' N split).
TEST(DeveloperExamples, FlashAttentionAtD512PipelinesAndKeepsUpWithTheExpert) {
  std::map<std::string, std::string> serial = {{"S", "512"}, {"D", "512"}, {"num_stages", "1"}};
  std::map<std::string, std::string> two = {{"S", "512"}, {"D", "512"}, {"num_stages", "2"}};
  double s1 = cycles("flash_attention_dev", serial), s2 = cycles("flash_attention_dev", two);
  double expert = cycles("flash_attention_pipelined", {{"S", "512"}, {"D", "512"}});
  std::printf(
      "  flash_attention_dev S=512 D=512: 1 stage %.0f, 2 stages %.0f cycles (%.2fx); "
      "flash_attention_pipelined %.0f (dev at %.2fx)\n",
      s1, s2, s1 / s2, expert, expert / s2);
  EXPECT_GE(s1 / s2, 1.3);       // the target; today 1.63x
  EXPECT_GE(expert / s2, 0.95);  // the target; today 1.16x
}

// Issue 30's must-show "developer-mode kernels within 0.95x of an expert twin where both exist",
// for the three pairs the tests above do not cover, at scripts/devmode_table.py's shapes
// (docs/developer_mode.md, "Figures"; docs/must_show.md): expert cycles / developer cycles.
// add_dev takes its block's two row tiles in a T.Pipelined loop (tiles 2), as elementwise_add
// streams its tiles through two buffers. Two stages of two iterations are unrolled into straight
// code, where plan_memory let iteration 1's slots share iteration 0's bytes and insert_syncs then
// ordered the next tile's loads after this tile's add; plan_memory keeps slots of one loop apart
// by their BufferNode::slot trait (tests/pass/plan_memory_unrolled_slots.tl). With one tile a
// block (tiles 1, bM 4: 0.93x) there is nothing to overlap.
TEST(DeveloperExamples, VectorDeveloperKernelsWithinPoint95OfTheirExpertTwins) {
  struct Pair {
    std::string dev;
    std::map<std::string, std::string> dev_p;
    std::string expert;
    std::map<std::string, std::string> expert_p;
    double floor = 0.95;
  };
  const std::vector<Pair> pairs = {
      {"add_dev",
       {{"M", "96"}, {"N", "8192"}, {"bM", "2"}, {"tiles", "2"}},
       "elementwise_add",
       {{"M", "96"}, {"N", "8192"}}},
      {"gelu_dev",
       {{"M", "96"}, {"N", "8192"}, {"bM", "2"}, {"tiles", "2"}},
       "gelu",
       {{"M", "96"}, {"N", "8192"}}},
      {"rms_norm_dev",
       {{"M", "1024"}, {"N", "1024"}, {"rM", "16"}, {"tiles", "3"}},
       "rms_norm",
       {{"M", "1024"}, {"N", "1024"}, {"bN", "1024"}, {"passes", "1"}}},
  };
  for (const auto& p : pairs) {
    const double dev = cycles(p.dev, p.dev_p), expert = cycles(p.expert, p.expert_p);
    std::printf("  %s %.0f cycles, %s %.0f cycles: %.2fx\n", p.dev.c_str(), dev, p.expert.c_str(),
                expert, expert / dev);
    EXPECT_GE(expert / dev, p.floor) << p.dev;
  }
}

}  // namespace
}  // namespace tl
