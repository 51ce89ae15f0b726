// The AscendC CPU model's calls (included by kernel_operator.h, which declares the tensors):
// data movement (DataCopy, DataCopyPad), the vector compute APIs and synchronisation. Each one
// maps its parameters, as the public AscendC documentation defines them, onto the engine's
// calls (ascendc_cpu/model.h); docs/ascendc.md ("CPU model") lists the mapping.
#pragma once

#include "ascendc_cpu/kernel_operator.h"

namespace AscendC {

// ---- Parameter structs -----------------------------------------------------------------------

/// DataCopy's strided form: blockCount blocks of blockLen 32-byte units, srcStride / dstStride
/// 32-byte units between the end of one block and the start of the next.
struct DataCopyParams {
  DataCopyParams() = default;
  DataCopyParams(uint16_t count, uint16_t len, uint16_t srcGap, uint16_t dstGap)
      : blockCount(count), blockLen(len), srcStride(srcGap), dstStride(dstGap) {}
  uint16_t blockCount = 1, blockLen = 0, srcStride = 0, dstStride = 0;
};
/// DataCopyPad's: blockLen in bytes; strides in bytes on the GM side, 32-byte blocks on UB's.
struct DataCopyExtParams {
  DataCopyExtParams() = default;
  DataCopyExtParams(uint16_t count, uint32_t len, uint32_t srcGap, uint32_t dstGap, uint32_t r)
      : blockCount(count), blockLen(len), srcStride(srcGap), dstStride(dstGap), rsv(r) {}
  uint16_t blockCount = 1;
  uint32_t blockLen = 0, srcStride = 0, dstStride = 0, rsv = 0;
};
template <typename T>
struct DataCopyPadExtParams {
  DataCopyPadExtParams() = default;
  DataCopyPadExtParams(bool pad, uint8_t left, uint8_t right, T value)
      : isPad(pad), leftPadding(left), rightPadding(right), paddingValue(value) {}
  bool isPad = false;
  uint8_t leftPadding = 0, rightPadding = 0;
  T paddingValue{};
};
struct BinaryRepeatParams {
  BinaryRepeatParams() = default;
  BinaryRepeatParams(uint8_t db, uint8_t s0b, uint8_t s1b, uint8_t dr, uint8_t s0r, uint8_t s1r)
      : dstBlkStride(db),
        src0BlkStride(s0b),
        src1BlkStride(s1b),
        dstRepStride(dr),
        src0RepStride(s0r),
        src1RepStride(s1r) {}
  uint8_t dstBlkStride = 1, src0BlkStride = 1, src1BlkStride = 1;
  uint8_t dstRepStride = 8, src0RepStride = 8, src1RepStride = 8;
};
struct BrcbRepeatParams {
  BrcbRepeatParams() = default;
  BrcbRepeatParams(uint16_t blk, uint16_t rep) : dstBlkStride(blk), dstRepStride(rep) {}
  uint16_t dstBlkStride = 1, dstRepStride = 8;
};

enum class RoundMode {
  CAST_NONE,
  CAST_RINT,
  CAST_FLOOR,
  CAST_CEIL,
  CAST_ROUND,
  CAST_TRUNC,
  CAST_ODD
};
enum class CMPMODE { LT, GT, EQ, LE, GE, NE };
enum class SELMODE {
  VSEL_CMPMASK_SPR = 0,
  VSEL_TENSOR_SCALAR_MODE = 1,
  VSEL_TENSOR_TENSOR_MODE = 2
};

namespace Pattern::Reduce {
struct AR {};  // reduce the last axis of [rows, cols]
struct RA {};  // reduce the first axis of [rows, cols]
}  // namespace Pattern::Reduce

namespace detail {
inline const char* round_name(RoundMode m) {
  static const char* names[] = {"CAST_NONE",  "CAST_RINT",  "CAST_FLOOR", "CAST_CEIL",
                                "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"};
  return names[static_cast<int>(m)];
}
inline const char* cmp_name(CMPMODE m) {
  static const char* names[] = {"LT", "GT", "EQ", "LE", "GE", "NE"};
  return names[static_cast<int>(m)];
}
inline int64_t align32(int64_t bytes) {
  return (bytes + 31) / 32 * 32;
}
}  // namespace detail

// ---- Data movement ---------------------------------------------------------------------------

template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t count,
              const tl::Loc& loc = tl::Loc::current()) {
  const int64_t bytes = static_cast<int64_t>(count) * sizeof(T);
  ascendc_cpu::copy_in(detail::where(loc, "DataCopy"), dst.ref, src.ref, {1, bytes, bytes, bytes},
                       false, 0.0);
}
template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count,
              const tl::Loc& loc = tl::Loc::current()) {
  const int64_t bytes = static_cast<int64_t>(count) * sizeof(T);
  ascendc_cpu::copy_out(detail::where(loc, "DataCopy"), dst.ref, src.ref, {1, bytes, bytes, bytes},
                        false);
}
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count,
              const tl::Loc& loc = tl::Loc::current()) {
  const int64_t bytes = static_cast<int64_t>(count) * sizeof(T);
  ascendc_cpu::copy_local(detail::where(loc, "DataCopy"), dst.ref, src.ref,
                          {1, bytes, bytes, bytes});
}
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
              const tl::Loc& loc = tl::Loc::current()) {
  const int64_t len = p.blockLen * 32;
  ascendc_cpu::copy_in(detail::where(loc, "DataCopy"), dst.ref, src.ref,
                       {p.blockCount, len, len + p.srcStride * 32, len + p.dstStride * 32}, false,
                       0.0);
}
template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
              const tl::Loc& loc = tl::Loc::current()) {
  const int64_t len = p.blockLen * 32;
  ascendc_cpu::copy_out(detail::where(loc, "DataCopy"), dst.ref, src.ref,
                        {p.blockCount, len, len + p.srcStride * 32, len + p.dstStride * 32}, false);
}

