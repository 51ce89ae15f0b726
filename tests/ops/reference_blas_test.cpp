// The BLAS fp64 references (tests/ops/flash_attention_ref.h, flash_attention_bwd_ref.h,
// gemm_ref.h and tests/common/references.cpp's matmul and attention) against the textbook loops
// they replaced, kept here as the definition: same formula, every sum in ascending index order.
// BLAS only reorders fp64 sums, so the two agree to about 1e-16 * sqrt(n) relative, far inside
// the op tests' tolerances (1e-3 and more); the NaN pattern must be the same too, including a
// NaN value of a key that causal masking hides from the earlier queries. Shapes: S = 1, 7, 33,
// 100 (not a multiple of the reference's 64-row blocks) and 273, both layouts, causal or not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "common/references.h"
#include "ops/flash_attention_bwd_ref.h"
#include "ops/flash_attention_ref.h"
#include "ops/gemm_ref.h"

namespace {

using Vec = std::vector<double>;

Vec randn(size_t n, unsigned seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> d;
  Vec v(n);
  for (auto& x : v) x = d(g);
  return v;
}

struct Shape {
  int64_t B, S, H, D;
  bool bshd, causal;
};

int64_t row(const Shape& c, int64_t b, int64_t s, int64_t h) {
  return c.bshd ? ((b * c.S + s) * c.H + h) * c.D : ((b * c.H + h) * c.S + s) * c.D;
}

/// The loop form of FlashAttention forward (o, then lse at the end).
Vec loop_forward(const Vec& q, const Vec& k, const Vec& v, const Shape& c, double scale) {
  Vec o(q.size()), lse(c.B * c.H * c.S), sc(c.S);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.H; ++h)
      for (int64_t i = 0; i < c.S; ++i) {
        const int64_t n = c.causal ? i + 1 : c.S;
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        bool nan = false;
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < c.D; ++d) dot += q[row(c, b, i, h) + d] * k[row(c, b, j, h) + d];
          sc[j] = scale * dot;
          nan = nan || std::isnan(sc[j]);
          mx = std::max(mx, sc[j]);
        }
        for (int64_t j = 0; j < n; ++j) sum += (sc[j] = std::exp(sc[j] - mx));
        for (int64_t d = 0; d < c.D; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < n; ++j) acc += sc[j] * v[row(c, b, j, h) + d];
          o[row(c, b, i, h) + d] = nan ? std::nan("") : acc / sum;
        }
        lse[(b * c.H + h) * c.S + i] = nan ? std::nan("") : mx + std::log(sum);
      }
  o.insert(o.end(), lse.begin(), lse.end());
  return o;
}

/// The loop form of FlashAttention backward: dq, dk, dv concatenated.
Vec loop_backward(const Vec& dout, const Vec& q, const Vec& k, const Vec& v, const Shape& c,
                  double scale) {
  const int64_t S = c.S;
  Vec dq(q.size()), dk(q.size()), dv(q.size()), p(S * S), ds(S * S);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.H; ++h) {
      for (int64_t i = 0; i < S; ++i) {
        const int64_t n = c.causal ? i + 1 : S;
        double mx = -std::numeric_limits<double>::infinity(), sum = 0, di = 0;
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0, dp = 0;
          for (int64_t d = 0; d < c.D; ++d) {
            dot += q[row(c, b, i, h) + d] * k[row(c, b, j, h) + d];
            dp += dout[row(c, b, i, h) + d] * v[row(c, b, j, h) + d];
          }
          p[i * S + j] = j < n ? scale * dot : 0;
          ds[i * S + j] = j < n ? dp : 0;
          if (j < n && !(p[i * S + j] <= mx)) mx = std::isnan(p[i * S + j]) ? mx : p[i * S + j];
        }
        for (int64_t j = 0; j < n; ++j) sum += std::exp(p[i * S + j] - mx);
        for (int64_t j = 0; j < n; ++j)
          di += (p[i * S + j] = std::exp(p[i * S + j] - mx) / sum) * ds[i * S + j];
        for (int64_t j = 0; j < n; ++j) ds[i * S + j] = p[i * S + j] * (ds[i * S + j] - di);
      }
      for (int64_t i = 0; i < S; ++i)
        for (int64_t d = 0; d < c.D; ++d) {
          double a = 0, e = 0, f = 0;
          for (int64_t j = 0; j < S; ++j) {
            a += ds[i * S + j] * k[row(c, b, j, h) + d];
            e += ds[j * S + i] * q[row(c, b, j, h) + d];
            f += p[j * S + i] * dout[row(c, b, j, h) + d];
          }
          dq[row(c, b, i, h) + d] = scale * a;
          dk[row(c, b, i, h) + d] = scale * e;
          dv[row(c, b, i, h) + d] = f;
        }
    }
  dq.insert(dq.end(), dk.begin(), dk.end());
  dq.insert(dq.end(), dv.begin(), dv.end());
  return dq;
}

