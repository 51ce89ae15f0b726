// Scalar numerics of the virtual NPU: one rounding core for every float format, integer
// conversions, bulk conversion with fast paths. Contracts and modelled hardware behaviour are
// documented in the header.
#include "tl/npu/numerics.h"

#include <bit>
#include <cmath>
#include <limits>

#include "tl/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define TL_NPU_X86 1
#endif

namespace tl::npu {

std::string_view round_mode_name(RoundMode m) {
  switch (m) {
    case RoundMode::None:
      return "none";
    case RoundMode::Rint:
      return "rint";
    case RoundMode::Floor:
      return "floor";
    case RoundMode::Ceil:
      return "ceil";
    case RoundMode::Round:
      return "round";
    case RoundMode::Trunc:
      return "trunc";
    case RoundMode::Odd:
      return "odd";
  }
  return "?";
}

namespace {

// A binary float format: man explicit mantissa bits, exp exponent bits. fn: no inf, only the
// all-ones code is NaN (OCP e4m3fn).
struct Fmt {
  int man;
  int exp;
  int bias;
  bool fn;
};
constexpr Fmt kF16{10, 5, 15, false};
constexpr Fmt kBF16{7, 8, 127, false};
constexpr Fmt kF32{23, 8, 127, false};
constexpr Fmt kF64{52, 11, 1023, false};
constexpr Fmt kE4M3{3, 4, 7, true};
constexpr Fmt kE5M2{2, 5, 15, false};

constexpr uint64_t sign_bit(const Fmt& f) {
  return uint64_t(1) << (f.exp + f.man);
}
constexpr uint64_t inf_bits(const Fmt& f) {
  return ((uint64_t(1) << f.exp) - 1) << f.man;
}
constexpr uint64_t max_bits(const Fmt& f) {
  return f.fn ? (uint64_t(1) << (f.exp + f.man)) - 2 : inf_bits(f) - 1;
}
// Quiet NaN; top_payload holds the source's payload bits left-aligned in 64 bits.
constexpr uint64_t nan_bits(const Fmt& f, bool neg, uint64_t top_payload) {
  uint64_t s = neg ? sign_bit(f) : 0;
  if (f.fn) return s | (sign_bit(f) - 1);
  if (f.man < 3) return s | inf_bits(f) | (uint64_t(1) << (f.man - 1));  // canonical for fp8
  uint64_t quiet = uint64_t(1) << (f.man - 1);
  return s | inf_bits(f) | quiet | (top_payload >> (64 - f.man));
}

uint64_t special_inf(const Fmt& f, bool neg, SatMode s) {
  uint64_t sb = neg ? sign_bit(f) : 0;
  if (s == SatMode::Saturate) return sb | max_bits(f);
  return f.fn ? nan_bits(f, neg, 0) : sb | inf_bits(f);
}
uint64_t special_nan(const Fmt& f, bool neg, uint64_t top_payload, SatMode s) {
  return s == SatMode::Saturate ? 0 : nan_bits(f, neg, top_payload);
}

// The rounding core: the code of (-1)^neg * sig * 2^e2 in format f (sig > 0), rounded once.
uint64_t encode(const Fmt& f, bool neg, uint64_t sig, int e2, RoundMode m, SatMode s) {
  int lz = std::countl_zero(sig);
  sig <<= lz;
  e2 -= lz;
  int E = e2 + 63;  // value = 1.xxx * 2^E
  const int emin = 1 - f.bias;
  int64_t shift = 63 - f.man;
  if (E < emin) shift += int64_t(emin) - E;
  uint64_t kept;
  bool rb, st;
  if (shift < 64) {
    kept = sig >> shift;
    rb = (sig >> (shift - 1)) & 1;
    st = (sig & ((uint64_t(1) << (shift - 1)) - 1)) != 0;
  } else if (shift == 64) {
    kept = 0;
    rb = true;
    st = (sig << 1) != 0;
  } else {
    kept = 0;
    rb = false;
    st = true;
  }
  bool inc = false;
  switch (m) {
    case RoundMode::None:
    case RoundMode::Rint:
      inc = rb && (st || (kept & 1));
      break;
    case RoundMode::Round:
      inc = rb;
      break;
    case RoundMode::Floor:
      inc = neg && (rb || st);
      break;
    case RoundMode::Ceil:
      inc = !neg && (rb || st);
      break;
    case RoundMode::Trunc:
      break;
    case RoundMode::Odd:
      kept |= uint64_t(rb || st);
      break;
  }
  kept += inc;
  // Normal: biased exponent E + bias, the implicit bit of kept adds the last 1 (and a rounding
  // carry into 2^(man+1) bumps the exponent). Subnormal: exponent field 0, carry -> min normal.
  uint64_t bits = E < emin ? kept : (uint64_t(int64_t(E) + f.bias - 1) << f.man) + kept;
  if (E > 2 * f.bias + 2 || bits > max_bits(f)) {  // overflow
    bool to_inf = false;
    switch (m) {
      case RoundMode::None:
      case RoundMode::Rint:
      case RoundMode::Round:
        to_inf = true;
        break;
      case RoundMode::Floor:
        to_inf = neg;
        break;
      case RoundMode::Ceil:
        to_inf = !neg;
        break;
      case RoundMode::Trunc:
      case RoundMode::Odd:
        to_inf = false;
        break;
    }
    if (to_inf) return special_inf(f, neg, s);
    return (neg ? sign_bit(f) : 0) | max_bits(f);
  }
  return (neg ? sign_bit(f) : 0) | bits;
}

uint64_t encode_double(const Fmt& f, double x, RoundMode m, SatMode s) {
  uint64_t u = std::bit_cast<uint64_t>(x);
  bool neg = u >> 63;
  int e = int((u >> 52) & 0x7ff);
  uint64_t man = u & ((uint64_t(1) << 52) - 1);
  if (e == 0x7ff) return man ? special_nan(f, neg, man << 12, s) : special_inf(f, neg, s);
  if (e == 0 && man == 0) return neg ? sign_bit(f) : 0;
  if (e == 0) return encode(f, neg, man, -1074, m, s);
  return encode(f, neg, man | (uint64_t(1) << 52), e - 1075, m, s);
}

// fp32 -> double without the host's DAZ flag flushing fp32 subnormals.
double widen_f32(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7f800000u) != 0 || (u & 0x7fffffu) == 0) return double(x);
  double v = std::ldexp(double(u & 0x7fffffu), -149);
  return (u >> 31) ? -v : v;
}

