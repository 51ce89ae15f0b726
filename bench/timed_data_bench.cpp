// Timed mode with data against timing only (issue 31: the simulated-time-order replay within
// 3x of timing-only): one launch per iteration of a mid-size kernel in each mode, fast mode for
// scale. The time is the process's CPU time (a streamed timing-only launch runs its interpreter
// on other threads than the timing model's), so a loaded machine's wall clock does not enter.
//
//   ./build/default/bench/timed_data_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"

namespace {

enum Mode { kFast = 0, kTimingOnly = 1, kTimedData = 2 };

void launch(benchmark::State& st, const std::string& kernel,
            const std::map<std::string, std::string>& sets) {
  const Mode mode = static_cast<Mode>(st.range(0));
  auto f = tl::build_kernel(tl::find_kernel(kernel), sets);
  auto kern = tl::compile(f);
  tl::Device dev;
  std::vector<tl::Arg> args;
  for (const auto& p : f->params) {
    if (!p.is_tensor()) {
      args.emplace_back(1e-6);  // RMSNorm's eps, the only scalar of these kernels
      continue;
    }
    std::vector<int64_t> shape;
    for (const auto& s : p.tensor->shape) shape.push_back(*tl::as_const_int(s));
    args.emplace_back(tl::Tensor::empty(dev, shape, p.tensor->dtype));
  }
  tl::npu::Profile prof;
  tl::LaunchOptions opt;
  opt.threads = 1;
  if (mode != kFast) opt.profile = &prof;
  opt.timing_only = mode == kTimingOnly;
  opt.profile_instructions = false;
  for (auto _ : st) kern.launch(dev, args, opt);
  st.counters["events"] = static_cast<double>(prof.events);
  st.counters["simulated_us"] = prof.total_us;
  st.counters["replay_skipped"] = prof.replay_skipped;
  st.SetLabel(mode == kFast ? "fast" : mode == kTimingOnly ? "timing only" : "timed with data");
}

void BM_RmsNorm4096x7168(benchmark::State& st) {
  launch(st, "rms_norm", {{"M", "4096"}, {"N", "7168"}});
}
void BM_FlashAttentionS1024(benchmark::State& st) {
  launch(st, "flash_attention_pipelined",
         {{"H", "12"}, {"S", "1024"}, {"D", "128"}, {"bD", "128"}});
}
BENCHMARK(BM_RmsNorm4096x7168)
    ->ArgName("mode")
    ->DenseRange(0, 2)
    ->Iterations(1)
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kSecond);
BENCHMARK(BM_FlashAttentionS1024)
    ->ArgName("mode")
    ->DenseRange(0, 2)
    ->Iterations(1)
    ->MeasureProcessCPUTime()
    ->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
