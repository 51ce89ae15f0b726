// Per-primitive tests of the virtual NPU's vector tile ops and reductions: each op runs alone
// on one AIV over every dtype A2 allows for it (OpDef::dtypes), on regions with tails
// (element counts that are not a multiple of a 256-byte repeat, strided sub-regions), and is
// compared bit-exactly against a plain C++ reference of the rounding model (compute in fp32,
// round to the destination dtype with RINT; integers wrap). Elements outside the region must
// keep their sentinel values.
//
// The elementwise ops are here (binary, unary, scalar-operand, compare and select, bitwise);
// fills, gathers, broadcasts, transposes and reductions are in vector_ops_shape_test.cpp.
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

// ---- binary ops --------------------------------------------------------------------------

using BinFn = std::function<void(TileArg, TileArg, TileArg)>;
struct BinCase {
  const char* name;
  BinFn op;
  std::function<float(float, float)> f;
  std::function<int64_t(int64_t, int64_t)> i;
};

std::vector<BinCase> bin_cases() {
  return {
      {"add", [](TileArg d, TileArg a, TileArg b) { T::tile::add(d, a, b); },
       [](float a, float b) { return a + b; }, [](int64_t a, int64_t b) { return a + b; }},
      {"sub", [](TileArg d, TileArg a, TileArg b) { T::tile::sub(d, a, b); },
       [](float a, float b) { return a - b; }, [](int64_t a, int64_t b) { return a - b; }},
      {"mul", [](TileArg d, TileArg a, TileArg b) { T::tile::mul(d, a, b); },
       [](float a, float b) { return a * b; }, [](int64_t a, int64_t b) { return a * b; }},
      {"div", [](TileArg d, TileArg a, TileArg b) { T::tile::div(d, a, b); },
       [](float a, float b) { return a / b; },
       [](int64_t a, int64_t b) { return b == 0 ? 0 : a / b; }},
      {"max", [](TileArg d, TileArg a, TileArg b) { T::tile::max(d, a, b); }, fmax_nan,
       [](int64_t a, int64_t b) { return std::max(a, b); }},
      {"min", [](TileArg d, TileArg a, TileArg b) { T::tile::min(d, a, b); }, fmin_nan,
       [](int64_t a, int64_t b) { return std::min(a, b); }},
  };
}

enum class Src1 { Tile, UbScalar, Literal, ScalarParam };

