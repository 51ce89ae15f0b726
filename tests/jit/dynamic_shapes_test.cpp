// Dynamic shapes: examples/rms_norm_dynamic.cpp is compiled ONCE and launched for row counts
// M = 0, 1, 7, 4096, 4099 (no rows, a lone tail row, a tail only, full tiles only, full tiles
// and a tail); the JIT cache holds one entry for it however many M it serves.
#include <gtest/gtest.h>

#include "common/references.h"
#include "jit/jit_test_util.h"
#include "tl/jit.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"
#include "tl/printer.h"

namespace tl {
namespace {

using jittest::sizes;

constexpr int kN = 512, kBN = 256;

PrimFunc dynamic_norm() {
  return build_kernel(find_kernel("rms_norm_dynamic"), sizes({{"N", kN}, {"bN", kBN}}));
}

void run(const CompiledKernel& k, Device& dev, int M) {
  SCOPED_TRACE(fmt::format("M = {}", M));
  Tensor X = randn(dev, {M, kN}, bf16, 100 + M), W = uniform(dev, {kN}, bf16, 7, 0.5, 1.5);
  Tensor Y = uniform(dev, {M, kN}, bf16, 8);  // garbage: every row must be written
  k.launch(dev, {X, W, Y, 1e-6});
  auto want = ref::rms_norm(X.to_vector(), W.to_vector(), M, kN, 1e-6);
  EXPECT_EQ(ref::compare(Y.to_vector(), want, kN, 1e-2, 1.6e-2), "");
}

TEST(DynamicShapes, OneCompileServesEveryRowCount) {
  jit::clear_cache();
  jit::reset_cache_stats();
  CompileOptions opt;
  opt.disk_cache = false;
  PrimFunc f = dynamic_norm();
  ASSERT_EQ(f->dynamics.size(), 1u);
  EXPECT_EQ(f->dynamics[0].name(), "M");
  auto k = compile(f, default_target(), opt);
  EXPECT_EQ(jit::cache_stats().misses, 1u);
  Device dev;
  for (int M : {0, 1, 7, 4096, 4099, 8, 9, 57}) {
    run(k, dev, M);
    // "Compiling for another M" is compiling the same function again: the cached kernel.
    auto again = compile(dynamic_norm(), default_target(), opt);
    EXPECT_EQ(&again.program(), &k.program());
  }
  EXPECT_EQ(jit::cache_entries(), 1u);
  EXPECT_EQ(jit::cache_stats().misses, 1u);
  jit::clear_cache();
}

TEST(DynamicShapes, BlockCountFollowsM) {
  // min(blocks, ceildiv(M, rM)) blocks: M = 0 launches none (and touches nothing).
  PrimFunc f = dynamic_norm();
  std::string text = print(f, {.locations = false});
  EXPECT_NE(text.find("T.Kernel(T.min(24, (M + 8 - 1) // 8)"), std::string::npos)
      << text.substr(0, 600);
}

TEST(DynamicShapes, WrongShapesAreLaunchErrors) {
  // Fewer elements than M (from X) rows: the kernel would write past Y's end.
  auto k = compile(dynamic_norm());
  Device dev;
  Tensor X = Tensor::empty(dev, {5, kN}, bf16), W = Tensor::empty(dev, {kN}, bf16);
  Tensor Y = Tensor::empty(dev, {4, kN}, bf16);  // M is 5 from X
  try {
    k.launch(dev, {X, W, Y, 1e-6});
    FAIL() << "expected a shape error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'Y' must have shape [5, 512], got [4, 512]: it has 2048 "
                                         "elements, the kernel addresses 2560"),
              std::string::npos)
        << e.what();
  }
}

TEST(DynamicShapes, OtherShapesOfTheRightSizeAreRowMajorViews) {
  // The chip takes a GM pointer (docs/python.md, "Argument shapes"): a contiguous tensor of the
  // declared element count is read row-major; an output with more elements gets its first rows
  // written and keeps the rest. Before: "'Y' must have shape [7, 512], got [14, 512]" (and
  // "'W' must have shape [512], got [2, 256]").
  auto k = compile(dynamic_norm());
  Device dev;
  const int M = 7;
  Tensor X = randn(dev, {M, kN}, bf16, 3), W = uniform(dev, {kN}, bf16, 7, 0.5, 1.5);
  Tensor Y = full(dev, {2 * M, kN}, bf16, 5.0);
  k.launch(dev, {X, W.reshape({2, kN / 2}), Y, 1e-6});
  auto want = ref::rms_norm(X.to_vector(), W.to_vector(), M, kN, 1e-6);
  auto got = Y.to_vector();
  std::vector<double> head(got.begin(), got.begin() + M * kN),
      tail(got.begin() + M * kN, got.end());
  EXPECT_EQ(ref::compare(head, want, kN, 1e-2, 1.6e-2), "");
  EXPECT_EQ(std::count(tail.begin(), tail.end(), 5.0), static_cast<long>(tail.size()));
  // An input the kernel only reads, larger than declared: refused, with the reason.
  try {
    k.launch(dev, {Tensor::empty(dev, {M, 2 * kN}, bf16), W, Y, 1e-6});
    FAIL() << "expected a shape error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than the 3584 the kernel reads"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tl
