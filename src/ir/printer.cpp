// The IR printer. Output is the text format documented in printer.h, read back by parser.cpp.
#include "tl/printer.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

#include "tl/op.h"

#include <fmt/ranges.h>

namespace tl {
namespace {

/// The operand of a float negation `x * -1` (what `-x` builds, tl/ir_ops.h), printed `-x`
/// (parsed back to the same node); null for any other expression. An immediate operand keeps
/// the product form: `-2.0` would read back as a literal.
const Expr* negated_operand(const Expr& e) {
  auto* b = e.as<BinaryNode>();
  if (!b || b->op != BinOp::Mul || !is_float(b->a.dtype()) || b->b.dtype() != b->a.dtype())
    return nullptr;
  auto* k = b->b.as<FloatImmNode>();
  if (!k || k->value != -1.0 || b->a.as<FloatImmNode>()) return nullptr;
  return &b->a;
}

// Python precedence, higher binds tighter.
int precedence(const Expr& e) {
  if (negated_operand(e)) return 11;  // unary minus
  if (auto* b = e.as<BinaryNode>()) {
    switch (b->op) {
      case BinOp::Or:
        return 1;
      case BinOp::And:
        return 2;
      case BinOp::EQ:
      case BinOp::NE:
      case BinOp::LT:
      case BinOp::LE:
      case BinOp::GT:
      case BinOp::GE:
        return 4;
      case BinOp::BitOr:
        return 5;
      case BinOp::BitXor:
        return 6;
      case BinOp::BitAnd:
        return 7;
      case BinOp::Shl:
      case BinOp::Shr:
        return 8;
      case BinOp::Add:
      case BinOp::Sub:
        return 9;
      case BinOp::Mul:
      case BinOp::Div:
      case BinOp::FloorDiv:
      case BinOp::FloorMod:
        return 10;
      default:
        return 100;  // function-call forms
    }
  }
  if (e.as<NotNode>()) return 3;
  if (auto* i = e.as<IntImmNode>(); i && i->dtype == DType::Int32 && i->value < 0) return 11;
  if (auto* f = e.as<FloatImmNode>();
      f && f->dtype == DType::Float32 && std::signbit(f->value) && std::isfinite(f->value))
    return 11;
  return 100;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\x{:02x}", c);
        else
          out += c;
    }
  }
  return out + "\"";
}