uint64_t encode_int(const Fmt& f, bool neg, uint64_t mag, RoundMode m, SatMode s) {
  if (mag == 0) return 0;
  return encode(f, neg, mag, 0, m, s);
}

double decode(const Fmt& f, uint64_t bits) {
  bool neg = (bits >> (f.exp + f.man)) & 1;
  uint64_t e = (bits >> f.man) & ((uint64_t(1) << f.exp) - 1);
  uint64_t man = bits & ((uint64_t(1) << f.man) - 1);
  double v;
  if (f.fn && e == (uint64_t(1) << f.exp) - 1 && man == (uint64_t(1) << f.man) - 1) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (!f.fn && e == (uint64_t(1) << f.exp) - 1) {
    // A NaN keeps its sign and payload, quieted: the payload left-aligned in the double's
    // mantissa, as the fast widenings (f16_to_f32, bf16_to_f32: x86 F16C) and the narrowing
    // back (encode_double) treat it. It was the canonical quiet NaN, so an element that went
    // through a scalar path (the plain cube gather, a scalar load) lost the payload the batched
    // paths keep (include/tl/npu/numerics.h, "NaN in").
    if (man)
      return std::bit_cast<double>((uint64_t(neg) << 63) | (uint64_t(0x7ff) << 52) |
                                   (uint64_t(1) << 51) | (man << (52 - f.man)));
    v = std::numeric_limits<double>::infinity();
  } else if (e == 0) {
    v = std::ldexp(double(man), 1 - f.bias - f.man);
  } else {
    v = std::ldexp(double(man | (uint64_t(1) << f.man)), int(e) - f.bias - f.man);
  }
  return neg ? -v : v;
}

