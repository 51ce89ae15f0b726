// exp_f32: the vector unit's fp32 exp (the model defines it as the host's std::exp(float), glibc's
// expf; include/tl/vector_ops.def) evaluated several lanes at a time, bit for bit equal to
// std::exp(float) on every input (issue 31: the exp was 58-65 % of softmax's and GELU's host
// time, one libm call per element).
//
// How it stays bit-identical without reproducing glibc's algorithm: each lane computes exp(x) in
// double precision, far more accurately than a float rounding needs (relative error below
// 2^-38, 2^-14 float ULP: the bounds below), and rounds that to float. glibc's expf is within
// 0.502 ULP of the exact value (the bound stated in glibc's e_expf.c, https://sourceware.org/git/
// ?p=glibc.git;a=blob;f=sysdeps/ieee754/flt-32/e_expf.c: its double result before the final
// rounding is within 1.69 * 2^-34 relative, 0.0017 float ULP), so it returns the correctly
// rounded float whenever exp(x) lies more than 0.002 ULP away from a midpoint between two
// floats. Our double result y then rounds to the same float whenever y lies more than 0.002 ULP
// plus our own error away from a midpoint; the lanes where it does not (y within kBand = 2^-8
// ULP of a midpoint: about 0.8 % of random inputs), and every input outside [-87, 88]
// (overflow, underflow to subnormals or zero, inf, NaN) take std::exp itself. Measured on glibc
// 2.36: a band of 2^-10 ULP lets through inputs whose result differs, 2^-9 none in a sample of
// 70 M; 2^-8 keeps a factor 2. tests/npu/exp_f32_test.cpp checks the whole claim over all 2^32
// inputs (TL_TEST_LEVEL=2; a sample otherwise), so a host whose libm differs fails there, not
// silently.
//
// Blocks of lanes that all hold bfloat16 values (an fp32 whose low 16 bits are zero: bf16 data
// widened, as SwiGLU's and sigmoid's exp(-a) of bf16 inputs are) read std::exp's own results from
// a table of all 65536 (bf16_exp_table), equal by construction; other blocks evaluate.
//
// The lanes: a table-driven reduction (a table of 2^(i/N) and a short polynomial; before, a
// degree-11 polynomial on |r| <= ln2 / 2, three times slower), written with the intrinsics of
// each width, picked at run time: 8 doubles per AVX-512 vector (N = 16, read by a register
// permute), else 4 per AVX2 + FMA vector (N = 32, read by a gather); other hosts call std::exp
// per element. The intrinsics rather than GCC's vector extensions: GCC 12 lowers 8-lane vector
// comparisons of those to scalar ones. Whether a step fuses into an FMA or not does not matter:
// either way the error stays far inside the band.
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
// x = (k + r) ln2 / 32 with k = round(x * 32 / ln2) and |r| <= 1/2 (a table reduction, as in
// Tang's method: https://doi.org/10.1145/63522.214389): exp(x) = 2^(k >> 5) * 2^((k & 31) / 32)
// * exp(r ln2 / 32). z = x * 32 / ln2 rounds once (|z| < 2^12, so by at most 2^-41) and the
// constant's own rounding adds 2^-41 more; r = z - round(z) is exact; so r is within 2^-40 of
// its exact value, which moves the result by 2^-40 * ln2 / 32 = 2^-45.5 relative.
constexpr double kInvLn2N = 0x1.71547652b82fep+0 * 32;
// t = z + 1.5 * 2^52 holds round(z) in its low mantissa bits (the double's spacing there is 1):
// t - 1.5 * 2^52 is k, and k's low 5 bits are bits(t)'s (1.5 * 2^52 has none below bit 51).
constexpr double kShift = 0x1.8p52;
// exp(r ln2 / 32) by its Taylor polynomial of degree 4 in u = r ln2 / 32, |u| <= 0.01083: the
// remainder is at most 0.01083^5 / 5! * e^0.011 = 1.3e-12 relative (2^-39.5, 2^-15.5 float ULP);
// the coefficients carry the powers of ln2 / 32 (c_j = (ln2 / 32)^j / j!), each rounded to
// double (2^-53 relative), Horner's and the final products' roundings add a few 2^-53.
constexpr double kL = 0x1.62e42fefa39efp-1 / 32;  // ln2 / 32
constexpr double kC1 = kL, kC2 = kL * kL / 2, kC3 = kL * kL * kL / 6, kC4 = kL * kL * kL * kL / 24;
// The band around a midpoint where a lane falls back, in units of 2^-29 float ULP (the double's
// 29 mantissa bits below the float's last): 2^21 = 2^-8 ULP, more than glibc's 0.002 ULP plus
// ours (2^-14 ULP, the AVX-512 form; 2^-15 AVX2) on either side.
constexpr int64_t kLowMask = (int64_t{1} << 29) - 1, kMid = int64_t{1} << 28,
                  kBand = int64_t{1} << 21;

