// The Tile IR: immutable, reference-counted expression and statement nodes, buffers,
// regions and functions. Everything in tl-ascend (the DSL, the printer/parser, the
// verifier, passes, the virtual NPU) speaks this IR.
//
// Semantics (the virtual NPU implements exactly these; tl/arith.h is their one implementation,
// shared by the DSL's folding, simplify, the launcher and the virtual NPU, and documents the
// details: dtype promotion, shifts, casts, uint64):
//  - Integer expressions are evaluated in 64-bit two's complement and the result is wrapped
//    to the width of the node's dtype. Integer immediates default to int32; mixing int32 and
//    int64 promotes to int64; mixing an integer and a float promotes to the float.
//  - FloorDiv/FloorMod round toward negative infinity (TileLang's `//` and `%`), TruncDiv/
//    TruncMod toward zero (C's `/` and `%`). The DSL's `/` and `%` on integer Exprs are the
//    floor forms, as in TileLang; on float Exprs `/` is IEEE division. Division by zero is a
//    run-time error naming the expression.
//  - Float arithmetic on scalars is done in the node's dtype (fp16/bf16 results are rounded
//    to nearest-even after each operation); comparisons give bool.
//  - Operands are evaluated left to right; And/Or do not short-circuit (they have no side
//    effects to skip).
//  - Declarations (Let, Allocate) bind a name from their position to the end of the
//    enclosing *block*: the body of the For, the If branch, the Scope, the Kernel or the
//    function that contains them. A Seq is only a list of statements, never a scope:
//    SeqNode::make splices nested Seqs into their parent (so IRMutator splices a statement
//    that expands into several), and the verifier, printer, parser, structural equality and
//    hashing all see the same blocks. Loop variables, the kernel's cid/vid, parameters and
//    dynamic symbols are the other binders.
//  - A buffer of scope `var` holds one scalar that can be reassigned (T::alloc_var).
//  - An integer immediate holds its value wrapped to its dtype (IntImmNode::make wraps), so
//    every immediate prints as a literal of its dtype's range.
//  - Nesting is bounded (kMaxNestingDepth, kMaxExprNodes below): constructing a deeper
//    expression or statement nest, or a larger expression tree, is a tl::Error. Every
//    recursive walk of the IR (verifier, printer, parser, passes, destruction) therefore stays
//    within a few hundred frames, and everything the DSL builds prints and parses back.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "tl/dtype.h"
#include "tl/error.h"
#include "tl/loc.h"

namespace tl {

// ---------------------------------------------------------------------------------------------
// Enumerations shared by the IR, the targets and the simulator.

/// Memory scopes: physical Ascend memories (expert mode) and developer-mode placeholders.
enum class MemScope : uint8_t { GM, L1, L0A, L0B, L0C, UB, Shared, Fragment, Var };
inline constexpr int kNumMemScopes = 9;
std::string_view scope_name(MemScope s);  // "global", "L1", "L0A", ..., "shared", "fragment", "var"
std::optional<MemScope> parse_scope(std::string_view s);

/// Whether a GM tensor's bytes go through the L2 cache: AscendC's GlobalTensor::SetL2CacheHint
/// (CacheMode::CACHE_MODE_NORMAL, the default, or CACHE_MODE_DISABLE: "设置GlobalTensor不会写入L2
/// Cache", for data read once; hiascend.com ascendcopapi atlasascendc_api_07_00033). Written
/// `T.annotate_l2_cache({X: "disable"})`; the timing model reads it (src/npu/timing_l2.h).
enum class L2CacheMode : uint8_t { Normal, Disable };
std::string_view l2_cache_name(L2CacheMode m);  // "normal", "disable"
std::optional<L2CacheMode> parse_l2_cache(std::string_view s);

/// Pipes of an Ascend core (docs/hardware.md section 2). ALL is only valid in barriers.
enum class Pipe : uint8_t { S, V, M, MTE1, MTE2, MTE3, FIX, ALL };
inline constexpr int kNumPipes = 8;
std::string_view pipe_name(Pipe p);  // "S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX", "ALL"
std::optional<Pipe> parse_pipe(std::string_view s);

/// Which core of a block runs a scope: the AIC (cube) or the AIVs (vector).
enum class CoreKind : uint8_t { Cube, Vector };
std::string_view core_name(CoreKind c);  // "Cube", "Vector"
std::optional<CoreKind> parse_core(std::string_view s);

enum class ForKind : uint8_t { Serial, Parallel, Pipelined, Unrolled };
std::string_view for_kind_name(ForKind k);  // "serial", "Parallel", "Pipelined", "unroll"

enum class BinOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  FloorMod,
  TruncDiv,
  TruncMod,
  Min,
  Max,
  EQ,
  NE,
  LT,
  LE,
  GT,
  GE,
  And,
  Or,
  BitAnd,
  BitOr,
  BitXor,
  Shl,
  Shr,
};
std::string_view binop_name(BinOp op);  // "+", "-", ..., "T.min", ...
bool is_comparison(BinOp op);
bool is_logical(BinOp op);

