// Constructors of IR nodes (argument checks; the dtype rules arith::promote / binary_dtype /
// wrap, declared in tl/ir.h, live here so that ir needs nothing of arith) and enum names.
#include "tl/ir.h"

#include <algorithm>
#include <array>

#include "tl/op.h"

namespace tl {

// ---------------------------------------------------------------------------------------------
// Enum names

namespace {
template <typename E, size_t N>
std::optional<E> lookup(const std::array<std::string_view, N>& names, std::string_view s) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == s) return static_cast<E>(i);
  return std::nullopt;
}
constexpr std::array<std::string_view, kNumMemScopes> kScopeNames = {
    "global", "L1", "L0A", "L0B", "L0C", "UB", "shared", "fragment", "var"};
constexpr std::array<std::string_view, kNumPipes> kPipeNames = {"S",    "V",    "M",   "MTE1",
                                                                "MTE2", "MTE3", "FIX", "ALL"};
constexpr std::array<std::string_view, 2> kCoreNames = {"Cube", "Vector"};
constexpr std::array<std::string_view, 4> kForNames = {"serial", "Parallel", "Pipelined", "unroll"};
constexpr std::array<std::string_view, 23> kBinNames = {
    "+", "-",  "*", "/",  "//",  "%",  "T.truncdiv", "T.truncmod", "T.min", "T.max", "==", "!=",
    "<", "<=", ">", ">=", "and", "or", "&",          "|",          "^",     "<<",    ">>"};
constexpr std::array<std::string_view, 7> kSyncNames = {
    "set_flag",       "wait_flag",       "pipe_barrier", "barrier_all",
    "set_cross_flag", "wait_cross_flag", "sync_all"};
}  // namespace

std::string_view scope_name(MemScope s) {
  return kScopeNames[static_cast<size_t>(s)];
}
std::optional<MemScope> parse_scope(std::string_view s) {
  if (s == "gm" || s == "GM") return MemScope::GM;
  if (s == "ub") return MemScope::UB;
  return lookup<MemScope>(kScopeNames, s);
}
std::string_view l2_cache_name(L2CacheMode m) {
  return m == L2CacheMode::Disable ? "disable" : "normal";
}
std::optional<L2CacheMode> parse_l2_cache(std::string_view s) {
  if (s == "normal") return L2CacheMode::Normal;
  if (s == "disable") return L2CacheMode::Disable;
  return std::nullopt;
}
std::string_view pipe_name(Pipe p) {
  return kPipeNames[static_cast<size_t>(p)];
}
std::optional<Pipe> parse_pipe(std::string_view s) {
  return lookup<Pipe>(kPipeNames, s);
}
std::string_view core_name(CoreKind c) {
  return kCoreNames[static_cast<size_t>(c)];
}
std::optional<CoreKind> parse_core(std::string_view s) {
  return lookup<CoreKind>(kCoreNames, s);
}
std::string_view for_kind_name(ForKind k) {
  return kForNames[static_cast<size_t>(k)];
}
std::string_view binop_name(BinOp op) {
  return kBinNames[static_cast<size_t>(op)];
}
bool is_comparison(BinOp op) {
  return op >= BinOp::EQ && op <= BinOp::GE;
}
bool is_logical(BinOp op) {
  return op == BinOp::And || op == BinOp::Or;
}
std::string_view sync_name(SyncKind k) {
  return kSyncNames[static_cast<size_t>(k)];
}

// ---------------------------------------------------------------------------------------------
// Nesting limits

