// The JIT cache behind tl::compile (include/tl/jit.h): memory hits and misses, the disk
// artifact round trip (a new process simulated by clearing the memory cache), rejected
// artifacts (version/key mismatch, corruption), disabling it, and concurrent compiles.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "common/references.h"
#include "jit/jit_test_util.h"
#include "tl/ir_equal.h"
#include "tl/jit.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"
#include "tl/parser.h"
#include "tl/printer.h"
#include "tl/verifier.h"

namespace tl {
namespace {

using jittest::ScopedEnv;
using jittest::sizes;
using jittest::TempDir;
namespace fs = std::filesystem;

// Every test process of this binary gets a private cache directory (unless TL_CACHE_DIR is
// already set), removed at exit: the suite never writes to the user's ~/.cache, and tests
// run as separate processes never share artifacts (which would carry another test's
// source locations into error messages).
struct ProcessCacheDir {
  std::optional<TempDir> dir;
  ProcessCacheDir() {
    const char* v = std::getenv("TL_CACHE_DIR");
    if (v && *v) return;
    dir.emplace();
    ::setenv("TL_CACHE_DIR", dir->str().c_str(), 1);
  }
};
const ProcessCacheDir process_cache_dir;

constexpr int kNormM = 16, kNormN = 512;

PrimFunc norm_kernel(int M = kNormM, int N = kNormN) {
  return build_kernel(find_kernel("rms_norm"),
                      sizes({{"M", M}, {"N", N}, {"bN", 256}, {"blocks", 2}}));
}

PrimFunc gemm_kernel() {
  return build_kernel(find_kernel("gemm"), sizes({{"M", 256}, {"N", 256}, {"K", 128}}));
}

void check_norm(const CompiledKernel& k, int M = kNormM, int N = kNormN) {
  Device dev(k.target());
  Tensor X = randn(dev, {M, N}, bf16, 11), W = uniform(dev, {N}, bf16, 12, 0.5, 1.5);
  Tensor Y = Tensor::empty(dev, {M, N}, bf16);
  k.launch(dev, {X, W, Y, 1e-6});
  auto want = ref::rms_norm(X.to_vector(), W.to_vector(), M, N, 1e-6);
  EXPECT_EQ(ref::compare(Y.to_vector(), want, N, 1e-2, 1.6e-2), "");
}

void check_gemm(const CompiledKernel& k) {
  const int M = 256, N = 256, K = 128;
  Device dev(k.target());
  Tensor A = uniform(dev, {M, K}, f16, 1), B = uniform(dev, {K, N}, f16, 2),
         C = Tensor::empty(dev, {M, N}, f16);
  k.launch(dev, {A, B, C});
  auto want = ref::matmul(A.to_vector(), B.to_vector(), M, N, K);
  EXPECT_EQ(ref::compare(C.to_vector(), want, N, 1e-3 * std::sqrt(K), 1e-3), "");
}

CompileOptions memory_only() {
  CompileOptions o;
  o.disk_cache = false;
  return o;
}

CompileOptions disk_at(const TempDir& d) {
  CompileOptions o;
  o.cache_dir = d.str();
  return o;
}

class JitCache : public ::testing::Test {
 protected:
  void SetUp() override {
    jit::clear_cache();
    jit::reset_cache_stats();
  }
  void TearDown() override { jit::clear_cache(); }
};

TEST_F(JitCache, MemoryHitReturnsTheSameProgram) {
  PrimFunc f = norm_kernel();
  auto a = compile(f, default_target(), memory_only());
  auto b = compile(norm_kernel(), default_target(), memory_only());  // a new, equal PrimFunc
  EXPECT_EQ(&a.program(), &b.program());
  EXPECT_EQ(&a.program(),
            &compile(f, default_target(), memory_only()).program());  // the same object
  EXPECT_EQ(jit::cache_entries(), 1u);
  auto s = jit::cache_stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.memory_hits, 2u);
  EXPECT_EQ(s.disk_writes, 0u);
  check_norm(b);
}

TEST_F(JitCache, VariableNamesDoNotMatterLocationsDo) {
  // Parsed from the same text twice, the second time with a buffer renamed: other node
  // identities and names, the same locations, structurally equal: one entry.
  std::string text = print(norm_kernel());
  auto a = compile(parse(text), default_target(), memory_only());
  std::string renamed = text;
  for (size_t pos; (pos = renamed.find("acc_ub")) != std::string::npos;)
    renamed.replace(pos, 6, "sumsq");
  auto b = compile(parse(renamed), default_target(), memory_only());
  EXPECT_EQ(&a.program(), &b.program());
  EXPECT_EQ(jit::cache_stats().memory_hits, 1u);
  // Without its locations it is another entry: an artifact's errors name the lines of the
  // function it was built from (tests/jit/jit_cache_locations_test.cpp).
  std::string bare = print(norm_kernel(), {.locations = false});
  auto c = compile(parse(bare), default_target(), memory_only());
  EXPECT_NE(&a.program(), &c.program());
  // The kernel's own name is part of its identity (structural_hash includes it).
  PrimFunc h = parse(std::string(bare).replace(bare.find("def rms_norm("), 13, "def other_norm("));
  auto d = compile(h, default_target(), memory_only());
  EXPECT_NE(&c.program(), &d.program());
  EXPECT_EQ(d.func()->name, "other_norm");
}

TEST_F(JitCache, DifferentTargetOptionsOrIrMiss) {
  PrimFunc f = norm_kernel();
  auto a = compile(f, default_target(), memory_only());
  auto t = compile(f, get_target("910B4"), memory_only());
  CompileOptions nv = memory_only();
  nv.verify = false;
  auto o = compile(f, default_target(), nv);
  auto i = compile(norm_kernel(2 * kNormM), default_target(), memory_only());
  std::set<const npu::Program*> programs{&a.program(), &t.program(), &o.program(), &i.program()};
  EXPECT_EQ(programs.size(), 4u);
  EXPECT_EQ(jit::cache_entries(), 4u);
  EXPECT_EQ(jit::cache_stats().misses, 4u);
  EXPECT_EQ(jit::cache_stats().memory_hits, 0u);
  const Backend& npu = npu_backend();
  EXPECT_NE(jit::cache_key(npu, f, default_target()), jit::cache_key(npu, f, get_target("910B4")));
  EXPECT_NE(jit::cache_key(npu, f, default_target()), jit::cache_key(npu, f, default_target(), nv));
  EXPECT_EQ(&t.target(), &get_target("910B4"));
  check_norm(t);
  check_norm(i, 2 * kNormM);
}

TEST_F(JitCache, CacheOffCompilesEveryTime) {
  TempDir d;
  CompileOptions off = disk_at(d);
  off.cache = false;
  auto a = compile(norm_kernel(), default_target(), off);
  auto b = compile(norm_kernel(), default_target(), off);
  EXPECT_NE(&a.program(), &b.program());
  {
    ScopedEnv env("TL_CACHE", "0");
    auto c = compile(norm_kernel(), default_target(), disk_at(d));
    auto e = compile(norm_kernel(), default_target(), disk_at(d));
    EXPECT_NE(&c.program(), &e.program());
    EXPECT_EQ(jit::cache_dir(disk_at(d)), "");
  }
  EXPECT_EQ(jit::cache_entries(), 0u);
  EXPECT_TRUE(fs::is_empty(d.path()));
  EXPECT_EQ(jit::cache_stats().misses, 4u);
}

TEST_F(JitCache, DiskDirectoryResolution) {
  {
    ScopedEnv dir("TL_CACHE_DIR", "/some/where");
    EXPECT_EQ(jit::cache_dir(), "/some/where");
    CompileOptions o;
    o.cache_dir = "/explicit";
    EXPECT_EQ(jit::cache_dir(o), "/explicit");
    EXPECT_EQ(jit::cache_dir(memory_only()), "");
  }
  ScopedEnv dir("TL_CACHE_DIR", std::nullopt);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(jit::cache_dir(), "/xdg/tl-ascend");
  }
  ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
  ScopedEnv home("HOME", "/home/someone");
  EXPECT_EQ(jit::cache_dir(), "/home/someone/.cache/tl-ascend");
}

