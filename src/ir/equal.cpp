// Structural equality and hashing. One walker serves both: Equal compares two trees in
// lock-step, Hash feeds one tree into an FNV-1a stream; both number binders in the order they
// are met so that names and pointers never matter.
#include "tl/ir_equal.h"

#include <cstring>
#include <unordered_map>

#include "tl/op.h"
#include "tl/printer.h"

namespace tl {
namespace {

/// Flattens nested Seqs into one list of statements.
void flatten(const Stmt& s, std::vector<Stmt>& out) {
  if (!s.defined()) return;
  if (auto* q = s.as<SeqNode>()) {
    for (const auto& c : q->stmts) flatten(c, out);
  } else {
    out.push_back(s);
  }
}

/// Attribute values compare by value, with NaN equal to NaN (pad_value=float("nan")).
bool same_attr(const AttrValue& a, const AttrValue& b) {
  if (std::holds_alternative<double>(a) && std::holds_alternative<double>(b)) {
    double x = std::get<double>(a), y = std::get<double>(b);
    return std::memcmp(&x, &y, sizeof x) == 0 || (x != x && y != y);
  }
  return a == b;
}

class Equal {
 public:
  std::string diff;  // description of the first mismatch

  bool func(const PrimFunc& a, const PrimFunc& b) {
    if (a->name != b->name) return fail(fmt::format("function name {} vs {}", a->name, b->name));
    if (a->lowered_from_developer != b->lowered_from_developer)
      return fail(fmt::format("lowered_from_developer {} vs {}", a->lowered_from_developer,
                              b->lowered_from_developer));
    if (a->dynamics.size() != b->dynamics.size()) return fail("number of dynamic symbols");
    for (size_t i = 0; i < a->dynamics.size(); ++i)
      if (!bind(a->dynamics[i], b->dynamics[i])) return false;
    if (a->params.size() != b->params.size()) return fail("number of parameters");
    for (size_t i = 0; i < a->params.size(); ++i) {
      const auto &p = a->params[i], &q = b->params[i];
      if (p.is_tensor() != q.is_tensor()) return fail(fmt::format("parameter {} kind", i));
      if (p.is_tensor() ? !bind_buffer(p.tensor, q.tensor) : !bind(p.scalar, q.scalar))
        return false;
    }
    return stmt(a->body, b->body);
  }

  bool stmt(const Stmt& a, const Stmt& b) {
    std::vector<Stmt> xs, ys;
    flatten(a, xs);
    flatten(b, ys);
    if (xs.size() != ys.size())
      return fail(fmt::format("block of {} vs {} statements", xs.size(), ys.size()));
    for (size_t i = 0; i < xs.size(); ++i)
      if (!single(xs[i], ys[i])) return false;
    return true;
  }