namespace detail {
namespace {
Nesting grow(Nesting acc, Nesting kid) {
  acc.depth = std::max(acc.depth, kid.depth);
  acc.size += kid.size;  // both <= kMaxExprNodes: no overflow in uint32
  if (acc.size > kMaxExprNodes) acc.size = kMaxExprNodes + 1;
  return acc;
}
Nesting finish(Nesting acc) {
  if (acc.depth + 1 > kMaxNestingDepth)
    throw Error(fmt::format(
        "expression nested too deeply (more than {} levels, the limit of the IR and of its "
        "text format); build long sums and chains as balanced trees, or accumulate in a "
        "T::alloc_var",
        kMaxNestingDepth));
  if (acc.size + 1 > kMaxExprNodes)
    throw Error(fmt::format(
        "expression tree of more than {} nodes, counting a shared subexpression once per "
        "use (the limit of the IR); bind repeated subexpressions with T::let",
        kMaxExprNodes));
  return {static_cast<uint16_t>(acc.depth + 1), acc.size + 1};
}
}  // namespace

Nesting nest_of(std::initializer_list<const Expr*> kids, Nesting extra) {
  Nesting acc = extra;
  for (const Expr* k : kids)
    if (k->defined()) acc = grow(acc, k->get()->nest);
  return finish(acc);
}
Nesting nest_of(const std::vector<Expr>& kids, Nesting extra) {
  Nesting acc = extra;
  for (const Expr& k : kids)
    if (k.defined()) acc = grow(acc, k.get()->nest);
  return finish(acc);
}

namespace {
[[noreturn]] void too_deep(const SourceLoc& loc) {
  throw Error(
      loc,
      fmt::format("statements nested too deeply (more than {} levels, the limit of the IR and of "
                  "its text format, whose function body counts as one)",
                  kMaxNestingDepth));
}
}  // namespace

uint16_t stmt_depth(std::initializer_list<const Stmt*> bodies, const SourceLoc& loc) {
  int d = 1;  // an empty body prints as `pass`, a statement of its own
  for (const Stmt* b : bodies)
    if (b->defined()) d = std::max<int>(d, b->get()->depth);
  if (d + 1 > kMaxNestingDepth) too_deep(loc);
  return static_cast<uint16_t>(d + 1);
}
uint16_t seq_depth(const std::vector<Stmt>& stmts, const SourceLoc& loc) {
  int d = 1;
  for (const Stmt& s : stmts)
    if (s.defined()) d = std::max<int>(d, s.get()->depth);
  if (d > kMaxNestingDepth) too_deep(loc);
  return static_cast<uint16_t>(d);
}
}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Expressions

Expr Expr::make_bool(bool v) {
  return Expr(std::make_shared<IntImmNode>(DType::Bool, v ? 1 : 0));
}
Expr::Expr(int v) : node_(std::make_shared<IntImmNode>(DType::Int32, v)) {}
Expr::Expr(int64_t v) : node_(std::make_shared<IntImmNode>(DType::Int64, v)) {}
Expr::Expr(double v) : node_(std::make_shared<FloatImmNode>(DType::Float32, v)) {}

Var::Var(std::string name, DType t) : Expr(std::make_shared<VarNode>(std::move(name), t)) {}
Var::Var(std::shared_ptr<const ExprNode> n) : Expr(std::move(n)) {
  TL_ASSERT(!defined() || kind() == ExprKind::Var, "Var made from a non-Var node");
}
const VarNode* Var::node() const {
  return static_cast<const VarNode*>(get());
}
const std::string& Var::name() const {
  return node()->name;
}

Expr IntImmNode::make(DType t, int64_t v) {
  TL_ASSERT(is_int(t) || is_bool(t), "IntImm of dtype {}", dtype_name(t));
  // Held wrapped (ir.h): the value every evaluation and fold sees, and one the text format
  // can print as a literal of the dtype.
  return Expr(std::make_shared<IntImmNode>(t, arith::wrap(t, v)));
}
Expr FloatImmNode::make(DType t, double v) {
  TL_ASSERT(is_float(t), "FloatImm of dtype {}", dtype_name(t));
  return Expr(std::make_shared<FloatImmNode>(t, v));
}
Expr StringImmNode::make(std::string v) {
  return Expr(std::make_shared<StringImmNode>(std::move(v)));
}

Expr BinaryNode::make(BinOp op, Expr a, Expr b) {
  TL_ASSERT(a.defined() && b.defined(), "Binary {} with an undefined operand", binop_name(op));
  DType t = arith::binary_dtype(op, a.dtype(), b.dtype());
  return Expr(std::make_shared<BinaryNode>(op, t, std::move(a), std::move(b)));
}
Expr NotNode::make(Expr a) {
  return Expr(std::make_shared<NotNode>(std::move(a)));
}
Expr SelectNode::make(Expr c, Expr t, Expr f) {
  DType dt = arith::promote(t.dtype(), f.dtype());
  return Expr(std::make_shared<SelectNode>(dt, std::move(c), std::move(t), std::move(f)));
}
Expr CastNode::make(DType t, Expr v) {
  return Expr(std::make_shared<CastNode>(t, std::move(v)));
}
Expr LoadNode::make(Buffer b, std::vector<Expr> indices) {
  DType t = b->dtype;
  return Expr(std::make_shared<LoadNode>(t, std::move(b), std::move(indices)));
}
Expr CallNode::make(DType t, std::string name, std::vector<Expr> args) {
  return Expr(std::make_shared<CallNode>(t, std::move(name), std::move(args)));
}

