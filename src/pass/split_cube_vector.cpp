// split_cube_vector: turns a developer kernel whose buffers are placed (infer_scopes) and whose
// ops are the cube's and the vector unit's own (lower_cube_ops, vectorize_parallel) into an
// expert kernel: `T.Kernel(n) as (cid, vid)` with one T.Scope("Cube") and one T.Scope("Vector")
// (docs/developer_mode.md). Each scope is the kernel body *projected* on its core: the core's
// own statements, plus the scalar skeleton both cores run (loops, ifs, lets, scalar variables),
// with loops and ifs that end up empty dropped. A condition or loop bound that reads the other
// core's memory is an error (the other core cannot see it without a channel).
//
// Until split_aiv exists, the vector work runs on AIV 0 of each block (`if vid == 0`), for
// threads = 1 and 2 alike: two AIVs repeating the same work would race on their GM outputs.
// A T.Pipelined loop is projected on both cores with its num_stages (pipeline_loops lowers it).
#include <functional>
#include <unordered_set>

#include "developer.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/pass.h"

namespace tl {
namespace {

/// The core a leaf statement runs on; nullopt: both (scalar work, declarations of scalars).
std::optional<CoreKind> core_of(const Stmt& s, const Target& t) {
  switch (s.kind()) {
    case StmtKind::Allocate: return t.memory_core(s.as<AllocateNode>()->buffer->scope);
    case StmtKind::Store: return t.memory_core(s.as<StoreNode>()->buffer->scope);
    case StmtKind::TileOp: {
      auto* n = s.as<TileOpNode>();
      switch (n->op->unit) {
        case OpUnit::Cube: return CoreKind::Cube;
        case OpUnit::Vector: return CoreKind::Vector;
        case OpUnit::Move: {
          const TileArg* src = op_operand(*n, "src");
          const TileArg* dst = op_operand(*n, "dst");
          if (src && dst && src->is_region() && dst->is_region())
            if (const CopyPath* p = t.copy_path(src->region.buffer->scope, dst->region.buffer->scope)) return p->core;
          // An illegal path: legalize_copies reports it; the expert verifier names it if it did not.
          for (const auto& a : n->args)
            if (a.is_region())
              if (auto c = t.memory_core(a.region.buffer->scope)) return c;
          return CoreKind::Vector;
        }
        case OpUnit::Debug:
        case OpUnit::Scalar:
          for (const auto& a : n->args)
            if (a.is_region())
              if (auto c = t.memory_core(a.region.buffer->scope)) return c;
          return CoreKind::Vector;  // a printf without buffers prints once, from AIV 0
      }
      return CoreKind::Vector;
    }
    default: return std::nullopt;
  }
}

/// The first subexpression of `e` (itself included, parents first) for which `pred` holds.
const ExprNode* find_subexpr(const Expr& e, const std::function<bool(const Expr&)>& pred) {
  struct Finder : IRVisitor {
    const std::function<bool(const Expr&)>& pred;
    const ExprNode* found = nullptr;
    explicit Finder(const std::function<bool(const Expr&)>& p) : pred(p) {}
    void visit(const Expr& x) override {
      if (found || !x.defined()) return;
      if (pred(x)) {
        found = x.get();
        return;
      }
      IRVisitor::visit(x);
    }
  } finder(pred);
  finder.visit(e);
  return finder.found;
}

/// The first on-chip buffer of another core than `core` that `e` loads, if any.
const BufferNode* foreign_load(const Expr& e, CoreKind core, const Target& t) {
  const ExprNode* hit = find_subexpr(e, [&](const Expr& x) {
    auto* l = x.as<LoadNode>();
    if (!l) return false;
    auto c = t.memory_core(l->buffer->scope);
    return c && *c != core;
  });
  return hit ? static_cast<const LoadNode*>(hit)->buffer.get() : nullptr;
}

class Projector {
 public:
  Projector(CoreKind core, const Target& t) : core_(core), target_(t) {}

  /// `s` restricted to this core (undefined when nothing is left).
  Stmt project(const Stmt& s) {
    if (!s.defined()) return s;
    switch (s.kind()) {
      case StmtKind::Seq: {
        std::vector<Stmt> out;
        for (const auto& c : s.as<SeqNode>()->stmts)
          if (Stmt p = project(c); p.defined()) out.push_back(p);
        if (out.empty()) return Stmt();
        return SeqNode::make(std::move(out), s->loc);
      }
      case StmtKind::For: {
        auto* f = s.as<ForNode>();
        Stmt body = project(f->body);
        if (!has_work(body)) return Stmt();
        check_local(f->min, s, "loop start");
        check_local(f->extent, s, "loop extent");
        return ForNode::make(f->var, f->min, f->extent, f->for_kind, f->num_stages, body, f->loc);
      }
      case StmtKind::If: {
        auto* n = s.as<IfNode>();
        Stmt t = project(n->then_case), e = project(n->else_case);
        if (!has_work(t) && !has_work(e)) return Stmt();
        check_local(n->cond, s, "condition");
        return IfNode::make(n->cond, t.defined() ? t : SeqNode::make({}, n->loc), e, n->loc);
      }
      case StmtKind::Let: {
        // A value computed from the other core's memory stays on that core; a use of it on
        // this one is reported where it happens (check_local).
        auto* n = s.as<LetNode>();
        if (foreign_load(n->value, core_, target_) || uses_foreign(n->value)) {
          foreign_vars_.insert(n->var.node());
          return Stmt();
        }
        return s;
      }
      default: {
        // Workspaces belong to the kernel, not to a core: split_cube_vector declares them first.
        if (auto* a = s.as<AllocateNode>(); a && a->buffer->scope == MemScope::GM) return Stmt();
        auto c = core_of(s, target_);
        if (!c) {
          if (auto* st = s.as<StoreNode>(); st && (foreign_load(st->value, core_, target_) || uses_foreign(st->value))) {
            foreign_bufs_.insert(st->buffer.get());  // a scalar variable set from the other core's data
            return Stmt();
          }
          return s;
        }
        if (*c != core_) return Stmt();
        pre_order_visit(s, nullptr, [&](const Expr& e) {
          if (const char* what = foreign_symbol(e))
            user_error(s->loc, "{} uses '{}', which is computed from the other core's memory; a value crosses cores "
                               "only through a channel (a GM workspace copy), which developer mode does not lower for "
                               "scalars: compute it on both sides from GM data",
                       dev::describe(s), what);
        });
        return s;
      }
    }
  }