enum class SyncKind : uint8_t {
  SetFlag,
  WaitFlag,
  PipeBarrier,
  BarrierAll,
  SetCrossFlag,
  WaitCrossFlag,
  SyncAll,
};
std::string_view sync_name(SyncKind k);  // "set_flag", ...
/// Who wrote a synchronisation: the kernel author (User) or the compiler's insert_syncs (Auto).
enum class SyncOrigin : uint8_t { User, Auto };

// ---------------------------------------------------------------------------------------------
// Node kinds. One X-macro list each, so visitors, mutators, printer, parser and structural
// equality cannot drift apart.

#define TL_EXPR_KINDS(X) \
  X(IntImm) X(FloatImm) X(StringImm) X(Var) X(Binary) X(Not) X(Select) X(Cast) X(Load) X(Call)
#define TL_STMT_KINDS(X) \
  X(Seq) X(For) X(If) X(Let) X(Allocate) X(Store) X(TileOp) X(Sync) X(Scope) X(Kernel)

enum class ExprKind : uint8_t {
#define TL_ENUM(K) K,
  TL_EXPR_KINDS(TL_ENUM)
#undef TL_ENUM
};
enum class StmtKind : uint8_t {
#define TL_ENUM(K) K,
  TL_STMT_KINDS(TL_ENUM)
#undef TL_ENUM
};

#define TL_FWD(K) struct K##Node;
TL_EXPR_KINDS(TL_FWD)
TL_STMT_KINDS(TL_FWD)
#undef TL_FWD
struct BufferNode;
struct OpDef;

// ---------------------------------------------------------------------------------------------
// Nesting limits

/// The deepest expression tree and statement nest the IR holds: a leaf expression is 1 deep,
/// an operator one more than its deepest operand (a load also counts its buffer's shape); a
/// simple statement is 1 deep, a For/If/Scope/Kernel one more than its body, a Seq as deep as
/// its deepest statement. It is the IR text parser's limit too (200 nested blocks, the function
/// body included, and 200 levels of expression).
inline constexpr int kMaxNestingDepth = 200;
/// The most nodes one expression tree holds, counting a shared subexpression once per use (as
/// printing and every tree walk see it): `e = e + e` repeated does not grow a DAG whose printed
/// form has 2^n terms.
inline constexpr int64_t kMaxExprNodes = int64_t{1} << 16;

/// Depth and tree size of an expression (or of a buffer's shape and strides).
struct Nesting {
  uint16_t depth = 1;
  uint32_t size = 1;
};

// ---------------------------------------------------------------------------------------------
// Expressions

struct ExprNode {
  ExprKind kind;
  DType dtype;
  Nesting nest;  // set by the constructors below; bounded by the limits above
  ExprNode(ExprKind k, DType t, Nesting n = {}) : kind(k), dtype(t), nest(n) {}
  virtual ~ExprNode() = default;
};