TEST_F(JitCache, DiskRoundTripSkipsTheCompilerAndRuns) {
  TempDir d;
  for (PrimFunc f : {norm_kernel(), gemm_kernel()}) {
    jit::clear_cache();
    jit::reset_cache_stats();
    auto a = compile(f, default_target(), disk_at(d));
    std::string file = jit::cache_file(npu_backend(), f, default_target(), disk_at(d));
    ASSERT_TRUE(fs::exists(file)) << file;
    EXPECT_EQ(jit::cache_stats().disk_writes, 1u);
    // The artifact: a JSON header line, then the lowered IR text.
    std::string text = jittest::read_file(file);
    std::string header = text.substr(0, text.find('\n'));
    EXPECT_NE(header.find(std::string(jit::kCompilerVersion)), std::string::npos) << header;
    EXPECT_NE(header.find("\"kernel\":\"" + f->name + "\""), std::string::npos) << header;
    EXPECT_TRUE(structural_equal(parse(text.substr(text.find('\n') + 1)), a.func()));

    jit::clear_cache();  // a new process
    auto b = compile(f, default_target(), disk_at(d));
    EXPECT_NE(&a.program(), &b.program());
    auto s = jit::cache_stats();
    EXPECT_EQ(s.disk_hits, 1u);
    EXPECT_EQ(s.misses, 1u);
    EXPECT_EQ(s.disk_rejects, 0u);
    EXPECT_EQ(s.disk_writes, 1u);
    EXPECT_TRUE(structural_equal(a.func(), b.func())) << first_difference(a.func(), b.func());
    EXPECT_EQ(b.func()->name, f->name);
    // Then it is in memory again.
    auto c = compile(f, default_target(), disk_at(d));
    EXPECT_EQ(&b.program(), &c.program());
    if (f->name == "gemm")
      check_gemm(b);
    else
      check_norm(b);
  }
  // No temporaries left behind.
  for (const auto& e : fs::directory_iterator(d.path()))
    EXPECT_EQ(e.path().extension(), ".tlir") << e.path();
}

