// Streamed timed mode (src/npu/trace_stream.h): a timing-only launch hands its events to the
// timing model as the interpreter records them. Its profile must be the whole-trace one to the
// cycle: the same model over the same per-core event sequences. Each case launches once with a
// caller trace (recorded whole, then npu::simulate_timing) and streamed, with the default
// window and with a window of a few events (every core held and released over and over, the
// caps raised where a kernel's cross-core dependencies span more than the window), on one and
// on two host threads.
#include <gtest/gtest.h>

#include <cstdlib>

#include "cann_ops_tilelang/attention.h"
#include "example_cases.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"

namespace tl {
namespace {

/// Sets TL_TRACE_WINDOW for one scope.
struct Window {
  explicit Window(const char* v) {
    if (v)
      setenv("TL_TRACE_WINDOW", v, 1);
    else
      unsetenv("TL_TRACE_WINDOW");
  }
  ~Window() { unsetenv("TL_TRACE_WINDOW"); }
};

npu::Profile run(const PrimFunc& f, const ArgsFn& args, bool whole, int threads,
                 bool instructions = true) {
  Device dev;
  auto kern = compile(f);
  auto a = args(dev);
  npu::Profile prof;
  npu::Trace trace;
  LaunchOptions opt;
  opt.threads = threads;
  opt.timing_only = true;
  opt.profile = &prof;
  opt.profile_instructions = instructions;
  if (whole) opt.trace = &trace;
  kern.launch(dev, a, opt);
  return prof;
}

void expect_same(const npu::Profile& want, const npu::Profile& got, bool instructions,
                 const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(got.total_cycles, want.total_cycles);
  EXPECT_EQ(got.events, want.events);
  EXPECT_EQ(got.gm_bytes, want.gm_bytes);
  EXPECT_EQ(got.gm_hbm_bytes, want.gm_hbm_bytes);
  ASSERT_EQ(got.cores.size(), want.cores.size());
  for (size_t c = 0; c < want.cores.size(); ++c) {
    const auto &w = want.cores[c], &g = got.cores[c];
    EXPECT_EQ(g.name, w.name);
    EXPECT_EQ(g.phys, w.phys) << w.name;
    EXPECT_EQ(g.start, w.start) << w.name;
    EXPECT_EQ(g.end, w.end) << w.name;
    EXPECT_EQ(g.instructions, w.instructions) << w.name;
    EXPECT_EQ(g.busy, w.busy) << w.name;
    if (instructions)
      EXPECT_EQ(g.issue, w.issue) << w.name;
    else
      EXPECT_TRUE(g.issue.empty()) << w.name;
  }
  if (!instructions) {
    EXPECT_TRUE(got.instrs.empty());
    return;
  }
  ASSERT_EQ(got.instrs.size(), want.instrs.size());
  for (size_t i = 0; i < want.instrs.size(); ++i) {
    const auto &w = want.instrs[i], &g = got.instrs[i];
    ASSERT_TRUE(g.core == w.core && g.event == w.event && g.pipe == w.pipe && g.start == w.start &&
                g.end == w.end && g.name == w.name && g.loc == w.loc)
        << "instruction " << i << ": " << w.name << " at " << w.loc;
  }
}

void check(const std::string& name, const PrimFunc& f, const ArgsFn& args) {
  const npu::Profile whole = run(f, args, /*whole=*/true, 1);
  ASSERT_GT(whole.events, 0) << name;
  for (const char* window : {static_cast<const char*>(nullptr), "3", "40"})
    for (int threads : {1, 2}) {
      Window w(window);
      const std::string what =
          fmt::format("{}, window {}, {} thread(s)", name, window ? window : "default", threads);
      expect_same(whole, run(f, args, false, threads), true, what);
      expect_same(whole, run(f, args, false, threads, /*instructions=*/false), false, what);
    }
}

TEST(TimedStream, ExamplesGiveTheWholeTraceCycles) {
  for (const auto& c : {gemm_case(), minicv_case(), flash_attention_case(), rms_norm_case(2),
                        rms_norm_case(1), flash_attention_pipelined_case(), gemm_pipelined_case()})
    check(c.name, c.f, c.args);
}

TEST(TimedStream, SyncAllAcrossBlocks) {
  // ring_sum: every AIV of every block meets at T.sync_all; 33 columns (padded copies).
  const int M = 37, N = 33;
  check("ring_sum",
        build_kernel(find_kernel("ring_sum"), sizes({{"M", M}, {"N", N}, {"blocks", 3}})),
        [=](Device& dev) -> std::vector<Arg> {
          return {uniform(dev, {M, N}, f16, 1), Tensor::empty(dev, {M, N}, f16)};
        });
}

TEST(TimedStream, LibraryFlashAttentionCubeAndVectorOnTails) {
  // The library's FlashAttention: the AIC's QK^T and PV and the AIVs' softmax exchange
  // cross-core flags every kv step; S = 1, 33 and 200 leave tail tiles, H = 3 several blocks.
  const Target& target = default_target();
  for (int64_t S : {1, 33, 200}) {
    const int64_t H = 3, D = 64;
    auto key = cann_ops_tilelang::flash_attention_key(
        DType::Float16, H, D, false, cann_ops_tilelang::AttentionLayout::BHSD, 0.125, target);
    check(fmt::format("flash_attention S={}", S), cann_ops_tilelang::flash_attention_kernel(key),
          [=](Device& dev) -> std::vector<Arg> {
            std::vector<Arg> a;
            for (int i = 0; i < 3; ++i) a.emplace_back(uniform(dev, {1, H, S, D}, f16, 11 + i));
            a.emplace_back(Tensor::empty(dev, {1, H, S, D}, f16));
            a.emplace_back(Tensor::empty(dev, {1, H, S}, f32));
            a.emplace_back(cann_ops_tilelang::flash_attention_idx(dev, key));
            return a;
          });
  }
}

TEST(TimedStream, BadWindowIsAnError) {
  Window w("lots");
  auto c = gemm_case();
  try {
    run(c.f, c.args, false, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("TL_TRACE_WINDOW must be a positive number"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("'lots'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tl