Buffer BufferNode::make(std::string name, DType dtype, std::vector<Expr> shape, MemScope scope,
                        std::vector<Expr> strides, int64_t address, SourceLoc loc,
                        std::string origin, int channel_slots, L2CacheMode l2_cache,
                        PipelineSlot slot) {
  auto n = std::make_shared<BufferNode>();
  n->name = std::move(name);
  n->slot = slot;
  n->channel_slots = channel_slots;
  n->l2_cache = l2_cache;
  n->origin = std::move(origin);
  n->dtype = dtype;
  n->shape = std::move(shape);
  n->strides = std::move(strides);
  n->scope = scope;
  n->address = address;
  n->loc = std::move(loc);
  Nesting acc{0, 0};
  for (const auto* dims : {&n->shape, &n->strides})
    for (const auto& e : *dims) {
      if (!e.defined()) continue;
      acc.depth = std::max(acc.depth, e->nest.depth);
      acc.size += e->nest.size;
      if (acc.size > kMaxExprNodes)
        throw Error(
            n->loc,
            fmt::format("the shape of buffer '{}' has more than {} expression nodes (the limit "
                        "of the IR)",
                        n->name, kMaxExprNodes));
    }
  n->nest = acc;
  return Buffer(std::move(n));
}

BufferRegion BufferRegion::full(const Buffer& b) {
  BufferRegion r{b, {}};
  for (const auto& s : b->shape) r.ranges.push_back({Expr(0), s});
  return r;
}

// ---------------------------------------------------------------------------------------------
// Statements