/// A handle to an immutable expression node. Copying shares the node.
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}
  /// Integer and float literals convert implicitly so DSL code reads `cid / 4 * 128`.
  /// Bool immediate. A template so that pointers (string literals) never convert to Expr.
  template <typename B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
  Expr(B v) : Expr(make_bool(v)) {}  // NOLINT
  Expr(int v);                       // NOLINT: int32 immediate
  Expr(int64_t v);                   // NOLINT: int64 immediate
  Expr(double v);                    // NOLINT: float32 immediate

  bool defined() const { return node_ != nullptr; }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  static Expr make_bool(bool v);
  ExprKind kind() const { return node_->kind; }
  DType dtype() const { return node_->dtype; }
  bool same_as(const Expr& o) const { return node_ == o.node_; }
  template <typename N>
  const N* as() const;
  const std::shared_ptr<const ExprNode>& ptr() const { return node_; }

 private:
  std::shared_ptr<const ExprNode> node_;
};

namespace detail {
/// The nesting of a node whose operands are `kids` (undefined ones ignored) plus `extra` (a
/// buffer's shape, for loads): one deeper than the deepest, one more node than all together.
/// Throws tl::Error beyond kMaxNestingDepth or kMaxExprNodes.
Nesting nest_of(std::initializer_list<const Expr*> kids, Nesting extra = {0, 0});
Nesting nest_of(const std::vector<Expr>& kids, Nesting extra = {0, 0});
}  // namespace detail

/// A symbolic scalar variable (loop variables, cid/vid, scalar parameters, dynamic sizes).
/// Identity is the node: two Vars with the same name are different variables.
class Var : public Expr {
 public:
  Var() = default;
  Var(std::string name, DType t = DType::Int32);
  explicit Var(std::shared_ptr<const ExprNode> n);
  const VarNode* node() const;
  const std::string& name() const;
};

struct IntImmNode : ExprNode {
  int64_t value;
  IntImmNode(DType t, int64_t v) : ExprNode(ExprKind::IntImm, t), value(v) {}
  static Expr make(DType t, int64_t v);
};
struct FloatImmNode : ExprNode {
  double value;
  FloatImmNode(DType t, double v) : ExprNode(ExprKind::FloatImm, t), value(v) {}
  static Expr make(DType t, double v);
};
struct StringImmNode : ExprNode {
  std::string value;
  explicit StringImmNode(std::string v)
      : ExprNode(ExprKind::StringImm, DType::Int8), value(std::move(v)) {}
  static Expr make(std::string v);
};
struct VarNode : ExprNode {
  std::string name;
  VarNode(std::string n, DType t) : ExprNode(ExprKind::Var, t), name(std::move(n)) {}
};
struct BinaryNode : ExprNode {
  BinOp op;
  Expr a, b;
  BinaryNode(BinOp o, DType t, Expr x, Expr y)
      : ExprNode(ExprKind::Binary, t, detail::nest_of({&x, &y})),
        op(o),
        a(std::move(x)),
        b(std::move(y)) {}
  /// Raw constructor: no folding, result dtype from the promotion rules above.
  static Expr make(BinOp op, Expr a, Expr b);
};
struct NotNode : ExprNode {
  Expr a;
  explicit NotNode(Expr x)
      : ExprNode(ExprKind::Not, DType::Bool, detail::nest_of({&x})), a(std::move(x)) {}
  static Expr make(Expr a);
};
struct SelectNode : ExprNode {
  Expr cond, t, f;
  SelectNode(DType dt, Expr c, Expr x, Expr y)
      : ExprNode(ExprKind::Select, dt, detail::nest_of({&c, &x, &y})),
        cond(std::move(c)),
        t(std::move(x)),
        f(std::move(y)) {}
  static Expr make(Expr cond, Expr t, Expr f);
};
struct CastNode : ExprNode {
  Expr value;
  CastNode(DType t, Expr v)
      : ExprNode(ExprKind::Cast, t, detail::nest_of({&v})), value(std::move(v)) {}
  static Expr make(DType t, Expr v);
};

class ElemRef;

