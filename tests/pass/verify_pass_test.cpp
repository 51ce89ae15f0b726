// The verify pass: what its IR-file tests cannot say. Valid kernels passing through as they are
// (tests/pass/verify.tl), invalid ones as user errors listing every violation with its rule and
// line (verify_errors.tl), and the verifier running before any later pass of the pipeline
// (verify_in_pipeline.tl) are IR-file tests. Kept here, because `tlc opt` prints text and cannot
// show it:
// - that a valid kernel comes back as the same function object (no copy).
#include "pass/pass_test_util.h"

namespace tl {
namespace {

constexpr std::string_view kValid = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((16, 64), "float32")):
    with T.Kernel(2, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            a = T.alloc_ub((16, 64), "float32")
            T.copy(X, a)
            T.set_flag("MTE2", "V", 0)
            T.wait_flag("MTE2", "V", 0)
            T.tile.exp(a, a)
            T.set_flag("V", "MTE3", 0)
            T.wait_flag("V", "MTE3", 0)
            T.copy(a, Y)
)";

TEST(VerifyPass, ValidKernelComesBackAsIs) {
  PrimFunc f = parse(kValid);
  EXPECT_EQ(verify_pass(f, default_target()), f);
}

}  // namespace
}  // namespace tl
