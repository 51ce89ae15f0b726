// Cross-core channels in developer mode (DEVMODE.md sections 2, 4, 7; docs/developer_mode.md,
// "Data that crosses cores"): infer_scopes gives a gemm accumulator the vector unit reads a UB
// twin and one crossing copy; legalize_copies turns an L0C -> UB copy into a channel through a
// compiler-made GM workspace; insert_channel_syncs orders the channel with a cross-core flag and
// runs AIV 1's side of the protocol. IR text in, IR text out; matmul_add_dev runs end to end in
// tests/examples/developer_examples_test.cpp. Also T.alloc_workspace itself: parse/print, the
// verifier, and the launcher's allocation.
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

std::string after(std::string_view text, PrimFunc (*pass)(const PrimFunc&, const Target&)) {
  return testing::run_on_text(text, [&](const PrimFunc& f) { return pass(f, default_target()); });
}

TEST(InferScopes, AnAccumulatorTheVectorReadsGetsAUbTwinAndOneCrossingCopy) {
  EXPECT_EQ(after(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        d = T.alloc_shared((32, 32), "float16")
        T.copy(A, a)
        T.gemm(a, a, c, True)
        for i in T.Parallel(32):
            for j in T.Parallel(32):
                d[i, j] = T.cast(c[i, j], "float16")
        T.copy(d, C)
)",
                  infer_scopes),
            R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_L1((32, 32), "float16")
        c = T.alloc_L0C((32, 32), "float32")
        c_ub = T.alloc_ub((32, 32), "float32")
        d = T.alloc_ub((32, 32), "float16")
        T.copy(A, a)
        T.gemm(a, a, c, True)
        T.copy(c, c_ub)
        for i in T.Parallel(32):
            for j in T.Parallel(32):
                d[i, j] = T.cast(c_ub[i, j], "float16")
        T.copy(d, C)
)");
}

TEST(InferScopes, ACrossingCarriedAcrossLoopIterationsIsAnErrorNamingTheStatement) {
  std::string msg = error_of([] {
    after(R"(@T.prim_func
def f(A: T.Tensor((32, 32), "float16"), C: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, threads=1) as cid:
        a = T.alloc_shared((32, 32), "float16")
        c = T.alloc_fragment((32, 32), "float32")
        T.copy(A, a)
        T.gemm(a, a, c, True)
        for k in T.serial(2):
            T.tile.exp(c, c)
            T.gemm(a, a, c, True)
        T.copy(c, C)
)",
          infer_scopes);
  });
  EXPECT_NE(msg.find("buffer 'c': `T.tile.exp(c, c)` reads it from the vector unit before the cube "
                     "writes it in the "
                     "same iteration"),
            std::string::npos)
      << msg;
}

TEST(InferScopes, InsideALoopEachIterationCrossesAndAVectorTileCrossesToTheCube) {
  // Attention's ping-pong: S = Q K^T on the cube, P = f(S) on the vector unit, O = P V on the
  // cube: s crosses to the vector unit (UB twin), p to the cube (L1 twin), once per iteration.
  std::string out = after(R"(@T.prim_func
def f(Q: T.Tensor((32, 32), "float16"), O: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, threads=1) as cid:
        q = T.alloc_shared((32, 32), "float16")
        s = T.alloc_fragment((32, 32), "float32")
        p = T.alloc_shared((32, 32), "float16")
        o = T.alloc_fragment((32, 32), "float32")
        T.copy(Q, q)
        for k in T.serial(3):
            T.gemm(q, q, s, True)
            for i in T.Parallel(32):
                for j in T.Parallel(32):
                    p[i, j] = T.cast(s[i, j], "float16")
            T.gemm(p, q, o, True)
            T.copy(o, O)
)",
                          infer_scopes);
  EXPECT_NE(out.find(R"(        s = T.alloc_L0C((32, 32), "float32")
        s_ub = T.alloc_ub((32, 32), "float32")
        p = T.alloc_ub((32, 32), "float16")
        p_l1 = T.alloc_L1((32, 32), "float16"))"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(R"(        for k in T.serial(3):
            T.gemm(q, q, s, True)
            T.copy(s, s_ub)
            for i in T.Parallel(32):
                for j in T.Parallel(32):
                    p[i, j] = T.cast(s_ub[i, j], "float16")
            T.copy(p, p_l1)
            T.gemm(p_l1, q, o, True)
            T.copy(o, O))"),
            std::string::npos)
      << out;
}

