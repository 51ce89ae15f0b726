// The top-k gate's backward public function (include/cann_ops_tilelang/moe.h): validation
// (the forward's rules for the logits and the config, dW and the indices shaped [T, k], the
// indices' values in [0, E)), the empty-tensor rule, launch parameters from the Target and the
// launch of topk_gate_bwd_kernel.cpp's kernel through launch() (so ScopedRun profiles it).
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

TopkGateKey topk_gate_bwd_key(tl::DType dtype, int64_t experts, int64_t k, GateScoring scoring,
                              bool normalize, const tl::Target& target, const Checker& check) {
  auto budget = vector_budget(target);
  TopkGateKey key{.dtype = dtype,
                  .experts = experts,
                  .k = k,
                  .rows_per_tile = kRowsPerTile,
                  .blocks = budget.blocks,
                  .scoring = scoring,
                  .bias = false,
                  .normalize = normalize};
  const int64_t tile = kRowsPerTile * experts, small = kRowsPerTile * k;
  // s, ds, tmp in fp32; the logits and dz in the I/O dtype when it is not fp32; g, gw, idx,
  // off, w; den and dot.
  int64_t b =
      3 * tile * 4 + (dtype != tl::DType::Float32) * 2 * round32(tile * tl::dtype_bytes(dtype));
  b += small * 4 * 5 + 2 * 32;
  if (b > budget.ub_bytes) {
    check.fail("logits",
               fmt::format("has more experts than a {}-token tile holds in UB: expected at most "
                           "about {} on {} (UB {} bytes), got {}",
                           kRowsPerTile, budget.ub_bytes / (kRowsPerTile * 16), target.name,
                           budget.ub_bytes, experts));
  }
  return key;
}

tl::Tensor topk_gate_backward(const tl::Tensor& dweights, const tl::Tensor& logits,
                              const tl::Tensor& indices, const TopkGateConfig& cfg,
                              const tl::Loc& loc) {
  Checker c("topk_gate_backward", loc);
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
  if (cfg.k < 8 || cfg.k > E || cfg.k % 8 != 0)
    c.fail("k", fmt::format("is out of range: expected a multiple of 8 in [8, {}] (E), got {}", E,
                            cfg.k));
  if (!std::isfinite(cfg.route_scale))
    c.fail("route_scale",
           fmt::format("is not finite: expected a finite number, got {}", cfg.route_scale));
  const int s = static_cast<int>(cfg.scoring);
  if (s < 0 || s > 2)
    c.fail("scoring", fmt::format("is unknown: expected None, Sigmoid or Softmax, got {}", s));
  c.tensor("dweights", dweights);
  c.same_device("dweights", dweights, "logits", logits);
  c.dtype("dweights", dweights, {tl::DType::Float32});
  c.shape("dweights", dweights, {T, cfg.k});
  c.tensor("indices", indices);
  c.same_device("indices", indices, "logits", logits);
  c.dtype("indices", indices, {tl::DType::Int32});
  c.shape("indices", indices, {T, cfg.k});
  // An index outside [0, E) would scatter outside its token's row: refused, not clipped.
  const auto iv = indices.to_vector();
  for (size_t i = 0; i < iv.size(); ++i)
    if (iv[i] < 0 || iv[i] >= static_cast<double>(E))
      c.fail("indices", fmt::format("holds an expert out of range: expected values in [0, {}), "
                                    "got {} at token {}, slot {}",
                                    E, static_cast<int64_t>(iv[i]), i / cfg.k, i % cfg.k));
  tl::Device& dev = *logits.device();
  tl::Tensor dz = tl::Tensor::empty(dev, {T, E}, logits.dtype());
  if (T == 0) return dz;  // no tokens: an empty gradient, no compile, no launch
  auto key =
      topk_gate_bwd_key(logits.dtype(), E, cfg.k, cfg.scoring, cfg.normalize, dev.target(), c);
  auto kernel = cached_kernel("topk_gate_bwd/" + key.str(), dev.target(),
                              [&] { return topk_gate_bwd_kernel(key); });
  launch(kernel, dev, {logits, dweights, indices, dz, cfg.route_scale});
  return dz;
}

OpCost topk_gate_backward_cost(int64_t tokens, int64_t experts, int64_t k, tl::DType dtype) {
  const double te = static_cast<double>(tokens) * experts;
  // The logits read and their gradient written, dW and the indices read; scoring (about 3
  // ops) and its derivative (about 3) per logit.
  return {.bytes = 2 * te * tl::dtype_bytes(dtype) + 8.0 * tokens * k, .vector_ops = 6 * te};
}

}  // namespace cann_ops_tilelang
