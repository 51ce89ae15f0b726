// The test regime of the cann_ops_tilelang C++ tests (docs/ops.md, "Tests"): parameter grids
// chosen by OPS_TILELANG_TEST_LEVEL (0 smoke, 1 default, 2 large shapes; level-2 shapes never
// run in the default ctest), per-test seeds from OPS_TILELANG_SEED and the test's own name (so
// filtering or reordering tests never changes a test's data), and the comparison helpers:
// bitwise for integers, calc_diff (1 - cosine-like similarity, as TileKernels' testing helpers),
// per-dtype allclose that names the worst coordinates, and a rounding-bias check for casts.
// Header-only and test-only: the library never sees it (tlc links it to check `tlc op`).
// The level and the seeds are in ops_seed.h (they need gtest).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tl/dtype.h"

namespace opstest {

/// 1 - 2 sum(x y) / sum(x^2 + y^2): 0 for equal vectors, small for close ones.
inline double calc_diff(const std::vector<double>& x, const std::vector<double>& y) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += x[i] * y[i];
    den += x[i] * x[i] + y[i] * y[i];
  }
  return den == 0 ? 0.0 : 1.0 - 2.0 * num / den;
}

/// Tolerances per dtype (the I/O rounding of 16-bit floats dominates).
struct Tol {
  double rtol, atol;
};
inline Tol tolerance(tl::DType d) {
  switch (d) {
    case tl::DType::BFloat16:
      return {1.6e-2, 1e-2};
    case tl::DType::Float16:
      return {2e-3, 1e-3};
    default:
      return {1e-4, 1e-5};  // the chip's rsqrt: 1e-4 relative
  }
}

/// "" when |got - want| <= atol + rtol |want| everywhere and NaNs sit at the same places; else a
/// message with the count of mismatches and the worst ones' coordinates [row, col].
/// `scale` (optional): per element, the sum of the magnitudes of the terms the value was
/// computed from; the bound grows by kApprox * scale[i], the chip's approximate rsqrt (relative
/// error up to 1e-4, docs/virtual_npu.md) scaling every term, which a cancelling sum keeps.
constexpr double kApprox = 1e-4;
inline std::string allclose(const std::vector<double>& got, const std::vector<double>& want,
                            int64_t cols, Tol t, const std::string& what = "",
                            const std::vector<double>* scale = nullptr) {
  if (got.size() != want.size())
    return fmt::format("{}: {} values, expected {}", what, got.size(), want.size());
  int64_t bad = 0, worst = -1;
  double worst_excess = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool gn = std::isnan(got[i]), wn = std::isnan(want[i]);
    double excess;
    if (gn || wn) {
      excess = gn == wn ? 0 : INFINITY;
    } else {
      excess = std::abs(got[i] - want[i]) -
               (t.atol + t.rtol * std::abs(want[i]) + (scale ? kApprox * (*scale)[i] : 0));
    }
    if (excess > 0) {
      ++bad;
      if (excess > worst_excess) worst_excess = excess, worst = static_cast<int64_t>(i);
    }
  }
  if (bad == 0) return "";
  const int64_t c = cols > 0 ? cols : 1;
  return fmt::format(
      "{}: {} of {} values differ; worst at [{}, {}]: got {}, expected {} (rtol {}, atol {})", what,
      bad, got.size(), worst / c, worst % c, got[worst], want[worst], t.rtol, t.atol);
}

/// "" when the two integer vectors are equal bit for bit; else the first differing index.
inline std::string bitwise_equal(const std::vector<int64_t>& got,
                                 const std::vector<int64_t>& want) {
  if (got.size() != want.size())
    return fmt::format("{} values, expected {}", got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) return fmt::format("index {}: got {}, expected {}", i, got[i], want[i]);
  return "";
}

/// Rounding bias of a cast: the mean of (rounded - exact) / ulp over the values should be near 0
/// for round-to-nearest-even (truncation gives about -0.5). Returns that mean.
inline double rounding_bias(const std::vector<double>& rounded, const std::vector<double>& exact,
                            tl::DType d) {
  const int mant = d == tl::DType::BFloat16 ? 7 : (d == tl::DType::Float16 ? 10 : 23);
  double sum = 0;
  int64_t n = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    if (exact[i] == 0 || !std::isfinite(exact[i])) continue;
    const double ulp = std::ldexp(1.0, std::ilogb(exact[i]) - mant);
    sum += (rounded[i] - exact[i]) / ulp * (exact[i] < 0 ? -1 : 1);
    ++n;
  }
  return n ? sum / n : 0.0;
}

}  // namespace opstest
