// group_vector_ops: a run of vector ops goes in dependence-level order (IR text in, text out),
// anything that is not a vector op ends a run, and FlashAttention's vector unit needs fewer
// pipe barriers for it. The developer examples' tests run the kernels against their references
// under the hazard checker.
#include "pass_test_util.h"
#include "tl/kernel_registry.h"

namespace tl {
namespace {

// The IR-text cases (dependence-level order, chains kept): tests/pass/group_vector_ops.tl.

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
