// The AscendC CPU model's bitwise, shift, LeakyRelu and Transpose calls (included by
// kernel_operator.h): the basic vector APIs the emitter writes for T.tile.bitwise_*, the shifts,
// T.tile.leaky_relu and T.tile.transpose, and the steps of the activations it writes as
// sequences (src/ascendc/emit_activation.cpp). Each maps onto the virtual NPU's op of the same
// meaning through the engine (ascendc_cpu/model.h); where the AscendC call means something the
// VM's op does not, the call is an error naming it rather than a different answer.
// Pages (asc-devkit SIMD-API, docs/api/context): And, Or, Not, ShiftLeft, ShiftRight, LeakyRelu,
// Transpose.
#pragma once

#include <string>

#include "ascendc_cpu/kernel_operator.h"

namespace AscendC {

// And / Or ("And", "Or" pages): int16 / uint16, count form; dst = src0 & src1, src0 | src1.
#define TL_ASCENDC_BITWISE(NAME, OP)                                                            \
  template <typename T>                                                                         \
  void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,  \
            const int32_t& count, const tl::Loc& loc = tl::Loc::current()) {                    \
    ascendc_cpu::vec_binary(detail::where(loc, #NAME), OP, dst.ref, src0.ref, src1.ref, count); \
  }
TL_ASCENDC_BITWISE(And, "tile.bitwise_and")
TL_ASCENDC_BITWISE(Or, "tile.bitwise_or")
#undef TL_ASCENDC_BITWISE

/// Not ("Not" page): int16 / uint16, dst = ~src.
template <typename T>
void Not(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count,
         const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::vec_unary(detail::where(loc, "Not"), "tile.bitwise_not", dst.ref, src.ref, count);
}

namespace detail {
/// A shift distance the model takes: within the element's bits (the VM's shifts wrap the
/// distance, the AscendC pages state no result past the width).
template <typename T>
void check_shift(const Where& w, T bits) {
  const auto n = static_cast<int64_t>(bits);
  if (n < 0 || n >= static_cast<int64_t>(8 * sizeof(T)))
    ascendc_cpu::fail(w, "scalarValue " + std::to_string(n) + " is outside [0, " +
                             std::to_string(8 * sizeof(T)) + ")");
}
}  // namespace detail

/// ShiftLeft ("ShiftLeft" page): unsigned types shift logically. A signed type shifts
/// arithmetically, keeping the sign bit, which the VM's T.tile.shift_left (a wrapping shift)
/// does not: the model takes unsigned tensors only (the emitter reinterprets signed tiles).
template <typename T>
void ShiftLeft(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
               const int32_t& count, const tl::Loc& loc = tl::Loc::current()) {
  auto w = detail::where(loc, "ShiftLeft");
  if constexpr (std::is_signed_v<T>)
    ascendc_cpu::fail(w,
                      "ShiftLeft of a signed type keeps the sign bit (the page's arithmetic left "
                      "shift); the model shifts unsigned tensors only");
  detail::check_shift(w, scalarValue);
  ascendc_cpu::vec_scalar(w, "tile.shift_left", dst.ref, src.ref, detail::to_double(scalarValue),
                          count);
}
/// ShiftRight ("ShiftRight" page): logical for unsigned, arithmetic for signed types, as the
/// VM's T.tile.shift_right.
template <typename T>
void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                const int32_t& count, const tl::Loc& loc = tl::Loc::current()) {
  auto w = detail::where(loc, "ShiftRight");
  detail::check_shift(w, scalarValue);
  ascendc_cpu::vec_scalar(w, "tile.shift_right", dst.ref, src.ref, detail::to_double(scalarValue),
                          count);
}

/// LeakyRelu ("LeakyRelu" page): dst = src >= 0 ? src : src * scalarValue; half, float.
template <typename T>
void LeakyRelu(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
               const int32_t& count, const tl::Loc& loc = tl::Loc::current()) {
  ascendc_cpu::vec_scalar(detail::where(loc, "LeakyRelu"), "tile.leaky_relu", dst.ref, src.ref,
                          detail::to_double(scalarValue), count);
}

/// Transpose ("Transpose" page, the basic form): one 16 x 16 matrix of a 2-byte type.
template <typename T>
void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src,
               const tl::Loc& loc = tl::Loc::current()) {
  static_assert(sizeof(T) == 2, "Transpose: a 16 x 16 matrix of a 2-byte type");
  ascendc_cpu::vec_unary(detail::where(loc, "Transpose"), "tile.transpose", dst.ref, src.ref, 256);
}

}  // namespace AscendC
