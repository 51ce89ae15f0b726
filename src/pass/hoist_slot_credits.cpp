// hoist_slot_credits (lowered developer kernels, after insert_syncs; tl/pass.h): a loop that
// insert_syncs gave back-edge credits (slot credits of a T.Pipelined loop: "MTE1 has read this
// L1 slot, MTE2 may refill it") pre-sets each credit flag before the loop and drains it after.
// When that loop (with the remainder a pipelined loop leaves after it, up to the drains) sits
// in the body of an enclosing serial loop (the K loop of a persistent GEMM inside its tile
// loop), paying the pre-set and the drain on every outer iteration orders nothing new: each
// credit's event id belongs to one slot, so the token the last inner iteration of tile t sets
// is exactly the permission the first inner iteration of tile t + 1 waits for, as if the inner
// loop had simply gone on. Those pre-sets and drains move out of the outer loop, so the next
// tile's loads start while the last tile drains, as gemm_pipelined does by hand (issue 13,
// "slot continuity across an enclosing persistent loop").
//
// The move is made only when nothing else in the outer body (outside that region) uses the
// flag or issues work on either of its pipes: then the drain-and-re-set pair orders nothing
// that the flag's own waits inside the inner loop do not. A flag balanced before stays
// balanced (one set before the outer loop, one wait after it), for any trip counts, zero
// included.
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "developer.h"
#include "tl/access.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/pass.h"

namespace tl {
namespace {

struct FlagKey {
  Pipe src, dst;
  int64_t id;
  auto operator<=>(const FlagKey&) const = default;
};

/// The auto set/wait_flag `s` is, with a constant event id, or nullopt.
std::optional<FlagKey> auto_flag(const Stmt& s, SyncKind kind) {
  auto* n = s.as<SyncNode>();
  if (!n || n->sync_kind != kind || n->origin != SyncOrigin::Auto) return std::nullopt;
  auto* id = n->event_id.as<IntImmNode>();
  if (!id) return std::nullopt;
  return FlagKey{n->src, n->dst, id->value};
}

/// The first block (Seq) of `s`, searched through blocks and ifs but not into loops, that holds a
/// loop directly, and that loop's index in it.
const SeqNode* block_with_loop(const Stmt& s, size_t& at) {
  if (!s.defined()) return nullptr;
  if (auto* q = s.as<SeqNode>()) {
    for (size_t i = 0; i < q->stmts.size(); ++i)
      if (q->stmts[i].as<ForNode>()) {
        at = i;
        return q;
      }
    for (const Stmt& c : q->stmts)
      if (auto* b = block_with_loop(c, at)) return b;
  } else if (auto* i = s.as<IfNode>()) {
    if (auto* b = block_with_loop(i->then_case, at)) return b;
    return block_with_loop(i->else_case, at);
  } else if (s.as<ForNode>()) {
    return nullptr;
  }
  return nullptr;
}

/// Removes the statements at `drop` (indices) from the one block `block` of a statement tree
/// (found by identity: IR nodes may be shared, so a statement is dropped only where it stands).
class Remover : public IRMutator {
 public:
  Remover(const SeqNode* block, const std::set<size_t>& drop) : block_(block), drop_(drop) {}

 protected:
  Stmt mutate_(const SeqNode* n, const Stmt& self) override {
    if (n != block_) return IRMutator::mutate_(n, self);
    std::vector<Stmt> kept;
    for (size_t i = 0; i < n->stmts.size(); ++i)
      if (!drop_.count(i)) kept.push_back(n->stmts[i]);
    return SeqNode::make(std::move(kept), n->loc);
  }

 private:
  const SeqNode* block_;
  const std::set<size_t>& drop_;
};

class Hoister : public IRMutator {
 public:
  explicit Hoister(const Target& t) : target_(t) {}

