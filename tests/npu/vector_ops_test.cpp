// Per-primitive tests of the virtual NPU's vector tile ops and reductions: each op runs alone
// on one AIV over every dtype A2 allows for it (OpDef::dtypes), on regions with tails
// (element counts that are not a multiple of a 256-byte repeat, strided sub-regions), and is
// compared bit-exactly against a plain C++ reference of the rounding model (compute in fp32,
// round to the destination dtype with RINT; integers wrap). Elements outside the region must
// keep their sentinel values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "npu/op_harness.h"
#include "tl/op.h"

namespace tl {
namespace {

using namespace optest;
using npu::RoundMode;

/// The dtypes A2 allows for `op` (its definition's list).
const std::vector<DType>& legal(const char* op) {
  return *find_op(op)->dtypes.on(default_target());
}

Tensor input(Device& dev, const std::vector<int64_t>& shape, DType t, uint64_t seed, double lo = -4,
             double hi = 4) {
  if (!is_float(t)) {
    if (is_unsigned_int(t))
      return uniform(dev, shape, t, seed, 0, dtype_bytes(t) == 1 ? 250 : 60000);
    return uniform(dev, shape, t, seed, dtype_bytes(t) == 1 ? -120 : -300,
                   dtype_bytes(t) == 1 ? 120 : 300);
  }
  return uniform(dev, shape, t, seed, lo, hi);
}

// ---- binary ops --------------------------------------------------------------------------

using BinFn = std::function<void(TileArg, TileArg, TileArg)>;
struct BinCase {
  const char* name;
  BinFn op;
  std::function<float(float, float)> f;
  std::function<int64_t(int64_t, int64_t)> i;
};

float fmax_nan(float a, float b) {
  return (a != a || b != b) ? NAN : std::max(a, b);
}
float fmin_nan(float a, float b) {
  return (a != a || b != b) ? NAN : std::min(a, b);
}

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

// ---- bitwise ------------------------------------------------------------------------------

TEST(VectorOps, BitwiseAndShifts) {
  for (const char* op : {"and", "or", "not"})
    for (DType t : legal((std::string("tile.bitwise_") + op).c_str()))
      for (const Region& rg : tail_regions(dtype_bytes(t))) {
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
                     if (op[0] == 'n') T::tile::bitwise_not(rg.of(ub[0]), rg.of(ub[1]));
                   },
                   {d, a, b});
        auto av = a.to_vector(), bv = b.to_vector();
        std::vector<double> want(av.size(), 7.0);
        for (int64_t f : rg.flat()) {
          int64_t x = static_cast<int64_t>(av[f]), y = static_cast<int64_t>(bv[f]);
          want[f] = wrap(t, op[0] == 'a' ? (x & y) : op[0] == 'o' ? (x | y) : ~x);
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
