// Element types of tl-ascend: the dtypes a tensor, a buffer or a scalar expression can have,
// with their sizes, classes and names. Names are the TileLang spellings ("float16",
// "bfloat16", "float8_e4m3", ...) so printed IR reads like a TileLang script.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tl {

enum class DType : uint8_t {
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float8E4M3,
  Float8E5M2,
  Float64,  // host-side scalars and constants only; no Ascend unit computes in fp64
};

inline constexpr int kNumDTypes = 15;

/// Size of one element in bits (bool counts as 8: it is stored one per byte).
int dtype_bits(DType t);
inline int dtype_bytes(DType t) {
  return dtype_bits(t) / 8;
}
bool is_float(DType t);
bool is_int(DType t);  // signed or unsigned integer (not bool)
bool is_signed_int(DType t);
bool is_unsigned_int(DType t);
inline bool is_bool(DType t) {
  return t == DType::Bool;
}

/// TileLang name: "float16", "int32", ...
std::string_view dtype_name(DType t);
/// Inverse of dtype_name; also accepts the short aliases "f16", "bf16", "f32", "fp8_e4m3", ...
std::optional<DType> parse_dtype(std::string_view name);

// Short names for the DSL: `T::alloc_ub("x", {64, 128}, f16)`.
inline constexpr DType boolean = DType::Bool;
inline constexpr DType i8 = DType::Int8;
inline constexpr DType i16 = DType::Int16;
inline constexpr DType i32 = DType::Int32;
inline constexpr DType i64 = DType::Int64;
inline constexpr DType u8 = DType::UInt8;
inline constexpr DType u16 = DType::UInt16;
inline constexpr DType u32 = DType::UInt32;
inline constexpr DType u64 = DType::UInt64;
inline constexpr DType f16 = DType::Float16;
inline constexpr DType bf16 = DType::BFloat16;
inline constexpr DType f32 = DType::Float32;
inline constexpr DType f8e4m3 = DType::Float8E4M3;
inline constexpr DType f8e5m2 = DType::Float8E5M2;
inline constexpr DType f64 = DType::Float64;

}  // namespace tl
