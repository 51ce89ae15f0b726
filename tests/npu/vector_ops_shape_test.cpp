// Per-primitive tests of the virtual NPU's vector tile ops that make or move data rather than
// compute element by element (fills and index generation, gathers, broadcast, row_expand,
// transpose) and of the reductions: each op runs alone on one AIV over every dtype A2 allows for
// it, on regions with tails, compared bit-exactly against a plain C++ reference of the rounding
// model; elements outside the region must keep their sentinel values. The elementwise ops are in
// vector_ops_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "npu/vector_ops.h"

namespace tl {
namespace {

using namespace optest;
using npu::RoundMode;

// ---- fills and index generation ------------------------------------------------------------

TEST(VectorOps, FillCreateVecIndexArithProgression) {
  for (DType t : legal("tile.fill"))
    for (const Region& rg : tail_regions(dtype_bytes(t))) {
      SCOPED_TRACE(fmt::format("fill {} {}", dtype_name(t), rg.str()));
      Device dev;
      Tensor d = full(dev, rg.shape, t, 7);
      const double v = is_float(t) ? 3.3 : 41;
      run_one_op(dev, {{"d", rg.shape, t}}, {{"v", DType::Float32}},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>& s) {
                   T::tile::fill(rg.of(ub[0]), s[0] + 1);
                 },
                 {d, v - 1});
      std::vector<double> want(d.numel(), 7.0);
      // The scalar expression is fp32 (3.3f - 1 + 1): rounded to t from its fp32 value.
      for (int64_t f : rg.flat())
        want[f] = q(t, static_cast<double>(static_cast<float>(static_cast<float>(v - 1) + 1.0f)));
      EXPECT_EQ(diff_exact(d.to_vector(), want), "");
    }
  for (DType t : legal("tile.createvecindex"))
    for (const Region& rg : tail_regions(dtype_bytes(t))) {
      SCOPED_TRACE(fmt::format("createvecindex {} {}", dtype_name(t), rg.str()));
      Device dev;
      Tensor d = full(dev, rg.shape, t, 7);
      run_one_op(dev, {{"d", rg.shape, t}}, {},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                   T::tile::createvecindex(rg.of(ub[0]), -5);
                 },
                 {d});
      std::vector<double> want(d.numel(), 7.0);
      auto fl = rg.flat();
      for (size_t i = 0; i < fl.size(); ++i) want[fl[i]] = q(t, -5.0 + static_cast<double>(i));
      EXPECT_EQ(diff_exact(d.to_vector(), want), "");
    }
  for (DType t : legal("tile.arith_progression"))
    for (const Region& rg : tail_regions(dtype_bytes(t)))
      for (bool with_count : {false, true}) {
        SCOPED_TRACE(
            fmt::format("arith_progression {} {} count {}", dtype_name(t), rg.str(), with_count));
        Device dev;
        Tensor d = full(dev, rg.shape, t, 7);
        const double first = is_float(t) ? 1.5 : 3, diff = is_float(t) ? 0.25 : -2;
        const int64_t count = with_count ? rg.numel() - 5 : rg.numel();
        run_one_op(dev, {{"d", rg.shape, t}}, {},
                   [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                     if (with_count)
                       T::tile::arith_progression(rg.of(ub[0]), first, diff,
                                                  static_cast<int>(count));
                     else
                       T::tile::arith_progression(rg.of(ub[0]), first, diff);
                   },
                   {d});
        std::vector<double> want(d.numel(), 7.0);
        auto fl = rg.flat();
        for (int64_t i = 0; i < count; ++i)
          want[fl[i]] = q(t, first + static_cast<double>(i) * diff);
        EXPECT_EQ(diff_exact(d.to_vector(), want), "");
      }
}

// ---- gathers, broadcast, row_expand, transpose --------------------------------------------

TEST(VectorOps, GatherByteOffsets) {
  for (DType t : legal("tile.gather")) {
    const int64_t es = dtype_bytes(t), ns = 512 / es, m = 96;
    for (int base : {0, 2}) {
      SCOPED_TRACE(fmt::format("gather {} base {} elements", dtype_name(t), base));
      std::mt19937 rng(5);
      std::vector<double> off(m);
      for (auto& o : off) o = static_cast<double>((rng() % (ns - base)) * es);
      Device dev;
      Tensor d = full(dev, {m}, t, 7), s = input(dev, {ns}, t, 61),
             o = from_vector(dev, {m}, DType::UInt32, off);
      run_one_op(dev, {{"d", {m}, t}, {"s", {ns}, t}, {"o", {m}, DType::UInt32}}, {},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                   T::tile::gather(ub[0], ub[1], ub[2], static_cast<int>(base * es));
                 },
                 {d, s, o});
      auto sv = s.to_vector();
      std::vector<double> want(m);
      for (int64_t i = 0; i < m; ++i) want[i] = sv[static_cast<int64_t>(off[i]) / es + base];
      EXPECT_EQ(diff_exact(d.to_vector(), want), "");
    }
  }
}

