// merge_flags: two neighbouring flags of a pipe pair become one, set after the later source and
// waited before the earlier destination; flags that are not neighbours or whose protocol the
// replay cannot know stay. IR text in, IR text out lives in tests/pass/merge_flags.tl and
// merge_flags_cases.tl. Kept here, because `tlc opt` prints IR and runs nothing: gemm_dev, built
// and lowered from the kernel registry, gets one flag per panel and one credit per slot, as
// gemm_pipelined has, and runs hazard-free.
#include <set>

#include "common/example_checks.h"
#include "pass_test_util.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"

namespace tl {
namespace {

/// The set_flags of `f` per "SRC->DST" pipe pair.
std::multiset<std::string> sets(const PrimFunc& f) {
  std::multiset<std::string> out;
  pre_order_visit(f->body, [&](const Stmt& x) {
    if (auto* y = x.as<SyncNode>(); y && y->sync_kind == SyncKind::SetFlag)
      out.insert(std::string(pipe_name(y->src)) + "->" + std::string(pipe_name(y->dst)));
  });
  return out;
}

// gemm_dev: A's and B's panels share their flag to MTE1 and their slot credit, as
// gemm_pipelined's do, and the kernel still runs hazard-free.
TEST(MergeFlags, GemmPanelsShareTheirFlagAndTheirSlotCredit) {
  PrimFunc dev = build_kernel(find_kernel("gemm_dev"), {{"bK", "256"}});
  // merge_flags is off by default in tl::lower too (its switch in PassOptions::dev, as in
  // tl::compile): switched on, it halves the flags of both pairs.
  PassOptions merge;
  merge.dev.merge_flags = true;
  PrimFunc before = lower(dev, default_target()), after = lower(dev, default_target(), merge);
  for (const char* pair : {"MTE2->MTE1", "MTE1->MTE2"})
    EXPECT_EQ(sets(after).count(pair) * 2, sets(before).count(pair)) << pair;
  Device device;
  auto args = ref::random_args(device, dev);
  EXPECT_NO_THROW(compile(dev, default_target(), {.cache = false})
                      .launch(device, args, {.check_hazards = true}));
}

}  // namespace
}  // namespace tl
