// split_hybrid (split_hybrid.h): a TileLang-Ascend hybrid kernel with cube work, written as one
// body without T.Scope (`T.Kernel(n, is_npu=True) as (cid, vid)`, hardware buffers,
// tl.ascend_auto_cv_combine), becomes the Cube scope and the Vector scope it stands for.
//
// Which core runs what (docs/python.md, "Hybrid kernels"):
//   - a tile op runs where its operands live (op_core: a copy by its path, GM->L1 and L0C->GM
//     on the cube, GM<->UB on the AIVs; gemm and L0 loads on the cube; vector ops on the AIVs);
//     an op with no core of its own goes to the core of its on-chip operand; a debug print to
//     both;
//   - an element store goes to the core owning the buffer it writes or an on-chip buffer it
//     reads; a store to a scalar variable (T.alloc_var) otherwise to both (each core has its
//     own); a store between GM tensors and scalars alone to the cube, as in TileLang-Ascend (it
//     runs once per block there, where both AIVs would run it twice);
//   - an author's sync goes to the core owning its pipes (M, MTE1, FIX: cube; V, MTE3:
//     vector); one on pipes both cores have (MTE2, S, a wait for a cross-core flag) goes with
//     the next statement that has a core (what it guards), else the previous one;
//   - lets, loops and ifs go to each scope whose part of their body is not empty (a loop runs
//     in both scopes with its body filtered); a let nobody in a scope reads is left out of it;
//     the kernel's allocations and its leading lets stay at kernel level, before both scopes;
//     a T.Pipelined loop runs as a serial loop (expert kernels pipeline by hand).
// The cube runs once per block: cube code reading vid (the AIV's index) or a UB buffer (the
// AIVs' memory), directly or through a let, is an error naming it.
//
// With tl.ascend_auto_cross_core_sync each GM tensor one core writes and the other reads is a
// channel, and insert_channel_syncs (the developer kernels' cross-core protocol) orders it:
// the producer raises a flag after its write, the consumer waits for it before its read and,
// in a loop, hands a credit back after it so the next write waits (both AIVs count: a mode-2
// flag of the AIC counts for both, an AIC wait needs both AIVs' sets). That protocol pairs one
// write with one read per iteration, as TileLang-Ascend pairs a workspace's producer and
// consumer: a tensor crossing cores in another pattern is an error naming it, never a hang or a
// race.
#include <functional>
#include <map>
#include <set>

#include "developer.h"
#include "split_hybrid.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/pass.h"

namespace tl::hybrid {
namespace {

/// Where a statement runs: one core, both (a debug print), or with its neighbours (a sync on
/// pipes both cores have).
enum class Where { Cube, Vector, Both, Next, None };

Where of_core(CoreKind c) {
  return c == CoreKind::Cube ? Where::Cube : Where::Vector;
}

std::optional<CoreKind> pipe_core(Pipe p) {
  switch (p) {
    case Pipe::M:
    case Pipe::MTE1:
    case Pipe::FIX:
      return CoreKind::Cube;
    case Pipe::V:
    case Pipe::MTE3:
      return CoreKind::Vector;
    default:
      return std::nullopt;
  }
}

/// Calls `on` for every variable and every buffer an expression (or a whole statement) loads.
class Reads : public IRVisitor {
 public:
  std::function<void(const VarNode*)> on_var = [](const VarNode*) {};
  std::function<void(const BufferNode*)> on_load = [](const BufferNode*) {};

 protected:
  void visit_(const VarNode* n) override { on_var(n); }
  void visit_(const LoadNode* n) override {
    on_load(n->buffer.get());
    IRVisitor::visit_(n);
  }
};

class Splitter {
 public:
  Splitter(const Target& t, const KernelNode& k) : t_(t), k_(k) {}