// Replaces the first occurrence of `from` in the file.
void edit(const std::string& file, const std::string& from, const std::string& to) {
  std::string text = jittest::read_file(file);
  auto pos = text.find(from);
  ASSERT_NE(pos, std::string::npos) << from;
  text.replace(pos, from.size(), to);
  jittest::write_file(file, text);
}

/// Compiles norm_kernel() into `d`, lets `damage` alter the artifact, then checks that a
/// new process ignores it, compiles, runs correctly and rewrites a good artifact.
void expect_rejected(const std::function<void(const std::string& file)>& damage) {
  TempDir d;
  PrimFunc f = norm_kernel();
  jit::clear_cache();
  compile(f, default_target(), disk_at(d));
  std::string file = jit::cache_file(npu_backend(), f, default_target(), disk_at(d));
  std::string good = jittest::read_file(file);
  damage(file);
  jit::clear_cache();
  jit::reset_cache_stats();
  auto k = compile(f, default_target(), disk_at(d));
  auto s = jit::cache_stats();
  EXPECT_EQ(s.disk_hits, 0u);
  EXPECT_EQ(s.disk_rejects, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.disk_writes, 1u);
  EXPECT_EQ(jittest::read_file(file), good);  // overwritten with a good entry
  check_norm(k);
}

/// The disk level matches on the key (a structural hash) alone. Even an entry planted under
/// the key of a function that does not verify (as a hash collision would) never makes that
/// function compile: the function itself is verified on a disk hit.
TEST_F(JitCache, DiskHitNeverReturnsAKernelForAnInvalidFunction) {
  TempDir d;
  PrimFunc f = norm_kernel();
  compile(f, default_target(), disk_at(d));
  std::string text = print(f);
  size_t at = text.find("T.alloc_ub(");
  ASSERT_NE(at, std::string::npos);
  // A tile in L1 under the vector ops: not a vector operand. (A T.Parallel in the Vector scope
  // is an expert loop since issue 29, and an alloc_shared tile is placed by the pipeline's
  // place_expert_tiles, which the disk hit runs too.)
  PrimFunc g = parse(text.replace(at, 11, "T.alloc_L1("));
  ASSERT_FALSE(verify(g).empty());
  std::string good =
      jittest::read_file(jit::cache_file(npu_backend(), f, default_target(), disk_at(d)));
  std::string key_f = jit::cache_key(npu_backend(), f, default_target(), disk_at(d));
  std::string key_g = jit::cache_key(npu_backend(), g, default_target(), disk_at(d));
  std::string planted = good;
  planted.replace(planted.find(key_f), key_f.size(), key_g);
  jittest::write_file(jit::cache_file(npu_backend(), g, default_target(), disk_at(d)), planted);
  jit::clear_cache();
  try {
    compile(g, default_target(), disk_at(d));
    FAIL() << "an invalid function compiled from a disk entry";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fails verification"), std::string::npos) << e.what();
  }
}

