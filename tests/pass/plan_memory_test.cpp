// plan_memory: what its IR-file tests cannot say. IR text in, IR text out and its errors live in
// tests/pass/plan_memory.tl, plan_memory_reuse.tl (alignment, loops, explicit addresses, reuse
// across pipes, back edges and branches, scopes, fractal padding), plan_memory_syncs_follow.tl
// and plan_memory_errors.tl; runs on the virtual NPU in plan_memory_run_test.cpp, properties in
// plan_memory_property_test.cpp and plan_memory_sound_test.cpp. Kept here, because `tlc opt`
// prints text and cannot show it:
// - that an already planned kernel comes back as the same function object (no copy).
#include "pass/pass_test_util.h"

#include "tl/target.h"

namespace tl {
namespace {

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

}  // namespace
}  // namespace tl
