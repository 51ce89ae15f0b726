// vectorize_parallel: what its IR-file tests cannot say. The mappings (IR text in, IR text out)
// live in tests/pass/vectorize_parallel.tl and vectorize_parallel_mappings.tl, the errors with
// their reason and line in vectorize_parallel_errors.tl; the numeric contract in
// vectorize_parallel_fuzz_test.cpp (random expression trees, the exhaustive intrinsic table) and
// vectorize_parallel_runs_test.cpp (chosen loops run vectorised and serial). Kept here, because
// `tlc opt` cannot express them:
// - the VectorizeOptions switches (allow_inexact_math, scalar_fallback) and the remarks the pass
//   reports through VectorizeOptions::remark: `tlc opt` sets no pass option and prints no remark;
// - that a kernel without Parallel loops comes back as the same function object (no copy).
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "pass/pass_test_util.h"
#include "pass/vectorize_parallel_util.h"
#include "tl/arith.h"
#include "tl/npu/npu.h"
#include "tl/op.h"
#include "tl/runtime.h"
#include "tl/verifier.h"

namespace tl {
namespace {

using namespace vptest;

constexpr std::string_view kDecls = R"(            a = T.alloc_ub((16, 16), "float32")
            b = T.alloc_ub((16, 16), "float32")
            c = T.alloc_ub((16, 16), "float32")
            s = T.alloc_ub((16,), "float32")
            h = T.alloc_ub((16, 16), "int32")
)";

TEST(VectorizeParallel, InexactMathOnlyOnRequestWithARemark) {
  std::string text = kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:7
                for j in T.Parallel(16):
                    c[i, j] = T.exp(a[i, j] - b[i, j])
)");
  std::vector<std::string> remarks;
  VectorizeOptions o;
  o.allow_inexact_math = true;
  o.remark = [&](const SourceLoc& loc, const std::string& m) {
    remarks.push_back(loc.str() + ": " + m);
  };
  std::string ir =
      print(vectorize_parallel(parse(text, "k.py"), default_target(), o), {.locations = false});
  EXPECT_NE(ir.find("T.tile.sub(vec_t0, a, b)\n            T.tile.exp(c, vec_t0)"),
            std::string::npos)
      << ir;
  ASSERT_EQ(remarks.size(), 1u);
  EXPECT_EQ(
      remarks[0],
      "k.py:7: T.exp on float32 vectorised as tile.exp, which may differ from the scalar loop in "
      "the last bit");
}

TEST(VectorizeParallel, ScalarFallbackIsSerialWithARemark) {
  std::string text = kernel(kDecls, R"(            for i in T.Parallel(16):  # @k.py:7
                s[i] = a[i, 0] + 1.0
)");
  std::vector<std::string> remarks;
  VectorizeOptions o;
  o.scalar_fallback = true;
  o.remark = [&](const SourceLoc& loc, const std::string& m) {
    remarks.push_back(loc.str() + ": " + m);
  };
  PrimFunc g = vectorize_parallel(parse(text, "k.py"), default_target(), o);
  std::string ir = print(g, {.locations = false});
  EXPECT_NE(ir.find("for i in T.serial(16):\n                s[i] = a[i, 0] + 1.0"),
            std::string::npos)
      << ir;
  ASSERT_EQ(remarks.size(), 1u);
  EXPECT_EQ(
      remarks[0],
      "k.py:7: T.Parallel runs as a serial scalar loop (scalar_fallback): non-unit stride in the "
      "innermost dimension: operand a[i, 0] walks dimension 0 of 'a' with i, whose elements are "
      "not adjacent");
  // Kernels without Parallel loops come back unchanged (the same function).
  PrimFunc plain = parse(kernel(kDecls, "            T.tile.add(a, a, b)\n"));
  EXPECT_EQ(vectorize_parallel(plain, default_target()), plain);
}

}  // namespace
}  // namespace tl
