// Mutation test of the hazard checker: for every expert example, delete each synchronisation in
// turn (a set_flag/wait_flag pair, a pipe_barrier, a cross-core flag: set and waits, the set
// alone, the waits alone) and launch with check_hazards. The checker must report a hazard or
// the launch a deadlock, except for the deletions listed as redundant below, each with the
// reason nothing is lost. The unmodified kernels must be clean (no false positives).
#include <gtest/gtest.h>

#include <set>

#include "tl/ir_functor.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"
#include "tl/printer.h"
#include "sync_mutations.h"

namespace tl {
namespace {

/// "clean", "hazard", "deadlock" or "error: <message>".
std::string outcome(const PrimFunc& f, const std::function<std::vector<Arg>(Device&)>& args) {
  Device dev;
  try {
    auto kern = compile(f, default_target(), {.verify = false, .cache = false});
    kern.launch(dev, args(dev), {.threads = 2, .check_hazards = true});
  } catch (const Error& e) {
    std::string m = e.what();
    if (m.find("deadlock") != std::string::npos) return "deadlock";
    if (m.find("hazard on") != std::string::npos) return "hazard";
    return "error: " + m;
  }
  return "clean";
}

void check_example(const PrimFunc& f, const std::function<std::vector<Arg>(Device&)>& args,
                   const std::set<std::string>& redundant) {
  ASSERT_EQ(outcome(f, args), "clean") << "false positive in the unmodified kernel " << f->name;
  auto ms = mutations(f);
  std::set<std::string> undetected;
  int detected = 0;
  for (const auto& m : ms) {
    std::string r = outcome(with_body(f, Dropper(m.drop).mutate(f->body)), args);
    std::printf("  %-16s %-34s %s\n", f->name.c_str(), m.label.c_str(), r.substr(0, 200).c_str());
    if (r == "clean") undetected.insert(m.label);
    else if (r == "hazard" || r == "deadlock") ++detected;
    else ADD_FAILURE() << m.label << ": " << r;
  }
  std::printf("  %s: %zu deletions, %d detected, %zu undetected (%zu listed redundant)\n", f->name.c_str(),
              ms.size(), detected, undetected.size(), redundant.size());
  EXPECT_EQ(undetected, redundant);
}

// gemm_v0 is recorded as its TileLang-Ascend template PipeBarrier<ALL>; LoadData (MTE1);
// PipeBarrier<ALL>; Mmad (M); PipeBarrier<ALL>. The barriers make every cube-side flag around it
// redundant: the leading one drains MTE2 before the L1 -> L0 load (MTE2->MTE1 flags) and FIX
// before the Mmad (FIX->M), the trailing one drains M before anything after the gemm reads
// L0C (M->FIX) or overwrites its L1 operands (M->MTE2), and back-to-back gemm_v0s are
// separated by them (pipe_barrier(M)). These flags matter for a hand-scheduled Mmad without
// the template barriers, so the examples keep them.

TEST(HazardMutation, Gemm) {
  auto f = build_kernel(find_kernel("gemm"), sizes({{"M", 256}, {"N", 256}, {"K", 256}, {"bM", 128}, {"bN", 256}, {"bK", 64}}));
  check_example(
      f,
      [](Device& dev) -> std::vector<Arg> {
        return {uniform(dev, {256, 256}, f16, 1), uniform(dev, {256, 256}, f16, 2), Tensor::empty(dev, {256, 256}, f16)};
      },
      {"flag MTE2->MTE1 id 0 #0",  // gemm_v0's leading barrier_all
       "flag M->MTE2 id 0 #0",     // gemm_v0's trailing barrier_all
       "flag M->FIX id 0 #0"});    // the last gemm_v0's trailing barrier_all
}

TEST(HazardMutation, Minicv) {
  const int M = 128, N = 128, K = 64, bM = 64, bN = 64;
  auto m = sizes({{"M", M}, {"N", N}, {"K", K}, {"bM", bM}, {"bN", bN}});
  m["out_dtype"] = "float16";  // exp then a vector cast: exercises the pipe_barrier(V)
  check_example(
      build_kernel(find_kernel("minicv"), m),
      [&](Device& dev) -> std::vector<Arg> {
        return {uniform(dev, {M, K}, f16, 5, -0.1, 0.1), uniform(dev, {K, N}, f16, 6, -0.1, 0.1),
                Tensor::empty(dev, {M, N}, f16), Tensor::empty(dev, {(M / bM) * (N / bN), bM, bN}, f32)};
      },
      {"flag MTE2->MTE1 id 0 #0",  // gemm_v0's leading barrier_all
       "flag M->FIX id 0 #0"});    // gemm_v0's trailing barrier_all
}

TEST(HazardMutation, FlashAttention) {
  // 4 blocks, 2 kv-tiles, 2 QK^T chunks (bK) and 2 PV chunks (bD: the FIX->M flag exists),
  // bM = 32 so the QK^T loop has its pipe_barrier(M).
  const int S = 128, D = 256, bM = 32, bN = 64;
  auto f = build_kernel(find_kernel("flash_attention"),
                        sizes({{"S", S}, {"D", D}, {"bM", bM}, {"bN", bN}, {"bK", 128}, {"bD", 128}}));
  const int blocks = S / bM;
  check_example(
      f,
      [&](Device& dev) -> std::vector<Arg> {
        return {uniform(dev, {1, 1, S, D}, f16, 7),           uniform(dev, {1, 1, S, D}, f16, 8),
                uniform(dev, {1, 1, S, D}, f16, 9),           Tensor::empty(dev, {1, 1, S, D}, f16),
                Tensor::empty(dev, {blocks, bM, bN}, f32),    Tensor::empty(dev, {blocks, bM, bN}, f16),
                Tensor::empty(dev, {blocks, bM, D}, f32)};
      },
      {"flag MTE2->MTE1 id 0 #0",  // K/V (and Q) in L1: gemm_v0's leading barrier_all
       "pipe_barrier(M) #0",       // between QK^T chunks: gemm_v0's barriers
       "flag M->FIX id 2 #0",      // S in L0C: the last QK^T gemm_v0's trailing barrier_all
       "flag MTE2->MTE1 id 1 #0",  // P in L1: gemm_v0's leading barrier_all
       "flag M->FIX id 3 #0",      // PV chunk in L0C: gemm_v0's trailing barrier_all
       "flag FIX->M id 3 #0",      // O_L0C reuse: the next gemm_v0's leading barrier_all drains FIX
       "flag M->MTE2 id 4 #0"});   // K_L1/V_L1 reuse: the last gemm_v0's trailing barrier_all
}

TEST(HazardMutation, RmsNorm) {
  // 2 blocks = 4 AIV workers, 8 row tiles (2 per worker), 2 column chunks per row.
  const int M = 64, N = 256;
  auto f = build_kernel(find_kernel("rms_norm"), sizes({{"M", M}, {"N", N}, {"rM", 8}, {"bN", 128}, {"blocks", 2}}));
  check_example(
      f,
      [&](Device& dev) -> std::vector<Arg> {
        return {randn(dev, {M, N}, bf16, 3), uniform(dev, {N}, bf16, 4, 0.5, 1.5), Tensor::empty(dev, {M, N}, bf16),
                1e-6};
      },
      {});
}

TEST(HazardMutation, RmsNormOnePass) {
  // passes=1: the [8, 256] row tile stays in UB; 2 fp32 chunks per tile, 2 tiles per worker.
  const int M = 64, N = 256;
  auto f = build_kernel(find_kernel("rms_norm"),
                        sizes({{"M", M}, {"N", N}, {"rM", 8}, {"bN", 128}, {"blocks", 2}, {"passes", 1}}));
  check_example(
      f,
      [&](Device& dev) -> std::vector<Arg> {
        return {randn(dev, {M, N}, bf16, 3), uniform(dev, {N}, bf16, 4, 0.5, 1.5), Tensor::empty(dev, {M, N}, bf16),
                1e-6};
      },
      {});
}

}  // namespace
}  // namespace tl