// ---- integers ----

struct IntRange {
  bool is_signed;
  int bits;
};
IntRange int_range(DType t) {
  switch (t) {
    case DType::Int8:
      return {true, 8};
    case DType::Int16:
      return {true, 16};
    case DType::Int32:
      return {true, 32};
    case DType::Int64:
      return {true, 64};
    case DType::UInt8:
      return {false, 8};
    case DType::UInt16:
      return {false, 16};
    case DType::UInt32:
      return {false, 32};
    case DType::UInt64:
      return {false, 64};
    default:
      TL_ASSERT(false, "int_range: {} is not an integer dtype", dtype_name(t));
  }
  return {};
}

void store_uint(void* out, int bytes, uint64_t v) {
  switch (bytes) {
    case 1: {
      uint8_t x = uint8_t(v);
      std::memcpy(out, &x, 1);
      break;
    }
    case 2: {
      uint16_t x = uint16_t(v);
      std::memcpy(out, &x, 2);
      break;
    }
    case 4: {
      uint32_t x = uint32_t(v);
      std::memcpy(out, &x, 4);
      break;
    }
    default:
      std::memcpy(out, &v, 8);
      break;
  }
}

// Saturate the integer (neg, mag) to t's range and store it (two's complement).
void store_int_sat(DType t, bool neg, uint64_t mag, void* out) {
  IntRange r = int_range(t);
  uint64_t v;
  if (r.is_signed) {
    uint64_t pos_max = (uint64_t(1) << (r.bits - 1)) - 1;
    if (neg)
      v = mag > pos_max + 1 ? ~pos_max : uint64_t(0) - mag;  // ~pos_max = min
    else
      v = mag > pos_max ? pos_max : mag;
  } else {
    uint64_t umax = r.bits == 64 ? ~uint64_t(0) : (uint64_t(1) << r.bits) - 1;
    v = neg ? 0 : (mag > umax ? umax : mag);
  }
  store_uint(out, r.bits / 8, v);
}

// Float value -> saturated integer of dtype t.
void store_float_as_int(DType t, double x, RoundMode m, void* out) {
  if (std::isnan(x)) return store_uint(out, dtype_bytes(t), 0);
  double r = round_integral(x, m);
  bool neg = std::signbit(r) && r != 0;
  double a = std::fabs(r);
  uint64_t mag = a >= 18446744073709551616.0 ? ~uint64_t(0) : uint64_t(a);
  store_int_sat(t, neg, mag, out);
}

// Read an integer element as (neg, magnitude).
void load_int(DType t, const void* p, bool& neg, uint64_t& mag) {
  int64_t s = 0;
  uint64_t u = 0;
  bool is_signed = true;
  switch (t) {
    case DType::Bool: {
      uint8_t v;
      std::memcpy(&v, p, 1);
      u = v != 0;
      is_signed = false;
      break;
    }
    case DType::Int8: {
      int8_t v;
      std::memcpy(&v, p, 1);
      s = v;
      break;
    }
    case DType::Int16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      s = v;
      break;
    }
    case DType::Int32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      s = v;
      break;
    }
    case DType::Int64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      s = v;
      break;
    }
    case DType::UInt8: {
      uint8_t v;
      std::memcpy(&v, p, 1);
      u = v;
      is_signed = false;
      break;
    }
    case DType::UInt16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      u = v;
      is_signed = false;
      break;
    }
    case DType::UInt32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      u = v;
      is_signed = false;
      break;
    }
    case DType::UInt64: {
      std::memcpy(&u, p, 8);
      is_signed = false;
      break;
    }
    default:
      TL_ASSERT(false, "load_int: {} is not an integer dtype", dtype_name(t));
  }
  if (is_signed) {
    neg = s < 0;
    mag = neg ? uint64_t(0) - uint64_t(s) : uint64_t(s);
  } else {
    neg = false;
    mag = u;
  }
}

