// The fp64 reference of cann_ops_tilelang RoPE (include/cann_ops_tilelang/rope.h), for the tests
// and `tlc op rope`; the library never calls it. Written from the definition, element by element:
// y[j] = r[j] c[j] + sgn(j) r[p(j)] s[j] on each head's rotated part r (p the pair partner,
// sgn(j) = -1 on a pair's first element), and its adjoint dr[j] = dy[j] c[j] - sgn(j) dy[p(j)]
// s[p(j)] for the backward.
#pragma once
#include <cstdint>
#include <vector>

namespace opstest::ref {

struct RopeShape {
  int64_t tokens, heads, head_dim, rot_dim;
  bool interleaved, rotate_last;
};

/// x (or dy) [tokens, heads, head_dim], cos/sin [rows, rot_dim], positions empty or [tokens].
inline std::vector<double> rope(const std::vector<double>& x, const std::vector<double>& cos,
                                const std::vector<double>& sin,
                                const std::vector<int64_t>& positions, const RopeShape& s,
                                bool backward) {
  std::vector<double> y = x;
  const int64_t R = s.rot_dim, half = R / 2, off = s.rotate_last ? s.head_dim - R : 0;
  auto partner = [&](int64_t j) {
    if (s.interleaved) return j ^ 1;
    return j < half ? j + half : j - half;
  };
  auto sgn = [&](int64_t j) { return (s.interleaved ? j % 2 == 0 : j < half) ? -1.0 : 1.0; };
  for (int64_t t = 0; t < s.tokens; ++t) {
    const int64_t row = positions.empty() ? t : positions[t];
    const double* c = &cos[row * R];
    const double* sn = &sin[row * R];
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t base = (t * s.heads + h) * s.head_dim + off;
      for (int64_t j = 0; j < R; ++j) {
        const int64_t p = partner(j);
        const double r = x[base + j], rp = x[base + p];
        y[base + j] = backward ? r * c[j] - sgn(j) * rp * sn[p] : r * c[j] + sgn(j) * rp * sn[j];
      }
    }
  }
  return y;
}

}  // namespace opstest::ref
