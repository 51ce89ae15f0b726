// Launch parameters come from the target (issue 30, "launch parameters from the target's core
// counts and UB size (never hard-coded)"; docs/must_show.md): on A2 (24 AICs, 48 AIVs), 910B4
// (20 / 40) and 950 (32 / 64) the keys launch the target's own block counts, and ops run on a
// 910B4 Device match their fp64 references at tail shapes. The Python twins check A2's keys
// (test_opslib_twin.py); this is the same rule across chips.
#include <gtest/gtest.h>

#include "cann_ops_tilelang/attention.h"
#include "cann_ops_tilelang/gemm.h"
#include "cann_ops_tilelang/moe.h"
#include "cann_ops_tilelang/norm.h"
#include "ops/gemm_ref.h"
#include "ops/ops_seed.h"
#include "ops/ops_testing.h"
#include "ops/rms_norm_ref.h"

namespace {

using namespace cann_ops_tilelang;
using tl::DType;

TEST(OpsTargets, KeysLaunchTheTargetsOwnBlockCounts) {
  for (const char* name : {"A2", "910B4", "950"}) {
    SCOPED_TRACE(name);
    const tl::Target& t = tl::get_target(name);
    const int64_t vec_blocks = t.num_aiv / 2;
    EXPECT_EQ(
        rms_norm_fwd_key(DType::BFloat16, 7168, false, false, t, Checker("rms_norm", {})).blocks,
        vec_blocks);
    EXPECT_EQ(rms_norm_bwd_key(DType::BFloat16, 7168, t, Checker("rms_norm_backward", {})).blocks,
              vec_blocks);
    EXPECT_EQ(layer_norm_key(DType::BFloat16, 7168, true, true, false, t, Checker("layer_norm", {}))
                  .blocks,
              vec_blocks);
    EXPECT_EQ(topk_gate_key(DType::Float32, 256, 8, GateScoring::Sigmoid, true, true, t,
                            Checker("topk_gate", {}))
                  .blocks,
              vec_blocks);
    EXPECT_EQ(
        gemm_key(DType::Float16, DType::Float16, 1230, 1079, false, false, t, Checker("gemm", {}))
            .blocks,
        t.num_aic);
    EXPECT_EQ(flash_attention_key(DType::Float16, 2, 128, false, AttentionLayout::BSHD,
                                  0.08838834764831845, t)
                  .blocks,
              t.num_aic);
  }
}

TEST(OpsTargets, OpsOn910B4MatchTheirReferences) {
  tl::Device dev(tl::get_target("910B4"));
  const uint64_t seed = opstest::test_seed();
  // RMSNorm: 33 rows over 40 AIVs (a tail tile), bf16
  const int64_t M = 33, H = 512;
  auto x = tl::randn(dev, {M, H}, DType::BFloat16, seed);
  auto w = tl::uniform(dev, {H}, DType::BFloat16, seed + 1, 0.5, 1.5);
  auto y = rms_norm(x, w).y;
  auto want = opstest::ref::rms_norm_fwd(x.to_vector(), nullptr, w.to_vector(), M, H, 1e-6);
  EXPECT_EQ(opstest::allclose(y.to_vector(), want.y, H, opstest::tolerance(DType::BFloat16), "y"),
            "");
  // GEMM: 33 x 7 x 65 fp16 on 20 AICs
  auto a = tl::randn(dev, {33, 65}, DType::Float16, seed + 2);
  auto b = tl::randn(dev, {65, 7}, DType::Float16, seed + 3);
  auto c = gemm(a, b, {.out_dtype = DType::Float32});
  auto cw = opstest::ref::gemm(a.to_vector(), b.to_vector(), 33, 7, 65, false, false);
  EXPECT_LT(opstest::calc_diff(c.to_vector(), cw), 1e-6);
}

}  // namespace
