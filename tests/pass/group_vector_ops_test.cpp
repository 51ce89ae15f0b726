// group_vector_ops: a run of vector ops goes in dependence-level order (IR text in, text out),
// anything that is not a vector op ends a run, and FlashAttention's vector unit needs fewer
// pipe barriers for it. The developer examples' tests run the kernels against their references
// under the hazard checker.
#include "pass_test_util.h"
#include "tl/kernel_registry.h"

namespace tl {
namespace {

std::string grouped(std::string_view text) {
  return print(group_vector_ops(parse(text), default_target()), {.locations = false});
}

// Two chains of two (l = l * a + r, then acc = acc * a + o): both multiplies, then both adds.
// The copy out ends the run; the op after it is a run of its own.
TEST(GroupVectorOps, OrdersARunByDependenceLevel) {
  constexpr std::string_view in = R"(@T.prim_func
def f(X: T.Tensor((16, 16), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            l = T.alloc_ub((16, 16), "float32")
            a = T.alloc_ub((16, 16), "float32")
            r = T.alloc_ub((16, 16), "float32")
            acc = T.alloc_ub((16, 16), "float32")
            o = T.alloc_ub((16, 16), "float32")
            T.tile.mul(l, l, a)
            T.tile.add(l, l, r)
            T.tile.mul(acc, acc, a)
            T.tile.add(acc, acc, o)
            T.copy(acc, X)
            T.tile.exp(a, a)
)";
  constexpr std::string_view out = R"(@T.prim_func
def f(X: T.Tensor((16, 16), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            l = T.alloc_ub((16, 16), "float32")
            a = T.alloc_ub((16, 16), "float32")
            r = T.alloc_ub((16, 16), "float32")
            acc = T.alloc_ub((16, 16), "float32")
            o = T.alloc_ub((16, 16), "float32")
            T.tile.mul(l, l, a)
            T.tile.mul(acc, acc, a)
            T.tile.add(l, l, r)
            T.tile.add(acc, acc, o)
            T.copy(acc, X)
            T.tile.exp(a, a)
)";
  EXPECT_EQ(grouped(in), out);
}

// A chain stays as it is, and so does an op that overwrites what an earlier one reads (the
// order of a write after a read is a dependence too).
TEST(GroupVectorOps, KeepsEveryDependence) {
  constexpr std::string_view text = R"(@T.prim_func
def f():
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 16), "float32")
            b = T.alloc_ub((16, 16), "float32")
            T.tile.exp(b, a)
            T.tile.mul(a, a, a)
            T.tile.add(b, b, a)
)";
  PrimFunc f = parse(text);
  EXPECT_EQ(group_vector_ops(f, default_target()), f);
}

int v_barriers(const PrimFunc& f) {
  int n = 0;
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (auto* y = s.as<SyncNode>(); y && y->sync_kind == SyncKind::PipeBarrier && y->src == Pipe::V)
      ++n;
  });
  return n;
}

// FlashAttention's rescaling of l and acc shares one barrier per kv-tile.
TEST(GroupVectorOps, FlashAttentionNeedsFewerVectorBarriers) {
  PrimFunc dev = build_kernel(find_kernel("flash_attention_dev"), {{"S", "512"}, {"D", "64"}});
  PassOptions without;
  without.disabled_passes = {"group_vector_ops"};
  EXPECT_LT(v_barriers(lower(dev, default_target())),
            v_barriers(lower(dev, default_target(), without)));
}

}  // namespace
}  // namespace tl
