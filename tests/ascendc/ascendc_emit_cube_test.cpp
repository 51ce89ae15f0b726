// The AscendC emitter's cube operands of run-time shape (src/ascendc/emit_cube.cpp,
// docs/ascendc.md "Cube"): a GEMM tail's clipped GM -> L1 and L0C -> GM copies become
// Nd2NzParams / FixpipeParamsV220 whose nValue / dValue / mSize / nSize are the clipped extents,
// guarded by `if (extent > 0)` where the loop ranges do not prove them positive; a row pitch a
// parameter field may not hold (a transposed A's dynamic M in Nd2NzParams.srcDValue) is guarded
// by AscendC::Trap; an L1 region Nd2Nz cannot start at is an error naming the copy and its
// line. (That the emitted files run bit-identical to the virtual NPU is AscendcE2E.gemm*.)
#include <gtest/gtest.h>

#include "cann_ops_tilelang/gemm.h"
#include "tl/ascendc.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"
#include "tl/pass.h"

namespace tl {
namespace {

std::string emit_kernel(const std::string& name, const std::map<std::string, std::string>& set) {
  PrimFunc f = build_kernel(find_kernel(name), set);
  return ascendc::emit(lower(f, default_target()), default_target());
}

std::string emit_gemm_op(bool trans_a, bool trans_b) {
  cann_ops_tilelang::GemmKey key;
  key.n = 48;
  key.k = 40;
  key.trans_a = trans_a;
  key.trans_b = trans_b;
  key.blocks = 4;
  return ascendc::emit(lower(cann_ops_tilelang::gemm_kernel(key), default_target()),
                       default_target());
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// gemm at 33 x 33 x 7 (tiles 128 x 256 x 64): the K panel's dValue and the tile's nValue are
// run-time values (the clipped extents), as are Fixpipe's mSize; N = 33 is a constant nSize
// that is not a multiple of 16 (NZ -> ND takes any width).
TEST(AscendCEmitCube, GemmTailsTakeRunTimeExtents) {
  const std::string text = emit_kernel("gemm", {{"M", "33"}, {"N", "33"}, {"K", "7"}});
  EXPECT_EQ(count(text, "AscendC::Nd2NzParams(1, "), 2) << text;
  // A's dValue is min(7 - k * 64, 64): a run-time value (k is the loop variable).
  EXPECT_NE(text.find("tl_min<int32_t>"), std::string::npos) << text;
  EXPECT_NE(text.find(".nSize = 33;"), std::string::npos) << text;
  // cid ranges over one block: the extents are provably positive, no guard.
  EXPECT_EQ(text.find("> 0) {"), std::string::npos) << text;
  EXPECT_EQ(text.find("Trap"), std::string::npos) << text;
}

// gemm_dev's persistent workers: the bounds of a worker's tile index ignore the enclosing
// `if (tile < tiles)`, so A's copy and the Fixpipe (rows min(1000 - tm * 128, 128), tm up to
// 135 / 17 = 7 by the bounds) run under `if (extent > 0)`; B's columns min(4097 - tn * 256,
// 256) with tn = tile % 17 are provably >= 1, unguarded.
TEST(AscendCEmitCube, PersistentTailCopiesAreGuardedByPositiveExtents) {
  const std::string text = emit_kernel("gemm_dev", {{"M", "1000"}, {"N", "4097"}, {"K", "33"}});
  EXPECT_EQ(count(text, "), 128) > 0) {"), 2) << text;
  EXPECT_EQ(count(text, "> 0) {"), 2) << text;
  EXPECT_GE(count(text, "AscendC::Fixpipe<"), 1) << text;
  EXPECT_EQ(text.find("Trap"), std::string::npos) << text;
}

// The gemm op: A^T [K, M] has the dynamic M as its GM row pitch, which Nd2NzParams.srcDValue
// (uint16_t) holds only up to 65535: a Trap guard, not a silent wrap. Untransposed, the pitches
// are the constants K and N: no guard.
TEST(AscendCEmitCube, DynamicRowPitchIsGuardedByTrap) {
  const std::string ta = emit_gemm_op(true, false);
  EXPECT_NE(ta.find("if (M < 1 || M > 65535) {"), std::string::npos) << ta;
  EXPECT_EQ(count(ta, "AscendC::Trap();"), 1) << ta;
  EXPECT_NE(ta.find("// Nd2NzParams srcDValue takes [1, 65535]"), std::string::npos) << ta;
  const std::string plain = emit_gemm_op(false, true);
  EXPECT_EQ(plain.find("Trap"), std::string::npos) << plain;
}

// Nd2Nz writes whole 16-row fractal columns from a column block's top (its zero padding of
// the last fractal's rows would differ from the virtual NPU's otherwise): an L1 region starting
// off the 16-row grid is an error naming the copy and its line.
TEST(AscendCEmitCube, L1RegionOffTheFractalGridIsAnError) {
  auto A = T::Tensor("A", {16, 16}, DType::Float16);
  int line = 0;
  PrimFunc f = T::prim_func("offgrid", {A}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Cube, [&] {
        auto a = T::alloc_L1("a", {32, 16}, DType::Float16);
        line = __LINE__ + 1;
        T::copy(A, a.at({8, 0}));
      });
    });
  });
  try {
    ascendc::emit(lower(f, default_target()), default_target());
    FAIL() << "emitted an Nd2Nz copy into L1 row 8";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("a row off the 16-row fractal grid"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fmt::format("ascendc_emit_cube_test.cpp:{}", line)), std::string::npos)
        << msg;
  }
}

// matmul_add_dev at N = 4097 (bN = 128): D's and C's UB rows are min(4097 - j * 128, 128) long,
// a run-time value: DataCopyPad's blockLen, GM gap, UB gap and rightPadding are computed in the
// kernel from it.
TEST(AscendCEmitCube, RunTimeRowLengthsTakeThePaddedCopy) {
  const std::string text =
      emit_kernel("matmul_add_dev", {{"M", "1000"}, {"N", "4097"}, {"K", "33"}});
  const std::string width = "tl_min<int32_t>((4097 - ((cid % 33) * 128)), 128)";
  EXPECT_NE(text.find(fmt::format("({} * 2), ((4097 - {}) * 2), ((256 - (((({} * 2) + 31) / 32) * "
                                  "32)) / 32), 0), AscendC::DataCopyPadExtParams<half>(true, 0, ",
                                  width, width, width)),
            std::string::npos)
      << text;
  EXPECT_EQ(count(text, "AscendC::DataCopyPad("), 2) << text;
}

}  // namespace
}  // namespace tl
