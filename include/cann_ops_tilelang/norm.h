// The norm domain of cann_ops_tilelang: RMSNorm forward (with an optional fused residual add and
// an optional rstd output) and backward (dX and a deterministic dW). Tensors in, tensors out;
// every tensor lives on a tl::Device (the virtual NPU) and the outputs are allocated on the
// inputs' device. Layers (docs/ops.md): these functions validate and choose launch parameters;
// the kernel generators below are compile-time only in dtype, hidden size, block sizes and the
// fused branches -- the row count is the dynamic symbol M, so one compiled kernel serves every
// batch size.
#pragma once
#include <cstdint>
#include <string>

#include "cann_ops_tilelang/core.h"

namespace cann_ops_tilelang {

struct RmsNormConfig {
  double eps = 1e-6;
  bool return_rstd = false;  // also return rstd = rsqrt(mean(h^2) + eps), fp32, one per row
};

struct RmsNormResult {
  tl::Tensor y;         // like x
  tl::Tensor residual;  // h = x + residual (in x's dtype) when a residual was given, else undefined
  tl::Tensor rstd;      // fp32, x's leading shape, when cfg.return_rstd, else undefined
};

/// y = weight * h * rsqrt(mean(h^2, -1) + eps) with h = x (+ residual), over the last dimension.
/// x: [..., H] bf16/fp16/fp32, contiguous, H * sizeof(dtype) a multiple of 32 bytes; weight: [H]
/// of x's dtype; residual: undefined or like x. Any number of rows, 0 included (no launch).
RmsNormResult rms_norm(const tl::Tensor& x, const tl::Tensor& weight,
                       const tl::Tensor& residual = {}, const RmsNormConfig& cfg = {}, TL_LOC);

struct RmsNormGrads {
  tl::Tensor dx;  // like x
  tl::Tensor dw;  // like weight
};

/// The gradients of y = rms_norm(x, weight) for dy: with g = dy * w and rstd recomputed from x,
/// dx = rstd * g - x * rstd^3 * sum(g * x) / H, dw = sum over rows of dy * x * rstd. dW is
/// summed in fp32, per AIV then across AIVs in a fixed order: the same inputs give the same
/// bits whatever the host's threads do.
RmsNormGrads rms_norm_backward(const tl::Tensor& dy, const tl::Tensor& x, const tl::Tensor& weight,
                               double eps = 1e-6, TL_LOC);

// ---- kernel generators (compile-time parameters only; M, the rows, is dynamic) ---------------

struct RmsNormKey {
  tl::DType dtype = tl::DType::BFloat16;
  int64_t hidden = 0;         // H, the normalised dimension
  int64_t rows_per_tile = 8;  // rM: 8 fp32 row statistics are one 32-byte block
  int64_t chunk = 0;      // bN: columns per fp32 chunk, divides H (0: the backward's whole rows)
  int64_t blocks = 0;     // most logical blocks launched (two AIVs each)
  bool residual = false;  // fused residual add, storing h
  bool rstd = false;      // store rstd (a tensor of ceil(M / rM) * rM rows)
  bool resident = false;  // the row tile stays in UB: inputs read once (double-buffered)
  std::string str() const;
};
/// The forward kernel: X [M, H], (R [M, H]), W [H], Y [M, H], (HO [M, H]), (Rstd [MP]), eps.
tl::PrimFunc rms_norm_fwd_kernel(const RmsNormKey& k);
/// The forward kernel's resident schedule (k.resident; rms_norm_fwd_kernel dispatches to it).
tl::PrimFunc rms_norm_fwd_resident_kernel(const RmsNormKey& k);
/// The backward kernel: DY, X [M, H], W [H], DX [M, H], DWP [2 * blocks, H] fp32 partials, eps.
tl::PrimFunc rms_norm_bwd_kernel(const RmsNormKey& k);
/// The backward kernel's resident schedule (k.resident; rms_norm_bwd_kernel dispatches to it).
tl::PrimFunc rms_norm_bwd_resident_kernel(const RmsNormKey& k);
/// The backward kernel's whole-row schedule (k.resident with k.chunk 0: rows in fp32, no chunks).
tl::PrimFunc rms_norm_bwd_rows_kernel(const RmsNormKey& k);
/// The dW reduction: DWP [P, H] fp32 -> DW [H] (k.dtype), rows summed in order 0 .. P-1.
tl::PrimFunc rms_norm_dw_reduce_kernel(const RmsNormKey& k, int64_t partials);

/// The launch parameters rms_norm / rms_norm_backward choose for a hidden size on a target
/// (from its core count and UB size).
RmsNormKey rms_norm_fwd_key(tl::DType dtype, int64_t hidden, bool residual, bool rstd,
                            const tl::Target& target, const Checker& check);
RmsNormKey rms_norm_bwd_key(tl::DType dtype, int64_t hidden, const tl::Target& target,
                            const Checker& check);

/// What rms_norm / rms_norm_backward must at least move and compute (each tensor read or
/// written once): the benchmarks' and `tlc op --profile`'s roofline.
OpCost rms_norm_cost(int64_t rows, int64_t hidden, tl::DType dtype, bool residual, bool rstd);
OpCost rms_norm_backward_cost(int64_t rows, int64_t hidden, tl::DType dtype);

}  // namespace cann_ops_tilelang

