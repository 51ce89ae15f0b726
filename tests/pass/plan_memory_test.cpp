// plan_memory on IR text: reuse of bytes between buffers whose live ranges are disjoint,
// alignment, live ranges widened over loops, explicit addresses, per-scope memories, fractal
// padding, and the capacity error with its per-buffer table.
#include "pass/pass_test_util.h"

#include "tl/target.h"

namespace tl {
namespace {

using testing::error_of;
using testing::run_on_text;

std::string planned(std::string_view text, const Target& t = default_target()) {
  return run_on_text(text, [&](const PrimFunc& f) { return plan_memory(f, t); });
}

// BuffersWithDisjointLiveRangesShareBytes: tests/pass/plan_memory.tl.

TEST(PlanMemory, LiveTogetherMeansDisjointAndAligned) {
  // 12-byte and 40-byte buffers live at the same time: each starts on a 32-byte boundary.
  // Declaration order (a, b, c, d: 136 bytes) beats largest first (d, a, b, c: 140 bytes).
  constexpr std::string_view in = R"(@T.prim_func
def f(X: T.Tensor((16,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((3,), "float32")
            b = T.alloc_ub((3,), "float32")
            c = T.alloc_ub((3,), "float32")
            d = T.alloc_ub((10,), "float32")
            T.tile.fill(a, 1.0)
            T.tile.fill(b, 1.0)
            T.tile.fill(c, 1.0)
            T.tile.fill(d, 1.0)
            T.tile.add(a, b, c)
            T.tile.add(d, d, d)
            T.tile.add(a, a, a)
)";
  constexpr std::string_view out = R"(@T.prim_func
def f(X: T.Tensor((16,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((3,), "float32", address=0)
            b = T.alloc_ub((3,), "float32", address=32)
            c = T.alloc_ub((3,), "float32", address=64)
            d = T.alloc_ub((10,), "float32", address=96)
            T.tile.fill(a, 1.0)
            T.tile.fill(b, 1.0)
            T.tile.fill(c, 1.0)
            T.tile.fill(d, 1.0)
            T.tile.add(a, b, c)
            T.tile.add(d, d, d)
            T.tile.add(a, a, a)
)";
  EXPECT_EQ(planned(in), out);
}

TEST(PlanMemory, ValuesLiveAcrossIterationsOfLoopsOutsideTheirDeclaration) {
  // acc is declared outside the loop and only touched at the top of its body, yet it carries
  // a value from one iteration to the next: it is live for the whole loop, so t (used at the
  // bottom) cannot take its bytes. s is declared inside the body: a fresh value per
  // iteration, dead before t is born, so t reuses it (the barriers order s's fill before t's,
  // and t's before the next iteration's fill of s).
  constexpr std::string_view in = R"(@T.prim_func
def f(X: T.Tensor((64,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            acc = T.alloc_ub((64,), "float32")
            T.tile.fill(acc, 0.0)
            for k in T.serial(4):
                T.tile.add(acc, acc, acc)
                s = T.alloc_ub((64,), "float32")
                t = T.alloc_ub((64,), "float32")
                T.tile.fill(s, 1.0)
                T.pipe_barrier("V")
                T.tile.fill(t, 2.0)
                T.pipe_barrier("V")
)";
  constexpr std::string_view out = R"(@T.prim_func
def f(X: T.Tensor((64,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            acc = T.alloc_ub((64,), "float32", address=0)
            T.tile.fill(acc, 0.0)
            for k in T.serial(4):
                T.tile.add(acc, acc, acc)
                s = T.alloc_ub((64,), "float32", address=256)
                t = T.alloc_ub((64,), "float32", address=256)
                T.tile.fill(s, 1.0)
                T.pipe_barrier("V")
                T.tile.fill(t, 2.0)
                T.pipe_barrier("V")
)";
  EXPECT_EQ(planned(in), out);
}

TEST(PlanMemory, ExplicitAddressesAreKeptAndReservedWhileLive) {
  // e sits at 0 by hand. b (512 B, the largest, placed first) is born after e's last use
  // (ordered before it by the barrier), so it may take e's bytes; a is live with both e and
  // b, so it goes above both.
  constexpr std::string_view in = R"(@T.prim_func
def f(X: T.Tensor((64,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            e = T.alloc_ub((64,), "float32", address=0)
            a = T.alloc_ub((64,), "float32")
            b = T.alloc_ub((128,), "float32")
            T.tile.fill(e, 0.0)
            T.tile.add(a, e, e)
            T.pipe_barrier("V")
            T.tile.fill(b, 1.0)
            T.tile.add(a, a, a)
)";
  constexpr std::string_view out = R"(@T.prim_func
def f(X: T.Tensor((64,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            e = T.alloc_ub((64,), "float32", address=0)
            a = T.alloc_ub((64,), "float32", address=512)
            b = T.alloc_ub((128,), "float32", address=0)
            T.tile.fill(e, 0.0)
            T.tile.add(a, e, e)
            T.pipe_barrier("V")
            T.tile.fill(b, 1.0)
            T.tile.add(a, a, a)
)";
  EXPECT_EQ(planned(in), out);
}

/// The regression of tilelang-ascend issue 1156: disjoint live ranges are not enough on a chip
/// whose pipes run concurrently. c's first access (an MTE2 load) would overwrite a's bytes while
/// the V exp may still read them: nothing orders V before MTE2 here, so c gets its own bytes.
/// With set_flag(V, MTE2) / wait_flag the program orders them and c may take a's bytes.
TEST(PlanMemory, ReuseAcrossPipesNeedsTheProgramToOrderThem) {
  auto kernel = [](bool flag) {
    return fmt::format(R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32")
            b = T.alloc_ub((16, 64), "float32")
            T.copy(X, a)
            T.set_flag("MTE2", "V", 0)
            T.wait_flag("MTE2", "V", 0)
            T.tile.exp(b, a){}
            c = T.alloc_ub((16, 64), "float32")
            T.copy(X, c)
            T.set_flag("MTE2", "V", 0)
            T.wait_flag("MTE2", "V", 0)
            T.tile.add(b, b, c)
            T.set_flag("V", "MTE3", 0)
            T.wait_flag("V", "MTE3", 0)
            T.copy(b, Y)
)",
                       flag ? "\n            T.set_flag(\"V\", \"MTE2\", 0)\n            T.wait_flag(\"V\", \"MTE2\", 0)" : "");
  };
  std::string racy = planned(kernel(false));
  EXPECT_NE(racy.find(R"(a = T.alloc_ub((16, 64), "float32", address=0))"), std::string::npos) << racy;
  EXPECT_NE(racy.find(R"(c = T.alloc_ub((16, 64), "float32", address=8192))"), std::string::npos) << racy;
  std::string ordered = planned(kernel(true));
  EXPECT_NE(ordered.find(R"(c = T.alloc_ub((16, 64), "float32", address=0))"), std::string::npos) << ordered;
}

TEST(PlanMemory, WithSyncsToFollowDisjointBuffersShareAndInsertSyncsOrdersThem) {
  // A developer kernel is planned before it has syncs: c may take a's bytes (a is dead once
  // exp has read it), and insert_syncs, on the planned addresses, orders exp's read of a
  // before the copy that overwrites those bytes (V -> MTE2).
  const std::string text = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32")
            b = T.alloc_ub((16, 64), "float32")
            T.copy(X, a)
            T.tile.exp(b, a)
            c = T.alloc_ub((16, 64), "float32")
            T.copy(X, c)
            T.tile.add(b, b, c)
            T.copy(b, Y)
)";
  const Target& t = default_target();
  std::string apart = run_on_text(text, [&](const PrimFunc& f) { return plan_memory(f, t); });
  EXPECT_NE(apart.find(R"(c = T.alloc_ub((16, 64), "float32", address=8192))"), std::string::npos) << apart;
  std::string shared = run_on_text(text, [&](const PrimFunc& f) { return insert_syncs(plan_memory(f, t, true), t); });
  EXPECT_NE(shared.find(R"(c = T.alloc_ub((16, 64), "float32", address=0))"), std::string::npos) << shared;
  size_t exp = shared.find("T.tile.exp(b, a)"), wait = shared.find(R"(T.wait_flag("V", "MTE2")"),
         copy = shared.find("T.copy(X, c)");
  ASSERT_NE(wait, std::string::npos) << shared;
  EXPECT_LT(exp, wait) << shared;
  EXPECT_LT(wait, copy) << shared;
}

TEST(PlanMemory, ReuseWithinALoopNeedsTheBackEdgeOrderedToo) {
  // s and t are fresh per iteration and t takes s's bytes within one iteration (the first
  // barrier), but iteration i's fill of t then races iteration i+1's fill of s unless something
  // on the back edge orders them: without the second barrier they get separate bytes.
  auto kernel = [](bool back_edge_barrier) {
    return fmt::format(R"(@T.prim_func
def f(X: T.Tensor((64,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            for k in T.serial(4):
                s = T.alloc_ub((64,), "float32")
                t = T.alloc_ub((64,), "float32")
                T.tile.fill(s, 1.0)
                T.pipe_barrier("V")
                T.tile.fill(t, 2.0){}
)",
                       back_edge_barrier ? "\n                T.pipe_barrier(\"V\")" : "");
  };
  std::string racy = planned(kernel(false));
  EXPECT_NE(racy.find(R"(t = T.alloc_ub((64,), "float32", address=256))"), std::string::npos) << racy;
  std::string ordered = planned(kernel(true));
  EXPECT_NE(ordered.find(R"(t = T.alloc_ub((64,), "float32", address=0))"), std::string::npos) << ordered;
}

TEST(PlanMemory, BranchesInsideALoopMeetAcrossIterations) {
  // p lives only in the then branch and q only in the else branch, so within one iteration they
  // never meet; but around the back edge iteration i's store of one meets iteration i+1's fill
  // of the other. The else branch orders its store before the next fill (MTE3 -> V); the then
  // branch only when `both` is set, and only then may p and q share bytes.
  auto kernel = [](bool both) {
    return fmt::format(R"(@T.prim_func
def f(X: T.Tensor((64,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            for k in T.serial(4):
                p = T.alloc_ub((64,), "float32")
                q = T.alloc_ub((64,), "float32")
                if k % 2 == 0:
                    T.tile.fill(p, 0.0)
                    T.set_flag("V", "MTE3", 0)
                    T.wait_flag("V", "MTE3", 0)
                    T.copy(p, X){}
                else:
                    T.tile.fill(q, 1.0)
                    T.set_flag("V", "MTE3", 0)
                    T.wait_flag("V", "MTE3", 0)
                    T.copy(q, X)
                    T.set_flag("MTE3", "V", 0)
                    T.wait_flag("MTE3", "V", 0)
)",
                       both ? "\n                    T.set_flag(\"MTE3\", \"V\", 0)\n                    T.wait_flag(\"MTE3\", \"V\", 0)" : "");
  };
  std::string racy = planned(kernel(false));
  EXPECT_NE(racy.find(R"(q = T.alloc_ub((64,), "float32", address=256))"), std::string::npos) << racy;
  std::string ordered = planned(kernel(true));
  EXPECT_NE(ordered.find(R"(q = T.alloc_ub((64,), "float32", address=0))"), std::string::npos) << ordered;
}

TEST(PlanMemory, OverflowSaysWhichReusesWereRefusedAndWhy) {
  // Three 80 KB tiles fit UB (192 KB) only if c takes a's bytes, which nothing orders.
  constexpr std::string_view in = R"(@T.prim_func
def f(X: T.Tensor((320, 64), "float32"), Y: T.Tensor((320, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((320, 64), "float32")  # @k.cpp:5
            b = T.alloc_ub((320, 64), "float32")  # @k.cpp:6
            T.copy(X, a)  # @k.cpp:7
            T.set_flag("MTE2", "V", 0)
            T.wait_flag("MTE2", "V", 0)
            T.tile.exp(b, a)  # @k.cpp:10
            c = T.alloc_ub((320, 64), "float32")  # @k.cpp:11
            T.copy(X, c)  # @k.cpp:12
            T.set_flag("MTE2", "V", 0)
            T.wait_flag("MTE2", "V", 0)
            T.tile.add(b, b, c)
            T.set_flag("V", "MTE3", 0)
            T.wait_flag("V", "MTE3", 0)
            T.copy(b, Y)
)";
  std::string msg = error_of([&] { planned(in); });
  EXPECT_NE(msg.find("UB needs 245,760 bytes, capacity 196,352"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reuse refused for 1 pair(s)"), std::string::npos) << msg;
  // The first unordered pair: the two loads (MTE2 overlaps consecutive DMAs).
  EXPECT_NE(msg.find("'c' after 'a': T.copy (MTE2) at k.cpp:7 writes 'a', then T.copy (MTE2) at k.cpp:12 "
                     "writes 'c': MTE2 may overlap consecutive instructions and nothing orders these two"),
            std::string::npos)
      << msg;
}

TEST(PlanMemory, EachScopeIsItsOwnMemoryAndFractalsArePadded) {
  // L1 and UB buffers both start at 0 (different memories, different cores). The L0C tile
  // (16, 8) fp32 pads its columns to 16: 1 KiB, so the next L0C buffer starts at 1024. The
  // L1 (20, 16) fp16 tile pads its rows to 32: 1 KiB.
  constexpr std::string_view in = R"(@T.prim_func
def f(A: T.Tensor((32, 16), "float16"), B: T.Tensor((16, 32), "float16"), C: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Cube"):
            a_l1 = T.alloc_L1((20, 16), "float16")
            b_l1 = T.alloc_L1((16, 16), "float16")
            c0 = T.alloc_L0C((16, 8), "float32")
            c1 = T.alloc_L0C((16, 16), "float32")
            T.copy(A[0:20, 0:16], a_l1)
            T.copy(B[0:16, 0:16], b_l1)
            T.gemm_v0(a_l1[0:16, 0:16], b_l1[0:16, 0:8], c0, True)
            T.gemm_v0(a_l1[0:16, 0:16], b_l1, c1, True)
            T.copy(c0, C[0:16, 0:8])
            T.copy(c1, C[16:32, 0:16])
        with T.Scope("Vector"):
            u = T.alloc_ub((8, 8), "float32")
            T.copy(C[0:8, 0:8], u)
)";
  std::string got = planned(in);
  EXPECT_NE(got.find(R"(a_l1 = T.alloc_L1((20, 16), "float16", address=0))"), std::string::npos) << got;
  EXPECT_NE(got.find(R"(b_l1 = T.alloc_L1((16, 16), "float16", address=1024))"), std::string::npos) << got;
  // c0 and c1 are both 1 KiB; the one used first (c0) is placed first.
  EXPECT_NE(got.find(R"(c0 = T.alloc_L0C((16, 8), "float32", address=0))"), std::string::npos) << got;
  EXPECT_NE(got.find(R"(c1 = T.alloc_L0C((16, 16), "float32", address=1024))"), std::string::npos) << got;
  EXPECT_NE(got.find(R"(u = T.alloc_ub((8, 8), "float32", address=0))"), std::string::npos) << got;
}

TEST(PlanMemory, BranchesOfAnIfDoNotOverlapInTime) {
  // p lives only in the then branch, q only in the else branch: they share bytes.
  constexpr std::string_view in = R"(@T.prim_func
def f(X: T.Tensor((64,), "float32")):
    with T.Kernel(2, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            p = T.alloc_ub((64,), "float32")
            q = T.alloc_ub((64,), "float32")
            if cid == 0:
                T.tile.fill(p, 0.0)
                T.copy(p, X)
            else:
                T.tile.fill(q, 1.0)
                T.copy(q, X)
)";
  std::string got = planned(in);
  EXPECT_NE(got.find(R"(p = T.alloc_ub((64,), "float32", address=0))"), std::string::npos) << got;
  EXPECT_NE(got.find(R"(q = T.alloc_ub((64,), "float32", address=0))"), std::string::npos) << got;
}

TEST(PlanMemory, AlreadyPlannedKernelsComeBackUnchanged) {
  PrimFunc f = parse(R"(@T.prim_func
def f(X: T.Tensor((64,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            p = T.alloc_ub((64,), "float32", address=256)
            T.tile.fill(p, 0.0)
)");
  EXPECT_EQ(plan_memory(f, default_target()), f);
}

TEST(PlanMemory, OverflowIsAnErrorWithTheScopesBufferTable) {
  // Three 64 KiB fp32 buffers all live at the last add: 196,608 bytes > 196,352 on A2.
  constexpr std::string_view in = R"(@T.prim_func
def big(X: T.Tensor((64, 256), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((64, 256), "float32")
            b = T.alloc_ub((64, 256), "float32")
            c = T.alloc_ub((64, 256), "float32")
            T.copy(X, a)
            T.copy(X, b)
            T.tile.add(c, a, b)
)";
  std::string msg = error_of([&] { planned(in); });
  EXPECT_NE(msg.find("kernel big: UB needs 196,608 bytes, capacity 196,352 on A2"), std::string::npos) << msg;
  for (const char* col : {"name", "shape", "dtype", "bytes", "live stmts", "declared at", "offset"})
    EXPECT_NE(msg.find(col), std::string::npos) << col << "\n" << msg;
  EXPECT_NE(msg.find("(64, 256)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("65,536"), std::string::npos) << msg;
  EXPECT_NE(msg.find("131,072"), std::string::npos) << msg;  // c's offset
}

TEST(PlanMemory, SymbolicOnChipShapesAreUserErrors) {
  std::string msg = error_of([] {
    planned(R"(N = T.dynamic("N")

@T.prim_func
def f(X: T.Tensor((N,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            p = T.alloc_ub((N,), "float32")
            T.tile.fill(p, 0.0)
)");
  });
  EXPECT_NE(msg.find("buffer 'p': on-chip buffer shapes must be positive constants"), std::string::npos) << msg;
}

}  // namespace
}  // namespace tl