/// GM -> UB: each block padded in UB to 32 bytes. isPad = false leaves the padding lanes as
/// "dummy data" on the chip; the model writes zeros there (one value among those allowed).
template <typename T>
void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                 const DataCopyPadExtParams<T>& pad, const tl::Loc& loc = tl::Loc::current()) {
  auto w = detail::where(loc, "DataCopyPad");
  if (pad.leftPadding != 0)
    ascendc_cpu::fail(w, "leftPadding is not modelled (the tile ops pad on the right only)");
  const int64_t tail = (detail::align32(p.blockLen) - p.blockLen) / sizeof(T);
  if (pad.isPad && pad.rightPadding != 0 && pad.rightPadding != tail)
    ascendc_cpu::fail(w, "rightPadding " + std::to_string(pad.rightPadding) +
                             ": the model pads each block to its 32-byte boundary (" +
                             std::to_string(tail) + " elements here)");
  ascendc_cpu::copy_in(w, dst.ref, src.ref,
                       {p.blockCount, p.blockLen, int64_t{p.blockLen} + p.srcStride,
                        detail::align32(p.blockLen) + int64_t{p.dstStride} * 32},
                       true, pad.isPad ? detail::to_double(pad.paddingValue) : 0.0);
}
template <typename T>
void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p,
                 const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::copy_out(
      detail::where(loc, "DataCopyPad"), dst.ref, src.ref,
      {p.blockCount, p.blockLen, detail::align32(p.blockLen) + int64_t{p.srcStride} * 32,
       int64_t{p.blockLen} + p.dstStride},
      true);
}

// ---- Vector: count forms ---------------------------------------------------------------------

