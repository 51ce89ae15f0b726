// Builds the executable form of a kernel: a slot for every variable, and an on-chip address
// for every buffer (explicit addresses honoured; otherwise placed in allocation order at the
// scope's alignment). Liveness-based reuse is the compiler's plan_memory pass (issue 5).
#include "program.h"

#include <fmt/ranges.h>

#include "exec.h"

#include <limits>

#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/storage.h"

namespace tl::npu {
namespace {

/// `v` rounded up to a multiple of `a`, saturating at INT64_MAX (beyond every capacity).
int64_t align_up(int64_t v, int64_t a) {
  if (a <= 1 || v % a == 0) return v;
  int64_t r = 0;
  return __builtin_add_overflow(v, a - v % a, &r) ? std::numeric_limits<int64_t>::max() : r;
}

[[noreturn]] void unbound_buffer(const PrimFuncNode& f, const Buffer& b, const SourceLoc& loc) {
  throw Error(
      loc, fmt::format(
               "buffer '{}' ({}) is used in kernel '{}' but is neither one of its parameters nor "
               "allocated in it (a buffer of another kernel?); compile with verification on to "
               "see every such use",
               b->name, scope_name(b->scope), f.name));
}

/// Every variable and buffer the kernel uses must be bound in it: one of another kernel (its
/// loop variable, its buffer) has no slot or placement here. The verifier reports such uses
/// [undefined-var, undefined-buffer]; a kernel compiled without it is checked here, so that the
/// executor never meets a symbol it cannot resolve.
class BoundSymbols : public IRVisitor {
 public:
  explicit BoundSymbols(const Program& p) : p_(p) {}
  using IRVisitor::visit;
  void visit(const Stmt& s) override {
    if (!s.defined()) return;
    loc_ = s->loc;  // a statement's own expressions are visited before its nested statements
    IRVisitor::visit(s);
  }
  void visit_buffer(const Buffer& b) override {
    if (!b.defined()) return;
    if (!p_.buffer_index.count(b.get())) unbound_buffer(*p_.func, b, loc_);
    for (const auto& e : b->shape) visit(e);
  }

 protected:
  void visit_(const VarNode* v) override {
    if (!p_.var_slot.count(v))
      throw Error(
          loc_,
          fmt::format("variable '{}' is used in kernel '{}' but bound nowhere in it (a loop "
                      "variable or T::let of another kernel?); compile with verification on to "
                      "see every such use",
                      v->name, p_.func->name));
  }

 private:
  const Program& p_;
  SourceLoc loc_;
};

class Planner : public IRVisitor {
 public:
  Planner(Program& p) : p_(p) {}

  void add_var(const Var& v) { p_.var_slot.emplace(v.node(), p_.num_slots++); }

  void visit_(const ForNode* n) override {
    add_var(n->var);
    IRVisitor::visit_(n);
  }
  void visit_(const LetNode* n) override {
    add_var(n->var);
    IRVisitor::visit_(n);
  }
  void visit_(const KernelNode* n) override {
    if (n->developer())
      throw Error(n->loc,
                  "the virtual NPU runs expert kernels: this developer kernel (T::Kernel without "
                  "vid) was not "
                  "lowered; was a developer-mode pass (split_cube_vector) disabled?");
    add_var(n->cid);
    add_var(n->vid);
    if (!p_.kernel) p_.kernel = n;
    IRVisitor::visit_(n);
  }
  void visit_(const TileOpNode* n) override {
    if (n->op->unit == OpUnit::Cube) p_.has_cube_code = true;
    IRVisitor::visit_(n);
  }
  void visit_(const SyncNode* n) override {
    if (n->sync_kind == SyncKind::SyncAll) {
      p_.uses_sync_all = true;
      p_.sync_all_kinds |= core_ == 0 ? 3 : core_;
    }
    IRVisitor::visit_(n);
  }
  void visit_(const ScopeNode* n) override {
    if (n->core == CoreKind::Cube) p_.has_cube_code = true;
    int saved = core_;
    core_ = n->core == CoreKind::Cube ? 1 : 2;
    IRVisitor::visit_(n);
    core_ = saved;
  }
  void visit_(const AllocateNode* n) override {
    const BufferNode& b = *n->buffer;
    if (p_.buffer_index.count(&b)) return;
    if (n->is_view()) {
      // A view occupies its base's bytes: the base's placement with the view's dtype (the
      // verifier has checked scope, shape and width).
      if (!p_.buffer_index.count(n->view_of.get())) unbound_buffer(*p_.func, n->view_of, n->loc);
      BufferInfo info = p_.buffer(n->view_of.get());
      info.node = &b;
      p_.buffer_index.emplace(&b, static_cast<int>(p_.buffers.size()));
      p_.buffers.push_back(info);
      return;
    }
    BufferInfo info;
    info.node = &b;
    info.scope = b.scope;
    if (b.scope == MemScope::GM) {
      // A workspace: its tensor is allocated by each launch (launch.cpp), after the parameters.
      info.param = static_cast<int>(p_.func->params.size() + p_.workspaces.size());
      p_.workspaces.push_back(&b);
      p_.buffer_index.emplace(&b, static_cast<int>(p_.buffers.size()));
      p_.buffers.push_back(info);
      return;
    }
    if (b.scope == MemScope::Var) {
      info.slot = p_.num_slots++;
    } else {
      std::vector<int64_t> shape;
      for (const auto& s : b.shape) {
        auto v = as_const_int(s);
        if (!v || *v <= 0)
          throw Error(n->loc, fmt::format("buffer '{}': on-chip buffer shapes must be positive "
                                          "constants, got {}",
                                          b.name, v ? std::to_string(*v) : "a symbolic size"));
        shape.push_back(*v);
      }
      info.bytes = storage_bytes(b.scope, b.dtype, shape);  // saturates beyond int64
      int64_t& cursor = p_.scope_bytes[static_cast<size_t>(b.scope)];
      int64_t align = planning_alignment(*p_.target, b.scope);
      info.offset = b.address >= 0 ? b.address : align_up(cursor, align);
      // The executor indexes the core's memory with these bytes, so they must lie inside it
      // before anything runs, whether or not the kernel was verified (checked arithmetic: an
      // address near INT64_MAX must not wrap below the capacity).
      const int64_t cap = p_.target->cap(b.scope);
      int64_t end = 0;
      if (info.bytes == std::numeric_limits<int64_t>::max() ||
          __builtin_add_overflow(info.offset, info.bytes, &end) || (cap > 0 && end > cap))
        throw Error(
            n->loc,
            fmt::format("buffer '{}' ({} x {}) at byte {} needs {} bytes, beyond the {} bytes of "
                        "{} on {}",
                        b.name, fmt::join(shape, " x "), dtype_name(b.dtype), info.offset,
                        info.bytes, cap, scope_name(b.scope), p_.target->name));
      cursor = std::max(cursor, b.address >= 0 ? align_up(end, align) : end);
      info.shape = shape;
      info.strides.assign(shape.size(), 1);  // info.bytes is exact, so no stride overflows
      for (size_t d = shape.size(); d-- > 1;) info.strides[d - 1] = info.strides[d] * shape[d];
      rows_.push_back(fmt::format("  {:<16} {:<8} {:>14} {:>10} {:>10}  {}", b.name,
                                  scope_name(b.scope), fmt::format("{}", dtype_name(b.dtype)),
                                  info.offset, info.bytes, n->loc.str()));
      scope_rows_[static_cast<size_t>(b.scope)].push_back(rows_.back());
    }
    p_.buffer_index.emplace(&b, static_cast<int>(p_.buffers.size()));
    p_.buffers.push_back(info);
  }

