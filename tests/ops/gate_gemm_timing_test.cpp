// Simulated time of the library's topk_gate and gemm kernels at the must-show shapes (issue 30)
// against their rooflines on A2, from the timing model (timing_only launches: no data, so
// 4096^3 costs about a second). The figures are quoted in docs/ops.md; the bounds below guard
// them against a regression (the simulator is deterministic).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "cann_ops_tilelang/gemm.h"
#include "cann_ops_tilelang/moe.h"
#include "tl/kernel_registry.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

tl::npu::Profile timed(const tl::PrimFunc& f, const std::vector<tl::Arg>& args, tl::Device& dev) {
  auto k = tl::compile(f, dev.target());
  tl::npu::Trace trace;
  k.launch(dev, args, {.trace = &trace, .timing_only = true});
  return tl::npu::simulate_timing(trace, dev.target());
}

/// Cube peak on `t`: every AIC multiplies one 16 x 16 x 16 fp16 fractal per cycle.
double cube_peak(const tl::Target& t) {
  return t.num_aic * t.clock_ghz * 1e9 * 4096 * 2;
}

double gemm_fraction(int64_t M, int64_t N, int64_t K, double* us) {
  tl::Device dev;
  Checker c("gemm", tl::Loc::current());
  auto key = gemm_key(DType::Float16, DType::Float16, N, K, false, false, dev.target(), c);
  auto p = timed(gemm_kernel(key),
                 {tl::Tensor::empty(dev, {M, K}, DType::Float16),
                  tl::Tensor::empty(dev, {K, N}, DType::Float16),
                  tl::Tensor::empty(dev, {M, N}, DType::Float16)},
                 dev);
  *us = p.total_us;
  const double frac = 2.0 * M * N * K / (p.total_us * 1e-6) / cube_peak(dev.target());
  std::printf("  gemm %ldx%ldx%ld fp16: %.1f us, %.1f %% of cube peak, cube busy %.3f, mte2 %.3f\n",
              static_cast<long>(M), static_cast<long>(N), static_cast<long>(K), p.total_us,
              100 * frac, p.busy_ratio(tl::Pipe::M, tl::CoreKind::Cube),
              p.busy_ratio(tl::Pipe::MTE2, tl::CoreKind::Cube));
  return frac;
}

// Also issue 30's "developer-mode kernel within 0.95x of its expert twin": the library kernel
// (developer mode, M dynamic) against the expert gemm_pipelined at a compile-time 4096^3. It was
// 0.92x while every A panel of the dynamic M paid a zero fill's MTE2 barrier (docs/ops.md,
// "GEMM"); 1.04x since legalize_copies fills only a partial K.
TEST(GateGemmTiming, Gemm4096CubedAgainstCubePeak) {
  double us = 0;
  EXPECT_GE(gemm_fraction(4096, 4096, 4096, &us), 0.75);
  tl::Device dev;
  const std::map<std::string, std::string> p = {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}};
  auto e = timed(tl::build_kernel(tl::find_kernel("gemm_pipelined"), p),
                 {tl::Tensor::empty(dev, {4096, 4096}, DType::Float16),
                  tl::Tensor::empty(dev, {4096, 4096}, DType::Float16),
                  tl::Tensor::empty(dev, {4096, 4096}, DType::Float16)},
                 dev);
  std::printf("  gemm_pipelined 4096^3: %.1f us; the library kernel at %.3fx\n", e.total_us,
              e.total_us / us);
  EXPECT_GE(e.total_us / us, 0.95);
}

TEST(GateGemmTiming, GemmTailShapeAgainstCubePeak) {
  double us = 0;
  EXPECT_GE(gemm_fraction(1142, 1230, 1079, &us), 0.30);
}

TEST(GateGemmTiming, TopkGateT4001AgainstHbm) {
  tl::Device dev;
  Checker c("topk_gate", tl::Loc::current());
  const int64_t T = 4001, E = 256, k = 8;
  auto key =
      topk_gate_key(DType::BFloat16, E, k, GateScoring::Sigmoid, true, true, dev.target(), c);
  auto p = timed(
      topk_gate_kernel(key),
      {tl::Tensor::empty(dev, {T, E}, DType::BFloat16), tl::Tensor::empty(dev, {E}, DType::Float32),
       tl::Tensor::empty(dev, {T, k}, DType::Float32), tl::Tensor::empty(dev, {T, k}, DType::Int32),
       1.0},
      dev);
  const double bytes = T * E * 2.0 + E * 4.0 + T * k * 8.0,
               roof_us = bytes / dev.target().costs.hbm_bytes_per_s * 1e6;
  std::printf(
      "  topk_gate T=%ld E=%ld k=%ld bf16: %.1f us, HBM roofline %.2f us (%.1f %%), V busy "
      "%.3f, MTE2 %.3f\n",
      static_cast<long>(T), static_cast<long>(E), static_cast<long>(k), p.total_us, roof_us,
      100 * roof_us / p.total_us, p.busy_ratio(tl::Pipe::V, tl::CoreKind::Vector),
      p.busy_ratio(tl::Pipe::MTE2, tl::CoreKind::Vector));
  EXPECT_GT(p.total_us, 0);
}

}  // namespace
