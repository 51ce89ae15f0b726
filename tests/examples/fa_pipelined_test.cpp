// examples/flash_attention_pipelined.cpp (the cube one kv-tile ahead of the AIVs' softmax,
// seed 003 DAY 4): matches the fp64 reference at its defaults and at a larger size, and is
// bit-identical for 1 and 2 host threads.
#include <gtest/gtest.h>

#include <cmath>

#include "common/references.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"

namespace tl {
namespace {

struct FaRun {
  std::vector<double> out, want;
  int D = 0;
};

// Builds `kernel` with `overrides`, fills Q, K, V with uniform fp16 values, allocates O and
// the workspaces from the signature, launches and returns O with the reference.
FaRun run_fa(const std::string& kernel, const std::map<std::string, std::string>& overrides,
             int threads) {
  PrimFunc f = build_kernel(find_kernel(kernel), overrides);
  Device dev;
  std::vector<Arg> args;
  for (size_t i = 0; i < f->params.size(); ++i) {
    const Buffer& t = f->params[i].tensor;
    std::vector<int64_t> shape;
    for (const auto& s : t->shape) shape.push_back(*as_const_int(s));
    if (i < 3)
      args.emplace_back(uniform(dev, shape, t->dtype, 7 + i));
    else
      args.emplace_back(Tensor::empty(dev, shape, t->dtype));
  }
  compile(f).launch(dev, args, {.threads = threads});
  const Tensor& q = std::get<Tensor>(args[0].value);
  int S = static_cast<int>(q.dim(2)), D = static_cast<int>(q.dim(3));
  EXPECT_EQ(q.dim(0) * q.dim(1), 1) << "the reference below covers one (batch, head)";
  FaRun r;
  r.D = D;
  r.out = std::get<Tensor>(args[3].value).to_vector();
  r.want = ref::attention(q.to_vector(), std::get<Tensor>(args[1].value).to_vector(),
                          std::get<Tensor>(args[2].value).to_vector(), S, D, 1.0 / std::sqrt(D));
  return r;
}

TEST(FlashAttentionPipelined, MatchesReferenceAtDefaults) {  // S=512, D=512: 8 kv-tiles
  FaRun r = run_fa("flash_attention_pipelined", {}, 2);
  EXPECT_EQ(r.D, 512);
  EXPECT_EQ(ref::compare(r.out, r.want, r.D, 2e-3, 2e-3), "");
}

TEST(FlashAttentionPipelined, MatchesReferenceS1024D128) {  // 16 kv-tiles, one PV chunk
  FaRun r = run_fa("flash_attention_pipelined", {{"S", "1024"}, {"D", "128"}, {"bD", "128"}}, 2);
  EXPECT_EQ(ref::compare(r.out, r.want, r.D, 2e-3, 2e-3), "");
}

TEST(FlashAttentionPipelined, OddAndSingleTileCounts) {  // prologue/epilogue edge cases
  for (const char* S : {"64", "192"}) {
    FaRun r = run_fa("flash_attention_pipelined", {{"S", S}, {"D", "128"}, {"bD", "128"}}, 2);
    EXPECT_EQ(ref::compare(r.out, r.want, r.D, 2e-3, 2e-3), "") << "S=" << S;
  }
}

TEST(FlashAttentionPipelined, SameResultAsSerialFlashAttention) {
  // Same math, same order of every floating-point operation per tile: bit-identical outputs.
  std::map<std::string, std::string> sz = {{"S", "256"}, {"D", "128"}, {"bD", "128"}};
  EXPECT_EQ(run_fa("flash_attention_pipelined", sz, 2).out, run_fa("flash_attention", sz, 2).out);
}

TEST(FlashAttentionPipelined, OneThreadEqualsTwoThreads) {
  EXPECT_EQ(run_fa("flash_attention_pipelined", {}, 1).out,
            run_fa("flash_attention_pipelined", {}, 2).out);
}

}  // namespace
}  // namespace tl

// The seeds' pipelining story (seed 003, DAY 4: 44.9 -> 22.3 us on hardware): in the timing
// model the pipelined kernel, whose cube computes the next QK^T while the AIVs do the current
// softmax, is clearly faster than the serial handoff at the same sizes.
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"

namespace tl {
namespace {
double timed_us(const std::string& kernel) {
  Device dev;
  auto f = build_kernel(find_kernel(kernel));
  auto kern = compile(f);
  std::vector<Arg> args;
  for (const auto& p : f->params) {
    std::vector<int64_t> shape;
    for (const auto& s : p.tensor->shape) shape.push_back(*as_const_int(s));
    args.emplace_back(Tensor::empty(dev, shape, p.tensor->dtype));
  }
  npu::Trace trace;
  kern.launch(dev, args, {.trace = &trace, .timing_only = true});
  return npu::simulate_timing(trace, dev.target()).total_us;
}

TEST(FlashAttentionPipelining, TimedModelShowsTheBubblesFilled) {
  double serial = timed_us("flash_attention"), pipelined = timed_us("flash_attention_pipelined");
  RecordProperty("serial_us", std::to_string(serial));
  RecordProperty("pipelined_us", std::to_string(pipelined));
  EXPECT_GT(serial / pipelined, 1.3)
      << "serial " << serial << " us, pipelined " << pipelined << " us";
}
}  // namespace
}  // namespace tl