/// A buffer: a named, typed, shaped piece of some memory. Identity is the node.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::shared_ptr<const BufferNode> n) : node_(std::move(n)) {}
  bool defined() const { return node_ != nullptr; }
  const BufferNode* get() const { return node_.get(); }
  const BufferNode* operator->() const { return node_.get(); }
  const BufferNode& operator*() const { return *node_; }
  bool same_as(const Buffer& o) const { return node_ == o.node_; }
  const std::shared_ptr<const BufferNode>& ptr() const { return node_; }

  // DSL sugar (TileLang's A[i, j], A[s0:s0+e0, ...] and A[s0, s1] start-point regions).
  /// Element `A(i, j)`: reads as an Expr; assigning to it (`c(i, j) = a(i, j) + 1`) appends a
  /// store to the DSL block being built, at the line of the `c(i, j)`. A `var` buffer reads as
  /// `v()`.
  ElemRef operator()(TL_LOC) const;
  ElemRef operator()(Expr i, TL_LOC) const;
  ElemRef operator()(Expr i, Expr j, TL_LOC) const;
  ElemRef operator()(Expr i, Expr j, Expr k, TL_LOC) const;
  ElemRef operator()(Expr i, Expr j, Expr k, Expr l, TL_LOC) const;
  Expr load(std::vector<Expr> indices) const;
  /// The region starting at `starts` with `extents`.
  struct BufferRegion region(std::vector<Expr> starts, std::vector<Expr> extents) const;
  /// A start-point-only region: its extents come from the other tile operand of the op
  /// (leading dimensions beyond the other operand's rank get extent 1).
  struct BufferRegion at(std::vector<Expr> starts) const;

 private:
  std::shared_ptr<const BufferNode> node_;
};

/// Which slot of a T.Pipelined loop's versioned buffer a buffer is (BufferNode::slot).
struct PipelineSlot {
  int loop = -1;  // -1: not a slot
  int index = 0;
  int count = 0;
  bool defined() const { return loop >= 0; }
  bool operator==(const PipelineSlot&) const = default;
};

struct BufferNode {
  std::string name;
  DType dtype;
  std::vector<Expr> shape;
  std::vector<Expr> strides;  // empty: dense row-major
  MemScope scope;
  int64_t address = -1;  // byte offset in the scope's memory once planned; -1: not planned
  SourceLoc loc;
  Nesting nest{0, 0};  // of the shape and strides (make sets it): a load of the buffer adds it
  /// What made a buffer the compiler made ("UB twin of 'c'", "temporary of an element loop");
  /// empty for the author's. Diagnostics only (the memory table); not printed, not compared.
  std::string origin;
  /// Annotation of a GM workspace: a channel between the cores (legalize_copies makes one per
  /// tile that crosses cores) with this many slots, the extent of its dimension 1
  /// ([num_blocks, slots, ...]; pipeline_loops gives one slot per stage); 0: no channel (a
  /// workspace of the author's, any other buffer). insert_channel_syncs, elide_channel_credits
  /// and pipeline_loops read it, not the shape. Printed and parsed
  /// (`T.alloc_workspace(..., channel_slots=2)`), compared and hashed.
  int channel_slots = 0;
  /// Annotation of a GM tensor (a parameter or a workspace): its L2 cache mode
  /// (T.annotate_l2_cache). Only the timing model and the AscendC emitter read it; the data
  /// is the same either way. Printed and parsed (`T.Tensor(..., l2_cache="disable")`),
  /// compared and hashed; the verifier rejects it on an on-chip buffer.
  L2CacheMode l2_cache = L2CacheMode::Normal;
  /// Trait of an on-chip buffer pipeline_loops made: slot `index` of `count` of a buffer it
  /// versioned for the T.Pipelined loop numbered `loop` in the function (0, 1, ... in program
  /// order); undefined (loop -1) for every other buffer. plan_memory reads it: slots of one loop
  /// with different numbers keep bytes of their own while the memory fits (docs/compiler.md,
  /// plan_memory). Printed and parsed (`T.alloc_ub(..., slot=(loop, index, count))`), compared
  /// and hashed; the verifier checks 0 <= index < count, count >= 2 and an on-chip scope.
  PipelineSlot slot;
  static Buffer make(std::string name, DType dtype, std::vector<Expr> shape, MemScope scope,
                     std::vector<Expr> strides = {}, int64_t address = -1, SourceLoc loc = {},
                     std::string origin = {}, int channel_slots = 0,
                     L2CacheMode l2_cache = L2CacheMode::Normal, PipelineSlot slot = {});
  size_t ndim() const { return shape.size(); }
};

