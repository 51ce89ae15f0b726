// The virtual NPU's numerics against an independent reference: every fp16/bf16/fp8 code,
// every midpoint and neighbour between consecutive codes, every rounding mode, both overflow
// modes, plus random fp32. The reference decodes codes with ldexp and picks the rounded value
// from a sorted table of representable magnitudes with exact double comparisons; it shares
// no code with src/support/numerics.cpp. TL_TEST_LEVEL=2 runs 16x more random inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tl/npu/numerics.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace tl::npu {
namespace {

constexpr RoundMode kModes[] = {RoundMode::None, RoundMode::Rint,  RoundMode::Floor,
                                RoundMode::Ceil, RoundMode::Round, RoundMode::Trunc,
                                RoundMode::Odd};

int test_level() {
  const char* e = std::getenv("TL_TEST_LEVEL");
  return e ? std::atoi(e) : 1;
}

// ---- reference ------------------------------------------------------------------------

struct RefFmt {
  const char* name;
  int man, exp, bias;
  bool fn;  // e4m3fn: no inf, only S.1111.111 is NaN
  uint32_t sign() const { return 1u << (man + exp); }
  uint32_t max_code() const { return fn ? sign() - 2 : ((1u << exp) - 1) * (1u << man) - 1; }
  uint32_t inf_code() const { return ((1u << exp) - 1) << man; }
  bool is_nan(uint32_t c) const {
    c &= sign() - 1;
    return fn ? c == sign() - 1 : c > inf_code();
  }
};
const RefFmt kRF16{"f16", 10, 5, 15, false};
const RefFmt kRBF16{"bf16", 7, 8, 127, false};
const RefFmt kRE4M3{"e4m3", 3, 4, 7, true};
const RefFmt kRE5M2{"e5m2", 2, 5, 15, false};

double ref_decode(const RefFmt& f, uint32_t c) {
  double s = (c & f.sign()) ? -1.0 : 1.0;
  uint32_t e = (c >> f.man) & ((1u << f.exp) - 1), m = c & ((1u << f.man) - 1);
  if (f.is_nan(c)) return std::numeric_limits<double>::quiet_NaN();
  if (!f.fn && e == (1u << f.exp) - 1) return s * std::numeric_limits<double>::infinity();
  if (e == 0) return s * std::ldexp(double(m), 1 - f.bias - f.man);
  return s * std::ldexp(1.0 + std::ldexp(double(m), -f.man), int(e) - f.bias);
}

// Table of the non-negative finite magnitudes, ascending, indexed by code, plus one virtual
// entry past the max (the next binade's first value for IEEE formats, 480 for e4m3fn).
struct RefTable {
  const RefFmt* f;
  std::vector<double> v;
  explicit RefTable(const RefFmt& fmt) : f(&fmt) {
    for (uint32_t c = 0; c <= fmt.max_code(); ++c) v.push_back(ref_decode(fmt, c));
    double mx = v.back(), ulp = mx - v[v.size() - 2];
    v.push_back(mx + ulp);
  }
  // The code x rounds to (IEEE 754 rules, see numerics.h for the modelled hardware).
  uint32_t round(double x, RoundMode m, SatMode s) const {
    const uint32_t maxc = f->max_code(), virt = maxc + 1;
    bool neg = std::signbit(x);
    uint32_t sb = neg ? f->sign() : 0;
    auto overflow_code = [&](bool to_inf) -> uint32_t {
      if (s == SatMode::Saturate || !to_inf) return sb | maxc;
      return f->fn ? (sb | (f->sign() - 1)) : (sb | f->inf_code());
    };
    if (std::isnan(x)) return s == SatMode::Saturate ? 0 : (sb | (f->sign() - 1));  // any NaN
    double a = std::fabs(x);
    if (std::isinf(a)) return overflow_code(true);
    // lo: largest code with value <= a (capped at max), hi = lo + 1 (may be virtual).
    auto it = std::upper_bound(v.begin(), v.begin() + virt, a);
    uint32_t lo = uint32_t(it - v.begin()) - 1;
    if (v[lo] == a) return sb | lo;
    uint32_t hi = lo + 1;
    bool below_mid = 2 * a < v[lo] + v[hi], at_mid = 2 * a == v[lo] + v[hi];
    uint32_t pick = lo;
    bool to_inf = true;
    switch (m) {
      case RoundMode::None:
      case RoundMode::Rint:
        pick = below_mid ? lo : at_mid ? ((lo & 1) ? hi : lo) : hi;
        break;
      case RoundMode::Round:
        pick = below_mid ? lo : hi;
        break;
      case RoundMode::Trunc:
        pick = lo;
        to_inf = false;
        break;
      case RoundMode::Floor:
        pick = neg ? hi : lo;
        to_inf = neg;
        break;
      case RoundMode::Ceil:
        pick = neg ? lo : hi;
        to_inf = !neg;
        break;
      case RoundMode::Odd:
        pick = (lo & 1) ? lo : hi;
        to_inf = false;
        break;
    }
    if (pick >= virt || a > v[virt]) {
      if (a > v[virt] && (m == RoundMode::Trunc || m == RoundMode::Odd ||
                          (m == RoundMode::Floor && !neg) || (m == RoundMode::Ceil && neg)))
        return sb | maxc;
      return overflow_code(to_inf);
    }
    return sb | pick;
  }
};

const RefTable& table(const RefFmt& f) {
  static const RefTable f16(kRF16), bf16(kRBF16), e4m3(kRE4M3), e5m2(kRE5M2);
  if (&f == &kRF16) return f16;
  if (&f == &kRBF16) return bf16;
  if (&f == &kRE4M3) return e4m3;
  return e5m2;
}

uint32_t bits_of(float x) {
  return std::bit_cast<uint32_t>(x);
}

// Interesting inputs for format f: every finite value, its fp32 neighbours, every midpoint
// between consecutive magnitudes and its fp32 neighbours, both signs, plus specials.
std::vector<float> interesting_f32(const RefFmt& f) {
  const auto& t = table(f);
  std::vector<float> xs;
  const float inf = std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < t.v.size(); ++i) {
    float v = float(t.v[i]);
    xs.insert(xs.end(), {v, std::nextafter(v, inf), std::nextafter(v, 0.0f)});
    if (i + 1 < t.v.size()) {
      float mid = float((t.v[i] + t.v[i + 1]) / 2);
      EXPECT_EQ(double(mid), (t.v[i] + t.v[i + 1]) / 2) << "midpoint not exact in fp32";
      xs.insert(xs.end(), {mid, std::nextafter(mid, inf), std::nextafter(mid, 0.0f)});
    }
  }
  xs.insert(xs.end(),
            {inf, 1e30f, 3.0e38f, std::numeric_limits<float>::max(), 1e-30f,
             std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(), 0.0f});
  size_t n = xs.size();
  for (size_t i = 0; i < n; ++i) xs.push_back(-xs[i]);
  return xs;
}

