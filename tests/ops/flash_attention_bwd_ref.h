// The fp64 reference of FlashAttention backward (tests only, never the library): for every
// batch b and head h, with P = softmax(scale Q K^T [causal: keys j <= i]) computed exactly,
// dV = P^T dO, dP = dO V^T, D_i = sum_j P_ij dP_ij (= rowsum(dO * O) for the exact O),
// dS = P * (dP - D), dQ = scale dS K, dK = scale dS^T Q. Tensors are flat vectors in `bshd`
// ([B, S, H, D]) or BHSD ([B, H, S, D]) order, and the gradients come back in the same order.
//
// The five products run through OpenBLAS cblas_dgemm per (b, h) head (fp64; only the order of
// each sum changes, as in flash_attention_ref.h, whose dgemm helper this uses).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/flash_attention_ref.h"

namespace opstest::ref {

struct FlashAttentionGradsRef {
  std::vector<double> dq, dk, dv;
};

inline FlashAttentionGradsRef flash_attention_backward(const std::vector<double>& dout,
                                                       const std::vector<double>& q,
                                                       const std::vector<double>& k,
                                                       const std::vector<double>& v, int64_t B,
                                                       int64_t S, int64_t H, int64_t D, bool bshd,
                                                       bool causal, double scale) {
  FlashAttentionGradsRef r{std::vector<double>(q.size()), std::vector<double>(q.size()),
                           std::vector<double>(q.size())};
  const int64_t ld = bshd ? H * D : D;  // the stride between one head's rows
  std::vector<double> p(S * S), ds(S * S);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t base = fa_detail::head_base(b, h, S, H, D, bshd);
      const double *qh = q.data() + base, *kh = k.data() + base, *vh = v.data() + base,
                   *doh = dout.data() + base;
      fa_detail::dgemm(false, true, S, S, D, scale, qh, ld, kh, ld, false, p.data(), S);  // scores
      fa_detail::dgemm(false, true, S, S, D, 1.0, doh, ld, vh, ld, false, ds.data(), S);  // dP
      for (int64_t i = 0; i < S; ++i) {
        double *pr = p.data() + i * S, *dr = ds.data() + i * S;
        const int64_t n = causal ? i + 1 : S;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < n; ++j)
          if (!(pr[j] <= mx)) mx = std::isnan(pr[j]) ? mx : pr[j];
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += std::exp(pr[j] - mx);
        double di = 0;
        for (int64_t j = 0; j < n; ++j) {
          pr[j] = std::exp(pr[j] - mx) / sum;
          di += pr[j] * dr[j];
        }
        for (int64_t j = 0; j < n; ++j) dr[j] = pr[j] * (dr[j] - di);
        // Masked keys are zeros of P and dS that the products below multiply like any other
        // entry (as the plain sums over all S keys did).
        std::fill(pr + n, pr + S, 0.0);
        std::fill(dr + n, dr + S, 0.0);
      }
      fa_detail::dgemm(false, false, S, D, S, scale, ds.data(), S, kh, ld, false,
                       r.dq.data() + base, ld);  // dQ = scale dS K
      fa_detail::dgemm(true, false, S, D, S, scale, ds.data(), S, qh, ld, false, r.dk.data() + base,
                       ld);  // dK = scale dS^T Q
      fa_detail::dgemm(true, false, S, D, S, 1.0, p.data(), S, doh, ld, false, r.dv.data() + base,
                       ld);  // dV = P^T dO
    }
  }
  return r;
}

}  // namespace opstest::ref