/// The largest |got - want| / (1 + |want|), or infinity when the NaN patterns differ.
double max_rel(const Vec& got, const Vec& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) != std::isnan(want[i])) return std::numeric_limits<double>::infinity();
    if (!std::isnan(got[i]))
      worst = std::max(worst, std::fabs(got[i] - want[i]) / (1 + std::fabs(want[i])));
  }
  return worst;
}

Vec concat(Vec a, const Vec& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<Shape> shapes() {
  std::vector<Shape> v;
  for (int64_t S : {1, 7, 33, 100, 273})
    for (bool bshd : {true, false})
      for (bool causal : {false, true}) v.push_back({2, S, 3, S == 273 ? 128 : 64, bshd, causal});
  return v;
}

constexpr double kAgree = 1e-13;  // the reorder's size; the op tests allow 1e-3 and more

TEST(ReferenceBlas, FlashAttentionForwardMatchesLoop) {
  for (const Shape& c : shapes()) {
    const size_t n = c.B * c.S * c.H * c.D;
    auto q = randn(n, 1), k = randn(n, 2), v = randn(n, 3);
    const double scale = 1 / std::sqrt(static_cast<double>(c.D));
    auto r = opstest::ref::flash_attention(q, k, v, c.B, c.S, c.H, c.D, c.bshd, c.causal, scale);
    EXPECT_LT(max_rel(concat(r.o, r.lse), loop_forward(q, k, v, c, scale)), kAgree)
        << "S " << c.S << " bshd " << c.bshd << " causal " << c.causal;
  }
}

TEST(ReferenceBlas, FlashAttentionBackwardMatchesLoop) {
  for (const Shape& c : shapes()) {
    const size_t n = c.B * c.S * c.H * c.D;
    auto q = randn(n, 4), k = randn(n, 5), v = randn(n, 6), dout = randn(n, 7);
    const double scale = 1 / std::sqrt(static_cast<double>(c.D));
    auto g = opstest::ref::flash_attention_backward(dout, q, k, v, c.B, c.S, c.H, c.D, c.bshd,
                                                    c.causal, scale);
    EXPECT_LT(max_rel(concat(concat(g.dq, g.dk), g.dv), loop_backward(dout, q, k, v, c, scale)),
              kAgree)
        << "S " << c.S << " bshd " << c.bshd << " causal " << c.causal;
  }
}

// NaNs in a query (row 5), a key (66) and a value (70 and 130, past the first 64-row block):
// causal, query i sees keys j <= i only, so o and lse are NaN exactly in rows 5 and >= 66, and
// the BLAS path agrees with the loop on every element (a masked zero never meets a NaN value).
TEST(ReferenceBlas, FlashAttentionForwardNanPattern) {
  const Shape c{1, 200, 1, 64, false, true};
  auto q = randn(200 * 64, 8), k = randn(200 * 64, 9), v = randn(200 * 64, 10);
  q[5 * 64 + 3] = k[66 * 64] = v[70 * 64 + 1] = v[130 * 64] = std::nan("");
  auto r = opstest::ref::flash_attention(q, k, v, 1, 200, 1, 64, false, true, 0.125);
  EXPECT_LT(max_rel(concat(r.o, r.lse), loop_forward(q, k, v, c, 0.125)), kAgree);
  for (int64_t i = 0; i < 200; ++i) EXPECT_EQ(std::isnan(r.lse[i]), i == 5 || i >= 66) << i;
  for (int64_t i = 0; i < 66; ++i) EXPECT_EQ(std::isnan(r.o[i * 64 + 1]), i == 5) << i;
}

TEST(ReferenceBlas, MatmulAndAttentionMatchLoops) {
  for (int n : {1, 7, 33, 100}) {
    const int M = n, N = n + 3, K = 2 * n + 1;
    auto a = randn(M * K, 11), b = randn(K * N, 12);
    Vec want(M * N);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j)
        for (int kk = 0; kk < K; ++kk) want[i * N + j] += a[i * K + kk] * b[kk * N + j];
    EXPECT_LT(max_rel(tl::ref::matmul(a, b, M, N, K), want), kAgree) << n;
    EXPECT_LT(max_rel(opstest::ref::gemm(a, b, M, N, K, false, false), want), kAgree) << n;
    const Shape c{1, n, 1, 64, false, false};
    auto q = randn(n * 64, 13), k = randn(n * 64, 14), v = randn(n * 64, 15);
    Vec o = loop_forward(q, k, v, c, 0.125);
    o.resize(n * 64);
    EXPECT_LT(max_rel(tl::ref::attention(q, k, v, n, 64, 0.125), o), kAgree) << n;
  }
}

}  // namespace
