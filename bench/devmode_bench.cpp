// Developer mode at shapes too large for a ctest (issue 13, must-show 2): simulated cycles of
// flash_attention_dev with num_stages = 1 and 2 and of the pipelined expert twin at B = 1,
// H = 16, S = 4096, D = 128 and at S = 512, D = 512 (P V computed in column chunks), and of
// gemm_dev (1 and 2 stages) against gemm_pipelined at 2048^3 and 4096^3. Each benchmark records one
// timed launch (timing only) and reports the simulated cycles as a counter; the host time is the
// simulator's, not the figure of merit. Tens of seconds per FlashAttention row.
//
//   ./build/default/bench/devmode_bench --benchmark_out=bench/results/devmode.json
//   --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"

namespace {

double simulated_cycles(const std::string& kernel, const std::map<std::string, std::string>& sets) {
  auto f = tl::build_kernel(tl::find_kernel(kernel), sets);
  auto kern = tl::compile(f);
  tl::Device dev;
  std::vector<tl::Arg> args;
  for (const auto& p : f->params) {
    std::vector<int64_t> shape;
    for (const auto& s : p.tensor->shape) shape.push_back(*tl::as_const_int(s));
    args.emplace_back(tl::Tensor::empty(dev, shape, p.tensor->dtype));
  }
  tl::npu::Profile prof;
  tl::LaunchOptions opt;
  opt.profile = &prof;
  opt.timing_only = true;
  kern.launch(dev, args, opt);
  return prof.total_cycles;
}

void run(benchmark::State& st, const std::string& kernel,
         const std::map<std::string, std::string>& sets) {
  double cycles = 0;
  for (auto _ : st) cycles = simulated_cycles(kernel, sets);
  st.counters["simulated_cycles"] = cycles;
}

const std::map<std::string, std::string> kFa = {{"H", "16"}, {"S", "4096"}, {"D", "128"}};

void BM_FlashAttentionDev1Stage(benchmark::State& st) {
  auto s = kFa;
  s["num_stages"] = "1";
  run(st, "flash_attention_dev", s);
}
void BM_FlashAttentionDev2Stages(benchmark::State& st) {
  run(st, "flash_attention_dev", kFa);
}
void BM_FlashAttentionPipelinedExpert(benchmark::State& st) {
  auto s = kFa;
  s["bD"] = "128";
  run(st, "flash_attention_pipelined", s);
}
const std::map<std::string, std::string> kFaD512 = {{"S", "512"}, {"D", "512"}};
void BM_FlashAttentionDevD512(benchmark::State& st) {
  auto s = kFaD512;
  s["num_stages"] = std::to_string(st.range(0));
  run(st, "flash_attention_dev", s);
}
void BM_FlashAttentionPipelinedExpertD512(benchmark::State& st) {
  run(st, "flash_attention_pipelined", kFaD512);
}
void BM_GemmDev(benchmark::State& st) {
  const std::string n = std::to_string(st.range(0));
  run(st, "gemm_dev", {{"M", n}, {"N", n}, {"K", n}, {"num_stages", std::to_string(st.range(1))}});
}
void BM_GemmPipelinedExpert(benchmark::State& st) {
  const std::string n = std::to_string(st.range(0));
  run(st, "gemm_pipelined", {{"M", n}, {"N", n}, {"K", n}});
}

BENCHMARK(BM_FlashAttentionDev1Stage)->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(BM_FlashAttentionDev2Stages)->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(BM_FlashAttentionPipelinedExpert)->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(BM_FlashAttentionDevD512)->Arg(1)->Arg(2)->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(BM_FlashAttentionPipelinedExpertD512)->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(BM_GemmDev)
    ->Args({2048, 1})
    ->Args({2048, 2})
    ->Args({4096, 2})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);
BENCHMARK(BM_GemmPipelinedExpert)->Arg(2048)->Arg(4096)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
