// Compile latency (see bench/README.md, "compile_bench"):
//
//   BM_DslToKernel/<k>   build_kernel (run the C++ DSL generator) + tl::compile with the JIT
//                        cache disabled: verify, lower, plan, build the executable program.
//                        Goal: < 50 ms for gemm and flash_attention.
//   BM_Compile/<k>       tl::compile alone (cache disabled) on a prebuilt PrimFunc.
//   BM_MemoryHit/<k>     tl::compile of an equal PrimFunc built anew, answered from the
//                        in-memory cache (structural hash + lookup + structural comparison).
//                        Goal: < 100 us.
//   BM_MemoryHitSameObject/<k>  tl::compile of the very PrimFunc object already compiled (a
//                        pointer lookup).
//   BM_DiskHit/<k>       tl::compile answered from the disk cache after the memory cache was
//                        cleared (read file, parse the lowered IR, build the program).
//
// <k> is an expert example at its registered default sizes: gemm, flash_attention,
// rms_norm_dynamic. The disk benchmarks use a private temporary directory.
//
// Build and run (Release, own build dir), writing JSON next to the committed baseline:
//   cmake -S . -B build/jit-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DTL_BUILD_TESTS=OFF
//   cmake --build build/jit-release --target compile_bench
//   ./build/jit-release/bench/compile_bench --benchmark_out=bench/results/compile.json
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "tl/jit.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"

namespace {

tl::PrimFunc build(const std::string& name) {
  return tl::build_kernel(tl::find_kernel(name));
}

tl::CompileOptions no_cache() {
  tl::CompileOptions o;
  o.cache = false;
  return o;
}

/// A private cache directory for the process, removed at exit.
const std::string& bench_cache_dir() {
  struct Dir {
    std::string path;
    Dir() {
      std::string tmpl =
          (std::filesystem::temp_directory_path() / "tl-compile-bench-XXXXXX").string();
      if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
      path = tmpl;
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Dir d;
  return d.path;
}

void BM_DslToKernel(benchmark::State& state, const std::string& name) {
  for (auto _ : state) {
    auto k = tl::compile(build(name), tl::default_target(), no_cache());
    benchmark::DoNotOptimize(&k.program());
  }
  state.SetLabel("build_kernel + compile, cache off");
}

void BM_Compile(benchmark::State& state, const std::string& name) {
  tl::PrimFunc f = build(name);
  for (auto _ : state) {
    auto k = tl::compile(f, tl::default_target(), no_cache());
    benchmark::DoNotOptimize(&k.program());
  }
  state.SetLabel("compile, cache off");
}

void BM_MemoryHit(benchmark::State& state, const std::string& name) {
  tl::CompileOptions opt;
  opt.disk_cache = false;
  tl::jit::clear_cache();
  tl::PrimFunc f = build(name);
  auto first = tl::compile(f, tl::default_target(), opt);
  tl::PrimFunc g = build(name);  // an equal function, not the same object
  for (auto _ : state) {
    auto k = tl::compile(g, tl::default_target(), opt);
    if (&k.program() != &first.program()) state.SkipWithError("memory cache missed");
    benchmark::DoNotOptimize(&k.program());
  }
  tl::jit::clear_cache();
  state.SetLabel("compile, in-memory hit, equal PrimFunc built anew");
}

void BM_MemoryHitSameObject(benchmark::State& state, const std::string& name) {
  tl::CompileOptions opt;
  opt.disk_cache = false;
  tl::jit::clear_cache();
  tl::PrimFunc f = build(name);
  auto first = tl::compile(f, tl::default_target(), opt);
  for (auto _ : state) {
    auto k = tl::compile(f, tl::default_target(), opt);
    if (&k.program() != &first.program()) state.SkipWithError("memory cache missed");
    benchmark::DoNotOptimize(&k.program());
  }
  tl::jit::clear_cache();
  state.SetLabel("compile, in-memory hit, same PrimFunc object");
}

void BM_DiskHit(benchmark::State& state, const std::string& name) {
  tl::CompileOptions opt;
  opt.cache_dir = bench_cache_dir();
  tl::PrimFunc f = build(name);
  tl::jit::clear_cache();
  tl::compile(f, tl::default_target(), opt);  // writes the artifact
  tl::jit::reset_cache_stats();
  for (auto _ : state) {
    state.PauseTiming();
    tl::jit::clear_cache();
    state.ResumeTiming();
    auto k = tl::compile(f, tl::default_target(), opt);
    benchmark::DoNotOptimize(&k.program());
  }
  if (tl::jit::cache_stats().disk_hits != static_cast<uint64_t>(state.iterations()))
    state.SkipWithError("disk cache missed");
  tl::jit::clear_cache();
  state.SetLabel("compile, disk hit (parse + build)");
}

#define TL_COMPILE_BENCH(fn, unit)                                                      \
  BENCHMARK_CAPTURE(fn, gemm, std::string("gemm"))->Unit(unit);                         \
  BENCHMARK_CAPTURE(fn, flash_attention, std::string("flash_attention"))->Unit(unit);   \
  BENCHMARK_CAPTURE(fn, rms_norm_dynamic, std::string("rms_norm_dynamic"))->Unit(unit); \
  BENCHMARK_CAPTURE(fn, gemm_dev, std::string("gemm_dev"))->Unit(unit);                 \
  BENCHMARK_CAPTURE(fn, flash_attention_dev, std::string("flash_attention_dev"))->Unit(unit)

TL_COMPILE_BENCH(BM_DslToKernel, benchmark::kMillisecond);
TL_COMPILE_BENCH(BM_Compile, benchmark::kMillisecond);
TL_COMPILE_BENCH(BM_MemoryHit, benchmark::kMicrosecond);
TL_COMPILE_BENCH(BM_MemoryHitSameObject, benchmark::kMicrosecond);
TL_COMPILE_BENCH(BM_DiskHit, benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
