// insert_syncs on IR text: the synchronisation it writes for straight-line code, same-pipe
// dependences, loops (double buffering, dependences over the back edge), if/else joins, scalar
// reads, bytes plan_memory shares between buffers, loop iterations on disjoint rows, many
// live flags, cross-core flags the
// compiler wrote and a pipe pair without a hardware event; that it leaves scopes with syncs
// of their own alone and is idempotent; and
// that its `auto=True` marks print and parse back. Every output is also launched on the
// virtual NPU with the hazard checker (no unordered pair, no deadlock, flags balanced).
#include "pass/pass_test_util.h"

#include "tl/ir_equal.h"
#include "tl/npu/npu.h"
#include "tl/npu/stale.h"
#include "tl/target.h"

namespace tl {
namespace {

using testing::run_on_text;

/// Launches `f` with the hazard and flag checkers on (a tl::Error on any finding), and the
/// stale-data checker, whose findings (one line each) go to `stale` when given. Tensor
/// parameters get uniform data.
void launch_checked(const PrimFunc& f, std::string* stale = nullptr) {
  Device dev;
  std::vector<Arg> args;
  uint64_t seed = 1;
  for (const auto& p : f->params) {
    ASSERT_TRUE(p.is_tensor()) << p.name();
    std::vector<int64_t> shape;
    for (const auto& e : p.tensor->shape) shape.push_back(*as_const_int(e));
    args.push_back(uniform(dev, shape, p.tensor->dtype, seed++));
  }
  std::vector<npu::StaleFinding> found;
  compile(f, default_target(), {.cache = false})
      .launch(dev, args,
              {.threads = 1, .check_hazards = true, .stale_findings = stale ? &found : nullptr});
  for (const auto& x : found) *stale += x.str() + "\n";
}

/// insert_syncs on `text`, printed without locations; the result is launched checked (the
/// stale-data checker's findings to `stale` when given).
std::string inserted(std::string_view text, std::string* stale = nullptr) {
  return run_on_text(text, [stale](const PrimFunc& f) {
    PrimFunc g = insert_syncs(f, default_target());
    launch_checked(g, stale);
    return g;
  });
}

TEST(InsertSyncs, StraightLineLoadComputeStore) {
  // MTE2 -> V -> MTE3: each set right after its source, each wait right before its use.
  constexpr std::string_view in = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=4096)
            T.copy(X, a)
            T.tile.exp(b, a)
            T.copy(b, Y[vid:vid + 1, 0:16, 0:64])
)";
  constexpr std::string_view out = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=4096)
            T.copy(X, a)
            T.set_flag("MTE2", "V", 0, auto=True)
            T.wait_flag("MTE2", "V", 0, auto=True)
            T.tile.exp(b, a)
            T.set_flag("V", "MTE3", 0, auto=True)
            T.wait_flag("V", "MTE3", 0, auto=True)
            T.copy(b, Y[vid:vid + 1, 0:16, 0:64])
)";
  EXPECT_EQ(inserted(in), out);
}

TEST(InsertSyncs, SameVectorPipeNeedsABarrierOnlyWhenDependent) {
  // The two exps only read a (no barrier between them); the add reads what they wrote:
  // pipe_barrier(V), as V may overlap consecutive instructions.
  constexpr std::string_view in = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=4096)
            c = T.alloc_ub((16, 64), "float32", address=8192)
            d = T.alloc_ub((16, 64), "float32", address=12288)
            T.copy(X, a)
            T.tile.exp(b, a)
            T.tile.exp(c, a)
            T.tile.add(d, b, c)
            T.copy(d, Y[vid:vid + 1, 0:16, 0:64])
)";
  constexpr std::string_view out = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=4096)
            c = T.alloc_ub((16, 64), "float32", address=8192)
            d = T.alloc_ub((16, 64), "float32", address=12288)
            T.copy(X, a)
            T.set_flag("MTE2", "V", 0, auto=True)
            T.wait_flag("MTE2", "V", 0, auto=True)
            T.tile.exp(b, a)
            T.tile.exp(c, a)
            T.pipe_barrier("V", auto=True)
            T.tile.add(d, b, c)
            T.set_flag("V", "MTE3", 0, auto=True)
            T.wait_flag("V", "MTE3", 0, auto=True)
            T.copy(d, Y[vid:vid + 1, 0:16, 0:64])
)";
  EXPECT_EQ(inserted(in), out);
}