TEST_F(JitCache, VersionMismatchIsIgnored) {
  expect_rejected([](const std::string& file) {
    edit(file, "\"version\":\"" + std::string(jit::kCompilerVersion) + "\"",
         "\"version\":\"tl-ascend-jit-0\"");
  });
}

TEST_F(JitCache, KeyMismatchIsIgnored) {
  // A file name collision: the stored key is another kernel's.
  expect_rejected([](const std::string& file) { edit(file, "|ir=", "|ir=0"); });
}

TEST_F(JitCache, CorruptArtifactsAreIgnored) {
  SCOPED_TRACE("empty");
  expect_rejected([](const std::string& file) { jittest::write_file(file, ""); });
  SCOPED_TRACE("garbage");
  expect_rejected([](const std::string& file) {
    jittest::write_file(file,
                        "\x7f"
                        "ELF\n\x01\x02\x03 garbage (((");
  });
  SCOPED_TRACE("header only");
  expect_rejected([](const std::string& file) {
    std::string t = jittest::read_file(file);
    jittest::write_file(file, t.substr(0, t.find('\n') + 1));
  });
  SCOPED_TRACE("truncated");
  expect_rejected([](const std::string& file) {
    std::string t = jittest::read_file(file);
    jittest::write_file(file, t.substr(0, t.size() / 2));
  });
  SCOPED_TRACE("bad header json");
  expect_rejected([](const std::string& file) { edit(file, "{", "["); });
  SCOPED_TRACE("changed body that still parses");
  expect_rejected([](const std::string& file) { edit(file, "T.tile.rsqrt(", "T.tile.sqrt("); });
}

TEST_F(JitCache, ConcurrentCompilesShareOneProgram) {
  TempDir d;
  constexpr int kThreads = 6;
  for (int round = 0; round < 2; ++round) {  // round 0 compiles, round 1 loads from disk
    jit::clear_cache();
    jit::reset_cache_stats();
    std::vector<PrimFunc> funcs;
    for (int i = 0; i < kThreads; ++i) funcs.push_back(gemm_kernel());
    std::vector<const npu::Program*> got(kThreads);
    std::vector<CompiledKernel> kernels(kThreads);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i)
      threads.emplace_back([&, i] {
        ready.fetch_add(1);
        while (ready.load() < kThreads) std::this_thread::yield();
        kernels[i] = compile(funcs[i], default_target(), disk_at(d));
        got[i] = &kernels[i].program();
      });
    for (auto& t : threads) t.join();
    for (int i = 1; i < kThreads; ++i) EXPECT_EQ(got[i], got[0]);
    EXPECT_EQ(jit::cache_entries(), 1u);
    auto s = jit::cache_stats();
    EXPECT_EQ(s.memory_hits + s.disk_hits + s.misses, static_cast<uint64_t>(kThreads));
    EXPECT_EQ(s.disk_rejects, 0u);
    EXPECT_EQ(s.disk_errors, 0u);
    if (round == 1) {
      EXPECT_EQ(s.misses, 0u);
    }
    check_gemm(kernels[kThreads - 1]);
  }
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(d.path())) {
    EXPECT_EQ(e.path().extension(), ".tlir") << e.path();
    ++files;
  }
  EXPECT_EQ(files, 1u);
}

TEST_F(JitCache, CompileErrorsAreNotCached) {
  PrimFunc big = norm_kernel(16, 65536);  // W alone overflows UB
  EXPECT_THROW(compile(big, default_target(), memory_only()), Error);
  EXPECT_THROW(compile(big, default_target(), memory_only()), Error);
  EXPECT_EQ(jit::cache_entries(), 0u);
  EXPECT_EQ(jit::cache_stats().misses, 2u);
}

}  // namespace
}  // namespace tl
