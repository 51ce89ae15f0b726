// Batched byte movers of the fractal-layout copies (move_runs.h says what each does).
#include "move_runs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "tl/npu/cube_math.h"

namespace tl::npu {

namespace {

template <typename E>
void move_typed(const uint8_t* src, uint8_t* dst, const int64_t* sof, const int64_t* dof,
                int64_t n) {
  const E* s = reinterpret_cast<const E*>(src);
  E* d = reinterpret_cast<E*>(dst);
  if (sof)
    for (int64_t c = 0; c < n; ++c) d[c] = s[sof[c]];
  else
    for (int64_t c = 0; c < n; ++c) d[dof[c]] = s[c];
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) void activate_avx512(float* x, int64_t n, bool relu,
                                                        bool saturate, float mx) {
  const __m512 zero = _mm512_setzero_ps(), lo = _mm512_set1_ps(-mx), hi = _mm512_set1_ps(mx);
  int64_t i = 0;
  for (; i < n; i += 16) {
    const auto m = static_cast<__mmask16>(n - i >= 16 ? 0xFFFF : (1u << (n - i)) - 1u);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    // relu: +0 where not (x > 0) and not NaN (-0 included).
    if (relu) v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_NGT_UQ) & ~nan, zero);
    // The zero-masked forms: GCC 12 warns on the plain ones' undefined pass-through operand.
    if (saturate)
      v = _mm512_mask_mov_ps(_mm512_maskz_min_ps(0xFFFF, _mm512_maskz_max_ps(0xFFFF, v, lo), hi),
                             nan, zero);
    _mm512_mask_storeu_ps(x + i, m, v);
  }
}
#endif

}  // namespace

void fixpipe_activate(float* x, int64_t n, bool relu, bool saturate, float mx) {
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512) return activate_avx512(x, n, relu, saturate, mx);
#endif
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    if (relu) v = v > 0 ? v : (std::isnan(v) ? v : 0.0f);
    if (saturate) v = std::isnan(v) ? 0.0f : std::clamp(v, -mx, mx);
    x[i] = v;
  }
}

void move_elements(int64_t es, const uint8_t* src, uint8_t* dst, const int64_t* sof,
                   const int64_t* dof, int64_t n) {
  if (es == 1)
    move_typed<uint8_t>(src, dst, sof, dof, n);
  else if (es == 2)
    move_typed<uint16_t>(src, dst, sof, dof, n);
  else
    move_typed<uint32_t>(src, dst, sof, dof, n);
}

int64_t run_length(const int64_t* t, int64_t n) {
  // L is a power of two: a mask, not the division `c % L` (a variable divisor), which made this
  // scan of the fixpipe's column tables about 2 % of FlashAttention's samples.
  for (int64_t L = 64; L > 1; L /= 2) {
    bool ok = true;
    const int64_t m = L - 1;
    for (int64_t c = 0; c < n && ok; ++c) ok = t[c] == t[c & ~m] + (c & m);
    if (ok) return L;
  }
  return 1;
}

void move_runs(int64_t es, const uint8_t* src, uint8_t* dst, const int64_t* sof, const int64_t* dof,
               int64_t n, int64_t L) {
  if (L <= 1) return move_elements(es, src, dst, sof, dof, n);
  const int64_t bytes = L * es, whole = n / L * L;
  // The fractal runs (32 bytes in L1, 64 in L0C) as copies of a constant size (inlined), not a
  // memcpy call each.
  auto runs = [&](auto size) {
    for (int64_t c = 0; c < whole; c += L) {
      if (sof)
        std::memcpy(dst + c * es, src + sof[c] * es, size);
      else
        std::memcpy(dst + dof[c] * es, src + c * es, size);
    }
  };
  if (bytes == 64)
    runs(std::integral_constant<size_t, 64>{});
  else if (bytes == 32)
    runs(std::integral_constant<size_t, 32>{});
  else
    runs(static_cast<size_t>(bytes));
  if (whole < n) {
    const auto rest = static_cast<size_t>((n - whole) * es);
    if (sof)
      std::memcpy(dst + whole * es, src + sof[whole] * es, rest);
    else
      std::memcpy(dst + dof[whole] * es, src + whole * es, rest);
  }
}

Blocks block_kind(const int64_t* sr, const int64_t* sc, const int64_t* dr, const int64_t* dc,
                  int64_t R, int64_t C) {
  if (R < 16 || C < 16) return Blocks::None;
  // The step of each table inside its blocks: 1 or 16, the same in every block, else 0.
  auto step = [](const int64_t* t, int64_t n) -> int64_t {
    const int64_t d = t[1] - t[0];
    if (d != 1 && d != 16) return 0;
    for (int64_t i = 0; i < n / 16 * 16; ++i)
      if (t[i] != t[i - i % 16] + (i % 16) * d) return 0;
    return d;
  };
  const int64_t a = step(sr, R), b = step(sc, C), x = step(dr, R), y = step(dc, C);
  if (!a || !b || !x || !y || a == b || x == y) return Blocks::None;
  return a == x ? Blocks::Copy : Blocks::Transpose;
}

void move_blocks(Blocks kind, const uint16_t* s, uint16_t* d, const int64_t* sr, const int64_t* sc,
                 const int64_t* dr, const int64_t* dc, int64_t R, int64_t C) {
  for (int64_t r = 0; r + 16 <= R; r += 16)
    for (int64_t c = 0; c + 16 <= C; c += 16) {
      if (kind == Blocks::Copy)
        std::memcpy(d + dr[r] + dc[c], s + sr[r] + sc[c], 512);
      else
        transpose_fractal16(s + sr[r] + sc[c], d + dr[r] + dc[c]);
    }
}

void store_streaming(uint8_t* dst, const uint8_t* src, size_t n) {
#if defined(__x86_64__)
  // Up to the first 16-byte boundary of dst with memcpy, whole 64-byte groups with SSE2
  // streaming stores (baseline x86-64: no CPU check), the tail with memcpy.
  const size_t head = std::min(n, (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16);
  std::memcpy(dst, src, head);
  size_t i = head;
  for (; i + 64 <= n; i += 64) {
    const auto* s = reinterpret_cast<const __m128i*>(src + i);
    auto* d = reinterpret_cast<__m128i*>(dst + i);
    const __m128i a = _mm_loadu_si128(s), b = _mm_loadu_si128(s + 1), c = _mm_loadu_si128(s + 2),
                  e = _mm_loadu_si128(s + 3);
    _mm_stream_si128(d, a);
    _mm_stream_si128(d + 1, b);
    _mm_stream_si128(d + 2, c);
    _mm_stream_si128(d + 3, e);
  }
  std::memcpy(dst + i, src + i, n - i);
  _mm_sfence();
#else
  std::memmove(dst, src, n);
#endif
}

}  // namespace tl::npu