TEST(InsertSyncs, DoubleBufferedLoop) {
  // Two buffer sets in one loop (DEVMODE.md section 7): per slot a V -> MTE2 (the load may
  // overwrite x once the exp read it) and an MTE3 -> V flag (y once stored), pre-set before the
  // loop, waited and set in the body, drained after it; the in-iteration MTE2 -> V and V -> MTE3
  // flags of the two slots share id 0 (never live together). The WAW of a slot's buffers and
  // outputs from one iteration to the next is implied by the flag chains: no pipe_barrier.
  constexpr std::string_view in = R"(@T.prim_func
def f(X0: T.Tensor((16, 64), "float32"), X1: T.Tensor((16, 64), "float32"), Y0: T.Tensor((2, 16, 64), "float32"), Y1: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x0 = T.alloc_ub((16, 64), "float32", address=0)
            x1 = T.alloc_ub((16, 64), "float32", address=4096)
            y0 = T.alloc_ub((16, 64), "float32", address=8192)
            y1 = T.alloc_ub((16, 64), "float32", address=12288)
            for k in T.serial(3):
                T.copy(X0, x0)
                T.tile.exp(y0, x0)
                T.copy(y0, Y0[vid:vid + 1, 0:16, 0:64])
                T.copy(X1, x1)
                T.tile.exp(y1, x1)
                T.copy(y1, Y1[vid:vid + 1, 0:16, 0:64])
)";
  constexpr std::string_view out = R"(@T.prim_func
def f(X0: T.Tensor((16, 64), "float32"), X1: T.Tensor((16, 64), "float32"), Y0: T.Tensor((2, 16, 64), "float32"), Y1: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x0 = T.alloc_ub((16, 64), "float32", address=0)
            x1 = T.alloc_ub((16, 64), "float32", address=4096)
            y0 = T.alloc_ub((16, 64), "float32", address=8192)
            y1 = T.alloc_ub((16, 64), "float32", address=12288)
            T.set_flag("V", "MTE2", 0, auto=True)
            T.set_flag("MTE3", "V", 0, auto=True)
            T.set_flag("V", "MTE2", 1, auto=True)
            T.set_flag("MTE3", "V", 1, auto=True)
            for k in T.serial(3):
                T.wait_flag("V", "MTE2", 0, auto=True)
                T.copy(X0, x0)
                T.set_flag("MTE2", "V", 0, auto=True)
                T.wait_flag("MTE2", "V", 0, auto=True)
                T.wait_flag("MTE3", "V", 0, auto=True)
                T.tile.exp(y0, x0)
                T.set_flag("V", "MTE3", 0, auto=True)
                T.set_flag("V", "MTE2", 0, auto=True)
                T.wait_flag("V", "MTE3", 0, auto=True)
                T.copy(y0, Y0[vid:vid + 1, 0:16, 0:64])
                T.set_flag("MTE3", "V", 0, auto=True)
                T.wait_flag("V", "MTE2", 1, auto=True)
                T.copy(X1, x1)
                T.set_flag("MTE2", "V", 0, auto=True)
                T.wait_flag("MTE2", "V", 0, auto=True)
                T.wait_flag("MTE3", "V", 1, auto=True)
                T.tile.exp(y1, x1)
                T.set_flag("V", "MTE3", 0, auto=True)
                T.set_flag("V", "MTE2", 1, auto=True)
                T.wait_flag("V", "MTE3", 0, auto=True)
                T.copy(y1, Y1[vid:vid + 1, 0:16, 0:64])
                T.set_flag("MTE3", "V", 1, auto=True)
            T.wait_flag("V", "MTE2", 0, auto=True)
            T.wait_flag("MTE3", "V", 0, auto=True)
            T.wait_flag("V", "MTE2", 1, auto=True)
            T.wait_flag("MTE3", "V", 1, auto=True)
)";
  EXPECT_EQ(inserted(in), out);
}

