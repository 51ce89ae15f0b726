// The AscendC CPU model's gather, sort and index-generation APIs and the atomic-add switch
// (included by kernel_operator.h): Gather, GatherMask (built-in patterns), ArithProgression,
// CreateVecIndex, Sort32, MrgSort, Copy (continuous mask), SetAtomicAdd / SetAtomicNone. Each maps
// its parameters, as the public AscendC documentation defines them (asc-devkit API pages of the
// same names), onto the engine's calls (ascendc_cpu/model_sort.h); docs/ascendc.md ("CPU model")
// lists the mapping.
#pragma once

#include "ascendc_cpu/kernel_operator.h"
#include "ascendc_cpu/model_sort.h"

namespace AscendC {

/// GatherMask's repeat parameters ("GatherMask" page): src0's block and repeat strides in
/// 32-byte blocks, the repeat count, src1's repeat stride (pattern tensors only).
struct GatherMaskParams {
  uint8_t src0BlockStride = 1;
  uint16_t repeatTimes = 0;
  uint16_t src0RepeatStride = 8;
  uint8_t src1RepeatStride = 0;
};

/// MrgSort's queues ("MrgSort" page): src3/src4 unused with fewer queues.
template <typename T>
struct MrgSortSrcList {
  LocalTensor<T> src1;
  LocalTensor<T> src2;
  LocalTensor<T> src3;
  LocalTensor<T> src4;
};

/// Copy's strides ("Copy" page): block strides within a repeat, repeat strides in blocks.
struct CopyRepeatParams {
  CopyRepeatParams() = default;
  CopyRepeatParams(uint16_t dstStrideIn, uint16_t srcStrideIn, uint16_t dstRepeatSizeIn,
                   uint16_t srcRepeatSizeIn)
      : dstStride(dstStrideIn),
        srcStride(srcStrideIn),
        dstRepeatSize(dstRepeatSizeIn),
        srcRepeatSize(srcRepeatSizeIn) {}
  uint16_t dstStride = 1, srcStride = 1, dstRepeatSize = 8, srcRepeatSize = 8;
};

/// Copy between UB positions, mask continuous mode (the first `mask` elements of a repeat).
template <typename T>
void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask,
          const uint8_t repeatTime, const CopyRepeatParams& p,
          const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::copy_masked(detail::where(loc, "Copy"), dst.ref, src.ref, mask, repeatTime,
                           p.dstStride, p.srcStride, p.dstRepeatSize, p.srcRepeatSize);
}

template <typename T>
void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src,
            const LocalTensor<uint32_t>& srcOffset, const uint32_t srcBaseAddr,
            const uint32_t count, const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::gather(detail::where(loc, "Gather"), dst.ref, src.ref, srcOffset.ref, srcBaseAddr,
                      count);
}

/// The built-in-pattern form in normal mode (reduceMode false; mask then unused).
template <typename T>
void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const uint8_t src1Pattern,
                const bool reduceMode, const uint32_t mask, const GatherMaskParams& params,
                uint64_t& rsvdCnt, const tl::Loc& loc = tl::Loc::current()) {
  auto w = detail::where(loc, "GatherMask");
  (void)mask;
  if (reduceMode) ascendc_cpu::fail(w, "reduceMode = true (counter mode) is not modelled");
  ascendc_cpu::gather_mask(w, dst.ref, src0.ref, src1Pattern, params.repeatTimes,
                           params.src0BlockStride, params.src0RepeatStride);
  const int64_t n = int64_t{params.repeatTimes} * 256 / static_cast<int64_t>(sizeof(T));
  rsvdCnt = static_cast<uint64_t>(src1Pattern <= 2 ? n / 2 : src1Pattern == 7 ? n : n / 4);
}

template <typename T>
void CreateVecIndex(const LocalTensor<T>& dst, const T firstValue, uint32_t calCount,
                    const tl::Loc& loc = tl::Loc::current()) {
  // ArithProgression with diffValue 1 (kernel_operator_calls.h; progression.cpp).
  ascendc_cpu::vec_arith_progression(detail::where(loc, "CreateVecIndex"), dst.ref,
                                     detail::to_double(firstValue), 1.0, calCount);
}

template <typename T>
void Sort32(const LocalTensor<T>& dst, const LocalTensor<T>& src0,
            const LocalTensor<uint32_t>& src1, const int32_t repeatTime,
            const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::sort32(detail::where(loc, "Sort32"), dst.ref, src0.ref, src1.ref, repeatTime);
}

template <typename T, bool isExhaustedSuspension = false>
void MrgSort(const LocalTensor<T>& dst, const MrgSortSrcList<T>& sortList,
             const uint16_t elementCountList[4], uint32_t sortedNum[4], uint16_t validBit,
             const int32_t repeatTime, const tl::Loc& loc = tl::Loc::current()) {
  const ascendc_cpu::LocalRef q[4] = {sortList.src1.ref, sortList.src2.ref, sortList.src3.ref,
                                      sortList.src4.ref};
  ascendc_cpu::mrg_sort(detail::where(loc, "MrgSort"), dst.ref, q, elementCountList, validBit,
                        repeatTime, isExhaustedSuspension);
  for (int i = 0; i < 4; ++i) sortedNum[i] = (validBit >> i) & 1 ? elementCountList[i] : 0;
}

template <typename T>
void SetAtomicAdd(const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::set_atomic(detail::where(loc, "SetAtomicAdd"), true, detail::dtype_of<T>());
}
inline void SetAtomicNone(const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::set_atomic(detail::where(loc, "SetAtomicNone"), false, tl::DType::Float32);
}

}  // namespace AscendC
