// mask_tails: what its IR-file tests cannot say. IR text in, IR text out and its errors live in
// tests/pass/mask_tails.tl, mask_tails_stale_parts.tl and mask_tails_errors.tl; the kernels run
// on tails in tests/regress/tail_accumulator_test.cpp and python/tests/test_tails.py. Kept here,
// because `tlc opt` prints text and cannot show it:
// - that a kernel the pass leaves alone comes back as the same function object (no copy).
#include "pass_test_util.h"

#include "tl/target.h"

namespace tl {
namespace {

TEST(MaskTails, ExpertKernelsAreUnchanged) {
  PrimFunc f = parse(R"(@T.prim_func
def f(X: T.Tensor((13, 64), "float16")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            x = T.alloc_ub((4, 37), "float16")
            T.copy(X[0:4, 0:37], x, pad=True, pad_value=0.0)
)");
  EXPECT_EQ(mask_tails(f, get_target("A2")), f);
}

}  // namespace
}  // namespace tl