TEST(InsertSyncs, LoopCarriedDependenceOverTheBackEdge) {
  // The exp of iteration k + 1 reads what the copy at the end of iteration k wrote: pre-set before
  // the loop (it also orders the copy before it), wait before the exp, set after the copy, drain
  // after the loop, so the flag is balanced for any trip count. In the iteration the copy
  // overwrites what the exp read: V -> MTE2.
  constexpr std::string_view in = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=4096)
            T.copy(X, a)
            for k in T.serial(4):
                T.tile.exp(b, a)
                T.copy(X, a)
            T.copy(b, Y[vid:vid + 1, 0:16, 0:64])
)";
  constexpr std::string_view out = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=4096)
            T.copy(X, a)
            T.set_flag("MTE2", "V", 0, auto=True)
            for k in T.serial(4):
                T.wait_flag("MTE2", "V", 0, auto=True)
                T.tile.exp(b, a)
                T.set_flag("V", "MTE2", 0, auto=True)
                T.wait_flag("V", "MTE2", 0, auto=True)
                T.copy(X, a)
                T.set_flag("MTE2", "V", 0, auto=True)
            T.wait_flag("MTE2", "V", 0, auto=True)
            T.set_flag("V", "MTE3", 0, auto=True)
            T.wait_flag("V", "MTE3", 0, auto=True)
            T.copy(b, Y[vid:vid + 1, 0:16, 0:64])
)";
  EXPECT_EQ(inserted(in), out);
}

TEST(InsertSyncs, IfElseJoin) {
  // After the join `a` is pending from either branch (MTE2 or V): the exp needs both the flag (set
  // after the if, the nearest point that follows the copy on every path) and pipe_barrier(V).
  constexpr std::string_view in = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=4096)
            if cid < 1:
                T.copy(X, a)
            else:
                T.tile.fill(a, 1.0)
            T.tile.exp(b, a)
            T.copy(b, Y[vid:vid + 1, 0:16, 0:64])
)";
  constexpr std::string_view out = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=4096)
            if cid < 1:
                T.copy(X, a)
            else:
                T.tile.fill(a, 1.0)
            T.set_flag("MTE2", "V", 0, auto=True)
            T.pipe_barrier("V", auto=True)
            T.wait_flag("MTE2", "V", 0, auto=True)
            T.tile.exp(b, a)
            T.set_flag("V", "MTE3", 0, auto=True)
            T.wait_flag("V", "MTE3", 0, auto=True)
            T.copy(b, Y[vid:vid + 1, 0:16, 0:64])
)";
  EXPECT_EQ(inserted(in), out);
}

