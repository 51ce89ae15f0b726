// vectorize_parallel: what its IR-file tests cannot say. The mappings (IR text in, IR text out)
// live in tests/pass/vectorize_parallel.tl and vectorize_parallel_mappings.tl, the errors with
// their reason and line in vectorize_parallel_errors.tl, the two opt-ins and their remarks in
// vectorize_parallel_inexact_math.tl and vectorize_parallel_scalar_fallback.tl; the numeric
// contract in vectorize_parallel_fuzz_test.cpp (random expression trees, the exhaustive intrinsic
// table) and vectorize_parallel_runs_test.cpp (chosen loops run vectorised and serial). Kept here,
// because `tlc opt` cannot express them:
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

TEST(VectorizeParallel, KernelsWithoutParallelLoopsComeBackUnchanged) {
  // The same function, not a copy.
  PrimFunc plain =
      parse(kernel("            a = T.alloc_ub((16, 16), \"float32\")\n"
                   "            b = T.alloc_ub((16, 16), \"float32\")\n",
                   "            T.tile.add(a, a, b)\n"));
  EXPECT_EQ(vectorize_parallel(plain, default_target()), plain);
}

}  // namespace
}  // namespace tl
