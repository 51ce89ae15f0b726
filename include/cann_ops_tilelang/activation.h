// The activation domain of cann_ops_tilelang: SwiGLU forward and backward (OPS.md "SwiGLU
// fwd/bwd"). y = silu(a) * b (* weight[t]) where x is split into a | b on its last dimension
// ([..., 2H] -> [..., H]) or on its rows ([2T, H]: a = x[:T], b = x[T:]), with an optional clamp
// (a <= L, b in [-L, L], zero gradient where clamped, DeepSeek V4's L = 10) and an optional
// per-token weight (fp32, one per token: MoE routing weights). Tensors in, tensors out, on the
// inputs' tl::Device; compute in fp32 whatever the I/O dtype. Layers as RMSNorm's (docs/ops.md):
// the kernel generators are developer-mode tile kernels, compile-time in dtype, H, the tile and
// the fused branches; the token count is the dynamic symbol M.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "cann_ops_tilelang/core.h"

namespace cann_ops_tilelang {

enum class SwigluSplit { Columns, Rows };

struct SwigluConfig {
  SwigluSplit split = SwigluSplit::Columns;
  std::optional<double> clamp;  // L >= 2^-60: a <= L, b in [-L, L] before the product
};

/// y = silu(a) * b (* weight), computed in fp32 and rounded to x's dtype (RINT). x: bf16/fp16/fp32,
/// contiguous; Columns: [..., 2H] -> y [..., H]; Rows: [2T, H] -> y [T, H]. H * sizeof(dtype) a
/// multiple of 32 bytes. weight: undefined or fp32 of y's leading shape ([...] or [T]).
tl::Tensor swiglu(const tl::Tensor& x, const tl::Tensor& weight = {}, const SwigluConfig& cfg = {},
                  TL_LOC);

struct SwigluGrads {
  tl::Tensor dx;       // like x: da | db (or on rows)
  tl::Tensor dweight;  // fp32 like weight, when a weight was given; else undefined
};

/// The gradients of y = swiglu(x, weight, cfg) for dy (like y): with a', b' the clamped halves,
/// s = sigmoid(a') and g = dy * weight: da = g b' s (1 + a' (1 - s)) where a <= L else 0,
/// db = g a' s where |b| <= L else 0, dweight = sum over H of dy silu(a') b'.
SwigluGrads swiglu_backward(const tl::Tensor& dy, const tl::Tensor& x,
                            const tl::Tensor& weight = {}, const SwigluConfig& cfg = {}, TL_LOC);

// ---- kernel generators (compile-time parameters only; M, the tokens, is dynamic) -------------

/// The backward kernel's pipeline depth (swiglu_kernel.cpp; swiglu_key sizes its tiles for it).
constexpr int kSwigluBwdStages = 3;

struct SwigluKey {
  tl::DType dtype = tl::DType::BFloat16;
  int64_t hidden = 0;          // H, the width of y
  int64_t rows_per_tile = 16;  // bM: 8 rows per AIV (the compiler splits the tile's rows)
  int64_t chunk = 0;           // bN: columns per tile, divides H
  int64_t blocks = 0;          // most blocks launched
  bool rows = false;           // split on rows: a and b are separate [M, H] tensors
  bool clamp = false;          // the clamp branch (L is the runtime scalar `limit`)
  bool weight = false;         // the per-token weight branch
  std::string str() const;
};
/// Forward: (X [M, 2H] | A [M, H], B [M, H]), (W [M] fp32), Y [M, H], (limit).
tl::PrimFunc swiglu_fwd_kernel(const SwigluKey& k);
/// Backward: DY [M, H], (X | A, B), (W), (DX [M, 2H] | DA, DB), (DWP [H / bN, M] fp32), (limit).
tl::PrimFunc swiglu_bwd_kernel(const SwigluKey& k);
/// dweight: DWP [P, M] fp32 -> DW [M] fp32, partials summed in order 0 .. P-1.
tl::PrimFunc swiglu_dw_reduce_kernel(const SwigluKey& k, int64_t partials);
/// Its rows per tile: 64 (16 tiles at 1024 tokens, one a block), fewer when the P partials of a
/// tile would pass 32 KB of UB, at least 8 (a 32-byte block of fp32).
inline int64_t swiglu_dw_reduce_rows(int64_t partials) {
  return std::clamp<int64_t>(8192 / std::max<int64_t>(partials, 1) / 8 * 8, 8, 64);
}

/// The launch parameters swiglu / swiglu_backward choose on a target (core count, UB size).
SwigluKey swiglu_key(tl::DType dtype, int64_t hidden, bool backward, const SwigluConfig& cfg,
                     bool weight, const tl::Target& target, const Checker& check);

/// What swiglu (or swiglu_backward) must do at least for T tokens of width H (docs/ops.md
/// "Benchmarks"): x read and y written once (backward: dy and x read, dx written), the weight
/// (and dweight) once; the vector element operations of the fp32 body.
OpCost swiglu_cost(int64_t tokens, int64_t hidden, tl::DType dtype, bool backward, bool weight,
                   bool clamp);

}  // namespace cann_ops_tilelang
