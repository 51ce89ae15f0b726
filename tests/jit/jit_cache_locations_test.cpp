// Regression of issue 27 (adversarial review): after a cache hit, run-time errors named another
// kernel's source lines. The JIT cache key ignored source locations, so two identical kernels
// written at different lines shared one artifact, whose errors carry the lines of the kernel
// it was built from: the second kernel's errors named the first one's loop (memory hit), and
// after a disk hit (another process, another file) they named whatever kernel wrote the entry.
// The key now includes a fingerprint of the kernel's locations (include/tl/jit.h).
#include <gtest/gtest.h>

#include <string>

#include "common/error_of.h"
#include "jit/jit_test_util.h"
#include "tl/ir_equal.h"
#include "tl/jit.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"

namespace tl {
namespace {

using jittest::ScopedEnv;
using jittest::TempDir;

// Two identical kernels, each with a runaway loop at its own line.
int g_line_a = 0, g_line_b = 0;

PrimFunc spinner_a() {
  auto X = T::Tensor("X", {16}, DType::Float32);
  return T::prim_func("spinner", {X}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        auto acc = T::alloc_var("acc", DType::Int64);
        T::store(acc, {0}, Expr(int64_t{0}));
        g_line_a = __LINE__ + 1;
        T::serial(Expr(int64_t{1} << 40), [&](Expr i) { T::store(acc, {0}, acc() + i); });
      });
    });
  });
}

PrimFunc spinner_b() {
  auto X = T::Tensor("X", {16}, DType::Float32);
  return T::prim_func("spinner", {X}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        auto acc = T::alloc_var("acc", DType::Int64);
        T::store(acc, {0}, Expr(int64_t{0}));
        g_line_b = __LINE__ + 1;
        T::serial(Expr(int64_t{1} << 40), [&](Expr i) { T::store(acc, {0}, acc() + i); });
      });
    });
  });
}

/// The budget error of launching `k` (a tl::Error at the runaway loop).
std::string budget_error(const CompiledKernel& k) {
  Device dev;
  Tensor x = Tensor::empty(dev, {16}, DType::Float32);
  return tltest::error_of([&] { k.launch(dev, {x}, {.threads = 1, .max_steps = 10'000}); });
}

std::string at(int line) {
  return fmt::format("jit_cache_locations_test.cpp:{}", line);
}

/// `msg` names `line` and not `other`.
void expect_names(const std::string& msg, int line, int other) {
  EXPECT_NE(msg.find(at(line)), std::string::npos) << msg;
  EXPECT_EQ(msg.find(at(other)), std::string::npos) << msg;
}

class JitCacheLocations : public ::testing::Test {
 protected:
  void SetUp() override {
    jit::clear_cache();
    jit::reset_cache_stats();
  }
  void TearDown() override { jit::clear_cache(); }
};

// Before the fix: kernel b's error named line g_line_a (a memory hit on kernel a's artifact).
TEST_F(JitCacheLocations, EqualKernelsAtOtherLinesGetTheirOwnEntryInMemory) {
  PrimFunc a = spinner_a(), b = spinner_b();
  ASSERT_TRUE(structural_equal(a, b));
  CompileOptions o;
  o.disk_cache = false;
  std::string ea = budget_error(compile(a, default_target(), o));
  std::string eb = budget_error(compile(b, default_target(), o));
  expect_names(ea, g_line_a, g_line_b);
  expect_names(eb, g_line_b, g_line_a);
  EXPECT_EQ(jit::cache_stats().misses, 2u);
  // The same kernel built again at the same lines still hits.
  std::string ea2 = budget_error(compile(spinner_a(), default_target(), o));
  EXPECT_EQ(ea2, ea);
  EXPECT_EQ(jit::cache_stats().memory_hits, 1u);
}

// Before the fix: after kernel a filled the disk entry, kernel b (a new process: the memory
// level cleared) loaded it and its error named line g_line_a.
TEST_F(JitCacheLocations, ADiskHitKeepsTheAskingKernelsLines) {
  TempDir dir;
  ScopedEnv env("TL_CACHE_DIR", dir.str());
  std::string ea = budget_error(compile(spinner_a()));
  EXPECT_EQ(jit::cache_stats().disk_writes, 1u);
  jit::clear_cache();
  std::string eb = budget_error(compile(spinner_b()));
  expect_names(eb, g_line_b, g_line_a);
  EXPECT_EQ(jit::cache_stats().disk_hits, 0u);
  // Kernel a in a new process hits its own disk entry, with its own lines.
  jit::clear_cache();
  std::string ea2 = budget_error(compile(spinner_a()));
  EXPECT_EQ(jit::cache_stats().disk_hits, 1u);
  expect_names(ea2, g_line_a, g_line_b);
  EXPECT_EQ(ea2, ea);
}

}  // namespace
}  // namespace tl