/// An element of a buffer named in DSL code (Buffer::operator()): an rvalue Expr (a load) or,
/// on the left of `=`, a store (T::store) recorded at the line that named the element.
class ElemRef {
 public:
  ElemRef(Buffer b, std::vector<Expr> indices, const Loc& at)
      : buffer_(std::move(b)), indices_(std::move(indices)), at_(at) {}
  operator Expr() const { return buffer_.load(indices_); }  // NOLINT: reads as the element's value
  Expr expr() const { return *this; }
  DType dtype() const;
  /// Appends `buffer[indices] = value` to the innermost open DSL block.
  const ElemRef& operator=(const Expr& value) const;
  const ElemRef& operator=(const ElemRef& other) const { return *this = Expr(other); }
  ElemRef(const ElemRef&) = default;

 private:
  Buffer buffer_;
  std::vector<Expr> indices_;
  Loc at_;
};

struct LoadNode : ExprNode {
  Buffer buffer;
  std::vector<Expr> indices;
  LoadNode(DType t, Buffer b, std::vector<Expr> idx)
      : ExprNode(ExprKind::Load, t, detail::nest_of(idx, b.defined() ? b->nest : Nesting{0, 0})),
        buffer(std::move(b)),
        indices(std::move(idx)) {}
  static Expr make(Buffer b, std::vector<Expr> indices);
};
/// A pure scalar intrinsic: exp, log, sqrt, rsqrt, abs, sigmoid, pow, ... (see ir.cpp).
struct CallNode : ExprNode {
  std::string name;
  std::vector<Expr> args;
  CallNode(DType t, std::string n, std::vector<Expr> a)
      : ExprNode(ExprKind::Call, t, detail::nest_of(a)), name(std::move(n)), args(std::move(a)) {}
  static Expr make(DType t, std::string name, std::vector<Expr> args);
};

template <typename N>
const N* Expr::as() const {
  return node_ ? dynamic_cast<const N*>(node_.get()) : nullptr;
}

// ---------------------------------------------------------------------------------------------
// Regions and tile-op arguments

struct Range {
  Expr min, extent;
};

/// A rectangular part of a buffer: per dimension, a start and an extent.
struct BufferRegion {
  Buffer buffer;
  std::vector<Range> ranges;
  /// The whole buffer.
  static BufferRegion full(const Buffer& b);
  bool defined() const { return buffer.defined(); }
  /// True for a start-point-only region whose extents are still to be inferred.
  bool partial() const { return !ranges.empty() && !ranges[0].extent.defined(); }
};

/// An operand of a tile op: a buffer region or a scalar expression.
struct TileArg {
  BufferRegion region;
  Expr scalar;
  TileArg() = default;
  TileArg(BufferRegion r) : region(std::move(r)) {}  // NOLINT
  TileArg(Expr e) : scalar(std::move(e)) {}          // NOLINT
  TileArg(const ElemRef& e) : scalar(e) {}           // NOLINT: a scalar operand read from a buffer
  TileArg(const Buffer& b) : region(BufferRegion::full(b)) {}  // NOLINT
  TileArg(int v) : scalar(v) {}                                // NOLINT
  TileArg(double v) : scalar(v) {}                             // NOLINT
  bool is_region() const { return region.defined(); }
  bool is_scalar() const { return scalar.defined(); }
};

/// A static attribute of a tile op (transpose flags, rounding mode, ...).
using AttrValue = std::variant<bool, int64_t, double, std::string>;
struct Attr {
  std::string key;
  AttrValue value;
};

// ---------------------------------------------------------------------------------------------
// Statements

