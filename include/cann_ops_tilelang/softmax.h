// The softmax domain of cann_ops_tilelang: softmax and log-softmax over the last dimension,
// forward and backward, bf16/fp16/fp32 in and out with fp32 arithmetic. Rows of any length:
// a row that fits UB is read once; a longer one (a vocabulary of 129280) is read in column
// chunks twice, pass 1 an online max and sum, pass 2 the result. Columns need not be whole
// 32-byte blocks (34 x 130 bf16): the developer-mode kernels' copies are padded and their row
// reductions count only the logical columns (docs/developer_mode.md, "Tails"). Layers as in
// norm.h: validation, the empty-tensor rule, launch parameters from the Target, and kernel
// generators whose rows M are the dynamic symbol.
#pragma once
#include <cstdint>
#include <string>

#include "cann_ops_tilelang/core.h"

namespace cann_ops_tilelang {

/// y = exp(x - max(x)) / sum(exp(x - max(x))) over the last dimension. x: [..., N] bf16/fp16/
/// fp32, contiguous, N >= 1; y like x. Any number of rows, 0 included (no launch).
tl::Tensor softmax(const tl::Tensor& x, TL_LOC);
/// y = x - max(x) - log(sum(exp(x - max(x)))) over the last dimension; arguments as softmax.
tl::Tensor log_softmax(const tl::Tensor& x, TL_LOC);
/// The gradient of y = softmax(x) for dy: dx = y * (dy - sum(dy * y)). y and dy alike.
tl::Tensor softmax_backward(const tl::Tensor& dy, const tl::Tensor& y, TL_LOC);
/// The gradient of y = log_softmax(x) for dy: dx = dy - exp(y) * sum(dy). y and dy alike.
tl::Tensor log_softmax_backward(const tl::Tensor& dy, const tl::Tensor& y, TL_LOC);

// ---- kernel generators (compile-time parameters only; M, the rows, is dynamic) ---------------

struct SoftmaxKey {
  tl::DType dtype = tl::DType::BFloat16;
  int64_t cols = 0;           // N, the softmax dimension
  int64_t rows_per_tile = 8;  // bM
  int64_t chunk = 0;          // bN: columns per chunk; == cols: one pass over a UB-resident row
  int64_t blocks = 0;         // most logical blocks launched (two AIVs each)
  bool log = false;           // log-softmax instead of softmax
  bool backward = false;      // the backward kernel (Y, DY -> DX) instead of the forward
  bool resident = false;      // the expert one-pass schedule (softmax_resident.cpp)
  bool streamed = false;      // the expert two-pass schedule over chunks (softmax_streamed.cpp)
  bool split = false;  // the backward's rows split over a block's two AIVs (softmax_split.cpp)
  std::string str() const;
  int64_t chunks() const { return (cols + chunk - 1) / chunk; }
};
/// Forward: X [M, N] -> Y [M, N]. Backward: Y [M, N], DY [M, N] -> DX [M, N]. A resident key
/// builds softmax_resident_kernel, a streamed one softmax_streamed_kernel.
tl::PrimFunc softmax_kernel(const SoftmaxKey& k);
/// The resident schedule (expert mode), forward or backward: two row tiles of bM rows of each input
/// in the I/O dtype and their fp32 widening in UB, every input read once, the forward's exp
/// computed once per element. N a multiple of 32.
tl::PrimFunc softmax_resident_kernel(const SoftmaxKey& k);
/// The streamed schedule (expert mode), forward or backward, for rows larger than UB: one row per
/// tile, read in chunks of bN columns (a multiple of 32 dividing N) twice, every chunk load in one
/// of three slots, two steps ahead, across chunks, passes and rows.
tl::PrimFunc softmax_streamed_kernel(const SoftmaxKey& k);
/// The split schedule (expert mode), backward only, 16-bit: a block's two AIVs share each row, each
/// holding its half of one input (y for softmax, dy for log-softmax) in UB while the other streams
/// in chunks of bN columns (a multiple of 32 dividing N / 2); the halves' sums meet through a GM
/// workspace and a mode-1 cross-core flag.
tl::PrimFunc softmax_split_kernel(const SoftmaxKey& k);

/// The launch parameters the public functions choose on a target (its core count and UB size):
/// the resident schedule with the widest row tile that fits (N a multiple of 32), else one pass
/// with the widest row tile whose row fits UB, else the streamed schedule (N a multiple of 32
/// with a divisor at least half the widest chunk that fits; a 16-bit backward whose half row of one
/// input fits takes softmax_split_key's split schedule instead), else column chunks of the widest
/// width that fits.
SoftmaxKey softmax_key(tl::DType dtype, int64_t cols, bool log, bool backward,
                       const tl::Target& target);

/// The split schedule's key for a backward of rows of `cols` (`split` set, the chunk from the
/// Target's UB), or one with `split` unset where a half row of one input does not fit beside the
/// chunks or is not whole 32-column blocks (fp32 at 129280). softmax_key chooses it where it fits
/// and rows are too long for one pass (docs/ops.md, "The split backward").
SoftmaxKey softmax_split_key(tl::DType dtype, int64_t cols, bool log, const tl::Target& target);

/// What softmax / log_softmax (or their backward) must do at least over rows x cols: each input
/// read once, the output written once (the two-pass schedule's second read is the kernel's
/// cost, not the op's), and the vector element operations.
OpCost softmax_cost(int64_t rows, int64_t cols, tl::DType dtype, bool backward);

}  // namespace cann_ops_tilelang