TEST(VectorOps, BinaryAllDtypesTailsAndOperandForms) {
  int checked = 0;
  for (const auto& bc : bin_cases()) {
    for (DType t : legal((std::string("tile.") + bc.name).c_str())) {
      for (const Region& rg : tail_regions(dtype_bytes(t))) {
        for (Src1 form : {Src1::Tile, Src1::UbScalar, Src1::Literal, Src1::ScalarParam}) {
          SCOPED_TRACE(fmt::format("tile.{} {} {} src1 form {}", bc.name, dtype_name(t), rg.str(),
                                   int(form)));
          Device dev;
          Tensor d = full(dev, rg.shape, t, 7), a = input(dev, rg.shape, t, 11),
                 b = input(dev, rg.shape, t, 12);
          if (std::string(bc.name) == "div") b = uniform(dev, rg.shape, t, 12, 0.25, 3);
          const double lit = is_float(t) ? 0.3 : 3;    // rounded to t by the op
          const double param = is_float(t) ? 1.7 : 5;  // a T::Scalar, times 2 in the expression
          const int64_t sidx = rg.flat()[0];           // UB scalar: b at the region's first element
          run_one_op(dev, {{"d", rg.shape, t}, {"a", rg.shape, t}, {"b", rg.shape, t}},
                     {{"s", is_float(t) ? DType::Float32 : DType::Int32}},
                     [&](const std::vector<Buffer>& ub, const std::vector<Var>& s) {
                       TileArg src1 = rg.of(ub[2]);
                       if (form == Src1::UbScalar)
                         src1 = rg.shape.size() == 1 ? ub[2](static_cast<int>(sidx))
                                                     : ub[2](static_cast<int>(sidx / rg.shape[1]),
                                                             static_cast<int>(sidx % rg.shape[1]));
                       if (form == Src1::Literal) src1 = TileArg(lit);
                       if (form == Src1::ScalarParam) src1 = TileArg(s[0] * 2);
                       bc.op(rg.of(ub[0]), rg.of(ub[1]), src1);
                     },
                     {d, a, b, param});
          auto av = a.to_vector(), bv = b.to_vector(), want = d.to_vector();
          std::fill(want.begin(), want.end(), 7.0);
          for (int64_t f : rg.flat()) {
            double y = form == Src1::Tile       ? bv[f]
                       : form == Src1::UbScalar ? bv[sidx]
                       : form == Src1::Literal  ? q(t, lit)
                                                : q(t, param * 2);
            want[f] = is_float(t)
                          ? vr(t, bc.f(static_cast<float>(av[f]), static_cast<float>(y)))
                          : wrap(t, bc.i(static_cast<int64_t>(av[f]), static_cast<int64_t>(y)));
          }
          EXPECT_EQ(diff_exact(d.to_vector(), want), "");
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 200);
}

TEST(VectorOps, BinaryFloatSpecialValues) {
  // inf, nan, signed zeros, subnormal results and overflow to inf in the narrow dtypes.
  const std::vector<double> av = {INFINITY, -INFINITY, NAN, 0.0,  -0.0, 60000, 1e-5, -3,
                                  2,        1,         0.5, -0.5, 7,    8,     9,    10};
  const std::vector<double> bv = {1,   INFINITY, 2,    -0.0, -0.0, 60000, 1e-3, -INFINITY,
                                  NAN, 0.0,      -0.0, 3,    7,    8,     9,    10};
  for (const auto& bc : bin_cases())
    for (DType t : {DType::Float16, DType::Float32}) {
      SCOPED_TRACE(fmt::format("tile.{} {}", bc.name, dtype_name(t)));
      const int64_t n = 32 / dtype_bytes(t) * 2;
      std::vector<double> a0(n), b0(n);
      for (int64_t i = 0; i < n; ++i) a0[i] = av[i % av.size()], b0[i] = bv[(i * 3) % bv.size()];
      Device dev;
      Tensor d = Tensor::empty(dev, {n}, t), a = from_vector(dev, {n}, t, a0),
             b = from_vector(dev, {n}, t, b0);
      run_one_op(dev, {{"d", {n}, t}, {"a", {n}, t}, {"b", {n}, t}}, {},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                   bc.op(ub[0], ub[1], ub[2]);
                 },
                 {d, a, b});
      auto x = a.to_vector(), y = b.to_vector();
      std::vector<double> want(n);
      for (int64_t i = 0; i < n; ++i)
        want[i] = vr(t, bc.f(static_cast<float>(x[i]), static_cast<float>(y[i])));
      EXPECT_EQ(diff_exact(d.to_vector(), want), "");
    }
}

// ---- unary ops ---------------------------------------------------------------------------

struct UnCase {
  const char* name;
  std::function<void(TileArg, TileArg)> op;
  std::function<double(double)> ref;  // exact-model ops: applied to the fp32 value in fp32
  bool exact;                         // false: transcendental, compared within a few ulps
  double lo, hi;
};

std::vector<UnCase> un_cases() {
  auto f32 = [](auto fn) {
    return [fn](double x) { return static_cast<double>(fn(static_cast<float>(x))); };
  };
  return {
      {"exp", [](TileArg d, TileArg s) { T::tile::exp(d, s); },
       [](double x) { return std::exp(x); }, false, -6, 6},
      {"ln", [](TileArg d, TileArg s) { T::tile::ln(d, s); }, [](double x) { return std::log(x); },
       false, 0.01, 50},
      {"abs", [](TileArg d, TileArg s) { T::tile::abs(d, s); },
       f32([](float x) { return std::fabs(x); }), true, -5, 5},
      {"reciprocal", [](TileArg d, TileArg s) { T::tile::reciprocal(d, s); },
       [](double x) { return 1 / x; }, false, 0.1, 9},
      {"sqrt", [](TileArg d, TileArg s) { T::tile::sqrt(d, s); },
       f32([](float x) { return std::sqrt(x); }), true, 0, 9},
      {"rsqrt", [](TileArg d, TileArg s) { T::tile::rsqrt(d, s); },
       [](double x) { return 1 / std::sqrt(x); }, false, 0.01, 9},
      {"relu", [](TileArg d, TileArg s) { T::tile::relu(d, s); },
       f32([](float x) { return x > 0 ? x : 0.0f; }), true, -5, 5},
      {"sigmoid", [](TileArg d, TileArg s) { T::tile::sigmoid(d, s); },
       [](double x) { return 1 / (1 + std::exp(-x)); }, false, -8, 8},
      {"silu", [](TileArg d, TileArg s) { T::tile::silu(d, s); },
       [](double x) { return x / (1 + std::exp(-x)); }, false, -8, 8},
      {"sin", [](TileArg d, TileArg s) { T::tile::sin(d, s); },
       [](double x) { return std::sin(x); }, false, -3, 3},
      {"cos", [](TileArg d, TileArg s) { T::tile::cos(d, s); },
       [](double x) { return std::cos(x); }, false, -1.5, 1.5},
      {"tanh", [](TileArg d, TileArg s) { T::tile::tanh(d, s); },
       [](double x) { return std::tanh(x); }, false, -4, 4},
      {"round", [](TileArg d, TileArg s) { T::tile::round(d, s); },
       [](double x) { return std::copysign(npu::round_integral(x, RoundMode::Rint), x); }, true, -9,
       9},
  };
}

TEST(VectorOps, UnaryAllDtypesAndTails) {
  for (const auto& uc : un_cases())
    for (DType t : legal((std::string("tile.") + uc.name).c_str()))
      for (const Region& rg : tail_regions(dtype_bytes(t))) {
        SCOPED_TRACE(fmt::format("tile.{} {} {}", uc.name, dtype_name(t), rg.str()));
        Device dev;
        Tensor d = full(dev, rg.shape, t, 7), s = input(dev, rg.shape, t, 21, uc.lo, uc.hi);
        if (std::string(uc.name) == "round") {  // quarters: ties to even at +-0.5, 1.5, ...
          auto v = s.to_vector();
          for (auto& x : v) x = std::round(x * 4) / 4;
          s = from_vector(dev, rg.shape, t, v);
        }
        run_one_op(dev, {{"d", rg.shape, t}, {"s", rg.shape, t}}, {},
                   [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                     uc.op(rg.of(ub[0]), rg.of(ub[1]));
                   },
                   {d, s});
        auto sv = s.to_vector();
        std::vector<double> want(sv.size(), 7.0);
        for (int64_t f : rg.flat()) {
          if (!is_float(t))
            want[f] = std::max<double>(sv[f], 0);  // relu on int32
          else
            want[f] = uc.exact ? vr(t, static_cast<float>(uc.ref(sv[f]))) : uc.ref(sv[f]);
        }
        auto got = d.to_vector();
        // Rsqrt and Reciprocal are approximations (their API pages: float within 1e-4, half within
        // 1e-3 relative, plus the final rounding to half).
        const bool approximate =
            std::string(uc.name) == "rsqrt" || std::string(uc.name) == "reciprocal";
        const double eps = t == DType::Float32 ? 0x1p-23 : t == DType::Float16 ? 0x1p-10 : 0x1p-7;
        const double ulps = approximate ? (t == DType::Float32 ? 1e-4 : 1e-3) / eps + 0.5
                                        : (t == DType::Float32 ? 8 : 0.5 + 0x1p-12);
        if (uc.exact || !is_float(t))
          EXPECT_EQ(diff_exact(got, want), "");
        else
          EXPECT_EQ(diff_ulps(got, want, t, ulps), "");
      }
}

// ---- scalar-operand ops: axpy, leaky_relu, clamp ------------------------------------------

TEST(VectorOps, AxpyIncludingMixedFp16IntoFp32) {
  std::vector<std::pair<DType, DType>> pairs;  // (src, dst)
  for (DType t : legal("tile.axpy")) pairs.emplace_back(t, t);
  for (auto p : default_target().axpy_mixed) pairs.push_back(p);
  for (auto [st, dt] : pairs)
    for (const Region& rg : tail_regions(4)) {
      // A region in the dst's geometry; the fp16 src buffer has the same element shape.
      SCOPED_TRACE(fmt::format("axpy {} -> {} {}", dtype_name(st), dtype_name(dt), rg.str()));
      Region r2 = rg;
      if (dtype_bytes(st) != 4) {  // same element counts, 32-byte rows in both dtypes
        for (auto* v : {&r2.shape, &r2.start, &r2.extent}) v->back() *= 2;
      }
      Device dev;
      Tensor d = input(dev, r2.shape, dt, 31), s = input(dev, r2.shape, st, 32);
      run_one_op(dev, {{"d", r2.shape, dt}, {"s", r2.shape, st}}, {},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                   T::tile::axpy(r2.of(ub[0]), r2.of(ub[1]), 0.37);
                 },
                 {d, s});
      auto dv = d.to_vector(), sv = s.to_vector();
      auto want = dv;
      // d was overwritten; recompute from the original inputs (same seeds).
      Device dev2;
      auto d0 = input(dev2, r2.shape, dt, 31).to_vector();
      want = d0;
      const float alpha = static_cast<float>(q(st, 0.37));
      for (int64_t f : r2.flat()) {
        float prod = alpha * static_cast<float>(sv[f]);
        want[f] = vr(dt, static_cast<float>(d0[f]) + prod);
      }
      EXPECT_EQ(diff_exact(dv, want), "");
    }
}

TEST(VectorOps, LeakyReluAndClamp) {
  for (DType t : legal("tile.leaky_relu"))
    for (const Region& rg : tail_regions(dtype_bytes(t))) {
      SCOPED_TRACE(fmt::format("leaky_relu {} {}", dtype_name(t), rg.str()));
      Device dev;
      Tensor d = full(dev, rg.shape, t, 7), s = input(dev, rg.shape, t, 41);
      run_one_op(dev, {{"d", rg.shape, t}, {"s", rg.shape, t}}, {{"alpha", DType::Float32}},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>& a) {
                   T::tile::leaky_relu(rg.of(ub[0]), rg.of(ub[1]), a[0]);
                 },
                 {d, s, 0.1});
      auto sv = s.to_vector();
      std::vector<double> want(sv.size(), 7.0);
      const float alpha = static_cast<float>(q(t, static_cast<float>(0.1)));
      for (int64_t f : rg.flat())
        want[f] = sv[f] >= 0 ? sv[f] : vr(t, alpha * static_cast<float>(sv[f]));
      EXPECT_EQ(diff_exact(d.to_vector(), want), "");
    }
  for (DType t : legal("tile.clamp"))
    for (const Region& rg : tail_regions(dtype_bytes(t))) {
      SCOPED_TRACE(fmt::format("clamp {} {}", dtype_name(t), rg.str()));
      Device dev;
      Tensor d = full(dev, rg.shape, t, 7), s = input(dev, rg.shape, t, 42);
      run_one_op(dev, {{"d", rg.shape, t}, {"s", rg.shape, t}}, {},
                 [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                   T::tile::clamp(rg.of(ub[0]), rg.of(ub[1]), -1.3, 2.1);
                 },
                 {d, s});
      auto sv = s.to_vector();
      std::vector<double> want(sv.size(), 7.0);
      for (int64_t f : rg.flat()) want[f] = std::min(std::max(sv[f], q(t, -1.3)), q(t, 2.1));
      EXPECT_EQ(diff_exact(d.to_vector(), want), "");
    }
}

