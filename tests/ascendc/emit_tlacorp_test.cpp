// The AscendC emitter's text for T.tile.mul_add_dst (AscendC MulAddDst) and for uint8 masks
// ANDed as int16 lanes (src/ascendc/emit_vector.cpp); the byte values are checked end to end by
// AscendcE2E.mul_add_dst_rows* / AscendcE2E.byte_masks* (e2e_tlacorp_kernels.cpp). Before:
// "AscendC emitter: T.tile.mul_add_dst has no AscendC form in the emitter", and the mask AND was
// emitted as AscendC::And on uint8 with the byte count, which the chip runs on twice the bytes.
#include <gtest/gtest.h>

#include "tl/ascendc.h"
#include "tl/lang.h"
#include "tl/pass.h"

namespace tl {
namespace {

std::string emit_of(const PrimFunc& f) {
  return ascendc::emit(lower(f, default_target()), default_target());
}

/// Y = X * W + Y over one row of N (the e2e kernel mul_add_dst_rows, one block).
PrimFunc mul_add_dst_row(int N) {
  const DType f32 = DType::Float32;
  auto X = T::Tensor("X", {N}, f32), W = T::Tensor("W", {N}, f32), Y = T::Tensor("Y", {N}, f32);
  return T::prim_func("mad", {X, W, Y}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x_ub", {N}, f32), w = T::alloc_ub("w_ub", {N}, f32),
             y = T::alloc_ub("y_ub", {N}, f32);
        T::copy(X, x);
        T::copy(W, w);
        T::copy(Y, y);
        T::pipe_barrier(Pipe::ALL);
        T::tile::mul_add_dst(y, x, w);
        T::pipe_barrier(Pipe::ALL);
        T::copy(y, Y);
      });
    });
  });
}

/// Bytes [at, at + n) of a (uint8, L) = a & b (or |) (the e2e kernel byte_masks, one block).
PrimFunc byte_masks(int L, int n, int at, bool do_or) {
  const DType u8 = DType::UInt8;
  auto A = T::Tensor("A", {L}, u8), B = T::Tensor("B", {L}, u8);
  return T::prim_func("masks", {A, B}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        auto a = T::alloc_ub("a_ub", {L}, u8), b = T::alloc_ub("b_ub", {L}, u8);
        T::copy(A, a);
        T::copy(B, b);
        T::pipe_barrier(Pipe::ALL);
        auto ra = a.region({at}, {n}), rb = b.region({at}, {n});
        if (do_or)
          T::tile::bitwise_or(ra, ra, rb);
        else
          T::tile::bitwise_and(ra, ra, rb);
        T::pipe_barrier(Pipe::ALL);
        T::copy(a, A);
      });
    });
  });
}

TEST(AscendCEmitTlaCorp, MulAddDstIsOneCountFormCall) {
  const std::string text = emit_of(mul_add_dst_row(64));
  EXPECT_NE(text.find("AscendC::MulAddDst(y_ub, x_ub, w_ub, 64);"), std::string::npos) << text;
}

TEST(AscendCEmitTlaCorp, ByteMasksRunAsInt16Lanes) {
  const std::string even = emit_of(byte_masks(96, 32, 32, false));
  EXPECT_NE(even.find("AscendC::And(a_ub[32].ReinterpretCast<int16_t>(), "
                      "a_ub[32].ReinterpretCast<int16_t>(), b_ub[32].ReinterpretCast<int16_t>(), "
                      "16);"),
            std::string::npos)
      << even;
  // 33 bytes ending at the buffer's end: 17 lanes, the last byte the buffer's padding.
  const std::string odd = emit_of(byte_masks(97, 33, 64, true));
  EXPECT_NE(odd.find("AscendC::Or(a_ub[64].ReinterpretCast<int16_t>(), "
                     "a_ub[64].ReinterpretCast<int16_t>(), b_ub[64].ReinterpretCast<int16_t>(), "
                     "17);"),
            std::string::npos)
      << odd;
}

TEST(AscendCEmitTlaCorp, OddByteMaskInsideATileIsAnErrorNamingIt) {
  try {
    emit_of(byte_masks(96, 33, 32, false));
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("odd number of bytes (33) in a region that does not end at the end of 'a_ub'"),
              std::string::npos)
        << m;
  }
}

}  // namespace
}  // namespace tl