struct StmtNode {
  StmtKind kind;
  uint16_t depth;  // nesting depth (see kMaxNestingDepth), set by the constructors below
  SourceLoc loc;
  StmtNode(StmtKind k, SourceLoc l, uint16_t d = 1) : kind(k), depth(d), loc(std::move(l)) {}
  virtual ~StmtNode() = default;
};

class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(std::shared_ptr<const StmtNode> n) : node_(std::move(n)) {}
  bool defined() const { return node_ != nullptr; }
  const StmtNode* get() const { return node_.get(); }
  const StmtNode* operator->() const { return node_.get(); }
  StmtKind kind() const { return node_->kind; }
  bool same_as(const Stmt& o) const { return node_ == o.node_; }
  template <typename N>
  const N* as() const {
    return node_ ? dynamic_cast<const N*>(node_.get()) : nullptr;
  }
  const std::shared_ptr<const StmtNode>& ptr() const { return node_; }

 private:
  std::shared_ptr<const StmtNode> node_;
};

namespace detail {
/// The depth of a statement whose bodies are `bodies` (one more than the deepest); of a Seq of
/// `stmts` (the deepest, 1 when empty). Throw tl::Error at `loc` beyond kMaxNestingDepth.
uint16_t stmt_depth(std::initializer_list<const Stmt*> bodies, const SourceLoc& loc);
uint16_t seq_depth(const std::vector<Stmt>& stmts, const SourceLoc& loc);
}  // namespace detail

