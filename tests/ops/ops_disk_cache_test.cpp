// The library's kernels through the JIT disk cache (src/jit/cache.cpp, docs/must_show.md "host
// speed"): a kernel compiled in one process must load from the disk in the next, with the same
// lowered IR and the same outputs. The FlashAttention forward's artifact was written and then
// rejected on every read, so each new process recompiled it (261 ms CPU); these tests fail when
// any library kernel's artifact does not round-trip. A new process is simulated by clearing the
// JIT's memory cache and the library's kernel cache.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "cann_ops_tilelang/activation.h"
#include "cann_ops_tilelang/attention.h"
#include "cann_ops_tilelang/gemm.h"
#include "cann_ops_tilelang/moe.h"
#include "cann_ops_tilelang/norm.h"
#include "cann_ops_tilelang/rope.h"
#include "cann_ops_tilelang/softmax.h"
#include "jit/jit_test_util.h"
#include "tl/ir_equal.h"
#include "tl/jit.h"
#include "tl/parser.h"
#include "tl/printer.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

void new_process() {
  tl::jit::clear_cache();
  clear_kernel_cache();
}

tl::CompileOptions disk_at(const tl::jittest::TempDir& d) {
  tl::CompileOptions o;
  o.cache_dir = d.str();
  return o;
}

// FlashAttention forward, causal BSHD and BHSD not causal (the same features, another kernel),
// compiled the way the library compiles them (the backward: the next test, through the op).
TEST(OpsDiskCache, FlashAttentionLoadsFromTheDiskWithTheSameIrAndOutputs) {
  const auto& t = tl::default_target();
  for (bool causal : {true, false}) {
    const auto layout = causal ? AttentionLayout::BSHD : AttentionLayout::BHSD;
    const FlashAttentionKey key =
        flash_attention_key(DType::Float16, 2, 64, causal, layout, 0.125, t, 33);
    {
      const tl::PrimFunc f = flash_attention_kernel(key);
      SCOPED_TRACE(f->name + " " + key.str());
      tl::jittest::TempDir d;
      new_process();
      tl::jit::reset_cache_stats();
      auto a = tl::compile(f, t, disk_at(d));
      EXPECT_EQ(tl::jit::cache_stats().disk_writes, 1u);
      // What the loader checks first: the artifact's IR read back has the written IR's hash.
      const tl::PrimFunc back = tl::parse(tl::print(a.func()));
      EXPECT_EQ(tl::structural_hash(back), tl::structural_hash(a.func()))
          << tl::first_difference(back, a.func());
      new_process();
      tl::jit::reset_cache_stats();
      auto b = tl::compile(f, t, disk_at(d));
      const auto s = tl::jit::cache_stats();
      EXPECT_EQ(s.disk_hits, 1u);
      EXPECT_EQ(s.disk_rejects, 0u);
      EXPECT_EQ(s.misses, 0u);
      EXPECT_EQ(tl::print(a.func()), tl::print(b.func()));
    }
  }
}

using Run = std::function<std::vector<std::vector<double>>(tl::Device&)>;

struct OpRun {
  const char* name;
  Run run;
};

std::vector<OpRun> representative_ops() {
  auto v = [](std::initializer_list<tl::Tensor> ts) {
    std::vector<std::vector<double>> out;
    for (const auto& x : ts) out.push_back(x.to_vector());
    return out;
  };
  return {
      {"flash_attention",
       [=](tl::Device& dev) {
         auto q = tl::randn(dev, {1, 33, 2, 64}, DType::Float16, 1);
         auto k = tl::randn(dev, {1, 33, 2, 64}, DType::Float16, 2);
         auto r = flash_attention(q, k, k, {.causal = true});
         return v({r.o, r.lse});
       }},
      {"flash_attention_backward",
       [=](tl::Device& dev) {
         auto q = tl::randn(dev, {1, 7, 2, 64}, DType::BFloat16, 3);
         auto r = flash_attention(q, q, q);
         auto g = flash_attention_backward(q, q, q, q, r.o, r.lse);
         return v({g.dq, g.dk, g.dv});
       }},
      {"gemm",
       [=](tl::Device& dev) {
         return v({gemm(tl::randn(dev, {33, 64}, DType::Float16, 4),
                        tl::randn(dev, {64, 32}, DType::Float16, 5))});
       }},
      {"rms_norm",
       [=](tl::Device& dev) {
         auto x = tl::randn(dev, {7, 256}, DType::BFloat16, 6);
         auto w = tl::randn(dev, {256}, DType::BFloat16, 7);
         auto g = rms_norm_backward(x, x, w);
         return v({rms_norm(x, w).y, g.dx, g.dw});
       }},
      {"layer_norm",
       [=](tl::Device& dev) {
         return v({layer_norm(tl::randn(dev, {7, 256}, DType::BFloat16, 8)).y});
       }},
      {"softmax",
       [=](tl::Device& dev) {
         auto y = softmax(tl::randn(dev, {7, 130}, DType::BFloat16, 9));
         return v({y, log_softmax_backward(y, y)});
       }},
      {"swiglu",
       [=](tl::Device& dev) {
         return v({swiglu(tl::randn(dev, {7, 256}, DType::BFloat16, 10))});
       }},
      {"rope",
       [=](tl::Device& dev) {
         auto x = tl::randn(dev, {7, 2, 64}, DType::Float16, 11);
         auto c = tl::randn(dev, {7, 64}, DType::Float32, 12);
         return v({rope(x, c, c)});
       }},
      {"topk_gate",
       [=](tl::Device& dev) {
         auto r = topk_gate(tl::randn(dev, {7, 64}, DType::Float32, 13));
         return v({r.weights, r.indices});
       }},
  };
}

// Every op above, run in one process and again in a new one: every kernel the first wrote is a
// disk hit in the second (none rejected, nothing compiled), and the outputs are bit-identical.
TEST(OpsDiskCache, RepresentativeLibraryKernelsRoundTripThroughTheDisk) {
  for (const OpRun& op : representative_ops()) {
    SCOPED_TRACE(op.name);
    tl::jittest::TempDir d;
    tl::jittest::ScopedEnv dir("TL_CACHE_DIR", d.str());
    new_process();
    tl::jit::reset_cache_stats();
    tl::Device dev1;
    const auto want = op.run(dev1);
    const auto first = tl::jit::cache_stats();
    EXPECT_GT(first.disk_writes, 0u);
    EXPECT_EQ(first.disk_writes, first.misses);
    new_process();
    tl::jit::reset_cache_stats();
    tl::Device dev2;
    const auto got = op.run(dev2);
    const auto s = tl::jit::cache_stats();
    EXPECT_EQ(s.disk_hits, first.disk_writes);
    EXPECT_EQ(s.disk_rejects, 0u);
    EXPECT_EQ(s.misses, 0u);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].size(), want[i].size());
      for (size_t j = 0; j < got[i].size(); ++j)
        if (!(got[i][j] == want[i][j] || (std::isnan(got[i][j]) && std::isnan(want[i][j]))))
          FAIL() << "output " << i << " element " << j << ": " << got[i][j] << " vs " << want[i][j];
    }
  }
}

}  // namespace
