// The pipeline-slot trait of a buffer (BufferNode::slot, issue 30): pipeline_loops marks each
// slot it makes of a T.Pipelined loop's versioned buffer with (loop, index, count); the printer
// writes it (`T.alloc_ub(..., slot=(0, 1, 2))`), the parser reads it back, structural equality
// and hashing see it, and the verifier rejects a slot number outside its count or a slot on a
// GM or scalar buffer. plan_memory keeps slots of one loop with different numbers apart on it
// (tests/pass/plan_memory_unrolled_slots*.tl; docs/compiler.md, plan_memory).
#include <gtest/gtest.h>

#include <string>

#include "pass_test_util.h"
#include "tl/ir_equal.h"
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

/// The text of `f` (no locations) with x_0's slot written as `slot` ("" drops it).
std::string with_slot(const PrimFunc& f, const std::string& slot) {
  std::string text = print(f, {.locations = false});
  const std::string from = ", slot=(0, 0, 2))";
  size_t at = text.find("x_0 = T.alloc_ub");
  at = text.find(from, at);
  EXPECT_NE(at, std::string::npos) << text;
  if (at == std::string::npos) return text;
  return text.replace(at, from.size(), slot.empty() ? ")" : ", slot=" + slot + ")");
}

TEST(PipelineSlot, PipelineLoopsMarksTheSlotsAndTheTextCarriesThem) {
  PrimFunc f = lowered_add_dev();
  const std::string text = print(f, {.locations = false});
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
  EXPECT_EQ(print(back, {.locations = false}), text);
  // A kernel without a T.Pipelined loop has no slots.
  PrimFunc one =
      lower(build_kernel(find_kernel("add_dev"), {{"M", "8"}, {"N", "128"}}), default_target());
  EXPECT_EQ(print(one, {.locations = false}).find("slot="), std::string::npos);
}

TEST(PipelineSlot, EqualityAndHashSeeTheTrait) {
  PrimFunc f = lowered_add_dev();
  PrimFunc same = parse(with_slot(f, "(0, 0, 2)"));
  EXPECT_TRUE(structural_equal(same, f));
  EXPECT_EQ(structural_hash(same), structural_hash(f));
  for (const char* other : {"(1, 0, 2)", "(0, 1, 2)", "(0, 0, 3)", ""}) {
    PrimFunc g = parse(with_slot(f, other));
    EXPECT_FALSE(structural_equal(g, f)) << other;
    EXPECT_NE(structural_hash(g), structural_hash(f)) << other;
  }
}

/// The diagnostic of `rule` among `ds`, or null.
const Diagnostic* find_rule(const std::vector<Diagnostic>& ds, const std::string& rule) {
  for (const auto& d : ds)
    if (d.rule == rule) return &d;
  return nullptr;
}

TEST(PipelineSlot, TheVerifierChecksTheNumbersAndTheScope) {
  PrimFunc f = lowered_add_dev();
  const size_t base = verify(f).size();
  EXPECT_EQ(find_rule(verify(f), "pipeline-slot-range"), nullptr);
  for (PipelineSlot bad : {PipelineSlot{.loop = 0, .index = 2, .count = 2},
                           PipelineSlot{.loop = 0, .index = 0, .count = 1}}) {
    const auto ds =
        verify(parse(with_slot(f, fmt::format("({}, {}, {})", bad.loop, bad.index, bad.count))));
    EXPECT_EQ(ds.size(), base + 1) << format_diagnostics(ds);
    const Diagnostic* d = find_rule(ds, "pipeline-slot-range");
    ASSERT_NE(d, nullptr) << format_diagnostics(ds);
    EXPECT_NE(
        d->message.find(fmt::format("'x_0' is slot {} of {} of loop 0", bad.index, bad.count)),
        std::string::npos)
        << d->message;
  }
  // The text form of a slot on a scalar buffer parses; the verifier names the rule.
  const auto ds = verify(parse(R"(@T.prim_func
def k(X: T.Tensor((8,), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            s = T.alloc_var("int32", slot=(0, 0, 2))
            s[0] = 1
)"));
  EXPECT_NE(find_rule(ds, "pipeline-slot-scope"), nullptr) << format_diagnostics(ds);
}

}  // namespace
}  // namespace tl