/// bits(2^(i / 32)) for i < 32, each the double nearest to it (exp2l's long double, then one
/// rounding; 2^-53 relative either way).
struct Exp2Table {
  alignas(64) int64_t bits[32];
  Exp2Table() {
    for (int i = 0; i < 32; ++i) {
      const double v = static_cast<double>(std::exp2l(static_cast<long double>(i) / 32));
      std::memcpy(&bits[i], &v, 8);
    }
  }
};
const Exp2Table& exp2_table() {
  static const Exp2Table t;
  return t;
}

// The steps of one evaluation, 4 lanes (AVX2 + FMA) or 8 (AVX-512), each written with the
// intrinsics of its width: exp of the floats at xs, rounded to float into ys; the return value
// has bit l set for the lanes that must take std::exp instead: outside [kLo, kHi] (or NaN), or
// within kBand of a float midpoint.
__attribute__((target("avx2,fma"), always_inline)) inline unsigned exp4(const float* xs, float* ys,
                                                                        const int64_t* tab) {
  __m256d x = _mm256_cvtps_pd(_mm_loadu_ps(xs));
  const __m256d ok = _mm256_and_pd(_mm256_cmp_pd(x, _mm256_set1_pd(kLo), _CMP_GE_OQ),
                                   _mm256_cmp_pd(x, _mm256_set1_pd(kHi), _CMP_LE_OQ));
  x = _mm256_and_pd(x, ok);  // the other lanes compute exp(0) and are replaced
  const __m256d z = _mm256_mul_pd(x, _mm256_set1_pd(kInvLn2N));
  const __m256d t = _mm256_add_pd(z, _mm256_set1_pd(kShift));
  const __m256i ki = _mm256_castpd_si256(t);
  const __m256d u = _mm256_sub_pd(z, _mm256_sub_pd(t, _mm256_set1_pd(kShift)));  // r
  __m256d p = _mm256_fmadd_pd(_mm256_set1_pd(kC4), u, _mm256_set1_pd(kC3));
  p = _mm256_fmadd_pd(p, u, _mm256_set1_pd(kC2));
  p = _mm256_fmadd_pd(p, u, _mm256_set1_pd(kC1));
  p = _mm256_fmadd_pd(p, u, _mm256_set1_pd(1.0));
  const __m256i idx = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
  // 2^(k >> 5) added to the exponent field: (k >> 5) << 52 keeps bits 5..16 of k, which a
  // logical shift of bits(t) brings there as well (bits(t) - k = bits(1.5 * 2^52) ends in 51
  // zeros, and its bits 51 and up shift out).
  const __m256i s =
      _mm256_add_epi64(_mm256_i64gather_epi64(reinterpret_cast<const long long*>(tab), idx, 8),
                       _mm256_slli_epi64(_mm256_srli_epi64(ki, 5), 52));
  const __m256d e = _mm256_mul_pd(p, _mm256_castsi256_pd(s));
  _mm_storeu_ps(ys, _mm256_cvtpd_ps(e));
  const __m256i off =
      _mm256_sub_epi64(_mm256_and_si256(_mm256_castpd_si256(e), _mm256_set1_epi64x(kLowMask)),
                       _mm256_set1_epi64x(kMid - kBand));
  const __m256i near = _mm256_and_si256(_mm256_cmpgt_epi64(_mm256_set1_epi64x(2 * kBand), off),
                                        _mm256_cmpgt_epi64(off, _mm256_set1_epi64x(-1)));
  const __m256d bad = _mm256_or_pd(_mm256_castsi256_pd(near),
                                   _mm256_xor_pd(ok, _mm256_castsi256_pd(_mm256_set1_epi64x(-1))));
  return static_cast<unsigned>(_mm256_movemask_pd(bad));
}