std::string mode_str(RoundMode m, SatMode s) {
  return std::string(round_mode_name(m)) + (s == SatMode::Saturate ? "/sat" : "/infnan");
}

// ---- fp16 / bf16 widening -------------------------------------------------------------

TEST(Numerics, F16AllPatternsWidenExactlyAndRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = f16_to_f32(uint16_t(h));
    double ref = ref_decode(kRF16, h);
    if (kRF16.is_nan(h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      EXPECT_EQ(std::signbit(f), bool(h & 0x8000)) << std::hex << h;
      EXPECT_TRUE(bits_of(f) & 0x00400000u) << "quiet " << std::hex << h;
      uint16_t back = f32_to_f16(f);
      EXPECT_TRUE(kRF16.is_nan(back)) << std::hex << h;
      EXPECT_EQ(back & 0x8000, h & 0x8000);
      EXPECT_EQ(back & 0x3ff, (h & 0x3ff) | 0x200) << "payload kept, quieted " << std::hex << h;
      continue;
    }
    ASSERT_EQ(double(f), ref) << std::hex << h;
    ASSERT_EQ(std::signbit(f), bool(h & 0x8000)) << std::hex << h;
    for (RoundMode m : kModes)
      ASSERT_EQ(f32_to_f16(f, m), h) << std::hex << h << " " << round_mode_name(m);
  }
}

TEST(Numerics, Bf16AllPatternsWidenExactlyAndRoundTrip) {
  for (uint32_t b = 0; b < 65536; ++b) {
    float f = bf16_to_f32(uint16_t(b));
    if (kRBF16.is_nan(b)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << b;
      EXPECT_EQ(std::signbit(f), bool(b & 0x8000));
      uint16_t back = f32_to_bf16(f);
      EXPECT_EQ(back, b | 0x40) << std::hex << b;
      continue;
    }
    ASSERT_EQ(double(f), ref_decode(kRBF16, b)) << std::hex << b;
    ASSERT_EQ(bits_of(f), b << 16) << std::hex << b;
    for (RoundMode m : kModes)
      ASSERT_EQ(f32_to_bf16(f, m), b) << std::hex << b << " " << round_mode_name(m);
  }
}

// ---- fp32 -> fp16 / bf16, every mode --------------------------------------------------

template <class Conv>
void check_f32_inputs(const RefFmt& f, const std::vector<float>& xs, Conv conv) {
  const auto& t = table(f);
  int failures = 0;
  for (SatMode s : {SatMode::InfNan, SatMode::Saturate})
    for (RoundMode m : kModes)
      for (float x : xs) {
        uint32_t got = conv(x, m, s), want = t.round(x, m, s);
        bool ok = std::isnan(x) && s == SatMode::InfNan
                      ? f.is_nan(got) && (got & f.sign()) == (want & f.sign())
                      : got == want;
        if (!ok && ++failures <= 10)
          ADD_FAILURE() << f.name << " " << mode_str(m, s) << ": x=" << x << " (0x" << std::hex
                        << bits_of(x) << ") got 0x" << got << " want 0x" << want << std::dec;
      }
  EXPECT_EQ(failures, 0);
}

std::vector<float> random_f32(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> xs(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t u = rng();
    // Half the draws near the target's range (exponent 2^-30 .. 2^20), half anywhere.
    if (i & 1) u = (u & 0x807fffffu) | ((97u + (u >> 23) % 50u) << 23);
    xs[i] = std::bit_cast<float>(u);
  }
  return xs;
}

