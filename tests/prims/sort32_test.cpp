// T.tile.sort32 (src/prims/sort32.cpp, AscendC Sort32): each repeat sorts 32 float scores with
// their uint32 indices into 8-byte (score, index) entries, descending, equal scores in input
// order, a NaN first. Checked bit-exactly against the reference below (this file is its only
// home) with random scores, forced ties (a handful of values), NaNs and signed zeros, 1-7
// repeats; the errors for bad arguments before the kernel runs and while it runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "common/error_of.h"
#include "npu/vector_ops.h"
#include "tl/op.h"

namespace tl {
namespace {

using namespace optest;

/// dst after sort32: per repeat, the (score, index) pairs ordered by score descending, NaN first,
/// equal scores (+0 and -0 too) in input order.
std::vector<uint8_t> reference(const std::vector<float>& s, const std::vector<uint32_t>& ix,
                               int64_t repeat) {
  std::vector<uint8_t> out(static_cast<size_t>(repeat * 32 * 8));
  for (int64_t r = 0; r < repeat; ++r) {
    std::vector<int64_t> order(32);
    for (int64_t j = 0; j < 32; ++j) order[j] = j;
    auto key = [&](int64_t j) { return s[static_cast<size_t>(r * 32 + j)]; };
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const float x = key(a), y = key(b);
      if (std::isnan(x) != std::isnan(y)) return std::isnan(x);
      return !std::isnan(x) && x > y;
    });
    for (int64_t j = 0; j < 32; ++j) {
      const size_t at = static_cast<size_t>((r * 32 + j) * 8),
                   from = static_cast<size_t>(r * 32 + order[j]);
      std::memcpy(out.data() + at, &s[from], 4);
      std::memcpy(out.data() + at + 4, &ix[from], 4);
    }
  }
  return out;
}

std::vector<uint8_t> run(const std::vector<float>& s, const std::vector<uint32_t>& ix,
                         int64_t repeat) {
  const int64_t n = static_cast<int64_t>(s.size());
  Device dev;
  Tensor src = Tensor::empty(dev, {n}, DType::Float32);
  Tensor idx = Tensor::empty(dev, {n}, DType::UInt32);
  Tensor dst = input(dev, {2 * n}, DType::Float32, 3);
  std::memcpy(src.data(), s.data(), static_cast<size_t>(4 * n));
  std::memcpy(idx.data(), ix.data(), static_cast<size_t>(4 * n));
  run_one_op(
      dev,
      {{"src", {n}, DType::Float32}, {"idx", {n}, DType::UInt32}, {"dst", {2 * n}, DType::Float32}},
      {},
      [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
        T::emit("tile.sort32", {ub[2], ub[0], ub[1], Expr(repeat)});
      },
      {src, idx, dst});
  return bytes_of(dst);
}

TEST(PrimSort32, RegisteredAsAPositionDependentVectorOp) {
  const OpDef* op = find_op("tile.sort32");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->verify, OpRule::Prim);
  EXPECT_EQ(op->unit, OpUnit::Vector);
  EXPECT_EQ(op->rows, RowMap::Whole);
  EXPECT_FALSE(op->elementwise());
}

TEST(PrimSort32, AgainstTheReference) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (int64_t repeat : {1, 2, 7}) {
    for (int kind = 0; kind < 3; ++kind) {  // random, forced ties, NaN / signed zeros / inf
      SCOPED_TRACE(fmt::format("repeat {} kind {}", repeat, kind));
      std::vector<float> s(static_cast<size_t>(repeat * 32));
      std::vector<uint32_t> ix(s.size());
      for (size_t i = 0; i < s.size(); ++i) {
        const float v = normal(rng);
        s[i] = kind == 1 ? std::floor(v) : v;
        ix[i] = static_cast<uint32_t>(rng());
      }
      if (kind == 2)
        for (size_t i = 0; i < s.size(); i += 5)
          s[i] = (i / 5) % 4 == 0   ? std::nanf("")
                 : (i / 5) % 4 == 1 ? -0.0f
                 : (i / 5) % 4 == 2 ? 0.0f
                                    : -INFINITY;
      EXPECT_EQ(run(s, ix, repeat), reference(s, ix, repeat));
    }
  }
}

using tltest::error_if_any;
using tltest::error_of;

TEST(PrimSort32, BadArgumentsAreErrors) {
  const DType f32 = DType::Float32, u32 = DType::UInt32;
  auto func = [&](DType st, DType it, int64_t n, int64_t dn, Expr repeat) {
    return one_op_func({{"src", {n}, st}, {"idx", {n}, it}, {"dst", {dn}, f32}}, {},
                       [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                         T::emit("tile.sort32", {ub[2], ub[0], ub[1], Expr(repeat)});
                       });
  };
  auto err = [](PrimFunc f) { return error_of([&] { (void)compile(f); }); };
  EXPECT_NE(err(func(f32, u32, 64, 128, 300)).find("repeat_times must be in [0, 255], got 300"),
            std::string::npos);
  EXPECT_NE(err(func(f32, u32, 32, 128, 2)).find("2 repeats read 64 elements of src, which has 32"),
            std::string::npos);
  EXPECT_NE(
      err(func(f32, u32, 64, 64, 2)).find("2 repeats write 128 elements of dst, which has 64"),
      std::string::npos);
  EXPECT_NE(err(func(f32, DType::Int32, 32, 64, 1)).find("T.tile.sort32 takes uint32 index"),
            std::string::npos);
  EXPECT_EQ(error_if_any([&] { (void)compile(func(f32, u32, 32, 64, 1)); }), "");
  // A repeat count from a kernel parameter is judged when the op runs.
  Device dev;
  Tensor s = input(dev, {32}, f32, 1), d = input(dev, {128}, f32, 2);
  Tensor ix = Tensor::empty(dev, {32}, u32);
  const std::string e = error_of([&] {
    run_one_op(dev, {{"src", {32}, f32}, {"idx", {32}, u32}, {"dst", {128}, f32}},
               {{"r", DType::Int32}},
               [&](const std::vector<Buffer>& ub, const std::vector<Var>& sv) {
                 T::emit("tile.sort32", {ub[2], ub[0], ub[1], sv[0]});
               },
               {s, ix, d, Arg(int64_t{2})});
  });
  EXPECT_NE(e.find("T.tile.sort32: 2 repeats read 64 elements of src, which has 32"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace tl
