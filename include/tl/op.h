// The tile-primitive registry. A tile primitive (copy, gemm_v0, tile.add, reduce_sum, sort,
// ...) is one OpDef: its operands (name, tile or scalar, read/write), its static attributes
// with defaults, the core it runs on, the pipe it issues to, and its verifier rule. The
// printer, the parser, the DSL and the verifier are generic over this table; the virtual NPU
// registers each op's semantics and cost separately (per backend), keyed by the op's name.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tl/ir.h"

namespace tl {

struct Target;
class VerifyContext;

enum class Access : uint8_t { Read, Write, ReadWrite };
enum class OperandKind : uint8_t {
  Tile,          // a buffer region
  Scalar,        // a scalar expression
  TileOrScalar,  // either (binary ops: second operand may be a tile, a UB scalar, an expression)
};

struct OperandSpec {
  std::string name;
  OperandKind kind = OperandKind::Tile;
  Access access = Access::Read;
  bool optional = false;  // trailing operands that may be omitted
  bool variadic = false;  // last operand repeats (printf arguments)
};

struct AttrSpec {
  std::string name;
  AttrValue default_value;
  std::vector<std::string> choices;  // for string attributes with a closed set of values
};

/// Which kind of unit runs the op, and so which core scope it belongs in.
enum class OpUnit : uint8_t {
  Move,    // data movement: MTE1/MTE2/MTE3/FIX/V, chosen from the copy path
  Cube,    // the cube unit (AIC only)
  Vector,  // the vector unit (AIV only)
  Debug,   // printf / dump_tensor: any core, scalar pipe
};

struct OpDef {
  std::string name;  // as written after "T.": "copy", "tile.add", "reduce_sum", ...
  OpUnit unit = OpUnit::Vector;
  std::vector<OperandSpec> operands;
  std::vector<AttrSpec> attrs;
  /// The pipe the op issues to on a given target (copies depend on their path).
  std::function<Pipe(const TileOpNode&, const Target&)> pipe;
  /// Op-specific verifier rules beyond the generic ones (operand arity/kind, scopes from the
  /// target's tables). Reports through the context; never throws.
  std::function<void(const TileOpNode&, VerifyContext&)> verify;
  std::string summary;  // one line for `tlc ops` and the docs

  int operand_index(std::string_view name) const;
  const AttrSpec* attr_spec(std::string_view name) const;
};

/// Looks up a registered op by name ("tile.add"); nullptr if unknown.
const OpDef* find_op(std::string_view name);
/// Every registered op, in registration order.
const std::vector<const OpDef*>& all_ops();

/// Builds a TileOp statement: checks operand count and kinds and attribute names and types
/// (user errors at `loc`), fills in defaulted attributes in OpDef order.
Stmt make_tile_op(std::string_view op_name, std::vector<TileArg> args, std::vector<Attr> attrs,
                  const SourceLoc& loc);

/// Operand `name` of a tile op call (nullptr if omitted).
const TileArg* op_operand(const TileOpNode& n, std::string_view name);

}  // namespace tl
