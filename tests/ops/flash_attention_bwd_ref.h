// The fp64 reference of FlashAttention backward (tests only, never the library): for every
// batch b and head h, with P = softmax(scale Q K^T [causal: keys j <= i]) computed exactly,
// dV = P^T dO, dP = dO V^T, D_i = sum_j P_ij dP_ij (= rowsum(dO * O) for the exact O),
// dS = P * (dP - D), dQ = scale dS K, dK = scale dS^T Q. Tensors are flat vectors in `bshd`
// ([B, S, H, D]) or BHSD ([B, H, S, D]) order, and the gradients come back in the same order.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

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
  auto idx = [&](int64_t b, int64_t s, int64_t h) {  // the offset of row (b, s, h)
    return bshd ? ((b * S + s) * H + h) * D : ((b * H + h) * S + s) * D;
  };
  FlashAttentionGradsRef r{std::vector<double>(q.size()), std::vector<double>(q.size()),
                           std::vector<double>(q.size())};
  std::vector<double> p(S * S), ds(S * S);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t i = 0; i < S; ++i) {
        const int64_t n = causal ? i + 1 : S;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += q[idx(b, i, h) + d] * k[idx(b, j, h) + d];
          p[i * S + j] = scale * dot;
          if (!(p[i * S + j] <= mx)) mx = std::isnan(p[i * S + j]) ? mx : p[i * S + j];
        }
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += std::exp(p[i * S + j] - mx);
        double di = 0;
        for (int64_t j = 0; j < S; ++j) {
          if (j >= n) {
            p[i * S + j] = ds[i * S + j] = 0;
            continue;
          }
          p[i * S + j] = std::exp(p[i * S + j] - mx) / sum;
          double dp = 0;
          for (int64_t d = 0; d < D; ++d) dp += dout[idx(b, i, h) + d] * v[idx(b, j, h) + d];
          ds[i * S + j] = dp;
          di += p[i * S + j] * dp;
        }
        for (int64_t j = 0; j < n; ++j) ds[i * S + j] = p[i * S + j] * (ds[i * S + j] - di);
      }
      for (int64_t i = 0; i < S; ++i) {
        for (int64_t d = 0; d < D; ++d) {
          double dq = 0, dk = 0, dv = 0;
          for (int64_t j = 0; j < S; ++j) {
            dq += ds[i * S + j] * k[idx(b, j, h) + d];
            dk += ds[j * S + i] * q[idx(b, j, h) + d];
            dv += p[j * S + i] * dout[idx(b, j, h) + d];
          }
          r.dq[idx(b, i, h) + d] = scale * dq;
          r.dk[idx(b, i, h) + d] = scale * dk;
          r.dv[idx(b, i, h) + d] = dv;
        }
      }
    }
  }
  return r;
}

}  // namespace opstest::ref