Stmt SeqNode::make(std::vector<Stmt> stmts, SourceLoc loc) {
  // One scoping rule (ir.h): a Seq is only a list, so nested Seqs are spliced in here and no
  // pass, printer or checker ever sees block structure the text format cannot show.
  bool flat = true;
  for (const auto& s : stmts) flat &= s.defined() && s.kind() != StmtKind::Seq;
  if (flat) return Stmt(std::make_shared<SeqNode>(std::move(stmts), std::move(loc)));
  std::vector<Stmt> out;
  out.reserve(stmts.size());
  for (auto& s : stmts) {
    if (!s.defined()) continue;
    if (s.kind() == StmtKind::Seq) {
      for (const auto& c : static_cast<const SeqNode*>(s.get())->stmts) out.push_back(c);
    } else {
      out.push_back(std::move(s));
    }
  }
  return Stmt(std::make_shared<SeqNode>(std::move(out), std::move(loc)));
}
Stmt ForNode::make(Var v, Expr min, Expr extent, ForKind k, int ns, Stmt body, SourceLoc loc) {
  return Stmt(std::make_shared<ForNode>(std::move(v), std::move(min), std::move(extent), k, ns,
                                        std::move(body), std::move(loc)));
}
Stmt ForNode::make(Var v, Expr min, Expr extent, ForKind k, int ns, int skew, Stmt body,
                   SourceLoc loc) {
  auto n = std::make_shared<ForNode>(std::move(v), std::move(min), std::move(extent), k, ns,
                                     std::move(body), std::move(loc));
  n->skew = skew;
  return Stmt(std::move(n));
}
Stmt IfNode::make(Expr cond, Stmt t, Stmt e, SourceLoc loc) {
  return Stmt(
      std::make_shared<IfNode>(std::move(cond), std::move(t), std::move(e), std::move(loc)));
}
Stmt LetNode::make(Var v, Expr value, SourceLoc loc) {
  return Stmt(std::make_shared<LetNode>(std::move(v), std::move(value), std::move(loc)));
}
Stmt AllocateNode::make(Buffer b, SourceLoc loc) {
  return Stmt(std::make_shared<AllocateNode>(std::move(b), Buffer(), std::move(loc)));
}
Stmt AllocateNode::make_view(Buffer view, Buffer base, SourceLoc loc) {
  TL_ASSERT(view.defined() && base.defined(), "a view without a buffer or a base");
  return Stmt(std::make_shared<AllocateNode>(std::move(view), std::move(base), std::move(loc)));
}
Stmt StoreNode::make(Buffer b, std::vector<Expr> idx, Expr v, SourceLoc loc) {
  return Stmt(
      std::make_shared<StoreNode>(std::move(b), std::move(idx), std::move(v), std::move(loc)));
}
Stmt TileOpNode::make(const OpDef* op, std::vector<TileArg> args, std::vector<Attr> attrs,
                      SourceLoc loc) {
  TL_ASSERT(op != nullptr, "TileOp without an OpDef");
  // A region prints as `lo:lo + ext` (printer.h): that sum must be an expression the IR holds.
  for (const auto& arg : args)
    for (const auto& rg : arg.region.ranges) {
      try {
        detail::nest_of({&rg.min, &rg.extent});
      } catch (const Error& e) {
        throw Error(loc, fmt::format("a region of '{}': {}", arg.region.buffer->name, e.what()));
      }
    }
  return Stmt(std::make_shared<TileOpNode>(op, std::move(args), std::move(attrs), std::move(loc)));
}
const AttrValue* TileOpNode::attr(std::string_view key) const {
  for (const auto& a : attrs)
    if (a.key == key) return &a.value;
  return nullptr;
}
bool TileOpNode::attr_bool(std::string_view key) const {
  auto* v = attr(key);
  TL_ASSERT(v && std::holds_alternative<bool>(*v), "{}: no bool attribute {}", op->name, key);
  return std::get<bool>(*v);
}
int64_t TileOpNode::attr_int(std::string_view key) const {
  auto* v = attr(key);
  TL_ASSERT(v && std::holds_alternative<int64_t>(*v), "{}: no int attribute {}", op->name, key);
  return std::get<int64_t>(*v);
}
double TileOpNode::attr_float(std::string_view key) const {
  auto* v = attr(key);
  if (v && std::holds_alternative<int64_t>(*v)) return static_cast<double>(std::get<int64_t>(*v));
  TL_ASSERT(v && std::holds_alternative<double>(*v), "{}: no float attribute {}", op->name, key);
  return std::get<double>(*v);
}
const std::string& TileOpNode::attr_str(std::string_view key) const {
  auto* v = attr(key);
  TL_ASSERT(v && std::holds_alternative<std::string>(*v), "{}: no string attribute {}", op->name,
            key);
  return std::get<std::string>(*v);
}
Stmt SyncNode::make(SyncKind k, Pipe src, Pipe dst, Expr id, int mode, SourceLoc loc,
                    SyncOrigin origin) {
  return Stmt(std::make_shared<SyncNode>(k, src, dst, std::move(id), mode, std::move(loc), origin));
}
Stmt ScopeNode::make(CoreKind c, Stmt body, SourceLoc loc) {
  return Stmt(std::make_shared<ScopeNode>(c, std::move(body), std::move(loc)));
}
Stmt KernelNode::make(Expr n, Var cid, Var vid, Stmt body, SourceLoc loc, int threads) {
  TL_ASSERT(
      vid.defined() == (threads == 0),
      "KernelNode: an expert kernel binds vid and has threads 0, a developer kernel has no vid "
      "and threads > 0 (vid {}, threads {})",
      vid.defined() ? "defined" : "undefined", threads);
  return Stmt(std::make_shared<KernelNode>(std::move(n), std::move(cid), std::move(vid),
                                           std::move(body), std::move(loc), threads));
}

const std::string& Param::name() const {
  return is_tensor() ? tensor->name : scalar.name();
}

PrimFunc make_prim_func(std::string name, std::vector<Var> dynamics, std::vector<Param> params,
                        Stmt body, SourceLoc loc) {
  auto f = std::make_shared<PrimFuncNode>();
  f->name = std::move(name);
  f->dynamics = std::move(dynamics);
  f->params = std::move(params);
  f->body = std::move(body);
  f->loc = std::move(loc);
  return f;
}