  /// Where the leaf statement `s` runs.
  Where leaf(const Stmt& s) const {
    if (auto* op = s.as<TileOpNode>()) {
      if (auto c = op_core(*op, t_)) return of_core(*c);
      if (op->op->unit == OpUnit::Debug) return Where::Both;
      for (const auto& a : op->args)
        if (a.is_region())
          if (auto c = t_.memory_core(a.region.buffer->scope)) return of_core(*c);
      return Where::Cube;
    }
    if (auto* st = s.as<StoreNode>()) {
      if (auto c = t_.memory_core(st->buffer->scope)) return of_core(*c);
      std::optional<CoreKind> read;
      Reads r;
      r.on_load = [&](const BufferNode* b) {
        if (!read) read = t_.memory_core(b->scope);
      };
      r.visit(s);
      if (read) return of_core(*read);
      // A scalar variable (T.alloc_var) is each core's own: both keep it up to date.
      return st->buffer->scope == MemScope::Var ? Where::Both : Where::Cube;
    }
    if (auto* y = s.as<SyncNode>()) {
      switch (y->sync_kind) {
        case SyncKind::SetFlag:
        case SyncKind::WaitFlag:
          if (auto c = pipe_core(y->src)) return of_core(*c);
          if (auto c = pipe_core(y->dst)) return of_core(*c);
          return Where::Next;
        case SyncKind::PipeBarrier:
        case SyncKind::SetCrossFlag:
          if (auto c = pipe_core(y->src)) return of_core(*c);
          return Where::Next;
        case SyncKind::SyncAll:
          return Where::Both;
        default:
          return Where::Next;
      }
    }
    if (auto* a = s.as<AllocateNode>()) {
      if (auto c = t_.memory_core(a->buffer->scope)) return of_core(*c);
      return Where::Both;
    }
    return Where::None;
  }

  /// The core of the first statement of `s` that has one (Both and Next say nothing).
  std::optional<CoreKind> first_core(const Stmt& s) const {
    if (!s.defined()) return std::nullopt;
    if (auto* q = s.as<SeqNode>()) {
      for (const Stmt& x : q->stmts)
        if (auto c = first_core(x)) return c;
      return std::nullopt;
    }
    if (auto* f = s.as<ForNode>()) return first_core(f->body);
    if (auto* n = s.as<IfNode>()) {
      if (auto c = first_core(n->then_case)) return c;
      return first_core(n->else_case);
    }
    const Where w = leaf(s);
    if (w == Where::Cube) return CoreKind::Cube;
    if (w == Where::Vector) return CoreKind::Vector;
    return std::nullopt;
  }

  /// `s`'s part for `core` (undefined when it has none).
  Stmt part(const Stmt& s, CoreKind core) const {
    if (!s.defined()) return s;
    if (auto* q = s.as<SeqNode>()) return seq_part(q->stmts, core, s->loc);
    if (auto* f = s.as<ForNode>()) {
      Stmt body = part(f->body, core);
      if (!body.defined()) return body;
      // T.Pipelined is lowered in developer kernels only: here it runs as the serial loop it
      // means (each iteration ordered by the flags; no overlap of iterations, so no result
      // depends on a stage count).
      const bool pipelined = f->for_kind == ForKind::Pipelined;
      return ForNode::make(f->var, f->min, f->extent, pipelined ? ForKind::Serial : f->for_kind,
                           pipelined ? 0 : f->num_stages, body, f->loc);
    }
    if (auto* n = s.as<IfNode>()) {
      Stmt a = part(n->then_case, core), b = part(n->else_case, core);
      if (!a.defined() && !b.defined()) return Stmt();
      return IfNode::make(n->cond, a.defined() ? a : SeqNode::make({}, n->loc), b, n->loc);
    }
    return seq_part({s}, core, s->loc);
  }

 private:
  Stmt seq_part(const std::vector<Stmt>& stmts, CoreKind core, const SourceLoc& loc) const {
    std::vector<Stmt> out;
    std::optional<CoreKind> prev;
    for (size_t i = 0; i < stmts.size(); ++i) {
      const Stmt& s = stmts[i];
      if (s.as<LetNode>()) {
        out.push_back(s);  // kept for now: dropped below when nothing after it reads it
        continue;
      }
      if (s.as<SeqNode>() || s.as<ForNode>() || s.as<IfNode>()) {
        if (Stmt p = part(s, core); p.defined()) out.push_back(p);
        if (auto c = first_core(s)) prev = c;
        continue;
      }
      Where w = leaf(s);
      if (w == Where::Next) {
        std::optional<CoreKind> next;
        for (size_t j = i + 1; j < stmts.size() && !next; ++j) next = first_core(stmts[j]);
        const CoreKind c = next ? *next : prev ? *prev : CoreKind::Vector;
        w = of_core(c);
      }
      if (w == Where::Both || w == of_core(core)) out.push_back(s);
      if (w == Where::Cube || w == Where::Vector)
        prev = w == Where::Cube ? CoreKind::Cube : CoreKind::Vector;
    }
    // A let is kept where a later statement of the block reads it; a block of lets alone is
    // no work.
    std::vector<Stmt> kept;
    bool work = false;
    for (size_t i = 0; i < out.size(); ++i) {
      if (auto* let = out[i].as<LetNode>()) {
        bool used = false;
        Reads r;
        r.on_var = [&](const VarNode* v) { used = used || v == let->var.node(); };
        for (size_t j = i + 1; j < out.size() && !used; ++j) r.visit(out[j]);
        if (used) kept.push_back(out[i]);
        continue;
      }
      work = true;
      kept.push_back(out[i]);
    }
    return work ? SeqNode::make(std::move(kept), loc) : Stmt();
  }

