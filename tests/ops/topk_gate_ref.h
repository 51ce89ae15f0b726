// The fp64 reference of the MoE top-k gate for tests/ops (references live under tests/ only;
// the library never calls them). Scores in fp64; the selection key is the fp32 sum
// float(score) + bias (the kernel adds in fp32, and an fp64 sum could order two fp32-equal keys
// differently); a stable descending order, so equal keys keep the smaller expert first.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace opstest::ref {

/// scoring: 0 none, 1 sigmoid, 2 softmax over the E scores of a token.
inline std::vector<double> gate_scores(const std::vector<double>& z, int64_t T, int64_t E,
                                       int scoring) {
  std::vector<double> s(z);
  for (int64_t t = 0; t < T; ++t) {
    double* r = s.data() + t * E;
    if (scoring == 1) {
      for (int64_t e = 0; e < E; ++e) r[e] = 1.0 / (1.0 + std::exp(-r[e]));
    } else if (scoring == 2) {
      double m = -INFINITY, sum = 0;
      for (int64_t e = 0; e < E; ++e) m = std::max(m, r[e]);
      for (int64_t e = 0; e < E; ++e) sum += (r[e] = std::exp(r[e] - m));
      for (int64_t e = 0; e < E; ++e) r[e] /= sum;
    }
  }
  return s;
}

/// The selection key of every (token, expert): fp32(score) + bias in fp32.
inline std::vector<double> gate_keys(const std::vector<double>& s, const std::vector<double>* bias,
                                     int64_t T, int64_t E) {
  std::vector<double> key(T * E);
  for (int64_t i = 0; i < T * E; ++i)
    key[i] = static_cast<float>(static_cast<float>(s[i]) +
                                (bias ? static_cast<float>((*bias)[i % E]) : 0.0f));
  return key;
}

/// The k experts of each token by descending key, ties to the smaller index.
inline std::vector<int64_t> gate_topk(const std::vector<double>& key, int64_t T, int64_t E,
                                      int64_t k) {
  std::vector<int64_t> out(T * k), order(E);
  for (int64_t t = 0; t < T; ++t) {
    std::iota(order.begin(), order.end(), 0);
    const double* r = key.data() + t * E;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const bool an = std::isnan(r[a]), bn = std::isnan(r[b]);
      if (an != bn) return an;  // the chip's sort puts NaN first
      return !an && r[a] > r[b];
    });
    std::copy(order.begin(), order.begin() + k, out.begin() + t * k);
  }
  return out;
}

/// The weights for chosen experts `idx`: the unbiased scores, normalised by 1e-20 + their sum
/// on request, times scale.
inline std::vector<double> gate_weights(const std::vector<double>& s,
                                        const std::vector<int64_t>& idx, int64_t T, int64_t E,
                                        int64_t k, bool normalize, double scale) {
  std::vector<double> w(T * k);
  for (int64_t t = 0; t < T; ++t) {
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += (w[t * k + j] = s[t * E + idx[t * k + j]]);
    for (int64_t j = 0; j < k; ++j)
      w[t * k + j] = w[t * k + j] / (normalize ? 1e-20 + sum : 1.0) * scale;
  }
  return w;
}

/// The gate's backward in fp64 (docs/ops.md "MoE top-k gate", backward): dz [T, E] for the
/// weights' gradient dw [T, k], the chosen experts idx and the scores s (gate_scores); `mag`,
/// when given, gets the same sums over |terms| (the scale of each element's rounding error).
inline std::vector<double> gate_backward(const std::vector<double>& dw,
                                         const std::vector<int64_t>& idx,
                                         const std::vector<double>& s, int64_t T, int64_t E,
                                         int64_t k, int scoring, bool normalize, double scale,
                                         std::vector<double>* mag = nullptr) {
  std::vector<double> dz(T * E, 0.0), ds(E), da(E);
  if (mag) mag->assign(T * E, 0.0);
  for (int64_t t = 0; t < T; ++t) {
    const double* st = s.data() + t * E;
    std::fill(ds.begin(), ds.end(), 0.0);
    std::fill(da.begin(), da.end(), 0.0);
    double D = 1e-20, dot = 0, adot = 0;
    for (int64_t j = 0; j < k; ++j) {
      const double w = st[idx[t * k + j]], g = scale * dw[t * k + j];
      D += w;
      dot += g * w;
      adot += std::abs(g * w);
    }
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = idx[t * k + j];
      const double g = scale * dw[t * k + j];
      ds[e] += normalize ? (g - dot / D) / D : g;
      da[e] += normalize ? (std::abs(g) + adot / std::abs(D)) / std::abs(D) : std::abs(g);
    }
    double sum = 0, asum = 0;
    for (int64_t e = 0; e < E; ++e) sum += ds[e] * st[e], asum += std::abs(ds[e] * st[e]);
    for (int64_t e = 0; e < E; ++e) {
      double v = ds[e], a = da[e];
      if (scoring == 1) {
        v *= st[e] * (1 - st[e]);
        a *= st[e] * (1 - st[e]);
      } else if (scoring == 2) {
        v = st[e] * (ds[e] - sum);
        a = st[e] * (da[e] + asum);
      }
      dz[t * E + e] = v;
      if (mag) (*mag)[t * E + e] = a;
    }
  }
  return dz;
}

}  // namespace opstest::ref
