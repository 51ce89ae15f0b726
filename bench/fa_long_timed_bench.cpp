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
#include <fmt/format.h>
#include <sys/resource.h>

#include <cstdlib>
#include <iostream>
#include <map>

#include "cann_ops_tilelang/attention.h"
#include "tl/npu/npu.h"
#include "tl/npu/report.h"
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

// Launches the library kernel of `key` timing-only on empty [B, S, H * D] tensors (q, k, v, o),
// lse and the host IDX tile, and sets the busy counters both benchmarks below report.
void launch_and_count(benchmark::State& st, const cann_ops_tilelang::FlashAttentionKey& key,
                      const tl::CompiledKernel& kern, tl::Device& dev, int64_t B, int64_t S,
                      int64_t H, int64_t D, tl::npu::Profile& prof, bool instructions) {
  std::vector<tl::Arg> args;
  for (int i = 0; i < 4; ++i)
    args.emplace_back(tl::Tensor::empty(dev, {B, S, H * D}, tl::DType::BFloat16));
  args.emplace_back(tl::Tensor::empty(dev, {B, H, S}, tl::DType::Float32));
  args.emplace_back(cann_ops_tilelang::flash_attention_idx(dev, key));
  tl::LaunchOptions opt;
  opt.profile = &prof;
  opt.timing_only = true;
  opt.profile_instructions = instructions;
  for (auto _ : st) kern.launch(dev, args, opt);
  st.counters["simulated_us"] = prof.total_us;
  // The GM traffic every core's copies move through the L2 (A2's model: 5 TB/s shared by all
  // cores, docs/hardware.md section 4), in TB/s of simulated time: at the must-show shape this,
  // not one core's pipe, is what bounds the kernel (docs/ops.md, the fagm round).
  st.counters["gm_TBps"] = prof.gm_bytes / (prof.total_us * 1e-6) / 1e12;
  // The share of those bytes the L2 model charges to HBM (misses and write-backs, timing_l2.h),
  // in TB/s against the 1.456 TB/s HBM streams: whether the K/V re-reads get the L2's rate.
  st.counters["hbm_TBps"] = prof.gm_hbm_bytes / (prof.total_us * 1e-6) / 1e12;
  using tl::CoreKind;
  using tl::Pipe;
  st.counters["aiv_V"] = prof.busy_ratio(Pipe::V, CoreKind::Vector);
  st.counters["aiv_MTE2"] = prof.busy_ratio(Pipe::MTE2, CoreKind::Vector);
  st.counters["aic_MTE2"] = prof.busy_ratio(Pipe::MTE2, CoreKind::Cube);
  st.counters["aic_FIX"] = prof.busy_ratio(Pipe::FIX, CoreKind::Cube);
  st.counters["aic_M"] = prof.busy_ratio(Pipe::M, CoreKind::Cube);
  st.counters["aic_MTE1"] = prof.busy_ratio(Pipe::MTE1, CoreKind::Cube);
}

// The issue-30 must-show shapes on A2 (docs/ops.md, "FlashAttention forward"): bf16, BSHD, H = 16,
// D = 128, causal or not; `key_seq` is the sequence length the key is chosen for (S or 0; the
// library now takes one schedule for every length, so both give the same kernel). The figure
// docs/ops.md quotes is simulated_us, with the busy fractions of the pipes the step cycle runs
// through.
//   ./build/default/bench/fa_long_timed_bench --benchmark_filter='MustShow/B:4/S:4096/causal:0'
void BM_FlashAttentionMustShow(benchmark::State& st) {
  const int64_t B = st.range(0), S = st.range(1), H = 16, D = 128;
  const bool causal = st.range(2) != 0;
  const tl::Target& target = tl::get_target("A2");
  tl::Device dev(target);
  auto key = cann_ops_tilelang::flash_attention_key(
      tl::DType::BFloat16, H, D, causal, cann_ops_tilelang::AttentionLayout::BSHD,
      0.08838834764831845, target, st.range(3) != 0 ? S : 0);  // 1 / sqrt(D)
  auto kern = tl::compile(cann_ops_tilelang::flash_attention_kernel(key), target);
  tl::npu::Profile prof;
  launch_and_count(st, key, kern, dev, B, S, H, D, prof, false);
  st.counters["stages"] = static_cast<double>(key.stages);
  st.counters["skew"] = static_cast<double>(key.skew);
}
BENCHMARK(BM_FlashAttentionMustShow)
    ->ArgNames({"B", "S", "causal", "key_seq"})
    ->ArgsProduct({{1}, {273, 1024, 2048, 4096}, {0, 1}, {0, 1}})
    ->ArgsProduct({{4}, {4096}, {0, 1}, {0, 1}})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

