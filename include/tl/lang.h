// tl::T: the tile language embedded in C++, TileLang-Ascend's primitives spelled in C++.
//
// A kernel generator is an ordinary C++ function whose arguments are compile-time parameters;
// it builds a tl::PrimFunc by calling T:: functions inside T::prim_func's body. Each call
// appends one statement to the innermost open block and records the caller's file:line
// (or the location a binding set with ScopedSourceLoc).
// Destination-first for tile ops (`T::tile::add(dst, a, b)`), source-first for copy
// (`T::copy(src, dst)`), as in TileLang. See docs/language.md for every primitive.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tl/ir.h"
#include "tl/ir_ops.h"

namespace tl {

using Core = CoreKind;

/// Repository-relative file and line of a DSL call, or the location of the innermost live
/// ScopedSourceLoc on this thread when there is one.
SourceLoc source_loc(const Loc& l);

/// While alive, every DSL call on this thread records `loc` instead of its C++ caller's
/// file:line, so a binding (the Python front end) can report its own caller's position:
///   tl::ScopedSourceLoc at(tl::SourceLoc{"kernel.py", 12});
///   T::copy(a, b);  // recorded at kernel.py:12
/// Guards nest (the innermost one wins and the previous location comes back when it is
/// destroyed) and are per thread. Destroy them in reverse order of construction, as scopes do.
class ScopedSourceLoc {
 public:
  explicit ScopedSourceLoc(SourceLoc loc);
  ~ScopedSourceLoc();
  ScopedSourceLoc(const ScopedSourceLoc&) = delete;
  ScopedSourceLoc& operator=(const ScopedSourceLoc&) = delete;