TEST(LegalizeCopies, AnL0CToUbCopyBecomesAChannelThroughAWorkspace) {
  EXPECT_EQ(after(R"(@T.prim_func
def f(C: T.Tensor((64, 32), "float32")):
    with T.Kernel(2, threads=1) as cid:
        c = T.alloc_L0C((32, 32), "float32")
        c_ub = T.alloc_ub((32, 32), "float32")
        T.copy(c, c_ub)
        T.copy(c_ub, C[cid * 32:cid * 32 + 32, 0:32])
)",
                  legalize_copies),
            R"(@T.prim_func
def f(C: T.Tensor((64, 32), "float32")):
    with T.Kernel(2, threads=1) as cid:
        c_ub_ws = T.alloc_workspace((2, 1, 32, 32), "float32", channel_slots=1)
        c = T.alloc_L0C((32, 32), "float32")
        c_ub = T.alloc_ub((32, 32), "float32")
        T.copy(c, c_ub_ws[cid:cid + 1, 0:1, 0:32, 0:32])
        T.copy(c_ub_ws[cid:cid + 1, 0:1, 0:32, 0:32], c_ub)
        T.copy(c_ub, C[cid * 32:cid * 32 + 32, 0:32])
)");
}

// lower_cube_ops drains a split accumulator chunk by chunk: crossings that write column parts
// of one tile, covering it, become one channel (each part to its columns of the slot, one
// consumer copy of the whole slot after the last part).
TEST(LegalizeCopies, ColumnPartsOfOneCrossingTileMakeOneChannel) {
  EXPECT_EQ(after(R"(@T.prim_func
def f(C: T.Tensor((64, 64), "float32")):
    with T.Kernel(2, threads=1) as cid:
        c = T.alloc_L0C((64, 32), "float32")
        c_ub = T.alloc_ub((32, 64), "float32")
        T.copy(c[0:32, 0:32], c_ub[0:32, 0:32])
        T.copy(c[32:64, 0:32], c_ub[0:32, 32:64])
        T.copy(c_ub, C[cid * 32:cid * 32 + 32, 0:64])
)",
                  legalize_copies),
            R"(@T.prim_func
def f(C: T.Tensor((64, 64), "float32")):
    with T.Kernel(2, threads=1) as cid:
        c_ub_ws = T.alloc_workspace((2, 1, 32, 64), "float32", channel_slots=1)
        c = T.alloc_L0C((64, 32), "float32")
        c_ub = T.alloc_ub((32, 64), "float32")
        T.copy(c[0:32, 0:32], c_ub_ws[cid:cid + 1, 0:1, 0:32, 0:32])
        T.copy(c[32:64, 0:32], c_ub_ws[cid:cid + 1, 0:1, 0:32, 32:64])
        T.copy(c_ub_ws[cid:cid + 1, 0:1, 0:32, 0:64], c_ub)
        T.copy(c_ub, C[cid * 32:cid * 32 + 32, 0:64])
)");
}

// Parts that do not cover the tile (or overlap) stay separate channels: one consumer copy of
// the whole slot would bring in columns nobody wrote.
TEST(LegalizeCopies, PartsThatDoNotCoverTheTileStaySeparateChannels) {
  std::string out = after(R"(@T.prim_func
def f(C: T.Tensor((64, 64), "float32")):
    with T.Kernel(2, threads=1) as cid:
        c = T.alloc_L0C((64, 32), "float32")
        c_ub = T.alloc_ub((32, 64), "float32")
        T.copy(c[0:32, 0:16], c_ub[0:32, 0:16])
        T.copy(c[32:64, 0:32], c_ub[0:32, 32:64])
        T.copy(c_ub, C[cid * 32:cid * 32 + 32, 0:64])
)",
                          legalize_copies);
  EXPECT_NE(out.find("c_ub_ws = T.alloc_workspace((2, 1, 32, 16)"), std::string::npos) << out;
  EXPECT_NE(out.find("c_ub_ws1 = T.alloc_workspace((2, 1, 32, 32)"), std::string::npos) << out;
}

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

