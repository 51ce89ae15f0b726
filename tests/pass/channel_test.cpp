// Cross-core channels in developer mode (DEVMODE.md sections 2, 4, 7; docs/developer_mode.md,
// "Data that crosses cores"). The passes' IR text in, IR text out and their errors live in
// tests/pass/infer_scopes_crossings*.tl, legalize_copies_channels.tl,
// insert_channel_syncs_channels.tl, insert_channel_syncs_errors.tl and
// elide_channel_credits_kept.tl. Kept here, because `tlc opt` cannot express them:
// - runs of whole kernels on the virtual NPU (flag balance on every core, the launcher's
//   workspace allocation) and compiles of the developer examples through the whole pipeline;
// - that a kernel without workspaces comes back as the same function object (no copy);
// - T.alloc_workspace itself: parse/print round trip and the signature (the parser's API). The
//   verifier's rejections of a workspace are tests/pass/verify_errors.tl.
#include "pass_test_util.h"

#include <cmath>

#include "tl/kernel_registry.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/npu/stale.h"
#include "tl/verifier.h"

namespace tl {
namespace {

using testing::error_of;

constexpr const char* kSplitChannel = R"(@T.prim_func
def f(C: T.Tensor((64, 32), "float32")):
    with T.Kernel(2, is_npu=True) as (cid, vid):
        ws = T.alloc_workspace((2, 1, 32, 32), "float32", channel_slots=1)
        with T.Scope("Cube"):
            c = T.alloc_L0C((32, 32), "float32")
            T.copy(c, ws[cid:cid + 1, 0:1, 0:32, 0:32])
        with T.Scope("Vector"):
            if vid == 0:
                c_ub = T.alloc_ub((32, 32), "float32")
                T.copy(ws[cid:cid + 1, 0:1, 0:32, 0:32], c_ub)
                T.copy(c_ub, C[cid * 32:cid * 32 + 32, 0:32])
)";

// TheProducerSetsAfterItsCopy..., AChannelInsideALoopGetsCredits...:
// tests/pass/insert_channel_syncs.tl.

TEST(InsertChannelSyncs, AKernelWithoutWorkspacesIsReturnedUnchanged) {
  PrimFunc f = parse(R"(@T.prim_func
def f(P: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            if vid == 0:
                p = T.alloc_ub((32, 32), "float16")
                T.copy(P, p)
)");
  EXPECT_EQ(insert_channel_syncs(f, default_target()), f);
}

TEST(InsertChannelSyncs, FlashAttentionDevBalancesEveryFlagOnEveryCore) {
  // End to end: three channels per kv-tile, 1 to 3 iterations, under the hazard checker (which
  // reports a flag or cross-core counter left set) on 1 and 2 host threads.
  for (const char* S : {"64", "128", "192"}) {
    SCOPED_TRACE(S);
    PrimFunc f = build_kernel(find_kernel("flash_attention_dev"),
                              {{"S", S}, {"D", "32"}, {"bM", "64"}, {"bN", "64"}});
    auto kern = compile(f);
    for (int threads : {1, 2}) {
      Device dev;
      std::vector<Arg> args;
      for (const auto& prm : f->params) {
        std::vector<int64_t> shape;
        for (const auto& e : prm.tensor->shape) shape.push_back(*as_const_int(e));
        args.emplace_back(Tensor::empty(dev, shape, prm.tensor->dtype));
      }
      EXPECT_NO_THROW(kern.launch(dev, args, {.threads = threads, .check_hazards = true}));
    }
  }
}

// elide_channel_credits: FlashAttention's three credits are implied by its round trip, so its
// lowered kernel keeps only the three data flags, at every trip count (the mutation test in
// tests/npu/hazard_mutation_test.cpp deletes each remaining sync); with minimise_syncs off all
// six ids stay.
TEST(ElideChannelCredits, FlashAttentionKeepsOnlyItsDataFlags) {
  auto cross_ids = [](const PrimFunc& f) {
    std::set<int64_t> ids;
    pre_order_visit(f->body, [&](const Stmt& s) {
      if (auto* y = s.as<SyncNode>(); y && y->sync_kind == SyncKind::SetCrossFlag)
        ids.insert(*as_const_int(y->event_id));
    });
    return ids;
  };
  // Up to 4 kv-tiles the pipelined schedule has no loop left (one steady trip is written out),
  // so there is no credit either way.
  for (const char* S : {"64", "128", "200", "320", "512"}) {
    SCOPED_TRACE(S);
    PrimFunc f = build_kernel(find_kernel("flash_attention_dev"), {{"S", S}, {"D", "64"}});
    EXPECT_EQ(cross_ids(compile(f, default_target(), {.cache = false}).func()).size(), 3u);
    CompileOptions all;
    all.cache = false;
    all.dev.minimise_syncs = false;
    EXPECT_EQ(cross_ids(compile(f, default_target(), all).func()).size(),
              std::atoi(S) > 256 ? 6u : 3u);
  }
}

TEST(Workspace, PrintsAndParsesBackAndIsNotInTheSignature) {
  std::string text = kSplitChannel;
  PrimFunc f = parse(text);
  EXPECT_EQ(print(f, {.locations = false}), text);
  ASSERT_EQ(f->params.size(), 1u);  // C only
}

// VerifierRejectsAPinnedAddressAndAnEmptyDimension: tests/pass/verify_errors.tl.

TEST(Workspace, TheLauncherAllocatesItPerLaunchPoisonedAndCountsItsBytes) {
  // An expert vector kernel staging X through a workspace: MTE3 out, MTE2 back in, ordered by
  // flags; Y = X, and one element of the workspace never written reads back as NaN.
  auto X = T::Tensor("X", {8, 64}, f32), Y = T::Tensor("Y", {8, 64}, f32),
       Z = T::Tensor("Z", {8}, f32);
  PrimFunc f = T::prim_func("stage", {X, Y, Z}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      auto ws = T::alloc_workspace("ws", {2, 8, 64}, f32);
      T::Scope(Core::Vector, [&] {
        T::If(vid == 0, [&] {
          auto x = T::alloc_ub("x", {8, 64}, f32), z = T::alloc_ub("z", {8}, f32);
          T::copy(X, x);
          T::set_flag(Pipe::MTE2, Pipe::MTE3, 0);
          T::wait_flag(Pipe::MTE2, Pipe::MTE3, 0);
          T::copy(x, ws.region({0, 0, 0}, {1, 8, 64}));
          T::set_flag(Pipe::MTE3, Pipe::MTE2, 0);
          T::wait_flag(Pipe::MTE3, Pipe::MTE2, 0);
          T::copy(ws.region({0, 0, 0}, {1, 8, 64}), x);
          T::copy(ws.region({1, 0, 0}, {1, 1, 8}), z);  // never written
          T::set_flag(Pipe::MTE2, Pipe::MTE3, 0);
          T::wait_flag(Pipe::MTE2, Pipe::MTE3, 0);
          T::copy(x, Y);
          T::copy(z, Z);
        });
      });
    });
  });
  ASSERT_EQ(f->params.size(), 3u);
  auto kern = compile(f);
  Device dev;
  std::vector<double> in(8 * 64);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<double>(i) * 0.5;
  Tensor x = from_vector(dev, {8, 64}, f32, in), y = Tensor::empty(dev, {8, 64}, f32),
         z = Tensor::empty(dev, {8}, f32);
  dev.reset_peak();
  const int64_t before = dev.gm_peak_bytes();
  std::vector<npu::StaleFinding> stale;
  kern.launch(dev, {x, y, z}, {.check_hazards = true, .stale_findings = &stale});
  std::vector<double> out = y.to_vector();
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(out[i], in[i]) << i;
  for (double v : z.to_vector()) EXPECT_TRUE(std::isnan(v));
  // The stale-data checker reports the read of the never-written workspace row, and only it.
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0].buffer, "Z");
  EXPECT_EQ(stale[0].invalid, 8);
  EXPECT_EQ(stale[0].origin, "never written in this launch");
  EXPECT_GE(dev.gm_peak_bytes() - before, 2 * 8 * 64 * 4);  // the workspace was on the device
}

// The capacity table names what the compiler made each of its buffers for: bf16 adds run in
// fp32, so 128 x 128 tiles of matmul_add_dev overflow UB on one AIV (split_aiv off: with it,
// each AIV holds half the rows and they fit).
TEST(DeveloperErrors, TheOverflowTableNamesCompilerMadeBuffers) {
  PrimFunc f = build_kernel(find_kernel("matmul_add_dev"),
                            {{"bM", "128"}, {"bN", "256"}, {"dtype", "bfloat16"}});
  CompileOptions one_aiv;
  one_aiv.dev.split_aiv = false;
  std::string msg = error_of([&] { compile(f, default_target(), one_aiv); });
  EXPECT_NE(msg.find("UB needs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("UB twin of 'c', examples/matmul_add_dev.cpp:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("temporary of an element loop, examples/matmul_add_dev.cpp:35"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("examples/matmul_add_dev.cpp:27"), std::string::npos)
      << msg;  // d, the author's
}

}  // namespace
}  // namespace tl
