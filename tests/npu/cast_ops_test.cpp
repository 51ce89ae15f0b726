// T::tile::cast on the virtual NPU, exhaustively: every (from, to, rounding mode) of A2's cast
// table (target.casts) runs as one kernel launch over a whole input set, streamed through UB
// in chunks, and every output is compared bit-exactly against numerics.h's scalar
// conversions (f32_to_f16 / f32_to_bf16 / from_double / from_int64, rounding once from the
// exact source value).
//
// Input sets: fp16 and bf16 sources: all 65536 codes. fp32 sources: every fp16 value and every
// midpoint between consecutive fp16 values, the same for bf16 (ties for every mode, the
// overflow thresholds), infinities and NaNs. int16: all 65536 values; int8/uint8: all 256;
// int32/int64: edges (0, +-1, 2^24 +- k, the int16/int32 limits, beyond 2^53 for int64) and
// pseudo-random values over the whole range.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "npu/op_harness.h"

namespace tl {
namespace {

using namespace optest;
using npu::RoundMode;

RoundMode parse_mode(const std::string& m) {
  if (m == "CAST_RINT") return RoundMode::Rint;
  if (m == "CAST_FLOOR") return RoundMode::Floor;
  if (m == "CAST_CEIL") return RoundMode::Ceil;
  if (m == "CAST_ROUND") return RoundMode::Round;
  if (m == "CAST_TRUNC") return RoundMode::Trunc;
  if (m == "CAST_ODD") return RoundMode::Odd;
  return RoundMode::None;
}

/// A kernel that casts S[n] into D[n] chunk by chunk on AIV 0, double-synchronised as
/// examples/rms_norm.cpp does (V -> MTE2 before a load reuses s_ub, MTE3 -> V before the cast
/// reuses d_ub).
PrimFunc cast_func(DType from, DType to, int64_t n, int64_t chunk, const std::string& mode) {
  auto S = T::Tensor("S", {static_cast<int>(n)}, from);
  auto D = T::Tensor("D", {static_cast<int>(n)}, to);
  const int ch = static_cast<int>(chunk);
  return T::prim_func("cast_all", {S, D}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto s = T::alloc_ub("s_ub", {ch}, from);
        auto d = T::alloc_ub("d_ub", {ch}, to);
        T::If(vid == 0, [&] {
          T::serial(static_cast<int>(n / chunk), [&](Expr i) {
            T::set_flag(Pipe::V, Pipe::MTE2, 0);
            T::wait_flag(Pipe::V, Pipe::MTE2, 0);
            T::copy(S.at({i * ch}), s);
            T::set_flag(Pipe::MTE2, Pipe::V, 0);
            T::wait_flag(Pipe::MTE2, Pipe::V, 0);
            T::set_flag(Pipe::MTE3, Pipe::V, 1);
            T::wait_flag(Pipe::MTE3, Pipe::V, 1);
            T::tile::cast(d, s, mode);
            T::set_flag(Pipe::V, Pipe::MTE3, 1);
            T::wait_flag(Pipe::V, Pipe::MTE3, 1);
            T::copy(d, D.at({i * ch}));
          });
        });
      });
    });
  });
}

// ---- input sets, as raw little-endian bytes ------------------------------------------------

template <typename V>
std::vector<uint8_t> raw(const std::vector<V>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(V));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<uint8_t> all_codes16() {
  std::vector<uint16_t> v(65536);
  for (uint32_t i = 0; i < 65536; ++i) v[i] = static_cast<uint16_t>(i);
  return raw(v);
}