  const Target& t_;
  const KernelNode& k_;
};

/// The variables whose value depends on what only an AIV has: vid and the lets computed from it
/// or from a UB load.
std::set<const VarNode*> vector_only_vars(const Stmt& body, const KernelNode& k, const Target& t) {
  std::set<const VarNode*> vars{k.vid.node()};
  pre_order_visit(body, [&](const Stmt& s) {
    auto* let = s.as<LetNode>();
    if (!let) return;
    bool tainted = false;
    Reads r;
    r.on_var = [&](const VarNode* v) { tainted = tainted || vars.count(v); };
    r.on_load = [&](const BufferNode* b) {
      tainted = tainted || t.memory_core(b->scope) == CoreKind::Vector;
    };
    r.visit(let->value);
    if (tainted) vars.insert(let->var.node());
  });
  return vars;
}

/// The cube's statements may not read what only an AIV has: the first that does is an error.
void check_cube_part(const Stmt& s, const std::set<const VarNode*>& vector_vars, const Target& t) {
  if (!s.defined()) return;
  auto bad = [&](const std::function<void(Reads&)>& visit) {
    std::string what;
    Reads r;
    r.on_var = [&](const VarNode* v) {
      if (what.empty() && vector_vars.count(v)) what = fmt::format("'{}'", v->name);
    };
    r.on_load = [&](const BufferNode* b) {
      if (what.empty() && t.memory_core(b->scope) == CoreKind::Vector)
        what = fmt::format("the UB buffer '{}'", b->name);
    };
    visit(r);
    return what;
  };
  auto fail = [&](const Stmt& at, const std::string& what) {
    user_error(at->loc,
               "{} is cube work in a hybrid kernel (tl.ascend_auto_cv_combine) and reads {}, "
               "which only an AIV has (vid is the AIV's index, 0 or 1; UB is the AIVs' memory): "
               "the cube runs once per block, so its work may depend on cid, not on vid or on UB "
               "values",
               dev::describe(at), what);
  };
  if (auto* q = s.as<SeqNode>()) {
    for (const Stmt& x : q->stmts) check_cube_part(x, vector_vars, t);
  } else if (auto* f = s.as<ForNode>()) {
    if (auto w = bad([&](Reads& r) { r.visit(f->min), r.visit(f->extent); }); !w.empty())
      fail(s, w);
    check_cube_part(f->body, vector_vars, t);
  } else if (auto* n = s.as<IfNode>()) {
    if (auto w = bad([&](Reads& r) { r.visit(n->cond); }); !w.empty()) fail(s, w);
    check_cube_part(n->then_case, vector_vars, t);
    check_cube_part(n->else_case, vector_vars, t);
  } else if (!s.as<LetNode>()) {  // a let the cube keeps is read by a statement checked here
    if (auto w = bad([&](Reads& r) { r.visit(s); }); !w.empty()) fail(s, w);
  }
}

}  // namespace

PrimFunc split(const PrimFunc& f, const KernelNode& k, const Stmt& body, const Target& t,
               bool cross_syncs) {
  Splitter split(t, k);
  // Kernel level: every top-level allocation and the leading lets, shared by both scopes.
  std::vector<Stmt> top, rest;
  for (const Stmt& s : dev::stmts_of(body)) {
    if (s.as<AllocateNode>() || (rest.empty() && s.as<LetNode>()))
      top.push_back(s);
    else
      rest.push_back(s);
  }
  const Stmt work = SeqNode::make(rest, k.loc);
  Stmt cube = split.part(work, CoreKind::Cube), vec = split.part(work, CoreKind::Vector);
  check_cube_part(cube, vector_only_vars(body, k, t), t);
  if (cube.defined()) top.push_back(ScopeNode::make(CoreKind::Cube, cube, k.loc));
  if (vec.defined()) top.push_back(ScopeNode::make(CoreKind::Vector, vec, k.loc));
  PrimFunc out = dev::with_kernel_body(f, std::move(top));
  if (!cross_syncs) return out;
  return mark_channels(out, work, t, [&split](const Stmt& s) { return split.first_core(s); });
}

}  // namespace tl::hybrid