TEST(Numerics, F32ToF16EveryModeAtValuesMidpointsNeighbours) {
  check_f32_inputs(kRF16, interesting_f32(kRF16),
                   [](float x, RoundMode m, SatMode s) { return uint32_t(f32_to_f16(x, m, s)); });
}

TEST(Numerics, F32ToBf16EveryModeAtValuesMidpointsNeighbours) {
  check_f32_inputs(kRBF16, interesting_f32(kRBF16),
                   [](float x, RoundMode m, SatMode s) { return uint32_t(f32_to_bf16(x, m, s)); });
}

TEST(Numerics, F32ToF16AndBf16RandomInputs) {
  size_t n = test_level() >= 2 ? (size_t(1) << 22) : (size_t(1) << 18);
  auto xs = random_f32(n, 1234);
  check_f32_inputs(kRF16, xs,
                   [](float x, RoundMode m, SatMode s) { return uint32_t(f32_to_f16(x, m, s)); });
  for (float& x : xs) x = std::bit_cast<float>(bits_of(x) ^ 0x3c000000u);  // other exponents
  check_f32_inputs(kRBF16, xs,
                   [](float x, RoundMode m, SatMode s) { return uint32_t(f32_to_bf16(x, m, s)); });
  // The default (RINT) fast path over many more inputs.
  auto ys = random_f32(n * 2, 99);
  int fails = 0;
  for (float x : ys) {
    if (std::isnan(x)) continue;
    fails += f32_to_f16(x) != table(kRF16).round(x, RoundMode::Rint, SatMode::InfNan);
    fails += f32_to_bf16(x) != table(kRBF16).round(x, RoundMode::Rint, SatMode::InfNan);
  }
  EXPECT_EQ(fails, 0);
}

TEST(Numerics, OverflowPerMode) {
  // fp16 max 65504, RINT overflow threshold 65520 (ties to the even "next binade").
  EXPECT_EQ(f32_to_f16(65519.99f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(f32_to_f16(-65520.0f, RoundMode::Round), 0xfc00);
  EXPECT_EQ(f32_to_f16(1e6f, RoundMode::Trunc), 0x7bff);
  EXPECT_EQ(f32_to_f16(1e6f, RoundMode::Floor), 0x7bff);
  EXPECT_EQ(f32_to_f16(-1e6f, RoundMode::Floor), 0xfc00);
  EXPECT_EQ(f32_to_f16(1e6f, RoundMode::Ceil), 0x7c00);
  EXPECT_EQ(f32_to_f16(-1e6f, RoundMode::Ceil), 0xfbff);
  EXPECT_EQ(f32_to_f16(1e6f, RoundMode::Odd), 0x7bff);
  EXPECT_EQ(f32_to_f16(65504.5f, RoundMode::Ceil), 0x7c00);
  // Saturation mode: inf results -> max, NaN -> 0.
  EXPECT_EQ(f32_to_f16(1e6f, RoundMode::Rint, SatMode::Saturate), 0x7bff);
  EXPECT_EQ(f32_to_f16(-INFINITY, RoundMode::Rint, SatMode::Saturate), 0xfbff);
  EXPECT_EQ(f32_to_f16(NAN, RoundMode::Rint, SatMode::Saturate), 0);
  EXPECT_EQ(f32_to_bf16(3.4e38f), 0x7f80);  // > max bf16 (3.3895e38) + half ulp
  EXPECT_EQ(f32_to_bf16(3.4e38f, RoundMode::Trunc), 0x7f7f);
  EXPECT_EQ(f32_to_bf16(-INFINITY, RoundMode::Rint, SatMode::Saturate), 0xff7f);
  // Signed zero and underflow.
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(-1e-30f, RoundMode::Ceil), 0x8000);
  EXPECT_EQ(f32_to_f16(-1e-30f, RoundMode::Floor), 0x8001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);                    // tie -> even 0
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25), RoundMode::Round), 0x0001);  // tie -> away
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::denorm_min(), RoundMode::Ceil), 0x0001);
}

TEST(Numerics, AscendDocExamples) {
  // precision_conversion.md: float -> half of 0.5 + 2^-12 and float -> bfloat16 of
  // 0.5 + 2^-9 + 2^-11, per mode.
  float x = 0.5f + std::ldexp(1.0f, -12);
  EXPECT_EQ(f16_to_f32(f32_to_f16(x, RoundMode::Rint)), 0.5f);
  EXPECT_EQ(f16_to_f32(f32_to_f16(x, RoundMode::Ceil)), 0.5f + std::ldexp(1.0f, -11));
  EXPECT_EQ(f16_to_f32(f32_to_f16(x, RoundMode::Odd)), 0.5f + std::ldexp(1.0f, -11));
  EXPECT_EQ(f16_to_f32(f32_to_f16(x, RoundMode::Trunc)), 0.5f);
  float y = 0.5f + std::ldexp(1.0f, -9) + std::ldexp(1.0f, -11);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(y, RoundMode::Rint)), 0.5f + std::ldexp(1.0f, -8));
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(y, RoundMode::Trunc)), 0.5f);
  // The same page says float -> fp8 of 2.5 under CAST_RINT gives 2 ("取整", copied from the
  // float -> int entries). 2.5 = 1.01b x 2^1 is exactly representable in both fp8 formats, so
  // we keep it: a conversion to a float format rounds to that format, not to an integer.
  EXPECT_EQ(e4m3_to_f32(f32_to_e4m3(2.5f)), 2.5f);
  EXPECT_EQ(e5m2_to_f32(f32_to_e5m2(2.5f)), 2.5f);
  EXPECT_EQ(e4m3_to_f32(f32_to_e4m3(2.625f)), 2.5f);  // 2.5 + half an ulp (0.25) ties to even
}

