// The pipeline-slot trait of a buffer (BufferNode::slot, issue 30): pipeline_loops marks each
// slot it makes of a T.Pipelined loop's versioned buffer with (loop, index, count); the printer
// writes it (`T.alloc_ub(..., slot=(0, 1, 2))`), the parser reads it back, structural equality
// and hashing see it, and the verifier rejects a slot number outside its count or a slot on a
// GM or scalar buffer. plan_memory keeps slots of one loop with different numbers apart on it
// (tests/pass/plan_memory_unrolled_slots*.tl; docs/compiler.md, plan_memory).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "pass_test_util.h"
#include "tl/ir_equal.h"
#include "tl/ir_functor.h"
#include "tl/kernel_registry.h"
#include "tl/verifier.h"

namespace tl {
namespace {

/// add_dev with two row tiles a block, through the whole pipeline (its T.Pipelined loop of two
/// stages and two iterations: slots x_0, x_1, y_0, ... of loop 0).
PrimFunc lowered_add_dev() {
  PrimFunc f =
      build_kernel(find_kernel("add_dev"), {{"M", "8"}, {"N", "128"}, {"bM", "2"}, {"tiles", "2"}});
  return lower(f, default_target());
}

/// `f` with the slot of the buffer named `name` replaced by `slot`.
PrimFunc with_slot(const PrimFunc& f, const std::string& name, PipelineSlot slot) {
  struct Reslot : IRMutator {
    Buffer mutate_buffer(const Buffer& b) override {
      if (b->name != name) return b;
      if (!made.defined())
        made = BufferNode::make(b->name, b->dtype, b->shape, b->scope, b->strides, b->address,
                                b->loc, b->origin, b->channel_slots, b->l2_cache, slot);
      return made;
    }
    std::string name;
    PipelineSlot slot;
    Buffer made;
  } m;
  m.name = name;
  m.slot = slot;
  return make_prim_func(f->name, f->dynamics, f->params, m.mutate(f->body), f->loc);
}

TEST(PipelineSlot, PipelineLoopsMarksTheSlotsAndTheTextCarriesThem) {
  PrimFunc f = lowered_add_dev();
  const std::string text = print(f);
  for (const char* slot : {"x_0 = T.alloc_ub((1, 128), \"float16\", address=",
                           "x_1 = T.alloc_ub((1, 128), \"float16\", address="}) {
    size_t at = text.find(slot);
    ASSERT_NE(at, std::string::npos) << text;
    const std::string line = text.substr(at, text.find('\n', at) - at);
    EXPECT_NE(line.find(slot[2] == '0' ? "slot=(0, 0, 2))" : "slot=(0, 1, 2))"), std::string::npos)
        << line;
  }
  PrimFunc back = parse(text);
  EXPECT_TRUE(structural_equal(back, f));
  EXPECT_EQ(structural_hash(back), structural_hash(f));
  EXPECT_EQ(print(back), text);
  // A kernel without a T.Pipelined loop has no slots.
  PrimFunc one =
      lower(build_kernel(find_kernel("add_dev"), {{"M", "8"}, {"N", "128"}}), default_target());
  EXPECT_EQ(print(one).find("slot="), std::string::npos);
}

TEST(PipelineSlot, EqualityAndHashSeeTheTrait) {
  PrimFunc f = lowered_add_dev();
  const size_t h = structural_hash(f);
  for (PipelineSlot other : {PipelineSlot{.loop = 1, .index = 0, .count = 2},
                             PipelineSlot{.loop = 0, .index = 1, .count = 2},
                             PipelineSlot{.loop = 0, .index = 0, .count = 3}, PipelineSlot{}}) {
    PrimFunc g = with_slot(f, "x_0", other);
    EXPECT_FALSE(structural_equal(g, f)) << other.loop << other.index << other.count;
    EXPECT_NE(structural_hash(g), h) << other.loop << other.index << other.count;
  }
  EXPECT_TRUE(structural_equal(with_slot(f, "x_0", {.loop = 0, .index = 0, .count = 2}), f));
}

TEST(PipelineSlot, TheVerifierChecksTheNumbersAndTheScope) {
  PrimFunc f = lowered_add_dev();
  EXPECT_TRUE(verify(f).empty()) << format_diagnostics(verify(f));
  for (PipelineSlot bad : {PipelineSlot{.loop = 0, .index = 2, .count = 2},
                           PipelineSlot{.loop = 0, .index = 0, .count = 1}}) {
    const auto ds = verify(with_slot(f, "x_0", bad));
    ASSERT_EQ(ds.size(), 1u) << format_diagnostics(ds);
    EXPECT_EQ(ds[0].rule, "pipeline-slot-range");
    EXPECT_NE(
        ds[0].message.find(fmt::format("'x_0' is slot {} of {} of loop 0", bad.index, bad.count)),
        std::string::npos)
        << ds[0].message;
  }
  // The text form of a slot on a scalar buffer parses; the verifier names the rule.
  const auto ds = verify(parse(R"(@T.prim_func
def k(X: T.Tensor((8,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            s = T.alloc_var("int32", slot=(0, 0, 2))
            s[0] = 1
)"));
  ASSERT_FALSE(ds.empty());
  EXPECT_EQ(ds[0].rule, "pipeline-slot-scope") << format_diagnostics(ds);
}

}  // namespace
}  // namespace tl
