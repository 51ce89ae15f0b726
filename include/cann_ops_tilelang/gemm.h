// The GEMM domain of cann_ops_tilelang: C = op(A) op(B) on the cube, fp16/bf16 inputs, fp32
// accumulation in L0C, C in fp16/bf16/fp32, either operand transposed (stored [K, M] / [N, K]).
// Any M, N, K: the edge tiles' copies are clipped and a partial K panel is zero-filled by the
// compiler (developer mode, docs/developer_mode.md "Tails"). M, the token count, is the kernel's
// dynamic symbol; N and K (a weight's shape) and the block sizes, chosen from the Target's
// L1 / L0A / L0B / L0C capacities and AIC count, are compile-time.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "cann_ops_tilelang/core.h"

namespace cann_ops_tilelang {

struct GemmConfig {
  bool trans_a = false;                     // A is stored [K, M]
  bool trans_b = false;                     // B is stored [N, K]
  std::optional<tl::DType> out_dtype = {};  // default: A's dtype
};

/// a: [M, K] (or [K, M]), b: [K, N] (or [N, K]), both float16 or both bfloat16, contiguous.
/// Returns C [M, N]. M, N or K may be 0: an empty C, or (K = 0) C = 0, with no launch.
tl::Tensor gemm(const tl::Tensor& a, const tl::Tensor& b, const GemmConfig& cfg = {}, TL_LOC);

// ---- kernel generator (compile-time parameters only; M is dynamic) -------------------------

struct GemmKey {
  tl::DType dtype = tl::DType::Float16;      // of A and B
  tl::DType out_dtype = tl::DType::Float16;  // of C
  int64_t n = 0, k = 0;                      // N, K
  bool trans_a = false, trans_b = false;
  int64_t block_m = 128, block_n = 256, block_k = 256;  // L0C tile [bM, bN]; L1 panel depth bK
  int64_t stages = 2;                                   // L1 panels in flight
  int64_t blocks = 0;                                   // persistent AICs
  std::string str() const;
};
/// A [M, K] (or [K, M]), B [K, N] (or [N, K]), C [M, N].
tl::PrimFunc gemm_kernel(const GemmKey& key);
/// The launch parameters gemm chooses for N, K on a target.
GemmKey gemm_key(tl::DType dtype, tl::DType out_dtype, int64_t n, int64_t k, bool trans_a,
                 bool trans_b, const tl::Target& target, const Checker& check);

/// What gemm must do at least: A and B read once, C written once, 2 M N K cube flops.
OpCost gemm_cost(int64_t m, int64_t n, int64_t k, tl::DType dtype, tl::DType out_dtype);

}  // namespace cann_ops_tilelang
