// The expert examples at the small sizes the sync-deletion tests launch them with, each with
// its arguments and the deletions argued redundant: one list shared by the hazard checker's
// mutation test (hazard_mutation_test.cpp) and timed mode's data-order test
// (timed_data_test.cpp), so the two cannot drift apart.
//
// Why the redundant deletions lose nothing: gemm_v0 is recorded as its TileLang-Ascend
// template PipeBarrier<ALL>; LoadData (MTE1); PipeBarrier<ALL>; Mmad (M); PipeBarrier<ALL>.
// The barriers make every cube-side flag around it redundant: the leading one drains MTE2
// before the L1 -> L0 load (MTE2->MTE1 flags) and FIX before the Mmad (FIX->M), the trailing
// one drains M before anything after the gemm reads L0C (M->FIX) or overwrites its L1 operands
// (M->MTE2), and back-to-back gemm_v0s are separated by them (pipe_barrier(M)). These flags
// matter for a hand-scheduled Mmad without the template barriers, so the examples keep them.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "sync_mutations.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"

namespace tl {

using ArgsFn = std::function<std::vector<Arg>(Device&)>;

struct ExampleCase {
  std::string name;
  PrimFunc f;
  ArgsFn args;
  std::set<std::string> redundant;  // deletion labels (sync_mutations.h) that lose nothing
};

/// FlashAttention's arguments: Q, K, V, O and its GM workspaces (`slots` > 1: double-buffered).
inline std::vector<Arg> fa_args(Device& dev, int S, int D, int bM, int bN, int slots) {
  const int blocks = S / bM;
  auto ws = [&](std::vector<int64_t> tail, DType t) {
    std::vector<int64_t> shape{blocks};
    if (slots > 1) shape.push_back(slots);
    shape.insert(shape.end(), tail.begin(), tail.end());
    return Tensor::empty(dev, shape, t);
  };
  return {uniform(dev, {1, 1, S, D}, f16, 7),
          uniform(dev, {1, 1, S, D}, f16, 8),
          uniform(dev, {1, 1, S, D}, f16, 9),
          Tensor::empty(dev, {1, 1, S, D}, f16),
          ws({bM, bN}, f32),
          ws({bM, bN}, f16),
          ws({bM, D}, f32)};
}

inline ExampleCase gemm_case() {
  return {"gemm",
          build_kernel(
              find_kernel("gemm"),
              sizes({{"M", 256}, {"N", 256}, {"K", 256}, {"bM", 128}, {"bN", 256}, {"bK", 64}})),
          [](Device& dev) -> std::vector<Arg> {
            return {uniform(dev, {256, 256}, f16, 1), uniform(dev, {256, 256}, f16, 2),
                    Tensor::empty(dev, {256, 256}, f16)};
          },
          {"flag MTE2->MTE1 id 0 #0",  // gemm_v0's leading barrier_all
           "flag M->MTE2 id 0 #0",     // gemm_v0's trailing barrier_all
           "flag M->FIX id 0 #0"}};    // the last gemm_v0's trailing barrier_all
}

inline ExampleCase minicv_case() {
  const int M = 128, N = 128, K = 64, bM = 64, bN = 64;
  auto m = sizes({{"M", M}, {"N", N}, {"K", K}, {"bM", bM}, {"bN", bN}});
  m["out_dtype"] = "float16";  // exp then a vector cast: exercises the pipe_barrier(V)
  return {"minicv",
          build_kernel(find_kernel("minicv"), m),
          [=](Device& dev) -> std::vector<Arg> {
            return {uniform(dev, {M, K}, f16, 5, -0.1, 0.1),
                    uniform(dev, {K, N}, f16, 6, -0.1, 0.1), Tensor::empty(dev, {M, N}, f16),
                    Tensor::empty(dev, {(M / bM) * (N / bN), bM, bN}, f32)};
          },
          {"flag MTE2->MTE1 id 0 #0",  // gemm_v0's leading barrier_all
           "flag M->FIX id 0 #0"}};    // gemm_v0's trailing barrier_all
}

inline ExampleCase flash_attention_case() {
  // 4 blocks, 2 kv-tiles, 2 QK^T chunks (bK) and 2 PV chunks (bD: the FIX->M flag exists),
  // bM = 32 so the QK^T loop has its pipe_barrier(M).
  const int S = 128, D = 256, bM = 32, bN = 64;
  return {
      "flash_attention",
      build_kernel(find_kernel("flash_attention"),
                   sizes({{"S", S}, {"D", D}, {"bM", bM}, {"bN", bN}, {"bK", 128}, {"bD", 128}})),
      [=](Device& dev) { return fa_args(dev, S, D, bM, bN, 1); },
      {"flag MTE2->MTE1 id 0 #0",  // K/V (and Q) in L1: gemm_v0's leading barrier_all
       "pipe_barrier(M) #0",       // between QK^T chunks: gemm_v0's barriers
       "flag M->FIX id 2 #0",      // S in L0C: the last QK^T gemm_v0's trailing barrier_all
       "flag MTE2->MTE1 id 1 #0",  // P in L1: gemm_v0's leading barrier_all
       "flag M->FIX id 3 #0",      // PV chunk in L0C: gemm_v0's trailing barrier_all
       "flag FIX->M id 3 #0",      // O_L0C reuse: the next gemm_v0's leading barrier_all drains FIX
       "flag M->MTE2 id 4 #0"}};   // K_L1/V_L1 reuse: the last gemm_v0's trailing barrier_all
}

/// passes = 2: 2 blocks = 4 AIV workers, 8 row tiles (2 per worker), 2 column chunks per row.
/// passes = 1: the [8, 256] row tile stays in UB; 2 fp32 chunks per tile, 2 tiles per worker.
inline ExampleCase rms_norm_case(int passes) {
  const int M = 64, N = 256;
  return {
      passes == 1 ? "rms_norm passes=1" : "rms_norm",
      build_kernel(
          find_kernel("rms_norm"),
          sizes({{"M", M}, {"N", N}, {"rM", 8}, {"bN", 128}, {"blocks", 2}, {"passes", passes}})),
      [=](Device& dev) -> std::vector<Arg> {
        return {randn(dev, {M, N}, bf16, 3), uniform(dev, {N}, bf16, 4, 0.5, 1.5),
                Tensor::empty(dev, {M, N}, bf16), 1e-6};
      },
      {}};
}

inline ExampleCase flash_attention_pipelined_case() {
  const int S = 256, D = 256, bM = 32, bN = 64;
  return {
      "flash_attention_pipelined",
      build_kernel(find_kernel("flash_attention_pipelined"),
                   sizes({{"S", S}, {"D", D}, {"bM", bM}, {"bN", bN}, {"bK", 128}, {"bD", 128}})),
      [=](Device& dev) { return fa_args(dev, S, D, bM, bN, 2); },
      {}};
}

/// 2 x 2 tiles on 2 AICs (2 tiles each), 4 panels of 2 steps per tile: every slot is reused
/// within a tile and across the tile boundary, and the FIX -> M flag exists.
inline ExampleCase gemm_pipelined_case() {
  return {"gemm_pipelined",
          build_kernel(find_kernel("gemm_pipelined"),
                       sizes({{"M", 256}, {"N", 512}, {"K", 512}, {"kL1", 128}, {"blocks", 2}})),
          [](Device& dev) -> std::vector<Arg> {
            return {uniform(dev, {256, 512}, f16, 1), uniform(dev, {512, 512}, f16, 2),
                    Tensor::empty(dev, {256, 512}, f16)};
          },
          {}};
}

}  // namespace tl
