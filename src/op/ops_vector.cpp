// Vector primitives (T.tile.*): elementwise binary and unary ops (the rows of
// include/tl/vector_ops.def), scalar forms, casts, compare/select, fills and index generation,
// gathers, broadcasts, row-broadcast ops, 16x16 transpose and bitwise ops. All run on the V pipe
// of an AIV with every tile operand in UB. Dtype lists and cost classes are the AscendC API
// pages' (docs/hardware.md section 5, "Vector"; docs/hardware.md section 4).
#include "op_families.h"
#include "op_rules.h"

#include <cmath>
#include <map>
#include <set>

namespace tl::ops {
namespace {
const std::vector<std::string> kRoundModes = {"CAST_NONE",  "CAST_RINT",  "CAST_FLOOR", "CAST_CEIL",
                                              "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"};
const std::vector<std::string> kCmpModes = {"LT", "GT", "EQ", "LE", "GE", "NE"};
const std::vector<std::string> kGatherPatterns = {"",      "P0101", "P1010", "P0001",
                                                  "P0010", "P0100", "P1000", "P1111"};
using D = DType;
const std::vector<DType> kAnyWidth = {D::Int8,     D::UInt8, D::Int16,  D::UInt16, D::Float16,
                                      D::BFloat16, D::Int32, D::UInt32, D::Float32};

using Rule = OpRule;
OpDef vec(std::string name, RowMap rows, std::vector<OperandSpec> operands, std::string summary,
          std::vector<DType> dtypes, CostClass cost = CostClass::VecSimple,
          std::vector<AttrSpec> attrs = {}, Rule verify = rules::rule_elementwise) {
  // Every T.tile op may run in place (the destination exactly one of its sources) and no
  // partial overlap (ASCENDC_API.md "general constraints": address overlap).
  return vector_op("tile." + name, std::move(operands), std::move(summary), std::move(attrs),
                   std::move(verify), only_dtypes(std::move(dtypes)), cost, rows,
                   Overlap::SameRegion);
}
}  // namespace

void register_vector_ops(OpList& ops) {
  const size_t first = ops.size();
  const auto operand2 = OperandSpec{"src1", OperandKind::TileOrScalar, Access::Read};
#define TL_VECTOR_BINARY(NAME, DTYPES, COST, F, FI, SUMMARY)                                 \
  ops.push_back(vec(#NAME, RowMap::Elementwise, {out("dst"), in("src0"), operand2}, SUMMARY, \
                    DTYPES, CostClass::COST));
#define TL_VECTOR_UNARY(NAME, DTYPES, COST, F, SUMMARY) \
  ops.push_back(                                        \
      vec(#NAME, RowMap::Elementwise, {out("dst"), in("src")}, SUMMARY, DTYPES, CostClass::COST));
#define TL_VECTOR_ROW_EXPAND(NAME, DTYPES, COST, F, FI, SUMMARY)                                  \
  ops.push_back(vec("row_expand_" #NAME, RowMap::RowExpand, {out("dst"), in("src0"), in("src1")}, \
                    SUMMARY, DTYPES, CostClass::COST, {}, rules::rule_row_expand));
#include "tl/vector_ops.def"
  // bitwise_xor: AscendC::Xor (TileLang-Ascend's T.tile.bitwise_xor), int16 / uint16 like And/Or.
  // And / Or also take 8-bit tiles, as AscendC's count form reinterprets them as int16 (exact on
  // the tile's bytes; the verifier's byte-bitwise rule says where the chip's extra bytes land).
  for (const char* b : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
    std::vector<DType> dts = {D::Int16, D::UInt16};
    if (std::string_view(b) != "bitwise_xor") dts.insert(dts.end(), {D::Int8, D::UInt8});
    ops.push_back(vec(b, RowMap::Elementwise, {out("dst"), in("src0"), in("src1")},
                      fmt::format("dst = src0 {} src1", b), dts));
  }
  ops.push_back(vec("bitwise_not", RowMap::Elementwise, {out("dst"), in("src")}, "dst = ~src",
                    {D::Int16, D::UInt16}));
  const std::vector<DType> shifts = {D::Int16, D::UInt16, D::Int32, D::UInt32};
  ops.push_back(vec("shift_left", RowMap::Elementwise, {out("dst"), in("src"), scalar("bits")},
                    "dst = src << bits", shifts));
  ops.push_back(vec("shift_right", RowMap::Elementwise, {out("dst"), in("src"), scalar("bits")},
                    "dst = src >> bits", shifts));
  ops.push_back(vec("relu", RowMap::Elementwise, {out("dst"), in("src")}, "dst = max(src, 0)",
                    {D::Float16, D::Int32, D::Float32}));
  ops.push_back(vec("axpy", RowMap::Elementwise, {inout("dst"), in("src"), scalar("alpha")},
                    "dst += alpha * src", kFloat, CostClass::VecSimple, {}, rules::rule_axpy));
  ops.push_back(vec("leaky_relu", RowMap::Elementwise, {out("dst"), in("src"), scalar("alpha")},
                    "dst = src >= 0 ? src : alpha * src", kFloat));
  ops.push_back(vec("clamp", RowMap::Elementwise,
                    {out("dst"), in("src"), scalar("lo"), scalar("hi")},
                    "dst = min(max(src, lo), hi)", kFloat));
  OpDef cast = vec("cast", RowMap::Elementwise, {out("dst"), in("src")},
                   "dst = cast(src) with a rounding mode", {}, CostClass::VecSimple,
                   {{"mode", std::string("CAST_NONE"), kRoundModes}}, rules::rule_cast);
  cast.dtypes = dtypes_from_target("casts");
  ops.push_back(std::move(cast));
  ops.push_back(vec("compare", RowMap::Elementwise, {bitmask(out("dst")), in("src0"), operand2},
                    "dst (uint8 bitmask, 1 bit per element) = src0 <mode> src1",
                    {D::Float16, D::Float32, D::Int32}, CostClass::VecSimple,
                    {{"mode", std::string("LT"), kCmpModes}}, rules::rule_compare));
  ops.push_back(vec("select", RowMap::Elementwise,
                    {out("dst"),
                     bitmask(in("mask")),
                     in("src0"),
                     {"src1", OperandKind::TileOrScalar, Access::Read}},
                    "dst = mask bit set ? src0 : src1", kFloat, CostClass::VecSimple,
                    {{"mode", int64_t{2}, {}}}, rules::rule_select));
  ops.push_back(vec("fill", RowMap::Elementwise, {out("dst"), scalar("value")}, "dst = value",
                    {D::Int16, D::UInt16, D::Float16, D::BFloat16, D::Int32, D::UInt32, D::Float32},
                    CostClass::VecSimple, {}, rules::rule_fill_like));
  ops.push_back(vec("createvecindex", RowMap::Whole, {out("dst"), scalar("first")},
                    "dst[i] = first + i", kArith, CostClass::VecSimple, {}, rules::rule_fill_like));
  ops.push_back(vec("arith_progression", RowMap::Whole,
                    {out("dst"), scalar("first"), scalar("diff"), optional(scalar("count"))},
                    "dst[i] = first + i * diff for i < count", kArith, CostClass::VecSimple, {},
                    rules::rule_fill_like));
  ops.push_back(vec("gather", RowMap::Whole,
                    {out("dst"), in("src"), in("offsets"), optional(scalar("base"))},
                    "dst[i] = src[(base + offsets[i]) / sizeof(T)] (byte offsets)", kAnyWidth,
                    CostClass::VecSimple, {}, rules::rule_gather));
  ops.push_back(vec("gather_mask", RowMap::Whole,
                    {out("dst"), in("src"), optional(bitmask(in("mask")))},
                    "dst = the elements of src selected by a fixed pattern or a bitmask", kAnyWidth,
                    CostClass::VecSimple, {{"pattern", std::string(""), kGatherPatterns}},
                    rules::rule_gather_mask));
  // axis (TileLang-Ascend's, tl/shape_rules.h): -1 reads src right-aligned; 1 reads a source of
  // one dimension as a column [n, 1]; 0 states the right-aligned row.
  ops.push_back(vec("broadcast", RowMap::Broadcast, {out("dst"), in("src")},
                    "dst = src broadcast along its size-1 (or missing leading) dimensions",
                    kAnyWidth, CostClass::VecSimple, {{"axis", int64_t{-1}, {}}},
                    rules::rule_broadcast));
  ops.push_back(vec("transpose", RowMap::Whole, {out("dst"), in("src")},
                    "dst = src^T for one 16x16 16-bit block",
                    {D::Int16, D::UInt16, D::Float16, D::BFloat16}, CostClass::VecSimple, {},
                    rules::rule_transpose));

  // The element-math traits of every op of this family (OpDef's Trait fields, which the
  // registry requires stated), from the tables below: an op no table names has none.
  // The ops a 3510 (950) vector unit computes with subnormal inputs and results flushed to zero
  // (their INTRINSIC algorithms; asc-devkit "2201到3510架构变更", 计算单元: Ln/Sqrt/Rsqrt/Div/
  // Reciprocal/Exp). OpDef::flushes_subnormals; A2/A3 keep subnormals.
  const std::set<std::string> flushes = {"tile.div",       "tile.row_expand_div", "tile.exp",
                                         "tile.ln",        "tile.sqrt",           "tile.rsqrt",
                                         "tile.reciprocal"};
  // The scalar operator each computes element by element (OpDef::binop), with rows
  // Elementwise or RowExpand.
  const std::map<std::string, BinOp> binops = {{"tile.add", BinOp::Add},
                                               {"tile.sub", BinOp::Sub},
                                               {"tile.mul", BinOp::Mul},
                                               {"tile.div", BinOp::Div},
                                               {"tile.max", BinOp::Max},
                                               {"tile.min", BinOp::Min},
                                               {"tile.row_expand_add", BinOp::Add},
                                               {"tile.row_expand_sub", BinOp::Sub},
                                               {"tile.row_expand_mul", BinOp::Mul},
                                               {"tile.row_expand_div", BinOp::Div},
                                               {"tile.row_expand_max", BinOp::Max},
                                               {"tile.row_expand_min", BinOp::Min},
                                               {"tile.bitwise_and", BinOp::BitAnd},
                                               {"tile.bitwise_or", BinOp::BitOr},
                                               {"tile.bitwise_xor", BinOp::BitXor},
                                               {"tile.shift_left", BinOp::Shl},
                                               {"tile.shift_right", BinOp::Shr}};
  // The identities mask_tails fills a stale tail of a source with (OpDef::identity): the value
  // that leaves the op's result on the valid elements unchanged (for sub and div: of src1).
  const std::map<std::string, double> identities = {{"tile.add", 0.0},
                                                    {"tile.sub", 0.0},
                                                    {"tile.mul", 1.0},
                                                    {"tile.div", 1.0},
                                                    {"tile.max", -INFINITY},
                                                    {"tile.min", INFINITY},
                                                    {"tile.axpy", 0.0},
                                                    {"tile.row_expand_add", 0.0},
                                                    {"tile.row_expand_sub", 0.0},
                                                    {"tile.row_expand_mul", 1.0},
                                                    {"tile.row_expand_div", 1.0},
                                                    {"tile.row_expand_max", -INFINITY},
                                                    {"tile.row_expand_min", INFINITY}};
  // A2's Compare counts its source in Target::compare_align_bytes granules.
  const std::set<std::string> granular = {"tile.compare"};
  for (size_t i = first; i < ops.size(); ++i) {
    OpDef& op = ops[i];
    op.flushes_subnormals = flushes.count(op.name) > 0;
    op.binop = binops.count(op.name) ? std::optional(binops.at(op.name)) : std::nullopt;
    op.identity = identities.count(op.name) ? std::optional(identities.at(op.name)) : std::nullopt;
    op.granular_count = granular.count(op.name) > 0;
  }
}

}  // namespace tl::ops