// A slot filled in column parts: the producer waits for its credit before the first part and
// raises the data flag after the last, so the counts balance as for one copy.
TEST(InsertChannelSyncs, ASlotFilledInColumnPartsIsFlaggedOnce) {
  std::string out = after(R"(@T.prim_func
def f(C: T.Tensor((64, 64), "float32")):
    with T.Kernel(2, is_npu=True) as (cid, vid):
        ws = T.alloc_workspace((2, 1, 32, 64), "float32", channel_slots=1)
        with T.Scope("Cube"):
            c = T.alloc_L0C((64, 32), "float32")
            for k in T.serial(3):
                T.copy(c[0:32, 0:32], ws[cid:cid + 1, 0:1, 0:32, 0:32])
                T.copy(c[32:64, 0:32], ws[cid:cid + 1, 0:1, 0:32, 32:64])
        with T.Scope("Vector"):
            if vid == 0:
                c_ub = T.alloc_ub((32, 64), "float32")
                for k in T.serial(3):
                    T.copy(ws[cid:cid + 1, 0:1, 0:32, 0:64], c_ub)
                    T.copy(c_ub, C[cid * 32:cid * 32 + 32, 0:64])
)",
                          insert_channel_syncs);
  EXPECT_NE(out.find(R"(            for k in T.serial(3):
                T.wait_cross_flag(1, auto=True)
                T.copy(c[0:32, 0:32], ws[cid:cid + 1, 0:1, 0:32, 0:32])
                T.copy(c[32:64, 0:32], ws[cid:cid + 1, 0:1, 0:32, 32:64])
                T.set_cross_flag("FIX", 0, mode=2, auto=True)
            T.wait_cross_flag(1, auto=True)
)"),
            std::string::npos)
      << out;
}

