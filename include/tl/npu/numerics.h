// Dtype-faithful scalar numerics of the virtual Ascend NPU: conversions between the storage
// dtypes (fp16, bf16, fp8 e4m3/e5m2, fp32, integers) with the rounding modes of AscendC's
// Cast, and the per-op rounding of the vector unit. Everything here is a pure function.
//
// Hardware behaviour modelled (sources: asc-devkit docs, "精度转换" precision_conversion.md,
// Cast.md, SetCtrlSpr(ISASI).md; CANN env var INF_NAN_MODE_ENABLE):
//  - Rounding modes are those of AscendC RoundMode. CAST_NONE is CAST_RINT whenever the
//    conversion is inexact. CAST_ODD is "von Neumann" rounding: truncate, then set the last
//    kept bit if anything non-zero was dropped.
//  - Overflow. A2/A3 run in "INF_NAN mode" by default (IEEE 754 results; the runtime default
//    since the A2 generation), selectable per process as the legacy "saturation mode"
//    (CTRL[48] = 0: an inf result becomes +-max finite, a NaN result becomes 0). Both are
//    modelled: SatMode::InfNan (default) and SatMode::Saturate. In InfNan mode, overflow
//    follows IEEE 754 7.4: RINT/ROUND give +-inf; TRUNC and ODD give +-max; FLOOR gives +max for
//    positives and -inf for negatives; CEIL the mirror image.
//  - fp8 e4m3 is the OCP "FN" variant (no inf; max 448; S.1111.111 is NaN). Rounding is done as
//    if the code S.1111.111 were the finite value 480 (so 464 ties to even 448 under RINT, and
//    anything that rounds above 448 overflows). Overflow and +-inf give NaN in InfNan mode and
//    +-448 in Saturate mode (950's CTRL[48]/[50] defaults: saturate, NaN -> 0). The A2 itself
//    has no fp8 unit; fp8 is storage-only there.
//  - fp8 e5m2 is IEEE-like (inf and NaN); overflow as for fp16.
//  - NaN in -> quiet NaN out with the same sign; fp16/bf16 keep the top payload bits
//    (as x86 F16C does), fp8 outputs are the canonical NaN (e4m3 0x7F, e5m2 0x7E, plus sign).
//    AscendC documents no NaN payload (Cast's page only says that an all-ones exponent with a
//    non-zero mantissa is NaN), so this is the model's choice, and every path follows it:
//    widening to fp32 or to double (to_double, the scalar paths) keeps the payload too, so the
//    batched and the element-by-element paths (TL_NPU_PLAIN_PATHS) give the same NaN bits
//    (tests/npu/fast_paths_test.cpp compares them bit for bit, NaNs included).
//  - Float -> integer: rounded with the mode, then saturated to the integer range (the
//    documented default "溢出默认按照饱和模式处理"); NaN -> 0 (the documented saturation rule
//    for NaN outputs); +-inf -> max/min. Integer -> integer saturates too (negative -> 0 for
//    unsigned targets: the docs call negative inputs there "异常", we pick the saturated value).
//  - Integer -> float rounds directly from the integer (no intermediate double rounding).
//  - Subnormals are honoured everywhere (no flush to zero), in both directions.
//
// Double rounding: conversions from double round once, directly from the double's bits.
// f32 -> fp16/bf16 RINT/InfNan are inline bit manipulation (the simulator's hot path);
// bulk conversion (convert()) uses F16C on hosts that have it, bit-identical to the scalar
// path (tested). Conversions decode subnormals from bits, so the host's flush-to-zero / DAZ
// flags do not change them; the arithmetic helpers assume the default FP environment.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "tl/dtype.h"