  bool expr(const Expr& a, const Expr& b) {
    if (a.defined() != b.defined()) return fail("an expression is missing on one side");
    if (!a.defined()) return true;
    if (a.kind() != b.kind() || a.dtype() != b.dtype())
      return fail(fmt::format("expression {} vs {}", print(a), print(b)));
    switch (a.kind()) {
      case ExprKind::IntImm:
        return a.as<IntImmNode>()->value == b.as<IntImmNode>()->value ||
               fail(fmt::format("{} vs {}", print(a), print(b)));
      case ExprKind::FloatImm: {
        double x = a.as<FloatImmNode>()->value, y = b.as<FloatImmNode>()->value;
        return std::memcmp(&x, &y, sizeof x) == 0 || (x != x && y != y) ||
               fail(fmt::format("{} vs {}", print(a), print(b)));
      }
      case ExprKind::StringImm:
        return a.as<StringImmNode>()->value == b.as<StringImmNode>()->value ||
               fail("string literal");
      case ExprKind::Var: {
        auto it = vars_.find(a.get());
        if (it != vars_.end())
          return it->second == b.get() ||
                 fail(fmt::format("variable {} vs {}", print(a), print(b)));
        // Free variable on both sides: compare by name.
        return a.as<VarNode>()->name == b.as<VarNode>()->name ||
               fail(fmt::format("free variable {} vs {}", print(a), print(b)));
      }
      case ExprKind::Binary: {
        auto *x = a.as<BinaryNode>(), *y = b.as<BinaryNode>();
        return (x->op == y->op || fail(fmt::format("{} vs {}", print(a), print(b)))) &&
               expr(x->a, y->a) && expr(x->b, y->b);
      }
      case ExprKind::Not:
        return expr(a.as<NotNode>()->a, b.as<NotNode>()->a);
      case ExprKind::Select: {
        auto *x = a.as<SelectNode>(), *y = b.as<SelectNode>();
        return expr(x->cond, y->cond) && expr(x->t, y->t) && expr(x->f, y->f);
      }
      case ExprKind::Cast:
        return expr(a.as<CastNode>()->value, b.as<CastNode>()->value);
      case ExprKind::Load: {
        auto *x = a.as<LoadNode>(), *y = b.as<LoadNode>();
        return use_buffer(x->buffer, y->buffer) && exprs(x->indices, y->indices);
      }
      case ExprKind::Call: {
        auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
        return (x->name == y->name || fail("intrinsic " + x->name + " vs " + y->name)) &&
               exprs(x->args, y->args);
      }
    }
    return false;
  }

