// Vector primitives (T.tile.*): elementwise binary and unary ops, scalar forms, casts,
// compare/select, fills and index generation, gathers, broadcasts, 16x16 transpose and
// bitwise ops. All run on the V pipe of an AIV with every tile operand in UB.
#include "../verify/op_rules.h"
#include "op_families.h"

namespace tl::ops {
namespace {
const std::vector<std::string> kRoundModes = {"CAST_NONE", "CAST_RINT",  "CAST_FLOOR", "CAST_CEIL",
                                              "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"};
const std::vector<std::string> kCmpModes = {"LT", "GT", "EQ", "LE", "GE", "NE"};
const std::vector<std::string> kGatherPatterns = {"",      "P0101", "P1010", "P0001",
                                                  "P0010", "P0100", "P1000", "P1111"};

using Rule = std::function<void(const TileOpNode&, VerifyContext&)>;
OpDef vec(std::string name, std::vector<OperandSpec> operands, std::string summary,
          std::vector<AttrSpec> attrs = {}, Rule verify = rules::rule_elementwise) {
  return vector_op("tile." + name, std::move(operands), std::move(summary), std::move(attrs), std::move(verify));
}
}  // namespace

void register_vector_ops(OpList& ops) {
  const auto operand2 = OperandSpec{"src1", OperandKind::TileOrScalar, Access::Read};
  for (const char* b : {"add", "sub", "mul", "div", "max", "min"})
    ops.push_back(vec(b, {out("dst"), in("src0"), operand2},
                      fmt::format("dst = src0 {} src1 (src1: tile, UB scalar or expression)", b)));
  for (const char* b : {"bitwise_and", "bitwise_or"})
    ops.push_back(vec(b, {out("dst"), in("src0"), in("src1")}, fmt::format("dst = src0 {} src1", b)));
  ops.push_back(vec("bitwise_not", {out("dst"), in("src")}, "dst = ~src"));
  ops.push_back(vec("shift_left", {out("dst"), in("src"), scalar("bits")}, "dst = src << bits"));
  ops.push_back(vec("shift_right", {out("dst"), in("src"), scalar("bits")}, "dst = src >> bits"));
  for (const char* u : {"exp", "ln", "abs", "reciprocal", "sqrt", "rsqrt", "relu", "sigmoid", "silu",
                        "sin", "cos", "round"})
    ops.push_back(vec(u, {out("dst"), in("src")}, fmt::format("dst = {}(src)", u)));
  ops.push_back(vec("axpy", {inout("dst"), in("src"), scalar("alpha")}, "dst += alpha * src", {},
                    rules::rule_axpy));
  ops.push_back(vec("leaky_relu", {out("dst"), in("src"), scalar("alpha")},
                    "dst = src >= 0 ? src : alpha * src"));
  ops.push_back(vec("clamp", {out("dst"), in("src"), scalar("lo"), scalar("hi")},
                    "dst = min(max(src, lo), hi)"));
  ops.push_back(vec("cast", {out("dst"), in("src")}, "dst = cast(src) with a rounding mode",
                    {{"mode", std::string("CAST_NONE"), kRoundModes}}, rules::rule_cast));
  ops.push_back(vec("compare", {out("dst"), in("src0"), operand2},
                    "dst (uint8 bitmask, 1 bit per element) = src0 <mode> src1",
                    {{"mode", std::string("LT"), kCmpModes}}, rules::rule_compare));
  ops.push_back(vec("select",
                    {out("dst"), in("mask"), in("src0"), {"src1", OperandKind::TileOrScalar, Access::Read}},
                    "dst = mask bit set ? src0 : src1", {{"mode", int64_t{2}, {}}}, rules::rule_select));
  ops.push_back(vec("fill", {out("dst"), scalar("value")}, "dst = value", {}, rules::rule_fill_like));
  ops.push_back(vec("createvecindex", {out("dst"), scalar("first")}, "dst[i] = first + i", {},
                    rules::rule_fill_like));
  ops.push_back(vec("arith_progression",
                    {out("dst"), scalar("first"), scalar("diff"), optional(scalar("count"))},
                    "dst[i] = first + i * diff for i < count", {}, rules::rule_fill_like));
  ops.push_back(vec("gather", {out("dst"), in("src"), in("offsets"), optional(scalar("base"))},
                    "dst[i] = src[(base + offsets[i]) / sizeof(T)] (byte offsets)", {},
                    rules::rule_gather));
  ops.push_back(vec("gather_mask", {out("dst"), in("src"), optional(in("mask"))},
                    "dst = the elements of src selected by a fixed pattern or a bitmask",
                    {{"pattern", std::string(""), kGatherPatterns}}, rules::rule_gather_mask));
  ops.push_back(vec("broadcast", {out("dst"), in("src")},
                    "dst = src broadcast along its size-1 (or missing leading) dimensions", {},
                    rules::rule_broadcast));
  for (const char* r : {"add", "sub", "mul", "div", "max", "min"})
    ops.push_back(vec(std::string("row_expand_") + r, {out("dst"), in("src0"), in("src1")},
                      fmt::format("dst[i, j] = src0[i, j] {} src1[i]", r), {},
                      rules::rule_row_expand));
  ops.push_back(vec("transpose", {out("dst"), in("src")}, "dst = src^T for one 16x16 16-bit block", {},
                    rules::rule_transpose));
}

}  // namespace tl::ops