// ---- compare and select --------------------------------------------------------------------

bool cmp(const std::string& m, double a, double b) {
  if (m == "LT") return a < b;
  if (m == "GT") return a > b;
  if (m == "EQ") return a == b;
  if (m == "LE") return a <= b;
  if (m == "GE") return a >= b;
  return a != b;
}

TEST(VectorOps, CompareToBitmask) {
  for (DType t : legal("tile.compare")) {
    const auto& modes_it = default_target().compare_modes;
    std::vector<std::string> modes = {"LT", "GT", "EQ", "LE", "GE", "NE"};
    if (auto it = modes_it.find(t); it != modes_it.end()) modes = it->second;
    // count * sizeof = 512 bytes (two repeats); a 64-byte uint8 mask with sentinel bytes after
    // the (count / 8) bytes compare writes.
    const int64_t C = 32 / dtype_bytes(t) * 2, R = 512 / dtype_bytes(t) / C;
    for (const auto& mode : modes)
      for (Src1 form : {Src1::Tile, Src1::UbScalar, Src1::Literal}) {
        SCOPED_TRACE(fmt::format("compare {} {} form {}", mode, dtype_name(t), int(form)));
        std::mt19937 rng(7);
        std::vector<double> a0(R * C), b0(R * C);
        for (auto& x : a0) x = static_cast<int>(rng() % 9) * 0.5 - 2;
        for (auto& x : b0) x = static_cast<int>(rng() % 9) * 0.5 - 2;
        if (is_float(t))
          a0[3] = NAN, b0[4] = NAN, a0[5] = INFINITY, a0[6] = -INFINITY, a0[7] = -0.0, b0[7] = 0.0;
        Device dev;
        Tensor m = full(dev, {64}, DType::UInt8, 0xA5), a = from_vector(dev, {R, C}, t, a0),
               b = from_vector(dev, {R, C}, t, b0);
        a0 = a.to_vector(), b0 = b.to_vector();  // as stored in t
        const double lit = is_float(t) ? 0.5 : 1;
        run_one_op(dev, {{"m", {64}, DType::UInt8}, {"a", {R, C}, t}, {"b", {R, C}, t}}, {},
                   [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                     TileArg src1 = ub[2];
                     if (form == Src1::UbScalar) src1 = ub[2](0, 1);
                     if (form == Src1::Literal) src1 = TileArg(lit);
                     T::tile::compare(ub[0], ub[1], src1, mode);
                   },
                   {m, a, b});
        std::vector<double> want(64, 0xA5);
        for (int64_t i = 0; i < R * C / 8; ++i) want[i] = 0;
        for (int64_t i = 0; i < R * C; ++i) {
          double y = form == Src1::Tile ? b0[i] : form == Src1::UbScalar ? b0[1] : q(t, lit);
          if (cmp(mode, a0[i], y)) want[i / 8] += 1 << (i % 8);
        }
        EXPECT_EQ(diff_exact(m.to_vector(), want), "");
      }
  }
}