 protected:
  Stmt mutate_(const ForNode* n, const Stmt& self) override {
    Stmt s = IRMutator::mutate_(n, self);  // inner loops first: their credits may rise further
    const auto* outer = s.as<ForNode>();
    if (outer->for_kind != ForKind::Serial) return s;
    size_t at = 0;
    const SeqNode* block = block_with_loop(outer->body, at);
    if (!block) return s;
    // The pre-sets right before the first inner loop. The region they guard runs from that loop
    // to the drains: for each pre-set flag, its last wait in the block (a pipelined loop's
    // remainder after the loop uses the same credits).
    std::map<FlagKey, size_t> presets, drains;
    for (size_t i = at; i-- > 0;) {
      auto k = auto_flag(block->stmts[i], SyncKind::SetFlag);
      if (!k) break;
      presets.emplace(*k, i);
    }
    for (size_t i = at + 1; i < block->stmts.size(); ++i)
      if (auto k = auto_flag(block->stmts[i], SyncKind::WaitFlag); k && presets.count(*k))
        drains[*k] = i;
    if (presets.empty() || drains.empty()) return s;
    size_t first_drain = block->stmts.size(), last_drain = 0;
    for (const auto& [k, i] : drains)
      first_drain = std::min(first_drain, i), last_drain = std::max(last_drain, i);
    for (size_t i = first_drain; i <= last_drain; ++i)  // the drains are one run of auto waits
      if (!auto_flag(block->stmts[i], SyncKind::WaitFlag)) return s;
    std::set<const StmtNode*> region;
    for (size_t i = at; i < first_drain; ++i) region.insert(block->stmts[i].get());
    std::vector<FlagKey> hoist;
    for (const auto& [k, set] : presets)
      if (drains.count(k) && untouched_outside(outer->body, region, k, block->stmts[set].get(),
                                               block->stmts[drains.at(k)].get()))
        hoist.push_back(k);
    if (hoist.empty()) return s;
    std::set<size_t> drop;
    std::vector<Stmt> before, after;
    for (size_t i = 0; i < block->stmts.size(); ++i)  // original order
      for (const FlagKey& k : hoist)
        if (presets.at(k) == i || drains.at(k) == i) {
          (i < at ? before : after).push_back(block->stmts[i]);
          drop.insert(i);
        }
    Remover remover(block, drop);
    Stmt loop =
        ForNode::make(outer->var, outer->min, outer->extent, outer->for_kind, outer->num_stages,
                      outer->skew, remover.mutate(outer->body), outer->loc);
    std::vector<Stmt> out = std::move(before);
    out.push_back(loop);
    out.insert(out.end(), after.begin(), after.end());
    return SeqNode::make(std::move(out), outer->loc);
  }

 private:
  /// True when no statement of `body` outside `region` (the pre-set and the drain excepted)
  /// uses flag `k` or issues work on its pipes.
  bool untouched_outside(const Stmt& body, const std::set<const StmtNode*>& region,
                         const FlagKey& k, const StmtNode* set, const StmtNode* drain) const {
    bool clean = true;
    walk_outside(body, region, [&](const Stmt& s) {
      if (s.get() == set || s.get() == drain) return;
      if (auto* y = s.as<SyncNode>()) {
        if (y->sync_kind == SyncKind::BarrierAll) clean = false;
        auto* id = y->event_id.as<IntImmNode>();
        bool flag = y->sync_kind == SyncKind::SetFlag || y->sync_kind == SyncKind::WaitFlag;
        if (flag && y->src == k.src && y->dst == k.dst && (!id || id->value == k.id)) clean = false;
      } else if (auto* t = s.as<TileOpNode>()) {
        Pipe p = t->op->pipe(*t, target_);
        if (p == k.src || p == k.dst || p == Pipe::ALL) clean = false;
        for (const analysis::Instr& in : analysis::instructions(*t, target_))
          if (in.barrier_all || in.pipe == k.src || in.pipe == k.dst) clean = false;
      } else if (s.as<StoreNode>() || s.as<LetNode>() || s.as<IfNode>() || s.as<ForNode>()) {
        if (k.src == Pipe::S || k.dst == Pipe::S) clean = false;  // scalar work is the S pipe's
      }
    });
    return clean;
  }

  static void walk_outside(const Stmt& s, const std::set<const StmtNode*>& region,
                           const std::function<void(const Stmt&)>& f) {
    if (!s.defined() || region.count(s.get())) return;
    f(s);
    if (auto* q = s.as<SeqNode>()) {
      for (const Stmt& c : q->stmts) walk_outside(c, region, f);
    } else if (auto* i = s.as<IfNode>()) {
      walk_outside(i->then_case, region, f);
      walk_outside(i->else_case, region, f);
    } else if (auto* l = s.as<ForNode>()) {
      walk_outside(l->body, region, f);
    } else if (auto* c = s.as<ScopeNode>()) {
      walk_outside(c->body, region, f);
    }
  }

  const Target& target_;
};

}  // namespace

PrimFunc hoist_slot_credits(const PrimFunc& f, const Target& target) {
  Hoister h(target);
  Stmt body = h.mutate(f->body);
  return body.same_as(f->body) ? f : with_body(f, body);
}

}  // namespace tl
