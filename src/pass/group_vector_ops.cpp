// group_vector_ops (lowered developer kernels, before plan_memory, with minimise_syncs): orders
// each run of consecutive vector-unit ops by dependence level, so that insert_syncs needs one
// pipe_barrier(V) per level rather than one per dependent pair in program order. The V pipe
// may overlap consecutive instructions, so every op that reads or overwrites what an earlier op
// of the run touched needs a barrier between them; a barrier drains everything before it. In
// FlashAttention's rescaling, written `l = l * alpha + rs` then `acc = acc * alpha + pv`, program
// order costs two barriers (after l * alpha, after acc * alpha); by level both multiplies come
// first and one barrier serves both adds.
//
// A run is a maximal sequence of tile ops whose every instruction issues on V; anything else (a
// copy, a loop, a branch, a let) ends it. An op's level is one more than the highest level of
// the earlier ops of the run it depends on: a buffer one writes that the other touches (views by
// the buffer they view), or a scratch area both use. Ops then go in level order, program order
// within a level: a topological order of the dependences, so the run computes what it did. The
// fewest barriers any order of the run can have is its longest dependence chain, which this order
// has.
#include <algorithm>

#include "developer.h"
#include "tl/access.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/pass.h"

namespace tl {
namespace {

class Grouper : public IRMutator {
 public:
  Grouper(const Target& t, const dev::ViewBases& views) : target_(t), views_(views) {}

  Stmt mutate_(const SeqNode* n, const Stmt& self) override {
    std::vector<Stmt> stmts;
    bool changed = false;
    for (const Stmt& s : n->stmts) {
      Stmt m = mutate(s);
      changed = changed || !m.same_as(s);
      stmts.push_back(m);
    }
    for (size_t i = 0; i < stmts.size();) {
      size_t j = i;
      while (j < stmts.size() && on_v(stmts[j])) ++j;
      if (j - i >= 3) changed = by_level(stmts, i, j) || changed;
      i = std::max(j, i + 1);
    }
    return changed ? SeqNode::make(std::move(stmts), n->loc) : self;
  }

 private:
  /// A tile op every instruction of which issues on the vector pipe.
  bool on_v(const Stmt& s) const {
    auto* op = s.as<TileOpNode>();
    if (!op || !op->op->pipe || op->op->pipe(*op, target_) != Pipe::V) return false;
    for (const analysis::Instr& in : analysis::instructions(*op, target_))
      if (in.barrier_all || in.pipe != Pipe::V) return false;
    return true;
  }

  /// What `s` touches: its buffers (views as the buffer they view) and scratch areas (by scope).
  struct Use {
    const void* what;
    bool write;
  };
  std::vector<Use> uses(const Stmt& s) const {
    std::vector<Use> out;
    for (const dev::Touch& t : dev::touches_of(s, target_))
      out.push_back({views_.base(t.buffer), t.write});
    if (auto* op = s.as<TileOpNode>())
      for (const analysis::Instr& in : analysis::instructions(*op, target_))
        for (const analysis::Use& u : in.uses)
          if (u.kind == analysis::Use::Scratch)
            out.push_back({&kScratch[static_cast<size_t>(u.scratch)], true});
    return out;
  }
  static bool conflict(const std::vector<Use>& a, const std::vector<Use>& b) {
    for (const Use& x : a)
      for (const Use& y : b)
        if (x.what == y.what && (x.write || y.write)) return true;
    return false;
  }

  /// Reorders stmts[lo, hi) by dependence level; whether the order changed.
  bool by_level(std::vector<Stmt>& stmts, size_t lo, size_t hi) const {
    const size_t n = hi - lo;
    std::vector<std::vector<Use>> u(n);
    for (size_t i = 0; i < n; ++i) u[i] = uses(stmts[lo + i]);
    std::vector<int> level(n, 0);
    for (size_t j = 0; j < n; ++j)
      for (size_t i = 0; i < j; ++i)
        if (conflict(u[i], u[j])) level[j] = std::max(level[j], level[i] + 1);
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return level[a] < level[b]; });
    bool moved = false;
    for (size_t i = 0; i < n; ++i) moved = moved || order[i] != i;
    if (!moved) return false;
    std::vector<Stmt> run;
    for (size_t i : order) run.push_back(stmts[lo + i]);
    std::copy(run.begin(), run.end(), stmts.begin() + static_cast<std::ptrdiff_t>(lo));
    return true;
  }

  static inline const char kScratch[16] = {};  // one address per scope: its scratch area
  const Target& target_;
  const dev::ViewBases& views_;
};

}  // namespace

PrimFunc group_vector_ops(const PrimFunc& f, const Target& target) {
  const KernelNode* k = dev::find_kernel(f);
  if (!k || !k->vid.defined()) return f;
  const dev::ViewBases views(k->body);
  Grouper g(target, views);
  return dev::map_scopes(f, [&](const ScopeNode& sc, const Stmt& s) {
    return sc.core == CoreKind::Vector ? g.mutate(s) : s;
  });
}

}  // namespace tl
