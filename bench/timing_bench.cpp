// Simulation speed of the timing model: simulated trace events per host second (the trace is
// recorded once, outside the timed loop, with LaunchOptions::timing_only).
#include <benchmark/benchmark.h>

#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"

namespace {

tl::npu::Trace record(const std::string& kernel, const std::map<std::string, std::string>& sets) {
  auto f = tl::build_kernel(tl::find_kernel(kernel), sets);
  auto kern = tl::compile(f);
  tl::Device dev;
  std::vector<tl::Arg> args;
  for (const auto& p : f->params) {
    std::vector<int64_t> shape;
    for (const auto& s : p.tensor->shape) shape.push_back(*tl::as_const_int(s));
    args.emplace_back(tl::Tensor::empty(dev, shape, p.tensor->dtype));
  }
  tl::npu::Trace t;
  kern.launch(dev, args, {.trace = &t, .timing_only = true});
  return t;
}

void run(benchmark::State& st, const tl::npu::Trace& t) {
  int64_t events = 0;
  for (const auto& c : t.cores) events += static_cast<int64_t>(c.events.size());
  double us = 0;
  for (auto _ : st) {
    auto p = tl::npu::simulate_timing(t, tl::default_target());
    us = p.total_us;
    benchmark::DoNotOptimize(p.total_cycles);
  }
  st.SetItemsProcessed(st.iterations() * events);
  st.counters["events"] = static_cast<double>(events);
  st.counters["simulated_us"] = us;
}

void BM_TimingGemm1024(benchmark::State& st) {
  static auto t = record("gemm", {{"M", "1024"}, {"N", "1024"}, {"K", "1024"}});
  run(st, t);
}
void BM_TimingGemm4096(benchmark::State& st) {
  static auto t = record("gemm", {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}});
  run(st, t);
}
void BM_TimingAdd(benchmark::State& st) {
  static auto t = record("elementwise_add", {{"M", "2048"}, {"N", "8192"}});
  run(st, t);
}
BENCHMARK(BM_TimingGemm1024)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TimingGemm4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TimingAdd)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
