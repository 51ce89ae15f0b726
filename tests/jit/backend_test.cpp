// Backend-neutral compilation (tl/backend.h): a backend builds an artifact from the IR the
// pipeline prepared; the JIT cache serves any backend (its key names the backend, its disk
// level rebuilds the artifact from the stored IR text); CompileOptions::verify and ::lower
// choose what the backend receives.
#include <gtest/gtest.h>

#include <atomic>
#include <set>

#include "jit/jit_test_util.h"
#include "tl/ir_equal.h"
#include "tl/jit.h"
#include "tl/npu/npu.h"
#include "tl/parser.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/verifier.h"

namespace tl {
namespace {

using jittest::TempDir;

/// A backend whose artifact is the IR it was given; it counts its builds.
class EchoBackend final : public Backend {
 public:
  explicit EchoBackend(std::string name = "echo") : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  std::shared_ptr<const Artifact> build(const PrimFunc& f, const Target& target) const override {
    builds.fetch_add(1);
    auto a = std::make_shared<Artifact>();
    a->func = f;
    a->target = &target;
    return a;
  }
  mutable std::atomic<int> builds{0};

 private:
  std::string name_;
};

constexpr std::string_view kCopy = R"(@T.prim_func
def copy_kernel(X: T.Tensor((64,), "float32")):
    with T.Kernel(2 * 1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((64,), "float32")
            T.copy(X, a)
            T.set_flag("MTE2", "MTE3", 0)
            T.wait_flag("MTE2", "MTE3", 0)
            T.copy(a, X)
)";

/// kCopy with a developer-mode loop outside any scope: fails the expert spec, yet the passes can
/// lower it (pipeline_loops makes an expert kernel's T.Pipelined serial).
std::string with_parallel_loop() {
  std::string text(kCopy);
  return text +
         "        for p in T.Pipelined(4, num_stages=2):\n            with T.Scope(\"Vector\"):\n"
         "                T.pipe_barrier(\"V\")\n";
}

CompileOptions memory_only(CompileOptions o = {}) {
  o.disk_cache = false;
  return o;
}

class Backends : public ::testing::Test {
 protected:
  void SetUp() override {
    jit::clear_cache();
    jit::reset_cache_stats();
  }
  void TearDown() override { jit::clear_cache(); }
};

TEST_F(Backends, CompileHandsTheLoweredKernelToTheBackend) {
  EchoBackend echo;
  PrimFunc f = parse(kCopy);
  auto a = compile(echo, f, default_target(), memory_only());
  EXPECT_EQ(echo.builds, 1);
  EXPECT_EQ(a->target, &default_target());
  EXPECT_TRUE(structural_equal(a->func, lower(f, default_target()))) << print(a->func);
  // A second compile of an equal kernel is a memory hit: the same artifact, no build.
  auto b = compile(echo, parse(kCopy), default_target(), memory_only());
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(echo.builds, 1);
}

TEST_F(Backends, TheNpuIsABackend) {
  EXPECT_EQ(npu_backend().name(), "npu");
  PrimFunc f = parse(kCopy);
  auto artifact = compile(npu_backend(), f, default_target(), memory_only());
  CompiledKernel k = compile(f, default_target(), memory_only());  // the convenience form
  EXPECT_EQ(k.func().get(), artifact->func.get());                 // the same cache entry
  Device dev;
  Tensor X = arange(dev, {64}, f32);
  k.launch(dev, {X});
  EXPECT_EQ(X.to_vector()[63], 63.0);
}

TEST_F(Backends, EachBackendHasItsOwnCacheEntries) {
  EchoBackend echo, other("other");
  PrimFunc f = parse(kCopy);
  auto a = compile(echo, f, default_target(), memory_only());
  auto b = compile(other, f, default_target(), memory_only());
  auto c = compile(npu_backend(), f, default_target(), memory_only());
  EXPECT_NE(a.get(), b.get());
  EXPECT_NE(a.get(), c.get());
  EXPECT_EQ(jit::cache_entries(), 3u);
  EXPECT_EQ(jit::cache_stats().misses, 3u);
  std::string key = jit::cache_key(echo, f, default_target());
  EXPECT_NE(key.find("|backend=echo|"), std::string::npos) << key;
  EXPECT_NE(key, jit::cache_key(other, f, default_target()));
  EXPECT_NE(key.find("|build=" + std::string(build_id()) + "|"), std::string::npos) << key;
}

TEST_F(Backends, DiskHitRebuildsTheArtifactFromTheStoredIr) {
  TempDir d;
  CompileOptions o;
  o.cache_dir = d.str();
  EchoBackend echo;
  PrimFunc f = parse(kCopy);
  auto a = compile(echo, f, default_target(), o);
  std::string file = jit::cache_file(echo, f, default_target(), o);
  std::string text = jittest::read_file(file);
  EXPECT_NE(text.substr(0, text.find('\n')).find("\"backend\":\"echo\""), std::string::npos)
      << text;
  jit::clear_cache();  // a new process
  EchoBackend again;
  auto b = compile(again, f, default_target(), o);
  EXPECT_EQ(again.builds, 1);  // built from the parsed text, without the pipeline
  EXPECT_EQ(jit::cache_stats().disk_hits, 1u);
  EXPECT_NE(a.get(), b.get());
  EXPECT_TRUE(structural_equal(a->func, b->func)) << first_difference(a->func, b->func);
  // Another backend never reads the echo backend's file.
  EchoBackend other("other");
  EXPECT_NE(jit::cache_file(other, f, default_target(), o), file);
}

/// Every on-chip buffer of `f` has an address (plan_memory ran).
bool planned(const PrimFunc& f) {
  for (const auto& d : verify(f, default_target(), {.spec = Spec::Planned}))
    if (d.rule == "buffer-unplanned") return false;
  return true;
}

TEST_F(Backends, VerifyAndLowerAreSeparateOptions) {
  EchoBackend echo;
  PrimFunc f = parse(kCopy);
  auto full = compile(echo, f, default_target(), memory_only());
  auto no_verify = compile(echo, f, default_target(), memory_only({.verify = false}));
  auto no_lower = compile(echo, f, default_target(), memory_only({.lower = false}));
  auto neither = compile(echo, f, default_target(), memory_only({.verify = false, .lower = false}));
  EXPECT_TRUE(planned(full->func));
  EXPECT_TRUE(planned(no_verify->func));
  EXPECT_EQ(no_lower->func.get(), f.get());  // handed over as written
  EXPECT_EQ(neither->func.get(), f.get());
  EXPECT_FALSE(planned(no_lower->func));
  // Four keys, four entries.
  std::set<std::string> keys;
  for (CompileOptions o :
       {CompileOptions{}, CompileOptions{.verify = false}, CompileOptions{.lower = false},
        CompileOptions{.verify = false, .lower = false}})
    keys.insert(jit::cache_key(echo, f, default_target(), o));
  EXPECT_EQ(keys.size(), 4u);
  EXPECT_EQ(jit::cache_entries(), 4u);
}

TEST_F(Backends, VerifyFalseStillLowersAKernelTheVerifierRejects) {
  EchoBackend echo;
  PrimFunc bad = parse(with_parallel_loop());
  EXPECT_THROW(compile(echo, bad, default_target(), memory_only()), Error);
  EXPECT_THROW(compile(echo, bad, default_target(), memory_only({.lower = false})), Error);
  auto lowered = compile(echo, bad, default_target(), memory_only({.verify = false}));
  EXPECT_TRUE(planned(lowered->func)) << print(lowered->func);
  auto raw = compile(echo, bad, default_target(), memory_only({.verify = false, .lower = false}));
  EXPECT_EQ(raw->func.get(), bad.get());
}

}  // namespace
}  // namespace tl
