// T.tile.brcb, the first primitive of the prims layer (src/prims/brcb.cpp): each of repeat_times
// repeats broadcasts 8 src elements to 8 32-byte blocks of dst. Checked bit-exactly against the
// reference below (this file is its only home) over the dtypes A2 allows, src sizes 1, 7, 33
// and 1000 and dst tiles whose rows are not a multiple of the 8 blocks a repeat writes; with
// block and repeat strides (0 taken as 1, gaps that must keep dst's old contents); and the errors
// for bad arguments, before the kernel runs (verifier) and while it runs (scalar arguments).
// Before the prims layer there was no T.tile.brcb: every call here failed with "unknown tile
// primitive T.tile.brcb".
#include <gtest/gtest.h>

#include <cstring>

#include "common/error_of.h"
#include "npu/vector_ops.h"
#include "tl/op.h"

namespace tl {
namespace {

using namespace optest;

/// dst after brcb, computed from src's and dst's bytes: block r * rep + k * max(blk, 1) of dst
/// (32 bytes) holds copies of src element r * 8 + k.
std::vector<uint8_t> reference(const std::vector<uint8_t>& src, std::vector<uint8_t> dst,
                               int64_t es, int64_t repeat, int64_t blk, int64_t rep) {
  const int64_t stride = blk == 0 ? 1 : blk;
  for (int64_t r = 0; r < repeat; ++r)
    for (int64_t k = 0; k < 8; ++k) {
      const int64_t block = r * rep + k * stride;
      for (int64_t e = 0; e < 32 / es; ++e)
        std::memcpy(dst.data() + block * 32 + e * es, src.data() + (r * 8 + k) * es, es);
    }
  return dst;
}

/// Runs brcb on src [n] (of a padded buffer) into dst [rows, 32 / es], returns dst's bytes and the
/// reference's.
std::pair<std::vector<uint8_t>, std::vector<uint8_t>> run(DType dt, int64_t n, int64_t rows,
                                                          int64_t repeat, int64_t blk, int64_t rep,
                                                          uint64_t seed) {
  const int64_t es = dtype_bytes(dt), per_block = 32 / es;
  // src's UB buffer rounded up to whole 32-byte rows (ub-row-alignment); brcb reads [0, n).
  const int64_t padded = (n + per_block - 1) / per_block * per_block;
  Device dev;
  Tensor src = input(dev, {padded}, dt, seed);
  Tensor dst = input(dev, {rows, per_block}, dt, seed + 1);
  const auto want = reference(bytes_of(src), bytes_of(dst), es, repeat, blk, rep);
  run_one_op(dev, {{"src", {padded}, dt}, {"dst", {rows, per_block}, dt}}, {},
             [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
               T::tile::brcb(ub[1], ub[0].region({0}, {n}), repeat, blk, rep);
             },
             {src, dst});
  return {bytes_of(dst), want};
}

using tltest::error_if_any;
using tltest::error_of;

TEST(PrimBrcb, RegisteredAsAPositionDependentVectorOp) {
  const OpDef* op = find_op("tile.brcb");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->verify, OpRule::Prim);
  EXPECT_EQ(op->unit, OpUnit::Vector);
  EXPECT_EQ(op->rows, RowMap::Whole);  // never split by rows across the AIVs
  EXPECT_EQ(op->overlap, Overlap::None);
  EXPECT_FALSE(op->elementwise());
}

TEST(PrimBrcb, TailsAgainstTheReference) {
  int checked = 0;
  for (DType t : legal("tile.brcb")) {
    SCOPED_TRACE(dtype_name(t));
    // (src size, repeats): every repeat count the size allows at its ends.
    for (auto [n, repeat] :
         {std::pair<int64_t, int64_t>{1, 0}, {7, 0}, {8, 1}, {33, 4}, {1000, 125}}) {
      SCOPED_TRACE(fmt::format("n {} repeat {}", n, repeat));
      // Rows of dst: just the blocks written (a multiple of 8 only when repeat is), and 3 more.
      const int64_t rows = std::max<int64_t>(1, repeat * 8);
      for (int64_t extra : {0, 3}) {
        auto [got, want] = run(t, n, rows + extra, repeat, 1, 8, 11 + n);
        EXPECT_EQ(got, want) << "rows " << rows + extra;
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 60);
}

TEST(PrimBrcb, BlockAndRepeatStrides) {
  for (DType t : {DType::Float16, DType::Float32, DType::Int32}) {
    SCOPED_TRACE(dtype_name(t));
    // (repeat, dst_blk_stride, dst_repeat_stride, dst rows): 0 is taken as 1; gaps between the
    // blocks (stride 2) and between repeats (17) keep dst's contents; repeats may interleave.
    const int64_t cases[][4] = {
        {3, 0, 8, 24}, {3, 2, 16, 49}, {2, 1, 17, 33}, {4, 1, 1, 11}, {5, 3, 1, 26}};
    for (const auto& c : cases) {
      SCOPED_TRACE(fmt::format("repeat {} blk {} rep {}", c[0], c[1], c[2]));
      auto [got, want] = run(t, c[0] * 8 + 1, c[3], c[0], c[1], c[2], 5);
      EXPECT_EQ(got, want);
    }
  }
}

/// A one-op kernel whose arguments the test chooses; compiled only.
PrimFunc brcb_func(DType src_t, DType dst_t, int64_t n, int64_t dst_elems, Expr repeat,
                   Expr blk = 1, Expr rep = 8) {
  return one_op_func({{"src", {n}, src_t}, {"dst", {dst_elems}, dst_t}}, {},
                     [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                       T::tile::brcb(ub[1], ub[0], repeat, blk, rep);
                     });
}

TEST(PrimBrcb, BadArgumentsAreVerifierErrors) {
  auto err = [](PrimFunc f) { return error_of([&] { (void)compile(f); }); };
  const DType f16 = DType::Float16, f32 = DType::Float32;
  EXPECT_NE(err(brcb_func(f32, f32, 8, 64, 300))
                .find("repeat_times must be in [0, 255], got 300 [rule: brcb-argument]"),
            std::string::npos);
  EXPECT_NE(err(brcb_func(f32, f32, 8, 64, 1, -1)).find("dst_blk_stride must be in [0, 65535]"),
            std::string::npos);
  EXPECT_NE(err(brcb_func(f32, f32, 7, 64, 1))
                .find("1 repeats read 8 elements of src, which has 7 [rule: brcb-src-size]"),
            std::string::npos);
  EXPECT_NE(err(brcb_func(f32, f32, 16, 64, 2))
                .find("write up to element 128 of dst, which has 64 [rule: brcb-dst-size]"),
            std::string::npos);
  EXPECT_NE(err(brcb_func(f16, f32, 8, 64, 1)).find("expected the dtype of 'dst' (float32)"),
            std::string::npos);
  EXPECT_NE(err(brcb_func(DType::Int8, DType::Int8, 64, 256, 1)).find("[rule: vector-dtype]"),
            std::string::npos);
  // The file:line of the kernel is in the message.
  EXPECT_NE(err(brcb_func(f32, f32, 7, 64, 1)).find("brcb_test.cpp:"), std::string::npos);
}

TEST(PrimBrcb, BadRunTimeArgumentsAreErrors) {
  const DType f32 = DType::Float32;
  Device dev;
  // repeat_times from a kernel parameter: judged when the op runs.
  auto with_param = [&](int64_t n, int64_t dst_elems, int64_t repeat) {
    Tensor s = input(dev, {n}, f32, 1), d = input(dev, {dst_elems}, f32, 2);
    return error_if_any([&] {
      run_one_op(dev, {{"src", {n}, f32}, {"dst", {dst_elems}, f32}}, {{"r", DType::Int32}},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>& sv) {
                   T::tile::brcb(ub[1], ub[0], sv[0], 1, 8);
                 },
                 {s, d, Arg(repeat)});
    });
  };
  EXPECT_EQ(with_param(16, 128, 2), "");
  EXPECT_NE(
      with_param(16, 128, 3).find("T.tile.brcb: 3 repeats read 24 elements of src, which has 16"),
      std::string::npos);
  EXPECT_NE(with_param(16, 64, 2).find("write up to element 128 of dst, which has 64"),
            std::string::npos);
  EXPECT_NE(with_param(16, 128, 256).find("repeat_times must be in [0, 255], got 256"),
            std::string::npos);
  // A column of a 2-D tile is not one run of storage: refused, not silently read row-wise.
  Tensor s = input(dev, {8, 16}, f32, 3), d = input(dev, {64}, f32, 4);
  const std::string e = error_of([&] {
    run_one_op(dev, {{"src", {8, 16}, f32}, {"dst", {64}, f32}}, {},
               [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                 T::tile::brcb(ub[1], ub[0].region({0, 0}, {8, 8}), 1, 1, 8);
               },
               {s, d});
  });
  EXPECT_NE(e.find("operand 'src' ('src') is not one contiguous run"), std::string::npos) << e;
}

TEST(PrimBrcb, SrcAndDstMustNotOverlap) {
  const DType f32 = DType::Float32;
  Device dev;
  Tensor x = input(dev, {128}, f32, 1);
  const std::string e = error_of([&] {
    run_one_op(dev, {{"x", {128}, f32}}, {},
               [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                 T::tile::brcb(ub[0], ub[0].region({0}, {8}), 1, 1, 8);
               },
               {x});
  });
  EXPECT_NE(e.find("overlap"), std::string::npos) << e;
}

}  // namespace
}  // namespace tl