/// Every fp16 value and midpoint, every bf16 value and midpoint, +-inf, NaNs; padded with
/// random fp32 to 262144 elements.
std::vector<uint8_t> f32_inputs() {
  std::vector<float> v;
  for (uint32_t c = 0; c < 0x7c00; ++c) {  // positive finite fp16
    double a = npu::f16_to_f32(static_cast<uint16_t>(c));
    double b = c == 0x7bff ? 65536.0 : npu::f16_to_f32(static_cast<uint16_t>(c + 1));
    for (double x : {a, (a + b) / 2})
      v.push_back(static_cast<float>(x)), v.push_back(static_cast<float>(-x));
  }
  for (uint32_t c = 0; c < 0x7f80; ++c)  // positive finite bf16 and the midpoint above it
    for (uint32_t bits : {c << 16, (c << 16) | 0x8000u}) {
      v.push_back(npu::detail::bits_f32(bits));
      v.push_back(npu::detail::bits_f32(bits | 0x80000000u));
    }
  for (float x : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                  65520.0f, 65519.996f, 2147483520.0f, 2147483648.0f, -2147483648.0f, 32767.5f,
                  -32768.5f, 9.2233715e18f, -9.2233720e18f})
    v.push_back(x);
  std::mt19937 rng(1);
  while (v.size() < 262144) v.push_back(npu::detail::bits_f32(static_cast<uint32_t>(rng())));
  return raw(v);
}

std::vector<int64_t> int_edges(int bits) {
  std::vector<int64_t> v = {0,
                            1,
                            -1,
                            2,
                            -2,
                            127,
                            -128,
                            255,
                            256,
                            32767,
                            -32768,
                            32768,
                            -32769,
                            65535,
                            65536,
                            (1 << 24) - 1,
                            1 << 24,
                            (1 << 24) + 1,
                            (1 << 24) + 3,
                            -(1 << 24) - 1,
                            (1 << 25) + 2,
                            (1 << 25) + 6,
                            2147483647,
                            -2147483647 - 1};
  if (bits == 64)
    for (int64_t x : {int64_t{1} << 32, (int64_t{1} << 53) + 1, (int64_t{1} << 62) + 12345,
                      std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
                      -(int64_t{1} << 40) - 7})
      v.push_back(x);
  for (int64_t k = -1000; k <= 1000; ++k) v.push_back(k);
  std::mt19937_64 rng(2);
  while (v.size() < 65536) {
    uint64_t r = rng();
    int shift = static_cast<int>(r % static_cast<uint64_t>(bits));  // spread over all magnitudes
    int64_t x = static_cast<int64_t>(rng() >> (64 - bits)) >> shift;
    v.push_back(bits == 32 ? static_cast<int32_t>(x) : x);
  }
  return v;
}

/// Input bytes and the element count for source dtype t.
std::vector<uint8_t> inputs_for(DType t) {
  switch (t) {
    case DType::Float16:
    case DType::BFloat16:
    case DType::Int16:
      return all_codes16();
    case DType::Float32:
      return f32_inputs();
    case DType::Int8:
    case DType::UInt8: {
      std::vector<uint8_t> v(256);
      for (int i = 0; i < 256; ++i) v[i] = static_cast<uint8_t>(i);
      return v;
    }
    case DType::Int32: {
      auto e = int_edges(32);
      std::vector<int32_t> v(e.begin(), e.end());
      return raw(v);
    }
    case DType::Int64:
      return raw(int_edges(64));
    default:
      ADD_FAILURE() << "no input set for " << dtype_name(t);
      return {};
  }
}

/// The reference: one rounding from the exact source value.
void reference(DType from, const uint8_t* src, DType to, uint8_t* out, RoundMode m) {
  if (is_float(from)) {
    double x = npu::to_double(from, src);
    if (from == DType::Float32 && to == DType::Float16) {
      uint16_t h = npu::f32_to_f16(static_cast<float>(x), m);
      std::memcpy(out, &h, 2);
    } else if (from == DType::Float32 && to == DType::Float32) {  // rounds to an integral value
      float f = static_cast<float>(npu::round_integral(x, m));
      std::memcpy(out, &f, 4);
    } else if (from == DType::Float32 && to == DType::BFloat16) {
      uint16_t h = npu::f32_to_bf16(static_cast<float>(x), m);
      std::memcpy(out, &h, 2);
    } else {
      npu::from_double(to, x, out, m);
    }
  } else {
    int64_t v = 0;
    switch (from) {
      case DType::Int8:
        v = static_cast<int8_t>(src[0]);
        break;
      case DType::UInt8:
        v = src[0];
        break;
      case DType::Int16: {
        int16_t x;
        std::memcpy(&x, src, 2);
        v = x;
        break;
      }
      case DType::Int32: {
        int32_t x;
        std::memcpy(&x, src, 4);
        v = x;
        break;
      }
      case DType::Int64:
        std::memcpy(&v, src, 8);
        break;
      default:
        break;
    }
    npu::from_int64(to, v, out, m);
  }
}