struct SeqNode : StmtNode {
  std::vector<Stmt> stmts;
  SeqNode(std::vector<Stmt> s, SourceLoc l)
      : StmtNode(StmtKind::Seq, l, detail::seq_depth(s, l)), stmts(std::move(s)) {}
  /// A statement list: undefined statements are dropped and nested Seqs spliced in, so a Seq
  /// never directly contains a Seq (a Seq is not a scope; see the scoping rule above).
  static Stmt make(std::vector<Stmt> stmts, SourceLoc loc = {});
};
struct ForNode : StmtNode {
  Var var;
  Expr min, extent;
  ForKind for_kind;
  int num_stages;  // Pipelined only; 0 otherwise
  Stmt body;
  ForNode(Var v, Expr mn, Expr ext, ForKind k, int ns, Stmt b, SourceLoc l)
      : StmtNode(StmtKind::For, l, detail::stmt_depth({&b}, l)),
        var(std::move(v)),
        min(std::move(mn)),
        extent(std::move(ext)),
        for_kind(k),
        num_stages(ns),
        body(std::move(b)) {}
  /// Pipelined only: how many iterations ahead pipeline_loops runs the part of the body before a
  /// core's first pop after a push (the cross-core skew), 1 <= skew < num_stages; 1 otherwise.
  int skew = 1;
  static Stmt make(Var v, Expr min, Expr extent, ForKind k, int num_stages, Stmt body,
                   SourceLoc loc = {});
  static Stmt make(Var v, Expr min, Expr extent, ForKind k, int num_stages, int skew, Stmt body,
                   SourceLoc loc = {});
};
struct IfNode : StmtNode {
  Expr cond;
  Stmt then_case, else_case;  // else_case may be undefined
  IfNode(Expr c, Stmt t, Stmt e, SourceLoc l)
      : StmtNode(StmtKind::If, l, detail::stmt_depth({&t, &e}, l)),
        cond(std::move(c)),
        then_case(std::move(t)),
        else_case(std::move(e)) {}
  static Stmt make(Expr cond, Stmt then_case, Stmt else_case = {}, SourceLoc loc = {});
};
/// Declaration: `var = value` for the rest of the enclosing Seq.
struct LetNode : StmtNode {
  Var var;
  Expr value;
  LetNode(Var v, Expr e, SourceLoc l)
      : StmtNode(StmtKind::Let, l), var(std::move(v)), value(std::move(e)) {}
  static Stmt make(Var v, Expr value, SourceLoc loc = {});
};
/// Declaration: an on-chip buffer (or scalar var) live from here to the end of the enclosing
/// block. With `view_of` defined it allocates nothing: `buffer` is a view of that earlier
/// buffer's bytes reinterpreted as another dtype of the same width and the same shape (a
/// bitcast; e.g. the int32 index lanes of sort's (value, index) pairs). Every access through
/// the view is an access of the viewed buffer's bytes.
struct AllocateNode : StmtNode {
  Buffer buffer;
  Buffer view_of;  // undefined: fresh storage
  AllocateNode(Buffer b, Buffer v, SourceLoc l)
      : StmtNode(StmtKind::Allocate, l), buffer(std::move(b)), view_of(std::move(v)) {}
  static Stmt make(Buffer b, SourceLoc loc = {});
  /// `view` (same scope, shape and dtype width as `base`) declared as a view of `base`.
  static Stmt make_view(Buffer view, Buffer base, SourceLoc loc = {});
  bool is_view() const { return view_of.defined(); }
};
/// Scalar store `buffer[indices] = value` (scalar pipe).
struct StoreNode : StmtNode {
  Buffer buffer;
  std::vector<Expr> indices;
  Expr value;
  StoreNode(Buffer b, std::vector<Expr> i, Expr v, SourceLoc l)
      : StmtNode(StmtKind::Store, l),
        buffer(std::move(b)),
        indices(std::move(i)),
        value(std::move(v)) {}
  static Stmt make(Buffer b, std::vector<Expr> indices, Expr value, SourceLoc loc = {});
};
/// A call of a registered tile primitive (copy, gemm_v0, tile.add, reduce_sum, sort, ...).
struct TileOpNode : StmtNode {
  const OpDef* op;
  std::vector<TileArg> args;
  std::vector<Attr> attrs;  // every attribute of the op, defaults filled in, in OpDef order
  TileOpNode(const OpDef* o, std::vector<TileArg> a, std::vector<Attr> at, SourceLoc l)
      : StmtNode(StmtKind::TileOp, l), op(o), args(std::move(a)), attrs(std::move(at)) {}
  static Stmt make(const OpDef* op, std::vector<TileArg> args, std::vector<Attr> attrs,
                   SourceLoc loc = {});
  const AttrValue* attr(std::string_view key) const;
  bool attr_bool(std::string_view key) const;
  int64_t attr_int(std::string_view key) const;
  double attr_float(std::string_view key) const;
  const std::string& attr_str(std::string_view key) const;
};
/// Synchronization: flags, barriers, cross-core flags, sync_all.
struct SyncNode : StmtNode {
  SyncKind sync_kind;
  Pipe src = Pipe::S;  // set/wait_flag: source pipe; pipe_barrier: the pipe; set_cross_flag: pipe
  Pipe dst = Pipe::S;  // set/wait_flag: destination pipe
  Expr event_id;       // flags and cross flags; undefined otherwise
  int mode = 0;        // set_cross_flag mode (0, 1, 2)
  SyncOrigin origin = SyncOrigin::User;  // printed as a trailing `auto=True` when Auto
  SyncNode(SyncKind k, Pipe s, Pipe d, Expr id, int m, SourceLoc l, SyncOrigin o = SyncOrigin::User)
      : StmtNode(StmtKind::Sync, l),
        sync_kind(k),
        src(s),
        dst(d),
        event_id(std::move(id)),
        mode(m),
        origin(o) {}
  static Stmt make(SyncKind k, Pipe src, Pipe dst, Expr event_id, int mode, SourceLoc loc = {},
                   SyncOrigin origin = SyncOrigin::User);
};
/// Code that runs only on the AIC (Cube) or only on the AIVs (Vector) of each block.
struct ScopeNode : StmtNode {
  CoreKind core;
  Stmt body;
  ScopeNode(CoreKind c, Stmt b, SourceLoc l)
      : StmtNode(StmtKind::Scope, l, detail::stmt_depth({&b}, l)), core(c), body(std::move(b)) {}
  static Stmt make(CoreKind c, Stmt body, SourceLoc loc = {});
};
/// Kernel launch: `num_blocks` logical blocks, each 1 AIC + 2 AIV. cid in [0, num_blocks),
/// vid in {0, 1} (the AIV index; 0 on the AIC).
///
/// Two forms. An expert kernel binds both cid and vid and names the core of all its work with
/// Scope statements. A developer kernel (docs/developer_mode.md) binds only cid (`vid` is
/// undefined) and `threads` (1 or 2: the AIV:AIC ratio TileLang-Ascend's `threads` gives): the
/// compiler places its buffers, splits its work between the cores and inserts its syncs, and
/// the lowered kernel is an expert one.
struct KernelNode : StmtNode {
  Expr num_blocks;
  Var cid, vid;
  Stmt body;
  int threads = 0;  // developer kernels: 1 or 2; expert kernels: 0
  KernelNode(Expr n, Var c, Var v, Stmt b, SourceLoc l, int t = 0)
      : StmtNode(StmtKind::Kernel, l, detail::stmt_depth({&b}, l)),
        num_blocks(std::move(n)),
        cid(std::move(c)),
        vid(std::move(v)),
        body(std::move(b)),
        threads(t) {}
  /// An expert kernel (vid defined, threads 0) or a developer one (vid undefined, threads > 0).
  static Stmt make(Expr num_blocks, Var cid, Var vid, Stmt body, SourceLoc loc = {},
                   int threads = 0);
  bool developer() const { return !vid.defined(); }
};

