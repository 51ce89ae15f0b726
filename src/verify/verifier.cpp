// The verifier's walk: kernel structure, core scopes and symbols (vars and buffers in scope).
// Per-statement rules live in verify_ops.cpp (tile ops, allocations), verify_sync.cpp and the
// op rules of rules_*.cpp. Nothing here throws on bad input: every problem is a Diagnostic.
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "first_reads.h"
#include "tl/printer.h"
#include "verify_util.h"

namespace tl {

std::string Diagnostic::str() const {
  std::string s = fmt::format("{}: {}", loc.str(), op);
  if (!operand.empty()) {
    s += fmt::format(": operand '{}'", operand);
    if (!context.empty()) s += fmt::format(" ({})", context);
  } else if (!context.empty()) {
    s += fmt::format(" ({})", context);
  }
  return s + fmt::format(": {} [rule: {}]", message, rule);
}

std::string format_diagnostics(const std::vector<Diagnostic>& ds) {
  std::string s;
  for (const auto& d : ds) s += d.str() + "\n";
  return s;
}

void VerifyContext::error(const SourceLoc& loc, std::string op, std::string operand,
                          std::string rule, std::string message, std::string context) {
  out_.push_back(Diagnostic{std::move(op), std::move(operand), std::move(rule), std::move(message),
                            loc, std::move(context)});
}

void VerifyContext::error(const TileOpNode& n, std::string operand, std::string rule,
                          std::string message) {
  std::string context;
  if (const BufferRegion* r = rules::region_of(n, operand))
    context = fmt::format("buffer '{}' in {}", r->buffer->name, scope_name(r->buffer->scope));
  out_.push_back(Diagnostic{rules::op_title(n), std::move(operand), std::move(rule),
                            std::move(message), n.loc, std::move(context)});
}

std::string_view spec_name(Spec s) {
  return s == Spec::Planned ? "planned" : "expert";
}

namespace {

std::string for_title(ForKind k) {
  switch (k) {
    case ForKind::Serial:
      return "T.serial";
    case ForKind::Parallel:
      return "T.Parallel";
    case ForKind::Pipelined:
      return "T.Pipelined";
    case ForKind::Unrolled:
      return "T.unroll";
  }
  return "T.serial";
}

class Walker {
 public:
  Walker(const Target& t, std::vector<Diagnostic>& out, Spec spec) : ctx_(t, out, spec) {}

  void run(const PrimFunc& f) {
    if (!f) {
      ctx_.error(SourceLoc{}, "T.prim_func", "", "kernel-count", "no function to verify (null)");
      return;
    }
    frames_.emplace_back();
    for (const auto& d : f->dynamics) bind_var(d, f->loc, "T.prim_func");
    for (const auto& p : f->params) {
      if (p.is_tensor())
        params_.insert(p.tensor.get());
      else if (p.scalar.defined())
        bind_var(p.scalar, f->loc, "T.prim_func");
    }
    for (const auto& p : f->params)
      if (p.is_tensor()) {
        for (const auto& e : p.tensor->shape) check_expr(e, f->loc, "T.prim_func", p.tensor->name);
        rules::check_tensor_param(p.tensor, p.tensor->loc.known() ? p.tensor->loc : f->loc, ctx_);
      }
    walk(f->body);
    if (kernels_ == 0)
      ctx_.error(
          f->loc, "T.prim_func", "", "kernel-count",
          fmt::format("function '{}' has no T::Kernel launch; expected exactly one", f->name));
    frames_.pop_back();
  }

 private:
  struct Frame {
    std::vector<const VarNode*> vars;
    std::vector<const BufferNode*> buffers;
  };