TEST(InsertChannelSyncs, AVectorToCubeChannelSetsOnMTE3AndBothAivsSet) {
  // The AIC's wait completes once both AIVs have set: AIV 1 sets too, alone.
  EXPECT_EQ(after(R"(@T.prim_func
def f(P: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        ws = T.alloc_workspace((1, 1, 32, 32), "float16", channel_slots=1)
        with T.Scope("Cube"):
            p_l1 = T.alloc_L1((32, 32), "float16")
            T.copy(ws[cid:cid + 1, 0:1, 0:32, 0:32], p_l1)
        with T.Scope("Vector"):
            if vid == 0:
                p = T.alloc_ub((32, 32), "float16")
                T.copy(P, p)
                T.copy(p, ws[cid:cid + 1, 0:1, 0:32, 0:32])
)",
                  insert_channel_syncs),
            R"(@T.prim_func
def f(P: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        ws = T.alloc_workspace((1, 1, 32, 32), "float16", channel_slots=1)
        with T.Scope("Cube"):
            p_l1 = T.alloc_L1((32, 32), "float16")
            T.wait_cross_flag(0, auto=True)
            T.copy(ws[cid:cid + 1, 0:1, 0:32, 0:32], p_l1)
        with T.Scope("Vector"):
            if vid == 0:
                p = T.alloc_ub((32, 32), "float16")
                T.copy(P, p)
                T.copy(p, ws[cid:cid + 1, 0:1, 0:32, 0:32])
                T.set_cross_flag("MTE3", 0, mode=2, auto=True)
            else:
                T.set_cross_flag("MTE3", 0, mode=2, auto=True)
)");
}

TEST(InsertChannelSyncs, RunningItAgainAddsNothing) {
  // The pass's output already carries its flags (origin auto): a second run must not add a
  // second protocol (the pass manager may rerun the tail of the pipeline).
  const std::string text = R"(@T.prim_func
def f(P: T.Tensor((32, 32), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        ws = T.alloc_workspace((1, 1, 32, 32), "float16", channel_slots=1)
        with T.Scope("Cube"):
            p_l1 = T.alloc_L1((32, 32), "float16")
            T.copy(ws[cid:cid + 1, 0:1, 0:32, 0:32], p_l1)
        with T.Scope("Vector"):
            if vid == 0:
                p = T.alloc_ub((32, 32), "float16")
                T.copy(P, p)
                T.copy(p, ws[cid:cid + 1, 0:1, 0:32, 0:32])
)";
  std::string once = after(text, insert_channel_syncs);
  EXPECT_EQ(after(once, insert_channel_syncs), once);
}

TEST(InsertChannelSyncs, ACubeToVectorChannelSetsOnFixAndWaitsOnBothAivs) {
  // L0C -> GM goes through the fixpipe: the cube sets from FIX once its copy is issued; each AIV
  // waits (AIV 1 only to keep the counter balanced).
  std::string out = after(R"(@T.prim_func
def f(C: T.Tensor((32, 32), "float32")):
    with T.Kernel(2, is_npu=True) as (cid, vid):
        ws = T.alloc_workspace((2, 1, 32, 32), "float32", channel_slots=1)
        with T.Scope("Cube"):
            c = T.alloc_L0C((32, 32), "float32")
            T.copy(c, ws[cid:cid + 1, 0:1, 0:32, 0:32])
        with T.Scope("Vector"):
            if vid == 0:
                c_ub = T.alloc_ub((32, 32), "float32")
                T.copy(ws[cid:cid + 1, 0:1, 0:32, 0:32], c_ub)
                T.copy(c_ub, C)
)",
                          insert_channel_syncs);
  EXPECT_EQ(out, R"(@T.prim_func
def f(C: T.Tensor((32, 32), "float32")):
    with T.Kernel(2, is_npu=True) as (cid, vid):
        ws = T.alloc_workspace((2, 1, 32, 32), "float32", channel_slots=1)
        with T.Scope("Cube"):
            c = T.alloc_L0C((32, 32), "float32")
            T.copy(c, ws[cid:cid + 1, 0:1, 0:32, 0:32])
            T.set_cross_flag("FIX", 0, mode=2, auto=True)
        with T.Scope("Vector"):
            if vid == 0:
                c_ub = T.alloc_ub((32, 32), "float32")
                T.wait_cross_flag(0, auto=True)
                T.copy(ws[cid:cid + 1, 0:1, 0:32, 0:32], c_ub)
                T.copy(c_ub, C)
            else:
                T.wait_cross_flag(0, auto=True)
)");
}

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

TEST(InsertChannelSyncs, EachChannelHasItsOwnIdsAndAiv1KeepsTheLoopsAndIfsAroundItsFlags) {
  std::string out = after(R"(@T.prim_func
def f(C: T.Tensor((32, 32), "float32"), n: T.int32):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        w0 = T.alloc_workspace((1, 1, 32, 32), "float32", channel_slots=1)
        w1 = T.alloc_workspace((1, 1, 32, 32), "float32", channel_slots=1)
        with T.Scope("Cube"):
            c = T.alloc_L0C((32, 32), "float32")
            T.copy(c, w0[cid:cid + 1, 0:1, 0:32, 0:32])
            for k in T.serial(n):
                if k > 0:
                    T.copy(c, w1[cid:cid + 1, 0:1, 0:32, 0:32])
        with T.Scope("Vector"):
            if vid == 0:
                x = T.alloc_ub((32, 32), "float32")
                T.copy(w0[cid:cid + 1, 0:1, 0:32, 0:32], x)
                for k in T.serial(n):
                    if k > 0:
                        T.copy(w1[cid:cid + 1, 0:1, 0:32, 0:32], x)
                        T.copy(x, C)
)",
                          insert_channel_syncs);
  // w0 (top level): data flag 0, no credit; w1 (in a loop): data flag 1, credit flag 2.
  EXPECT_NE(out.find(R"(            T.copy(c, w0[cid:cid + 1, 0:1, 0:32, 0:32])
            T.set_cross_flag("FIX", 0, mode=2, auto=True)
            for k in T.serial(n):
                if k > 0:
                    T.wait_cross_flag(2, auto=True)
                    T.copy(c, w1[cid:cid + 1, 0:1, 0:32, 0:32])
                    T.set_cross_flag("FIX", 1, mode=2, auto=True)
            T.wait_cross_flag(2, auto=True))"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(R"(            else:
                T.set_cross_flag("MTE2", 2, mode=2, auto=True)
                T.wait_cross_flag(0, auto=True)
                for k in T.serial(n):
                    if k > 0:
                        T.wait_cross_flag(1, auto=True)
                        T.set_cross_flag("MTE2", 2, mode=2, auto=True))"),
            std::string::npos)
      << out;
}