const Fmt* float_fmt(DType t) {
  switch (t) {
    case DType::Float16:
      return &kF16;
    case DType::BFloat16:
      return &kBF16;
    case DType::Float32:
      return &kF32;
    case DType::Float64:
      return &kF64;
    case DType::Float8E4M3:
      return &kE4M3;
    case DType::Float8E5M2:
      return &kE5M2;
    default:
      return nullptr;
  }
}

void store_bits(const Fmt& f, uint64_t bits, void* out) {
  store_uint(out, (1 + f.exp + f.man) / 8, bits);
}
uint64_t load_bits(const Fmt& f, const void* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, size_t(1 + f.exp + f.man) / 8);  // little-endian host
  return v;
}

}  // namespace

namespace detail {
uint16_t f32_to_f16_slow(float x, RoundMode m, SatMode s) {
  return uint16_t(encode_double(kF16, widen_f32(x), m, s));
}
uint16_t f32_to_bf16_slow(float x, RoundMode m, SatMode s) {
  return uint16_t(encode_double(kBF16, widen_f32(x), m, s));
}
}  // namespace detail

float e4m3_to_f32(uint8_t b) {
  return float(decode(kE4M3, b));
}
float e5m2_to_f32(uint8_t b) {
  return float(decode(kE5M2, b));
}
uint8_t f32_to_e4m3(float x, RoundMode m, SatMode s) {
  return uint8_t(encode_double(kE4M3, widen_f32(x), m, s));
}
uint8_t f32_to_e5m2(float x, RoundMode m, SatMode s) {
  return uint8_t(encode_double(kE5M2, widen_f32(x), m, s));
}

float f64_to_f32(double x, RoundMode m, SatMode s) {
  return detail::bits_f32(uint32_t(encode_double(kF32, x, m, s)));
}
uint16_t f64_to_f16(double x, RoundMode m, SatMode s) {
  return uint16_t(encode_double(kF16, x, m, s));
}
uint16_t f64_to_bf16(double x, RoundMode m, SatMode s) {
  return uint16_t(encode_double(kBF16, x, m, s));
}
uint8_t f64_to_e4m3(double x, RoundMode m, SatMode s) {
  return uint8_t(encode_double(kE4M3, x, m, s));
}
uint8_t f64_to_e5m2(double x, RoundMode m, SatMode s) {
  return uint8_t(encode_double(kE5M2, x, m, s));
}

namespace {
double round_integral_magnitude(double x, RoundMode m) {
  double f = std::floor(x);
  if (f == x) return x;
  switch (m) {
    case RoundMode::Floor:
      return f;
    case RoundMode::Ceil:
      return f + 1;
    case RoundMode::Trunc:
      return std::trunc(x);
    case RoundMode::Round:
      return std::round(x);
    case RoundMode::Odd:
      return std::fmod(f, 2.0) != 0 ? f : f + 1;
    case RoundMode::None:
    case RoundMode::Rint: {
      double d = x - f;  // exact: x is not an integer, so |x| < 2^52
      if (d != 0.5) return d < 0.5 ? f : f + 1;
      return std::fmod(f, 2.0) == 0 ? f : f + 1;
    }
  }
  return x;
}
}  // namespace

double round_integral(double x, RoundMode m) {
  if (!std::isfinite(x)) return x;
  // A zero result keeps the operand's sign (IEEE 754 roundToIntegral: -0.3 rounds to -0.0, as
  // std::nearbyint does); `floor(x) + 1` alone would give +0.0.
  const double r = round_integral_magnitude(x, m);
  return r == 0 ? std::copysign(0.0, x) : r;
}

int64_t f64_to_i64(double x, RoundMode m) {
  int64_t v;
  store_float_as_int(DType::Int64, x, m, &v);
  return v;
}

