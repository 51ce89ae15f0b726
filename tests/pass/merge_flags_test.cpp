// merge_flags: two neighbouring flags of a pipe pair become one, set after the later source and
// waited before the earlier destination (IR text in, text out); flags that are not neighbours or
// whose protocol the replay cannot know stay; gemm_dev gets one flag per panel and one credit
// per slot, as gemm_pipelined has, and runs hazard-free.
#include <set>

#include "common/example_checks.h"
#include "pass_test_util.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"

namespace tl {
namespace {

// A and B loaded into L1, each with its flag to MTE1: as one flag, A's L0 load waits for both.
constexpr std::string_view kTwoLoads = R"(@T.prim_func
def f(A: T.Tensor((16, 16), "float16"), B: T.Tensor((16, 16), "float16"), n: T.int32):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Cube"):
            a = T.alloc_L1((16, 16), "float16", address=0)
            b = T.alloc_L1((16, 16), "float16", address=512)
            a0 = T.alloc_L0A((16, 16), "float16", address=0)
            b0 = T.alloc_L0B((16, 16), "float16", address=0)
            c = T.alloc_L0C((16, 16), "float32", address=0)
            for k in T.serial(EXTENT):
                T.copy(A[0:16, 0:16], a)
                T.set_flag("MTE2", "MTE1", 0, auto=True)
                T.copy(B[0:16, 0:16], b)
                T.set_flag("MTE2", "MTE1", 1, auto=True)
                T.wait_flag("MTE2", "MTE1", 0, auto=True)
                T.copy(a, a0)
                T.wait_flag("MTE2", "MTE1", 1, auto=True)
                T.copy(b, b0)
                T.set_flag("MTE1", "M", 0, auto=True)
                T.wait_flag("MTE1", "M", 0, auto=True)
                T.mma(a0, b0, c, True)
                T.set_flag("M", "MTE1", 0, auto=True)
                T.wait_flag("M", "MTE1", 0, auto=True)
                T.set_flag("MTE1", "MTE2", 0, auto=True)
                T.wait_flag("MTE1", "MTE2", 0, auto=True)
)";

std::string two_loads(const std::string& extent) {
  std::string t(kTwoLoads);
  t.replace(t.find("EXTENT"), 6, extent);
  return t;
}

std::string without_lines(std::string t, std::initializer_list<std::string_view> lines) {
  for (std::string_view l : lines) {
    std::string line = "                " + std::string(l) + "\n";
    t.erase(t.find(line), line.size());
  }
  return t;
}

std::string merged(const std::string& text) {
  return print(merge_flags(parse(text), default_target()), {.locations = false});
}

TEST(MergeFlags, TwoNeighbouringFlagsBecomeOneSetAfterTheLaterSourceWaitedBeforeTheEarlierUse) {
  for (const char* extent : {"1", "3"}) {
    std::string expected = without_lines(two_loads(extent), {"T.set_flag(\"MTE2\", \"MTE1\", 0, auto=True)",
                                                              "T.wait_flag(\"MTE2\", \"MTE1\", 1, auto=True)"});
    const std::string set1 = "T.set_flag(\"MTE2\", \"MTE1\", 1, auto=True)";
    expected.replace(expected.find(set1), set1.size(), "T.set_flag(\"MTE2\", \"MTE1\", 0, auto=True)");
    EXPECT_EQ(merged(two_loads(extent)), print(parse(expected), {.locations = false})) << extent;
  }
}

// A third flag of the pipe pair between the two sets: merging would reach past it, nothing
// merges. A trip count the replay cannot count: nothing is proven, nothing merges.
TEST(MergeFlags, FlagsThatAreNotNeighboursOrAProtocolTheReplayCannotKnowStay) {
  std::string between = two_loads("3");
  const std::string copy_b = "                T.copy(B[0:16, 0:16], b)\n";
  between.replace(between.find(copy_b), copy_b.size(),
                  "                T.set_flag(\"MTE2\", \"MTE1\", 2, auto=True)\n" + copy_b +
                      "                T.wait_flag(\"MTE2\", \"MTE1\", 2, auto=True)\n");
  EXPECT_EQ(merged(between), print(parse(between), {.locations = false}));
  EXPECT_EQ(merged(two_loads("n")), print(parse(two_loads("n")), {.locations = false}));
}

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
  EXPECT_NO_THROW(compile(dev, default_target(), {.cache = false}).launch(device, args, {.check_hazards = true}));
}

}  // namespace
}  // namespace tl