TEST(VectorOps, GatherMaskPatternsAndBitmask) {
  const std::vector<std::pair<std::string, std::vector<int>>> patterns = {
      {"P0101", {0, 2}}, {"P1010", {1, 3}}, {"P0001", {0}},         {"P0010", {1}},
      {"P0100", {2}},    {"P1000", {3}},    {"P1111", {0, 1, 2, 3}}};
  for (DType t : legal("tile.gather_mask")) {
    const int64_t n = 256 / dtype_bytes(t) + 32 / dtype_bytes(t);  // a repeat plus a tail
    for (const auto& [p, keep] : patterns) {
      SCOPED_TRACE(fmt::format("gather_mask {} {}", dtype_name(t), p));
      Device dev;
      Tensor d = full(dev, {n}, t, 7), s = input(dev, {n}, t, 71);
      run_one_op(dev, {{"d", {n}, t}, {"s", {n}, t}}, {},
                 [&, p = p](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                   T::tile::gather_mask(ub[0], ub[1], p);
                 },
                 {d, s});
      auto sv = s.to_vector();
      std::vector<double> want(n, 7.0);
      int64_t k = 0;
      for (int64_t i = 0; i < n; ++i)
        if (std::find(keep.begin(), keep.end(), static_cast<int>(i % 4)) != keep.end())
          want[k++] = sv[i];
      EXPECT_EQ(diff_exact(d.to_vector(), want), "");
    }
    SCOPED_TRACE(fmt::format("gather_mask {} uint32 bitmask", dtype_name(t)));
    std::mt19937 rng(3);
    std::vector<double> mask(8);
    for (auto& x : mask) x = rng();
    Device dev;
    Tensor d = full(dev, {n}, t, 7), s = input(dev, {n}, t, 72),
           mk = from_vector(dev, {8}, DType::UInt32, mask);
    run_one_op(dev, {{"d", {n}, t}, {"s", {n}, t}, {"mk", {8}, DType::UInt32}}, {},
               [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                 T::tile::gather_mask(ub[0], ub[1], TileArg(ub[2]));
               },
               {d, s, mk});
    auto sv = s.to_vector();
    std::vector<double> want(n, 7.0);
    int64_t k = 0;
    for (int64_t i = 0; i < n && i < 256; ++i)
      if ((static_cast<uint32_t>(mask[i / 32]) >> (i % 32)) & 1) want[k++] = sv[i];
    EXPECT_EQ(diff_exact(d.to_vector(), want), "");
  }
}

TEST(VectorOps, Broadcast) {
  for (DType t : legal("tile.broadcast")) {
    const int64_t C = 32 / dtype_bytes(t) * 3, R = 5;
    for (bool two_d : {false, true}) {
      SCOPED_TRACE(fmt::format("broadcast {} from {}", dtype_name(t), two_d ? "[1, C]" : "[C]"));
      Device dev;
      std::vector<int64_t> sshape = two_d ? std::vector<int64_t>{2, C} : std::vector<int64_t>{C};
      Tensor d = full(dev, {R, C}, t, 7), s = input(dev, sshape, t, 81);
      run_one_op(dev, {{"d", {R, C}, t}, {"s", sshape, t}}, {},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                   if (two_d)
                     T::tile::broadcast(ub[0], ub[1].region({1, 0}, {1, static_cast<int>(C)}));
                   else
                     T::tile::broadcast(ub[0], ub[1]);
                 },
                 {d, s});
      auto sv = s.to_vector();
      std::vector<double> want(R * C);
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c) want[r * C + c] = sv[(two_d ? C : 0) + c];
      EXPECT_EQ(diff_exact(d.to_vector(), want), "");
    }
  }
}