 private:
  bool fail(const std::string& what) {
    if (diff.empty()) diff = what;
    return false;
  }
  bool exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return fail("number of indices or arguments");
    for (size_t i = 0; i < a.size(); ++i)
      if (!expr(a[i], b[i])) return false;
    return true;
  }
  bool bind(const Var& a, const Var& b) {
    if (a.dtype() != b.dtype()) return fail(fmt::format("variable {} dtype", a.name()));
    vars_[a.get()] = b.get();
    return true;
  }
  bool bind_buffer(const Buffer& a, const Buffer& b) {
    if (a->dtype != b->dtype || a->scope != b->scope || a->address != b->address)
      return fail(fmt::format("buffer {} vs {} (dtype, scope or address)", a->name, b->name));
    if (a->channel_slots != b->channel_slots)
      return fail(fmt::format("buffer {} vs {} (channel_slots {} vs {})", a->name, b->name,
                              a->channel_slots, b->channel_slots));
    if (a->l2_cache != b->l2_cache)
      return fail(fmt::format("buffer {} vs {} (l2_cache {} vs {})", a->name, b->name,
                              l2_cache_name(a->l2_cache), l2_cache_name(b->l2_cache)));
    if (a->slot != b->slot)
      return fail(fmt::format("buffer {} vs {} (slot ({}, {}, {}) vs ({}, {}, {}))", a->name,
                              b->name, a->slot.loop, a->slot.index, a->slot.count, b->slot.loop,
                              b->slot.index, b->slot.count));
    if (!exprs(a->shape, b->shape) || !exprs(a->strides, b->strides))
      return fail(fmt::format("buffer {} shape or strides", a->name));
    bufs_[a.get()] = b.get();
    return true;
  }
  bool use_buffer(const Buffer& a, const Buffer& b) {
    auto it = bufs_.find(a.get());
    if (it == bufs_.end()) return a->name == b->name || fail("unbound buffer " + a->name);
    return it->second == b.get() || fail(fmt::format("buffer {} vs {}", a->name, b->name));
  }
  bool region(const BufferRegion& a, const BufferRegion& b) {
    if (!use_buffer(a.buffer, b.buffer)) return false;
    if (a.ranges.size() != b.ranges.size()) return fail("region rank");
    for (size_t i = 0; i < a.ranges.size(); ++i)
      if (!expr(a.ranges[i].min, b.ranges[i].min) || !expr(a.ranges[i].extent, b.ranges[i].extent))
        return false;
    return true;
  }
  bool single(const Stmt& a, const Stmt& b) {
    if (a.kind() != b.kind())
      return fail(fmt::format("statement `{}` vs `{}`", first_line(a), first_line(b)));
    switch (a.kind()) {
      case StmtKind::Seq:
        return stmt(a, b);
      case StmtKind::For: {
        auto *x = a.as<ForNode>(), *y = b.as<ForNode>();
        if (x->for_kind != y->for_kind || x->num_stages != y->num_stages || x->skew != y->skew)
          return fail("loop kind");
        return expr(x->min, y->min) && expr(x->extent, y->extent) && bind(x->var, y->var) &&
               stmt(x->body, y->body);
      }
      case StmtKind::If: {
        auto *x = a.as<IfNode>(), *y = b.as<IfNode>();
        if (x->else_case.defined() != y->else_case.defined()) return fail("else branch");
        return expr(x->cond, y->cond) && stmt(x->then_case, y->then_case) &&
               stmt(x->else_case, y->else_case);
      }
      case StmtKind::Let: {
        auto *x = a.as<LetNode>(), *y = b.as<LetNode>();
        return expr(x->value, y->value) && bind(x->var, y->var);
      }
      case StmtKind::Allocate: {
        auto *x = a.as<AllocateNode>(), *y = b.as<AllocateNode>();
        if (x->is_view() != y->is_view()) return fail("a view vs an allocation");
        if (x->is_view() && !use_buffer(x->view_of, y->view_of)) return false;
        return bind_buffer(x->buffer, y->buffer);
      }
      case StmtKind::Store: {
        auto *x = a.as<StoreNode>(), *y = b.as<StoreNode>();
        return use_buffer(x->buffer, y->buffer) && exprs(x->indices, y->indices) &&
               expr(x->value, y->value);
      }
      case StmtKind::TileOp: {
        auto *x = a.as<TileOpNode>(), *y = b.as<TileOpNode>();
        if (x->op != y->op) return fail("op " + x->op->name + " vs " + y->op->name);
        if (x->args.size() != y->args.size()) return fail("operand count of " + x->op->name);
        for (size_t i = 0; i < x->args.size(); ++i) {
          const auto &p = x->args[i], &q = y->args[i];
          if (p.is_region() != q.is_region()) return fail("operand kind of " + x->op->name);
          if (p.is_region() ? !region(p.region, q.region) : !expr(p.scalar, q.scalar)) return false;
        }
        if (x->attrs.size() != y->attrs.size()) return fail("attributes of " + x->op->name);
        for (size_t i = 0; i < x->attrs.size(); ++i)
          if (x->attrs[i].key != y->attrs[i].key ||
              !same_attr(x->attrs[i].value, y->attrs[i].value))
            return fail(fmt::format("attribute {} of {}", x->attrs[i].key, x->op->name));
        return true;
      }
      case StmtKind::Sync: {
        auto *x = a.as<SyncNode>(), *y = b.as<SyncNode>();
        if (x->sync_kind != y->sync_kind || x->src != y->src || x->dst != y->dst ||
            x->mode != y->mode)
          return fail(fmt::format("sync `{}` vs `{}`", first_line(a), first_line(b)));
        return expr(x->event_id, y->event_id);
      }
      case StmtKind::Scope: {
        auto *x = a.as<ScopeNode>(), *y = b.as<ScopeNode>();
        return (x->core == y->core || fail("scope core")) && stmt(x->body, y->body);
      }
      case StmtKind::Kernel: {
        auto *x = a.as<KernelNode>(), *y = b.as<KernelNode>();
        if (x->threads != y->threads || x->developer() != y->developer())
          return fail("kernel mode or threads");
        return expr(x->num_blocks, y->num_blocks) && bind(x->cid, y->cid) &&
               (x->developer() || bind(x->vid, y->vid)) && stmt(x->body, y->body);
      }
    }
    return false;
  }
  static std::string first_line(const Stmt& s) {
    std::string p = print(s, {.locations = false});
    return p.substr(0, p.find('\n'));
  }