namespace tl {
namespace {

std::vector<Arg> fa_args(Device& dev, int S, int D, int bM, int bN, int slots) {
  const int blocks = S / bM;
  auto ws = [&](std::vector<int64_t> tail, DType t) {
    std::vector<int64_t> shape{blocks};
    if (slots > 1) shape.push_back(slots);
    shape.insert(shape.end(), tail.begin(), tail.end());
    return Tensor::empty(dev, shape, t);
  };
  return {uniform(dev, {1, 1, S, D}, f16, 7), uniform(dev, {1, 1, S, D}, f16, 8), uniform(dev, {1, 1, S, D}, f16, 9),
          Tensor::empty(dev, {1, 1, S, D}, f16), ws({bM, bN}, f32), ws({bM, bN}, f16), ws({bM, D}, f32)};
}

// The examples at the sizes of tests/examples/run_examples_test.cpp are clean too.
TEST(HazardMutation, ExamplesCleanAtRunSizes) {
  auto gemm = build_kernel(find_kernel("gemm"), sizes({{"M", 256}, {"N", 512}, {"K", 128}}));
  EXPECT_EQ(outcome(gemm, [](Device& dev) -> std::vector<Arg> {
              return {uniform(dev, {256, 128}, f16, 1), uniform(dev, {128, 512}, f16, 2), Tensor::empty(dev, {256, 512}, f16)};
            }), "clean");
  auto rms = build_kernel(find_kernel("rms_norm"), sizes({{"M", 64}, {"N", 2048}}));
  EXPECT_EQ(outcome(rms, [](Device& dev) -> std::vector<Arg> {
              return {randn(dev, {64, 2048}, bf16, 3), uniform(dev, {2048}, bf16, 4, 0.5, 1.5),
                      Tensor::empty(dev, {64, 2048}, bf16), 1e-6};
            }), "clean");
  auto fa = build_kernel(find_kernel("flash_attention"), sizes({{"S", 128}, {"D", 512}, {"bD", 256}}));
  EXPECT_EQ(outcome(fa, [](Device& dev) { return fa_args(dev, 128, 512, 64, 64, 1); }), "clean");
}

TEST(HazardMutation, FlashAttentionPipelined) {
  const int S = 256, D = 256, bM = 32, bN = 64;
  auto f = build_kernel(find_kernel("flash_attention_pipelined"),
                        sizes({{"S", S}, {"D", D}, {"bM", bM}, {"bN", bN}, {"bK", 128}, {"bD", 128}}));
  check_example(f, [&](Device& dev) { return fa_args(dev, S, D, bM, bN, 2); }, {});
}

}  // namespace
}  // namespace tl
