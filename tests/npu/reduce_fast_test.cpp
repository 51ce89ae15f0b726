// ReduceSum's fast path (the 8-lane AVX2 tree over a full repeat, src/npu/exec_reduce_sort.cpp)
// against the plain interpreter (TL_NPU_PLAIN_PATHS=1: the scalar tree), byte for byte, on rows
// of 1, 7, 33, 1000 and 4097 elements (full repeats and a partial last one) in every float dtype
// reduce_sum takes, on inputs with NaNs (whose payload depends on the operand order), infinities
// of both signs (whose sum is a NaN), signed zeros and subnormals (issue 31: the fast path must
// not change a result). Sums of ordinary values are checked against an fp64 tree reference by
// vector_ops_shape_test.cpp; this test is about the special values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "npu/vector_ops.h"

namespace tl {
namespace {

TEST(ReduceSumFast, SameBytesAsThePlainTreeOnSpecialValues) {
  const double inf = std::numeric_limits<double>::infinity();
  for (DType t : optest::legal("reduce_sum")) {
    if (!is_float(t)) continue;
    for (int64_t cols : {1, 7, 33, 1000, 4097}) {
      const int64_t rows = 6;
      for (int pattern = 0; pattern < 4; ++pattern) {
        SCOPED_TRACE(fmt::format("{} [{}, {}] pattern {}", dtype_name(t), rows, cols, pattern));
        std::vector<std::vector<uint8_t>> results;
        for (bool plain : {true, false}) {
          ::setenv("TL_NPU_PLAIN_PATHS", plain ? "1" : "0", 1);
          Device dev;
          // UB rows are whole 32-byte blocks: the buffer is `width` wide, the sum over `cols`.
          const int64_t q = 32 / dtype_bytes(t), width = (cols + q - 1) / q * q;
          std::vector<double> v = optest::input(dev, {rows, width}, t, 11 + pattern).to_vector();
          // Row r holds specials at a stride that differs per row and pattern: NaNs of both
          // signs (pattern 0, 3), +inf and -inf in one row (1, 3), signed zeros and subnormals
          // (2); row 5 stays ordinary.
          for (int64_t r = 0; r < rows - 1; ++r)
            for (int64_t k = r; k < cols; k += 3 + r + pattern) {
              double& x = v[r * width + k];
              if (pattern == 0) x = k % 2 ? std::nan("") : -std::nan("");
              if (pattern == 1) x = k % 2 ? inf : -inf;
              if (pattern == 2) x = k % 2 ? -0.0 : (t == DType::Float16 ? 1e-6 : 1e-40);
              if (pattern == 3) x = k % 3 == 0 ? std::nan("") : (k % 3 == 1 ? inf : -inf);
            }
          Tensor s = from_vector(dev, {rows, width}, t, v);
          Tensor d = full(dev, {16}, t, 7);
          optest::run_one_op(dev, {{"s", {rows, width}, t}, {"d", {16}, t}}, {},
                             [&](const std::vector<Buffer>& ub, const std::vector<Var>&) {
                               T::reduce_sum(ub[0].region({0, 0}, {rows, cols}),
                                             ub[1].region({0}, {rows}), -1, true);
                             },
                             {s, d});
          results.push_back(optest::bytes_of(d));
        }
        ::unsetenv("TL_NPU_PLAIN_PATHS");
        EXPECT_EQ(results[0], results[1]);
        // Every NaN sum is the one quiet NaN (0x7FC00000, as the dtype holds it), whatever NaN
        // or inf - inf produced it (docs/virtual_npu.md, "NaN results").
        const int64_t es = dtype_bytes(t);
        int64_t nans = 0;
        for (int64_t r = 0; r < rows; ++r) {
          uint32_t bits = 0;
          std::memcpy(&bits, results[0].data() + r * es, es);
          const bool nan = t == DType::Float32   ? (bits & 0x7FFFFFFFu) > 0x7F800000u
                           : t == DType::Float16 ? (bits & 0x7FFF) > 0x7C00
                                                 : (bits & 0x7FFF) > 0x7F80;
          if (!nan) continue;
          ++nans;
          const uint32_t quiet = t == DType::Float32   ? 0x7FC00000u
                                 : t == DType::Float16 ? 0x7E00
                                                       : 0x7FC0;
          EXPECT_EQ(bits, quiet) << "row " << r;
        }
        if (pattern == 0 || pattern == 3) {
          EXPECT_GT(nans, 0);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tl
