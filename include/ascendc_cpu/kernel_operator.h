// The AscendC API subset tl-ascend emits, as a CPU model: an emitted kernel file
// (`#include "kernel_operator.h"`) compiles with g++ against this header and runs on the CPU
// through the virtual NPU's own op semantics (docs/ascendc.md, "CPU model"). Our own code,
// written from the public AscendC API documentation (asc-devkit: GlobalTensor, LocalTensor,
// TPipe/TBuf, DataCopy, DataCopyPad, the vector compute APIs, SetFlag/WaitFlag, PipeBarrier,
// CrossCoreSetFlag/WaitFlag, GetBlockIdx); no vendor header is used or copied.
//
// Every call converts its tensors into references (memory, byte offset, element type) and calls
// the engine (ascendc_cpu/model.h), which executes the matching tile op of the virtual NPU on
// the current core and records it in the launch's trace; the call's source line comes along
// (std::source_location) so every error and hazard report names the line of the kernel file.
// A kernel runs through ascendc_cpu::launch (model.h): once per core, MIX 1:2.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ascendc_cpu/model.h"
#include "tl/loc.h"

#define __global__
#define __aicore__
#define __gm__
#define GM_ADDR uint8_t*
#define ASCEND_IS_AIC (::ascendc_cpu::on_aic())
#define ASCEND_IS_AIV (!::ascendc_cpu::on_aic())
#define KERNEL_TASK_TYPE_DEFAULT(type) ::AscendC::detail::kernel_task_type(type)

/// fp16 and bf16 scalars: the bits, converted through float with the VM's rounding.
struct half {
  uint16_t bits = 0;
  half() = default;
  half(float x) : bits(::ascendc_cpu::float_to_f16(x)) {}  // NOLINT: AscendC's half converts
  half(double x) : half(static_cast<float>(x)) {}          // NOLINT
  half(int x) : half(static_cast<float>(x)) {}             // NOLINT
  operator float() const { return ::ascendc_cpu::f16_to_float(bits); }  // NOLINT
};
struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  bfloat16_t(float x) : bits(::ascendc_cpu::float_to_bf16(x)) {}         // NOLINT
  bfloat16_t(double x) : bfloat16_t(static_cast<float>(x)) {}            // NOLINT
  bfloat16_t(int x) : bfloat16_t(static_cast<float>(x)) {}               // NOLINT
  operator float() const { return ::ascendc_cpu::bf16_to_float(bits); }  // NOLINT
};

enum pipe_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_FIX, PIPE_ALL };

enum KernelType {
  KERNEL_TYPE_AIV_ONLY,
  KERNEL_TYPE_AIC_ONLY,
  KERNEL_TYPE_MIX_AIC_1_1,
  KERNEL_TYPE_MIX_AIC_1_2,
};

namespace AscendC {

namespace detail {
using ascendc_cpu::Where;
inline Where where(const tl::Loc& loc, const char* api) {
  return Where{loc.file_name(), static_cast<int>(loc.line()), api};
}
template <typename T>
constexpr tl::DType dtype_of() {
  if constexpr (std::is_same_v<T, half>)
    return tl::DType::Float16;
  else if constexpr (std::is_same_v<T, bfloat16_t>)
    return tl::DType::BFloat16;
  else if constexpr (std::is_same_v<T, float>)
    return tl::DType::Float32;
  else if constexpr (std::is_same_v<T, bool>)
    return tl::DType::Bool;
  else if constexpr (std::is_same_v<T, int8_t>)
    return tl::DType::Int8;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return tl::DType::UInt8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return tl::DType::Int16;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return tl::DType::UInt16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return tl::DType::Int32;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return tl::DType::UInt32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return tl::DType::Int64;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return tl::DType::UInt64;
  else
    static_assert(sizeof(T) == 0, "an element type the AscendC CPU model does not know");
}
template <typename T>
double to_double(T v) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>)
    return static_cast<double>(static_cast<float>(v));
  else
    return static_cast<double>(v);
}
inline void kernel_task_type(KernelType t, const tl::Loc& loc = tl::Loc::current()) {
  if (t != KERNEL_TYPE_MIX_AIC_1_2)
    ascendc_cpu::fail(where(loc, "KERNEL_TASK_TYPE_DEFAULT"),
                      "the CPU model runs KERNEL_TYPE_MIX_AIC_1_2 kernels only");
}
}  // namespace detail

enum class TPosition { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC };

namespace detail {
constexpr tl::MemScope scope_of(TPosition p) {
  switch (p) {
    case TPosition::A1:
    case TPosition::B1:
    case TPosition::C1:
      return tl::MemScope::L1;
    case TPosition::A2:
      return tl::MemScope::L0A;
    case TPosition::B2:
      return tl::MemScope::L0B;
    case TPosition::CO1:
      return tl::MemScope::L0C;
    case TPosition::VECIN:
    case TPosition::VECOUT:
    case TPosition::VECCALC:
      return tl::MemScope::UB;
    default:
      return tl::MemScope::GM;  // GM, CO2; C2 (BiasTable) is not modelled
  }
}
}  // namespace detail

template <typename T>
class LocalTensor {
 public:
  using PrimType = T;
  LocalTensor() = default;
  explicit LocalTensor(const ascendc_cpu::LocalRef& r) : ref(r) {}
  /// The tensor from element `offset` on.
  LocalTensor operator[](uint32_t offset) const {
    ascendc_cpu::LocalRef r = ref;
    r.offset += static_cast<int64_t>(offset) * static_cast<int64_t>(sizeof(T));
    r.count -= offset;
    return LocalTensor(r);
  }
  template <typename U>
  LocalTensor<U> ReinterpretCast() const {
    ascendc_cpu::LocalRef r = ref;
    r.dtype = detail::dtype_of<U>();
    r.count = ref.count * static_cast<int64_t>(sizeof(T)) / static_cast<int64_t>(sizeof(U));
    return LocalTensor<U>(r);
  }
  T GetValue(uint32_t i, const tl::Loc& loc = tl::Loc::current()) const {
    T v;
    std::memcpy(&v, ascendc_cpu::local_element(detail::where(loc, "GetValue"), ref, i, false),
                sizeof(T));
    return v;
  }
  void SetValue(uint32_t i, T v, const tl::Loc& loc = tl::Loc::current()) const {
    std::memcpy(ascendc_cpu::local_element(detail::where(loc, "SetValue"), ref, i, true), &v,
                sizeof(T));
  }
  uint32_t GetSize() const { return static_cast<uint32_t>(ref.count); }
  ascendc_cpu::LocalRef ref;
};

/// GlobalTensor::SetL2CacheHint's modes ("SetL2CacheHint" API page: whether a GlobalTensor's
/// bytes enter the L2 cache; rwMode is reserved).
enum class CacheMode : uint8_t { CACHE_MODE_DISABLE = 0, CACHE_MODE_NORMAL = 1 };
enum CacheRwMode { READ = 1, WRITE = 2, RW = 3 };

template <typename T>
class GlobalTensor {
 public:
  using PrimType = T;
  void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize = 0) {
    ref.addr = reinterpret_cast<uint8_t*>(buffer);
    ref.dtype = detail::dtype_of<T>();
    ref.count = static_cast<int64_t>(bufferSize);
  }
  /// A performance hint: the data does not change, and this model runs the data only (the
  /// virtual NPU's timed mode reads the mode from the Tile IR, T.annotate_l2_cache).
  template <CacheRwMode rwMode = CacheRwMode::RW>
  void SetL2CacheHint(CacheMode mode) {
    l2_mode = mode;
  }
  CacheMode l2_mode = CacheMode::CACHE_MODE_NORMAL;
  GlobalTensor operator[](uint64_t offset) const {
    GlobalTensor g = *this;
    g.ref.addr += offset * sizeof(T);
    if (g.ref.count > 0) g.ref.count -= static_cast<int64_t>(offset);
    return g;
  }
  __gm__ T* GetPhyAddr() const { return reinterpret_cast<T*>(ref.addr); }
  T GetValue(uint64_t i, const tl::Loc& loc = tl::Loc::current()) const {
    T v;
    std::memcpy(&v, ascendc_cpu::global_element(detail::where(loc, "GetValue"), ref, i, false),
                sizeof(T));
    return v;
  }
  void SetValue(uint64_t i, T v, const tl::Loc& loc = tl::Loc::current()) const {
    std::memcpy(ascendc_cpu::global_element(detail::where(loc, "SetValue"), ref, i, true), &v,
                sizeof(T));
  }
  ascendc_cpu::GlobalRef ref;
};

