// exp_f32: the vector unit's fp32 exp (the model defines it as the host's std::exp(float), glibc's
// expf; include/tl/vector_ops.def) evaluated several lanes at a time, bit for bit equal to
// std::exp(float) on every input (issue 31: the exp was 58-65 % of softmax's and GELU's host
// time, one libm call per element).
//
// How it stays bit-identical without reproducing glibc's algorithm: each lane computes exp(x) in
// double precision, far more accurately than a float rounding needs (relative error below 2^-46,
// the bound below), and rounds that to float. glibc's expf is within 0.502 ULP of the exact
// value (the bound stated in glibc's e_expf.c, https://sourceware.org/git/?p=glibc.git;a=blob;
// f=sysdeps/ieee754/flt-32/e_expf.c: its double result before the final rounding is within
// 1.69 * 2^-34 relative, 0.0017 float ULP), so it returns the correctly rounded float whenever
// exp(x) lies more than 0.002 ULP away from a midpoint between two floats. Our double result y
// then rounds to the same float whenever y lies more than 0.002 ULP plus our own error away
// from a midpoint; the lanes where it does not (y within kBand = 2^-8 ULP of a midpoint: about
// 0.8 % of random inputs), and every input outside [-87, 88] (overflow, underflow to subnormals
// or zero, inf, NaN) take std::exp itself. Measured on glibc 2.36: a band of 2^-10 ULP lets
// through inputs whose result differs, 2^-9 none in a sample of 70 M; 2^-8 keeps a factor 2.
// tests/npu/exp_f32_test.cpp checks the whole claim over all 2^32 inputs (TL_TEST_LEVEL=2; a
// sample otherwise), so a host whose libm differs fails there, not silently.
//
// The lanes: GCC/Clang vector extensions (their casts between vectors of one size reinterpret
// the bits), compiled for AVX2+FMA and picked at run time; other hosts call std::exp per
// element. Highway (not a dependency yet) would add a package for one function; the vector
// extensions give the same code here. Whether the double steps fuse into FMAs does not matter:
// either way the error stays far inside the band.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "tl/npu/numerics.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define TL_EXP_X86 1
#endif

namespace tl::npu {

#ifdef TL_EXP_X86
namespace {

typedef double V4d __attribute__((vector_size(32)));
typedef float V4f __attribute__((vector_size(16)));
typedef int64_t V4l __attribute__((vector_size(32)));

// Inputs whose exp is a normal float: exp(-87) = 1.6e-38 > 2^-126 and exp(88) = 1.7e38 < FLT_MAX.
constexpr double kLo = -87.0, kHi = 88.0;
// x = k ln2 + r, |r| <= ln2 / 2 (Cody and Waite's two-constant reduction): ln2_hi has 32
// significant bits, so k * ln2_hi is exact for |k| <= 128 and x - k * ln2_hi is exact (both are
// multiples of 2^-32 below 2^7 and the difference is below 1/2); the error of ln2_hi + ln2_lo
// (1.2e-26) times k and the rounding of k * ln2_lo leave r within 2^-53 of its exact value.
constexpr double kInvLn2 = 0x1.71547652b82fep+0;
constexpr double kLn2Hi = 0x1.62e42fee00000p-1;
constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
// t = x / ln2 + 1.5 * 2^52 holds round(x / ln2) in its low mantissa bits (the double's spacing
// there is 1), so t - 1.5 * 2^52 is k and bits(t) - bits(1.5 * 2^52) the integer k.
constexpr double kShift = 0x1.8p52;
constexpr int64_t kShiftBits = 0x4338000000000000;
// exp(r) by its Taylor polynomial of degree 11 on |r| <= 0.3466: the remainder is at most
// 0.3466^12 / 12! * e^(2 * 0.3466) = 1.3e-14 relative (2^-46, 2^-22 float ULP); Horner's rounding
// errors add a few 2^-53. The product with 2^k is exact (k in [-126, 127]).
constexpr double kC[12] = {1.0,         1.0,          1.0 / 2,       1.0 / 6,
                           1.0 / 24,    1.0 / 120,    1.0 / 720,     1.0 / 5040,
                           1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800};
// The band around a midpoint where a lane falls back, in units of 2^-29 float ULP (the double's
// 29 mantissa bits below the float's last): 2^21 = 2^-8 ULP, twice glibc's 0.002 ULP plus ours.
constexpr int64_t kLowMask = (int64_t{1} << 29) - 1, kMid = int64_t{1} << 28,
                  kBand = int64_t{1} << 21;

/// exp of four lanes rounded to float in `y`; returns the lanes (bit l for lane l) that must
/// take std::exp instead: outside [kLo, kHi] (or NaN), or within kBand of a float midpoint.
__attribute__((target("avx2,fma"), always_inline)) inline int exp4(V4f xf, V4f& y) {
  V4d x = __builtin_convertvector(xf, V4d);
  const V4l ok = (x >= kLo) & (x <= kHi);  // false for NaN
  x = ok ? x : V4d{};                      // the other lanes compute exp(0) and are replaced
  const V4d t = x * kInvLn2 + kShift;
  const V4d k = t - kShift;
  const V4d r = (x - k * kLn2Hi) - k * kLn2Lo;
  V4d p = V4d{} + kC[11];
#pragma GCC unroll 11
  for (int i = 10; i >= 0; --i) p = p * r + kC[i];
  const V4l scale = (((V4l)t - kShiftBits) + 1023) << 52;
  const V4d e = p * (V4d)scale;
  y = __builtin_convertvector(e, V4f);
  const V4l off = ((V4l)e & kLowMask) - (kMid - kBand);
  const V4l near = (off >= 0) & (off < 2 * kBand);
  const V4l bad = near | ~ok;
  return _mm256_movemask_pd((__m256d)bad);
}

__attribute__((target("avx2,fma"))) void exp_avx2(const float* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {  // two independent quadruples per step
    V4f x0, x1, y0, y1;
    std::memcpy(&x0, in + i, 16);
    std::memcpy(&x1, in + i + 4, 16);
    const int bad = exp4(x0, y0) | (exp4(x1, y1) << 4);
    std::memcpy(out + i, &y0, 16);
    std::memcpy(out + i + 4, &y1, 16);
    if (bad) [[unlikely]] {
      // The inputs are still in x0 / x1 when `out` is `in`.
      for (int l = 0; l < 8; ++l)
        if ((bad >> l) & 1) out[i + l] = std::exp(l < 4 ? x0[l] : x1[l - 4]);
    }
  }
  for (; i < n; ++i) out[i] = std::exp(in[i]);
}

bool host_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

}  // namespace
#endif

void exp_f32(const float* in, float* out, int64_t n) {
#ifdef TL_EXP_X86
  if (host_has_avx2_fma()) return exp_avx2(in, out, n);
#endif
  for (int64_t i = 0; i < n; ++i) out[i] = std::exp(in[i]);
}

}  // namespace tl::npu
