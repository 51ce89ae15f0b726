// Calibration row C7 (docs/calibration.md): the library's FlashAttention forward at B = 1,
// H = 12, D = 128, fp16, non-causal, BHSD, on A3, in timed mode without data (timing only), at
// S = 4096, 8192, 16384 and the row's 32768. Each benchmark is one launch; the counters are the
// simulated time (the figure compared with the published 37.6 ms at S = 32K), the host's peak
// RSS after the launch (getrusage) and the events simulated. The launch streams its trace into
// the timing model and keeps no per-instruction times (LaunchOptions::profile_instructions), so
// its memory does not grow with S; its host time grows as S^2 (an hour or more at 32K on a
// loaded 2-core machine).
//
//   ./build/default/bench/fa_long_timed_bench --benchmark_filter=S:4096
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "cann_ops_tilelang/attention.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"

namespace {

void BM_FlashAttentionC7TimingOnly(benchmark::State& st) {
  const int64_t S = st.range(0), H = 12, D = 128;
  const tl::Target& target = tl::get_target("A3");
  tl::Device dev(target);
  auto key = cann_ops_tilelang::flash_attention_key(tl::DType::Float16, H, D, false,
                                                    cann_ops_tilelang::AttentionLayout::BHSD,
                                                    0.08838834764831845, target);  // 1 / sqrt(D)
  auto kern = tl::compile(cann_ops_tilelang::flash_attention_kernel(key), target);
  std::vector<tl::Arg> args;
  for (int i = 0; i < 4; ++i)
    args.emplace_back(tl::Tensor::empty(dev, {1, H, S, D}, tl::DType::Float16));
  args.emplace_back(tl::Tensor::empty(dev, {1, H, S}, tl::DType::Float32));
  args.emplace_back(cann_ops_tilelang::flash_attention_idx(dev, key));
  tl::npu::Profile prof;
  tl::LaunchOptions opt;
  opt.profile = &prof;
  opt.timing_only = true;
  opt.profile_instructions = false;
  opt.progress_percent = 10;
  for (auto _ : st) kern.launch(dev, args, opt);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  st.counters["simulated_ms"] = prof.total_us / 1e3;
  st.counters["peak_rss_mb"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
  st.counters["events"] = static_cast<double>(prof.events);
}
BENCHMARK(BM_FlashAttentionC7TimingOnly)
    ->ArgName("S")
    ->Arg(4096)
    ->Arg(8192)
    ->Arg(16384)
    ->Arg(32768)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
