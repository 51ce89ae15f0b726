// Emission time of the AscendC backend (tl/ascendc.h, docs/ascendc.md):
//
//   BM_EmitAscendC/<k>   ascendc::emit on the lowered kernel (lowering is done once, outside
//                        the timed loop): the emitter's own time, per example kernel.
//
// Counters: `bytes` and `lines` of the emitted file (the size the issue asks to report).
// <k> is every example that emits (tests/ascendc/ascendc_emit_test.cpp lists the others).
//
// Build and run (Release, own build dir), writing JSON next to the committed baselines:
//   cmake -S . -B build/jit-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DTL_BUILD_TESTS=OFF
//   cmake --build build/jit-release --target ascendc_emit_bench
//   ./build/jit-release/bench/ascendc_emit_bench --benchmark_out=bench/results/ascendc_emit.json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>

#include "tl/ascendc.h"
#include "tl/kernel_registry.h"
#include "tl/pass.h"

namespace {

void BM_EmitAscendC(benchmark::State& state, const std::string& name) {
  const tl::Target& t = tl::default_target();
  const tl::PrimFunc f = tl::lower(tl::build_kernel(tl::find_kernel(name)), t);
  std::string text;
  for (auto _ : state) {
    text = tl::ascendc::emit(f, t);
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["bytes"] = static_cast<double>(text.size());
  state.counters["lines"] = static_cast<double>(std::count(text.begin(), text.end(), '\n'));
}

const int registered = [] {
  for (const char* k : {"add_dev", "copy_gm_l1", "copy_gm_ub", "elementwise_add", "flash_attention",
                        "flash_attention_dev", "flash_attention_pipelined", "gelu", "gelu_dev",
                        "gemm", "gemm_dev", "gemm_pipelined", "matmul_add_dev", "minicv",
                        "rms_norm", "rms_norm_dev", "rms_norm_dynamic", "softmax_dev", "ring_sum"})
    benchmark::RegisterBenchmark(("BM_EmitAscendC/" + std::string(k)).c_str(), BM_EmitAscendC,
                                 std::string(k))
        ->Unit(benchmark::kMicrosecond);
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