TEST(VectorOps, RowExpandAllOpsAndDtypes) {
  struct RX {
    const char* name;
    std::function<void(TileArg, TileArg, TileArg)> op;
    std::function<float(float, float)> f;
    std::function<int64_t(int64_t, int64_t)> i;
  };
  const std::vector<RX> ops = {
      {"add", [](TileArg d, TileArg a, TileArg b) { T::tile::row_expand_add(d, a, b); },
       [](float a, float b) { return a + b; }, [](int64_t a, int64_t b) { return a + b; }},
      {"sub", [](TileArg d, TileArg a, TileArg b) { T::tile::row_expand_sub(d, a, b); },
       [](float a, float b) { return a - b; }, [](int64_t a, int64_t b) { return a - b; }},
      {"mul", [](TileArg d, TileArg a, TileArg b) { T::tile::row_expand_mul(d, a, b); },
       [](float a, float b) { return a * b; }, [](int64_t a, int64_t b) { return a * b; }},
      {"div", [](TileArg d, TileArg a, TileArg b) { T::tile::row_expand_div(d, a, b); },
       [](float a, float b) { return a / b; }, [](int64_t a, int64_t b) { return a / b; }},
      {"max", [](TileArg d, TileArg a, TileArg b) { T::tile::row_expand_max(d, a, b); }, fmax_nan,
       [](int64_t a, int64_t b) { return std::max(a, b); }},
      {"min", [](TileArg d, TileArg a, TileArg b) { T::tile::row_expand_min(d, a, b); }, fmin_nan,
       [](int64_t a, int64_t b) { return std::min(a, b); }},
  };
  for (const auto& rx : ops)
    for (DType t : legal((std::string("tile.row_expand_") + rx.name).c_str())) {
      const int64_t R = 32 / dtype_bytes(t),
                    C = 32 / dtype_bytes(t) * 3;  // src1 [R] is one 32 B row
      SCOPED_TRACE(fmt::format("row_expand_{} {} [{}, {}]", rx.name, dtype_name(t), R, C));
      Device dev;
      // Integers stay small (no overflow): overflow and |x| > 2^24 are a known bug, see below.
      Tensor d = full(dev, {R, C}, t, 7), a = input(dev, {R, C}, t, 91, -4, 4),
             b = input(dev, {R}, t, 92, -4, 4);
      if (!is_float(t))
        a = uniform(dev, {R, C}, t, 91, -150, 150), b = uniform(dev, {R}, t, 92, -150, 150);
      if (std::string(rx.name) == "div") b = uniform(dev, {R}, t, 92, 0.5, 3);
      run_one_op(dev, {{"d", {R, C}, t}, {"a", {R, C}, t}, {"b", {R}, t}}, {},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                   rx.op(ub[0], ub[1], ub[2]);
                 },
                 {d, a, b});
      auto av = a.to_vector(), bv = b.to_vector();
      std::vector<double> want(R * C);
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c)
          want[r * C + c] =
              is_float(t)
                  ? vr(t, rx.f(static_cast<float>(av[r * C + c]), static_cast<float>(bv[r])))
                  : wrap(t, rx.i(static_cast<int64_t>(av[r * C + c]), static_cast<int64_t>(bv[r])));
      EXPECT_EQ(diff_exact(d.to_vector(), want), "");
    }
}

TEST(VectorOps, RowExpandInt32IsExactBeyondFp32Precision) {
  // Integer row_expand must compute in integers, like tile.add does: 2^30 + 3 + 1 is exact.
  const int64_t R = 8, C = 8;
  std::vector<double> a0(R * C), b0(R);
  for (int64_t i = 0; i < R * C; ++i) a0[i] = (1 << 30) + 3 + i;
  for (int64_t r = 0; r < R; ++r) b0[r] = 1 + r;
  Device dev;
  Tensor d = Tensor::empty(dev, {R, C}, DType::Int32),
         a = from_vector(dev, {R, C}, DType::Int32, a0),
         b = from_vector(dev, {R}, DType::Int32, b0);
  run_one_op(
      dev, {{"d", {R, C}, DType::Int32}, {"a", {R, C}, DType::Int32}, {"b", {R}, DType::Int32}}, {},
      [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
        T::tile::row_expand_add(ub[0], ub[1], ub[2]);
      },
      {d, a, b});
  std::vector<double> want(R * C);
  for (int64_t i = 0; i < R * C; ++i) want[i] = a0[i] + b0[i / C];
  EXPECT_EQ(diff_exact(d.to_vector(), want), "");
}

TEST(VectorOps, Transpose16x16) {
  for (DType t : legal("tile.transpose")) {
    SCOPED_TRACE(dtype_name(t));
    Device dev;
    Tensor d = full(dev, {32, 16}, t, 7), s = input(dev, {16, 32}, t, 101);
    // Transpose the right half of s into the bottom half of d.
    run_one_op(
        dev, {{"d", {32, 16}, t}, {"s", {16, 32}, t}}, {},
        [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
          T::tile::transpose(ub[0].region({16, 0}, {16, 16}), ub[1].region({0, 16}, {16, 16}));
        },
        {d, s});
    auto sv = s.to_vector();
    std::vector<double> want(32 * 16, 7.0);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) want[(16 + j) * 16 + i] = sv[i * 32 + 16 + j];
    EXPECT_EQ(diff_exact(d.to_vector(), want), "");
  }
}
// ---- reductions ---------------------------------------------------------------------------

