// The AscendC CPU model's cube calls (included by kernel_operator.h): DataCopy GM -> L1 with
// Nd2NzParams, LoadData with LoadData2DParams, Mmad with MmadParams, Fixpipe with
// FixpipeParamsV220 (row-major output) and InitConstValue, with the parameter structs as the
// public AscendC documentation defines them. Each maps onto the engine (ascendc_cpu/model.h,
// src/ascendc_cpu/cube.cpp); docs/ascendc.md ("CPU model") lists the mapping.
#pragma once

#include "ascendc_cpu/kernel_operator.h"

enum QuantMode_t { NoQuant, F322F16, F322BF16 };

namespace AscendC {

/// DataCopy's ND -> NZ conversion: ndNum matrices of nValue rows x dValue columns, GM rows
/// srcDValue elements apart, into NZ column blocks dstNzC0Stride (32-byte units) apart.
struct Nd2NzParams {
  Nd2NzParams() = default;
  Nd2NzParams(uint16_t nd, uint16_t n, uint16_t d, uint16_t srcMatrix, uint16_t srcD,
              uint16_t c0Stride, uint16_t nStride, uint16_t dstMatrix)
      : ndNum(nd),
        nValue(n),
        dValue(d),
        srcNdMatrixStride(srcMatrix),
        srcDValue(srcD),
        dstNzC0Stride(c0Stride),
        dstNzNStride(nStride),
        dstNzMatrixStride(dstMatrix) {}
  uint16_t ndNum = 1, nValue = 0, dValue = 0, srcNdMatrixStride = 0, srcDValue = 0;
  uint16_t dstNzC0Stride = 0, dstNzNStride = 1, dstNzMatrixStride = 0;
};
struct LoadData2DParams {
  uint16_t startIndex = 0;
  uint8_t repeatTimes = 0;
  uint16_t srcStride = 0;
  uint8_t sid = 0;
  uint16_t dstGap = 0;
  bool ifTranspose = false;
  uint8_t addrMode = 0;
};
struct MmadParams {
  uint16_t m = 0, n = 0, k = 0;
  bool isBias = false;
  int32_t fmOffset = 0;
  bool enSsparse = false, enWinogradA = false, enWinogradB = false;
  uint8_t unitFlag = 0;
  bool kDirectionAlign = false, cmatrixSource = false, cmatrixInitVal = true;
};
struct FixpipeParamsV220 {
  uint16_t nSize = 0, mSize = 0, srcStride = 0;
  uint32_t dstStride = 0;
  QuantMode_t quantPre = NoQuant;
  uint64_t deqScalar = 0;
  uint16_t ndNum = 1, srcNdStride = 0, dstNdStride = 0;
  bool reluEn = false;
  uint8_t unitFlag = 0;
  bool isChannelSplit = false;
};
struct FixpipeConfig {
  int format;  // 0: row major (NZ -> ND), 1: NZ
};
inline constexpr FixpipeConfig CFG_ROW_MAJOR{0};
inline constexpr FixpipeConfig CFG_NZ{1};
template <typename T>
struct InitConstValueParams {
  uint16_t repeatTimes = 0, blockNum = 0, dstGap = 0;
  T initValue{};
};

template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p,
              const tl::Loc& loc = tl::Loc::current()) {
  auto w = detail::where(loc, "DataCopy");
  if (p.ndNum != 1 || p.dstNzNStride != 1)
    ascendc_cpu::fail(w, "Nd2NzParams with ndNum != 1 or dstNzNStride != 1 is not modelled");
  ascendc_cpu::copy_nd2nz(w, dst.ref, src.ref, p.nValue, p.dValue, p.srcDValue, p.dstNzC0Stride);
}

template <typename T>
void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p,
              const tl::Loc& loc = tl::Loc::current()) {
  auto w = detail::where(loc, "LoadData");
  if (p.addrMode != 0) ascendc_cpu::fail(w, "addrMode != 0 is not modelled");
  ascendc_cpu::load_data(w, dst.ref, src.ref, p.startIndex, p.repeatTimes, p.srcStride, p.dstGap,
                         p.ifTranspose);
}

template <typename C, typename T>
void Mmad(const LocalTensor<C>& dst, const LocalTensor<T>& fm, const LocalTensor<T>& filter,
          const MmadParams& p, const tl::Loc& loc = tl::Loc::current()) {
  auto w = detail::where(loc, "Mmad");
  if (p.cmatrixSource || p.isBias)
    ascendc_cpu::fail(w, "a bias (cmatrixSource / isBias) is not modelled");
  ascendc_cpu::mmad(w, dst.ref, fm.ref, filter.ref, p.m, p.n, p.k, p.cmatrixInitVal);
}

template <typename D, typename S, FixpipeConfig config>
void Fixpipe(const GlobalTensor<D>& dst, const LocalTensor<S>& src, const FixpipeParamsV220& p,
             const tl::Loc& loc = tl::Loc::current()) {
  auto w = detail::where(loc, "Fixpipe");
  if (config.format != CFG_ROW_MAJOR.format)
    ascendc_cpu::fail(w, "only CFG_ROW_MAJOR (NZ -> ND) is modelled");
  // The conversion is the destination's type; quantPre must name it (asc-devkit Fixpipe:
  // fp32 -> fp16 takes F322F16, fp32 -> bf16 F322BF16, the same type NoQuant).
  constexpr bool same = std::is_same_v<D, S>;
  const bool ok =
      (same && p.quantPre == NoQuant) ||
      (std::is_same_v<D, half> && std::is_same_v<S, float> && p.quantPre == F322F16) ||
      (std::is_same_v<D, bfloat16_t> && std::is_same_v<S, float> && p.quantPre == F322BF16);
  if (!ok) ascendc_cpu::fail(w, "quantPre does not match the source and destination types");
  if (p.ndNum != 1) ascendc_cpu::fail(w, "ndNum != 1 is not modelled");
  ascendc_cpu::fixpipe(w, dst.ref, src.ref, p.mSize, p.nSize, p.srcStride, p.dstStride, p.reluEn);
}

/// Trap ("Trap" API page: stops the AI Core; in CPU mode an assert). The emitter guards a
/// run-time parameter that its field may not hold with it (src/ascendc/emit_cube.cpp); the
/// model fails naming the line.
inline void Trap(const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::fail(detail::where(loc, "Trap"),
                    "the kernel trapped (a guarded parameter is out of "
                    "its field's range: see the line)");
}

template <typename T>
void InitConstValue(const LocalTensor<T>& dst, const InitConstValueParams<T>& p,
                    const tl::Loc& loc = tl::Loc::current()) {
  auto w = detail::where(loc, "InitConstValue");
  if (p.repeatTimes != 1 || p.dstGap != 0)
    ascendc_cpu::fail(w, "only repeatTimes 1 with dstGap 0 is modelled");
  ascendc_cpu::init_const(w, dst.ref, p.blockNum, detail::to_double(p.initValue));
}

}  // namespace AscendC
