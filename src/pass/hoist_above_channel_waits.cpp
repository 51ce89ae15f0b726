// hoist_above_channel_waits (lowered developer kernels, before plan_memory, with
// minimise_syncs): moves work that does not need a channel's data above the copy that receives
// it. insert_channel_syncs puts a cross-core wait right before each receiving copy, and a core
// issues nothing past a cross-core wait until the other core's flag arrives, so whatever
// follows the receive in program order idles with it. In FlashAttention the cube receives P
// and then loads P and V into L0A and L0B: V's load needs nothing from the vector unit, and
// hoisted above the receive it runs while the cube waits for P. On the vector side the
// rescaling of the output accumulator (acc * alpha) moves above the receive of P V.
//
// A tile op moves above a receive when it commutes with everything it passes: no buffer that
// one of them writes is touched by the other (by buffer, views by the buffer they view, so
// before plan_memory shares any bytes), and it is neither a channel copy nor a sync. The scan
// stops at anything that is not a tile op (a loop, a branch, a let, a scalar store), at the next
// channel copy, at a debug print or a cache operation, and after a few statements. Ops keep their
// order among themselves; insert_syncs and insert_channel_syncs, which run later, order the new
// program.
#include <set>

#include "developer.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/pass.h"

namespace tl {
namespace {

constexpr size_t kMaxScan = 16;  // statements after a receive the scan looks at

class Hoister : public IRMutator {
 public:
  Hoister(const Target& t, std::set<const BufferNode*> workspaces, const dev::ViewBases& views)
      : target_(t), workspaces_(std::move(workspaces)), views_(views) {}

  Stmt mutate_(const SeqNode* n, const Stmt& self) override {
    std::vector<Stmt> stmts;
    bool changed = false;
    for (const Stmt& s : n->stmts) {
      Stmt m = mutate(s);
      changed = changed || !m.same_as(s);
      stmts.push_back(m);
    }
    for (size_t i = 0; i < stmts.size(); ++i)
      if (receives(stmts[i])) changed = hoist(stmts, i) || changed;
    return changed ? SeqNode::make(std::move(stmts), n->loc) : self;
  }

 private:
  /// A copy between a workspace and a core's buffer: `into` the workspace (a push) or out.
  bool channel_copy(const Stmt& s, bool* into = nullptr) const {
    auto* op = s.as<TileOpNode>();
    if (!op || op->op != &ops::copy() || op->args.size() != 2) return false;
    for (int which : {0, 1})
      if (op->args[which].is_region() && workspaces_.count(op->args[which].region.buffer.get())) {
        if (into) *into = which == 1;
        return true;
      }
    return false;
  }
  bool receives(const Stmt& s) const {
    bool into = false;
    return channel_copy(s, &into) && !into;
  }

  /// Whether `a` and `b` may run in either order: neither writes a buffer the other touches.
  bool commute(const Stmt& a, const Stmt& b) const {
    const auto ta = dev::touches_of(a, target_), tb = dev::touches_of(b, target_);
    for (const dev::Touch& x : ta)
      for (const dev::Touch& y : tb)
        if (views_.base(x.buffer) == views_.base(y.buffer) && (x.write || y.write)) return false;
    return true;
  }

  /// Moves the ops after the receive at `i` that commute with everything between above it;
  /// `i` then points at the receive again.
  bool hoist(std::vector<Stmt>& stmts, size_t& i) {
    std::vector<Stmt> passed{stmts[i]}, moved;
    size_t j = i + 1;
    for (; j < stmts.size() && j - i <= kMaxScan; ++j) {
      const Stmt& s = stmts[j];
      auto* op = s.as<TileOpNode>();
      // A debug print or a cache operation keeps its place among the rest: stop there.
      if (!op || channel_copy(s) || op->op->unit == OpUnit::Debug || op->op->unit == OpUnit::Scalar)
        break;
      bool free = true;
      for (const Stmt& p : passed) free = free && commute(s, p);
      (free ? moved : passed).push_back(s);
    }
    if (moved.empty()) return false;
    std::vector<Stmt> out(stmts.begin(), stmts.begin() + static_cast<std::ptrdiff_t>(i));
    out.insert(out.end(), moved.begin(), moved.end());
    out.insert(out.end(), passed.begin(), passed.end());
    out.insert(out.end(), stmts.begin() + static_cast<std::ptrdiff_t>(j), stmts.end());
    stmts = std::move(out);
    i += moved.size();
    return true;
  }

  const Target& target_;
  const std::set<const BufferNode*> workspaces_;
  const dev::ViewBases& views_;
};

}  // namespace

PrimFunc hoist_above_channel_waits(const PrimFunc& f, const Target& target) {
  const KernelNode* k = dev::find_kernel(f);
  if (!k || !k->vid.defined()) return f;
  std::set<const BufferNode*> workspaces;
  pre_order_visit(k->body, [&](const Stmt& s) {
    if (auto* a = s.as<AllocateNode>(); a && !a->is_view() && a->buffer->scope == MemScope::GM)
      workspaces.insert(a->buffer.get());
  });
  if (workspaces.empty()) return f;
  const dev::ViewBases views(k->body);
  Hoister h(target, workspaces, views);
  return dev::map_scopes(f, [&](const ScopeNode&, const Stmt& s) { return h.mutate(s); });
}

}  // namespace tl