float i64_to_f32(int64_t v, RoundMode m) {
  bool neg = v < 0;
  uint64_t mag = neg ? uint64_t(0) - uint64_t(v) : uint64_t(v);
  return detail::bits_f32(uint32_t(encode_int(kF32, neg, mag, m, SatMode::InfNan)));
}

double to_double(DType t, const void* bits) {
  if (const Fmt* f = float_fmt(t)) {
    if (t == DType::Float64) {
      double d;
      std::memcpy(&d, bits, 8);
      return d;
    }
    if (t == DType::Float32) {
      float x;
      std::memcpy(&x, bits, 4);
      return widen_f32(x);
    }
    return decode(*f, load_bits(*f, bits));
  }
  bool neg;
  uint64_t mag;
  load_int(t, bits, neg, mag);
  return neg ? -double(mag) : double(mag);
}

void from_double(DType t, double x, void* out, RoundMode m, SatMode s) {
  if (t == DType::Float64) {
    std::memcpy(out, &x, 8);
    return;
  }
  if (const Fmt* f = float_fmt(t)) return store_bits(*f, encode_double(*f, x, m, s), out);
  if (t == DType::Bool) {
    uint8_t b = x != 0;
    std::memcpy(out, &b, 1);
    return;
  }
  store_float_as_int(t, x, m, out);
}

void from_int64(DType t, int64_t v, void* out, RoundMode m, SatMode s) {
  bool neg = v < 0;
  uint64_t mag = neg ? uint64_t(0) - uint64_t(v) : uint64_t(v);
  if (const Fmt* f = float_fmt(t)) return store_bits(*f, encode_int(*f, neg, mag, m, s), out);
  if (t == DType::Bool) {
    uint8_t b = v != 0;
    std::memcpy(out, &b, 1);
    return;
  }
  store_int_sat(t, neg, mag, out);
}

float round_to(DType t, float x, RoundMode m, SatMode s) {
  if (t == DType::Float32 && s == SatMode::InfNan) return x;
  alignas(8) unsigned char buf[8];
  from_double(t, widen_f32(x), buf, m, s);
  return float(to_double(t, buf));
}

// ---- bulk conversion ----

#ifdef TL_NPU_X86
namespace {
__attribute__((target("f16c,avx"))) void f16_to_f32_f16c(const uint16_t* src, float* dst,
                                                         int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}
__attribute__((target("f16c,avx"))) void f32_to_f16_f16c(const float* src, uint16_t* dst,
                                                         int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(src + i);
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

// bf16 <-> fp32 with AVX2, 8 lanes at a time: the same bit operations as bf16_to_f32 and
// f32_to_bf16 (RINT, NaN quieted), so the results are identical to the scalar loops.
__attribute__((target("avx2"))) void bf16_to_f32_avx2(const uint16_t* src, float* dst, int64_t n) {
  const __m256i mag = _mm256_set1_epi32(0x7fff), inf = _mm256_set1_epi32(0x7f80),
                quiet = _mm256_set1_epi32(0x00400000);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i b = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, mag), inf);
    __m256i u = _mm256_or_si256(_mm256_slli_epi32(b, 16), _mm256_and_si256(nan, quiet));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), u);
  }
  for (; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}
__attribute__((target("avx2"))) __m256i f32_to_bf16_rint8(const float* src) {
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff),
                quiet = _mm256_set1_epi32(0x0040);
  __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
  __m256i hi = _mm256_srli_epi32(u, 16);
  __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
  __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(half, _mm256_and_si256(hi, one))), 16);
  return _mm256_blendv_epi8(rounded, _mm256_or_si256(hi, quiet), nan);  // 32-bit lanes < 2^16
}
__attribute__((target("avx2"))) void f32_to_bf16_avx2(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    // packus interleaves the 128-bit lanes of its operands; the permute restores the order.
    __m256i packed =
        _mm256_packus_epi32(f32_to_bf16_rint8(src + i), f32_to_bf16_rint8(src + i + 8));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm256_permute4x64_epi64(packed, 0xd8));
  }
  for (; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}

