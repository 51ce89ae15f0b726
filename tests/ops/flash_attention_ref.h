// The fp64 reference of FlashAttention forward (tests only, never the library): for every batch
// b, head h and query i, o = sum_j softmax_j(scale q_i . k_j) v_j over the keys j (j <= i when
// causal) and lse = log(sum_j exp(scale q_i . k_j)). Tensors are flat vectors in `bshd`
// ([B, S, H, D]) or BHSD ([B, H, S, D]) order; o comes back in the same order, lse as [B, H, S].
// A NaN in a query, key or value reaches every output it feeds, as in the exact formula.
//
// Both products run through OpenBLAS cblas_dgemm per (b, h) head, a block of query rows at a
// time (a plain loop took minutes at the level-2 shape B4 S4096 H16 D128; docs/ops.md, "Test
// regime"). Still fp64 throughout: BLAS only changes the order in which each dot product and
// each row of P V is summed, a relative change of order 1e-16 * sqrt(n) against the tests'
// tolerances of 1e-3 and more (tests/ops/reference_blas_test.cpp checks the loop form).
#pragma once
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace opstest::ref {

struct FlashAttentionRef {
  std::vector<double> o, lse;
};

namespace fa_detail {
/// C[m, n] = alpha A op(B) (+ C when accumulate), row-major with leading dimensions; a no-op
/// fill when the inner dimension is empty (BLAS rejects a leading dimension of 0).
inline void dgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                  int64_t lda, const double* b, int64_t ldb, bool accumulate, double* c,
                  int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0);
    return;
  }
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), accumulate ? 1.0 : 0.0, c,
              static_cast<int>(ldc));
}
/// The offset of head (b, h)'s first row and the stride between its rows, in either layout.
inline int64_t head_base(int64_t b, int64_t h, int64_t S, int64_t H, int64_t D, bool bshd) {
  return bshd ? (b * S * H + h) * D : (b * H + h) * S * D;
}
}  // namespace fa_detail

inline FlashAttentionRef flash_attention(const std::vector<double>& q, const std::vector<double>& k,
                                         const std::vector<double>& v, int64_t B, int64_t S,
                                         int64_t H, int64_t D, bool bshd, bool causal,
                                         double scale) {
  FlashAttentionRef r{std::vector<double>(q.size()), std::vector<double>(B * H * S)};
  // Query rows per block: the block's scores are kRows x S doubles (2 MB at S = 4096).
  constexpr int64_t kRows = 64;
  const int64_t ld = bshd ? H * D : D;  // the stride between one head's rows
  std::vector<double> p(static_cast<size_t>(std::min(kRows, S) * S));
  std::vector<uint8_t> nan(kRows);  // per row of the block: a NaN score, and sum_j exp(s_j - max)
  std::vector<double> rsum(kRows);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t base = fa_detail::head_base(b, h, S, H, D, bshd);
      const double *qh = q.data() + base, *kh = k.data() + base, *vh = v.data() + base;
      double* oh = r.o.data() + base;
      double* lse = r.lse.data() + (b * H + h) * S;
      for (int64_t i0 = 0; i0 < S; i0 += kRows) {
        const int64_t rows = std::min(kRows, S - i0);
        // Keys the block's rows see: all of them, or [0, i0 + rows) when causal; keys below
        // `full` are seen by every row of the block.
        const int64_t keys = causal ? i0 + rows : S, full = causal ? i0 : S;
        fa_detail::dgemm(false, true, rows, keys, D, scale, qh + i0 * ld, ld, kh, ld, false,
                         p.data(), keys);
        for (int64_t r0 = 0; r0 < rows; ++r0) {
          double* pr = p.data() + r0 * keys;
          const int64_t n = causal ? i0 + r0 + 1 : S;
          double mx = -std::numeric_limits<double>::infinity();
          bool row_nan = false;
          for (int64_t j = 0; j < n; ++j) {
            row_nan = row_nan || std::isnan(pr[j]);
            mx = std::max(mx, pr[j]);
          }
          double sum = 0;
          for (int64_t j = 0; j < n; ++j) sum += (pr[j] = std::exp(pr[j] - mx));
          nan[r0] = row_nan;
          rsum[r0] = sum;
          lse[i0 + r0] = row_nan ? std::nan("") : mx + std::log(sum);
        }
        // o rows = P[:, :full] V[:full] by BLAS; the keys from `full` to each row's own last
        // key by a loop, so the value of a key a row does not see is never read (a masked zero
        // times a NaN or inf value would be NaN).
        fa_detail::dgemm(false, false, rows, D, full, 1.0, p.data(), keys, vh, ld, false,
                         oh + i0 * ld, ld);
        for (int64_t r0 = 0; r0 < rows; ++r0) {
          const double* pr = p.data() + r0 * keys;
          double* orow = oh + (i0 + r0) * ld;
          const int64_t n = causal ? i0 + r0 + 1 : S;
          for (int64_t j = full; j < n; ++j)
            for (int64_t d = 0; d < D; ++d) orow[d] += pr[j] * vh[j * ld + d];
          for (int64_t d = 0; d < D; ++d) orow[d] = nan[r0] ? std::nan("") : orow[d] / rsum[r0];
        }
      }
    }
  }
  return r;
}

}  // namespace opstest::ref
