// What the stale-data checker (LaunchOptions::check_stale, docs/virtual_npu.md "Stale-data
// checker") costs in fast-mode host time: each kernel launched with the checker off and on, in
// the same run (see bench/README.md):
//
//   BM_Stale/rms_norm/check:0|1         RMSNorm 2048 x 4096 bf16 (one-pass schedule)
//   BM_Stale/gemm/check:0|1             GEMM 1024^3 fp16 (registry tiles)
//   BM_Stale/flash_attention/check:0|1  FlashAttention S = 512, D = 512 fp16 (registry default)
//
// Kernels are compiled outside the timed loop and launched once untimed; only launch() is
// timed, on one host thread, 5 launches, 3 repetitions (the JSON has each and their mean). With the
// checker on the launch also reports no finding (the kernels are clean), which the benchmark
// asserts.
//
//   cmake --preset release && cmake --build --preset release -j2 --target stale_check_bench
//   ./build/release/bench/stale_check_bench --benchmark_out=bench/results/stale_check.json
//   --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"
#include "tl/npu/stale.h"
#include "tl/runtime.h"

namespace {

using tl::Tensor;

struct Case {
  std::string kernel;
  std::map<std::string, std::string> params;
};

const Case kCases[] = {
    {"rms_norm", {{"M", "2048"}, {"N", "4096"}, {"rM", "8"}, {"bN", "1024"}, {"passes", "1"}}},
    {"gemm", {{"M", "1024"}, {"N", "1024"}, {"K", "1024"}}},
    {"flash_attention", {}},
};

/// Random inputs in [-0.5, 0.5] for every tensor parameter (all of constant shape here), 1e-6
/// for a float scalar (RMSNorm's eps).
std::vector<tl::Arg> random_args(tl::Device& dev, const tl::PrimFunc& f) {
  std::vector<tl::Arg> args;
  for (size_t i = 0; i < f->params.size(); ++i) {
    const auto& p = f->params[i];
    if (!p.is_tensor()) {
      args.emplace_back(1e-6);
      continue;
    }
    std::vector<int64_t> shape;
    for (const auto& s : p.tensor->shape) shape.push_back(tl::as_const_int(s).value_or(1));
    args.emplace_back(tl::uniform(dev, shape, p.tensor->dtype, 1 + i, -0.5, 0.5));
  }
  return args;
}

void BM_Stale(benchmark::State& state) {
  const Case& c = kCases[state.range(1)];
  const bool check = state.range(0) != 0;
  state.SetLabel(c.kernel + (check ? " checker on" : " checker off"));
  tl::Device dev;
  auto f = tl::build_kernel(tl::find_kernel(c.kernel), c.params);
  auto kern = tl::compile(f);
  auto args = random_args(dev, f);
  std::vector<tl::npu::StaleFinding> found;
  // One host thread: the two launches compare the same work, less disturbed by the machine's
  // other load than a run on every thread.
  const tl::LaunchOptions opt{.threads = 1, .check_stale = check, .stale_findings = &found};
  kern.launch(dev, args, opt);  // warm-up: the first launch also allocates the cores' memories
  if (!found.empty()) state.SkipWithError(("unexpected finding: " + found[0].str()).c_str());
  for (auto _ : state) {
    kern.launch(dev, args, opt);
    benchmark::ClobberMemory();
  }
}

}  // namespace

// Off and on next to each other for each kernel (the first argument varies fastest), so that
// a change in the machine's load hits both alike.
BENCHMARK(BM_Stale)
    ->ArgsProduct({{0, 1}, {0, 1, 2}})
    ->ArgNames({"check", "kernel"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(5)
    ->Repetitions(3);

BENCHMARK_MAIN();