// The same two conversions 16 lanes wide with AVX-512F (the same bit operations again; the
// narrowing truncates each 32-bit lane, whose value is below 2^16, to 16 bits with vpmovdw). The
// all-ones masked forms: GCC 12 warns that the unmasked ones' undefined operand is uninitialised.
__attribute__((target("avx512f"))) void bf16_to_f32_avx512(const uint16_t* src, float* dst,
                                                           int64_t n) {
  const __m512i mag = _mm512_set1_epi32(0x7fff), inf = _mm512_set1_epi32(0x7f80),
                quiet = _mm512_set1_epi32(0x00400000);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i b = _mm512_maskz_cvtepu16_epi32(
        0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(b, mag), inf);
    const __m512i u = _mm512_mask_or_epi32(_mm512_maskz_slli_epi32(0xFFFF, b, 16), nan,
                                           _mm512_maskz_slli_epi32(0xFFFF, b, 16), quiet);
    _mm512_storeu_si512(dst + i, u);
  }
  if (i < n) bf16_to_f32_avx2(src + i, dst + i, n - i);
}
}  // namespace

// Also the fallback of bf16_narrow.cpp's VCVTNEPS2BF16 loop for groups with subnormal lanes.
void f32_to_bf16_avx512(const float* src, uint16_t* dst, int64_t n);
__attribute__((target("avx512f"))) void f32_to_bf16_avx512(const float* src, uint16_t* dst,
                                                           int64_t n) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i one = _mm512_set1_epi32(1), half = _mm512_set1_epi32(0x7fff),
                quiet = _mm512_set1_epi32(0x0040);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i u = _mm512_loadu_si512(src + i);
    const __m512i hi = _mm512_maskz_srli_epi32(0xFFFF, u, 16);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, abs_mask), inf);
    const __m512i rounded = _mm512_maskz_srli_epi32(
        0xFFFF, _mm512_add_epi32(u, _mm512_add_epi32(half, _mm512_and_si512(hi, one))), 16);
    const __m512i r = _mm512_mask_or_epi32(rounded, nan, hi, quiet);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm512_maskz_cvtepi32_epi16(0xFFFF, r));
  }
  if (i < n) f32_to_bf16_avx2(src + i, dst + i, n - i);
}
#endif

// Declared where it is used (src/npu/exec_vector.cpp's row loops), not in numerics.h.
bool host_has_avx512f();
bool host_has_avx512f() {
#ifdef TL_NPU_X86
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}

bool host_has_avx2() {
#ifdef TL_NPU_X86
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
#else
  return false;
#endif
}

bool host_has_f16c() {
#ifdef TL_NPU_X86
  // CPUID.1:ECX.F16C[bit 29] directly: clang before 15 does not know "f16c" as a
  // __builtin_cpu_supports feature. The "avx" check covers the OS's saving of the YMM state.
  static const bool has = [] {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) && __builtin_cpu_supports("avx");
  }();
  return has;
#else
  return false;
#endif
}

bool host_has_avx512bf16();  // bf16_narrow.cpp
void f32_to_bf16_avx512bf16(const float* src, uint16_t* dst, int64_t n);

namespace {
void convert_one(DType st, const unsigned char* src, DType dt, unsigned char* dst, RoundMode m,
                 SatMode s) {
  const Fmt* sf = float_fmt(st);
  const Fmt* df = float_fmt(dt);
  if (sf) {
    double x = to_double(st, src);
    if (sf != &kF64 && df && df != &kF64 && std::isnan(x)) {
      // Keep the NaN's sign and payload through the double.
      uint64_t bits = load_bits(*sf, src);
      bool neg = (bits >> (sf->exp + sf->man)) & 1;
      uint64_t payload = (bits & ((uint64_t(1) << sf->man) - 1)) << (64 - sf->man);
      return store_bits(*df, special_nan(*df, neg, payload, s), dst);
    }
    return from_double(dt, x, dst, m, s);
  }
  bool neg;
  uint64_t mag;
  load_int(st, src, neg, mag);
  if (df) return store_bits(*df, encode_int(*df, neg, mag, m, s), dst);
  if (dt == DType::Bool) {
    *dst = mag != 0;
    return;
  }
  store_int_sat(dt, neg, mag, dst);
}
}  // namespace

