// The AscendC CPU model's engine: what the AscendC API of kernel_operator.h calls into, and the
// launch that runs an AscendC kernel function on the CPU (docs/ascendc.md, "CPU model").
//
// kernel_operator.h is thin: each AscendC call turns its tensors into Local/Global references
// (memory, byte offset, element type) and calls one function here, which builds the tile op of
// the virtual NPU with the same meaning over buffers at those bytes and executes it on the
// current core through tl::npu::DirectLaunch (tl/npu/direct.h): the VM's own semantics,
// rounding and checks, recorded into the VM's trace so the hazard checker reads AscendC code as
// it reads Tile IR. launch() runs the kernel function once per core (AIC, AIV0, AIV1 of each
// block, MIX 1:2), one core at a time on host threads that hand over at cross-core waits.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tl/ir.h"
#include "tl/runtime.h"
#include "tl/target.h"

namespace tl::npu {
struct Trace;
}

namespace ascendc_cpu {

using tl::DType;
using tl::MemScope;
using tl::Pipe;

/// Where an AscendC call is in the kernel source, and which call it is (for messages).
struct Where {
  const char* file = "";
  int line = 0;
  const char* api = "";
};

/// A LocalTensor: `count` elements of `dtype` from byte `offset` of memory `scope`.
struct LocalRef {
  MemScope scope = MemScope::UB;
  int64_t offset = 0;
  DType dtype = DType::Float32;
  int64_t count = 0;
};
/// A GlobalTensor: elements of `dtype` from host address `addr` (inside a launch tensor).
struct GlobalRef {
  uint8_t* addr = nullptr;
  DType dtype = DType::Float32;
  int64_t count = 0;  // SetGlobalBuffer's bufferSize (0: unknown)
};

// ---- The launch ------------------------------------------------------------------------------

struct GmArg {
  std::string name;  // the kernel parameter's name, for messages and hazard reports
  tl::Tensor tensor;
};
struct LaunchConfig {
  std::string kernel = "kernel";
  int64_t num_blocks = 1;              // <<<numBlocks, ...>>>: MIX 1:2, an AIC and two AIVs each
  std::vector<GmArg> tensors;          // every GM address the kernel uses lies in one of these
  const tl::Target* target = nullptr;  // default_target() when null
  bool check_hazards = true;           // run the hazard and flag checkers on the trace afterwards
  tl::npu::Trace* trace = nullptr;     // if set, receives the trace (else a local one is used)
};
/// Runs `kernel` (the call of the AscendC entry with its arguments) on every core of every
/// block. Errors (bad use of the API, a deadlock, hazards) are tl::Errors naming the call, the
/// core and the source line.
void launch(const LaunchConfig& cfg, const std::function<void()>& kernel);

// ---- The current core ------------------------------------------------------------------------

bool on_aic();
int64_t block_idx();  // GetBlockIdx: the block on the AIC, block * 2 + vid on the AIVs
int64_t block_num();
int64_t sub_block_idx();
int64_t capacity(MemScope s);
[[noreturn]] void fail(const Where& w, const std::string& msg);

// ---- Calls -------------------------------------------------------------------------------

/// A strided block copy in bytes: `count` blocks of `len` bytes; `src_pitch` / `dst_pitch`
/// bytes between the starts of consecutive blocks on each side.
struct Blocks {
  int64_t count = 1, len = 0, src_pitch = 0, dst_pitch = 0;
};
/// GM -> on-chip (UB: `pad` fills each block's tail to 32 bytes with pad_value, DataCopyPad).
void copy_in(const Where& w, const LocalRef& dst, const GlobalRef& src, const Blocks& b, bool pad,
             double pad_value);
/// On-chip -> GM.
void copy_out(const Where& w, const GlobalRef& dst, const LocalRef& src, const Blocks& b, bool pad);
/// On-chip -> on-chip (UB -> UB on pipe V).
void copy_local(const Where& w, const LocalRef& dst, const LocalRef& src, const Blocks& b);

/// Count forms: `op` is the VM's op ("tile.add", ...), operands `count` elements each.
void vec_binary(const Where& w, const char* op, const LocalRef& dst, const LocalRef& a,
                const LocalRef& b, int64_t count);
void vec_scalar(const Where& w, const char* op, const LocalRef& dst, const LocalRef& a, double s,
                int64_t count);
void vec_unary(const Where& w, const char* op, const LocalRef& dst, const LocalRef& a,
               int64_t count);
/// Mask + repeat form of a binary op: `mask` elements of each repeat (a count), `repeat`
/// repeats, BinaryRepeatParams {dstBlk, src0Blk, src1Blk, dstRep, src0Rep, src1Rep}.
void vec_binary_repeat(const Where& w, const char* op, const LocalRef& dst, const LocalRef& a,
                       const LocalRef& b, uint64_t mask, int64_t repeat, const int64_t params[6]);
void vec_cast(const Where& w, const LocalRef& dst, const LocalRef& src, const char* mode,
              int64_t count);
void vec_fill(const Where& w, const LocalRef& dst, double value, int64_t count);
void vec_axpy(const Where& w, const LocalRef& dst, const LocalRef& src, double alpha,
              int64_t count);
void vec_compare(const Where& w, const LocalRef& dst, const LocalRef& a, const LocalRef& b,
                 const char* mode, int64_t count);
void vec_compare_scalar(const Where& w, const LocalRef& dst, const LocalRef& a, double b,
                        const char* mode, int64_t count);
void vec_select(const Where& w, const LocalRef& dst, const LocalRef& mask, const LocalRef& a,
                const LocalRef& b, int mode, int64_t count);
void vec_select_scalar(const Where& w, const LocalRef& dst, const LocalRef& mask, const LocalRef& a,
                       double b, int mode, int64_t count);
/// Reduction of `rows` x `cols`, rows `pitch` elements apart ("reduce_sum", ...): one result
/// per row (`over_rows` false: Pattern AR) or per column (true: Pattern RA).
void vec_reduce(const Where& w, const char* op, const LocalRef& dst, const LocalRef& src,
                int64_t rows, int64_t cols, int64_t pitch, bool over_rows = false);
/// Brcb: each of repeat * 8 source elements fills one 32-byte block of dst.
void brcb(const Where& w, const LocalRef& dst, const LocalRef& src, int64_t repeat,
          int64_t dst_blk_stride, int64_t dst_rep_stride);

// ---- Row reductions (reduce.cpp) -------------------------------------------------------------

/// The documented minimum of a count-form ReduceSum (`max_min` false) or ReduceMax/ReduceMin
/// sharedTmpBuffer, in elements of `t`, for `count` source elements.
int64_t reduce_tmp_elems(DType t, int64_t count, bool max_min);
/// An error naming `w` unless `tmp` is 32-byte aligned and holds reduce_tmp_elems elements.
void check_reduce_tmp(const Where& w, const LocalRef& tmp, int64_t count, bool max_min);
/// WholeReduceSum/Max/Min (`op` "reduce_sum", ...): repeat i reduces the first `mask` elements
/// from src element i * src_rep_stride * (32 / sizeof) into dst element i * dst_rep_stride
/// (max/min: ReduceOrder::ORDER_ONLY_VALUE, the value only).
void vec_whole_reduce(const Where& w, const char* op, const LocalRef& dst, const LocalRef& src,
                      int64_t mask, int64_t repeat, int64_t dst_rep_stride, int64_t src_blk_stride,
                      int64_t src_rep_stride);
/// ArithProgression (progression.cpp): dst[i] = first + i * diff, i < count.
void vec_arith_progression(const Where& w, const LocalRef& dst, double first, double diff,
                           int64_t count);

// ---- Cube (cube.cpp) -------------------------------------------------------------------------

/// DataCopy GM -> L1 with Nd2NzParams (ndNum 1, dstNzNStride 1): `rows` x `cols` of GM rows
/// `src_pitch` elements apart into NZ column blocks `c0_stride` rows tall.
void copy_nd2nz(const Where& w, const LocalRef& dst, const GlobalRef& src, int64_t rows,
                int64_t cols, int64_t src_pitch, int64_t c0_stride);
/// LoadData L1 -> L0A/L0B with LoadData2DParams: `repeat` 512-byte fractals, source fractal
/// start + i * src_stride, destination fractal i * (1 + dst_gap); `transpose` turns each
/// 16 x 16 fractal (16-bit types).
void load_data(const Where& w, const LocalRef& dst, const LocalRef& src, int64_t start,
               int64_t repeat, int64_t src_stride, int64_t dst_gap, bool transpose);
/// Mmad: C [m, n] (L0C, NZ) [+]= A [m, k] (L0A, ZZ) x B [k, n] (L0B, ZN).
void mmad(const Where& w, const LocalRef& c, const LocalRef& a, const LocalRef& b, int64_t m,
          int64_t n, int64_t k, bool init);
/// Fixpipe L0C -> GM, row major: m x n of L0C (column blocks `src_stride` rows tall) into GM
/// rows `dst_stride` elements apart, converting to dst's dtype.
void fixpipe(const Where& w, const GlobalRef& dst, const LocalRef& src, int64_t m, int64_t n,
             int64_t src_stride, int64_t dst_stride, bool relu);
/// InitConstValue: `blocks` 32-byte blocks of dst = value.
void init_const(const Where& w, const LocalRef& dst, int64_t blocks, double value);

// ---- Synchronisation ------------------------------------------------------------------------

void set_flag(const Where& w, Pipe src, Pipe dst, int64_t id);
void wait_flag(const Where& w, Pipe src, Pipe dst, int64_t id);
void pipe_barrier(const Where& w, Pipe p);
void cross_set(const Where& w, int mode, Pipe p, int64_t id);
void cross_wait(const Where& w, int64_t id);
/// SyncAll: waits until every participating core of every block (every AIV when `aiv_only`,
/// else every core) has arrived; a participant that finishes first is a deadlock.
void sync_all(const Where& w, bool aiv_only);

// ---- Scalar access (GetValue / SetValue) ----------------------------------------------------

/// DataCacheCleanAndInvalid: the VM's T.dcci on the 64-byte line holding `addr`, clipped to the
/// launch tensor that holds it (SINGLE_CACHE_LINE), or with `entire` (ENTIRE_DATA_CACHE) on that
/// tensor: the hazard checker then sees the scalar accesses' cache maintenance.
void dcci(const Where& w, const uint8_t* addr, bool entire);

/// The address of element `index` of the tensor, after recording the scalar access.
uint8_t* local_element(const Where& w, const LocalRef& t, int64_t index, bool write);
uint8_t* global_element(const Where& w, const GlobalRef& t, int64_t index, bool write);

/// Scalar conversions of the element types without a C++ type (fp16, bf16), with the VM's
/// rounding (tl/npu/numerics.h): nearest-even.
float f16_to_float(uint16_t bits);
uint16_t float_to_f16(float x);
float bf16_to_float(uint16_t bits);
uint16_t float_to_bf16(float x);

}  // namespace ascendc_cpu
