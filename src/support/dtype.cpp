// Sizes, classes and names of dtypes.
#include "tl/dtype.h"

#include <array>

namespace tl {
namespace {
struct DTypeInfo {
  std::string_view name;
  int bits;
  char cls;  // 'b' bool, 'i' signed, 'u' unsigned, 'f' float
};
constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {"bool", 8, 'b'},
    {"int8", 8, 'i'},
    {"int16", 16, 'i'},
    {"int32", 32, 'i'},
    {"int64", 64, 'i'},
    {"uint8", 8, 'u'},
    {"uint16", 16, 'u'},
    {"uint32", 32, 'u'},
    {"uint64", 64, 'u'},
    {"float16", 16, 'f'},
    {"bfloat16", 16, 'f'},
    {"float32", 32, 'f'},
    {"float8_e4m3", 8, 'f'},
    {"float8_e5m2", 8, 'f'},
    {"float64", 64, 'f'},
}};
const DTypeInfo& info(DType t) {
  return kInfo[static_cast<size_t>(t)];
}
}  // namespace

int dtype_bits(DType t) {
  return info(t).bits;
}
bool is_float(DType t) {
  return info(t).cls == 'f';
}
bool is_int(DType t) {
  return info(t).cls == 'i' || info(t).cls == 'u';
}
bool is_signed_int(DType t) {
  return info(t).cls == 'i';
}
bool is_unsigned_int(DType t) {
  return info(t).cls == 'u';
}
std::string_view dtype_name(DType t) {
  return info(t).name;
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (size_t i = 0; i < kInfo.size(); ++i)
    if (kInfo[i].name == name) return static_cast<DType>(i);
  struct Alias {
    std::string_view alias;
    DType t;
  };
  static constexpr Alias kAliases[] = {
      {"f16", DType::Float16},
      {"half", DType::Float16},
      {"bf16", DType::BFloat16},
      {"f32", DType::Float32},
      {"float", DType::Float32},
      {"f64", DType::Float64},
      {"i8", DType::Int8},
      {"i16", DType::Int16},
      {"i32", DType::Int32},
      {"i64", DType::Int64},
      {"u8", DType::UInt8},
      {"u16", DType::UInt16},
      {"u32", DType::UInt32},
      {"u64", DType::UInt64},
      {"fp8_e4m3", DType::Float8E4M3},
      {"fp8_e5m2", DType::Float8E5M2},
      {"float8_e4m3fn", DType::Float8E4M3},
  };
  for (const auto& a : kAliases)
    if (a.alias == name) return a.t;
  return std::nullopt;
}

}  // namespace tl