// The 8-lane form (AVX-512) reduces by a table of 16, which one two-source permute reads from
// two registers: x = (k + r) ln2 / 16, exp(x) = 2^(k >> 4) * 2^((k & 15) / 16) * exp(r ln2 / 16),
// exp(r ln2 / 16) by a polynomial of degree 4 in r (|r ln2 / 16| <= 0.02166; its error below). k =
// round(x * 16 / ln2) by one FMA with the shift constant (the exact product, rounded once to an
// integer), r = x * 16 / ln2 - k by another (the exact product minus k, rounded once: |r| <= 1/2
// and within 2^-42 of the exact value, counting the constant's rounding). The power 2^(k >> 4)
// comes from vscalefpd with k / 16 (it multiplies by 2^floor of its second operand, exactly here:
// the results are normal doubles).
constexpr double kInvLn2N16 = 0x1.71547652b82fep+0 * 16;
constexpr double kL16 = 0x1.62e42fefa39efp-1 / 16;  // ln2 / 16
constexpr double kD1 = kL16, kD2 = kD1 * kL16 / 2, kD3 = kD2 * kL16 / 3, kD4 = kD3 * kL16 / 4,
                 kD5 = kD4 * kL16 / 5;
// Degree 4, not 5: the r^5 term economised into r^3 and r (Chebyshev economisation, as in
// https://en.wikipedia.org/wiki/Chebyshev_polynomials: with t = 2r in [-1, 1], t^5 = (T5(t) +
// 5 T3(t) + 10 T1(t)) / 16, T5 dropped, so r^5 ~ (5/16) r^3 - (5/256) r within 2^-9). The error
// added is at most kD5 / 512 = 2.5e-12, the truncated r^6 term 1.4e-13; measured over 4 M points
// of [-1/2, 1/2] against expl, the polynomial as evaluated below (double FMAs) is within
// 2.57e-12 = 2^-38.5 relative, 2^-14.5 float ULP: the band's margin is unchanged in kind
// (glibc's 0.0017 ULP plus ours stays below 2^-8 ULP). One FMA fewer per 8 lanes.
constexpr double kE1 = kD1 - kD5 * 5 / 256, kE2 = kD2, kE3 = kD3 + kD5 * 5 / 16, kE4 = kD4;

struct Exp2Table16 {
  alignas(64) double v[16];
  Exp2Table16() {
    for (int i = 0; i < 16; ++i)
      v[i] = static_cast<double>(std::exp2l(static_cast<long double>(i) / 16));
  }
};
const Exp2Table16& exp2_table16() {
  static const Exp2Table16 t;
  return t;
}

