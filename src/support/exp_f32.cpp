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
// the bits), compiled for AVX2 + FMA, picked at run time; other hosts call std::exp per
// element. The lane code is written for any width, but GCC 12 lowers the 8-lane (AVX-512)
// comparisons to scalar ones, which made that variant 3x slower than AVX2. Highway (not a
// dependency yet) would add a package for one function; the vector extensions give the same code
// here. Whether the double steps fuse into FMAs does not matter: either way the error stays far
// inside the band.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tl/npu/numerics.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define TL_EXP_X86 1
#endif

namespace tl::npu {

#ifdef TL_EXP_X86
namespace {

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

/// Vectors of W lanes (GCC/Clang vector extensions).
template <int W>
struct Vec {
  typedef double D __attribute__((vector_size(8 * W)));
  typedef float F __attribute__((vector_size(4 * W)));
  typedef int64_t L __attribute__((vector_size(8 * W)));
};

/// exp of the W floats at xs rounded to float into ys; bad[l] != 0 for the lanes that must take
/// std::exp instead: outside [kLo, kHi] (or NaN), or within kBand of a float midpoint. Inlined
/// into the target-specific loop, whose target it is then compiled for (vectors cross no call,
/// so no ABI depends on the target).
template <int W>
__attribute__((always_inline)) inline void exp_lanes(const float* xs, float* ys, int64_t* bad) {
  using D = typename Vec<W>::D;
  using F = typename Vec<W>::F;
  using L = typename Vec<W>::L;
  F xf;
  std::memcpy(&xf, xs, sizeof xf);
  D x = __builtin_convertvector(xf, D);
  const L ok = (x >= kLo) & (x <= kHi);  // false for NaN
  x = ok ? x : D{};                      // the other lanes compute exp(0) and are replaced
  const D t = x * kInvLn2 + kShift;
  const D k = t - kShift;
  const D r = (x - k * kLn2Hi) - k * kLn2Lo;
  D p = D{} + kC[11];
#pragma GCC unroll 11
  for (int i = 10; i >= 0; --i) p = p * r + kC[i];
  const L scale = (((L)t - kShiftBits) + 1023) << 52;
  const D e = p * (D)scale;
  const F y = __builtin_convertvector(e, F);
  std::memcpy(ys, &y, sizeof y);
  const L off = ((L)e & kLowMask) - (kMid - kBand);
  const L b = ((off >= 0) & (off < 2 * kBand)) | ~ok;
  std::memcpy(bad, &b, sizeof b);
}

/// out[i] = std::exp(in[i]), 2W lanes per step (two independent W-lane evaluations); `Any`
/// tells from the 2W flags whether a lane falls back.
template <int W, typename Any>
__attribute__((always_inline)) inline void exp_loop(const float* in, float* out, int64_t n,
                                                    Any any) {
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    float x[2 * W];  // the inputs, kept for the fallback when `out` is `in`
    int64_t bad[2 * W];
    std::memcpy(x, in + i, sizeof x);
    exp_lanes<W>(x, out + i, bad);
    exp_lanes<W>(x + W, out + i + W, bad + W);
    if (any(bad)) [[unlikely]] {
      for (int l = 0; l < 2 * W; ++l)
        if (bad[l]) out[i + l] = std::exp(x[l]);
    }
  }
  for (; i < n; ++i) out[i] = std::exp(in[i]);
}

__attribute__((target("avx2,fma"))) void exp_avx2(const float* in, float* out, int64_t n) {
  exp_loop<4>(
      in, out, n, [](const int64_t* bad) __attribute__((target("avx2,fma"))) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bad));
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bad + 4));
        return !_mm256_testz_si256(_mm256_or_si256(a, b), _mm256_or_si256(a, b));
      });
}

void exp_scalar(const float* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = std::exp(in[i]);
}

bool host_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

}  // namespace
#endif

std::vector<ExpF32Impl> exp_f32_impls() {
  std::vector<ExpF32Impl> v;
#ifdef TL_EXP_X86
  if (host_has_avx2_fma()) v.push_back({"avx2", exp_avx2});
  v.push_back({"scalar", exp_scalar});
#else
  v.push_back({"scalar", [](const float* in, float* out, int64_t n) {
                 for (int64_t i = 0; i < n; ++i) out[i] = std::exp(in[i]);
               }});
#endif
  return v;
}

void exp_f32(const float* in, float* out, int64_t n) {
  static const auto best = exp_f32_impls().front().fn;  // the widest the host runs
  best(in, out, n);
}

}  // namespace tl::npu