TEST(InsertSyncs, ScalarReadAfterVectorWrite) {
  // The scalar unit reads UB that V wrote: V -> S each time; the fill after the first scalar read
  // needs nothing (an S instruction happens before everything issued after it). Each store to GM
  // is written back from the data cache at once (a dcci: a scalar instruction, so it needs no
  // flag either).
  constexpr std::string_view in = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Z: T.Tensor((2, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            T.copy(X, a)
            T.tile.exp(a, a)
            Z[vid, 0] = a[0, 1]
            T.tile.fill(a, 1.0)
            Z[vid, 1] = a[0, 2]
)";
  constexpr std::string_view out = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Z: T.Tensor((2, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            T.copy(X, a)
            T.set_flag("MTE2", "V", 0, auto=True)
            T.wait_flag("MTE2", "V", 0, auto=True)
            T.tile.exp(a, a)
            T.set_flag("V", "S", 0, auto=True)
            T.wait_flag("V", "S", 0, auto=True)
            Z[vid, 0] = a[0, 1]
            T.dcci(Z)
            T.tile.fill(a, 1.0)
            T.set_flag("V", "S", 0, auto=True)
            T.wait_flag("V", "S", 0, auto=True)
            Z[vid, 1] = a[0, 2]
            T.dcci(Z)
)";
  EXPECT_EQ(inserted(in), out);
}

TEST(InsertSyncs, BytesSharedByPlanMemoryCount) {
  // a and b share bytes (as plan_memory may place them): the fill of b overwrites what the MTE3
  // copy of a reads, so it waits for MTE3. With b in bytes of its own there is no such flag.
  constexpr std::string_view in = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=0)
            T.copy(X, a)
            T.copy(a, Y[vid:vid + 1, 0:16, 0:64])
            T.tile.fill(b, 1.0)
            T.tile.exp(b, b)
)";
  constexpr std::string_view out = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=0)
            T.copy(X, a)
            T.set_flag("MTE2", "MTE3", 0, auto=True)
            T.wait_flag("MTE2", "MTE3", 0, auto=True)
            T.copy(a, Y[vid:vid + 1, 0:16, 0:64])
            T.set_flag("MTE3", "V", 0, auto=True)
            T.wait_flag("MTE3", "V", 0, auto=True)
            T.tile.fill(b, 1.0)
            T.pipe_barrier("V", auto=True)
            T.tile.exp(b, b)
)";
  EXPECT_EQ(inserted(in), out);
  constexpr std::string_view apart = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=8192)
            T.copy(X, a)
            T.copy(a, Y[vid:vid + 1, 0:16, 0:64])
            T.tile.fill(b, 1.0)
            T.tile.exp(b, b)
)";
  constexpr std::string_view apart_out = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=8192)
            T.copy(X, a)
            T.set_flag("MTE2", "MTE3", 0, auto=True)
            T.wait_flag("MTE2", "MTE3", 0, auto=True)
            T.copy(a, Y[vid:vid + 1, 0:16, 0:64])
            T.tile.fill(b, 1.0)
            T.pipe_barrier("V", auto=True)
            T.tile.exp(b, b)
)";
  EXPECT_EQ(inserted(apart), apart_out);
}

