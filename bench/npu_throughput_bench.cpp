// Host throughput of the virtual NPU, side by side with the host baselines it should be
// measured against (see bench/README.md for the goals and how to read the ratios):
//
//   BM_RmsNorm   RMSNorm 8192 x 4096 bf16 on the virtual NPU        bytes/s (read X + W, write Y)
//   BM_Memcpy    std::memcpy of X.nbytes() + Y.nbytes() bytes        bytes/s (bytes copied)
//   BM_Gemm      GEMM 2048^3 fp16 on the virtual NPU                  FLOP/s (2 M N K)
//   BM_Sgemm/1   cblas_sgemm 2048^3 fp32, OpenBLAS with 1 thread      FLOP/s
//   BM_Sgemm/2   cblas_sgemm 2048^3 fp32, OpenBLAS with 2 threads     FLOP/s
//
// Kernels are compiled once outside the timed loop, and launched once untimed (the first
// launch on a Device also allocates its cores' on-chip memories, as the memcpy benchmark
// touches its pages first); only launch() is timed. The NPU launches use the default
// LaunchOptions (all hardware threads). RMSNorm uses the one-pass schedule (passes=1).
//
// Build and run (release preset), writing JSON next to the committed baseline:
//   cmake --preset release && cmake --build --preset release -j2 --target npu_throughput_bench
//   ./build/release/bench/npu_throughput_bench --benchmark_out=bench/results/npu_throughput.json
//   --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"
#include "tl/runtime.h"

namespace {

using tl::Tensor;

constexpr int kNormM = 8192, kNormN = 4096;
constexpr int kGemmM = 2048, kGemmN = 2048, kGemmK = 2048;

void BM_RmsNorm(benchmark::State& state) {
  tl::Device dev;
  // A row tile of 8 x 4096 bf16 fits UB twice (X and Y), so the one-pass schedule applies:
  // X is read from GM once (see examples/rms_norm.cpp and bench/README.md).
  auto kern =
      tl::compile(tl::build_kernel(tl::find_kernel("rms_norm"), {{"M", std::to_string(kNormM)},
                                                                 {"N", std::to_string(kNormN)},
                                                                 {"rM", "8"},
                                                                 {"bN", "1024"},
                                                                 {"passes", "1"}}));
  Tensor X = tl::uniform(dev, {kNormM, kNormN}, tl::bf16, 1);
  Tensor W = tl::uniform(dev, {kNormN}, tl::bf16, 2, 0.5, 1.5);
  Tensor Y = Tensor::empty(dev, {kNormM, kNormN}, tl::bf16);
  kern.launch(dev, {X, W, Y, 1e-6});  // warm-up: the first launch also allocates the cores' UB
  for (auto _ : state) {
    kern.launch(dev, {X, W, Y, 1e-6});
    benchmark::DoNotOptimize(Y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * (X.nbytes() + W.nbytes() + Y.nbytes()));
}

void BM_Memcpy(benchmark::State& state) {
  const auto n = static_cast<size_t>(2) * kNormM * kNormN * 2;  // X.nbytes() + Y.nbytes(), bf16
  std::vector<uint8_t> src(n), dst(n);
  std::memset(src.data(), 0x5a, n);  // fault every page in before timing
  std::memset(dst.data(), 0, n);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(n));
}

void BM_Gemm(benchmark::State& state) {
  tl::Device dev;
  auto kern =
      tl::compile(tl::build_kernel(tl::find_kernel("gemm"), {{"M", std::to_string(kGemmM)},
                                                             {"N", std::to_string(kGemmN)},
                                                             {"K", std::to_string(kGemmK)}}));
  Tensor A = tl::uniform(dev, {kGemmM, kGemmK}, tl::f16, 3, -0.1, 0.1);
  Tensor B = tl::uniform(dev, {kGemmK, kGemmN}, tl::f16, 4, -0.1, 0.1);
  Tensor C = Tensor::empty(dev, {kGemmM, kGemmN}, tl::f16);
  kern.launch(dev, {A, B, C});  // warm-up: the first launch also allocates the cores' L1/L0/UB
  for (auto _ : state) {
    kern.launch(dev, {A, B, C});
    benchmark::DoNotOptimize(C.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * kGemmM * kGemmN * kGemmK,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Sgemm(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  openblas_set_num_threads(threads);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
  std::vector<float> a(static_cast<size_t>(kGemmM) * kGemmK),
      b(static_cast<size_t>(kGemmK) * kGemmN), c(static_cast<size_t>(kGemmM) * kGemmN, 0.0f);
  for (auto& x : a) x = dist(rng);
  for (auto& x : b) x = dist(rng);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kGemmM, kGemmN, kGemmK, 1.0f, a.data(),
                kGemmK, b.data(), kGemmN, 0.0f, c.data(), kGemmN);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * kGemmM * kGemmN * kGemmK,
                                                benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = threads;
}

}  // namespace

BENCHMARK(BM_RmsNorm)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_Gemm)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_Sgemm)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

BENCHMARK_MAIN();
