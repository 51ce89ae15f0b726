// The MoE domain of cann_ops_tilelang: the top-k routing gate with weight normalisation
// (DeepSeek V3's router, /work/shared/OPS.md "MoE"). Scores [T, E] -> an optional scoring
// function (sigmoid or softmax over the experts) -> an optional bias added for the selection only
// -> the top-k experts per token, exact, ties to the smaller expert index -> weights: the
// unbiased scores of the chosen experts, normalised (w / (1e-20 + sum_k w)) on request and
// multiplied by the routed scaling factor. T, the token count, is the kernel's dynamic symbol.
// Not done: DeepSeek V3's group limiting (top-2 group scores, keep topk_groups of n_groups).
#pragma once
#include <cstdint>
#include <string>

#include "cann_ops_tilelang/core.h"

namespace cann_ops_tilelang {

enum class GateScoring { None = 0, Sigmoid = 1, Softmax = 2 };

struct TopkGateConfig {
  int64_t k = 8;
  GateScoring scoring = GateScoring::Sigmoid;
  bool normalize = true;     // w / (1e-20 + sum_k w)
  double route_scale = 1.0;  // routed_scaling_factor (V3: 2.5), applied after normalising
};

struct TopkGateResult {
  tl::Tensor weights;  // [T, k] fp32
  tl::Tensor indices;  // [T, k] int32, per token in descending biased score, ties: smaller first
};

/// logits: [T, E] bf16/fp16/fp32, contiguous, E a multiple of 32 (whole sort blocks); bias:
/// undefined or [E] fp32 (added to the scores for the choice, not to the weights). k: a multiple
/// of 8 in [8, E] (whole 32-byte rows of fp32 weights and int32 indices). T may be 0 (no launch).
TopkGateResult topk_gate(const tl::Tensor& logits, const tl::Tensor& bias = {},
                         const TopkGateConfig& cfg = {}, TL_LOC);

// ---- kernel generator (compile-time parameters only; T, the tokens, is dynamic) ------------

struct TopkGateKey {
  tl::DType dtype = tl::DType::Float32;  // of the logits
  int64_t experts = 0;                   // E
  int64_t k = 8;
  int64_t rows_per_tile = 8;  // tokens per UB tile
  int64_t blocks = 0;         // most logical blocks launched (two AIVs each)
  GateScoring scoring = GateScoring::Sigmoid;
  bool bias = false;
  bool normalize = true;
  std::string str() const;
};
/// Z [T, E], (Bias [E] fp32), Wt [T, k] fp32, Idx [T, k] int32, scale (fp32 scalar).
tl::PrimFunc topk_gate_kernel(const TopkGateKey& key);
/// The launch parameters topk_gate chooses on a target (blocks from its core count; the tile's
/// UB use checked against its UB size).
TopkGateKey topk_gate_key(tl::DType dtype, int64_t experts, int64_t k, GateScoring scoring,
                          bool bias, bool normalize, const tl::Target& target,
                          const Checker& check);

/// What topk_gate must do at least: the logits (and bias) read once, weights and indices
/// written once; the scoring's and the normalisation's vector element operations.
OpCost topk_gate_cost(int64_t tokens, int64_t experts, int64_t k, tl::DType dtype, bool bias);

// ---- backward ---------------------------------------------------------------------------------

/// The gradient of topk_gate's weights with respect to the logits (docs/ops.md "MoE top-k
/// gate", backward): with s = score(z), w_j = s[indices_j], D = 1e-20 + sum_j w_j and
/// W_j = route_scale * w_j / D (or route_scale * w_j without normalize),
///   dw_i = route_scale * (dW_i - sum_j dW_j w_j / D) / D   (route_scale * dW_i without),
///   ds[e] = sum over j with indices_j == e of dw_j (0 for experts not chosen),
///   dz = ds (None), ds s (1 - s) (Sigmoid), s (ds - sum_e ds_e s_e) (Softmax).
/// The choice (bias, sort) has no gradient. dweights [T, k] fp32, logits as topk_gate takes
/// them, indices [T, k] int32 in [0, E) (checked). cfg: topk_gate's (k, scoring, normalize,
/// route_scale). Returns dlogits [T, E] of the logits' dtype. T = 0: empty, no launch.
tl::Tensor topk_gate_backward(const tl::Tensor& dweights, const tl::Tensor& logits,
                              const tl::Tensor& indices, const TopkGateConfig& cfg = {}, TL_LOC);
/// Z [T, E], DW [T, k] fp32, Idx [T, k] int32, DZ [T, E], scale (fp32 scalar); key.bias unused.
tl::PrimFunc topk_gate_bwd_kernel(const TopkGateKey& key);
/// The launch parameters topk_gate_backward chooses on a target.
TopkGateKey topk_gate_bwd_key(tl::DType dtype, int64_t experts, int64_t k, GateScoring scoring,
                              bool normalize, const tl::Target& target, const Checker& check);
/// What topk_gate_backward must do at least: dW, the indices and the logits read once, the
/// logits' gradient written once; the scoring's derivative over every logit.
OpCost topk_gate_backward_cost(int64_t tokens, int64_t experts, int64_t k, tl::DType dtype);

}  // namespace cann_ops_tilelang