#define TL_ASCENDC_BINARY(NAME, OP)                                                             \
  template <typename T>                                                                         \
  void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,  \
            const int32_t& count, const tl::Loc& loc = tl::Loc::current()) {                    \
    ascendc_cpu::vec_binary(detail::where(loc, #NAME), OP, dst.ref, src0.ref, src1.ref, count); \
  }                                                                                             \
  template <typename T>                                                                         \
  void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,  \
            uint64_t mask, uint8_t repeatTimes, const BinaryRepeatParams& p,                    \
            const tl::Loc& loc = tl::Loc::current()) {                                          \
    const int64_t params[6] = {p.dstBlkStride, p.src0BlkStride, p.src1BlkStride,                \
                               p.dstRepStride, p.src0RepStride, p.src1RepStride};               \
    ascendc_cpu::vec_binary_repeat(detail::where(loc, #NAME), OP, dst.ref, src0.ref, src1.ref,  \
                                   mask, repeatTimes, params);                                  \
  }
TL_ASCENDC_BINARY(Add, "tile.add")
TL_ASCENDC_BINARY(Sub, "tile.sub")
TL_ASCENDC_BINARY(Mul, "tile.mul")
TL_ASCENDC_BINARY(Div, "tile.div")
TL_ASCENDC_BINARY(Max, "tile.max")
TL_ASCENDC_BINARY(Min, "tile.min")
#undef TL_ASCENDC_BINARY

#define TL_ASCENDC_SCALAR(NAME, OP)                                                \
  template <typename T>                                                            \
  void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalar, \
            const int32_t& count, const tl::Loc& loc = tl::Loc::current()) {       \
    ascendc_cpu::vec_scalar(detail::where(loc, #NAME), OP, dst.ref, src.ref,       \
                            detail::to_double(scalar), count);                     \
  }
TL_ASCENDC_SCALAR(Adds, "tile.add")
TL_ASCENDC_SCALAR(Muls, "tile.mul")
TL_ASCENDC_SCALAR(Maxs, "tile.max")
TL_ASCENDC_SCALAR(Mins, "tile.min")
#undef TL_ASCENDC_SCALAR

#define TL_ASCENDC_UNARY(NAME, OP)                                                      \
  template <typename T>                                                                 \
  void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, \
            const tl::Loc& loc = tl::Loc::current()) {                                  \
    ascendc_cpu::vec_unary(detail::where(loc, #NAME), OP, dst.ref, src.ref, count);     \
  }
TL_ASCENDC_UNARY(Exp, "tile.exp")
TL_ASCENDC_UNARY(Ln, "tile.ln")
TL_ASCENDC_UNARY(Abs, "tile.abs")
TL_ASCENDC_UNARY(Sqrt, "tile.sqrt")
TL_ASCENDC_UNARY(Rsqrt, "tile.rsqrt")
TL_ASCENDC_UNARY(Reciprocal, "tile.reciprocal")
TL_ASCENDC_UNARY(Relu, "tile.relu")
#undef TL_ASCENDC_UNARY

template <typename D, typename S>
void Cast(const LocalTensor<D>& dst, const LocalTensor<S>& src, RoundMode mode, uint32_t count,
          const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::vec_cast(detail::where(loc, "Cast"), dst.ref, src.ref, detail::round_name(mode),
                        count);
}
template <typename T>
void Duplicate(const LocalTensor<T>& dst, const T& value, const int32_t& count,
               const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::vec_fill(detail::where(loc, "Duplicate"), dst.ref, detail::to_double(value), count);
}
template <typename T, typename U>
void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalar,
          const int32_t& count, const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::vec_axpy(detail::where(loc, "Axpy"), dst.ref, src.ref, detail::to_double(scalar),
                        count);
}
/// MulAddDst ("MulAddDst" page): dst = src0 * src1 + dst; half, float.
template <typename T, typename U>
void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,
               const int32_t& count, const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::vec_binary(detail::where(loc, "MulAddDst"), "tile.mul_add_dst", dst.ref, src0.ref,
                          src1.ref, count);
}
template <typename U, typename T>
void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
             CMPMODE mode, uint32_t count, const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::vec_compare(detail::where(loc, "Compare"), dst.ref, src0.ref, src1.ref,
                           detail::cmp_name(mode), count);
}
template <typename U, typename T>
void Compares(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T& src1, CMPMODE mode,
              uint32_t count, const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::vec_compare_scalar(detail::where(loc, "Compares"), dst.ref, src0.ref,
                                  detail::to_double(src1), detail::cmp_name(mode), count);
}
template <typename T, typename U>
void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
            const LocalTensor<T>& src1, SELMODE mode, uint32_t count,
            const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::vec_select(detail::where(loc, "Select"), dst.ref, selMask.ref, src0.ref, src1.ref,
                          static_cast<int>(mode), count);
}
template <typename T, typename U>
void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
            T src1, SELMODE mode, uint32_t count, const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::vec_select_scalar(detail::where(loc, "Select"), dst.ref, selMask.ref, src0.ref,
                                 detail::to_double(src1), static_cast<int>(mode), count);
}

/// Brcb: source element 8 * i + k fills block k of repeat i of dst.
template <typename T>
void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint8_t repeatTimes,
          const BrcbRepeatParams& p, const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::brcb(detail::where(loc, "Brcb"), dst.ref, src.ref, repeatTimes, p.dstBlkStride,
                    p.dstRepStride);
}

