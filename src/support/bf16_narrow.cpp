// fp32 -> bfloat16 (RINT, NaN quieted) with AVX512-BF16's VCVTNEPS2BF16, for the bulk
// conversion (numerics.cpp convert) on hosts that have it. The instruction rounds to nearest
// even and quiets a NaN by keeping its upper 16 bits with the quiet bit set, as the model's
// f32_to_bf16 does, but treats subnormal inputs as zero (Intel SDM, VCVTNEPS2BF16); a group of 16
// lanes with any zero exponent field is converted again by the AVX-512F path's integer rounding
// (x + 0x7fff + lsb, then the upper half; a NaN's upper half with the quiet bit). Each result
// equals f32_to_bf16's (Numerics.Bf16NarrowingMatchesScalar: every exponent-0 and exponent-255
// pattern and a stride over the rest; all 2^32 inputs at TL_TEST_LEVEL=2). In softmax 8192x4096
// bf16 the narrowing was 10.6 % of the host CPU time (docs/virtual_npu.md, "Host speed", branch
// hostsm).
#include <cstdint>

#include "tl/npu/numerics.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tl::npu {

bool host_has_avx512bf16();
bool host_has_avx512bf16() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
  return has;
#else
  return false;
#endif
}

void f32_to_bf16_avx512bf16(const float* src, uint16_t* dst, int64_t n);
#if defined(__x86_64__)
void f32_to_bf16_avx512(const float* src, uint16_t* dst, int64_t n);  // numerics.cpp

__attribute__((target("avx512f,avx512bf16"))) void f32_to_bf16_avx512bf16(const float* src,
                                                                          uint16_t* dst,
                                                                          int64_t n) {
  const __m512i exp_mask = _mm512_set1_epi32(0x7f800000);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(src + i);
    if (_mm512_testn_epi32_mask(_mm512_castps_si512(v), exp_mask)) {
      f32_to_bf16_avx512(src + i, dst + i, 16);  // zeros or subnormals: the integer rounding
      continue;
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), (__m256i)_mm512_cvtneps_pbh(v));
  }
  for (; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}
#else
void f32_to_bf16_avx512bf16(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}
#endif

}  // namespace tl::npu