  // ---- symbols ----------------------------------------------------------------------------
  void bind_var(const Var& v, const SourceLoc& loc, const std::string& op) {
    if (!v.defined()) return;
    const VarNode* n = v.node();
    if (live_vars_[n] > 0)
      ctx_.error(loc, op, n->name, "rebound-symbol",
                 fmt::format("variable '{}' is bound again while its earlier binding is still in "
                             "scope; expected a fresh variable",
                             n->name));
    ++live_vars_[n];
    frames_.back().vars.push_back(n);
  }
  void bind_buffer(const Buffer& b, const SourceLoc& loc, const std::string& op) {
    const BufferNode* n = b.get();
    if (live_buffers_[n] > 0)
      ctx_.error(loc, op, n->name, "rebound-symbol",
                 fmt::format("buffer '{}' is allocated again while its earlier allocation is "
                             "still in scope",
                             n->name));
    ++live_buffers_[n];
    frames_.back().buffers.push_back(n);
  }
  void push() { frames_.emplace_back(); }
  void pop() {
    for (auto* v : frames_.back().vars) --live_vars_[v];
    for (auto* b : frames_.back().buffers) --live_buffers_[b];
    frames_.pop_back();
  }
  bool buffer_visible(const BufferNode* b) {
    if (params_.count(b)) return true;
    auto it = live_buffers_.find(b);
    return it != live_buffers_.end() && it->second > 0;
  }

  /// Reports undefined vars and buffers in `e` (once per statement and symbol) and scalar
  /// accesses to memories the scalar unit cannot reach.
  void check_expr(const Expr& e, const SourceLoc& loc, const std::string& op,
                  const std::string& operand) {
    if (!e.defined()) return;
    switch (e.kind()) {
      case ExprKind::Var: {
        auto* v = static_cast<const VarNode*>(e.get());
        auto it = live_vars_.find(v);
        if ((it == live_vars_.end() || it->second == 0) && reported_.insert(v).second)
          ctx_.error(loc, op, operand, "undefined-var",
                     fmt::format("variable '{}' is used outside its binding (a loop variable "
                                 "after its loop, a T::let before its declaration, or a variable "
                                 "never bound); expected a variable in scope",
                                 v->name));
        return;
      }
      case ExprKind::Binary: {
        auto* b = static_cast<const BinaryNode*>(e.get());
        check_expr(b->a, loc, op, operand);
        check_expr(b->b, loc, op, operand);
        return;
      }
      case ExprKind::Not:
        check_expr(static_cast<const NotNode*>(e.get())->a, loc, op, operand);
        return;
      case ExprKind::Select: {
        auto* s = static_cast<const SelectNode*>(e.get());
        check_expr(s->cond, loc, op, operand);
        check_expr(s->t, loc, op, operand);
        check_expr(s->f, loc, op, operand);
        return;
      }
      case ExprKind::Cast:
        check_expr(static_cast<const CastNode*>(e.get())->value, loc, op, operand);
        return;
      case ExprKind::Call:
        for (const auto& a : static_cast<const CallNode*>(e.get())->args)
          check_expr(a, loc, op, operand);
        return;
      case ExprKind::Load: {
        auto* l = static_cast<const LoadNode*>(e.get());
        check_buffer_use(l->buffer, loc, op, operand);
        check_scalar_access(l->buffer, loc, op, operand);
        check_index_count(l->buffer, l->indices.size(), loc, op, operand);
        for (const auto& i : l->indices) check_expr(i, loc, op, operand);
        return;
      }
      default:
        return;
    }
  }
  void check_buffer_use(const Buffer& b, const SourceLoc& loc, const std::string& op,
                        const std::string& operand) {
    if (!b.defined()) return;
    if (!buffer_visible(b.get()) && reported_.insert(b.get()).second)
      ctx_.error(loc, op, operand, "undefined-buffer",
                 b->scope == MemScope::GM
                     ? fmt::format("GM buffer '{}' is not a parameter of the function; expected "
                                   "a tensor passed to T::prim_func",
                                   b->name)
                     : fmt::format("buffer '{}' ({}) is used outside the block of its allocation "
                                   "(or before it, or it is never allocated); expected a buffer "
                                   "allocated earlier in an enclosing block",
                                   b->name, scope_name(b->scope)));
    for (const auto& s : b->shape) check_expr(s, loc, op, operand);
  }
  void check_scalar_access(const Buffer& b, const SourceLoc& loc, const std::string& op,
                           const std::string& operand) {
    const auto& ok = ctx_.target().scalar_scopes;
    if (b->scope == MemScope::Shared || b->scope == MemScope::Fragment) return;
    if (std::find(ok.begin(), ok.end(), b->scope) == ok.end())
      ctx_.error(loc, op, operand, "scalar-access-scope",
                 fmt::format("scalar access to '{}' in {}: the scalar unit reaches {} only",
                             b->name, scope_name(b->scope), [&] {
                               std::string s;
                               for (auto m : ok)
                                 s += (s.empty() ? "" : ", ") + std::string(scope_name(m));
                               return s;
                             }()));
  }

