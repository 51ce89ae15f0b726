// hoist_slot_credits: a loop's pre-set credits and drains move out of the serial loop around it
// when nothing else there touches their pipes, and stay put when something does. IR text in, IR
// text out lives in tests/pass/hoist_slot_credits.tl and hoist_slot_credits_cases.tl. Kept here,
// because `tlc opt` prints IR and runs nothing: on gemm_dev (a persistent GEMM) the moved credits
// keep every tile correct under the hazard checker.
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "tl/jit.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"
#include "tl/parser.h"
#include "tl/pass.h"
#include "tl/printer.h"

namespace tl {
namespace {

TEST(HoistSlotCredits, PersistentGemmStaysCorrectForEveryTripCount) {
  // Three workers, several tiles each, K loops of 1 to 5 panels under the hazard checker. The
  // credits leave the tile loop unless the pipelined loop has a remainder (5 panels over 2
  // stages): the remainder after the drains reloads slot 0, which the drain orders. With 3
  // panels the steady loop has one trip, which pipeline_loops writes out: the tile loop's body
  // is straight-line code and its own carried credits are set before it.
  for (const char* K : {"64", "128", "192", "256", "320"}) {
    PrimFunc f =
        build_kernel(find_kernel("gemm_dev"),
                     {{"M", "300"}, {"N", "520"}, {"K", K}, {"bK", "64"}, {"blocks", "3"}});
    PassOptions before_guards;  // guard_loop_credits turns the hoisted pre-sets into guards
    before_guards.disabled_passes = {"guard_loop_credits"};
    std::string lowered = print(lower(f, default_target(), before_guards), {.locations = false});
    const long panels = std::stol(K) / 64;
    const bool remainder = panels % 2 == 1 && panels > 3;
    EXPECT_EQ(lowered.find("T.set_flag(\"MTE1\", \"MTE2\", 0, auto=True)") <
                  lowered.find("for i in T.serial"),
              !remainder)
        << "K = " << K << "\n"
        << lowered;
    CompiledKernel k = compile(f);
    Device dev;
    Tensor A = randn(dev, {300, std::stol(K)}, f16, 1), B = randn(dev, {std::stol(K), 520}, f16, 2),
           C = Tensor::empty(dev, {300, 520}, f16);
    EXPECT_NO_THROW(k.launch(dev, {A, B, C}, {.check_hazards = true})) << "K = " << K;
  }
}

}  // namespace
}  // namespace tl