/// ReduceSum's order: a binary tree (pairs i, i + half) inside each 256-byte repeat, then the
/// repeat results added in order, all in fp32.
float tree_sum_ref(const std::vector<float>& x, int64_t per_repeat) {
  float total = 0;
  for (size_t s = 0; s < x.size(); s += per_repeat) {
    std::vector<float> b(
        x.begin() + static_cast<std::ptrdiff_t>(s),
        x.begin() + static_cast<std::ptrdiff_t>(std::min(x.size(), s + per_repeat)));
    while (b.size() > 1) {
      size_t half = (b.size() + 1) / 2;
      for (size_t i = 0; i + half < b.size(); ++i) b[i] += b[i + half];
      b.resize(half);
    }
    total += b[0];
  }
  return total;
}

TEST(VectorOps, ReduceSumMaxMinDimsAndClear) {
  for (const char* kind : {"sum", "max", "min"})
    for (DType t : legal((std::string("reduce_") + kind).c_str()))
      for (int dim : {-1, 0})
        for (bool clear : {true, false}) {
          // Rows of 288 bytes: one repeat plus a 32-byte tail; 32 bytes of row results.
          const int64_t R = 32 / dtype_bytes(t), C = 288 / dtype_bytes(t);
          const int64_t outn = dim == -1 ? R : C;
          SCOPED_TRACE(fmt::format("reduce_{} {} [{}, {}] dim {} clear {}", kind, dtype_name(t), R,
                                   C, dim, clear));
          Device dev;
          Tensor s = input(dev, {R, C}, t, 121), d = input(dev, {outn}, t, 122);
          if (dim == 0 && std::string(kind) == "sum") {  // exact in any order: multiples of 1/8
            auto v = s.to_vector();
            for (auto& x : v) x = std::round(x * 8) / 8;
            s = from_vector(dev, {R, C}, t, v);
          }
          auto sv = s.to_vector(), d0 = d.to_vector();
          run_one_op(dev, {{"s", {R, C}, t}, {"d", {outn}, t}}, {},
                     [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                       if (kind[1] == 'u') T::reduce_sum(ub[0], ub[1], dim, clear);
                       if (kind[1] == 'a') T::reduce_max(ub[0], ub[1], dim, clear);
                       if (kind[1] == 'i') T::reduce_min(ub[0], ub[1], dim, clear);
                     },
                     {s, d});
          std::vector<double> want(outn);
          for (int64_t o = 0; o < outn; ++o) {
            std::vector<float> run;
            for (int64_t k = 0; k < (dim == -1 ? C : R); ++k)
              run.push_back(static_cast<float>(dim == -1 ? sv[o * C + k] : sv[k * C + o]));
            float v;
            if (kind[1] == 'u') {
              v = tree_sum_ref(run, 256 / dtype_bytes(t));
              if (!clear) v += static_cast<float>(d0[o]);
            } else {
              v = kind[1] == 'a' ? *std::max_element(run.begin(), run.end())
                                 : *std::min_element(run.begin(), run.end());
              if (!clear)
                v = kind[1] == 'a' ? std::max(v, static_cast<float>(d0[o]))
                                   : std::min(v, static_cast<float>(d0[o]));
            }
            want[o] = vr(t, v);
          }
          EXPECT_EQ(diff_exact(d.to_vector(), want), "");
        }
}

TEST(VectorOps, ReduceSumOfStridedSubRegion) {
  // [8, 40] fp32 region (columns 8..47) of an [8, 56] buffer: strided rows with a tail.
  Device dev;
  Tensor s = input(dev, {8, 56}, DType::Float32, 131), d = full(dev, {8}, DType::Float32, 7);
  run_one_op(dev, {{"s", {8, 56}, DType::Float32}, {"d", {8}, DType::Float32}}, {},
             [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
               T::reduce_sum(ub[0].region({0, 8}, {8, 40}), ub[1], -1, true);
             },
             {s, d});
  auto sv = s.to_vector();
  std::vector<double> want(8);
  for (int r = 0; r < 8; ++r) {
    std::vector<float> run;
    for (int c = 0; c < 40; ++c) run.push_back(static_cast<float>(sv[r * 56 + 8 + c]));
    want[r] = tree_sum_ref(run, 64);
  }
  EXPECT_EQ(diff_exact(d.to_vector(), want), "");
}
}  // namespace
}  // namespace tl