  void check_capacities() {
    for (int s = 0; s < kNumMemScopes; ++s) {
      int64_t cap = p_.target->cap(static_cast<MemScope>(s));
      if (cap > 0 && p_.scope_bytes[s] > cap) {
        std::string table;
        for (const auto& r : scope_rows_[s]) table += r + "\n";
        throw Error(fmt::format(
            "{} needs {} bytes, capacity {} on {}; buffers:\n  {:<16} {:<8} {:>14} "
            "{:>10} {:>10}  {}\n{}",
            scope_name(static_cast<MemScope>(s)), p_.scope_bytes[s], cap, p_.target->name, "name",
            "scope", "dtype", "offset", "bytes", "source", table));
      }
    }
  }

 private:
  Program& p_;
  int core_ = 0;  // enclosing scope: 0 none, 1 Cube, 2 Vector
  std::vector<std::string> rows_;
  std::array<std::vector<std::string>, kNumMemScopes> scope_rows_;
};

}  // namespace

void Program::no_slot(const VarNode* v) {
  TL_ASSERT(false, "variable {} has no slot", v->name);
  std::abort();
}

void Program::not_planned(const BufferNode* b) {
  TL_ASSERT(false, "buffer {} was not planned", b->name);
  std::abort();
}

std::shared_ptr<Program> build_program(const PrimFunc& f, const Target& t) {
  check_op_tables();
  auto p = std::make_shared<Program>();
  p->func = f;
  p->target = &t;
  Planner planner(*p);
  for (const auto& d : f->dynamics) planner.add_var(d);
  for (size_t i = 0; i < f->params.size(); ++i) {
    const auto& prm = f->params[i];
    if (prm.is_tensor()) {
      BufferInfo info;
      info.node = prm.tensor.get();
      info.scope = MemScope::GM;
      info.param = static_cast<int>(i);
      p->buffer_index.emplace(prm.tensor.get(), static_cast<int>(p->buffers.size()));
      p->buffers.push_back(info);
    } else {
      planner.add_var(prm.scalar);
    }
  }
  planner.visit(f->body);
  if (!p->kernel) throw Error(f->loc, fmt::format("kernel {} has no T::Kernel launch", f->name));
  BoundSymbols(*p).visit(f->body);
  planner.check_capacities();
  // After BoundSymbols: every buffer an op names is planned.
  struct OverlapFree : IRVisitor {
    Program& p;
    explicit OverlapFree(Program& q) : p(q) {}
    using IRVisitor::visit_;
    void visit_(const TileOpNode* n) override {
      if (n->op->unit == OpUnit::Vector && overlap_free(p, *n)) p.overlap_free_ops.emplace(n, 1);
      IRVisitor::visit_(n);
    }
  };
  OverlapFree(*p).visit(f->body);
  return p;
}

}  // namespace tl::npu
