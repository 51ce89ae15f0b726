// The benchmark baselines (tests/ops/ops_bench.h, docs/ops.md "Benchmarks") of the ops that
// moved onto launch(): SwiGLU forward and backward, softmax forward and backward, the top-k
// gate forward and backward, and GEMM, at the shapes issue 30 asks for. One file for them all,
// baseline tests/ops/baselines/ops_bench_test.jsonl. Opt-in: OPS_TILELANG_BENCH=1 compares,
// =update rewrites; the gtest is OpsBench.ops_bench_test.
#include "ops/ops_bench.h"
#include "cann_ops_tilelang/activation.h"
#include "cann_ops_tilelang/gemm.h"
#include "cann_ops_tilelang/moe.h"
#include "cann_ops_tilelang/softmax.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

std::vector<opsbench::Case> bench_cases() {
  std::vector<opsbench::Case> v;
  const DType bf = DType::BFloat16;
  {
    const int64_t T = 1024, H = 9216;  // x [1024, 18432]
    v.push_back({"swiglu", "1024x18432 bfloat16 clamp 10", [=](tl::Device& d) {
                   swiglu(tl::Tensor::empty(d, {T, 2 * H}, bf), {}, {.clamp = 10.0});
                   return swiglu_cost(T, H, bf, false, false, true);
                 }});
    v.push_back({"swiglu", "1024x18432 bfloat16", [=](tl::Device& d) {
                   swiglu(tl::Tensor::empty(d, {T, 2 * H}, bf));
                   return swiglu_cost(T, H, bf, false, false, false);
                 }});
    v.push_back({"swiglu_backward", "1024x18432 bfloat16 clamp 10", [=](tl::Device& d) {
                   swiglu_backward(tl::Tensor::empty(d, {T, H}, bf),
                                   tl::Tensor::empty(d, {T, 2 * H}, bf), {}, {.clamp = 10.0});
                   return swiglu_cost(T, H, bf, true, false, true);
                 }});
    // Every variant issue 30 holds to 70 % of the HBM roofline (docs/ops.md, "SwiGLU"): the
    // per-token weight (fp32, MoE routing weights) forward and backward, the plain backward.
    v.push_back({"swiglu", "1024x18432 bfloat16 clamp 10 weight", [=](tl::Device& d) {
                   swiglu(tl::Tensor::empty(d, {T, 2 * H}, bf),
                          tl::Tensor::empty(d, {T}, tl::DType::Float32), {.clamp = 10.0});
                   return swiglu_cost(T, H, bf, false, true, true);
                 }});
    v.push_back(
        {"swiglu_backward", "1024x18432 bfloat16", [=](tl::Device& d) {
           swiglu_backward(tl::Tensor::empty(d, {T, H}, bf), tl::Tensor::empty(d, {T, 2 * H}, bf));
           return swiglu_cost(T, H, bf, true, false, false);
         }});
    v.push_back({"swiglu_backward", "1024x18432 bfloat16 clamp 10 weight", [=](tl::Device& d) {
                   swiglu_backward(tl::Tensor::empty(d, {T, H}, bf),
                                   tl::Tensor::empty(d, {T, 2 * H}, bf),
                                   tl::Tensor::empty(d, {T}, tl::DType::Float32), {.clamp = 10.0});
                   return swiglu_cost(T, H, bf, true, true, true);
                 }});
  }
  for (auto [M, N] : {std::pair<int64_t, int64_t>{4096, 7168}, {1024, 129280}, {34, 130}}) {
    const std::string s = fmt::format("{}x{} bfloat16", M, N);
    v.push_back({"softmax", s, [=](tl::Device& d) {
                   softmax(tl::Tensor::empty(d, {M, N}, bf));
                   return softmax_cost(M, N, bf, false);
                 }});
    v.push_back(
        {"softmax_backward", s, [=](tl::Device& d) {
           softmax_backward(tl::Tensor::empty(d, {M, N}, bf), tl::Tensor::empty(d, {M, N}, bf));
           return softmax_cost(M, N, bf, true);
         }});
  }
  {
    const int64_t T = 4001, E = 256, k = 8;
    v.push_back({"topk_gate", "T=4001 E=256 k=8 bfloat16 sigmoid bias", [=](tl::Device& d) {
                   topk_gate(tl::Tensor::empty(d, {T, E}, bf),
                             tl::Tensor::empty(d, {E}, DType::Float32), {.k = k});
                   return topk_gate_cost(T, E, k, bf, true);
                 }});
    v.push_back({"topk_gate_backward", "T=4001 E=256 k=8 bfloat16 sigmoid", [=](tl::Device& d) {
                   // zeros: the indices are all expert 0, a valid input (timing only)
                   topk_gate_backward(tl::Tensor::empty(d, {T, k}, DType::Float32),
                                      tl::Tensor::empty(d, {T, E}, bf),
                                      tl::Tensor::empty(d, {T, k}, DType::Int32), {.k = k});
                   return topk_gate_backward_cost(T, E, k, bf);
                 }});
  }
  for (auto [M, N, K] :
       {std::tuple<int64_t, int64_t, int64_t>{4096, 4096, 4096}, {1142, 1230, 1079}}) {
    const DType f16 = DType::Float16;
    v.push_back({"gemm", fmt::format("{}x{}x{} float16", M, N, K), [=](tl::Device& d) {
                   gemm(tl::Tensor::empty(d, {M, K}, f16), tl::Tensor::empty(d, {K, N}, f16));
                   return gemm_cost(M, N, K, f16, f16);
                 }});
  }
  // log-softmax both ways at the two softmax shapes (the expert schedules' other kernels).
  for (auto [M, N] : {std::pair<int64_t, int64_t>{4096, 7168}, {1024, 129280}}) {
    const std::string s = fmt::format("{}x{} bfloat16", M, N);
    v.push_back({"log_softmax", s, [=](tl::Device& d) {
                   log_softmax(tl::Tensor::empty(d, {M, N}, bf));
                   return softmax_cost(M, N, bf, false);
                 }});
    v.push_back(
        {"log_softmax_backward", s, [=](tl::Device& d) {
           log_softmax_backward(tl::Tensor::empty(d, {M, N}, bf), tl::Tensor::empty(d, {M, N}, bf));
           return softmax_cost(M, N, bf, true);
         }});
  }
  return v;
}
OPS_BENCH(ops_bench_test, bench_cases())

}  // namespace