namespace tl::npu {

/// AscendC RoundMode (CAST_NONE, CAST_RINT, ...). None means Rint when rounding is needed.
enum class RoundMode : uint8_t { None, Rint, Floor, Ceil, Round, Trunc, Odd };
/// Overflow/NaN handling of float results: IEEE (INF_NAN mode, default) or legacy saturation.
enum class SatMode : uint8_t { InfNan, Saturate };

std::string_view round_mode_name(RoundMode m);  // "rint", "floor", ...

namespace detail {
inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t f32_to_f16_slow(float x, RoundMode m, SatMode s);
uint16_t f32_to_bf16_slow(float x, RoundMode m, SatMode s);
}  // namespace detail

// ---- fp16 (IEEE binary16) ---------------------------------------------------------------

/// Exact widening. NaNs stay NaN (signalling ones are quieted), sign kept.
inline float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return detail::bits_f32(sign | 0x7f800000u | (m << 13) | (m ? 0x00400000u : 0u));
  if (e == 0) {  // zero or subnormal: m * 2^-24 is exact and normal in fp32
    float v = float(m) * 5.9604644775390625e-08f;
    return detail::bits_f32(sign | detail::f32_bits(v));
  }
  return detail::bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

/// fp32 -> fp16 with rounding mode and overflow mode (see the file comment).
inline uint16_t f32_to_f16(float x, RoundMode m = RoundMode::Rint, SatMode s = SatMode::InfNan) {
  if ((m != RoundMode::Rint && m != RoundMode::None) || s != SatMode::InfNan)
    return detail::f32_to_f16_slow(x, m, s);
  uint32_t u = detail::f32_bits(x);
  uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  if (u >= 0x47800000u) {  // |x| >= 65536, inf or nan
    if (u > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((u >> 13) & 0x3ffu));
    return uint16_t(sign | 0x7c00u);
  }
  if (u < 0x38800000u) {  // below fp16's smallest normal: subnormal or zero result
    uint32_t e = u >> 23;
    if (e < 101) return uint16_t(sign);  // |x| < 2^-25: rounds to zero
    uint32_t sig = (u & 0x7fffffu) | 0x800000u;
    uint32_t sh = 126 - e;  // 14..25
    uint32_t kept = sig >> sh, rem = sig & ((1u << sh) - 1), half = 1u << (sh - 1);
    kept += (rem > half) | ((rem == half) & kept);
    return uint16_t(sign | kept);
  }
  // Normal: rebias, add half-ulp-minus-one plus the lsb (ties to even); a carry may reach inf.
  u += 0xc8000fffu + ((u >> 13) & 1u);  // 0xc8000000 = (15 - 127) << 23 mod 2^32
  return uint16_t(sign | (u >> 13));
}

// ---- bf16 -------------------------------------------------------------------------------

/// Exact widening (bf16 is the top half of an fp32). Signalling NaNs are quieted.
inline float bf16_to_f32(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  if ((b & 0x7fffu) > 0x7f80u) u |= 0x00400000u;
  return detail::bits_f32(u);
}

inline uint16_t f32_to_bf16(float x, RoundMode m = RoundMode::Rint, SatMode s = SatMode::InfNan) {
  if ((m != RoundMode::Rint && m != RoundMode::None) || s != SatMode::InfNan)
    return detail::f32_to_bf16_slow(x, m, s);
  uint32_t u = detail::f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// ---- fp8 --------------------------------------------------------------------------------

float e4m3_to_f32(uint8_t b);  // exact; 0x7F/0xFF -> NaN
float e5m2_to_f32(uint8_t b);  // exact
uint8_t f32_to_e4m3(float x, RoundMode m = RoundMode::Rint, SatMode s = SatMode::InfNan);
uint8_t f32_to_e5m2(float x, RoundMode m = RoundMode::Rint, SatMode s = SatMode::InfNan);

// ---- from double, rounding once ---------------------------------------------------------

float f64_to_f32(double x, RoundMode m = RoundMode::Rint, SatMode s = SatMode::InfNan);
uint16_t f64_to_f16(double x, RoundMode m = RoundMode::Rint, SatMode s = SatMode::InfNan);
uint16_t f64_to_bf16(double x, RoundMode m = RoundMode::Rint, SatMode s = SatMode::InfNan);
uint8_t f64_to_e4m3(double x, RoundMode m = RoundMode::Rint, SatMode s = SatMode::InfNan);
uint8_t f64_to_e5m2(double x, RoundMode m = RoundMode::Rint, SatMode s = SatMode::InfNan);

// ---- integers ---------------------------------------------------------------------------

/// x rounded to an integer with mode m (Odd: the odd neighbour when inexact); NaN and inf
/// are returned unchanged. Exact (no overflow: doubles this large are already integers).
double round_integral(double x, RoundMode m);
/// Float -> int64 with mode m, saturated; NaN -> 0.
int64_t f64_to_i64(double x, RoundMode m = RoundMode::Rint);
/// Integer -> float dtype, rounded once from the exact integer.
float i64_to_f32(int64_t v, RoundMode m = RoundMode::Rint);

// ---- generic, by DType ------------------------------------------------------------------

/// Value of one element of dtype t stored at bits (exact for every dtype except 64-bit
/// integers beyond 2^53, which round to nearest even). Bool reads as 0/1.
double to_double(DType t, const void* bits);
/// Store x as dtype t at out (dtype_bytes(t) bytes). Float targets round once from x;
/// integer targets round with m and saturate (NaN -> 0); Bool stores x != 0 (NaN -> 1).
void from_double(DType t, double x, void* out, RoundMode m = RoundMode::Rint,
                 SatMode s = SatMode::InfNan);
/// Store the integer v as dtype t (float targets: one rounding from the exact integer;
/// integer targets: saturated).
void from_int64(DType t, int64_t v, void* out, RoundMode m = RoundMode::Rint,
                SatMode s = SatMode::InfNan);
/// The value x has after being stored as dtype t and read back (as float; for integer
/// dtypes the stored integer converted to float with RINT).
float round_to(DType t, float x, RoundMode m = RoundMode::Rint, SatMode s = SatMode::InfNan);

/// Element-wise conversion of n elements (the Cast instruction). src and dst must not
/// overlap unless src_t == dst_t. Integer -> integer saturates; float -> float rounds once;
/// 64-bit integer sources convert exactly from the integer. Hot pairs (fp16/bf16 <-> fp32)
/// take vectorisable fast paths.
void convert(DType src_t, const void* src, DType dst_t, void* dst, int64_t n,
             RoundMode m = RoundMode::Rint, SatMode s = SatMode::InfNan);

/// Whether convert() uses the host's F16C instructions (results are identical either way).
bool host_has_f16c();
/// Whether the host has AVX2: convert() (bf16 <-> fp32) and the vector ops' fp32 loops then
/// run 8 lanes wide (results are identical either way: the same IEEE operations, no FMA).
bool host_has_avx2();

/// out[i] = std::exp(in[i]) (glibc's expf, the vector unit's exp) for i < n, bit for bit, several
/// lanes at a time on hosts with AVX2 and FMA (src/support/exp_f32.cpp says how it stays
/// identical). `out` may be `in`, exactly, but no other overlap.
void exp_f32(const float* in, float* out, int64_t n);
/// Its implementations this host runs, widest first ("avx512", "avx2", "scalar"):
/// exp_f32 uses the first; the tests check each against std::exp.
struct ExpF32Impl {
  const char* name;
  void (*fn)(const float* in, float* out, int64_t n);
};
std::vector<ExpF32Impl> exp_f32_impls();

// ---- vector-unit arithmetic on fp16/bf16 ------------------------------------------------
//
// The vector unit computes each fp16/bf16 op and rounds the result to the destination dtype
// (RINT). We model that as: widen to fp32 (exact), compute in fp32, round to the dtype. For
// +, -, *, / and sqrt this equals the correctly rounded fp16/bf16 result, because fp32 has
// p' = 24 >= 2p + 2 bits (p = 11 for fp16, 8 for bf16), so the double rounding is innocuous.
enum class BinOp : uint8_t { Add, Sub, Mul, Div, Max, Min };
uint16_t f16_binop(BinOp op, uint16_t a, uint16_t b, SatMode s = SatMode::InfNan);
uint16_t bf16_binop(BinOp op, uint16_t a, uint16_t b, SatMode s = SatMode::InfNan);
/// fp32 result of op on fp32 operands (Max/Min: NaN if either is NaN).
float f32_binop(BinOp op, float a, float b);

}  // namespace tl::npu
