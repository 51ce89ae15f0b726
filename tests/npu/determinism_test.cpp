// Determinism of timed launches (docs/virtual_npu.md, "Execution model"; the project's standard
// "same inputs, same outputs and simulated cycles, for any host thread count"). Cross-core
// kernels (cube and vector cores exchanging flags and GM workspaces) are launched in timed mode
// with data several times, on 1 and on several host threads, and every run must give the same
// simulated time, the same start and end cycle for every instruction, and the same bytes in
// every tensor. The cases: the library's FlashAttention forward (causal, S a tail of its tiles)
// and the developer-mode examples flash_attention_dev and matmul_add_dev (split into cube and
// vector kernels by the compiler).
//
// Why: one FlashAttention kernel variant (the library's at commit eecd6a0, the mask on every kv
// tile) was reported to give 227.0 or 229.7 us across runs at S=1024 H=16 D=128 causal. With
// today's simulator that kernel gives 226.963 us on every run (8 `tlc op --profile` processes;
// 12 in-process runs on 1, 3, 8 and 24 host threads, timing-only), and the timing model's
// inputs (the trace) hold no host addresses but GM ones, which it compares only for identity
// (the L2 model) or takes relative to their tensor (the 512-byte alignment). This test keeps it
// that way on kernels that exercise cross-core flags and GM workspaces.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cann_ops_tilelang/attention.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"
#include "tl/runtime.h"

namespace tl {
namespace {

/// What one timed run gives: the profile's cycles per instruction and every tensor's bytes.
struct Outcome {
  double total_cycles = 0;
  std::vector<npu::TimedInstr> instrs;
  std::vector<std::vector<uint8_t>> tensors;
};

/// An empty string when a and b agree exactly, else the first difference.
std::string compare(const Outcome& a, const Outcome& b) {
  if (a.total_cycles != b.total_cycles)
    return fmt::format("total cycles {} against {}", a.total_cycles, b.total_cycles);
  if (a.instrs.size() != b.instrs.size())
    return fmt::format("{} instructions against {}", a.instrs.size(), b.instrs.size());
  for (size_t i = 0; i < a.instrs.size(); ++i) {
    const auto &x = a.instrs[i], &y = b.instrs[i];
    if (x.core != y.core || x.event != y.event || x.start != y.start || x.end != y.end)
      return fmt::format(
          "instruction {} ({} at {}): core {} event {} [{}, {}] against core {} "
          "event {} [{}, {}]",
          i, x.name, x.loc, x.core, x.event, x.start, x.end, y.core, y.event, y.start, y.end);
  }
  if (a.tensors.size() != b.tensors.size()) return "a different number of tensors";
  for (size_t t = 0; t < a.tensors.size(); ++t)
    if (a.tensors[t] != b.tensors[t]) return fmt::format("the bytes of tensor {} differ", t);
  return "";
}

/// Runs `once(threads, check_stale)` three times on each of 1, 2 and 4 host threads (the third
/// run without the stale-data checker, which must not change the timing either); every outcome
/// must equal the first.
void expect_deterministic(const std::function<Outcome(int, bool)>& once) {
  const Outcome first = once(1, true);
  ASSERT_GT(first.total_cycles, 0);
  ASSERT_FALSE(first.instrs.empty());
  for (int threads : {1, 2, 4})
    for (int rep = 0; rep < 3; ++rep) {
      if (threads == 1 && rep == 0) continue;
      const Outcome o = once(threads, rep != 2);
      EXPECT_EQ(compare(first, o), "") << "run " << rep << " on " << threads << " host threads"
                                       << (rep == 2 ? ", unchecked" : "");
    }
}

Outcome from_profile(npu::Profile&& p, const std::vector<Tensor>& tensors) {
  Outcome o;
  EXPECT_TRUE(p.time_order_effects.empty())
      << "unsynchronised pair changed the result: " << p.time_order_effects.front();
  o.total_cycles = p.total_cycles;
  o.instrs = std::move(p.instrs);
  for (const auto& t : tensors) o.tensors.emplace_back(t.data(), t.data() + t.nbytes());
  return o;
}

// The library's FlashAttention: persistent workers on every AIC, a causal mask, S = 273 (tails
// of the 64-row q tiles and the 128-row kv steps), bf16.
TEST(Determinism, FlashAttentionOpTimedIsTheSameOnAnyThreadCount) {
  expect_deterministic([](int threads, bool check_stale) {
    Device dev;
    const std::vector<int64_t> shape{1, 273, 2, 128};
    auto q = randn(dev, shape, DType::BFloat16, 11);
    auto k = randn(dev, shape, DType::BFloat16, 12);
    auto v = randn(dev, shape, DType::BFloat16, 13);
    cann_ops_tilelang::RunOptions ro;
    ro.profile = true;
    ro.launch.threads = threads;
    ro.launch.check_stale = check_stale;
    cann_ops_tilelang::FlashAttentionResult r;
    {
      cann_ops_tilelang::ScopedRun scope(ro);
      r = cann_ops_tilelang::flash_attention(q, k, v, {.causal = true});
    }
    EXPECT_EQ(ro.profiles.size(), 1u);
    return from_profile(std::move(ro.profiles.at(0)), {r.o, r.lse});
  });
}

/// One timed launch of a registered example on uniform inputs (seeded by position).
Outcome run_example(const PrimFunc& f, int threads, bool check_stale) {
  Device dev;
  std::vector<Arg> args;
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < f->params.size(); ++i) {
    const auto& p = f->params[i];
    if (!p.is_tensor()) {
      args.emplace_back(is_float(p.scalar.dtype()) ? 1e-6 : 0.0);
      continue;
    }
    std::vector<int64_t> shape;
    for (const auto& s : p.tensor->shape) shape.push_back(*as_const_int(s));
    Tensor t = uniform(dev, shape, p.tensor->dtype, 100 + i, -1, 1);
    tensors.push_back(t);
    args.emplace_back(t);
  }
  npu::Profile prof;
  compile(f, default_target(), {.cache = false})
      .launch(dev, args, {.threads = threads, .profile = &prof, .check_stale = check_stale});
  return from_profile(std::move(prof), tensors);
}

TEST(Determinism, DeveloperFlashAttentionTimedIsTheSameOnAnyThreadCount) {
  const PrimFunc f = build_kernel(find_kernel("flash_attention_dev"),
                                  {{"H", "2"}, {"S", "200"}, {"D", "64"}, {"dtype", "bfloat16"}});
  expect_deterministic([&](int threads, bool check) { return run_example(f, threads, check); });
}

TEST(Determinism, DeveloperMatmulAddTimedIsTheSameOnAnyThreadCount) {
  const PrimFunc f = build_kernel(find_kernel("matmul_add_dev"), {});
  expect_deterministic([&](int threads, bool check) { return run_example(f, threads, check); });
}

}  // namespace
}  // namespace tl