// ---- LayerNorm forward ------------------------------------------------------------------------
// Developer mode (cann_ops_tilelang/norm/layer_norm_kernel.cpp): the row tile stays in UB (one
// read of x), so H is bounded by the target's UB (7168 bf16 fits A2 with 2-row tiles); the
// compiler pads rows that are not whole 32-byte blocks, so any H >= 1 is accepted.

namespace cann_ops_tilelang {

struct LayerNormConfig {
  double eps = 1e-5;
  bool return_stats = false;  // also return mean and rstd (fp32, one per row)
};

struct LayerNormResult {
  tl::Tensor y;     // like x
  tl::Tensor mean;  // fp32, x's leading shape, when cfg.return_stats, else undefined
  tl::Tensor rstd;  // fp32, 1 / sqrt(var + eps) (biased variance), likewise
};

/// y = (x - mean) * rsqrt(var + eps) (* weight) (+ bias) over the last dimension, fp32 inside.
/// x: [..., H] bf16/fp16/fp32, contiguous; weight, bias: undefined or [H] of x's dtype. Any
/// number of rows, 0 included (no launch).
LayerNormResult layer_norm(const tl::Tensor& x, const tl::Tensor& weight = {},
                           const tl::Tensor& bias = {}, const LayerNormConfig& cfg = {}, TL_LOC);

struct LayerNormKey {
  tl::DType dtype = tl::DType::BFloat16;
  int64_t hidden = 0;                                // H
  int64_t rows_per_tile = 8;                         // bM
  int64_t blocks = 0;                                // logical blocks launched (two AIVs each)
  bool weight = false, bias = false, stats = false;  // the optional inputs and outputs
  std::string str() const;
};
/// X [M, H], (W [H]), (B [H]), Y [M, H], (Mean [M], Rstd [M]), eps.
tl::PrimFunc layer_norm_kernel(const LayerNormKey& k);
/// The key layer_norm launches with on `target` (the widest row tile that fits its UB).
LayerNormKey layer_norm_key(tl::DType dtype, int64_t hidden, bool weight, bool bias, bool stats,
                            const tl::Target& target, const Checker& check);

/// What layer_norm must at least move and compute: the benchmarks' and profiles' roofline.
OpCost layer_norm_cost(int64_t rows, int64_t hidden, tl::DType dtype, bool weight, bool bias,
                       bool stats);

// ---- LayerNorm backward -------------------------------------------------------------------------
// Expert mode: whole rows resident in UB in fp32 where they fit (layer_norm_bwd_rows.cpp: x and dy
// read once), else rows in column chunks (layer_norm_bwd_kernel.cpp), so H is bounded only by a
// chunk fitting UB; any H >= 1 (ragged rows take the chunked kernel).

struct LayerNormGrads {
  tl::Tensor dx;  // like x
  tl::Tensor dw;  // like weight
  tl::Tensor db;  // like weight: the bias's gradient, sum over rows of dy
};

/// The gradients of y = layer_norm(x, weight, bias) for dy, mean and rstd recomputed from x
/// (xhat = (x - mean) * rstd, g = dy * w): dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
/// dw = sum over rows of dy * xhat, db = sum over rows of dy. dW and dB are summed in fp32, per
/// AIV then across AIVs in a fixed order: the same inputs give the same bits.
LayerNormGrads layer_norm_backward(const tl::Tensor& dy, const tl::Tensor& x,
                                   const tl::Tensor& weight, double eps = 1e-5, TL_LOC);

struct LayerNormBwdKey {
  tl::DType dtype = tl::DType::BFloat16;
  int64_t hidden = 0;         // H
  int64_t rows_per_tile = 8;  // rM: 8 fp32 row statistics are one 32-byte block
  int64_t chunk = 0;   // bN: columns per fp32 chunk, divides H (0: the backward's whole rows)
  int64_t blocks = 0;  // most logical blocks launched (two AIVs each)
  int64_t slots = 3;   // whole rows: input slots, 2A + 1 to load A tiles ahead (fp32 I/O: 3)
  std::string str() const;
};
/// DY, X [M, H], W [H], DX [M, H], DWBP [2 * blocks, 2 * H] fp32 partials (dW | dB), eps.
tl::PrimFunc layer_norm_bwd_kernel(const LayerNormBwdKey& k);
/// The backward kernel's whole-row schedule (k.chunk 0: rows in fp32, x and dy read once;
/// layer_norm_bwd_kernel dispatches to it).
tl::PrimFunc layer_norm_bwd_rows_kernel(const LayerNormBwdKey& k);
/// The key layer_norm_backward launches with on `target`.
LayerNormBwdKey layer_norm_bwd_key(tl::DType dtype, int64_t hidden, const tl::Target& target,
                                   const Checker& check);
/// The partials reduction layer_norm_backward runs: rms_norm_dw_reduce_kernel over 2H columns.
RmsNormKey layer_norm_dwb_reduce_key(const LayerNormBwdKey& k);
OpCost layer_norm_backward_cost(int64_t rows, int64_t hidden, tl::DType dtype);

}  // namespace cann_ops_tilelang