/// Reductions with a pattern: AR reduces each row of srcShape = {rows, cols} to one element of
/// dst, RA each column; srcInnerPad: each row is padded in UB to a whole 32-byte block (its pitch),
/// else rows are back to back. The count form ("tensor first n", the "ReduceSum" / "ReduceMax"
/// pages): one value at dst, sharedTmpBuffer of at least the documented minimum
/// (ascendc_cpu::reduce_tmp_elems; MAXMIN: the value-and-index rule); calIndex, ReduceMax/Min's,
/// is modelled false only (the value).
#define TL_ASCENDC_REDUCE(NAME, OP, MAXMIN)                                                     \
  template <typename T, typename P, bool isReuseSource = false>                                 \
  void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src,                               \
            const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t srcShape[],             \
            bool srcInnerPad, const tl::Loc& loc = tl::Loc::current()) {                        \
    static_assert(                                                                              \
        std::is_same_v<P, Pattern::Reduce::AR> || std::is_same_v<P, Pattern::Reduce::RA>,       \
        "the CPU model reduces with Pattern::Reduce::AR or RA");                                \
    (void)sharedTmpBuffer;                                                                      \
    const int64_t per_block = 32 / sizeof(T), cols = srcShape[1];                               \
    const int64_t pitch = srcInnerPad ? (cols + per_block - 1) / per_block * per_block : cols;  \
    ascendc_cpu::vec_reduce(detail::where(loc, #NAME), OP, dst.ref, src.ref, srcShape[0], cols, \
                            pitch, std::is_same_v<P, Pattern::Reduce::RA>);                     \
  }                                                                                             \
  template <typename T>                                                                         \
  void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src,                               \
            const LocalTensor<T>& sharedTmpBuffer, const int32_t count, bool calIndex = false,  \
            const tl::Loc& loc = tl::Loc::current()) {                                          \
    const auto w = detail::where(loc, #NAME);                                                   \
    if (calIndex) ascendc_cpu::fail(w, "calIndex = true is not modelled (the value only)");     \
    ascendc_cpu::check_reduce_tmp(w, sharedTmpBuffer.ref, count, MAXMIN);                       \
    ascendc_cpu::vec_reduce(w, OP, dst.ref, src.ref, 1, count, count);                          \
  }
TL_ASCENDC_REDUCE(ReduceSum, "reduce_sum", false)
TL_ASCENDC_REDUCE(ReduceMax, "reduce_max", true)
TL_ASCENDC_REDUCE(ReduceMin, "reduce_min", true)
#undef TL_ASCENDC_REDUCE

/// ReduceOrder of WholeReduceMax/Min: where the value and its index go in dst.
enum class ReduceOrder { ORDER_VALUE_INDEX, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };

/// WholeReduceSum/Max/Min, mask in the continuous mode: each repeat reduces its first `mask`
/// elements to one value, dst values dstRepStride elements apart ("WholeReduceSum" /
/// "WholeReduceMax" pages). Max/Min model ORDER_ONLY_VALUE only.
template <typename T, bool isSetMask = true>
void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,
                    const int32_t repeatTime, const int32_t dstRepStride,
                    const int32_t srcBlkStride, const int32_t srcRepStride,
                    const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::vec_whole_reduce(detail::where(loc, "WholeReduceSum"), "reduce_sum", dst.ref,
                                src.ref, mask, repeatTime, dstRepStride, srcBlkStride,
                                srcRepStride);
}
#define TL_ASCENDC_WHOLE_REDUCE(NAME, OP)                                                     \
  template <typename T, bool isSetMask = true>                                                \
  void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,         \
            const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride, \
            const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,   \
            const tl::Loc& loc = tl::Loc::current()) {                                        \
    const auto w = detail::where(loc, #NAME);                                                 \
    if (order != ReduceOrder::ORDER_ONLY_VALUE)                                               \
      ascendc_cpu::fail(w, "only ReduceOrder::ORDER_ONLY_VALUE is modelled");                 \
    ascendc_cpu::vec_whole_reduce(w, OP, dst.ref, src.ref, mask, repeatTime, dstRepStride,    \
                                  srcBlkStride, srcRepStride);                                \
  }
TL_ASCENDC_WHOLE_REDUCE(WholeReduceMax, "reduce_max")
TL_ASCENDC_WHOLE_REDUCE(WholeReduceMin, "reduce_min")
#undef TL_ASCENDC_WHOLE_REDUCE

/// ArithProgression: dst[i] = firstValue + i * diffValue, i < count ("ArithProgression" page).
template <typename T>
void ArithProgression(const LocalTensor<T>& dst, const T firstValue, const T diffValue,
                      const int32_t count, const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::vec_arith_progression(detail::where(loc, "ArithProgression"), dst.ref,
                                     detail::to_double(firstValue), detail::to_double(diffValue),
                                     count);
}

// ---- Synchronisation -------------------------------------------------------------------------

enum class HardEvent {
  MTE2_MTE1,
  MTE1_MTE2,
  MTE1_M,
  M_MTE1,
  MTE2_V,
  V_MTE2,
  MTE3_V,
  V_MTE3,
  M_V,
  V_M,
  V_V,
  MTE3_MTE1,
  MTE1_MTE3,
  MTE1_V,
  MTE2_M,
  M_MTE2,
  V_MTE1,
  M_FIX,
  FIX_M,
  MTE3_MTE2,
  MTE2_MTE3,
  S_V,
  V_S,
  S_MTE2,
  MTE2_S,
  S_MTE3,
  MTE3_S,
  MTE2_FIX,
  FIX_MTE2,
  FIX_S,
  M_S,
  FIX_MTE3,
  MTE1_FIX,
  FIX_MTE1,
  FIX_FIX,
};

namespace detail {
using P = tl::Pipe;
struct PipePair {
  P src, dst;
};
constexpr PipePair pipes_of(HardEvent e) {
  constexpr PipePair table[] = {
      {P::MTE2, P::MTE1}, {P::MTE1, P::MTE2}, {P::MTE1, P::M},  {P::M, P::MTE1},
      {P::MTE2, P::V},    {P::V, P::MTE2},    {P::MTE3, P::V},  {P::V, P::MTE3},
      {P::M, P::V},       {P::V, P::M},       {P::V, P::V},     {P::MTE3, P::MTE1},
      {P::MTE1, P::MTE3}, {P::MTE1, P::V},    {P::MTE2, P::M},  {P::M, P::MTE2},
      {P::V, P::MTE1},    {P::M, P::FIX},     {P::FIX, P::M},   {P::MTE3, P::MTE2},
      {P::MTE2, P::MTE3}, {P::S, P::V},       {P::V, P::S},     {P::S, P::MTE2},
      {P::MTE2, P::S},    {P::S, P::MTE3},    {P::MTE3, P::S},  {P::MTE2, P::FIX},
      {P::FIX, P::MTE2},  {P::FIX, P::S},     {P::M, P::S},     {P::FIX, P::MTE3},
      {P::MTE1, P::FIX},  {P::FIX, P::MTE1},  {P::FIX, P::FIX},
  };
  return table[static_cast<int>(e)];
}
constexpr tl::Pipe pipe_of(pipe_t p) {
  constexpr tl::Pipe table[] = {P::S, P::V, P::M, P::MTE1, P::MTE2, P::MTE3, P::FIX, P::ALL};
  return table[static_cast<int>(p)];
}
}  // namespace detail

template <HardEvent E>
void SetFlag(int32_t id, const tl::Loc& loc = tl::Loc::current()) {
  constexpr auto p = detail::pipes_of(E);
  ascendc_cpu::set_flag(detail::where(loc, "SetFlag"), p.src, p.dst, id);
}
template <HardEvent E>
void WaitFlag(int32_t id, const tl::Loc& loc = tl::Loc::current()) {
  constexpr auto p = detail::pipes_of(E);
  ascendc_cpu::wait_flag(detail::where(loc, "WaitFlag"), p.src, p.dst, id);
}
template <pipe_t P>
void PipeBarrier(const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::pipe_barrier(detail::where(loc, "PipeBarrier"), detail::pipe_of(P));
}
template <uint8_t modeId, pipe_t P>
void CrossCoreSetFlag(uint16_t flagId, const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::cross_set(detail::where(loc, "CrossCoreSetFlag"), modeId, detail::pipe_of(P),
                         flagId);
}
template <uint8_t modeId = 0, pipe_t P = PIPE_S>
void CrossCoreWaitFlag(uint16_t flagId, const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::cross_wait(detail::where(loc, "CrossCoreWaitFlag"), flagId);
}
/// SyncAll ("SyncAll" API page): a barrier over every AIV of the launch (isAIVOnly) or every
/// core; the model keeps the blocks resident until all have arrived (src/ascendc_cpu/model.cpp).
template <bool isAIVOnly = true>
void SyncAll(const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::sync_all(detail::where(loc, "SyncAll"), isAIVOnly);
}

}  // namespace AscendC
