// The fp64 reference of FlashAttention forward (tests only, never the library): for every batch
// b, head h and query i, o = sum_j softmax_j(scale q_i . k_j) v_j over the keys j (j <= i when
// causal) and lse = log(sum_j exp(scale q_i . k_j)). Tensors are flat vectors in `bshd`
// ([B, S, H, D]) or BHSD ([B, H, S, D]) order; o comes back in the same order, lse as [B, H, S].
// A NaN in a query, key or value reaches every output it feeds, as in the exact formula.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace opstest::ref {

struct FlashAttentionRef {
  std::vector<double> o, lse;
};

inline FlashAttentionRef flash_attention(const std::vector<double>& q, const std::vector<double>& k,
                                         const std::vector<double>& v, int64_t B, int64_t S,
                                         int64_t H, int64_t D, bool bshd, bool causal,
                                         double scale) {
  auto idx = [&](int64_t b, int64_t s, int64_t h) {  // the offset of row (b, s, h)
    return bshd ? ((b * S + s) * H + h) * D : ((b * H + h) * S + s) * D;
  };
  FlashAttentionRef r{std::vector<double>(q.size()), std::vector<double>(B * H * S)};
  std::vector<double> sc(S), acc(D);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t i = 0; i < S; ++i) {
        const int64_t n = causal ? i + 1 : S;
        double mx = -std::numeric_limits<double>::infinity();
        bool nan = false;
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += q[idx(b, i, h) + d] * k[idx(b, j, h) + d];
          sc[j] = scale * dot;
          nan = nan || std::isnan(sc[j]);
          mx = std::max(mx, sc[j]);
        }
        // Each exp once (it was taken D times per key), then o's row accumulated key by key:
        // every acc[d] still sums its terms in ascending j, so the values are unchanged.
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += (sc[j] = std::exp(sc[j] - mx));
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < n; ++j) {
          const double* vj = &v[idx(b, j, h)];
          for (int64_t d = 0; d < D; ++d) acc[d] += sc[j] * vj[d];
        }
        for (int64_t d = 0; d < D; ++d) r.o[idx(b, i, h) + d] = nan ? std::nan("") : acc[d] / sum;
        r.lse[(b * H + h) * S + i] = nan ? std::nan("") : mx + std::log(sum);
      }
    }
  }
  return r;
}

}  // namespace opstest::ref