std::optional<int64_t> as_const_int(const Expr& e) {
  if (auto* i = e.as<IntImmNode>()) return i->value;
  return std::nullopt;
}
std::optional<int64_t> const_product(const std::vector<Expr>& xs) {
  int64_t p = 1;
  for (const auto& x : xs) {
    auto v = as_const_int(x);
    if (!v || __builtin_mul_overflow(p, *v, &p)) return std::nullopt;
  }
  return p;
}
std::vector<Expr> region_extents(const BufferRegion& r) {
  std::vector<Expr> e;
  for (const auto& rg : r.ranges) e.push_back(rg.extent);
  return e;
}

}  // namespace tl

namespace tl {
ElemRef Buffer::operator()(const Loc& loc) const {
  return ElemRef(*this, {}, loc);
}
ElemRef Buffer::operator()(Expr i, const Loc& loc) const {
  return ElemRef(*this, {std::move(i)}, loc);
}
ElemRef Buffer::operator()(Expr i, Expr j, const Loc& loc) const {
  return ElemRef(*this, {std::move(i), std::move(j)}, loc);
}
ElemRef Buffer::operator()(Expr i, Expr j, Expr k, const Loc& loc) const {
  return ElemRef(*this, {std::move(i), std::move(j), std::move(k)}, loc);
}
ElemRef Buffer::operator()(Expr i, Expr j, Expr k, Expr l, const Loc& loc) const {
  return ElemRef(*this, {std::move(i), std::move(j), std::move(k), std::move(l)}, loc);
}
DType ElemRef::dtype() const {
  return buffer_->dtype;
}

Expr Buffer::load(std::vector<Expr> indices) const {
  if (indices.empty() && get()->scope == MemScope::Var) indices.push_back(Expr(0));
  return LoadNode::make(*this, std::move(indices));
}
BufferRegion Buffer::region(std::vector<Expr> starts, std::vector<Expr> extents) const {
  BufferRegion r{*this, {}};
  for (size_t i = 0; i < starts.size(); ++i)
    r.ranges.push_back({starts[i], i < extents.size() ? extents[i] : Expr()});
  if (extents.size() != starts.size())
    throw Error(fmt::format("region of '{}': {} starts but {} extents", get()->name, starts.size(),
                            extents.size()));
  return r;
}
BufferRegion Buffer::at(std::vector<Expr> starts) const {
  BufferRegion r{*this, {}};
  for (auto& s : starts) r.ranges.push_back({std::move(s), Expr()});
  return r;
}

const KernelNode* kernel_of(const PrimFunc& f) {
  if (!f || !f->body.defined()) return nullptr;
  if (auto* k = f->body.as<KernelNode>()) return k;
  if (auto* seq = f->body.as<SeqNode>())
    for (const auto& s : seq->stmts)
      if (auto* k = s.as<KernelNode>()) return k;
  return nullptr;
}

namespace arith {

DType promote(DType a, DType b) {
  if (a == b) return a;
  if (is_float(a) && !is_float(b)) return a;
  if (is_float(b) && !is_float(a)) return b;
  if (is_float(a) && is_float(b)) return dtype_bits(a) >= dtype_bits(b) ? a : b;
  if (is_bool(a)) return b;
  if (is_bool(b)) return a;
  return dtype_bits(a) >= dtype_bits(b) ? a : b;
}

DType binary_dtype(BinOp op, DType a, DType b) {
  return (is_comparison(op) || is_logical(op)) ? DType::Bool : promote(a, b);
}

int64_t wrap(DType t, int64_t v) {
  switch (t) {
    case DType::Bool:
      return v != 0;
    case DType::Int8:
      return static_cast<int8_t>(v);
    case DType::Int16:
      return static_cast<int16_t>(v);
    case DType::Int32:
      return static_cast<int32_t>(v);
    case DType::UInt8:
      return static_cast<uint8_t>(v);
    case DType::UInt16:
      return static_cast<uint16_t>(v);
    case DType::UInt32:
      return static_cast<uint32_t>(v);
    default:
      return v;  // 64-bit integers hold every bit pattern; floats are not wrapped
  }
}

}  // namespace arith

}  // namespace tl