  std::unordered_map<const ExprNode*, const ExprNode*> vars_;
  std::unordered_map<const BufferNode*, const BufferNode*> bufs_;
};

/// FNV-1a over a canonical token stream of the tree.
class Hasher {
 public:
  uint64_t h = 1469598103934665603ull;

  void func(const PrimFunc& f) {
    str(f->name);
    if (f->lowered_from_developer) mix(static_cast<uint64_t>(f->lowered_from_developer));
    for (const auto& d : f->dynamics) bind(d);
    for (const auto& p : f->params) {
      if (p.is_tensor())
        buffer_def(p.tensor);
      else
        bind(p.scalar);
    }
    stmt(f->body);
  }

 private:
  void mix(uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  void str(const std::string& s) {
    mix(s.size());
    for (char c : s) mix(static_cast<unsigned char>(c));
  }
  void bind(const Var& v) {
    mix(v.dtype() == DType::Int32 ? 0 : static_cast<int>(v.dtype()) + 1);
    // Numbered by binding site, a rebinding included: the lowering reuses one Var (and one
    // Buffer) object at several binding sites (FlashAttention's unrolled kv steps), which the
    // printer writes, and the parser reads back, as distinct objects. Numbering such an object
    // by its first site only gave the IR read back another hash than the IR written, and every
    // such JIT disk artifact was rejected (docs/must_show.md); Equal already compares by site.
    vars_[v.get()] = next_var_++;
  }
  void buffer_def(const Buffer& b) {
    mix(static_cast<int>(b->dtype));
    mix(static_cast<int>(b->scope));
    mix(static_cast<uint64_t>(b->address));
    if (b->channel_slots) mix(0xc4a0000u + static_cast<uint64_t>(b->channel_slots));
    if (b->l2_cache != L2CacheMode::Normal) mix(0x12ca0000u + static_cast<uint64_t>(b->l2_cache));
    if (b->slot.defined()) {
      mix(0x5107000u);
      for (int v : {b->slot.loop, b->slot.index, b->slot.count}) mix(static_cast<uint64_t>(v));
    }
    mix(b->shape.size());
    for (const auto& s : b->shape) expr(s);
    mix(b->strides.size());
    for (const auto& s : b->strides) expr(s);
    bufs_[b.get()] = next_buf_++;  // by binding site, as bind() above
  }
  void buffer_use(const Buffer& b) {
    auto it = bufs_.find(b.get());
    if (it != bufs_.end())
      mix(it->second);
    else
      str(b->name);
  }
  void expr(const Expr& e) {
    if (!e.defined()) return mix(0xdead);
    mix(static_cast<int>(e.kind()) * 64 + static_cast<int>(e.dtype()));
    switch (e.kind()) {
      case ExprKind::IntImm:
        return mix(static_cast<uint64_t>(e.as<IntImmNode>()->value));
      case ExprKind::FloatImm: {
        double v = e.as<FloatImmNode>()->value;
        uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        return mix(v != v ? 0x7ff8000000000000ull : bits);
      }
      case ExprKind::StringImm:
        return str(e.as<StringImmNode>()->value);
      case ExprKind::Var: {
        auto it = vars_.find(e.get());
        if (it != vars_.end()) return mix(it->second);
        return str(e.as<VarNode>()->name);
      }
      case ExprKind::Binary: {
        auto* n = e.as<BinaryNode>();
        mix(static_cast<int>(n->op));
        expr(n->a);
        return expr(n->b);
      }
      case ExprKind::Not:
        return expr(e.as<NotNode>()->a);
      case ExprKind::Select: {
        auto* n = e.as<SelectNode>();
        expr(n->cond);
        expr(n->t);
        return expr(n->f);
      }
      case ExprKind::Cast:
        return expr(e.as<CastNode>()->value);
      case ExprKind::Load: {
        auto* n = e.as<LoadNode>();
        buffer_use(n->buffer);
        for (const auto& i : n->indices) expr(i);
        return;
      }
      case ExprKind::Call: {
        auto* n = e.as<CallNode>();
        str(n->name);
        for (const auto& a : n->args) expr(a);
        return;
      }
    }
  }
  void stmt(const Stmt& s) {
    std::vector<Stmt> xs;
    flatten(s, xs);
    mix(xs.size());
    for (const auto& x : xs) single(x);
  }
  void single(const Stmt& s) {
    mix(1000 + static_cast<int>(s.kind()));
    switch (s.kind()) {
      case StmtKind::Seq:
        return stmt(s);
      case StmtKind::For: {
        auto* n = s.as<ForNode>();
        mix(static_cast<int>(n->for_kind));
        mix(n->num_stages);
        mix(n->skew);
        expr(n->min);
        expr(n->extent);
        bind(n->var);
        return stmt(n->body);
      }
      case StmtKind::If: {
        auto* n = s.as<IfNode>();
        expr(n->cond);
        stmt(n->then_case);
        mix(n->else_case.defined());
        return stmt(n->else_case);
      }
      case StmtKind::Let: {
        auto* n = s.as<LetNode>();
        expr(n->value);
        return bind(n->var);
      }
      case StmtKind::Allocate: {
        auto* n = s.as<AllocateNode>();
        mix(n->is_view());
        if (n->is_view()) buffer_use(n->view_of);
        return buffer_def(n->buffer);
      }
      case StmtKind::Store: {
        auto* n = s.as<StoreNode>();
        buffer_use(n->buffer);
        for (const auto& i : n->indices) expr(i);
        return expr(n->value);
      }
      case StmtKind::TileOp: {
        auto* n = s.as<TileOpNode>();
        str(n->op->name);
        for (const auto& a : n->args) {
          if (a.is_region()) {
            buffer_use(a.region.buffer);
            for (const auto& r : a.region.ranges) {
              expr(r.min);
              expr(r.extent);
            }
          } else {
            expr(a.scalar);
          }
        }
        for (const auto& a : n->attrs) {
          str(a.key);
          std::visit(
              [&](const auto& v) {
                using V = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<V, std::string>)
                  str(v);
                else if constexpr (std::is_same_v<V, double>) {
                  uint64_t bits;
                  std::memcpy(&bits, &v, sizeof bits);
                  mix(bits);
                } else
                  mix(static_cast<uint64_t>(v));
              },
              a.value);
        }
        return;
      }
      case StmtKind::Sync: {
        auto* n = s.as<SyncNode>();
        mix(static_cast<int>(n->sync_kind) * 4096 + static_cast<int>(n->src) * 64 +
            static_cast<int>(n->dst) * 8 + n->mode);
        return expr(n->event_id);
      }
      case StmtKind::Scope: {
        auto* n = s.as<ScopeNode>();
        mix(static_cast<int>(n->core));
        return stmt(n->body);
      }
      case StmtKind::Kernel: {
        auto* n = s.as<KernelNode>();
        expr(n->num_blocks);
        mix(n->threads);
        bind(n->cid);
        if (!n->developer()) bind(n->vid);
        return stmt(n->body);
      }
    }
  }

  std::unordered_map<const ExprNode*, uint64_t> vars_;
  std::unordered_map<const BufferNode*, uint64_t> bufs_;
  uint64_t next_var_ = 0, next_buf_ = 0;
};

}  // namespace

bool structural_equal(const PrimFunc& a, const PrimFunc& b) {
  return Equal().func(a, b);
}
bool structural_equal(const Stmt& a, const Stmt& b) {
  return Equal().stmt(a, b);
}
bool structural_equal(const Expr& a, const Expr& b) {
  return Equal().expr(a, b);
}
uint64_t structural_hash(const PrimFunc& f) {
  Hasher h;
  h.func(f);
  return h.h;
}
std::string first_difference(const PrimFunc& a, const PrimFunc& b) {
  Equal e;
  e.func(a, b);
  return e.diff;
}

}  // namespace tl
