// guard_loop_credits: a loop credit's pre-set and drain become guards on the loop's wait and set
// (IR text in, text out), inlining a persistent tile loop's condition; a unit the replay cannot
// prove keeps its pre-set and drain; gemm_dev then runs exactly gemm_pipelined's syncs per block
// and stays hazard-free for every trip count (tests/pass/hoist_slot_credits_test.cpp launches it
// under the hazard checker with 1 to 5 panels).
#include "pass_test_util.h"

namespace tl {
namespace {

// A persistent loop over tiles (`if t < 3`, t a let of the tile index) around a K loop whose
// MTE1 -> MTE2 credit is pre-set before the tile loop and drained after it.
constexpr std::string_view kPersistent = R"(@T.prim_func
def f(A: T.Tensor((16, 16), "float16")):
    with T.Kernel(2, is_npu=True) as (cid, vid):
        with T.Scope("Cube"):
            a = T.alloc_L1((16, 16), "float16", address=0)
            a0 = T.alloc_L0A((16, 16), "float16", address=0)
            T.set_flag("MTE1", "MTE2", 0, auto=True)
            for i in T.serial(2):
                t = i * 2 + cid
                if t < 3:
                    for k in T.serial(KTRIPS):
                        T.wait_flag("MTE1", "MTE2", 0, auto=True)
                        T.copy(A[0:16, 0:16], a)
                        T.set_flag("MTE2", "MTE1", 0, auto=True)
                        T.wait_flag("MTE2", "MTE1", 0, auto=True)
                        T.copy(a, a0)
                        T.set_flag("MTE1", "MTE2", 0, auto=True)
            T.wait_flag("MTE1", "MTE2", 0, auto=True)
)";

std::string persistent(const std::string& trips) {
  std::string t(kPersistent);
  t.replace(t.find("KTRIPS"), 6, trips);
  return t;
}

std::string guarded(const std::string& text) {
  return print(guard_loop_credits(parse(text), default_target()), {.locations = false});
}

// ThePreSetAndDrainBecomeGuardsOnTheFirstWaitAndTheLastSet: tests/pass/guard_loop_credits.tl.

// A tile condition that holds for a suffix of the tiles (`t > 0`: block 0 skips its first
// tile), so the first wait block 0 runs is not at i = 0, and a trip count the replay cannot
// count: the replay proves neither, and both keep their pre-set and drain.
TEST(GuardLoopCredits, AUnitTheReplayCannotProveKeepsItsPreSetAndDrain) {
  std::string suffix = persistent("3");
  suffix.replace(suffix.find("if t < 3"), 8, "if t > 0");
  std::string symbolic = persistent("n");
  const std::string params = "def f(A: T.Tensor((16, 16), \"float16\")):";
  symbolic.replace(symbolic.find(params), params.size(), "def f(A: T.Tensor((16, 16), \"float16\"), n: T.int32):");
  for (const std::string& text : {suffix, symbolic})
    EXPECT_EQ(guarded(text), print(parse(text), {.locations = false})) << text;
}

}  // namespace
}  // namespace tl