template <TPosition Pos>
class TBuf {
 public:
  /// The buffer's bytes from `bufOffset` as `size` elements of T (bufOffset 32-byte aligned).
  template <typename T>
  LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset,
                               const tl::Loc& loc = tl::Loc::current()) const {
    auto w = detail::where(loc, "GetWithOffset");
    if (bytes_ < 0) ascendc_cpu::fail(w, "the TBuf has no memory (pipe.InitBuffer first)");
    if (bufOffset % 32 != 0)
      ascendc_cpu::fail(
          w, "bufOffset " + std::to_string(bufOffset) + " is not a multiple of 32 bytes");
    if (static_cast<int64_t>(bufOffset) + static_cast<int64_t>(size) * sizeof(T) >
        static_cast<uint64_t>(bytes_))
      ascendc_cpu::fail(w, std::to_string(size) + " elements of " + std::to_string(sizeof(T)) +
                               " bytes from byte " + std::to_string(bufOffset) +
                               " overflow the TBuf's " + std::to_string(bytes_) + " bytes");
    return LocalTensor<T>(ascendc_cpu::LocalRef{detail::scope_of(Pos), base_ + bufOffset,
                                                detail::dtype_of<T>(), static_cast<int64_t>(size)});
  }
  template <typename T>
  LocalTensor<T> Get(const tl::Loc& loc = tl::Loc::current()) const {
    return GetWithOffset<T>(static_cast<uint32_t>(bytes_ / sizeof(T)), 0, loc);
  }
  template <typename T>
  LocalTensor<T> Get(uint32_t len, const tl::Loc& loc = tl::Loc::current()) const {
    return GetWithOffset<T>(len, 0, loc);
  }
  int64_t base_ = 0, bytes_ = -1;
};

class TPipe {
 public:
  /// Gives `buf` the next `len` bytes (32-byte aligned) of its position's memory.
  template <TPosition Pos>
  void InitBuffer(TBuf<Pos>& buf, uint32_t len, const tl::Loc& loc = tl::Loc::current()) {
    constexpr tl::MemScope s = detail::scope_of(Pos);
    auto w = detail::where(loc, "InitBuffer");
    if (s == tl::MemScope::GM) ascendc_cpu::fail(w, "a TBuf in GM");
    int64_t& used = used_[static_cast<size_t>(s)];
    const int64_t cap = ascendc_cpu::capacity(s);
    if (used + len > cap)
      ascendc_cpu::fail(w, std::to_string(len) + " bytes from byte " + std::to_string(used) +
                               " exceed the memory's " + std::to_string(cap) + " bytes");
    buf.base_ = used;
    buf.bytes_ = len;
    used += (static_cast<int64_t>(len) + 31) / 32 * 32;
  }

 private:
  int64_t used_[tl::kNumMemScopes] = {};
};

/// DataCacheCleanAndInvalid ("DataCacheCleanAndInvalid" API page,
/// https://www.hiascend.com/document/detail/en/canncommercial/850/API/ascendcopapi/atlasascendc_api_07_0177.html):
/// the scalar unit reaches GM through its core's data cache, which DMA and the other cores do
/// not see; this writes back and drops the line holding `dst`'s address (SINGLE_CACHE_LINE) or
/// the whole cache (ENTIRE_DATA_CACHE). The model runs it as the virtual NPU's T.dcci, so the
/// hazard checker sees it (a missing one is a reported hazard, docs/virtual_npu.md "Hazard
/// checker"); the data itself is not cached here.
enum class CacheLine : uint8_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE = 1 };
enum class DcciDst : uint8_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };
template <typename T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst,
                                     const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::dcci(detail::where(loc, "DataCacheCleanAndInvalid"), dst.ref.addr,
                    entireType == CacheLine::ENTIRE_DATA_CACHE);
}
template <typename T, CacheLine entireType>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst,
                                     const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::dcci(detail::where(loc, "DataCacheCleanAndInvalid"), dst.ref.addr,
                    entireType == CacheLine::ENTIRE_DATA_CACHE);
}

inline int64_t GetBlockIdx() {
  return ascendc_cpu::block_idx();
}
inline int64_t GetBlockNum() {
  return ascendc_cpu::block_num();
}
inline int64_t GetSubBlockIdx() {
  return ascendc_cpu::sub_block_idx();
}

}  // namespace AscendC

#include "ascendc_cpu/kernel_operator_bitwise.h"
#include "ascendc_cpu/kernel_operator_calls.h"
#include "ascendc_cpu/kernel_operator_cube.h"
#include "ascendc_cpu/kernel_operator_sort.h"
