// Completeness of the primitive registry: every registered op carries every piece of its one
// definition (pipe, verifier rule, dtypes on every target, cost class, instruction expansion,
// summary), the virtual NPU implements it, and docs/language.md documents it. A primitive added
// without one of these fails here, not later in a kernel.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "tl/npu/npu.h"
#include "tl/op.h"
#include "tl/pass.h"
#include "tl/target.h"

namespace tl {
namespace {

std::string language_doc() {
  std::string root = env_value("TL_SOURCE_DIR");
  std::ifstream in((root.empty() ? std::string(".") : root) + "/docs/language.md");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The op is named in a table row (`| ... name ... |`) or has its own `### T::name` section.
bool documented(const std::string& doc, const OpDef& op) {
  std::string shortname = op.name.rfind("tile.", 0) == 0 ? op.name.substr(5) : op.name;
  if (doc.find("### T::" + op.name) != std::string::npos) return true;
  std::regex word("(^|[^A-Za-z0-9_])" + shortname + "([^A-Za-z0-9_]|$)");
  std::istringstream lines(doc);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("|", 0) == 0 && std::regex_search(line, word)) return true;
  return false;
}

bool cost_fits_unit(const OpDef& op, CostClass c) {
  switch (op.unit) {
    case OpUnit::Move:
      return c == CostClass::Copy;
    case OpUnit::Cube:
      return c == CostClass::Mmad || c == CostClass::CubeLoad;
    case OpUnit::Vector:
      return is_vector_cost(c);
    case OpUnit::Debug:
    case OpUnit::Scalar:
      return c == CostClass::Scalar;
  }
  return false;
}

TEST(OpRegistry, EveryOpHasEveryPiece) {
  const std::string doc = language_doc();
  ASSERT_FALSE(doc.empty()) << "docs/language.md not found (TL_SOURCE_DIR)";
  int checked = 0;
  for (size_t i = 0; i < all_ops().size(); ++i) {
    const OpDef& op = *all_ops()[i];
    SCOPED_TRACE(op.name);
    EXPECT_EQ(op.id, static_cast<int>(i));
    EXPECT_EQ(find_op(op.name), &op);
    EXPECT_FALSE(op.summary.empty());
    EXPECT_TRUE(op.pipe != nullptr);
    EXPECT_TRUE(op.verify != OpRule::None || op.unit == OpUnit::Debug);
    ASSERT_TRUE(op.cost.has_value());
    EXPECT_TRUE(cost_fits_unit(op, *op.cost)) << cost_class_name(*op.cost);
    // Dtypes: a list on every target, a named target table, or any dtype; never unset.
    ASSERT_NE(op.dtypes.kind, OpDTypes::Kind::Unset);
    for (const auto& tn : target_names()) {
      const Target& t = get_target(tn);
      if (op.dtypes.kind == OpDTypes::Kind::List) {
        ASSERT_NE(op.dtypes.on(t), nullptr) << tn;
        EXPECT_FALSE(op.dtypes.on(t)->empty()) << tn;
      }
      // Every vector cost class the op's instructions use has a row in every cost table.
      for (const auto& ins : op.expansion)
        if (ins.kind == InstrSpec::Kind::Op && is_vector_cost(ins.cost)) {
          EXPECT_NO_THROW(t.costs.vector_cost(ins.cost));
        }
    }
    if (op.dtypes.kind == OpDTypes::Kind::TargetTable) {
      EXPECT_FALSE(op.dtypes.table.empty());
    }
    // Expansion: at least one instruction; every instruction has a cost class of the op's unit
    // and touches operands that exist.
    ASSERT_FALSE(op.expansion.empty());
    int instructions = 0;
    for (const auto& ins : op.expansion) {
      if (ins.kind == InstrSpec::Kind::BarrierAll) continue;
      ++instructions;
      EXPECT_TRUE(cost_fits_unit(op, ins.cost)) << ins.name;
      for (const auto& t : ins.touches) {
        EXPECT_LT(t.operand, static_cast<int>(op.operands.size()));
        if (t.operand < 0) {
          EXPECT_TRUE(t.bytes != nullptr && t.scratch != MemScope::GM);
        }
      }
    }
    EXPECT_GT(instructions, 0);
    // Developer-only ops are lowered before any backend sees them.
    EXPECT_TRUE(npu::implements(op) != op.developer_only)
        << "virtual-NPU semantics iff not developer-only";
    EXPECT_TRUE(documented(doc, op)) << "no row or section in docs/language.md";
    ++checked;
  }
  EXPECT_GE(checked, 50);
}

TEST(OpRegistry, GemmV0ExpansionIsTheTemplate) {
  const OpDef& g = *find_op("gemm_v0");
  ASSERT_EQ(g.expansion.size(), 5u);
  EXPECT_EQ(g.expansion[0].kind, InstrSpec::Kind::BarrierAll);
  EXPECT_EQ(g.expansion[1].pipe, Pipe::MTE1);
  EXPECT_EQ(g.expansion[1].cost, CostClass::CubeLoad);
  EXPECT_EQ(g.expansion[2].kind, InstrSpec::Kind::BarrierAll);
  EXPECT_EQ(g.expansion[3].pipe, Pipe::M);
  EXPECT_EQ(g.expansion[3].cost, CostClass::Mmad);
  EXPECT_EQ(g.expansion[4].kind, InstrSpec::Kind::BarrierAll);
}

TEST(OpRegistry, CostClassesAreChosenAtRegistrationNotByName) {
  // The names that a substring match once priced wrongly: "row_expand_add" contains "exp",
  // "init_sort_buf" contains "sort".
  EXPECT_EQ(*find_op("tile.row_expand_add")->cost, CostClass::VecSimple);
  EXPECT_EQ(*find_op("tile.row_expand_div")->cost, CostClass::VecExpDiv);
  EXPECT_EQ(*find_op("init_sort_buf")->cost, CostClass::VecSimple);
  EXPECT_EQ(*find_op("tile.exp")->cost, CostClass::VecExpDiv);  // the exp / div rate
  EXPECT_EQ(*find_op("sort")->cost, CostClass::VecSort);
  EXPECT_EQ(*find_op("reduce_max")->cost, CostClass::VecReduce);
}

}  // namespace
}  // namespace tl
