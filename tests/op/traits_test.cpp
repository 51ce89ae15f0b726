// Op traits and typed handles (issue 28, item 1): every registered op has a handle
// (include/tl/ops.h) and every required trait set, the registry rejects a definition with a
// required trait unset, and the traits that replaced the passes' and the virtual NPU's lists of
// op names say what those lists said. The lists are spelt out here, in the test, on purpose:
// they are the behaviour the traits must keep.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tl/op.h"
#include "tl/ops.h"
#include "tl/target.h"

namespace tl {
namespace {

/// Every handle of include/tl/ops.h with the name its op list gives it.
std::vector<std::pair<const OpDef*, std::string>> all_handles() {
  std::vector<std::pair<const OpDef*, std::string>> h;
#define TL_OP(IDENT) h.emplace_back(&ops::IDENT(), #IDENT);
#define TL_TILE_OP(IDENT) h.emplace_back(&ops::tile::IDENT(), "tile." #IDENT);
#include "tl/op_list.def"
#define TL_VECTOR_BINARY(NAME, ...) h.emplace_back(&ops::tile::NAME(), "tile." #NAME);
#define TL_VECTOR_UNARY(NAME, ...) h.emplace_back(&ops::tile::NAME(), "tile." #NAME);
#define TL_VECTOR_ROW_EXPAND(NAME, ...) \
  h.emplace_back(&ops::tile::row_expand_##NAME(), "tile.row_expand_" #NAME);
#include "tl/vector_ops.def"
  return h;
}

/// The handles of the op lists and the primitives of src/prims (which define their own handle
/// in their file) together cover all_ops() exactly, each op once.
TEST(OpTraits, HandlesCoverEveryOpOnce) {
  std::set<const OpDef*> seen;
  for (const auto& [op, name] : all_handles()) {
    EXPECT_EQ(op->name, name);
    EXPECT_EQ(op, find_op(name));
    EXPECT_TRUE(seen.insert(op).second) << name << " has two handles";
  }
  for (const OpDef* op : prim_ops()) {
    EXPECT_EQ(op, find_op(op->name));
    EXPECT_EQ(op->verify, OpRule::Prim) << op->name;
    EXPECT_TRUE(seen.insert(op).second) << op->name << " is a primitive with an op-list handle";
  }
  for (const OpDef* op : all_ops()) EXPECT_TRUE(seen.count(op)) << op->name << " has no handle";
  EXPECT_EQ(seen.size(), all_ops().size());
}

/// The primitives come after the op tables' ops, sorted by name, whatever the order of static
/// initialisation: all_ops() order feeds the JIT cache's ops fingerprint and T.tile.*.
TEST(OpTraits, PrimitivesComeLastSortedByName) {
  const auto& all = all_ops();
  const auto& prims = prim_ops();
  ASSERT_LE(prims.size(), all.size());
  const size_t first = all.size() - prims.size();
  for (size_t i = 0; i < prims.size(); ++i) {
    EXPECT_EQ(all[first + i], prims[i]);
    if (i > 0) {
      EXPECT_LT(prims[i - 1]->name, prims[i]->name);
    }
  }
  for (size_t i = 0; i < first; ++i) EXPECT_NE(all[i]->verify, OpRule::Prim) << all[i]->name;
}

/// Registering after the registry is built would leave the op out of every table: refused.
TEST(OpTraits, LateRegistrationIsAnInternalError) {
  (void)all_ops();
  EXPECT_THROW(register_prim(ops::tile::add()), InternalError);
}

TEST(OpTraits, EveryOpSetsEveryRequiredTrait) {
  for (const OpDef* op : all_ops()) {
    SCOPED_TRACE(op->name);
    EXPECT_NE(op->rows, RowMap::Unset);
    if (op->unit == OpUnit::Vector) {
      EXPECT_NE(op->overlap, Overlap::Unset);
    }
    EXPECT_NO_THROW(check_op_definition(*op));
    // A binop is computed element by element, or with a row-broadcast second operand.
    if (op->binop->has_value()) {
      EXPECT_TRUE(op->rows == RowMap::Elementwise || op->rows == RowMap::RowExpand);
      EXPECT_EQ(op_for_binop(**op->binop, op->rows), op);
    }
    // An identity is for an op that combines elements it reads (mask_tails fills with it).
    if (op->identity->has_value()) {
      EXPECT_EQ(op->unit, OpUnit::Vector);
    }
  }
}

/// A valid definition to break one trait of.
OpDef valid_def() {
  OpDef d = ops::tile::add();
  d.name = "tile.test_only";
  d.id = -1;
  return d;
}

TEST(OpTraits, RegistryRejectsAnOpWithAnUnsetTrait) {
  EXPECT_NO_THROW(check_op_definition(valid_def()));
  OpDef rows = valid_def();
  rows.rows = RowMap::Unset;
  EXPECT_THROW(check_op_definition(rows), InternalError);
  OpDef overlap = valid_def();
  overlap.overlap = Overlap::Unset;
  EXPECT_THROW(check_op_definition(overlap), InternalError);
  // A copy has no overlap rule to state (not a vector-unit op): accepted unset.
  OpDef copy = ops::copy();
  copy.name = "test_only_copy";
  EXPECT_EQ(copy.overlap, Overlap::Unset);
  EXPECT_NO_THROW(check_op_definition(copy));
}

/// Every Trait field of OpDef, unset on a copy of a valid op, is a registration error naming
/// the op and the trait (before: identity, binop, granular_count, flushes_subnormals, atomic
/// and developer_only were plain fields whose default could not be told from "none", so an op
/// registered without a thought about them passed with identity none, not granular, ...).
TEST(OpTraits, RegistryRejectsAnOpWithAnUnstatedElementTrait) {
  const std::pair<const char*, void (*)(OpDef&)> unset[] = {
      {"identity", [](OpDef& d) { d.identity = {}; }},
      {"binop", [](OpDef& d) { d.binop = {}; }},
      {"granular_count", [](OpDef& d) { d.granular_count = {}; }},
      {"flushes_subnormals", [](OpDef& d) { d.flushes_subnormals = {}; }},
      {"atomic", [](OpDef& d) { d.atomic = {}; }},
      {"developer_only", [](OpDef& d) { d.developer_only = {}; }},
  };
  for (const auto& [trait, clear] : unset) {
    SCOPED_TRACE(trait);
    OpDef d = valid_def();
    clear(d);
    try {
      check_op_definition(d);
      ADD_FAILURE() << "accepted with " << trait << " unset";
    } catch (const InternalError& e) {
      EXPECT_NE(std::string(e.what()).find("op tile.test_only does not state its trait OpDef::" +
                                           std::string(trait)),
                std::string::npos)
          << e.what();
    }
  }
  // "None" is a statement, not the absence of one.
  OpDef none = valid_def();
  none.identity = std::nullopt;
  none.binop = std::nullopt;
  EXPECT_TRUE(none.identity.is_set() && none.binop.is_set());
  EXPECT_NO_THROW(check_op_definition(none));
  // Reading a trait nobody stated is an internal error, not a default.
  OpDef blank;
  EXPECT_THROW((void)static_cast<bool>(blank.granular_count), InternalError);
}

TEST(OpTraits, EveryRegisteredOpStatesEveryTrait) {
  for (const OpDef* op : all_ops()) {
    SCOPED_TRACE(op->name);
    EXPECT_TRUE(op->identity.is_set());
    EXPECT_TRUE(op->binop.is_set());
    EXPECT_TRUE(op->granular_count.is_set());
    EXPECT_TRUE(op->flushes_subnormals.is_set());
    EXPECT_TRUE(op->atomic.is_set());
    EXPECT_TRUE(op->developer_only.is_set());
  }
}

/// The scalar intrinsics' one table (include/tl/intrinsics.def): names unique and found, the
/// vector ops what vectorize_parallel's own map said, the exactness what its exact_intrinsic
/// said (the lists are spelt out here on purpose: the behaviour the table must keep).
TEST(OpTraits, IntrinsicTableSaysWhatTheListsSaid) {
  std::map<std::string, std::string> vector_of;
  std::map<std::string, int> arity;
  for (const IntrinsicDef& d : intrinsics()) {
    EXPECT_EQ(find_intrinsic(d.name), &d);
    EXPECT_EQ(&intrinsic_def(d.id), &d);
    arity[std::string(d.name)] = d.arity;
    if (const OpDef* v = op_for_intrinsic(d.id)) vector_of[std::string(d.name)] = v->name;
  }
  EXPECT_EQ(find_intrinsic("tanh"), nullptr);
  EXPECT_EQ(arity, (std::map<std::string, int>{{"exp", 1},
                                               {"log", 1},
                                               {"sqrt", 1},
                                               {"rsqrt", 1},
                                               {"abs", 1},
                                               {"sigmoid", 1},
                                               {"pow", 2}}));
  EXPECT_EQ(vector_of, (std::map<std::string, std::string>{{"exp", "tile.exp"},
                                                           {"log", "tile.ln"},
                                                           {"sqrt", "tile.sqrt"},
                                                           {"rsqrt", "tile.rsqrt"},
                                                           {"abs", "tile.abs"},
                                                           {"sigmoid", "tile.sigmoid"}}));
  for (DType t : {DType::Float16, DType::BFloat16, DType::Float32}) {
    std::set<std::string> exact;
    for (const IntrinsicDef& d : intrinsics())
      if (d.exact_on(t)) exact.insert(std::string(d.name));
    std::set<std::string> want = {"abs", "sqrt"};
    if (t == DType::BFloat16) want.insert({"exp", "log"});
    EXPECT_EQ(exact, want) << dtype_name(t);
  }
  EXPECT_EQ(find_intrinsic("abs")->dtypes, IntrinsicDTypes::Numeric);
  EXPECT_EQ(find_intrinsic("exp")->dtypes, IntrinsicDTypes::Float);
  EXPECT_DOUBLE_EQ(find_intrinsic("pow")->eval(2.0, 3.0), 8.0);
}

/// The ops of src/op matching `pred`. The name lists below are what the passes and the VM said
/// before the traits; a primitive of src/prims states its traits in its own test.
std::set<std::string> names_where(bool (*pred)(const OpDef&)) {
  std::set<std::string> s;
  for (const OpDef* op : all_ops())
    if (pred(*op) && op->verify != OpRule::Prim) s.insert(op->name);
  return s;
}

TEST(OpTraits, TraitsSayWhatTheNameListsSaid) {
  // developer.cpp's is_elementwise: the unary and binary rows of vector_ops.def and these.
  std::set<std::string> elementwise = {"tile.cast",        "tile.fill",       "tile.relu",
                                       "tile.axpy",        "tile.leaky_relu", "tile.clamp",
                                       "tile.bitwise_and", "tile.bitwise_or", "tile.bitwise_not",
                                       "tile.bitwise_xor", "tile.shift_left", "tile.shift_right"};
#define TL_VECTOR_BINARY(NAME, ...) elementwise.insert("tile." #NAME);
#define TL_VECTOR_UNARY(NAME, ...) elementwise.insert("tile." #NAME);
#include "tl/vector_ops.def"
  EXPECT_EQ(names_where([](const OpDef& d) { return d.elementwise(); }), elementwise);
  // core.cpp's none_allowed.
  EXPECT_EQ(names_where([](const OpDef& d) { return d.overlap == Overlap::None; }),
            (std::set<std::string>{"reduce_sum", "reduce_max", "reduce_min", "merge_sort"}));
  // split_aiv's compare_needs_whole.
  EXPECT_EQ(names_where([](const OpDef& d) { return *d.granular_count; }),
            (std::set<std::string>{"tile.compare"}));
  // tail_identity.cpp's table.
  const std::map<std::string, double> identity = {{"tile.add", 0.0},
                                                  {"tile.sub", 0.0},
                                                  {"tile.axpy", 0.0},
                                                  {"tile.mul", 1.0},
                                                  {"tile.div", 1.0},
                                                  {"tile.max", -INFINITY},
                                                  {"tile.min", INFINITY},
                                                  {"reduce_sum", 0.0},
                                                  {"reduce_max", -INFINITY},
                                                  {"reduce_min", INFINITY},
                                                  {"sort", -INFINITY},
                                                  {"topk", -INFINITY},
                                                  {"tile.row_expand_add", 0.0},
                                                  {"tile.row_expand_sub", 0.0},
                                                  {"tile.row_expand_mul", 1.0},
                                                  {"tile.row_expand_div", 1.0},
                                                  {"tile.row_expand_max", -INFINITY},
                                                  {"tile.row_expand_min", INFINITY}};
  std::map<std::string, double> got;
  for (const OpDef* op : all_ops())
    if (op->identity->has_value()) got[op->name] = **op->identity;
  EXPECT_EQ(got, identity);
  // vectorize_parallel's operator mapping.
  const std::map<BinOp, std::string> binops = {{BinOp::Add, "add"},
                                               {BinOp::Sub, "sub"},
                                               {BinOp::Mul, "mul"},
                                               {BinOp::Div, "div"},
                                               {BinOp::Max, "max"},
                                               {BinOp::Min, "min"},
                                               {BinOp::BitAnd, "bitwise_and"},
                                               {BinOp::BitOr, "bitwise_or"},
                                               {BinOp::BitXor, "bitwise_xor"},
                                               {BinOp::Shl, "shift_left"},
                                               {BinOp::Shr, "shift_right"}};
  for (const auto& [b, name] : binops) {
    ASSERT_NE(op_for_binop(b, RowMap::Elementwise), nullptr) << name;
    EXPECT_EQ(op_for_binop(b, RowMap::Elementwise)->name, "tile." + name);
  }
  for (const char* name : {"add", "sub", "mul", "div", "max", "min"}) {
    BinOp b = std::find_if(binops.begin(), binops.end(), [&](const auto& p) {
                return p.second == name;
              })->first;
    ASSERT_NE(op_for_binop(b, RowMap::RowExpand), nullptr) << name;
    EXPECT_EQ(op_for_binop(b, RowMap::RowExpand)->name, std::string("tile.row_expand_") + name);
  }
}

/// The one definition of an op's core (op_core): a copy runs on the core its path names.
TEST(OpTraits, OpCoreIsTheCopyPathsCore) {
  const Target& a2 = get_target("A2");
  auto buf = [](const char* n, MemScope s) {
    return BufferRegion::full(BufferNode::make(n, DType::Float16, {Expr(16), Expr(16)}, s));
  };
  auto core = [&](const Target& t, MemScope src, MemScope dst) {
    Stmt s = make_tile_op(ops::copy(), {buf("s", src), buf("d", dst)}, {}, SourceLoc{});
    return op_core(*s.as<TileOpNode>(), t);
  };
  EXPECT_EQ(core(a2, MemScope::GM, MemScope::UB), CoreKind::Vector);
  EXPECT_EQ(core(a2, MemScope::UB, MemScope::GM), CoreKind::Vector);
  EXPECT_EQ(core(a2, MemScope::GM, MemScope::L1), CoreKind::Cube);
  EXPECT_EQ(core(a2, MemScope::L0C, MemScope::GM), CoreKind::Cube);
  // 950: L1 -> UB is pushed by the AIC (the verifier's and the splitter's answer; the virtual
  // NPU's own copy of the rule said the AIV, since the copy has a UB operand).
  const Target& t950 = get_target("950");
  EXPECT_EQ(core(t950, MemScope::L1, MemScope::UB), CoreKind::Cube);
  EXPECT_EQ(core(t950, MemScope::UB, MemScope::L1), CoreKind::Vector);
  Stmt add = make_tile_op(ops::tile::add(),
                          {buf("d", MemScope::UB), buf("a", MemScope::UB), buf("b", MemScope::UB)},
                          {}, SourceLoc{});
  EXPECT_EQ(op_core(*add.as<TileOpNode>(), a2), CoreKind::Vector);
}

}  // namespace
}  // namespace tl