TEST(InsertSyncs, ManyLiveFlagsStayWithinTheIdBudget) {
  // Six loads, then six exps: six MTE2 -> V flags live at once take ids 0-5 (6 and 7 are the
  // runtime's on A2).
  constexpr std::string_view six = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a0 = T.alloc_ub((1, 64), "float32", address=0)
            a1 = T.alloc_ub((1, 64), "float32", address=256)
            a2 = T.alloc_ub((1, 64), "float32", address=512)
            a3 = T.alloc_ub((1, 64), "float32", address=768)
            a4 = T.alloc_ub((1, 64), "float32", address=1024)
            a5 = T.alloc_ub((1, 64), "float32", address=1280)
            b0 = T.alloc_ub((1, 64), "float32", address=4096)
            b1 = T.alloc_ub((1, 64), "float32", address=4352)
            b2 = T.alloc_ub((1, 64), "float32", address=4608)
            b3 = T.alloc_ub((1, 64), "float32", address=4864)
            b4 = T.alloc_ub((1, 64), "float32", address=5120)
            b5 = T.alloc_ub((1, 64), "float32", address=5376)
            T.copy(X[0:1, 0:64], a0)
            T.copy(X[1:2, 0:64], a1)
            T.copy(X[2:3, 0:64], a2)
            T.copy(X[3:4, 0:64], a3)
            T.copy(X[4:5, 0:64], a4)
            T.copy(X[5:6, 0:64], a5)
            T.tile.exp(b0, a0)
            T.tile.exp(b1, a1)
            T.tile.exp(b2, a2)
            T.tile.exp(b3, a3)
            T.tile.exp(b4, a4)
            T.tile.exp(b5, a5)
)";
  constexpr std::string_view six_out = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a0 = T.alloc_ub((1, 64), "float32", address=0)
            a1 = T.alloc_ub((1, 64), "float32", address=256)
            a2 = T.alloc_ub((1, 64), "float32", address=512)
            a3 = T.alloc_ub((1, 64), "float32", address=768)
            a4 = T.alloc_ub((1, 64), "float32", address=1024)
            a5 = T.alloc_ub((1, 64), "float32", address=1280)
            b0 = T.alloc_ub((1, 64), "float32", address=4096)
            b1 = T.alloc_ub((1, 64), "float32", address=4352)
            b2 = T.alloc_ub((1, 64), "float32", address=4608)
            b3 = T.alloc_ub((1, 64), "float32", address=4864)
            b4 = T.alloc_ub((1, 64), "float32", address=5120)
            b5 = T.alloc_ub((1, 64), "float32", address=5376)
            T.copy(X[0:1, 0:64], a0)
            T.set_flag("MTE2", "V", 0, auto=True)
            T.copy(X[1:2, 0:64], a1)
            T.set_flag("MTE2", "V", 1, auto=True)
            T.copy(X[2:3, 0:64], a2)
            T.set_flag("MTE2", "V", 2, auto=True)
            T.copy(X[3:4, 0:64], a3)
            T.set_flag("MTE2", "V", 3, auto=True)
            T.copy(X[4:5, 0:64], a4)
            T.set_flag("MTE2", "V", 4, auto=True)
            T.copy(X[5:6, 0:64], a5)
            T.set_flag("MTE2", "V", 5, auto=True)
            T.wait_flag("MTE2", "V", 0, auto=True)
            T.tile.exp(b0, a0)
            T.wait_flag("MTE2", "V", 1, auto=True)
            T.tile.exp(b1, a1)
            T.wait_flag("MTE2", "V", 2, auto=True)
            T.tile.exp(b2, a2)
            T.wait_flag("MTE2", "V", 3, auto=True)
            T.tile.exp(b3, a3)
            T.wait_flag("MTE2", "V", 4, auto=True)
            T.tile.exp(b4, a4)
            T.wait_flag("MTE2", "V", 5, auto=True)
            T.tile.exp(b5, a5)
)";
  EXPECT_EQ(inserted(six), six_out);
  // Seven would need seven ids: the pair is coarsened to set+wait right before the first use,
  // which orders every load at once.
  constexpr std::string_view seven = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a0 = T.alloc_ub((1, 64), "float32", address=0)
            a1 = T.alloc_ub((1, 64), "float32", address=256)
            a2 = T.alloc_ub((1, 64), "float32", address=512)
            a3 = T.alloc_ub((1, 64), "float32", address=768)
            a4 = T.alloc_ub((1, 64), "float32", address=1024)
            a5 = T.alloc_ub((1, 64), "float32", address=1280)
            a6 = T.alloc_ub((1, 64), "float32", address=1536)
            b0 = T.alloc_ub((1, 64), "float32", address=4096)
            b1 = T.alloc_ub((1, 64), "float32", address=4352)
            b2 = T.alloc_ub((1, 64), "float32", address=4608)
            b3 = T.alloc_ub((1, 64), "float32", address=4864)
            b4 = T.alloc_ub((1, 64), "float32", address=5120)
            b5 = T.alloc_ub((1, 64), "float32", address=5376)
            b6 = T.alloc_ub((1, 64), "float32", address=5632)
            T.copy(X[0:1, 0:64], a0)
            T.copy(X[1:2, 0:64], a1)
            T.copy(X[2:3, 0:64], a2)
            T.copy(X[3:4, 0:64], a3)
            T.copy(X[4:5, 0:64], a4)
            T.copy(X[5:6, 0:64], a5)
            T.copy(X[6:7, 0:64], a6)
            T.tile.exp(b0, a0)
            T.tile.exp(b1, a1)
            T.tile.exp(b2, a2)
            T.tile.exp(b3, a3)
            T.tile.exp(b4, a4)
            T.tile.exp(b5, a5)
            T.tile.exp(b6, a6)
)";
  constexpr std::string_view seven_out = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a0 = T.alloc_ub((1, 64), "float32", address=0)
            a1 = T.alloc_ub((1, 64), "float32", address=256)
            a2 = T.alloc_ub((1, 64), "float32", address=512)
            a3 = T.alloc_ub((1, 64), "float32", address=768)
            a4 = T.alloc_ub((1, 64), "float32", address=1024)
            a5 = T.alloc_ub((1, 64), "float32", address=1280)
            a6 = T.alloc_ub((1, 64), "float32", address=1536)
            b0 = T.alloc_ub((1, 64), "float32", address=4096)
            b1 = T.alloc_ub((1, 64), "float32", address=4352)
            b2 = T.alloc_ub((1, 64), "float32", address=4608)
            b3 = T.alloc_ub((1, 64), "float32", address=4864)
            b4 = T.alloc_ub((1, 64), "float32", address=5120)
            b5 = T.alloc_ub((1, 64), "float32", address=5376)
            b6 = T.alloc_ub((1, 64), "float32", address=5632)
            T.copy(X[0:1, 0:64], a0)
            T.copy(X[1:2, 0:64], a1)
            T.copy(X[2:3, 0:64], a2)
            T.copy(X[3:4, 0:64], a3)
            T.copy(X[4:5, 0:64], a4)
            T.copy(X[5:6, 0:64], a5)
            T.copy(X[6:7, 0:64], a6)
            T.set_flag("MTE2", "V", 0, auto=True)
            T.wait_flag("MTE2", "V", 0, auto=True)
            T.tile.exp(b0, a0)
            T.tile.exp(b1, a1)
            T.tile.exp(b2, a2)
            T.tile.exp(b3, a3)
            T.tile.exp(b4, a4)
            T.tile.exp(b5, a5)
            T.tile.exp(b6, a6)
)";
  EXPECT_EQ(inserted(seven), seven_out);
}

