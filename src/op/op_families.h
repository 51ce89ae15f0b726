// Internal: each file in src/op/ registers one family of tile primitives.
#pragma once

#include <vector>

#include "tl/op.h"

namespace tl::ops {

using OpList = std::vector<OpDef>;
void register_move_ops(OpList& ops);         // copy, atomic_add
void register_cube_ops(OpList& ops);         // gemm_v0, mma
void register_vector_ops(OpList& ops);       // T.tile.*
void register_reduce_sort_ops(OpList& ops);  // reduce_*, sort, merge_sort, topk, init_sort_buf
void register_debug_ops(OpList& ops);        // printf, dump_tensor

// Small builders that keep the op tables readable.
inline OperandSpec in(std::string name, OperandKind k = OperandKind::Tile) {
  return {std::move(name), k, Access::Read};
}
inline OperandSpec out(std::string name) {
  return {std::move(name), OperandKind::Tile, Access::Write};
}
inline OperandSpec inout(std::string name) {
  return {std::move(name), OperandKind::Tile, Access::ReadWrite};
}
inline OperandSpec scalar(std::string name) {
  return {std::move(name), OperandKind::Scalar, Access::Read};
}
/// A bit-vector operand (OperandSpec::bitmask).
inline OperandSpec bitmask(OperandSpec s) {
  s.bitmask = true;
  return s;
}
inline OperandSpec optional(OperandSpec s) {
  s.optional = true;
  return s;
}
/// A fixed pipe, independent of the target.
inline std::function<Pipe(const TileOpNode&, const Target&)> on(Pipe p) {
  return [p](const TileOpNode&, const Target&) { return p; };
}

/// An op of the vector unit: one instruction on the V pipe of an AIV. The vector unit has no
/// atomic op and no developer-only one: the builder states both; the element-math traits
/// (identity, binop, granular_count, flushes_subnormals) each family states per op.
inline OpDef vector_op(std::string name, std::vector<OperandSpec> operands, std::string summary,
                       std::vector<AttrSpec> attrs, OpRule verify, OpDTypes dtypes, CostClass cost,
                       RowMap rows, Overlap overlap) {
  return OpDef{.name = std::move(name),
               .unit = OpUnit::Vector,
               .operands = std::move(operands),
               .attrs = std::move(attrs),
               .pipe = on(Pipe::V),
               .verify = verify,
               .dtypes = std::move(dtypes),
               .cost = cost,
               .rows = rows,
               .overlap = overlap,
               .atomic = false,
               .developer_only = false,
               .summary = std::move(summary)};
}

// Dtype lists of the vector unit on every target (docs/hardware.md section 5, "Vector").
inline const std::vector<DType> kArith = {DType::Int16, DType::Float16, DType::Int32,
                                          DType::Float32};
inline const std::vector<DType> kFloat = {DType::Float16, DType::Float32};

/// States the element-math traits of an op that computes no scalar operation element by
/// element and has no neutral fill (data movement, the cube, debug printing, index generation):
/// OpDef::identity and binop none, granular_count and flushes_subnormals false.
inline OpDef no_element_math(OpDef d) {
  d.identity = std::nullopt;
  d.binop = std::nullopt;
  d.granular_count = false;
  d.flushes_subnormals = false;
  return d;
}

}  // namespace tl::ops
