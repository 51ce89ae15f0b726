// The fp32 row loops of the elementwise and row-expand ops (src/npu/exec_vector.cpp: baseline,
// AVX2 and AVX-512 builds of one loop, picked by the host's ISA) against the scalar expressions
// of vector_ops.def, bit for bit, on rows whose lengths leave every tail of an 8- or 16-lane loop
// (1, 7, 33, 1000, 4097 elements) and whose values are the special ones: a NaN in one operand
// (its payload must survive), infinities, signed zeros, subnormal operands and results, and
// overflow. Lanes where both operands are NaN are left out: which payload survives there is the
// host compiler's choice (docs/virtual_npu.md, Numerics).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "npu/vector_ops.h"

namespace tl {
namespace {

using namespace optest;

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float from_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

/// n fp32 values, mostly ordinary, every 5th a special one (`salt` varies which).
std::vector<double> values(int64_t n, uint32_t seed) {
  const float specials[] = {
      INFINITY, -INFINITY, from_bits(0x7fc12345), 0.0f, -0.0f, 1e-40f, -3e-39f, 3.0e38f,
      -3.0e38f, 1.17e-38f, from_bits(0xffd00001), 2.0f};
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-4, 4);
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = i % 5 == 2 ? specials[(i / 5 + seed) % std::size(specials)] : u(g);
  return v;
}

/// The result bits of `got` against f on each lane, skipping lanes whose operands are both NaN.
std::string diff_bits(const std::vector<double>& got, const std::vector<double>& a,
                      const std::function<double(int64_t)>& b,
                      const std::function<float(float, float)>& f) {
  int bad = 0;
  std::string first;
  for (size_t i = 0; i < got.size(); ++i) {
    const float x = static_cast<float>(a[i]), y = static_cast<float>(b(static_cast<int64_t>(i)));
    if (std::isnan(x) && std::isnan(y)) continue;
    const float want = f(x, y), have = static_cast<float>(got[i]);
    if (bits(want) != bits(have) && bad++ == 0)
      first = fmt::format("lane {}: f({}, {}) want 0x{:08x} got 0x{:08x}", i, x, y, bits(want),
                          bits(have));
  }
  return bad ? fmt::format("{} lanes differ, first {}", bad, first) : "";
}

struct RowOp {
  const char* name;
  std::function<void(TileArg, TileArg, TileArg)> binary, row_expand;
  float (*f)(float, float);
};

const std::vector<RowOp>& row_ops() {
  static const std::vector<RowOp> ops = {
      {"add", [](TileArg d, TileArg a, TileArg b) { T::tile::add(d, a, b); },
       [](TileArg d, TileArg a, TileArg b) { T::tile::row_expand_add(d, a, b); },
       [](float a, float b) { return a + b; }},
      {"sub", [](TileArg d, TileArg a, TileArg b) { T::tile::sub(d, a, b); },
       [](TileArg d, TileArg a, TileArg b) { T::tile::row_expand_sub(d, a, b); },
       [](float a, float b) { return a - b; }},
      {"mul", [](TileArg d, TileArg a, TileArg b) { T::tile::mul(d, a, b); },
       [](TileArg d, TileArg a, TileArg b) { T::tile::row_expand_mul(d, a, b); },
       [](float a, float b) { return a * b; }},
      {"div", [](TileArg d, TileArg a, TileArg b) { T::tile::div(d, a, b); },
       [](TileArg d, TileArg a, TileArg b) { T::tile::row_expand_div(d, a, b); },
       [](float a, float b) { return a / b; }},
      {"max", [](TileArg d, TileArg a, TileArg b) { T::tile::max(d, a, b); },
       [](TileArg d, TileArg a, TileArg b) { T::tile::row_expand_max(d, a, b); }, fmax_nan},
      {"min", [](TileArg d, TileArg a, TileArg b) { T::tile::min(d, a, b); },
       [](TileArg d, TileArg a, TileArg b) { T::tile::row_expand_min(d, a, b); }, fmin_nan},
  };
  return ops;
}

// row_expand's scalar operand uses std::max / std::min without the NaN rule (vector_ops.def).
float row_expand_ref(const char* name, float (*f)(float, float), float a, float b) {
  if (std::string(name) == "max") return std::max(a, b);
  if (std::string(name) == "min") return std::min(a, b);
  return f(a, b);
}

TEST(VectorRowLoops, BinaryTileTileBitExactOnTails) {
  for (const RowOp& op : row_ops())
    for (int64_t n : {1, 7, 33, 1000, 4097}) {
      SCOPED_TRACE(fmt::format("tile.{} fp32 [1, {}]", op.name, n));
      const DType t = DType::Float32;
      Device dev;
      auto a0 = values(n, 1), b0 = values(n, 2);
      Tensor d = full(dev, {1, n}, t, 7), a = from_vector(dev, {1, n}, t, a0),
             b = from_vector(dev, {1, n}, t, b0);
      run_one_op(dev, {{"d", {1, n}, t}, {"a", {1, n}, t}, {"b", {1, n}, t}}, {},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                   op.binary(ub[0], ub[1], ub[2]);
                 },
                 {d, a, b});
      EXPECT_EQ(diff_bits(
                    d.to_vector(), a0, [&](int64_t i) { return b0[i]; }, op.f),
                "");
    }
}

TEST(VectorRowLoops, BinaryTileScalarBitExactOnTails) {
  // A literal second operand: the row loop with one broadcast value.
  for (const RowOp& op : row_ops())
    for (int64_t n : {1, 7, 33, 1000, 4097}) {
      SCOPED_TRACE(fmt::format("tile.{} fp32 [1, {}] scalar", op.name, n));
      const DType t = DType::Float32;
      const double lit = -0.75;
      Device dev;
      auto a0 = values(n, 3);
      Tensor d = full(dev, {1, n}, t, 7), a = from_vector(dev, {1, n}, t, a0);
      run_one_op(dev, {{"d", {1, n}, t}, {"a", {1, n}, t}}, {},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                   op.binary(ub[0], ub[1], TileArg(lit));
                 },
                 {d, a});
      EXPECT_EQ(diff_bits(
                    d.to_vector(), a0, [&](int64_t) { return lit; }, op.f),
                "");
    }
}

TEST(VectorRowLoops, RowExpandBitExactOnTails) {
  // Rows of 1000 fp32 are whole 32-byte blocks, so several rows fit back to back; the odd
  // lengths run as one row.
  for (const RowOp& op : row_ops())
    for (int64_t n : {1, 7, 33, 1000, 4097}) {
      const int64_t R = n == 1000 ? 3 : 1;
      SCOPED_TRACE(fmt::format("tile.row_expand_{} fp32 [{}, {}]", op.name, R, n));
      const DType t = DType::Float32;
      Device dev;
      auto a0 = values(R * n, 4);
      std::vector<double> b0 = {-0.0, 1e-40, NAN};
      b0.resize(R);
      if (R == 1) b0[0] = 3.5;
      Tensor d = full(dev, {R, n}, t, 7), a = from_vector(dev, {R, n}, t, a0),
             b = from_vector(dev, {R}, t, b0);
      run_one_op(dev, {{"d", {R, n}, t}, {"a", {R, n}, t}, {"b", {R}, t}}, {},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                   op.row_expand(ub[0], ub[1], ub[2]);
                 },
                 {d, a, b});
      EXPECT_EQ(diff_bits(
                    d.to_vector(), a0, [&](int64_t i) { return b0[i / n]; },
                    [&](float x, float y) { return row_expand_ref(op.name, op.f, x, y); }),
                "");
    }
}

}  // namespace
}  // namespace tl
