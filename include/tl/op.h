// The tile-primitive registry. A tile primitive (copy, gemm_v0, tile.add, reduce_sum, sort,
// ...) is one OpDef, and everything about it hangs off that one definition:
//  - its operands (name, tile or scalar, read/write), its static attributes with defaults, the
//    core unit it runs on and the pipe it issues to on a target;
//  - its verifier rule, and the dtypes it accepts per chip family (OpDTypes);
//  - its cost class (the timing model's row, an enum) and its instruction expansion (the
//    hardware instructions it issues: pipe, memory touched, cost class), which the virtual
//    NPU's tracer, the hazard checker and sync insertion read;
//  - its docs row in docs/language.md (a test walks all_ops() and checks every piece).
// The registry checks each definition when it is built: a missing piece is a registration
// error (tl::InternalError), never a silent default. Backends register their own part per op
// (the virtual NPU's semantics, src/npu/exec*.cpp) and check at registration that every op
// has one. The simple elementwise vector ops are rows of one table, include/tl/vector_ops.def,
// from which the registry, the DSL and the virtual NPU all instantiate them.
//
// Adding a primitive = one file in src/prims (its OpDef, verifier rule, virtual-NPU semantics
// and stale-data rule, and the definition of its C++ DSL call, registered by a registrar
// object: register_prim below, tl::register_op_rule, tl::npu::register_prim_semantics) + its
// declaration in tl/lang.h + its row in docs/language.md + its test. The ops of src/op/ops_*.cpp
// predate that layer and stay where they are (docs/architecture.md, "The prims layer").
#pragma once

#include <concepts>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tl/ir.h"
#include "tl/ir_ops.h"
#include "tl/target.h"

namespace tl {

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
  /// A bit vector with one bit per element of the data operands (compare's dst, select's
  /// mask): not a tile of rows, so developer mode never pairs its dimensions with theirs.
  bool bitmask = false;
};

struct AttrSpec {
  std::string name;
  AttrValue default_value;
  std::vector<std::string> choices;  // for string attributes with a closed set of values
};

/// Which op-specific verifier rule an op obeys. The op names its rule; the verifier (src/verify,
/// a module above op) implements each one, so the op module links without the verifier
/// (docs/architecture.md). None only for ops whose generic rules say everything (printf).
enum class OpRule : uint8_t {
  None,
  Copy,
  AtomicAdd,
  Dcci,
  GemmV0,
  Mma,
  InitConst,
  DumpTensor,
  Elementwise,
  FillLike,
  Axpy,
  Cast,
  Compare,
  Select,
  Gather,
  GatherMask,
  Broadcast,
  RowExpand,
  Transpose,
  Reduce,
  Sort,
  MergeSort,
  Topk,
  /// The op is a primitive of src/prims: its rule is registered with the verifier by its own
  /// file (tl::register_op_rule, tl/verifier.h), not named here.
  Prim,
};

/// Which kind of unit runs the op, and so which core scope it belongs in.
enum class OpUnit : uint8_t {
  Move,    // data movement: MTE1/MTE2/MTE3/FIX/V, chosen from the copy path
  Cube,    // the cube unit (AIC only)
  Vector,  // the vector unit (AIV only)
  Debug,   // printf / dump_tensor: any core, scalar pipe
  Scalar,  // the scalar unit of any core: data-cache maintenance (T.dcci)
};

/// How an op's tile operands correspond row by row: what developer mode's split_aiv reads to
/// give each of a block's two AIVs half of a tile's rows (docs/developer_mode.md). Every op
/// states it (the registry rejects Unset), so no default can split an op the pass knows
/// nothing about: a position-dependent op split by rows would be silently wrong.
enum class RowMap : uint8_t {
  Unset,
  Elementwise,  // element (i, j, ...) of each tile operand goes with (i, j, ...) of the others
  RowExpand,    // dst and src0 elementwise; src1 holds one value per row of them
  Broadcast,    // dst = src along src's size-1 or missing leading dimensions
  Reduce,       // dst = src reduced over the attribute `dim`
  Copy,         // UB <-> UB elementwise; GM <-> UB: the UB tile's rows are the tensor's rows
  Whole,        // position-dependent (gathers, sorts, index generation, transposes) or not
                // a vector-unit op: its tiles are never split
};

/// Whether a vector op's destination may share bytes with a source (checked by the virtual
/// NPU, Core::check_overlap; ASCENDC_API.md "general constraints": address overlap). Every
/// vector-unit op states it (the registry rejects Unset).
enum class Overlap : uint8_t {
  Unset,
  SameRegion,  // only as exactly the same region (an in-place op); a partial overlap is an error
  None,        // not at all, not even in place (the reductions, MrgSort)
};