TEST(VectorOps, CompareInt32EqIsExactBeyondFp32Precision) {
  // int32 EQ compares integers: 16777217 != 16777216 although both round to the same fp32.
  const int64_t n = 64;
  std::vector<double> a0(n), b0(n);
  for (int64_t i = 0; i < n; ++i) {
    a0[i] = 16777216 + (i % 3) + (i % 2 ? 1000000000 : 0);
    b0[i] = 16777216 + (i % 4) + (i % 2 ? 1000000000 : 0);
  }
  Device dev;
  Tensor m = Tensor::empty(dev, {32}, DType::UInt8), a = from_vector(dev, {n}, DType::Int32, a0),
         b = from_vector(dev, {n}, DType::Int32, b0);
  run_one_op(dev, {{"m", {32}, DType::UInt8}, {"a", {n}, DType::Int32}, {"b", {n}, DType::Int32}},
             {},
             [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
               T::tile::compare(ub[0], ub[1], ub[2], "EQ");
             },
             {m, a, b});
  std::vector<double> want(32, 0);
  for (int64_t i = 0; i < n; ++i)
    if (a0[i] == b0[i]) want[i / 8] += 1 << (i % 8);
  EXPECT_EQ(diff_exact(m.to_vector(), want), "");
}

TEST(VectorOps, SelectModes0And2) {
  for (DType t : legal("tile.select"))
    for (int mode : {0, 2}) {
      // 512 bytes of data (two repeats: mode 0 reuses the first repeat's bits) and a
      // strided tail region.
      const int64_t C = 32 / dtype_bytes(t) * 2, R = 512 / dtype_bytes(t) / C;
      for (const Region& rg :
           {Region{{R, C}, {0, 0}, {R, C}}, Region{{R, C}, {1, 0}, {3, C / 2}}}) {
        SCOPED_TRACE(fmt::format("select mode {} {} {}", mode, dtype_name(t), rg.str()));
        std::mt19937 rng(9);
        std::vector<double> mask(64);
        for (auto& x : mask) x = rng() % 256;
        Device dev;
        Tensor d = full(dev, {R, C}, t, 7), mk = from_vector(dev, {64}, DType::UInt8, mask);
        Tensor a = input(dev, {R, C}, t, 51), b = input(dev, {R, C}, t, 52);
        run_one_op(
            dev, {{"d", {R, C}, t}, {"m", {64}, DType::UInt8}, {"a", {R, C}, t}, {"b", {R, C}, t}},
            {},
            [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
              T::tile::select(rg.of(ub[0]), ub[1], rg.of(ub[2]), rg.of(ub[3]), mode);
            },
            {d, mk, a, b});
        auto av = a.to_vector(), bv = b.to_vector();
        std::vector<double> want(R * C, 7.0);
        const int64_t per_repeat = 256 / dtype_bytes(t);
        auto fl = rg.flat();
        for (int64_t i = 0; i < static_cast<int64_t>(fl.size()); ++i) {
          int64_t bit = mode == 0 ? i % per_repeat : i;
          bool pick = (static_cast<int>(mask[bit / 8]) >> (bit % 8)) & 1;
          want[fl[i]] = pick ? av[fl[i]] : bv[fl[i]];
        }
        EXPECT_EQ(diff_exact(d.to_vector(), want), "");
      }
    }
}
// ---- bitwise ------------------------------------------------------------------------------

