// The attention domain of cann_ops_tilelang: FlashAttention forward (issue 30, docs/ops.md
// "FlashAttention forward"). O = softmax(scale * Q K^T [+ causal mask]) V per batch and head,
// with the row log-sum-exp lse = log(sum_j exp(scale * q k_j)) (fp32, natural log) that a
// backward needs. Q, K, V, O fp16 or bf16, in BSHD ([B, S, H, D]) or BHSD ([B, H, S, D]);
// fp32 arithmetic (scores in L0C, the online softmax on the vector unit). B and S are the
// kernel's dynamic symbols; H, D, the layout, the causal flag, the scale and the tile sizes,
// chosen from the Target, are compile-time.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "cann_ops_tilelang/core.h"

namespace cann_ops_tilelang {

enum class AttentionLayout { BSHD, BHSD };

struct FlashAttentionConfig {
  bool causal = false;  // query i sees keys j <= i
  AttentionLayout layout = AttentionLayout::BSHD;
  std::optional<double> scale = {};  // default 1 / sqrt(D); must be > 0 and finite
};

struct FlashAttentionResult {
  tl::Tensor o;    // like q
  tl::Tensor lse;  // [B, H, S] float32
};

/// q, k, v: rank 4 in cfg.layout, one dtype (float16 or bfloat16), contiguous, the same B, S, H
/// and D; D in {64, 128}. S = 0 or B = 0 or H = 0: empty outputs, no launch.
FlashAttentionResult flash_attention(const tl::Tensor& q, const tl::Tensor& k, const tl::Tensor& v,
                                     const FlashAttentionConfig& cfg = {}, TL_LOC);

/// What the op must at least do: 4 B H S^2 D cube flops (about half when causal), Q, K, V, O
/// and lse read or written once, and the softmax's element operations.
OpCost flash_attention_cost(int64_t batch, int64_t seq, int64_t heads, int64_t dim, tl::DType dtype,
                            bool causal);

// ---- kernel generator (compile-time parameters only; B and S are dynamic) ------------------

struct FlashAttentionKey {
  tl::DType dtype = tl::DType::Float16;
  int64_t heads = 1, dim = 128;  // H, D
  bool causal = false;
  AttentionLayout layout = AttentionLayout::BSHD;
  double scale = 0;                     // rounded to fp32 in the kernel
  int64_t block_m = 64, block_n = 128;  // q rows per tile, kv rows per step
  int64_t stages = 2;                   // T::Pipelined stages of the kv loop
  int64_t skew = 1;                     // its cross-core skew (T::PipelineOptions), < stages
  int64_t blocks = 0;                   // persistent workers (the target's AICs)
  std::string str() const;
};
/// BHSD: Q, K, V, O [B, H, S, D]; BSHD: Q, K, V, O [B, S, H * D] (the heads side by side in a
/// row). LSE [B, H, S] float32. IDX [block_m, block_n] float16: flash_attention_idx's tensor.
tl::PrimFunc flash_attention_kernel(const FlashAttentionKey& key);
/// The kernel's IDX argument on `dev`: element (i, c) holds c - i when key.causal (a key's offset
/// from its query in a score tile), c when not (the masks' indices, host-made).
tl::Tensor flash_attention_idx(tl::Device& dev, const FlashAttentionKey& key);
/// The launch parameters flash_attention chooses on a target for sequences of `seq` (0: not
/// known, the short-sequence schedule; the kernel itself takes any S).
FlashAttentionKey flash_attention_key(tl::DType dtype, int64_t heads, int64_t dim, bool causal,
                                      AttentionLayout layout, double scale,
                                      const tl::Target& target, int64_t seq = 0);

// ---- backward (docs/ops.md "FlashAttention backward") --------------------------------------

struct FlashAttentionGrads {
  tl::Tensor dq, dk, dv;  // like q, k, v
};

/// dq, dk, dv of o = flash_attention(q, k, v, cfg).o for the upstream gradient dout: dout, q, k,
/// v, o one dtype (float16 or bfloat16), one shape, rank 4 in cfg.layout, contiguous, D in
/// {64, 128}; lse the forward's [B, H, S] float32; dlse (optional, like lse): the gradient of lse
/// when the caller used it (it adds dlse_i P_ij to each score's gradient). B, S or H = 0: empty
/// outputs, no launch.
/// Launches flash_attention_bwd_dq_kernel (dq in fp32 and Delta = rowsum(dout * o)), then
/// flash_attention_bwd_dkdv_kernel (dk, dv in fp32), then flash_attention_bwd_cast_kernel on each.
FlashAttentionGrads flash_attention_backward(const tl::Tensor& dout, const tl::Tensor& q,
                                             const tl::Tensor& k, const tl::Tensor& v,
                                             const tl::Tensor& o, const tl::Tensor& lse,
                                             const FlashAttentionConfig& cfg = {},
                                             const std::optional<tl::Tensor>& dlse = {}, TL_LOC);

/// What the backward must at least do: 5 products of 2 B H S^2 D flops each (S K^T recomputed,
/// dO V^T, P^T dO, dS^T Q, dS K; about half when causal), q, k, v, o, dout read and dq, dk, dv
/// written once, lse read, and the element operations of P and dS.
OpCost flash_attention_backward_cost(int64_t batch, int64_t seq, int64_t heads, int64_t dim,
                                     tl::DType dtype, bool causal);

/// The dq pass: Q, K, V, O, DO, LSE, [DLSE,] DELTA, DQ (Q ... DQ in the key's layout, DQ float32,
/// LSE, DLSE and DELTA [B, H, S] float32, DELTA written here), ROWS [block_m] int32 (0 ... block_m
/// - 1) when causal. `dlse`: the kernel takes DLSE and writes Delta - dlse.
tl::PrimFunc flash_attention_bwd_dq_kernel(const FlashAttentionKey& key, bool dlse = false);
/// The dk / dv pass: Q, K, V, DO, DK, DV in the key's layout (DK, DV float32), LSE and DELTA
/// [B, H, S] float32
/// (DELTA from the dq pass), ROWS [block_m] int32 when causal.
tl::PrimFunc flash_attention_bwd_dkdv_kernel(const FlashAttentionKey& key);
/// The rounding pass: X [M, D] float32 -> Y [M, D] in the key's dtype on the vector unit (the
/// fixpipe's own conversion turns NaN into 0); M dynamic, block_m rows per tile.
tl::PrimFunc flash_attention_bwd_cast_kernel(const FlashAttentionKey& key);
/// The launch parameters flash_attention_backward chooses on a target (both passes).
FlashAttentionKey flash_attention_bwd_key(tl::DType dtype, int64_t heads, int64_t dim, bool causal,
                                          AttentionLayout layout, double scale,
                                          const tl::Target& target);

}  // namespace cann_ops_tilelang