/// The element types an op accepts, per chip family. Every op states where its legality
/// comes from: a list (per Arch), a table of the Target (cast pairs, fixpipe and Mmad
/// combinations, atomic dtypes: the op's rule consults it), or any dtype (data movement that
/// only moves bytes, debug printing).
struct OpDTypes {
  enum class Kind : uint8_t { Unset, List, TargetTable, Any };
  Kind kind = Kind::Unset;
  /// Kind::List: the legal dtypes on every Arch without its own row in `per_arch`.
  std::vector<DType> dtypes;
  std::vector<std::pair<Arch, std::vector<DType>>> per_arch;
  /// Kind::TargetTable: which Target table decides ("casts", "mma_dtypes", ...), for the docs.
  std::string table;
  /// The legal dtypes on chips of `arch` (or target `t`); nullptr unless kind is List.
  const std::vector<DType>* on(Arch arch) const;
  const std::vector<DType>* on(const Target& t) const { return on(t.arch); }
};
/// Builders: `only_dtypes({f16, f32})`, `dtypes_from_target("casts")`, `any_dtype()`.
OpDTypes only_dtypes(std::vector<DType> dtypes);
OpDTypes dtypes_from_target(std::string table);
OpDTypes any_dtype();

/// One hardware instruction of an op's expansion: what the tracer records, the hazard checker
/// orders and sync insertion synchronises. Most ops are one instruction on their pipe that
/// touches every tile operand as the operand's Access says (the registry builds that default);
/// gemm_v0 is five (PipeBarrier<ALL>, LoadData into L0A/L0B, PipeBarrier<ALL>, Mmad,
/// PipeBarrier<ALL>, as TileLang-Ascend's template issues them).
struct InstrSpec {
  enum class Kind : uint8_t { Op, BarrierAll };
  /// Bytes of a scratch area an instruction touches, from the extents of the op's region
  /// operands (operand order; empty for scalar operands).
  using ScratchBytes = int64_t (*)(const TileOpNode& n,
                                   const std::vector<std::vector<int64_t>>& extents);
  struct Touch {
    /// Index into OpDef::operands (a region operand's bytes, or the loads inside a scalar
    /// operand's expression; an omitted optional operand touches nothing); -1: a scratch area.
    int operand = -1;
    Access access = Access::Read;
    MemScope scratch = MemScope::GM;  // operand == -1: the memory, touched from offset 0
    ScratchBytes bytes = nullptr;     // operand == -1: how many bytes
  };
  Kind kind = Kind::Op;
  std::string name{};          // trace name ("gemm_v0.load"); empty: the op's name
  std::optional<Pipe> pipe{};  // empty: the op's pipe on the target
  CostClass cost = CostClass::VecSimple;
  std::vector<Touch> touches{};
};

/// A trait every op states at registration; the registry rejects a definition where one is unset
/// (check_op_definition names the op and the trait). Unlike a plain field with a default,
/// "never stated" differs from every value, "none" included: a trait that may be absent is a
/// Trait<std::optional<...>>, stated as std::nullopt ("the op has none"). Reading an unset trait
/// is a registration bug (tl::InternalError).
template <typename T>
class Trait {
 public:
  Trait() = default;
  template <typename U>
  requires(!std::same_as<std::remove_cvref_t<U>, Trait> && std::constructible_from<T, U&&>)
      Trait(U&& v)
      : value_(T(std::forward<U>(v))) {}  // NOLINT: implicit, as the field it replaces
  bool is_set() const { return value_.has_value(); }
  const T& get() const {
    TL_ASSERT(value_.has_value(), "an op trait is read before its registration states it");
    return *value_;
  }
  operator const T&() const { return get(); }  // NOLINT: reads as the plain field did
  const T& operator*() const { return get(); }
  const T* operator->() const { return &get(); }

 private:
  std::optional<T> value_;
};