std::string float_literal(double v) {
  if (std::isnan(v)) return "float(\"nan\")";
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "float(\"-inf\")";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

class Printer {
 public:
  explicit Printer(const PrintOptions& o) : opt_(o) {}

  std::string expr(const Expr& e) {
    if (!e.defined()) return "<undefined>";
    switch (e.kind()) {
      case ExprKind::IntImm: {
        auto* n = e.as<IntImmNode>();
        if (n->dtype == DType::Bool) return n->value ? "True" : "False";
        if (n->dtype == DType::Int32) return std::to_string(n->value);
        // uint64 values of 2^63 and above are held negative (tl/arith.h); the literal is the value.
        if (n->dtype == DType::UInt64)
          return fmt::format("T.uint64({})", static_cast<uint64_t>(n->value));
        return fmt::format("T.{}({})", dtype_name(n->dtype), n->value);
      }
      case ExprKind::FloatImm: {
        auto* n = e.as<FloatImmNode>();
        if (n->dtype == DType::Float32) return float_literal(n->value);
        return fmt::format("T.{}({})", dtype_name(n->dtype), float_literal(n->value));
      }
      case ExprKind::StringImm:
        return quote(e.as<StringImmNode>()->value);
      case ExprKind::Var:
        return e.as<VarNode>()->name;
      case ExprKind::Binary:
        return binary(e);
      case ExprKind::Not:
        return "not " + paren(e.as<NotNode>()->a, 3, false);
      case ExprKind::Select: {
        auto* n = e.as<SelectNode>();
        return fmt::format("T.if_then_else({}, {}, {})", expr(n->cond), expr(n->t), expr(n->f));
      }
      case ExprKind::Cast: {
        auto* n = e.as<CastNode>();
        return fmt::format("T.cast({}, \"{}\")", expr(n->value), dtype_name(n->dtype));
      }
      case ExprKind::Load: {
        auto* n = e.as<LoadNode>();
        return fmt::format("{}[{}]", n->buffer->name, list(n->indices));
      }
      case ExprKind::Call: {
        auto* n = e.as<CallNode>();
        return fmt::format("T.{}({})", n->name, list(n->args));
      }
    }
    return "<?>";
  }

  std::string region(const BufferRegion& r) {
    if (is_full(r)) return r.buffer->name;
    std::vector<std::string> dims;
    for (const auto& rg : r.ranges) dims.push_back(slice(rg));
    return fmt::format("{}[{}]", r.buffer->name, fmt::join(dims, ", "));
  }

  void func(const PrimFunc& f) {
    for (const auto& d : f->dynamics) {
      if (d.dtype() == DType::Int32)
        out_ << fmt::format("{} = T.dynamic(\"{}\")\n", d.name(), d.name());
      else
        out_ << fmt::format("{} = T.dynamic(\"{}\", \"{}\")\n", d.name(), d.name(),
                            dtype_name(d.dtype()));
    }
    if (!f->dynamics.empty()) out_ << "\n";
    if (f->lowered_from_developer)
      out_ << fmt::format("@T.prim_func(lowered_from_developer={})\n", f->lowered_from_developer);
    else
      out_ << "@T.prim_func\n";
    std::vector<std::string> ps;
    for (const auto& p : f->params) {
      if (p.is_tensor()) {
        const auto& b = p.tensor;
        std::string s =
            fmt::format("{}: T.Tensor({}, \"{}\"", b->name, tuple(b->shape), dtype_name(b->dtype));
        if (!b->strides.empty()) s += fmt::format(", strides={}", tuple(b->strides));
        if (b->l2_cache != L2CacheMode::Normal)
          s += fmt::format(", l2_cache=\"{}\"", l2_cache_name(b->l2_cache));
        ps.push_back(s + ")");
      } else {
        ps.push_back(fmt::format("{}: T.{}", p.scalar.name(), dtype_name(p.scalar.dtype())));
      }
    }
    line(0, fmt::format("def {}({}):", f->name, fmt::join(ps, ", ")), f->loc);
    block(f->body, 1);
  }

  void stmt(const Stmt& s, int ind) {
    switch (s.kind()) {
      case StmtKind::Seq: {
        for (const auto& c : s.as<SeqNode>()->stmts) stmt(c, ind);
        break;
      }
      case StmtKind::For: {
        auto* n = s.as<ForNode>();
        std::string args = expr(n->extent);
        if (n->for_kind == ForKind::Pipelined)
          args += fmt::format(", num_stages={}", n->num_stages);
        if (n->for_kind == ForKind::Pipelined && n->skew != 1)
          args += fmt::format(", skew={}", n->skew);
        if (!is_zero(n->min)) args += ", min=" + expr(n->min);
        line(ind,
             fmt::format("for {} in T.{}({}):", n->var.name(), for_kind_name(n->for_kind), args),
             s->loc);
        block(n->body, ind + 1);
        break;
      }
      case StmtKind::If: {
        auto* n = s.as<IfNode>();
        line(ind, fmt::format("if {}:", expr(n->cond)), s->loc);
        block(n->then_case, ind + 1);
        if (n->else_case.defined()) {
          line(ind, "else:", {});
          block(n->else_case, ind + 1);
        }
        break;
      }
      case StmtKind::Let: {
        auto* n = s.as<LetNode>();
        line(ind, fmt::format("{} = {}", n->var.name(), expr(n->value)), s->loc);
        break;
      }
      case StmtKind::Allocate: {
        const auto* a = s.as<AllocateNode>();
        const auto& b = a->buffer;
        if (a->is_view()) {
          line(ind,
               fmt::format("{} = T.view({}, \"{}\")", b->name, a->view_of->name,
                           dtype_name(b->dtype)),
               s->loc);
          break;
        }
        std::string call;
        switch (b->scope) {
          case MemScope::Var:
            call = fmt::format("T.alloc_var(\"{}\"", dtype_name(b->dtype));
            break;
          case MemScope::UB:
            call = fmt::format("T.alloc_ub({}, \"{}\"", tuple(b->shape), dtype_name(b->dtype));
            break;
          case MemScope::GM:
            call =
                fmt::format("T.alloc_workspace({}, \"{}\"", tuple(b->shape), dtype_name(b->dtype));
            break;
          default:
            call = fmt::format("T.alloc_{}({}, \"{}\"", scope_name(b->scope), tuple(b->shape),
                               dtype_name(b->dtype));
        }
        if (b->address >= 0) call += fmt::format(", address={}", b->address);
        if (b->channel_slots) call += fmt::format(", channel_slots={}", b->channel_slots);
        if (b->slot.defined())
          call += fmt::format(", slot=({}, {}, {})", b->slot.loop, b->slot.index, b->slot.count);
        if (b->l2_cache != L2CacheMode::Normal)
          call += fmt::format(", l2_cache=\"{}\"", l2_cache_name(b->l2_cache));
        line(ind, fmt::format("{} = {})", b->name, call), s->loc);
        break;
      }
      case StmtKind::Store: {
        auto* n = s.as<StoreNode>();
        line(ind, fmt::format("{}[{}] = {}", n->buffer->name, list(n->indices), expr(n->value)),
             s->loc);
        break;
      }
      case StmtKind::TileOp:
        line(ind, tile_op(*s.as<TileOpNode>()), s->loc);
        break;
      case StmtKind::Sync:
        line(ind, sync(*s.as<SyncNode>()), s->loc);
        break;
      case StmtKind::Scope: {
        auto* n = s.as<ScopeNode>();
        line(ind, fmt::format("with T.Scope(\"{}\"):", core_name(n->core)), s->loc);
        block(n->body, ind + 1);
        break;
      }
      case StmtKind::Kernel: {
        auto* n = s.as<KernelNode>();
        if (n->developer())
          line(ind,
               fmt::format("with T.Kernel({}, threads={}) as {}:", expr(n->num_blocks), n->threads,
                           n->cid.name()),
               s->loc);
        else
          line(ind,
               fmt::format("with T.Kernel({}, is_npu=True) as ({}, {}):", expr(n->num_blocks),
                           n->cid.name(), n->vid.name()),
               s->loc);
        block(n->body, ind + 1);
        break;
      }
    }
  }

  std::string str() const { return out_.str(); }

 private:
  static bool is_zero(const Expr& e) {
    auto* i = e.as<IntImmNode>();
    return i && i->dtype == DType::Int32 && i->value == 0;
  }
  static bool is_int32_lit(const Expr& e) {
    auto* i = e.as<IntImmNode>();
    return i && i->dtype == DType::Int32;
  }
  static bool is_full(const BufferRegion& r) {
    if (r.ranges.size() != r.buffer->shape.size()) return false;
    for (size_t i = 0; i < r.ranges.size(); ++i) {
      if (!is_zero(r.ranges[i].min)) return false;
      const Expr& ext = r.ranges[i].extent;
      const Expr& dim = r.buffer->shape[i];
      if (ext.same_as(dim)) continue;
      auto a = ext.as<IntImmNode>(), b = dim.as<IntImmNode>();
      if (!(a && b && a->dtype == b->dtype && a->value == b->value)) return false;
    }
    return true;
  }
  std::string slice(const Range& rg) {
    if (is_zero(rg.min)) return "0:" + expr(rg.extent);
    if (is_int32_lit(rg.min) && is_int32_lit(rg.extent)) {
      // `lo:hi` only when hi is an int32 literal too (both are held in int32: no overflow).
      const int64_t hi = rg.min.as<IntImmNode>()->value + rg.extent.as<IntImmNode>()->value;
      if (hi >= std::numeric_limits<int32_t>::min() && hi <= std::numeric_limits<int32_t>::max())
        return fmt::format("{}:{}", rg.min.as<IntImmNode>()->value, hi);
    }
    return expr(rg.min) + ":" + expr(BinaryNode::make(BinOp::Add, rg.min, rg.extent));
  }
  std::string paren(const Expr& e, int parent_prec, bool strict) {
    int p = precedence(e);
    bool need = strict ? p <= parent_prec : p < parent_prec;
    return need ? "(" + expr(e) + ")" : expr(e);
  }
  std::string binary(const Expr& e) {
    auto* n = e.as<BinaryNode>();
    int p = precedence(e);
    if (const Expr* x = negated_operand(e)) return "-" + paren(*x, p, false);
    if (p == 100) return fmt::format("{}({}, {})", binop_name(n->op), expr(n->a), expr(n->b));
    // Comparisons never chain: parenthesise comparison operands on both sides.
    bool cmp = is_comparison(n->op);
    return fmt::format("{} {} {}", paren(n->a, p, cmp), binop_name(n->op), paren(n->b, p, true));
  }
  std::string list(const std::vector<Expr>& xs) {
    std::vector<std::string> s;
    for (const auto& x : xs) s.push_back(expr(x));
    return fmt::format("{}", fmt::join(s, ", "));
  }
  std::string tuple(const std::vector<Expr>& xs) {
    return xs.size() == 1 ? "(" + expr(xs[0]) + ",)" : "(" + list(xs) + ")";
  }
  std::string attr_value(const AttrValue& v) {
    switch (v.index()) {
      case 0:
        return std::get<bool>(v) ? "True" : "False";
      case 1:
        return std::to_string(std::get<int64_t>(v));
      case 2:
        return float_literal(std::get<double>(v));
      default:
        return quote(std::get<std::string>(v));
    }
  }
  std::string tile_op(const TileOpNode& n) {
    std::vector<std::string> parts;
    for (const auto& a : n.args) parts.push_back(a.is_region() ? region(a.region) : expr(a.scalar));
    for (size_t i = 0; i < n.attrs.size(); ++i) {
      // Looked up here rather than with OpDef::attr_spec (src/op) so that the printer, a part of
      // the ir module, links without the op registry (docs/architecture.md).
      const AttrSpec* spec = nullptr;
      for (const auto& s : n.op->attrs)
        if (s.name == n.attrs[i].key) spec = &s;
      if (spec && spec->default_value == n.attrs[i].value) continue;
      parts.push_back(fmt::format("{}={}", n.attrs[i].key, attr_value(n.attrs[i].value)));
    }
    return fmt::format("T.{}({})", n.op->name, fmt::join(parts, ", "));
  }
  std::string sync(const SyncNode& n) {
    std::string s = sync_call(n);
    if (n.origin == SyncOrigin::Auto)
      s.insert(s.size() - 1, s.ends_with("()") ? "auto=True" : ", auto=True");
    return s;
  }
  std::string sync_call(const SyncNode& n) {
    auto name = sync_name(n.sync_kind);
    switch (n.sync_kind) {
      case SyncKind::SetFlag:
      case SyncKind::WaitFlag:
        return fmt::format("T.{}(\"{}\", \"{}\", {})", name, pipe_name(n.src), pipe_name(n.dst),
                           expr(n.event_id));
      case SyncKind::PipeBarrier:
        return fmt::format("T.pipe_barrier(\"{}\")", pipe_name(n.src));
      case SyncKind::SetCrossFlag:
        return fmt::format("T.set_cross_flag(\"{}\", {}, mode={})", pipe_name(n.src),
                           expr(n.event_id), n.mode);
      case SyncKind::WaitCrossFlag:
        return fmt::format("T.wait_cross_flag({})", expr(n.event_id));
      default:
        return fmt::format("T.{}()", name);
    }
  }
  void block(const Stmt& body, int ind) {
    auto* seq = body.as<SeqNode>();
    if (!body.defined() || (seq && seq->stmts.empty())) {
      line(ind, "pass", {});
      return;
    }
    stmt(body, ind);
  }
  void line(int ind, const std::string& text, const SourceLoc& loc) {
    out_ << std::string(4 * ind, ' ') << text;
    if (opt_.locations && loc.known()) {
      out_ << "  # @" << loc.file << ":" << loc.line;
      if (!loc.via.empty()) out_ << " via " << loc.via;
    }
    out_ << "\n";
  }

  PrintOptions opt_;
  std::ostringstream out_;
};

}  // namespace

std::string print(const PrimFunc& f, const PrintOptions& opt) {
  Printer p(opt);
  p.func(f);
  return p.str();
}
std::string print(const Stmt& s, const PrintOptions& opt) {
  Printer p(opt);
  p.stmt(s, 0);
  return p.str();
}
std::string print(const Expr& e) {
  return Printer({}).expr(e);
}
std::string print(const BufferRegion& r) {
  return Printer({}).region(r);
}

}  // namespace tl