// ---------------------------------------------------------------------------------------------
// Functions

/// A kernel parameter: a GM tensor or a scalar.
struct Param {
  Buffer tensor;  // defined for tensor parameters (scope GM)
  Var scalar;     // defined for scalar parameters
  bool is_tensor() const { return tensor.defined(); }
  const std::string& name() const;
};

struct PrimFuncNode {
  std::string name;
  std::vector<Var> dynamics;  // symbolic sizes bound from tensor shapes at launch
  std::vector<Param> params;
  Stmt body;
  SourceLoc loc;
  /// Annotation: the function is an expert kernel lowered from a developer kernel written with
  /// this `threads` (1 or 2; split_cube_vector sets it); 0 for a kernel written as it is. The
  /// pipeline's gates (Gate::Developer, ...) read it, so the lowering state lives in the IR, not
  /// in a flag of the pipeline. Printed and parsed: `@T.prim_func(lowered_from_developer=2)`;
  /// compared and hashed.
  int lowered_from_developer = 0;
};
using PrimFunc = std::shared_ptr<const PrimFuncNode>;
PrimFunc make_prim_func(std::string name, std::vector<Var> dynamics, std::vector<Param> params,
                        Stmt body, SourceLoc loc = {});

// ---------------------------------------------------------------------------------------------
// Small helpers

/// The value of an integer immediate, if `e` is one.
std::optional<int64_t> as_const_int(const Expr& e);
/// Product of the extents, if all are constant and the product fits in int64.
std::optional<int64_t> const_product(const std::vector<Expr>& xs);
/// Extents of a region.
std::vector<Expr> region_extents(const BufferRegion& r);

/// The function's T::Kernel: its body, or the first kernel among the top-level statements of
/// its body (nullptr if it has none).
const KernelNode* kernel_of(const PrimFunc& f);

namespace arith {

// ---- Dtype rules ----------------------------------------------------------------------------

/// Result dtype of an arithmetic operator on operands of dtypes a and b: a float wins over an
/// integer (the wider float of two floats), then the wider integer; a bool yields to the other
/// operand; on equal widths the left operand's dtype wins (int32 + uint32 is int32).
DType promote(DType a, DType b);
/// Result dtype of `a op b`: bool for comparisons and and/or, promote(a, b) otherwise. This
/// is the dtype BinaryNode::make gives, and the one folding keeps.
DType binary_dtype(BinOp op, DType a, DType b);

/// `v` wrapped to the width of integer dtype `t` (two's complement, as a C++20 conversion);
/// bool gives v != 0; float dtypes return v unchanged.
int64_t wrap(DType t, int64_t v);

}  // namespace arith

}  // namespace tl