// ---- double -> narrow formats: one rounding ---------------------------------------------

TEST(Numerics, F64ConversionsRoundOnce) {
  const RefFmt* fmts[] = {&kRF16, &kRBF16, &kRE4M3, &kRE5M2};
  int via_float_differs = 0, failures = 0;
  for (const RefFmt* f : fmts) {
    const auto& t = table(*f);
    for (size_t i = 0; i + 1 < t.v.size(); ++i) {
      double mid = (t.v[i] + t.v[i + 1]) / 2;
      double eps = std::ldexp(mid, -40);
      for (double x : {mid + eps, mid - eps, mid, -(mid + eps), -(mid - eps)}) {
        for (SatMode s : {SatMode::InfNan, SatMode::Saturate})
          for (RoundMode m : kModes) {
            uint32_t got = f == &kRF16    ? f64_to_f16(x, m, s)
                           : f == &kRBF16 ? f64_to_bf16(x, m, s)
                           : f == &kRE4M3 ? f64_to_e4m3(x, m, s)
                                          : f64_to_e5m2(x, m, s);
            uint32_t want = t.round(x, m, s);
            if (got != want && ++failures <= 10)
              ADD_FAILURE() << f->name << " " << mode_str(m, s) << " x=" << x << std::hex
                            << " got 0x" << got << " want 0x" << want;
            if (f == &kRF16 && m == RoundMode::Rint && s == SatMode::InfNan)
              via_float_differs += f32_to_f16(float(x)) != want;
          }
      }
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_GT(via_float_differs, 0) << "the test inputs should expose double rounding";
  // double -> float, all modes, at a tie and near the fp32 range edges.
  double tie = 1.0 + std::ldexp(1.0, -24);
  EXPECT_EQ(f64_to_f32(tie), 1.0f);
  EXPECT_EQ(f64_to_f32(tie, RoundMode::Round), 1.0f + std::ldexp(1.0f, -23));
  EXPECT_EQ(f64_to_f32(-tie, RoundMode::Floor), -1.0f - std::ldexp(1.0f, -23));
  EXPECT_EQ(f64_to_f32(1e300), INFINITY);
  EXPECT_EQ(f64_to_f32(1e300, RoundMode::Trunc), std::numeric_limits<float>::max());
  EXPECT_EQ(f64_to_f32(1e-300, RoundMode::Ceil), std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(f64_to_f32(std::ldexp(1.0, -150)), 0.0f);
  EXPECT_EQ(f64_to_f32(std::ldexp(1.0, -150) * 1.0000001),
            std::numeric_limits<float>::denorm_min());
}

// ---- fp8 -------------------------------------------------------------------------------

TEST(Numerics, Fp8AllPatternsBothWays) {
  for (uint32_t b = 0; b < 256; ++b) {
    for (const RefFmt* f : {&kRE4M3, &kRE5M2}) {
      float v = f == &kRE4M3 ? e4m3_to_f32(uint8_t(b)) : e5m2_to_f32(uint8_t(b));
      double ref = ref_decode(*f, b);
      if (std::isnan(ref)) {
        EXPECT_TRUE(std::isnan(v)) << f->name << " " << b;
        continue;
      }
      EXPECT_EQ(double(v), ref) << f->name << " " << b;
      EXPECT_EQ(std::signbit(v), bool(b & 0x80)) << f->name << " " << b;
      for (RoundMode m : kModes)
        for (SatMode s : {SatMode::InfNan, SatMode::Saturate}) {
          if (s == SatMode::Saturate && std::isinf(v)) continue;
          uint32_t back = f == &kRE4M3 ? f32_to_e4m3(v, m, s) : f32_to_e5m2(v, m, s);
          EXPECT_EQ(back, b) << f->name << " " << mode_str(m, s);
        }
    }
  }
  EXPECT_EQ(e4m3_to_f32(0x7e), 448.0f);
  EXPECT_TRUE(std::isnan(e4m3_to_f32(0x7f)) && std::isnan(e4m3_to_f32(0xff)));
  EXPECT_EQ(e4m3_to_f32(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(e5m2_to_f32(0x7b), 57344.0f);
  EXPECT_EQ(e5m2_to_f32(0x7c), INFINITY);
}

TEST(Numerics, Fp8EveryModeAtValuesMidpointsNeighbours) {
  check_f32_inputs(kRE4M3, interesting_f32(kRE4M3),
                   [](float x, RoundMode m, SatMode s) { return uint32_t(f32_to_e4m3(x, m, s)); });
  check_f32_inputs(kRE5M2, interesting_f32(kRE5M2),
                   [](float x, RoundMode m, SatMode s) { return uint32_t(f32_to_e5m2(x, m, s)); });
  auto xs = random_f32(size_t(1) << 16, 7);
  check_f32_inputs(kRE4M3, xs,
                   [](float x, RoundMode m, SatMode s) { return uint32_t(f32_to_e4m3(x, m, s)); });
  check_f32_inputs(kRE5M2, xs,
                   [](float x, RoundMode m, SatMode s) { return uint32_t(f32_to_e5m2(x, m, s)); });
}

TEST(Numerics, Fp8E4m3Overflow) {
  EXPECT_EQ(f32_to_e4m3(464.0f), 0x7e);  // tie between 448 and (NaN code) 480 -> even 448
  EXPECT_EQ(f32_to_e4m3(464.0f, RoundMode::Round), 0x7f);  // -> NaN (no inf in e4m3fn)
  EXPECT_EQ(f32_to_e4m3(470.0f), 0x7f);
  EXPECT_EQ(f32_to_e4m3(-470.0f), 0xff);
  EXPECT_EQ(f32_to_e4m3(470.0f, RoundMode::Rint, SatMode::Saturate), 0x7e);
  EXPECT_EQ(f32_to_e4m3(-1e9f, RoundMode::Rint, SatMode::Saturate), 0xfe);
  EXPECT_EQ(f32_to_e4m3(1e9f, RoundMode::Trunc), 0x7e);
  EXPECT_EQ(f32_to_e4m3(INFINITY), 0x7f);
  EXPECT_EQ(f32_to_e4m3(INFINITY, RoundMode::Rint, SatMode::Saturate), 0x7e);
  EXPECT_EQ(f32_to_e4m3(NAN, RoundMode::Rint, SatMode::Saturate), 0x00);
  EXPECT_EQ(f32_to_e5m2(61440.0f), 0x7c);  // 57344 + half ulp ties to the even next binade: inf
  EXPECT_EQ(f32_to_e5m2(61439.0f), 0x7b);
  EXPECT_EQ(f32_to_e5m2(1e9f, RoundMode::Rint, SatMode::Saturate), 0x7b);
  EXPECT_EQ(f32_to_e5m2(-NAN) & 0x80, 0x80);
}

// ---- integers --------------------------------------------------------------------------

int64_t to_int(DType t, double x, RoundMode m) {
  alignas(8) unsigned char buf[8] = {};
  from_double(t, x, buf, m);
  return int64_t(to_double(t, buf));
}

TEST(Numerics, FloatToIntTiesAndModes) {
  struct Case {
    double x;
    int64_t rint, round, floor, ceil, trunc, odd;
  };
  const Case cases[] = {
      {0.5, 0, 1, 0, 1, 0, 1},
      {1.5, 2, 2, 1, 2, 1, 1},
      {2.5, 2, 3, 2, 3, 2, 3},
      {-0.5, 0, -1, -1, 0, 0, -1},
      {-1.5, -2, -2, -2, -1, -1, -1},
      {-2.5, -2, -3, -3, -2, -2, -3},
      {2.4, 2, 2, 2, 3, 2, 3},
      {2.6, 3, 3, 2, 3, 2, 3},
      {-2.6, -3, -3, -3, -2, -2, -3},
      {7.0, 7, 7, 7, 7, 7, 7},
      {-0.0, 0, 0, 0, 0, 0, 0},
      {4194304.5, 4194304, 4194305, 4194304, 4194305, 4194304, 4194305},
  };
  for (const Case& c : cases) {
    const int64_t want[] = {c.rint, c.rint, c.floor, c.ceil, c.round, c.trunc, c.odd};
    for (int i = 0; i < 7; ++i) {
      for (DType t : {DType::Int8, DType::Int16, DType::Int32, DType::Int64}) {
        const int64_t hi = dtype_bits(t) == 64 ? std::numeric_limits<int64_t>::max()
                                               : (int64_t(1) << (dtype_bits(t) - 1)) - 1;
        EXPECT_EQ(to_int(t, c.x, kModes[i]), std::clamp(want[i], -hi - 1, hi))
            << c.x << " " << round_mode_name(kModes[i]) << " " << dtype_name(t);
      }
      EXPECT_EQ(f64_to_i64(c.x, kModes[i]), want[i]);
      EXPECT_EQ(round_integral(c.x, kModes[i]), double(want[i]));
    }
  }
}

// A zero result of rounding to an integral value keeps the operand's sign (IEEE 754
// roundToIntegral, std::nearbyint): Cast float -> float of -0.3 (RINT) is -0.0, as
// T.tile.round of -0.3; floor(x) + 1 alone gave +0.0.
TEST(Numerics, RoundIntegralKeepsTheSignOfAZero) {
  for (RoundMode m : {RoundMode::Rint, RoundMode::Ceil, RoundMode::Round, RoundMode::Trunc}) {
    for (double x : {-0.3, -0.49, -0.0}) {
      const double r = round_integral(x, m);
      EXPECT_EQ(r, 0.0) << x << " " << round_mode_name(m);
      EXPECT_TRUE(std::signbit(r)) << x << " " << round_mode_name(m);
    }
    EXPECT_FALSE(std::signbit(round_integral(0.3, m))) << round_mode_name(m);
  }
  EXPECT_TRUE(std::signbit(round_integral(-0.3, RoundMode::Rint)) ==
              std::signbit(std::nearbyint(-0.3)));
}

TEST(Numerics, FloatToIntSaturatesAndNanIsZero) {
  EXPECT_EQ(to_int(DType::Int8, 200.7, RoundMode::Rint), 127);
  EXPECT_EQ(to_int(DType::Int8, -200.7, RoundMode::Rint), -128);
  EXPECT_EQ(to_int(DType::Int8, 127.4, RoundMode::Rint), 127);
  EXPECT_EQ(to_int(DType::Int8, 127.5, RoundMode::Rint), 127);  // 128 saturates
  EXPECT_EQ(to_int(DType::Int8, -128.5, RoundMode::Trunc), -128);
  EXPECT_EQ(to_int(DType::UInt8, -3.0, RoundMode::Rint), 0);
  EXPECT_EQ(to_int(DType::UInt8, 255.4, RoundMode::Rint), 255);
  EXPECT_EQ(to_int(DType::UInt8, 300.0, RoundMode::Rint), 255);
  EXPECT_EQ(to_int(DType::Int16, double(1 << 22) + 0.5, RoundMode::Rint), 32767);  // doc example
  EXPECT_EQ(to_int(DType::Int32, 1e10, RoundMode::Rint), 2147483647);
  EXPECT_EQ(to_int(DType::Int32, -1e10, RoundMode::Rint), -2147483648LL);
  EXPECT_EQ(to_int(DType::Int32, INFINITY, RoundMode::Floor), 2147483647);
  EXPECT_EQ(to_int(DType::Int32, -INFINITY, RoundMode::Floor), -2147483648LL);
  EXPECT_EQ(f64_to_i64(1e30), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(f64_to_i64(-1e30), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f64_to_i64(9223372036854775808.0), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(f64_to_i64(-9223372036854775808.0), std::numeric_limits<int64_t>::min());
  for (DType t : {DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::UInt8})
    for (RoundMode m : kModes) EXPECT_EQ(to_int(t, NAN, m), 0) << dtype_name(t);
  uint64_t u = 1;
  from_double(DType::UInt64, 1e30, &u);
  EXPECT_EQ(u, ~uint64_t(0));
  // fp16 storage through the generic path: half -> int8 at ties.
  EXPECT_EQ(to_int(DType::Int8, f16_to_f32(f32_to_f16(-2.5f)), RoundMode::Round), -3);
}

TEST(Numerics, IntToFloatRoundsOnceFromTheInteger) {
  EXPECT_EQ(i64_to_f32(16777217), 16777216.0f);
  EXPECT_EQ(i64_to_f32(16777217, RoundMode::Ceil), 16777218.0f);
  EXPECT_EQ(i64_to_f32(16777217, RoundMode::Round), 16777218.0f);
  EXPECT_EQ(i64_to_f32(16777219), 16777220.0f);  // tie -> even
  EXPECT_EQ(i64_to_f32(-16777217, RoundMode::Floor), -16777218.0f);
  EXPECT_EQ(i64_to_f32(-16777217, RoundMode::Odd), -16777218.0f);  // ...217 -> odd mantissa ...218
  // 2^60 + 2^36 + 1: through double it would tie and round to even 2^60.
  int64_t big = (int64_t(1) << 60) + (int64_t(1) << 36) + 1;
  EXPECT_EQ(double(i64_to_f32(big)), std::ldexp(1.0, 60) + std::ldexp(1.0, 37));
  EXPECT_EQ(double(i64_to_f32(big, RoundMode::Trunc)), std::ldexp(1.0, 60));
  EXPECT_EQ(double(i64_to_f32(std::numeric_limits<int64_t>::min())), -std::ldexp(1.0, 63));
  // int -> fp16, every int16, every mode, against the reference.
  for (int v = -32768; v <= 32767; ++v)
    for (RoundMode m : kModes) {
      uint16_t h;
      from_int64(DType::Float16, v, &h, m);
      ASSERT_EQ(h, table(kRF16).round(double(v), m, SatMode::InfNan))
          << v << " " << round_mode_name(m);
    }
  // 65520 and above overflow fp16 under RINT.
  uint16_t h;
  from_int64(DType::Float16, 70000, &h);
  EXPECT_EQ(h, 0x7c00);
  from_int64(DType::Float16, 70000, &h, RoundMode::Rint, SatMode::Saturate);
  EXPECT_EQ(h, 0x7bff);
  // Integer -> integer saturates.
  int16_t s16;
  from_int64(DType::Int16, 1 << 20, &s16);
  EXPECT_EQ(s16, 32767);
  uint8_t u8;
  from_int64(DType::UInt8, -5, &u8);
  EXPECT_EQ(u8, 0);
}

// ---- generic API and bulk conversion ---------------------------------------------------

TEST(Numerics, GenericRoundToAndConvert) {
  EXPECT_EQ(round_to(DType::Float16, 0.1f), f16_to_f32(f32_to_f16(0.1f)));
  EXPECT_EQ(round_to(DType::BFloat16, 0.1f, RoundMode::Trunc),
            bf16_to_f32(f32_to_bf16(0.1f, RoundMode::Trunc)));
  EXPECT_EQ(round_to(DType::Float8E4M3, 1000.0f, RoundMode::Rint, SatMode::Saturate), 448.0f);
  EXPECT_EQ(round_to(DType::Int8, 3.5f), 4.0f);
  EXPECT_EQ(round_to(DType::Float32, 1.0f), 1.0f);
  EXPECT_EQ(round_to(DType::Float32, INFINITY, RoundMode::Rint, SatMode::Saturate),
            std::numeric_limits<float>::max());
  for (DType t : {DType::Float16, DType::BFloat16, DType::Float8E4M3, DType::Float8E5M2,
                  DType::Float32, DType::Float64, DType::Int8, DType::Int16, DType::Int32,
                  DType::Int64, DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64}) {
    alignas(8) unsigned char buf[8] = {};
    from_double(t, -3.0, buf);
    EXPECT_EQ(to_double(t, buf), is_unsigned_int(t) ? 0.0 : -3.0) << dtype_name(t);
  }
}

TEST(Numerics, BulkConvertMatchesScalar) {
  SCOPED_TRACE(host_has_f16c() ? "F16C bulk path" : "scalar bulk path");
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = uint16_t(i);
  std::vector<float> f(65536);
  convert(DType::Float16, all.data(), DType::Float32, f.data(), 65536);
  for (uint32_t i = 0; i < 65536; ++i)
    ASSERT_EQ(bits_of(f[i]), bits_of(f16_to_f32(uint16_t(i)))) << std::hex << i;
  convert(DType::BFloat16, all.data(), DType::Float32, f.data(), 65536);
  for (uint32_t i = 0; i < 65536; ++i)
    ASSERT_EQ(bits_of(f[i]), bits_of(bf16_to_f32(uint16_t(i)))) << std::hex << i;
  // The fp32 -> bf16 RINT path is vectorised (AVX2) on hosts that have it: bf16's own
  // midpoints and neighbours, infinities, the largest finite values and NaNs must agree too.
  auto xs = interesting_f32(kRF16);
  auto xs_bf16 = interesting_f32(kRBF16);
  auto rnd = random_f32(size_t(1) << 18, 5);
  xs.insert(xs.end(), xs_bf16.begin(), xs_bf16.end());
  xs.insert(xs.end(), rnd.begin(), rnd.end());
  for (uint32_t special :
       {0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7fbfffffu, 0xff812345u, 0x7f800000u, 0xff800000u,
        0x7f7fffffu, 0xff7fffffu, 0x7f7f8000u, 0xff7f8000u, 0x00008000u, 0x80018000u})
    xs.push_back(std::bit_cast<float>(special));
  std::vector<uint16_t> h(xs.size());
  for (RoundMode m : {RoundMode::Rint, RoundMode::Floor, RoundMode::Odd}) {
    convert(DType::Float32, xs.data(), DType::Float16, h.data(), int64_t(xs.size()), m);
    for (size_t i = 0; i < xs.size(); ++i)
      ASSERT_EQ(h[i], f32_to_f16(xs[i], m)) << xs[i] << " " << round_mode_name(m);
    convert(DType::Float32, xs.data(), DType::BFloat16, h.data(), int64_t(xs.size()), m);
    for (size_t i = 0; i < xs.size(); ++i) ASSERT_EQ(h[i], f32_to_bf16(xs[i], m)) << xs[i];
  }
  // A few generic pairs.
  const int32_t ints[] = {0, 1, -1, 300, -300, 16777217, 2147483647};
  uint16_t hh[7];
  convert(DType::Int32, ints, DType::Float16, hh, 7);
  EXPECT_EQ(f16_to_f32(hh[3]), 300.0f);
  EXPECT_EQ(hh[6], 0x7c00);
  int8_t i8[7];
  convert(DType::Int32, ints, DType::Int8, i8, 7);
  EXPECT_EQ(i8[3], 127);
  EXPECT_EQ(i8[4], -128);
  uint16_t nan16 = 0xfe01;
  float nf;
  convert(DType::Float16, &nan16, DType::Float32, &nf, 1);
  uint8_t e8;
  convert(DType::Float16, &nan16, DType::Float8E5M2, &e8, 1);
  EXPECT_TRUE(std::isnan(nf) && std::signbit(nf));
  EXPECT_EQ(e8, 0xfe);
  uint16_t bf;
  convert(DType::Float16, &nan16, DType::BFloat16, &bf, 1);
  EXPECT_EQ(bf & 0xffc0, 0xffc0);
}

// convert()'s fp32 -> bf16 RINT path (VCVTNEPS2BF16 with its subnormal fix-up where the host has
// AVX512-BF16, src/support/bf16_narrow.cpp; else AVX-512F / AVX2) against the scalar f32_to_bf16:
// every pattern with exponent 0 or 255 (zeros, subnormals, infinities, NaNs), a stride over the
// rest (every pattern at TL_TEST_LEVEL=2), subnormals mixed into groups of normal lanes, tails.
TEST(Numerics, Bf16NarrowingMatchesScalar) {
  const size_t block = size_t{1} << 20;
  std::vector<float> in(block);
  std::vector<uint16_t> out(block);
  auto check = [&](size_t n) {
    convert(DType::Float32, in.data(), DType::BFloat16, out.data(), int64_t(n));
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], f32_to_bf16(in[i])) << std::hex << std::bit_cast<uint32_t>(in[i]);
  };
  for (uint32_t top : {0x000u, 0x0ffu, 0x100u, 0x1ffu})  // sign and exponent 0 / 255
    for (uint32_t m0 = 0; m0 < (1u << 23); m0 += uint32_t(block)) {
      for (size_t i = 0; i < block; ++i)
        in[i] = std::bit_cast<float>((top << 23) | (m0 + uint32_t(i)));
      check(block);
      if (HasFatalFailure()) return;
    }
  const uint64_t stride = test_level() >= 2 ? 1 : 97;
  size_t k = 0;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += stride) {
    in[k++] = std::bit_cast<float>(uint32_t(b));
    if (k == block) {
      check(block);
      if (HasFatalFailure()) return;
      k = 0;
    }
  }
  check(k);
  std::mt19937 rng(7);
  for (size_t i = 0; i < block; ++i)
    in[i] = std::bit_cast<float>(i % 3 == 0 ? uint32_t(rng()) & 0x807fffffu : uint32_t(rng()));
  for (size_t n : {size_t{1}, size_t{7}, size_t{33}, size_t{1000}, size_t{4097}, block}) check(n);
}

#if defined(__x86_64__)
TEST(Numerics, ConversionsIgnoreHostFlushToZero) {
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040u);  // FTZ | DAZ
  const float tiny = std::numeric_limits<float>::denorm_min();
  const uint16_t f16_sub[] = {0x0001, 0x83ff, 0x0200};
  float out[3];
  convert(DType::Float16, f16_sub, DType::Float32, out, 3);
  const uint16_t ceil_tiny = f32_to_f16(tiny, RoundMode::Ceil);
  const uint16_t bf_tiny = f32_to_bf16(std::bit_cast<float>(0x00012345u), RoundMode::Trunc);
  const double tiny_d = to_double(DType::Float32, &tiny);
  const float h0 = f16_to_f32(0x0001);
  _mm_setcsr(saved);
  EXPECT_EQ(out[0], std::ldexp(1.0f, -24));
  EXPECT_EQ(out[1], -1023 * std::ldexp(1.0f, -24));
  EXPECT_EQ(out[2], std::ldexp(1.0f, -15));
  EXPECT_EQ(h0, std::ldexp(1.0f, -24));
  EXPECT_EQ(ceil_tiny, 0x0001);
  EXPECT_EQ(bf_tiny, 0x0001);
  EXPECT_EQ(tiny_d, std::ldexp(1.0, -149));
}
#endif

// ---- vector-unit arithmetic -------------------------------------------------------------

TEST(Numerics, F16AndBf16ArithmeticIsCorrectlyRounded) {
  std::mt19937 rng(42);
  const size_t n = test_level() >= 2 ? 4000000 : 300000;
  int failures = 0;
  for (const RefFmt* f : {&kRF16, &kRBF16}) {
    const auto& t = table(*f);
    for (size_t i = 0; i < n; ++i) {
      uint16_t a = uint16_t(rng()), b = uint16_t(rng());
      if (i % 4 == 0) b = uint16_t((a & 0xfc00) ^ (rng() & 0x83ff));  // similar magnitudes
      double x = ref_decode(*f, a), y = ref_decode(*f, b);
      if (std::isnan(x) || std::isnan(y) || std::isinf(x) || std::isinf(y)) continue;
      const BinOp ops[] = {BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div};
      const double exact[] = {x + y, x - y, x * y, x / y};  // + - * exact in double; / rounded once
      for (int k = 0; k < 4; ++k) {
        if (std::isnan(exact[k])) continue;
        uint16_t got = f == &kRF16 ? f16_binop(ops[k], a, b) : bf16_binop(ops[k], a, b);
        uint32_t want = t.round(exact[k], RoundMode::Rint, SatMode::InfNan);
        if (got != want && ++failures <= 10)
          ADD_FAILURE() << f->name << " op " << k << std::hex << " a=0x" << a << " b=0x" << b
                        << " got 0x" << got << " want 0x" << want;
      }
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(f16_binop(BinOp::Add, 0x7bff, 0x7bff), 0x7c00);
  EXPECT_EQ(f16_binop(BinOp::Add, 0x7bff, 0x7bff, SatMode::Saturate), 0x7bff);
  EXPECT_EQ(f16_binop(BinOp::Sub, 0x7c00, 0x7c00, SatMode::Saturate), 0);
  EXPECT_TRUE(kRF16.is_nan(f16_binop(BinOp::Sub, 0x7c00, 0x7c00)));
  EXPECT_EQ(f16_binop(BinOp::Max, 0x8000, 0x0000), 0x0000);
  EXPECT_EQ(f16_binop(BinOp::Min, 0x8000, 0x0000), 0x8000);
  EXPECT_TRUE(kRF16.is_nan(f16_binop(BinOp::Max, 0x7e00, 0x3c00)));
}

}  // namespace
}  // namespace tl::npu