TEST(InsertSyncs, CrossCoreFlagsTheCompilerWroteAreRespected) {
  // A set_cross_flag publishes GM to the other core: what MTE3 wrote to W must be done before
  // the V-pipe set fires (MTE3 -> V). The cross-core flags are kept as they are.
  constexpr std::string_view in = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), W: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=4096)
            T.copy(X, a)
            T.tile.exp(b, a)
            T.copy(b, W[vid:vid + 1, 0:16, 0:64])
            T.set_cross_flag("V", 0, mode=2, auto=True)
        with T.Scope("Cube"):
            T.wait_cross_flag(0, auto=True)
)";
  constexpr std::string_view out = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), W: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=4096)
            T.copy(X, a)
            T.set_flag("MTE2", "V", 0, auto=True)
            T.wait_flag("MTE2", "V", 0, auto=True)
            T.tile.exp(b, a)
            T.set_flag("V", "MTE3", 0, auto=True)
            T.wait_flag("V", "MTE3", 0, auto=True)
            T.copy(b, W[vid:vid + 1, 0:16, 0:64])
            T.set_flag("MTE3", "V", 0, auto=True)
            T.wait_flag("MTE3", "V", 0, auto=True)
            T.set_cross_flag("V", 0, mode=2, auto=True)
        with T.Scope("Cube"):
            T.wait_cross_flag(0, auto=True)
)";
  EXPECT_EQ(inserted(in), out);
}

