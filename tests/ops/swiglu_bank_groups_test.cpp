// plan_memory's UB bank groups (docs/compiler.md, "plan_memory") on the kernels that cannot
// avoid conflicts by declaration order: the weighted SwiGLU forward and backward, whose [bM]
// fp32 row vectors keep 8-row AIV tiles of whole 512-byte periods, so the default layout starts
// every fp32 tile in one bank group. Each kernel is compiled twice, with the bank-group placement
// (the default) and without it (DeveloperOptions::bank_groups off: the old layout), run on the
// same inputs (a tail tile of rows included) in timed mode with data; the outputs must be
// bit-identical, and the conflicting instructions, counted from the trace, fewer, and the
// simulated time shorter, with the placement.
#include <gtest/gtest.h>

#include <cstring>

#include "cann_ops_tilelang/activation.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

struct Run {
  int conflicts = 0, vector_instrs = 0;
  double cycles = 0;
  std::vector<std::vector<uint8_t>> outputs;
};

/// Launches `f` compiled with or without the bank-group placement on `make_args()`'s tensors
/// in timed mode with data, and keeps the bytes of the tensors at `outputs` (argument indices).
Run run(tl::Device& dev, const tl::PrimFunc& f, bool bank_groups,
        const std::function<std::vector<tl::Arg>()>& make_args,
        const std::vector<size_t>& outputs) {
  tl::CompileOptions opt;
  opt.dev.bank_groups = bank_groups;
  auto k = tl::compile(f, dev.target(), opt);
  auto args = make_args();
  tl::npu::Trace trace;
  tl::npu::Profile prof;
  k.launch(dev, args, {.trace = &trace, .profile = &prof, .profile_instructions = false});
  Run r;
  r.cycles = prof.total_cycles;
  for (const auto& c : trace.cores)
    for (const auto& e : c.events) {
      if (!tl::is_vector_cost(e.cost) || e.kind != tl::npu::EventKind::Op) continue;
      ++r.vector_instrs;
      r.conflicts += e.bank_conflict;
    }
  for (size_t i : outputs) {
    const auto& t = std::get<tl::Tensor>(args[i].value);
    r.outputs.emplace_back(t.data(), t.data() + t.nbytes());
  }
  EXPECT_TRUE(prof.time_order_effects.empty());
  return r;
}

void expect_fewer_conflicts_same_bytes(const Run& on, const Run& off, const char* what) {
  SCOPED_TRACE(what);
  EXPECT_GT(off.conflicts, 0) << "the old layout conflicts (the case tests nothing otherwise)";
  EXPECT_LT(on.conflicts, off.conflicts) << "of " << on.vector_instrs << " vector instructions";
  EXPECT_LT(on.cycles, off.cycles);
  ASSERT_EQ(on.outputs.size(), off.outputs.size());
  for (size_t i = 0; i < on.outputs.size(); ++i)
    EXPECT_TRUE(on.outputs[i] == off.outputs[i]) << "output " << i << " differs";
}

// T = 33 tokens: two whole 16-row tiles and a tail tile of one row (clipped copies).
constexpr int64_t kTokens = 33, kHidden = 2048;

TEST(SwigluBankGroups, WeightedForwardConflictsLessWithIdenticalOutputs) {
  tl::Device dev;
  for (bool clamp : {false, true}) {
    SwigluConfig cfg;
    if (clamp) cfg.clamp = 10.0;
    const auto key =
        swiglu_key(DType::BFloat16, kHidden, false, cfg, true, dev.target(), Checker("swiglu", {}));
    auto f = swiglu_fwd_kernel(key);
    auto x = tl::randn(dev, {kTokens, 2 * kHidden}, DType::BFloat16, 31);
    auto w = tl::uniform(dev, {kTokens}, DType::Float32, 32, 0.5, 2.0);
    auto args = [&] {
      std::vector<tl::Arg> a{x, w, tl::Tensor::empty(dev, {kTokens, kHidden}, DType::BFloat16)};
      if (clamp) a.emplace_back(10.0);
      return a;
    };
    auto on = run(dev, f, true, args, {2}), off = run(dev, f, false, args, {2});
    expect_fewer_conflicts_same_bytes(on, off,
                                      clamp ? "forward, clamp, weight" : "forward, weight");
  }
}

TEST(SwigluBankGroups, WeightedBackwardConflictsLessWithIdenticalOutputs) {
  tl::Device dev;
  SwigluConfig cfg;
  cfg.clamp = 10.0;
  const auto key = swiglu_key(DType::BFloat16, kHidden, true, cfg, true, dev.target(),
                              Checker("swiglu_backward", {}));
  auto f = swiglu_bwd_kernel(key);
  const int64_t chunks = kHidden / key.chunk;
  auto dy = tl::randn(dev, {kTokens, kHidden}, DType::BFloat16, 41);
  auto x = tl::randn(dev, {kTokens, 2 * kHidden}, DType::BFloat16, 42, 4.0);  // some past 10
  auto w = tl::uniform(dev, {kTokens}, DType::Float32, 43, 0.5, 2.0);
  auto args = [&] {
    return std::vector<tl::Arg>{dy,
                                x,
                                w,
                                tl::Tensor::empty(dev, {kTokens, 2 * kHidden}, DType::BFloat16),
                                tl::Tensor::empty(dev, {chunks, kTokens}, DType::Float32),
                                10.0};
  };
  auto on = run(dev, f, true, args, {3, 4}), off = run(dev, f, false, args, {3, 4});
  expect_fewer_conflicts_same_bytes(on, off, "backward, clamp, weight");
}

}  // namespace
