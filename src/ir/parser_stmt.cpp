// The IR text parser's statements: blocks, for / if / with / kernel / scope headers,
// assignments, allocations and views, stores, calls, syncs and tile ops with their operands
// and regions. See parser.cpp's top comment for the format; parser_impl.h for the layout.
#include "parser_impl.h"

#include "tl/ir_equal.h"
#include "tl/ir_ops.h"

namespace tl {
namespace parser_detail {

/// An indented block: its own scope, with `binds` (loop variable, cid/vid) bound first.
Stmt Parser::block(const Binds& binds) {
  const Token& at = peek();
  if (at.kind != Tok::Indent) expected("an indented block");
  if (blocks_ >= kMaxDepth)
    error_at(at, fmt::format("blocks nested too deeply (more than {} levels)", kMaxDepth));
  next();
  ++blocks_;
  scopes_.emplace_back();
  for (const auto& [n, b] : binds) bind(n, b);
  std::vector<Stmt> stmts;
  while (peek().kind != Tok::Dedent && peek().kind != Tok::End) {
    Stmt s = statement();
    if (s.defined()) stmts.push_back(std::move(s));
  }
  if (peek().kind != Tok::Dedent) expected("end of block");
  next();
  scopes_.pop_back();
  --blocks_;
  return SeqNode::make(std::move(stmts));
}

/// `:` NEWLINE after a compound statement's header; returns the header's location.
SourceLoc Parser::header_end() {
  expect(":");
  return end_of_line();
}

/// One statement, or an undefined Stmt for `pass`.
Stmt Parser::statement() {
  if (peek().kind == Tok::Name) {
    if (is("for")) return for_stmt();
    if (is("if")) return if_stmt();
    if (is("with")) return with_stmt();
    if (is("pass")) {
      next();
      end_of_line();
      return {};
    }
    if (is("T") && is(".", 1)) return call_stmt();
    if (is("=", 1)) return assign_stmt();
    if (is("[", 1)) return store_stmt();
  }
  expected("a statement");
}

/// `for v in T.serial(n[, min=m]):`, T.unroll, T.Parallel, `T.Pipelined(n, num_stages=s[,
/// skew=d])`
Stmt Parser::for_stmt() {
  expect("for");
  std::string v = expect_name("a loop variable name");
  expect("in");
  expect("T");
  expect(".");
  std::optional<ForKind> kind;
  for (auto k : {ForKind::Serial, ForKind::Parallel, ForKind::Pipelined, ForKind::Unrolled})
    if (is(for_kind_name(k))) kind = k;
  if (!kind) expected("a loop kind ('serial', 'unroll', 'Parallel' or 'Pipelined')");
  next();
  expect("(");
  Expr extent = expr().e;
  Expr min = IntImmNode::make(DType::Int32, 0);
  int stages = 0, skew = 1;
  bool have_min = false, have_stages = false, have_skew = false;
  bool pipelined = *kind == ForKind::Pipelined;
  while (accept(",") && !is(")")) {
    if (pipelined && !have_stages && accept("num_stages")) {
      expect("=");
      stages =
          static_cast<int>(int_in_range("number of stages", 1, std::numeric_limits<int>::max()));
      have_stages = true;
    } else if (pipelined && !have_skew && accept("skew")) {
      expect("=");
      skew = static_cast<int>(int_in_range("skew", 1, std::numeric_limits<int>::max()));
      have_skew = true;
    } else if (!have_min && accept("min")) {
      expect("=");
      min = expr().e;
      have_min = true;
    } else {
      expected(pipelined ? "'num_stages=', 'skew=' or 'min='" : "'min='");
    }
  }
  if (pipelined && !have_stages) expected("'num_stages=' (T.Pipelined needs it)");
  expect(")");
  SourceLoc loc = header_end();
  Var var(v, DType::Int32);
  Stmt body = block({{v, {var, {}}}});
  return ForNode::make(var, std::move(min), std::move(extent), *kind, stages, skew, std::move(body),
                       std::move(loc));
}

/// `if cond:` block [`else:` block]
Stmt Parser::if_stmt() {
  expect("if");
  Expr cond = expr().e;
  SourceLoc loc = header_end();
  Stmt then_case = block({});
  Stmt else_case;
  if (accept("else")) {
    header_end();
    else_case = block({});
  }
  return IfNode::make(std::move(cond), std::move(then_case), std::move(else_case), std::move(loc));
}

/// `with T.Kernel(n, is_npu=True) as (cid, vid):` or `with T.Scope("Cube"):`
Stmt Parser::with_stmt() {
  expect("with");
  expect("T");
  expect(".");
  if (accept("Kernel")) return kernel_stmt();
  if (accept("Scope")) return scope_stmt();
  expected("'Kernel' or 'Scope'");
}

/// Expert: `with T.Kernel(n, is_npu=True) as (cid, vid):`; developer:
/// `with T.Kernel(n, threads=T) as cid:`.
Stmt Parser::kernel_stmt() {
  expect("(");
  Expr n = expr().e;
  int threads = 0;
  while (accept(",") && !is(")")) {
    if (accept("is_npu")) {
      expect("=");
      expect("True");
    } else if (accept("threads")) {
      expect("=");
      threads = static_cast<int>(int_in_range("threads (vector cores per cube core)", 1, 2));
    } else {
      expected("'is_npu=True' or 'threads=N'");
    }
  }
  expect(")");
  expect("as");
  bool paren = accept("(");
  std::string cid = expect_name("the block index name");
  std::string vid;
  if (paren || threads == 0) {
    expect(",");
    vid = expect_name("the vector core index name");
    if (paren) expect(")");
    if (threads != 0)
      expected("'as cid' (a developer kernel with threads= binds no vector core index)");
  }
  SourceLoc loc = header_end();
  Var c(cid), v;
  Binds names = {{cid, {c, {}}}};
  if (!vid.empty()) {
    v = Var(vid);
    names.push_back({vid, {v, {}}});
  }
  Stmt body = block(std::move(names));
  return KernelNode::make(std::move(n), c, v, std::move(body), std::move(loc), threads);
}

Stmt Parser::scope_stmt() {
  expect("(");
  std::optional<CoreKind> core;
  if (peek().kind == Tok::String) core = parse_core(peek().text);
  if (!core) expected("\"Cube\" or \"Vector\"");
  next();
  expect(")");
  SourceLoc loc = header_end();
  Stmt body = block({});
  return ScopeNode::make(*core, std::move(body), std::move(loc));
}

/// `name = T.alloc_*(...)` (Allocate) or `name = expr` (Let; may shadow an outer name).
Stmt Parser::assign_stmt() {
  std::string name = expect_name("a new name");
  expect("=");
  if (is("T") && is(".", 1) && peek(2).kind == Tok::Name && peek(2).text.starts_with("alloc_"))
    return alloc_stmt(name);
  if (is("T") && is(".", 1) && is("view", 2) && is("(", 3)) return view_stmt(name);
  Expr value = expr().e;
  SourceLoc loc = end_of_line();
  Var var(name, value.dtype());
  bind(name, {var, {}});
  return LetNode::make(var, std::move(value), std::move(loc));
}

/// `name = T.alloc_L1((shape), "dtype"[, address=N])`, ..., `name = T.alloc_var("dtype")`,
/// `name = T.alloc_workspace((shape), "dtype")` (GM scratch the launcher allocates)
Stmt Parser::alloc_stmt(const std::string& name) {
  expect("T");
  expect(".");
  const Token& kt = next();
  const std::string_view kind = std::string_view(kt.text).substr(6);
  auto scope = kind == "workspace" ? std::optional<MemScope>(MemScope::GM) : parse_scope(kind);
  if (!scope || (*scope == MemScope::GM && kind != "workspace"))
    error_at(
        kt, fmt::format(
                "expected an allocation (alloc_L1, alloc_L0A, alloc_L0B, alloc_L0C, "
                "alloc_ub, alloc_shared, alloc_fragment, alloc_var or alloc_workspace), got 'T.{}'",
                excerpt(kt.text)));
  expect("(");
  std::vector<Expr> shape;
  if (*scope == MemScope::Var) {
    shape.push_back(IntImmNode::make(DType::Int32, 1));
  } else {
    shape = shape_tuple();
    expect(",");
  }
  DType t = dtype_string();
  int64_t address = -1;
  int channel_slots = 0;  // a workspace's annotations (BufferNode::channel_slots, l2_cache)
  L2CacheMode l2 = L2CacheMode::Normal;
  PipelineSlot slot;  // an on-chip buffer's (BufferNode::slot)
  if (accept(",") && !is(")")) {
    // In the printer's order: [address=][, channel_slots=][, l2_cache=] (a workspace's),
    // [address=][, slot=(loop, index, count)] (an on-chip buffer's).
    bool more = true;
    if (is("address") || (*scope != MemScope::GM && !is("slot"))) {
      expect("address");
      expect("=");
      address = int_in_range("address", 0, std::numeric_limits<int64_t>::max());
      more = accept(",") && !is(")");
    }
    // Anything else after an on-chip buffer's address is an error at the `)` expected there.
    if (more && *scope != MemScope::GM && is("slot")) {
      next();
      expect("=");
      expect("(");
      slot.loop = static_cast<int>(int_in_range("slot loop", 0, std::numeric_limits<int>::max()));
      expect(",");
      slot.index = static_cast<int>(int_in_range("slot index", 0, std::numeric_limits<int>::max()));
      expect(",");
      slot.count = static_cast<int>(int_in_range("slot count", 0, std::numeric_limits<int>::max()));
      expect(")");
    }
    if (*scope != MemScope::GM) more = false;
    if (more && is("channel_slots")) {
      next();
      expect("=");
      channel_slots = static_cast<int>(int_in_range("channel_slots", 1, 8));
      more = accept(",") && !is(")");
    }
    if (more) {
      expect("l2_cache");
      l2 = l2_cache_arg();
    }
    accept(",");
  }
  expect(")");
  std::string origin = take_origin(peek());
  SourceLoc loc = end_of_line();
  Buffer b = BufferNode::make(name, t, std::move(shape), *scope, {}, address, loc,
                              std::move(origin), channel_slots, l2, slot);
  bind(name, {{}, b});
  return AllocateNode::make(b, std::move(loc));
}

/// `name = T.view(base, "dtype")`: base's bytes as another dtype of the same width. The view
/// has the base's scope, shape and address; the verifier checks the dtype width.
Stmt Parser::view_stmt(const std::string& name) {
  expect("T");
  expect(".");
  expect("view");
  expect("(");
  if (peek().kind != Tok::Name) expected("the name of the buffer to view");
  Buffer base = buffer_named(next());
  expect(",");
  DType t = dtype_string();
  accept(",");
  expect(")");
  std::string origin = take_origin(peek());
  SourceLoc loc = end_of_line();
  Buffer b = BufferNode::make(name, t, base->shape, base->scope, base->strides, base->address, loc,
                              std::move(origin));
  bind(name, {{}, b});
  return AllocateNode::make_view(b, base, std::move(loc));
}

/// `buf[i, j] = value`
Stmt Parser::store_stmt() {
  Buffer b = buffer_named(next());
  std::vector<Expr> idx;
  for (auto& x : index_list()) idx.push_back(std::move(x.e));
  expect("=");
  Expr value = expr().e;
  SourceLoc loc = end_of_line();
  return StoreNode::make(std::move(b), std::move(idx), std::move(value), std::move(loc));
}

/// `T.<sync>(...)` or `T.<tile op>(...)`; op names may be dotted (`T.tile.add`).
Stmt Parser::call_stmt() {
  expect("T");
  expect(".");
  const Token& at = peek();
  if (at.kind != Tok::Name) expected("a tile primitive or synchronization name");
  std::string name = next().text;
  while (accept(".")) {
    if (peek().kind != Tok::Name) expected("a name after '.'");
    name += "." + next().text;
  }
  for (int k = 0; k <= static_cast<int>(SyncKind::SyncAll); ++k)
    if (name == sync_name(static_cast<SyncKind>(k))) return sync_stmt(static_cast<SyncKind>(k));
  const OpDef* op = find_op(name);
  if (!op) error_at(at, fmt::format("unknown tile primitive 'T.{}'", excerpt(name)));
  return tile_op_stmt(*op, at);
}

Stmt Parser::sync_stmt(SyncKind k) {
  expect("(");
  Pipe src = Pipe::S, dst = Pipe::S;
  Expr id;
  int mode = 0;
  switch (k) {
    case SyncKind::SetFlag:
    case SyncKind::WaitFlag:
      src = pipe_string();
      expect(",");
      dst = pipe_string();
      expect(",");
      id = expr().e;
      break;
    case SyncKind::PipeBarrier:
      src = pipe_string();
      break;
    case SyncKind::BarrierAll:
    case SyncKind::SyncAll:
      src = Pipe::ALL;
      break;
    case SyncKind::SetCrossFlag:
      src = pipe_string();
      expect(",");
      id = expr().e;
      mode = 2;
      if (is(",") && is("mode", 1)) {
        expect(",");
        expect("mode");
        expect("=");
        mode = static_cast<int>(int_in_range("mode", 0, 2));
      }
      break;
    case SyncKind::WaitCrossFlag:
      id = expr().e;
      break;
  }
  // The trailing `auto=True` of a synchronisation insert_syncs wrote (SyncOrigin::Auto).
  SyncOrigin origin = SyncOrigin::User;
  bool no_args = k == SyncKind::BarrierAll || k == SyncKind::SyncAll;
  if ((no_args && is("auto")) || (!no_args && accept(",") && !is(")"))) {
    expect("auto");
    expect("=");
    if (!accept("False")) {
      expect("True");
      origin = SyncOrigin::Auto;
    }
  }
  expect(")");
  SourceLoc loc = end_of_line();
  return SyncNode::make(k, src, dst, std::move(id), mode, std::move(loc), origin);
}

/// Operands positionally, then attributes as `key=value`; checked by make_tile_op.
Stmt Parser::tile_op_stmt(const OpDef& op, const Token& at) {
  expect("(");
  std::vector<TileArg> args;
  std::vector<Attr> attrs;
  while (!is(")")) {
    if (peek().kind == Tok::Name && is("=", 1)) {
      const Token& key = next();
      next();
      for (const auto& a : attrs)
        if (a.key == key.text)
          error_at(key, fmt::format("duplicate attribute '{}'", excerpt(key.text)));
      attrs.push_back({key.text, attr_value()});
    } else if (!attrs.empty()) {
      expected("an attribute 'name=value' (operands come before attributes)");
    } else {
      args.push_back(operand());
    }
    if (!accept(",")) break;
  }
  expect(")");
  SourceLoc loc = end_of_line();
  Stmt s;
  try {
    s = make_tile_op(op.name, std::move(args), std::move(attrs), SourceLoc{});
  } catch (const Error& e) {
    error_at(at, e.what());
  }
  auto* n = s.as<TileOpNode>();
  return TileOpNode::make(n->op, n->args, n->attrs, std::move(loc));
}

/// A tile-op operand: a bare buffer (its full region), a region `A[lo:hi, ...]`, or a scalar
/// expression (which includes element loads `A[i, j]`).
TileArg Parser::operand() {
  const Token& t = peek();
  if (t.kind == Tok::Name) {
    const Binding* b = lookup(t.text);
    if (b && b->buf.defined()) {
      if (is(",", 1) || is(")", 1)) {
        next();
        return BufferRegion::full(b->buf);
      }
      if (is("[", 1) && subscript_has_slice(pos_ + 1)) return region(b->buf);
    }
  }
  return expr().e;
}

/// Whether the subscript opened at token `i` has a `:` at its own bracket level.
bool Parser::subscript_has_slice(size_t i) const {
  int depth = 0;
  for (size_t j = i + 1; j < toks_.size(); ++j) {
    const Token& t = toks_[j];
    if (t.kind != Tok::Punct) {
      if (t.kind == Tok::Newline || t.kind == Tok::End) return false;
      continue;
    }
    if (t.text == "(" || t.text == "[" || t.text == "{")
      ++depth;
    else if (t.text == ")" || t.text == "]" || t.text == "}") {
      if (depth == 0) return false;
      --depth;
    } else if (t.text == ":" && depth == 0) {
      return true;
    }
  }
  return false;
}

BufferRegion Parser::region(const Buffer& b) {
  next();  // the buffer name
  expect("[");
  BufferRegion r{b, {}};
  do {
    const Token& at = peek();
    Expr lo = expr().e;
    expect(":");
    Expr hi = expr().e;
    r.ranges.push_back(slice(lo, hi, at));
  } while (accept(","));
  expect("]");
  if (!is(",") && !is(")")) expected("',' or ')' after a buffer region");
  return r;
}

/// The inverse of the printer's slice(): `0:e`, `lo:hi` literals, `lo:lo + e`, else hi - lo.
Range Parser::slice(const Expr& lo, const Expr& hi, const Token& at) const {
  auto* l = lo.as<IntImmNode>();
  auto* h = hi.as<IntImmNode>();
  bool l32 = l && l->dtype == DType::Int32, h32 = h && h->dtype == DType::Int32;
  if (l32 && l->value == 0) return {lo, hi};
  if (l32 && h32) {
    const int64_t ext = h->value - l->value;  // both int32: no overflow
    if (ext < std::numeric_limits<int32_t>::min() || ext > std::numeric_limits<int32_t>::max())
      error_at(at, fmt::format("expected a slice whose extent fits in int32, got {}:{} (extent {})",
                               l->value, h->value, ext));
    return {lo, IntImmNode::make(DType::Int32, ext)};
  }
  if (auto* add = hi.as<BinaryNode>(); add && add->op == BinOp::Add && structural_equal(add->a, lo))
    return {lo, add->b};
  return {lo, node(at, [&] { return BinaryNode::make(BinOp::Sub, hi, lo); }).e};
}

}  // namespace parser_detail
}  // namespace tl