  /// An element access names one index per dimension (IR text and hand-built IR can give
  /// fewer or more; the DSL checks its own).
  void check_index_count(const Buffer& b, size_t count, const SourceLoc& loc, const std::string& op,
                         const std::string& operand) {
    if (b->scope == MemScope::Var || count == b->ndim()) return;
    ctx_.error(
        loc, op, operand, "element-index-count",
        fmt::format(
            "element of '{}' with {} index(es); expected one per dimension of its shape {}, {}",
            b->name, count, rules::fmt_extents(b->shape), b->ndim()));
  }

  // ---- statements ---------------------------------------------------------------------------
  void walk_block(const Stmt& s) {
    push();
    walk(s);
    pop();
  }

  void require_kernel(const SourceLoc& loc, const std::string& op) {
    if (!in_kernel_)
      ctx_.error(loc, op, "", "outside-kernel",
                 "only declarations may precede the T::Kernel launch; expected this inside the "
                 "kernel body");
  }

  void walk(const Stmt& s) {
    if (!s.defined()) return;
    reported_.clear();
    switch (s.kind()) {
      case StmtKind::Seq: {
        // Not a scope (ir.h): declarations stay visible to the end of the enclosing block,
        // exactly as the printer, parser and structural equality see them.
        for (const auto& c : static_cast<const SeqNode*>(s.get())->stmts) walk(c);
        return;
      }
      case StmtKind::For: {
        auto* n = static_cast<const ForNode*>(s.get());
        std::string op = for_title(n->for_kind);
        check_expr(n->min, n->loc, op, "min");
        check_expr(n->extent, n->loc, op, "extent");
        // In an expert kernel, as in TileLang-Ascend: T.Parallel inside the Vector scope is
        // vectorised onto vector ops (vectorize_parallel, its V-pipe ops keep the author's
        // syncs valid), T.Pipelined inside a scope runs as a serial loop (pipeline_loops).
        // Outside those scopes no core would run them.
        if (!ctx_.developer() &&
            ((n->for_kind == ForKind::Parallel && ctx_.core() != CoreKind::Vector) ||
             (n->for_kind == ForKind::Pipelined && !ctx_.core())))
          ctx_.error(n->loc, op, "", "developer-loop-in-expert-mode",
                     fmt::format(
                         "{} in an expert kernel is lowered only inside {}; it is {}; "
                         "expected it inside that scope, or T::serial",
                         op,
                         n->for_kind == ForKind::Parallel ? "T::Scope(Core::Vector) (element "
                                                            "loops run on the AIV)"
                                                          : "a T::Scope",
                         ctx_.core() ? fmt::format("in T::Scope(Core::{})", core_name(*ctx_.core()))
                                     : std::string("outside any scope")));
        push();
        bind_var(n->var, n->loc, op);
        walk_block(n->body);
        pop();
        return;
      }
      case StmtKind::If: {
        auto* n = static_cast<const IfNode*>(s.get());
        check_expr(n->cond, n->loc, "T.If", "cond");
        walk_block(n->then_case);
        walk_block(n->else_case);
        return;
      }
      case StmtKind::Let: {
        auto* n = static_cast<const LetNode*>(s.get());
        check_expr(n->value, n->loc, "T.let", n->var.defined() ? n->var.name() : "");
        bind_var(n->var, n->loc, "T.let");
        return;
      }
      case StmtKind::Allocate: {
        auto* n = static_cast<const AllocateNode*>(s.get());
        if (!n->buffer.defined()) return;
        std::string op = n->is_view() ? "T.view" : rules::alloc_title(n->buffer->scope);
        if (n->is_view()) check_buffer_use(n->view_of, n->loc, op, "base");
        for (const auto& e : n->buffer->shape) check_expr(e, n->loc, op, "shape");
        rules::check_allocate(*n, ctx_);
        bind_buffer(n->buffer, n->loc, op);
        return;
      }
      case StmtKind::Store: {
        auto* n = static_cast<const StoreNode*>(s.get());
        std::string op =
            n->buffer.defined() && n->buffer->scope == MemScope::Var ? "T.assign" : "T.store";
        if (!n->buffer.defined()) return;
        check_buffer_use(n->buffer, n->loc, op, n->buffer->name);
        check_scalar_access(n->buffer, n->loc, op, n->buffer->name);
        check_index_count(n->buffer, n->indices.size(), n->loc, op, n->buffer->name);
        for (const auto& i : n->indices) check_expr(i, n->loc, op, "index");
        check_expr(n->value, n->loc, op, "value");
        return;
      }
      case StmtKind::TileOp: {
        auto* n = static_cast<const TileOpNode*>(s.get());
        if (!n->op) {
          ctx_.error(n->loc, "T.<op>", "", "operand-count", "tile op without an OpDef");
          return;
        }
        if (n->op->unit != OpUnit::Debug) require_kernel(n->loc, rules::op_title(*n));
        if (n->op->developer_only && !ctx_.developer())
          ctx_.error(
              n->loc, rules::op_title(*n), "", "developer-op-in-expert-mode",
              fmt::format(
                  "{} is a developer-mode op (the compiler lowers it); an expert kernel "
                  "(T::Kernel with cid and vid) writes the lowered form (gemm: T::copy L1 -> "
                  "L0A/L0B, then T::mma), or use a developer kernel",
                  rules::op_title(*n)));
        for (size_t i = 0; i < n->args.size(); ++i) {
          const auto& specs = n->op->operands;
          std::string name = specs.empty() ? "" : specs[std::min(i, specs.size() - 1)].name;
          const auto& a = n->args[i];
          if (a.is_region()) {
            check_buffer_use(a.region.buffer, n->loc, rules::op_title(*n), name);
            for (const auto& r : a.region.ranges) {
              check_expr(r.min, n->loc, rules::op_title(*n), name);
              check_expr(r.extent, n->loc, rules::op_title(*n), name);
            }
          } else {
            check_expr(a.scalar, n->loc, rules::op_title(*n), name);
          }
        }
        rules::check_tile_op(*n, ctx_);
        return;
      }
      case StmtKind::Sync: {
        auto* n = static_cast<const SyncNode*>(s.get());
        std::string op = fmt::format("T.{}", sync_name(n->sync_kind));
        require_kernel(n->loc, op);
        if (ctx_.developer()) {
          ctx_.error(n->loc, op, "", "developer-user-sync",
                     "a developer kernel (T::Kernel without vid) gets its synchronisation from the "
                     "compiler; "
                     "remove this call, or write an expert kernel (T::Kernel with cid and vid, "
                     "T::Scope) to "
                     "place flags by hand");
          return;
        }
        check_expr(n->event_id, n->loc, op, "event_id");
        rules::check_sync(*n, ctx_);
        return;
      }
      case StmtKind::Scope: {
        auto* n = static_cast<const ScopeNode*>(s.get());
        require_kernel(n->loc, "T.Scope");
        if (ctx_.developer())
          ctx_.error(
              n->loc, "T.Scope", "", "developer-scope",
              fmt::format(
                  "T::Scope({}) in a developer kernel (T::Kernel without vid): the compiler splits "
                  "the work between the cores; remove the scope, or write an expert kernel "
                  "(T::Kernel with cid and vid)",
                  core_name(n->core)));
        if (ctx_.core())
          ctx_.error(n->loc, "T.Scope", "", "nested-scope",
                     fmt::format("T::Scope({}) inside T::Scope({}); expected scopes side by side "
                                 "at kernel level",
                                 core_name(n->core), core_name(*ctx_.core())));
        auto saved = ctx_.core();
        ctx_.set_core(n->core);
        walk_block(n->body);
        ctx_.set_core(saved);
        return;
      }
      case StmtKind::Kernel: {
        auto* n = static_cast<const KernelNode*>(s.get());
        ++kernels_;
        if (kernels_ > 1 || in_kernel_)
          ctx_.error(n->loc, "T.Kernel", "", "kernel-count",
                     in_kernel_ ? std::string("T::Kernel inside another kernel; expected exactly "
                                              "one launch at the top level")
                                : fmt::format("launch #{} of the function; expected exactly one "
                                              "T::Kernel",
                                              kernels_));
        check_expr(n->num_blocks, n->loc, "T.Kernel", "num_blocks");
        if (auto nb = rules::const_int(n->num_blocks); nb && *nb <= 0)
          ctx_.error(n->loc, "T.Kernel", "num_blocks", "kernel-num-blocks",
                     fmt::format("expected a positive number of blocks, got {}", *nb));
        if (n->developer() && n->threads != 1 && n->threads != 2)
          ctx_.error(
              n->loc, "T.Kernel", "threads", "kernel-threads",
              fmt::format(
                  "a developer kernel runs 1 or 2 vector cores per cube core, got threads={}",
                  n->threads));
        bool saved = in_kernel_;
        bool saved_dev = ctx_.developer();
        in_kernel_ = true;
        ctx_.set_developer(n->developer());
        push();
        bind_var(n->cid, n->loc, "T.Kernel");
        bind_var(n->vid, n->loc, "T.Kernel");
        walk_block(n->body);
        if (n->developer()) rules::check_first_reads(n->body, ctx_);
        pop();
        in_kernel_ = saved;
        ctx_.set_developer(saved_dev);
        return;
      }
    }
  }