__attribute__((target("avx512f,avx512dq,avx512vl"), always_inline)) inline unsigned exp8(
    const float* xs, float* ys, __m512d tab_lo, __m512d tab_hi) {
  const __m256 xf = _mm256_loadu_ps(xs);
  const __mmask8 ok = _mm256_cmp_ps_mask(xf, _mm256_set1_ps(static_cast<float>(kLo)), _CMP_GE_OQ) &
                      _mm256_cmp_ps_mask(xf, _mm256_set1_ps(static_cast<float>(kHi)), _CMP_LE_OQ);
  const __m512d x = _mm512_maskz_cvtps_pd(ok, xf);  // the other lanes compute exp(0)
  const __m512d c = _mm512_set1_pd(kInvLn2N16);
  const __m512d t = _mm512_fmadd_pd(x, c, _mm512_set1_pd(kShift));
  const __m512d k = _mm512_sub_pd(t, _mm512_set1_pd(kShift));
  const __m512d r = _mm512_fmsub_pd(x, c, k);
  __m512d p = _mm512_fmadd_pd(_mm512_set1_pd(kE4), r, _mm512_set1_pd(kE3));
  p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kE2));
  p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kE1));
  p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0));
  // The permute reads the low 4 bits of each 64-bit index lane: k's (bits(t) - k ends in 51
  // zeros).
  const __m512d tv = _mm512_permutex2var_pd(tab_lo, _mm512_castpd_si512(t), tab_hi);
  // (The masked forms here and below: GCC 12 warns that the unmasked ones' undefined operand is
  // uninitialised.)
  const __m512d m = _mm512_mul_pd(tv, p);
  const __m512d e = _mm512_maskz_scalef_pd(0xFF, m, _mm512_mul_pd(k, _mm512_set1_pd(1.0 / 16)));
  _mm256_storeu_ps(ys, _mm512_maskz_cvtpd_ps(0xFF, e));
  // Within kBand of the midpoint: (low 29 bits - (kMid - kBand)) mod 2^29 < 2 kBand = 2^22, i.e.
  // bits 22..28 of bits(e) + kBand - kMid are all zero.
  const __mmask8 near = _mm512_testn_epi64_mask(
      _mm512_add_epi64(_mm512_castpd_si512(e), _mm512_set1_epi64(kBand - kMid)),
      _mm512_set1_epi64(kLowMask & ~(2 * kBand - 1)));
  return static_cast<unsigned>(static_cast<__mmask8>(near | static_cast<__mmask8>(~ok)));
}

/// std::exp of every float whose low 16 bits are zero (the bfloat16 values widened to fp32),
/// indexed by its high 16 bits: 256 KiB, filled once by std::exp itself, so a lane read from it
/// is std::exp's result by construction (NaN payloads included). SwiGLU's and sigmoid's exps of
/// bfloat16 data (silu(a) = a / (1 + exp(-a)), a widened from bf16) read it instead of
/// evaluating (issue 31: the exp was a quarter of SwiGLU's host time).
const float* bf16_exp_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t i = 0; i < 65536; ++i) {
      const uint32_t b = i << 16;
      float x;
      std::memcpy(&x, &b, 4);
      t[i] = std::exp(x);
    }
    return t;
  }();
  return table.data();
}

/// The lanes whose bit is set in `bad` (of the W at x) take std::exp.
inline void fall_back(const float* x, float* y, unsigned bad) {
  while (bad) {
    const int l = __builtin_ctz(bad);
    y[l] = std::exp(x[l]);
    bad &= bad - 1;
  }
}

/// out[i] = std::exp(in[i]), W lanes per step through `step` (exp4 twice or exp8 twice), in
/// chunks of kBlocks steps whose fallbacks are taken after the chunk: a branch per step that
/// mispredicts (about one block of 16 lanes in 8 holds a lane in the band) threw away the steps in
/// flight behind it; deferred, the chunk's evaluations overlap. A chunk (a remaining block) whose
/// lanes all hold bfloat16 values reads the table instead (`table(x, y, blocks)`: false, writing
/// nothing, when some lane is not one): tested once per chunk, not per step, where the test and
/// its branch cost 12 % of the evaluation's time (issue 31; both together: 0.80 -> 0.57-0.59 ns
/// per element on this host's Zen 4, and the same bits, as either path gives std::exp's). The last
/// n % W through a zero-padded copy.
template <int W, typename Step, typename Table>
__attribute__((always_inline)) inline void exp_loop(const float* in, float* out, int64_t n,
                                                    Step step, Table table) {
  constexpr int kBlocks = 16;
  constexpr int64_t kChunk = int64_t{kBlocks} * W;
  int64_t i = 0;
  for (; i + kChunk <= n; i += kChunk) {
    if (table(in + i, out + i, kBlocks)) continue;
    alignas(64) float save[kChunk];  // the inputs, kept for the fallback when `out` is `in`
    const float* x = in + i;
    if (in == out) {
      std::memcpy(save, x, sizeof save);
      x = save;
    }
    unsigned bad[kBlocks], any = 0;
    for (int b = 0; b < kBlocks; ++b) {
      bad[b] = step(x + b * W, out + i + b * W);
      any |= bad[b];
    }
    if (any)
      for (int b = 0; b < kBlocks; ++b)
        if (bad[b]) fall_back(x + b * W, out + i + b * W, bad[b]);
  }
  for (; i + W <= n; i += W) {
    if (table(in + i, out + i, 1)) continue;
    float x[W];
    std::memcpy(x, in + i, sizeof x);
    const unsigned bad = step(x, out + i);
    if (bad) [[unlikely]]
      fall_back(x, out + i, bad);
  }
  if (i < n) {
    float x[W] = {}, y[W];
    std::memcpy(x, in + i, (n - i) * sizeof(float));
    if (!table(x, y, 1)) fall_back(x, y, step(x, y) & ((1u << (n - i)) - 1));
    std::memcpy(out + i, y, (n - i) * sizeof(float));
  }
}