 private:
  /// True if `s` holds a statement of this core (not only the shared scalar skeleton).
  bool has_work(const Stmt& s) const {
    bool work = false;
    pre_order_visit(s, [&](const Stmt& x) {
      if (x.kind() == StmtKind::TileOp || x.kind() == StmtKind::Store || x.kind() == StmtKind::Allocate)
        if (auto c = core_of(x, target_); c && *c == core_) work = true;
    });
    return work;
  }
  /// The name of a variable (or scalar buffer) computed from the other core's memory that `e`
  /// itself is, or reads; nullptr if none.
  const char* foreign_symbol(const Expr& e) const {
    if (auto* v = e.as<VarNode>(); v && foreign_vars_.count(v)) return v->name.c_str();
    if (auto* l = e.as<LoadNode>(); l && foreign_bufs_.count(l->buffer.get())) return l->buffer->name.c_str();
    return nullptr;
  }
  bool uses_foreign(const Expr& e) const {
    return find_subexpr(e, [&](const Expr& x) { return foreign_symbol(x) != nullptr; }) != nullptr;
  }
  void check_local(const Expr& e, const Stmt& s, const char* what) const {
    if (uses_foreign(e))
      user_error(s->loc, "{}: its {} is computed from the other core's memory, but it also controls work of the {} "
                         "core; a value crosses cores only through a channel (a GM workspace copy), which developer "
                         "mode does not lower for scalars: compute it on both sides from GM data",
                 dev::describe(s), what, core_name(core_));
    if (const BufferNode* b = foreign_load(e, core_, target_))
      user_error(s->loc, "{}: its {} reads '{}' ({}), which lives on the {} core, but it also controls work of the "
                         "{} core; a value crosses cores only through a channel (a GM workspace copy), which "
                         "developer mode does not lower for scalars: compute it on both sides from GM data",
                 dev::describe(s), what, b->name, scope_name(b->scope), core_name(core_ == CoreKind::Cube ? CoreKind::Vector : CoreKind::Cube),
                 core_name(core_));
  }

  CoreKind core_;
  const Target& target_;
  std::unordered_set<const VarNode*> foreign_vars_;      // lets computed from the other core's memory
  std::unordered_set<const BufferNode*> foreign_bufs_;   // scalar variables set from it
};

}  // namespace

PrimFunc split_cube_vector(const PrimFunc& f, const Target& target) {
  if (!dev::is_developer(f)) return f;
  const KernelNode* k = dev::find_kernel(f);
  Stmt cube = Projector(CoreKind::Cube, target).project(k->body);
  Stmt vec = Projector(CoreKind::Vector, target).project(k->body);
  // A fresh name: the printed kernel must parse back with one binding per name.
  std::unordered_set<std::string> taken = arith::names_in(f);
  std::string vid_name = "vid";
  for (int i = 1; taken.count(vid_name); ++i) vid_name = fmt::format("vid_{}", i);
  Var vid(vid_name);
  std::vector<Stmt> scopes;
  // GM workspaces (T.alloc_workspace, legalize_copies' channels) are shared by both cores:
  // declared at kernel level, before the scopes.
  pre_order_visit(k->body, [&](const Stmt& s) {
    if (auto* a = s.as<AllocateNode>(); a && a->buffer->scope == MemScope::GM) scopes.push_back(s);
  });
  auto has_op = [&](const Stmt& s, CoreKind c) {
    bool any = false;
    pre_order_visit(s, [&](const Stmt& x) {
      if (x.kind() == StmtKind::TileOp || x.kind() == StmtKind::Store)
        if (auto cc = core_of(x, target); cc && *cc == c) any = true;
    });
    return any;
  };
  if (has_op(cube, CoreKind::Cube)) scopes.push_back(ScopeNode::make(CoreKind::Cube, cube, k->loc));
  if (has_op(vec, CoreKind::Vector))
    scopes.push_back(ScopeNode::make(CoreKind::Vector, IfNode::make(vid == 0, vec, Stmt(), k->loc), k->loc));
  Stmt kernel = KernelNode::make(k->num_blocks, k->cid, vid, SeqNode::make(std::move(scopes), k->loc), k->loc);
  // The kernel statement replaced inside the function body.
  std::vector<Stmt> top;
  if (auto* seq = f->body.as<SeqNode>()) {
    for (const auto& s : seq->stmts) top.push_back(s.as<KernelNode>() ? kernel : s);
  } else {
    top.push_back(kernel);
  }
  return with_body(f, SeqNode::make(std::move(top), f->body->loc));
}

}  // namespace tl