  VerifyContext ctx_;
  std::vector<Frame> frames_;
  std::unordered_map<const VarNode*, int> live_vars_;
  std::unordered_map<const BufferNode*, int> live_buffers_;
  std::unordered_set<const BufferNode*> params_;
  std::unordered_set<const void*> reported_;  // symbols already reported in this statement
  int kernels_ = 0;
  bool in_kernel_ = false;
};

}  // namespace

std::vector<Diagnostic> verify(const PrimFunc& f, const Target& t, const VerifyOptions& opt) {
  std::vector<Diagnostic> out;
  Walker w(t, out, opt.spec);
  try {
    w.run(f);
  } catch (const InternalError&) {
    throw;  // a broken invariant is a bug to report, not a property of the kernel
  } catch (const std::exception& e) {
    // A rule must never throw; if one does (a bug), keep what was found and say so.
    out.push_back(Diagnostic{"T.prim_func", "", "verifier-internal",
                             fmt::format("the verifier stopped early: {}", e.what()),
                             f ? f->loc : SourceLoc{}, ""});
  }
  return out;
}

void verify_or_throw(const PrimFunc& f, const Target& t, const VerifyOptions& opt) {
  auto ds = verify(f, t, opt);
  if (ds.empty()) return;
  throw Error(fmt::format("kernel '{}' fails verification on target {} ({} error{}):\n{}",
                          f ? f->name : "<null>", t.name, ds.size(), ds.size() == 1 ? "" : "s",
                          format_diagnostics(ds)));
}

}  // namespace tl