TEST(InsertSyncs, IterationsOnDisjointRowsNeedNoBarrierBetweenThem) {
  // Iteration i updates row i of b: no two iterations touch the same bytes, so the only V -> V
  // dependence is on the exp before the loop, ordered once by a barrier in front of the loop.
  constexpr std::string_view in = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=4096)
            T.copy(X, a)
            T.tile.exp(b, a)
            for i in T.serial(16):
                T.tile.mul(b[i:i + 1, 0:64], b[i:i + 1, 0:64], a[i:i + 1, 0:64])
            T.copy(b, Y[vid:vid + 1, 0:16, 0:64])
)";
  constexpr std::string_view out = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=4096)
            T.copy(X, a)
            T.set_flag("MTE2", "V", 0, auto=True)
            T.wait_flag("MTE2", "V", 0, auto=True)
            T.tile.exp(b, a)
            T.pipe_barrier("V", auto=True)
            for i in T.serial(16):
                T.tile.mul(b[i:i + 1, 0:64], b[i:i + 1, 0:64], a[i:i + 1, 0:64])
            T.set_flag("V", "MTE3", 0, auto=True)
            T.wait_flag("V", "MTE3", 0, auto=True)
            T.copy(b, Y[vid:vid + 1, 0:16, 0:64])
)";
  EXPECT_EQ(inserted(in), out);
  // Row i // 2: iterations 2j and 2j + 1 update the same row: a barrier in every iteration.
  constexpr std::string_view same_rows = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=4096)
            T.copy(X, a)
            T.tile.exp(b, a)
            for i in T.serial(16):
                T.tile.mul(b[i // 2:i // 2 + 1, 0:64], b[i // 2:i // 2 + 1, 0:64], a[i:i + 1, 0:64])
            T.copy(b, Y[vid:vid + 1, 0:16, 0:64])
)";
  constexpr std::string_view same_rows_out = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=4096)
            T.copy(X, a)
            T.set_flag("MTE2", "V", 0, auto=True)
            T.wait_flag("MTE2", "V", 0, auto=True)
            T.tile.exp(b, a)
            for i in T.serial(16):
                T.pipe_barrier("V", auto=True)
                T.tile.mul(b[i // 2:i // 2 + 1, 0:64], b[i // 2:i // 2 + 1, 0:64], a[i:i + 1, 0:64])
            T.set_flag("V", "MTE3", 0, auto=True)
            T.wait_flag("V", "MTE3", 0, auto=True)
            T.copy(b, Y[vid:vid + 1, 0:16, 0:64])
)";
  EXPECT_EQ(inserted(same_rows), same_rows_out);
}