bool same_bits(DType t, const uint8_t* a, const uint8_t* b) {
  if (std::memcmp(a, b, dtype_bytes(t)) == 0) return true;
  // NaN payloads are not specified beyond "quiet NaN, same sign" (numerics.h).
  if (!is_float(t)) return false;
  double x = npu::to_double(t, a), y = npu::to_double(t, b);
  return std::isnan(x) && std::isnan(y) && std::signbit(x) == std::signbit(y);
}

void check_cast(const CastRule& rule, const std::string& mode) {
  SCOPED_TRACE(fmt::format("cast {} -> {} {}", dtype_name(rule.from), dtype_name(rule.to), mode));
  auto in = inputs_for(rule.from);
  const int64_t fb = dtype_bytes(rule.from), tb = dtype_bytes(rule.to);
  const int64_t n = static_cast<int64_t>(in.size()) / fb;
  const int64_t chunk = std::min<int64_t>(n, 8192);
  ASSERT_EQ(n % chunk, 0);
  Device dev;
  Tensor S = Tensor::empty(dev, {n}, rule.from), D = full(dev, {n}, rule.to, 3);
  std::memcpy(S.data(), in.data(), in.size());
  compile(cast_func(rule.from, rule.to, n, chunk, mode)).launch(dev, {S, D}, {.threads = 1});
  const RoundMode m = parse_mode(mode);
  std::vector<uint8_t> want(tb);
  int bad = 0;
  std::string msg;
  for (int64_t i = 0; i < n; ++i) {
    reference(rule.from, in.data() + i * fb, rule.to, want.data(), m);
    const uint8_t* got = D.data() + i * tb;
    if (!same_bits(rule.to, got, want.data()) && bad++ < 5)
      msg += fmt::format("[{}] src {} got {} want {}; ", i,
                         npu::to_double(rule.from, in.data() + i * fb),
                         npu::to_double(rule.to, got), npu::to_double(rule.to, want.data()));
  }
  EXPECT_EQ(bad, 0) << msg;
}

TEST(CastOps, EveryA2PairAndModeExhaustive) {
  int pairs = 0, launches = 0;
  for (const CastRule& rule : default_target().casts) {
    ++pairs;
    for (const std::string& mode : rule.modes) {
      check_cast(rule, mode);
      ++launches;
    }
  }
  EXPECT_EQ(pairs,
            22);  // AscendC Cast's table 4 for A2, less int4b and int32 -> half (SetDeqScale)
  EXPECT_GE(launches, 80);
}

TEST(CastOps, StridedRegionWithTail) {
  // fp32 -> fp16 RINT of a [3, 32] region inside a [4, 48] buffer into a region of a [4, 64]
  // buffer: per-row conversion with pitches; elements outside keep their sentinels.
  Device dev;
  Tensor s = uniform(dev, {4, 48}, DType::Float32, 5, -70000, 70000),
         d = full(dev, {4, 64}, DType::Float16, 7);
  run_one_op(
      dev, {{"s", {4, 48}, DType::Float32}, {"d", {4, 64}, DType::Float16}}, {},
      [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
        T::tile::cast(ub[1].region({1, 16}, {3, 32}), ub[0].region({1, 8}, {3, 32}), "CAST_RINT");
      },
      {s, d});
  auto sv = s.to_vector();
  std::vector<double> want(4 * 64, 7.0);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 32; ++c)
      want[(1 + r) * 64 + 16 + c] = q(DType::Float16, sv[(1 + r) * 48 + 8 + c]);
  EXPECT_EQ(diff_exact(d.to_vector(), want), "");
}

}  // namespace
}  // namespace tl