// The must-show shapes with the tile schedule given (B, S, causal, bM, bN, stages, skew), for
// comparing schedules on one binary (docs/ops.md, FlashAttention "Performance"):
//   ./build/default/bench/fa_long_timed_bench --benchmark_filter='Tiles/B:4'
void BM_FlashAttentionTiles(benchmark::State& st) {
  const int64_t B = st.range(0), S = st.range(1), H = 16, D = 128;
  const tl::Target& target = tl::get_target("A2");
  tl::Device dev(target);
  auto key = cann_ops_tilelang::flash_attention_key(tl::DType::BFloat16, H, D, st.range(2) != 0,
                                                    cann_ops_tilelang::AttentionLayout::BSHD,
                                                    0.08838834764831845, target, S);
  key.block_m = st.range(3);
  key.block_n = st.range(4);
  key.stages = st.range(5);
  key.skew = st.range(6);
  auto kern = tl::compile(cann_ops_tilelang::flash_attention_kernel(key), target);
  tl::npu::Profile prof;
  // FA_DUMP=1: the compiler's report (placement, slots) and, per instruction kind, the cycles of
  // block 0's AIC and AIV 0 (where the vector work of a step goes).
  const bool dump = std::getenv("FA_DUMP") != nullptr;
  launch_and_count(st, key, kern, dev, B, S, H, D, prof, dump);
  if (dump) {
    tl::npu::print_report(tl::npu::make_report(cann_ops_tilelang::flash_attention_kernel(key),
                                               kern.func(), target, nullptr),
                          std::cout);
    std::map<std::string, std::pair<double, int>> per;
    for (const auto& in : prof.instrs) {
      if (in.core != 1 && in.core != 0) continue;
      auto& e =
          per[fmt::format("c{} {} {} {}", in.core, static_cast<int>(in.pipe), in.name, in.loc)];
      e.first += in.end - in.start;
      e.second += 1;
    }
    for (const auto& [k, v] : per) fmt::print("{:10.0f} {:6d} {}\n", v.first, v.second, k);
  }
}
BENCHMARK(BM_FlashAttentionTiles)
    ->ArgNames({"B", "S", "causal", "bM", "bN", "stages", "skew"})
    ->Args({1, 1024, 0, 64, 256, 2, 1})
    ->Args({1, 1024, 0, 128, 128, 2, 1})
    ->Args({1, 1024, 0, 128, 128, 3, 2})
    ->Args({1, 1024, 1, 128, 128, 3, 2})
    ->Args({1, 1024, 0, 128, 128, 3, 1})
    ->Args({1, 1024, 0, 128, 128, 4, 2})
    ->Args({1, 1024, 0, 128, 128, 4, 3})
    ->Args({1, 273, 0, 128, 128, 2, 1})
    ->Args({1, 273, 0, 128, 128, 3, 2})
    ->Args({1, 4096, 0, 64, 256, 3, 2})
    ->Args({1, 4096, 0, 128, 128, 2, 1})
    ->Args({1, 4096, 0, 128, 128, 3, 2})
    ->Args({4, 4096, 0, 64, 256, 3, 2})
    ->Args({4, 4096, 0, 128, 128, 2, 1})
    ->Args({4, 4096, 0, 128, 128, 3, 2})
    ->Args({4, 4096, 1, 64, 256, 3, 2})
    ->Args({4, 4096, 1, 128, 128, 2, 1})
    ->Args({4, 4096, 1, 128, 128, 3, 2})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