void convert(DType st, const void* src, DType dt, void* dst, int64_t n, RoundMode m, SatMode s) {
  if (n <= 0) return;
  if (st == dt && !(s == SatMode::Saturate && float_fmt(st))) {
    std::memmove(dst, src, size_t(n) * size_t(dtype_bytes(st)));
    return;
  }
  const bool fast = (m == RoundMode::Rint || m == RoundMode::None) && s == SatMode::InfNan;
  if (st == DType::Float16 && dt == DType::Float32) {
    auto* in = static_cast<const uint16_t*>(src);
    auto* out = static_cast<float*>(dst);
#ifdef TL_NPU_X86
    if (host_has_f16c()) return f16_to_f32_f16c(in, out, n);
#endif
    for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(in[i]);
    return;
  }
  if (st == DType::Float32 && dt == DType::Float16 && fast) {
    auto* in = static_cast<const float*>(src);
    auto* out = static_cast<uint16_t*>(dst);
#ifdef TL_NPU_X86
    if (host_has_f16c()) return f32_to_f16_f16c(in, out, n);
#endif
    for (int64_t i = 0; i < n; ++i) out[i] = f32_to_f16(in[i]);
    return;
  }
  if (st == DType::BFloat16 && dt == DType::Float32) {
    auto* in = static_cast<const uint16_t*>(src);
    auto* out = static_cast<float*>(dst);
#ifdef TL_NPU_X86
    if (host_has_avx512f()) return bf16_to_f32_avx512(in, out, n);
    if (host_has_avx2()) return bf16_to_f32_avx2(in, out, n);
#endif
    for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(in[i]);
    return;
  }
  if (st == DType::Float32 && dt == DType::BFloat16 && fast) {
    auto* in = static_cast<const float*>(src);
    auto* out = static_cast<uint16_t*>(dst);
#ifdef TL_NPU_X86
    if (host_has_avx512bf16()) return f32_to_bf16_avx512bf16(in, out, n);  // bf16_narrow.cpp
    if (host_has_avx512f()) return f32_to_bf16_avx512(in, out, n);
    if (host_has_avx2()) return f32_to_bf16_avx2(in, out, n);
#endif
    for (int64_t i = 0; i < n; ++i) out[i] = f32_to_bf16(in[i]);
    return;
  }
  const int sb = dtype_bytes(st), db = dtype_bytes(dt);
  auto* in = static_cast<const unsigned char*>(src);
  auto* out = static_cast<unsigned char*>(dst);
  for (int64_t i = 0; i < n; ++i) convert_one(st, in + i * sb, dt, out + i * db, m, s);
}

// ---- vector-unit arithmetic ----

float f32_binop(BinOp op, float a, float b) {
  switch (op) {
    case BinOp::Add:
      return a + b;
    case BinOp::Sub:
      return a - b;
    case BinOp::Mul:
      return a * b;
    case BinOp::Div:
      return a / b;
    case BinOp::Max:
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
      return a > b ? a : (b > a ? b : (std::signbit(a) ? b : a));
    case BinOp::Min:
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
      return a < b ? a : (b < a ? b : (std::signbit(a) ? a : b));
  }
  return 0;
}

uint16_t f16_binop(BinOp op, uint16_t a, uint16_t b, SatMode s) {
  return f32_to_f16(f32_binop(op, f16_to_f32(a), f16_to_f32(b)), RoundMode::Rint, s);
}
uint16_t bf16_binop(BinOp op, uint16_t a, uint16_t b, SatMode s) {
  return f32_to_bf16(f32_binop(op, bf16_to_f32(a), bf16_to_f32(b)), RoundMode::Rint, s);
}

}  // namespace tl::npu