TEST(InsertSyncs, PairWithoutAHardwareEventGoesThroughAThirdPipe) {
  // The cube's MTE3 (L1 -> GM) and FIX (L0C -> GM) write the same tensor, and A2 has no
  // MTE3 -> FIX event: the order goes MTE3 -> MTE1 -> FIX, next to the destination.
  constexpr std::string_view in = R"(@T.prim_func
def f(X: T.Tensor((16, 16), "float16"), Y: T.Tensor((16, 16), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Cube"):
            a = T.alloc_L1((16, 16), "float32", address=0)
            c = T.alloc_L0C((16, 16), "float32", address=0)
            T.copy(Y, a)
            T.copy(a, Y)
            T.copy(c, Y)
)";
  constexpr std::string_view out = R"(@T.prim_func
def f(X: T.Tensor((16, 16), "float16"), Y: T.Tensor((16, 16), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Cube"):
            a = T.alloc_L1((16, 16), "float32", address=0)
            c = T.alloc_L0C((16, 16), "float32", address=0)
            T.copy(Y, a)
            T.set_flag("MTE2", "MTE3", 0, auto=True)
            T.wait_flag("MTE2", "MTE3", 0, auto=True)
            T.copy(a, Y)
            T.set_flag("MTE3", "MTE1", 0, auto=True)
            T.wait_flag("MTE3", "MTE1", 0, auto=True)
            T.set_flag("MTE1", "FIX", 0, auto=True)
            T.wait_flag("MTE1", "FIX", 0, auto=True)
            T.copy(c, Y)
)";
  // The kernel only exists to order the two writers of Y: its L0C tile is never written, and
  // the stale-data checker says so.
  std::string stale;
  EXPECT_EQ(inserted(in, &stale), out);
  EXPECT_EQ(stale,
            "invalid data stored to GM at <unknown>: T.copy stores 256 invalid of 256 elements "
            "into 'Y', the first "
            "Y[0, 0]; never written in this launch (first in block 0 AIC)\n");
}

TEST(InsertSyncs, ScopesWithTheirOwnSyncsAreLeftAlone) {
  // An expert kernel (user syncs) passes through as the same function; so does insert_syncs'
  // own output (its scopes now hold flags), so the pass is idempotent.
  PrimFunc expert = parse(R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32", address=0)
            T.copy(X, a)
            T.set_flag("MTE2", "MTE3", 0)
            T.wait_flag("MTE2", "MTE3", 0)
            T.copy(a, Y[vid:vid + 1, 0:16, 0:64])
)");
  EXPECT_EQ(insert_syncs(expert, default_target()), expert);
  PrimFunc once = insert_syncs(parse(R"(@T.prim_func
def f(X0: T.Tensor((16, 64), "float32"), X1: T.Tensor((16, 64), "float32"), Y0: T.Tensor((2, 16, 64), "float32"), Y1: T.Tensor((2, 16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x0 = T.alloc_ub((16, 64), "float32", address=0)
            x1 = T.alloc_ub((16, 64), "float32", address=4096)
            y0 = T.alloc_ub((16, 64), "float32", address=8192)
            y1 = T.alloc_ub((16, 64), "float32", address=12288)
            for k in T.serial(3):
                T.copy(X0, x0)
                T.tile.exp(y0, x0)
                T.copy(y0, Y0[vid:vid + 1, 0:16, 0:64])
                T.copy(X1, x1)
                T.tile.exp(y1, x1)
                T.copy(y1, Y1[vid:vid + 1, 0:16, 0:64])
)"),
                               default_target());
  EXPECT_EQ(insert_syncs(once, default_target()), once);
}

TEST(InsertSyncs, AutoMarkPrintsAndParsesBack) {
  constexpr std::string_view text = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            T.set_flag("MTE2", "V", 0, auto=True)
            T.wait_flag("MTE2", "V", 0)
            T.pipe_barrier("V", auto=True)
            T.barrier_all(auto=True)
            T.set_cross_flag("MTE3", 3, mode=2, auto=True)
            T.wait_cross_flag(4, auto=True)
            T.sync_all()
)";
  PrimFunc f = parse(text);
  EXPECT_EQ(print(f, {.locations = false}), text);
  std::vector<SyncOrigin> origins;
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (auto* y = s.as<SyncNode>()) origins.push_back(y->origin);
  });
  using O = SyncOrigin;
  EXPECT_EQ(origins,
            (std::vector<O>{O::Auto, O::User, O::Auto, O::Auto, O::Auto, O::Auto, O::User}));
  // `auto=False` is the default spelled out. Who wrote a sync is not what it does: structural
  // equality ignores the origin, as it ignores source locations.
  PrimFunc user = parse(R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            T.set_flag("MTE2", "V", 0, auto=False)
            T.wait_flag("MTE2", "V", 0)
            T.pipe_barrier("V")
            T.barrier_all()
            T.set_cross_flag("MTE3", 3, mode=2)
            T.wait_cross_flag(4)
            T.sync_all()
)");
  EXPECT_NE(print(user), print(f));
  EXPECT_TRUE(structural_equal(user, f));
}

}  // namespace
}  // namespace tl
