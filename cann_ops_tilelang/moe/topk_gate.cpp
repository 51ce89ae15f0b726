// The top-k gate's public function (include/cann_ops_tilelang/moe.h): validation, the
// empty-tensor rule, launch parameters from the Target, output allocation, and the launch of
// topk_gate_kernel.cpp's kernel through the compiled-kernel cache.
#include <fmt/format.h>

#include <cmath>

#include "cann_ops_tilelang/moe.h"

namespace cann_ops_tilelang {
namespace {

constexpr int64_t kRowsPerTile = 8;  // 8 fp32 row sums fill one 32-byte block

int64_t round32(int64_t bytes) {
  return (bytes + 31) / 32 * 32;
}

}  // namespace

std::string TopkGateKey::str() const {
  return fmt::format("dtype={},E={},k={},rM={},blocks={},scoring={},bias={},normalize={}",
                     tl::dtype_name(dtype), experts, k, rows_per_tile, blocks,
                     static_cast<int>(scoring), bias, normalize);
}

TopkGateKey topk_gate_key(tl::DType dtype, int64_t experts, int64_t k, GateScoring scoring,
                          bool bias, bool normalize, const tl::Target& target,
                          const Checker& check) {
  auto budget = vector_budget(target);
  TopkGateKey key{.dtype = dtype,
                  .experts = experts,
                  .k = k,
                  .rows_per_tile = kRowsPerTile,
                  .blocks = budget.blocks,
                  .scoring = scoring,
                  .bias = bias,
                  .normalize = normalize};
  const int64_t tile = kRowsPerTile * experts, small = kRowsPerTile * k;
  int64_t b = tile * 4 + (dtype != tl::DType::Float32) * round32(tile * tl::dtype_bytes(dtype));
  if (bias) b += round32(experts * 4) + 2 * tile * 4;  // bias, biasb, sel
  b += small * 4 * 7 + 32;                             // pairs (2), idxf idx off rowoff w, den
  if (b > budget.ub_bytes) {
    check.fail("logits",
               fmt::format("has more experts than a {}-token tile holds in UB: expected at most "
                           "about {} on {} (UB {} bytes), got {}",
                           kRowsPerTile, budget.ub_bytes / (kRowsPerTile * 16), target.name,
                           budget.ub_bytes, experts));
  }
  return key;
}

TopkGateResult topk_gate(const tl::Tensor& logits, const tl::Tensor& bias,
                         const TopkGateConfig& cfg, const tl::Loc& loc) {
  Checker c("topk_gate", loc);
  c.tensor("logits", logits);
  c.dtype("logits", logits, {tl::DType::BFloat16, tl::DType::Float16, tl::DType::Float32});
  if (logits.ndim() != 2)
    c.fail("logits",
           fmt::format("has the wrong rank: expected 2 dimensions [T, E], got {}", logits.ndim()));
  const int64_t T = logits.dim(0), E = logits.dim(1);
  if (E <= 0 || E % 32 != 0)
    c.fail("logits", fmt::format("has an expert count the sort cannot take: expected E a "
                                 "positive multiple of 32, got {}",
                                 E));
  if (bias.defined()) {
    c.tensor("bias", bias);
    c.same_device("bias", bias, "logits", logits);
    c.dtype("bias", bias, {tl::DType::Float32});
    c.shape("bias", bias, {E});
  }
  if (cfg.k < 8 || cfg.k > E || cfg.k % 8 != 0)
    c.fail("k", fmt::format("is out of range: expected a multiple of 8 in [8, {}] (E), got {}", E,
                            cfg.k));
  if (!std::isfinite(cfg.route_scale))
    c.fail("route_scale",
           fmt::format("is not finite: expected a finite number, got {}", cfg.route_scale));
  const int s = static_cast<int>(cfg.scoring);
  if (s < 0 || s > 2)
    c.fail("scoring", fmt::format("is unknown: expected None, Sigmoid or Softmax, got {}", s));
  tl::Device& dev = *logits.device();
  TopkGateResult out{.weights = tl::Tensor::empty(dev, {T, cfg.k}, tl::DType::Float32),
                     .indices = tl::Tensor::empty(dev, {T, cfg.k}, tl::DType::Int32)};
  if (T == 0) return out;  // no tokens: empty outputs, no compile, no launch
  auto key = topk_gate_key(logits.dtype(), E, cfg.k, cfg.scoring, bias.defined(), cfg.normalize,
                           dev.target(), c);
  auto kernel =
      cached_kernel("topk_gate/" + key.str(), dev.target(), [&] { return topk_gate_kernel(key); });
  std::vector<tl::Arg> args{logits};
  if (bias.defined()) args.emplace_back(bias);
  args.emplace_back(out.weights);
  args.emplace_back(out.indices);
  args.emplace_back(cfg.route_scale);
  launch(kernel, dev, args);
  return out;
}

OpCost topk_gate_cost(int64_t tokens, int64_t experts, int64_t k, tl::DType dtype, bool bias) {
  const double te = static_cast<double>(tokens) * experts;
  // The logits (and the bias) read once, k fp32 weights and k int32 indices written per token;
  // scoring and the bias add about 3 ops per logit (the sort's comparisons are the kernel's
  // choice of algorithm, not counted: the roofline is the least any kernel must do).
  return {.bytes = te * tl::dtype_bytes(dtype) + (bias ? 4.0 * experts : 0) + 8.0 * tokens * k,
          .vector_ops = 3 * te};
}

}  // namespace cann_ops_tilelang
