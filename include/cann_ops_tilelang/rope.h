// The RoPE domain of cann_ops_tilelang: rotary position embedding forward and backward
// (OPS.md "RoPE fwd/bwd", issue 30; docs/ops.md "RoPE"). Tensors in, tensors out, on the
// inputs' tl::Device; compute in fp32 whatever the I/O dtype.
//
// The tables' format (the one TileLang-Ascend's pos_embedding examples use): cos and sin are
// fp32 [rows, rot_dim], one full-width entry per rotated element, so for x's rotated part r
// (rot_dim elements of a head) and its token's table row c, s:
//   y = r * c + rotate(r) * s
// with rotate(r) = [-r1, r0, -r3, r2, ...] (Interleaved: pairs (2i, 2i+1)) or
// [-r[h:], r[:h]] with h = rot_dim / 2 (Half, GPT-NeoX). Standard RoPE has c = cos(theta),
// s = sin(theta) with theta equal on the two elements of a pair; any table is accepted, and the
// backward is the exact adjoint: dr = dy * c + rotate^T(dy * s), which for pair-equal tables is
// the rotation by -theta. Elements outside the rotated part pass through unchanged (bit for bit).
// Token t (x's first dimension) uses table row positions[t], or row t without positions.
#pragma once
#include <cstdint>
#include <string>

#include "cann_ops_tilelang/core.h"

namespace cann_ops_tilelang {

enum class RopeStyle { Interleaved, Half };

struct RopeConfig {
  RopeStyle style = RopeStyle::Half;
  /// Partial rotation (rot_dim < head_dim): rotate the last rot_dim elements of each head
  /// (TileLang-Ascend's examples, DeepSeek's rope part) or the first (GPT-NeoX rotary_pct).
  bool rotate_last = true;
};

/// y = RoPE(x) on the rotated part of every head, the rest copied. x: [tokens, heads, head_dim]
/// bf16/fp16/fp32, contiguous, head_dim * itemsize a multiple of 32 bytes; cos, sin: fp32
/// [rows, rot_dim], rot_dim even, >= 2, <= head_dim, rot_dim * 4 a multiple of 32 bytes (and,
/// for a partial rotation, its offset in the head 32-byte aligned in x's dtype); positions:
/// undefined (then rows >= tokens) or int32 [tokens] with 0 <= positions[t] < rows.
tl::Tensor rope(const tl::Tensor& x, const tl::Tensor& cos, const tl::Tensor& sin,
                const tl::Tensor& positions = {}, const RopeConfig& cfg = {}, TL_LOC);

/// dx for dy (like x) of y = rope(x, cos, sin, positions, cfg): the adjoint rotation (above).
tl::Tensor rope_backward(const tl::Tensor& dy, const tl::Tensor& cos, const tl::Tensor& sin,
                         const tl::Tensor& positions = {}, const RopeConfig& cfg = {}, TL_LOC);

// ---- kernel generator (compile-time parameters only; tokens and table rows are dynamic) -----

struct RopeKey {
  tl::DType dtype = tl::DType::Float16;
  int64_t heads = 0;       // H
  int64_t head_dim = 0;    // D
  int64_t rot_dim = 0;     // R, even
  int64_t rot_offset = 0;  // 0 or D - R
  bool interleaved = false;
  bool backward = false;
  bool positions = false;       // the P [M] int32 branch
  int64_t tokens_per_tile = 0;  // bT
  int64_t heads_per_tile = 0;   // bH, divides H
  int64_t blocks = 0;           // most blocks launched (two AIV workers each)
  std::string str() const;
};
/// X [M, H * D], C [NR, R] fp32, S [NR, R] fp32, (P [M] int32), Y [M, H * D].
tl::PrimFunc rope_kernel(const RopeKey& k);

/// The launch parameters rope / rope_backward choose on a target (core count, UB size).
RopeKey rope_key(tl::DType dtype, int64_t heads, int64_t head_dim, int64_t rot_dim,
                 const RopeConfig& cfg, bool backward, bool positions, const tl::Target& target,
                 const Checker& check);

/// The bytes RoPE must move: x read and y written once, the tokens' cos and sin rows read once
/// (positions read once); 3 vector ops per rotated element (two products, one sum).
OpCost rope_cost(int64_t tokens, int64_t heads, int64_t head_dim, int64_t rot_dim, tl::DType dtype,
                 bool positions);

}  // namespace cann_ops_tilelang
