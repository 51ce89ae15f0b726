// legalize_copies: what its IR-file tests cannot say. IR text in, IR text out lives in
// tests/pass/legalize_copies.tl and tests/pass/legalize_copies_padding.tl (padded rows and the
// padded copy, widened element loops and elementwise ops, zero-filled L1 panels, constant and
// dynamic clips, pad_value); the developer examples run with tails in
// tests/examples/developer_examples_test.cpp. Kept here, because `tlc opt` prints text and cannot
// show it:
// - that a kernel the pass leaves alone comes back as the same function object (no copy).
#include "pass_test_util.h"

#include "tl/target.h"

namespace tl {
namespace {

TEST(LegalizeCopies, ExpertKernelsAreUnchanged) {
  PrimFunc f = parse(R"(@T.prim_func
def f(X: T.Tensor((13, 64), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((4, 37), "float16")
            T.copy(X[0:4, 0:37], x, pad=True, pad_value=0.0)
)");
  EXPECT_EQ(legalize_copies(f, get_target("A2")), f);
}

}  // namespace
}  // namespace tl