TEST(InsertChannelSyncs, MoreChannelsThanCrossCoreFlagsIsAnError) {
  std::string text = R"(@T.prim_func
def f():
    with T.Kernel(1, is_npu=True) as (cid, vid):
)";
  for (int i = 0; i < 12; ++i)
    text += fmt::format(
        "        w{} = T.alloc_workspace((1, 1, 32), \"float32\", channel_slots=1)\n", i);
  text +=
      "        with T.Scope(\"Vector\"):\n            if vid == 0:\n                x = "
      "T.alloc_ub((1, 32), \"float32\")\n";
  std::string msg = error_of([&] { after(text, insert_channel_syncs); });
  EXPECT_NE(msg.find("the cross-core channels need more than 11 cross-core flags"),
            std::string::npos)
      << msg;
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

// A channel one way only: nothing else orders the producer's overwrite of a slot after the
// consumer's read, so the credit stays; so does every credit of a loop whose trip count is not a
// constant (the replay that proves a credit implied needs the whole protocol).
TEST(ElideChannelCredits, ACreditNothingElseImpliesOrABoundTheReplayCannotKnowStays) {
  std::string text = R"(@T.prim_func
def f(C: T.Tensor((64, 32), "float32"), n: T.int32):
    with T.Kernel(2, is_npu=True) as (cid, vid):
        ws = T.alloc_workspace((2, 1, 32, 32), "float32", channel_slots=1)
        with T.Scope("Cube"):
            c = T.alloc_L0C((32, 32), "float32")
            for k in T.serial(EXTENT):
                T.copy(c, ws[cid:cid + 1, 0:1, 0:32, 0:32])
        with T.Scope("Vector"):
            if vid == 0:
                c_ub = T.alloc_ub((32, 32), "float32")
                for k in T.serial(EXTENT):
                    T.copy(ws[cid:cid + 1, 0:1, 0:32, 0:32], c_ub)
                    T.copy(c_ub, C[cid * 32:cid * 32 + 32, 0:32])
)";
  for (const char* extent : {"3", "n"}) {
    SCOPED_TRACE(extent);
    std::string t = text;
    for (size_t at; (at = t.find("EXTENT")) != std::string::npos;) t.replace(at, 6, extent);
    PrimFunc synced = insert_channel_syncs(parse(t), default_target());
    EXPECT_EQ(print(elide_channel_credits(synced, default_target())), print(synced));
  }
}

TEST(Workspace, PrintsAndParsesBackAndIsNotInTheSignature) {
  std::string text = kSplitChannel;
  PrimFunc f = parse(text);
  EXPECT_EQ(print(f, {.locations = false}), text);
  ASSERT_EQ(f->params.size(), 1u);  // C only
}

TEST(Workspace, VerifierRejectsAPinnedAddressAndAnEmptyDimension) {
  PrimFunc f = parse(R"(@T.prim_func
def f():
    with T.Kernel(1, is_npu=True) as (cid, vid):
        ws = T.alloc_workspace((2, 1, 0), "float32", channel_slots=1)
        w2 = T.alloc_workspace((4,), "float32", address=64)
)");
  std::string all = format_diagnostics(verify(f, default_target()));
  EXPECT_NE(all.find("[rule: buffer-shape]"), std::string::npos) << all;
  EXPECT_NE(all.find("[rule: workspace-address]"), std::string::npos) << all;
}

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