TEST(VectorOps, BitwiseAndShifts) {
  for (const char* op : {"and", "or", "xor", "not"})
    for (DType t : legal((std::string("tile.bitwise_") + op).c_str()))
      for (const Region& rg : tail_regions(dtype_bytes(t))) {
        // 8-bit and / or: every region here has an even byte count (the verifier's
        // byte-bitwise rule; odd counts in python/tests/test_tla_corp.py).
        SCOPED_TRACE(fmt::format("bitwise_{} {} {}", op, dtype_name(t), rg.str()));
        Device dev;
        Tensor d = full(dev, rg.shape, t, 7), a = input(dev, rg.shape, t, 111),
               b = input(dev, rg.shape, t, 112);
        run_one_op(dev, {{"d", rg.shape, t}, {"a", rg.shape, t}, {"b", rg.shape, t}}, {},
                   [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                     if (op[0] == 'a')
                       T::tile::bitwise_and(rg.of(ub[0]), rg.of(ub[1]), rg.of(ub[2]));
                     if (op[0] == 'o')
                       T::tile::bitwise_or(rg.of(ub[0]), rg.of(ub[1]), rg.of(ub[2]));
                     if (op[0] == 'x')
                       T::tile::bitwise_xor(rg.of(ub[0]), rg.of(ub[1]), rg.of(ub[2]));
                     if (op[0] == 'n') T::tile::bitwise_not(rg.of(ub[0]), rg.of(ub[1]));
                   },
                   {d, a, b});
        auto av = a.to_vector(), bv = b.to_vector();
        std::vector<double> want(av.size(), 7.0);
        for (int64_t f : rg.flat()) {
          int64_t x = static_cast<int64_t>(av[f]), y = static_cast<int64_t>(bv[f]);
          want[f] = wrap(t, op[0] == 'a'   ? (x & y)
                            : op[0] == 'o' ? (x | y)
                            : op[0] == 'x' ? (x ^ y)
                                           : ~x);
        }
        EXPECT_EQ(diff_exact(d.to_vector(), want), "");
      }
  for (bool left : {true, false})
    for (DType t : legal(left ? "tile.shift_left" : "tile.shift_right"))
      for (int bits : {0, 3, 7}) {
        SCOPED_TRACE(
            fmt::format("shift_{} {} by {}", left ? "left" : "right", dtype_name(t), bits));
        const int64_t n = 32 / dtype_bytes(t) * 3;
        std::vector<double> v(n);
        std::mt19937 rng(13);
        const double lo = is_unsigned_int(t) ? 0 : -std::ldexp(1, 8 * dtype_bytes(t) - 1);
        const double span = std::ldexp(1, 8 * dtype_bytes(t));
        for (auto& x : v) x = lo + std::floor(std::ldexp(static_cast<double>(rng()), -32) * span);
        Device dev;
        Tensor d = Tensor::empty(dev, {n}, t), s = from_vector(dev, {n}, t, v);
        run_one_op(dev, {{"d", {n}, t}, {"s", {n}, t}}, {},
                   [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                     if (left)
                       T::tile::shift_left(ub[0], ub[1], bits);
                     else
                       T::tile::shift_right(ub[0], ub[1], bits);
                   },
                   {d, s});
        std::vector<double> want(n);
        for (int64_t i = 0; i < n; ++i) {
          int64_t x = static_cast<int64_t>(v[i]);
          // Signed right shifts are arithmetic, unsigned ones logical (the values are in range).
          want[i] =
              wrap(t, left ? static_cast<int64_t>(static_cast<uint64_t>(x) << bits) : (x >> bits));
        }
        EXPECT_EQ(diff_exact(d.to_vector(), want), "");
      }
}

}  // namespace
}  // namespace tl