 private:
  SourceLoc loc_;
  const SourceLoc* outer_;
};

/// A kernel parameter in T::prim_func's list: a tensor (Buffer) or a scalar (Var).
struct ParamRef {
  Param p;
  ParamRef(const Buffer& b) : p{b, {}} {}  // NOLINT
  ParamRef(const Var& v) : p{{}, v} {}     // NOLINT
};

namespace lang {
/// True inside T::prim_func.
bool building();
/// The name a new unnamed buffer or let would get in the function being built (`base`,
/// `base_1`, ...), not reserved: for a caller that claims it itself (T::let, T::alloc_*), as
/// the Python front end's unnamed buffers and lets do.
std::string fresh_name(const std::string& base);
}  // namespace lang

namespace T {

/// Declared first in a kernel helper (a C++ function or lambda that emits DSL statements and
/// takes TL_LOC): while it lives, statements record the kernel line that called the helper,
/// with the helper's own line after it, so errors, hazard reports and profiles point at the
/// kernel ("k.cpp:40 (in a helper at k.cpp:12)").
///   auto update = [&](Expr j, TL_LOC) { T::HelperCall at(loc); T::copy(...); };
class HelperCall {
 public:
  explicit HelperCall(const Loc& caller);
  ~HelperCall();
  HelperCall(const HelperCall&) = delete;
  HelperCall& operator=(const HelperCall&) = delete;
};

// ---- Functions, parameters, symbols ------------------------------------------------------

/// A GM tensor parameter. `strides` empty means dense row-major.
Buffer Tensor(std::string name, std::vector<Expr> shape, DType dtype,
              std::vector<Expr> strides = {}, TL_LOC);
/// A scalar kernel parameter.
Var Scalar(std::string name, DType dtype);
/// A dynamic size: bound at launch from the tensor shapes it appears in.
Var dynamic(std::string name, DType dtype = DType::Int32);
/// Builds a function: runs `body`, which must contain the T::Kernel launch.
PrimFunc prim_func(std::string name, std::vector<ParamRef> params,
                   const std::function<void()>& body, TL_LOC);

// ---- Launch and scopes ---------------------------------------------------------------------

/// Launches `num_blocks` logical blocks (1 AIC + 2 AIV each). cid in [0, num_blocks); vid is
/// the AIV index (0 or 1; 0 on the AIC).
void Kernel(Expr num_blocks, const std::function<void(Expr cid, Expr vid)>& body, TL_LOC);
/// Developer launch (docs/developer_mode.md): `num_blocks` blocks, cid only. The compiler
/// places buffers, splits the work between the AIC and the AIVs and inserts every sync.
struct KernelOptions {
  int threads = 1;  // vector cores per cube core doing the vector work: 1 or 2
};
void Kernel(Expr num_blocks, const std::function<void(Expr cid)>& body, KernelOptions opt = {},
            TL_LOC);
/// Code for the AIC (Core::Cube) or for each AIV (Core::Vector) only.
void Scope(Core core, const std::function<void()>& body, TL_LOC);

// ---- Memory --------------------------------------------------------------------------------

Buffer alloc_L1(std::string name, std::vector<Expr> shape, DType dtype, int64_t address = -1,
                TL_LOC);
Buffer alloc_L0A(std::string name, std::vector<Expr> shape, DType dtype, int64_t address = -1,
                 TL_LOC);
Buffer alloc_L0B(std::string name, std::vector<Expr> shape, DType dtype, int64_t address = -1,
                 TL_LOC);
Buffer alloc_L0C(std::string name, std::vector<Expr> shape, DType dtype, int64_t address = -1,
                 TL_LOC);
Buffer alloc_ub(std::string name, std::vector<Expr> shape, DType dtype, int64_t address = -1,
                TL_LOC);
/// Developer mode: the compiler places these (L1 or UB; L0A/L0B/L0C or UB).
Buffer alloc_shared(std::string name, std::vector<Expr> shape, DType dtype, TL_LOC);
Buffer alloc_fragment(std::string name, std::vector<Expr> shape, DType dtype, TL_LOC);
/// GM scratch for this launch (T.alloc_workspace): allocated by the launcher for every launch,
/// never part of the kernel's signature, shared by every block and core (index it by cid).
/// Its contents are undefined until written (the virtual NPU fills it with NaN bytes).
/// Developer mode makes its own for data that crosses cores.
Buffer alloc_workspace(std::string name, std::vector<Expr> shape, DType dtype, TL_LOC);
/// A scalar variable (read with `v()`, written with T::assign), optionally initialised.
Buffer alloc_var(std::string name, DType dtype, std::optional<Expr> init = std::nullopt, TL_LOC);
void assign(const Buffer& var, Expr value, TL_LOC);
/// A view of on-chip buffer `base`'s bytes as `dtype` (same element width, same shape and
/// address; nothing is allocated: AscendC's ReinterpretCast). E.g. the int32 index lanes of
/// sort's float (value, index) pairs: `auto idx = T::view("idx", pairs, i32);`.
Buffer view(std::string name, const Buffer& base, DType dtype, TL_LOC);
/// Pins on-chip buffers made earlier in this function at byte addresses, as if each had been
/// allocated with `address=` (TileLang-Ascend's T.annotate_address). The pin applies to every use
/// of the buffer (and its views), also those written before this call. Errors: a buffer that is
/// not L1/L0A/L0B/L0C/UB, a negative address, a buffer already pinned at another address.
/// plan_memory then checks that pinned buffers live at the same time do not overlap.
void annotate_address(const std::vector<std::pair<Buffer, int64_t>>& pins, TL_LOC);
/// Sets GM tensors' L2 cache mode (AscendC GlobalTensor::SetL2CacheHint): L2CacheMode::Disable for
/// data read once, whose bytes need not displace what L2 holds (asc-devkit's add example reads
/// x and y so; docs/calibration.md, "GM side"). The data is the same either way; the timing model
/// (bypassing reads neither fill L2 nor count in its footprint) and the AscendC emitter read it.
/// Errors: a buffer that is not in GM, a tensor already given the other mode.
void annotate_l2_cache(const std::vector<std::pair<Buffer, L2CacheMode>>& modes, TL_LOC);
/// Scalar store `buf[indices] = value` (S pipe).
void store(const Buffer& buf, std::vector<Expr> indices, Expr value, TL_LOC);
/// Binds `name = value` for the rest of the block and returns the variable.
Var let(std::string name, Expr value, TL_LOC);

// ---- Control flow --------------------------------------------------------------------------

void serial(Expr extent, const std::function<void(Expr)>& body, TL_LOC);
void serial(Expr min, Expr extent, const std::function<void(Expr)>& body, TL_LOC);
void unroll(Expr extent, const std::function<void(Expr)>& body, TL_LOC);
/// Developer-mode loops. Until the passes that lower them exist, the verifier rejects them in
/// expert kernels [developer-loop-in-expert-mode]: use serial or unroll there.
void Parallel(Expr extent, const std::function<void(Expr)>& body, TL_LOC);
void Pipelined(Expr extent, int num_stages, const std::function<void(Expr)>& body, TL_LOC);
/// Multi-dimensional element loops: `T::Parallel({M, N}, [&](Expr i, Expr j) { c(i, j) = ...; })`
/// (nested Parallel loops, outermost first).
void Parallel(std::vector<Expr> extents, const std::function<void(Expr, Expr)>& body, TL_LOC);
void Parallel(std::vector<Expr> extents, const std::function<void(Expr, Expr, Expr)>& body, TL_LOC);
/// Persistent tiles: tiles of `domain` (row-major) are dealt to `num_workers` workers; worker
/// `worker` runs `body` with the tile's coordinates for tiles worker, worker + num_workers, ...
void Persistent(std::vector<Expr> domain, Expr num_workers, Expr worker,
                const std::function<void(std::vector<Expr>)>& body, TL_LOC);
/// Named loops: the loop variable prints as `name` (made unique within the kernel).
void serial(std::string name, Expr extent, const std::function<void(Expr)>& body, TL_LOC);
void serial(std::string name, Expr min, Expr extent, const std::function<void(Expr)>& body, TL_LOC);
void unroll(std::string name, Expr extent, const std::function<void(Expr)>& body, TL_LOC);
void Parallel(std::string name, Expr extent, const std::function<void(Expr)>& body, TL_LOC);
void Pipelined(std::string name, Expr extent, int num_stages, const std::function<void(Expr)>& body,
               TL_LOC);
/// How a T::Pipelined loop is scheduled beyond its stages (pipeline_loops, docs/compiler.md):
/// `skew` iterations of run-ahead for the part of a core's body before its first pop after a
/// push (the cube's QK^T(t + skew) before its wait for P(t) in FlashAttention), 1 <= skew <
/// num_stages; each iteration in flight keeps its own slot.
struct PipelineOptions {
  int skew = 1;
};
void Pipelined(std::string name, Expr extent, int num_stages, PipelineOptions opt,
               const std::function<void(Expr)>& body, TL_LOC);
void If(Expr cond, const std::function<void()>& then_body,
        const std::function<void()>& else_body = nullptr, TL_LOC);

// ---- Data movement and cube ------------------------------------------------------------------

struct CopyOptions {
  bool enable_relu = false;           // fixpipe ReLU (L0C -> GM/L1)
  bool transpose = false;             // L1 -> L0A/L0B transposed load (16-bit types)
  std::optional<double> pad_value{};  // GM -> UB padded copy: fill value of the 32 B tail
  bool nd2nz = true;                  // GM -> L1 converts ND to the NZ fractal layout
};
/// Copies src to dst. Either side may be a start-point region (`A.at({i, j})`) whose extents
/// are taken from the other side.
void copy(TileArg src, TileArg dst, CopyOptions opt = {}, TL_LOC);
/// dst (GM) += src, atomically across cores.
void atomic_add(TileArg dst, TileArg src, TL_LOC);
/// DataCacheCleanAndInvalid: this core's scalar data cache writes back and drops its lines of
/// `dst` (a GM region; `entire`: every line). Needed between a scalar access of GM and a DMA
/// or another core's access of the same bytes (docs/virtual_npu.md, "Data cache").
void dcci(TileArg dst, bool entire = false, TL_LOC);

struct GemmOptions {
  bool transpose_A = false;
  bool transpose_B = false;
  Expr init = false;  // true (or an expression like k == 0): C = A x B instead of C += A x B
};
/// C (L0C) [+]= op(A) x op(B) with A and B in L1 (loads L0A/L0B itself).
void gemm_v0(TileArg A, TileArg B, TileArg C, GemmOptions opt = {}, TL_LOC);
/// Developer mode: C [+]= op(A) x op(B) on tiles the compiler places (A, B shared -> L1,
/// C fragment -> L0C); lowered to L1 -> L0A/L0B loads into two slots and Mmads, never gemm_v0.
void gemm(TileArg A, TileArg B, TileArg C, GemmOptions opt = {}, TL_LOC);
/// dst = value (every element); T::clear(dst) is fill with 0. Developer and expert (UB) buffers.
void fill(TileArg dst, Expr value, TL_LOC);
void clear(TileArg dst, TL_LOC);
/// dst (a whole L1 / L0A / L0B tile) = value: AscendC InitConstValue, on MTE2.
void init_const(TileArg dst, Expr value, TL_LOC);
/// C (L0C) [+]= A (L0A) x B (L0B), one Mmad.
void mma(TileArg A, TileArg B, TileArg C, Expr init = false, TL_LOC);

// ---- Reductions and sorting --------------------------------------------------------------------

void reduce_sum(TileArg src, TileArg dst, int dim = -1, bool clear = true, TL_LOC);
void reduce_max(TileArg src, TileArg dst, int dim = -1, bool clear = true, TL_LOC);
void reduce_min(TileArg src, TileArg dst, int dim = -1, bool clear = true, TL_LOC);
/// dst = (value, index) pairs of src[0:actual_num], descending, ties to the smaller index.
void sort(TileArg dst, TileArg src, Expr actual_num, TL_LOC);
/// Merges 2-4 descending (value, index) queues.
void merge_sort(TileArg dst, std::vector<TileArg> srcs, TL_LOC);
void topk(TileArg dst, TileArg src, Expr k, Expr actual_num, TL_LOC);
void init_sort_buf(TileArg dst, Expr num, std::optional<Expr> value = std::nullopt, TL_LOC);

// ---- Synchronization -----------------------------------------------------------------------

void set_flag(Pipe src, Pipe dst, Expr event_id, TL_LOC);
void wait_flag(Pipe src, Pipe dst, Expr event_id, TL_LOC);
void pipe_barrier(Pipe pipe, TL_LOC);
void barrier_all(TL_LOC);
/// mode 0: all AICs or all AIVs; 1: the two AIVs of a block; 2: AIC <-> its AIVs.
void set_cross_flag(Pipe pipe, Expr event_id, int mode = 2, TL_LOC);
void wait_cross_flag(Expr event_id, TL_LOC);
void sync_all(TL_LOC);

// ---- Debug ---------------------------------------------------------------------------------

void printf(std::string fmt, std::vector<Expr> args = {}, TL_LOC);
void dump_tensor(TileArg src, int64_t desc = 0, TL_LOC);

// ---- Vector tile ops (AIV, UB operands, V pipe) -------------------------------------------------

namespace tile {
// The elementwise ops of include/tl/vector_ops.def (add sub mul div max min; exp ln abs
// reciprocal sqrt rsqrt sigmoid silu sin cos round; row_expand_add ... row_expand_min):
//   void add(TileArg dst, TileArg src0, TileArg src1);  // src1: tile, UB scalar or expression
//   void exp(TileArg dst, TileArg src);
//   void row_expand_sub(TileArg dst, TileArg src0, TileArg src1);  // src1: one value per row
#define TL_VECTOR_BINARY(NAME, ...) void NAME(TileArg dst, TileArg src0, TileArg src1, TL_LOC);
#define TL_VECTOR_UNARY(NAME, ...) void NAME(TileArg dst, TileArg src, TL_LOC);
#define TL_VECTOR_ROW_EXPAND(NAME, ...) \
  void row_expand_##NAME(TileArg dst, TileArg src0, TileArg src1, TL_LOC);
#include "tl/vector_ops.def"
void bitwise_and(TileArg dst, TileArg src0, TileArg src1, TL_LOC);
void bitwise_or(TileArg dst, TileArg src0, TileArg src1, TL_LOC);
void bitwise_xor(TileArg dst, TileArg src0, TileArg src1, TL_LOC);
void bitwise_not(TileArg dst, TileArg src, TL_LOC);
void shift_left(TileArg dst, TileArg src, Expr bits, TL_LOC);
void shift_right(TileArg dst, TileArg src, Expr bits, TL_LOC);
void relu(TileArg dst, TileArg src, TL_LOC);
void axpy(TileArg dst, TileArg src, Expr alpha, TL_LOC);
void leaky_relu(TileArg dst, TileArg src, Expr alpha, TL_LOC);
void clamp(TileArg dst, TileArg src, Expr lo, Expr hi, TL_LOC);
/// mode: "CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC",
/// "CAST_ODD".
void cast(TileArg dst, TileArg src, std::string mode = "CAST_NONE", TL_LOC);
/// dst: uint8 bitmask, one bit per element. mode: "LT", "GT", "EQ", "LE", "GE", "NE".
void compare(TileArg dst, TileArg src0, TileArg src1, std::string mode, TL_LOC);
void select(TileArg dst, TileArg mask, TileArg src0, TileArg src1, int mode = 2, TL_LOC);
void fill(TileArg dst, Expr value, TL_LOC);
void createvecindex(TileArg dst, Expr first, TL_LOC);
void arith_progression(TileArg dst, Expr first, Expr diff, std::optional<Expr> count = std::nullopt,
                       TL_LOC);
void gather(TileArg dst, TileArg src, TileArg offsets, Expr base = 0, TL_LOC);
/// pattern: "P0101" even, "P1010" odd, "P0001"/"P0010"/"P0100"/"P1000" one of four, "P1111" all.
void gather_mask(TileArg dst, TileArg src, std::string pattern, TL_LOC);
void gather_mask(TileArg dst, TileArg src, TileArg mask, TL_LOC);
void broadcast(TileArg dst, TileArg src, TL_LOC);
void transpose(TileArg dst, TileArg src, TL_LOC);
/// AscendC Brcb: repeat r broadcasts src[8 r + k] (k < 8) to the 32-byte block r *
/// dst_repeat_stride + k * dst_blk_stride of dst (stride 0 taken as 1). src/prims/brcb.cpp.
void brcb(TileArg dst, TileArg src, Expr repeat_times, Expr dst_blk_stride, Expr dst_repeat_stride,
          TL_LOC);
/// AscendC MulAddDst: dst = src0 * src1 + dst, element by element (half, float; one dtype, one
/// element count). src/prims/mul_add_dst.cpp.
void mul_add_dst(TileArg dst, TileArg src0, TileArg src1, TL_LOC);
}  // namespace tile

/// Low-level escape: emit any registered tile op by name.
void emit(std::string_view op, std::vector<TileArg> args, std::vector<Attr> attrs = {}, TL_LOC);
/// The same by its typed handle (tl/ops.h: `T::emit(ops::tile::add(), ...)`).
void emit(const OpDef& op, std::vector<TileArg> args, std::vector<Attr> attrs = {}, TL_LOC);

}  // namespace T
}  // namespace tl