__attribute__((target("avx2,fma"))) void exp_avx2(const float* in, float* out, int64_t n) {
  const int64_t* tab = exp2_table().bits;
  const float* bf = bf16_exp_table();
  exp_loop<8>(
      in, out, n,
      [tab](const float* x, float* y) __attribute__((target("avx2,fma"))) {
        return exp4(x, y, tab) | exp4(x + 4, y + 4, tab) << 4;
      },
      [bf](const float* x, float* y, int blocks) __attribute__((target("avx2,fma"))) {
        // Blocks of eight bfloat16 values: their exps from the table.
        __m256i any = _mm256_setzero_si256();
        for (int b = 0; b < blocks; ++b)
          any =
              _mm256_or_si256(any, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 8 * b)));
        if (!_mm256_testz_si256(any, _mm256_set1_epi32(0xFFFF))) return false;
        for (int b = 0; b < blocks; ++b) {
          const __m256i xi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 8 * b));
          _mm256_storeu_ps(y + 8 * b, _mm256_i32gather_ps(bf, _mm256_srli_epi32(xi, 16), 4));
        }
        return true;
      });
}

__attribute__((target("avx512f,avx512dq,avx512vl"))) void exp_avx512(const float* in, float* out,
                                                                     int64_t n) {
  const double* v = exp2_table16().v;
  const float* bf = bf16_exp_table();
  exp_loop<16>(
      in, out, n,
      [v](const float* x, float* y) __attribute__((target("avx512f,avx512dq,avx512vl"))) {
        const __m512d lo = _mm512_load_pd(v), hi = _mm512_load_pd(v + 8);
        return exp8(x, y, lo, hi) | exp8(x + 8, y + 8, lo, hi) << 8;
      },
      [bf](const float* x, float* y,
           int blocks) __attribute__((target("avx512f,avx512dq,avx512vl"))) {
        // Blocks of sixteen bfloat16 values: their exps from the table.
        __m512i any = _mm512_setzero_si512();
        for (int b = 0; b < blocks; ++b) any = _mm512_or_si512(any, _mm512_loadu_si512(x + 16 * b));
        if (_mm512_test_epi32_mask(any, _mm512_set1_epi32(0xFFFF)) != 0) return false;
        for (int b = 0; b < blocks; ++b) {
          // (Masked forms: GCC 12 warns that the unmasked ones' undefined operand is
          // uninitialised.)
          const __m512i idx = _mm512_maskz_srli_epi32(0xFFFF, _mm512_loadu_si512(x + 16 * b), 16);
          _mm512_storeu_ps(y + 16 * b,
                           _mm512_mask_i32gather_ps(_mm512_setzero_ps(), 0xFFFF, idx, bf, 4));
        }
        return true;
      });
}

void exp_scalar(const float* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = std::exp(in[i]);
}

bool host_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
bool host_has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512vl");
  return has;
}

}  // namespace
#endif

std::vector<ExpF32Impl> exp_f32_impls() {
  std::vector<ExpF32Impl> v;
#ifdef TL_EXP_X86
  if (host_has_avx512()) v.push_back({"avx512", exp_avx512});
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