struct OpDef {
  std::string name;  // as written after "T.": "copy", "tile.add", "reduce_sum", ...
  OpUnit unit = OpUnit::Vector;
  std::vector<OperandSpec> operands;
  std::vector<AttrSpec> attrs;
  /// The pipe the op issues to on a given target (copies depend on their path).
  std::function<Pipe(const TileOpNode&, const Target&)> pipe;
  /// Op-specific verifier rules beyond the generic ones (operand arity/kind, scopes from the
  /// target's tables), run by the verifier (src/verify/rule_table.cpp). None only for ops
  /// whose generic rules say everything (printf).
  OpRule verify = OpRule::None;
  /// The element types the op accepts (required).
  OpDTypes dtypes{};
  /// The cost class of the op's instruction (required; an expansion names one per instruction).
  std::optional<CostClass> cost{};
  /// How its tile operands correspond row by row (required; RowMap).
  RowMap rows = RowMap::Unset;
  /// Whether its destination may share bytes with a source (required for vector-unit ops).
  Overlap overlap = Overlap::Unset;
  /// The value a stale tail element of its (first) source can be set to so that the op's
  /// result on the valid elements is unchanged: 0 for add/sub/axpy/reduce_sum, 1 for mul/div,
  /// -inf for max/reduce_max/sort/topk, +inf for min/reduce_min. Empty: no such value (an op
  /// that moves elements or reads them all); mask_tails then refuses a stale source.
  /// Required (std::nullopt: none).
  Trait<std::optional<double>> identity{};
  /// The scalar operator the op computes element by element (add: BinOp::Add, row_expand_add:
  /// BinOp::Add with rows RowExpand, bitwise_and: BinOp::BitAnd, ...): what vectorize_parallel
  /// maps a T.Parallel body's operators onto (op_for_binop). Whether the mapping is exact for a
  /// dtype is the vectoriser's to decide (float max/min differ on NaN: it uses compare + select).
  /// Required (std::nullopt: none).
  Trait<std::optional<BinOp>> binop{};
  /// Counts its source in granules of Target::compare_align_bytes (A2's Compare: 256 bytes),
  /// so developer mode's split_aiv keeps its tiles whole when half a tile is not whole granules.
  /// Required.
  Trait<bool> granular_count{};
  /// The instructions the op issues; empty at registration means one instruction on `pipe`
  /// touching every tile operand, which the registry fills in.
  std::vector<InstrSpec> expansion{};
  /// On a target whose vector unit flushes subnormals (Target::vector_flushes_subnormals), the
  /// op reads subnormal inputs as zeros and writes subnormal results as zeros of their sign
  /// (subnormal in the operand's dtype). The virtual NPU computes it so; vectorize_parallel does
  /// not use it there where the scalar loop keeps subnormals. Required.
  Trait<bool> flushes_subnormals{};
  /// Reads and writes its destination in one indivisible step at its end (the atomic unit).
  /// Required.
  Trait<bool> atomic{};
  /// Exists only in developer kernels: the developer-mode passes lower it, so the verifier
  /// rejects it in an expert kernel [developer-op-in-expert-mode] and no backend executes it.
  /// Required.
  Trait<bool> developer_only{};
  std::string summary;  // one line for `tlc ops` and the docs
  /// Dense index in all_ops() (set by the registry): backends keep per-op tables by it.
  int id = -1;

  int operand_index(std::string_view name) const;
  const AttrSpec* attr_spec(std::string_view name) const;
  /// Derived trait: a vector op whose result element i depends only on element i of its tile
  /// operands (and on scalars): rows Elementwise and no bitmask operand (so not compare or
  /// select, whose bit vectors do not pair element with element).
  bool elementwise() const;
};

/// The core that executes tile op `n` on target `t`, the one definition the verifier, the
/// developer-mode splitter, the memory planner and the virtual NPU read: the cube unit's ops
/// on the AIC, the vector unit's on the AIVs, a copy on the core that issues its path
/// (Target::copy_paths; an illegal path: the core owning its first on-chip operand).
/// nullopt: any core (debug printing, data-cache maintenance run where they are placed).
std::optional<CoreKind> op_core(const TileOpNode& n, const Target& t);

/// The vector op computing `op` element by element with operand correspondence `rows`
/// (Elementwise or RowExpand): the op whose OpDef::binop is `op`; nullptr if none.
const OpDef* op_for_binop(BinOp op, RowMap rows);

/// The vector op computing scalar intrinsic `id` element by element: the vector-op column of its
/// row in include/tl/intrinsics.def; nullptr if none does (T.pow). Whether the mapping is exact
/// on a dtype is IntrinsicDef::exact_on.
const OpDef* op_for_intrinsic(Intrinsic id);

/// Looks up a registered op by name ("tile.add"); nullptr if unknown.
const OpDef* find_op(std::string_view name);
/// Checks one definition: every required piece and trait set (rows; overlap for vector ops;
/// pipe, cost, dtypes, expansion, ...). tl::InternalError naming the op and the missing piece.
/// The registry runs it on every op it builds; exposed for the tests.
void check_op_definition(const OpDef& d);
/// Every registered op: the op tables' (src/op) in registration order, then the primitives of
/// src/prims sorted by name. The order is deterministic (the ops fingerprint of the JIT cache
/// key, `tlc ops`, the Python T.tile.* wrappers read it), whatever the order of static
/// initialisation across the primitives' files.
const std::vector<const OpDef*>& all_ops();

/// Registers a primitive defined in its own file of src/prims (docs/architecture.md, "The
/// prims layer"): called by that file's registrar object during static initialisation only.
/// The registry is built the first time anything looks an op up; a registration after that
/// is an internal error (tl::InternalError: the op would be missing from tables already
/// built). The definition is checked like every other (check_op_definition) when the
/// registry is built.
void register_prim(OpDef def);
/// The ops registered through register_prim, sorted by name (a subset of all_ops()).
const std::vector<const OpDef*>& prim_ops();

/// Builds a TileOp statement: checks operand count and kinds and attribute names and types
/// (user errors at `loc`), fills in defaulted attributes in OpDef order.
/// Passes and the DSL name the op by its handle (include/tl/ops.h: make_tile_op(ops::copy(), ...));
/// the string form is for names from user text (the parser, the Python bindings).
Stmt make_tile_op(const OpDef& op, std::vector<TileArg> args, std::vector<Attr> attrs,
                  const SourceLoc& loc);
Stmt make_tile_op(std::string_view op_name, std::vector<TileArg> args, std::vector<Attr> attrs,
                  const SourceLoc& loc);

/// Operand `name` of a tile op call (nullptr if omitted).
const TileArg* op_operand(const TileOpNode& n, std::string_view name);

}  // namespace tl
