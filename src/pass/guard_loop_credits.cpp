// guard_loop_credits (lowered developer kernels, last, with minimise_syncs): a loop credit's
// pre-set and drain become guards on the loop's wait and set, as gemm_pipelined writes its slot
// credits (`if g >= 2: wait_flag`, `if g + 2 < g_end: set_flag`). insert_syncs balances a flag
// that crosses a loop's back edge with a set before the loop and a wait after it, which is right
// for any trip count but runs two syncs per flag that order nothing: the first iteration's wait
// only consumes the pre-set, and the drain only the last iteration's set. Here the wait skips
// the first execution of its statement and the set the last one, and the pre-set and the drain
// go.
//
// A unit is a flag whose statements are exactly a set and a wait in one block (the pre-set and
// the drain) around a loop, and one wait followed by one set in a block inside that loop. The
// wait's guard is "not every loop around it at its first iteration". The set's guard is "some
// loop around it has a next iteration that reaches the set": the loop's variable + 1 is still in
// range and the conditions between it and the set hold for that iteration (the inner loops at
// their first), lets inlined (a persistent tile loop's `if tile < tiles`). The guards are exact
// when those conditions hold for a prefix of the iterations, as T::Persistent's do; the replay
// proves each unit on every block (block_replay: ordered, finishing, every set consumed), and a
// unit it cannot prove keeps its pre-set and drain.
#include <array>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "developer.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/pass.h"
#include "tl/replay.h"

namespace tl {
namespace {

constexpr int64_t kMaxBlocks = 64;                // as elide_implied_syncs
constexpr size_t kMaxReplayedEvents = 5'000'000;  // all candidate replays together

/// A loop or a branch around the loop's wait and set, from the credit's loop inward; a branch's
/// condition has the lets before it inlined, so that it can be asked about the next iteration.
struct Level {
  const ForNode* loop = nullptr;  // else a branch
  Expr cond;                      // a branch: its condition (lets inlined)
};

/// The lets of `block` before `index`, inlined into `lets` (each value with the earlier ones in).
void add_lets(const SeqNode* block, size_t index, arith::VarMap& lets) {
  if (!block) return;
  for (size_t i = 0; i < index; ++i)
    if (auto* l = block->stmts[i].as<LetNode>())
      lets[l->var.node()] = arith::substitute(l->value, lets);
}

/// Guards for the unit's wait (skip the first execution) and set (skip the last), or nullopt
/// when the flag is not a unit.
struct Guards {
  const dev::FlagSite *pre_set, *wait, *set, *drain;
  Expr not_first, not_last;
};
std::optional<Guards> unit_guards(const std::vector<dev::FlagSite>& s) {
  if (s.size() != 4) return std::nullopt;
  const dev::FlagSite &p = s[0], &w = s[1], &x = s[2], &d = s[3];
  auto is = [](const dev::FlagSite& f, SyncKind k) { return f.sync()->sync_kind == k; };
  if (!is(p, SyncKind::SetFlag) || !is(w, SyncKind::WaitFlag) || !is(x, SyncKind::SetFlag) ||
      !is(d, SyncKind::WaitFlag) || !p.block || p.block != d.block || !w.block ||
      w.block != x.block || w.index >= x.index)
    return std::nullopt;
  const size_t depth = p.path.size();
  // The wait and set sit in a loop of the pre-set's block, between the pre-set and the drain.
  if (w.path.size() <= depth || w.path[depth].block != p.block || w.path[depth].index <= p.index ||
      w.path[depth].index >= d.index || w.path[depth].node->kind != StmtKind::For)
    return std::nullopt;
  arith::VarMap lets;
  std::vector<Level> levels;
  for (size_t i = depth; i < w.path.size(); ++i) {
    const auto& step = w.path[i];
    add_lets(step.block, step.index, lets);
    if (step.node->kind == StmtKind::For)
      levels.push_back({static_cast<const ForNode*>(step.node), {}});
    else
      levels.push_back(
          {nullptr, arith::substitute(static_cast<const IfNode*>(step.node)->cond, lets)});
  }
  // A statement in a branch's else case would need the negated condition: not a unit.
  for (size_t i = depth; i < w.path.size(); ++i)
    if (w.path[i].node->kind == StmtKind::If) {
      auto* b = static_cast<const IfNode*>(w.path[i].node);
      const StmtNode* inner = i + 1 < w.path.size() ? w.path[i + 1].node : nullptr;
      bool in_then = false;
      pre_order_visit(b->then_case, [&](const Stmt& t) {
        in_then = in_then || (inner ? t.get() == inner : t.get() == w.stmt.get());
      });
      if (!in_then) return std::nullopt;
    }
  Expr not_first, not_last;
  for (size_t j = levels.size(); j-- > 0;) {
    const ForNode* l = levels[j].loop;
    if (!l) continue;
    const Expr v(l->var);
    Expr later = v > l->min;
    not_first = not_first.defined() ? (not_first || later) : later;
    // The next iteration of loop j, the loops inside it at their first.
    arith::VarMap next{{l->var.node(), v + 1}};
    Expr reaches = v + 1 < l->min + l->extent;
    for (size_t i = j + 1; i < levels.size(); ++i) {
      if (levels[i].loop)
        next[levels[i].loop->var.node()] = levels[i].loop->min;
      else
        reaches = reaches && arith::substitute(levels[i].cond, next);
    }
    // Innermost loop first: it reads as "a next panel, or a next tile that runs".
    not_last = not_last.defined() ? (not_last || reaches) : reaches;
  }
  return Guards{&p, &w, &x, &d, simplify(not_first), simplify(not_last)};
}

/// `body` with the unit's pre-set and drain gone and its wait and set guarded.
Stmt guarded(const Stmt& body, const Guards& g) {
  const Stmt &wait = g.wait->stmt, &set = g.set->stmt;
  return dev::replaced(body, {{g.pre_set->stmt.get(), Stmt()},
                              {g.drain->stmt.get(), Stmt()},
                              {wait.get(), IfNode::make(g.not_first, wait, {}, wait->loc)},
                              {set.get(), IfNode::make(g.not_last, set, {}, set->loc)}});
}

/// Guards the units one at a time, in program order of the flags, keeping each rewrite for which
/// `holds(trial)` is true; the sites of a guarded unit's neighbours do not move (only its
/// own statements change), but their blocks are rebuilt: recollect. `*units`: the units asked.
template <class Holds>
bool guard_units(std::array<Stmt, 2>& bodies, Holds&& holds, size_t* units) {
  bool changed = false;
  for (size_t done = 0;; ++done) {
    auto sites = dev::flag_sites(bodies.data());
    if (done >= sites.size()) break;
    auto it = std::next(sites.begin(), static_cast<std::ptrdiff_t>(done));
    auto g = unit_guards(it->second);
    if (!g) continue;
    ++*units;
    const int scope = std::get<0>(it->first);
    std::array<Stmt, 2> trial = bodies;
    trial[scope] = guarded(bodies[scope], *g);
    if (!holds(trial)) continue;
    bodies[scope] = trial[scope];
    changed = true;
  }
  return changed;
}

/// The (scope, source, destination) pairs of the intra-core sets and waits of `bodies` whose id
/// is not a constant: at run time such a flag may share a unit's queue.
std::set<std::tuple<int, Pipe, Pipe>> computed_ids(const std::array<Stmt, 2>& bodies) {
  std::set<std::tuple<int, Pipe, Pipe>> out;
  for (int scope = 0; scope < 2; ++scope)
    if (bodies[scope].defined())
      pre_order_visit(bodies[scope], [&](const Stmt& s) {
        auto* y = s.as<SyncNode>();
        if (y && (y->sync_kind == SyncKind::SetFlag || y->sync_kind == SyncKind::WaitFlag) &&
            !y->event_id.as<IntImmNode>())
          out.insert({scope, y->src, y->dst});
      });
  return out;
}

/// Whether no tile op of `body` comes before its statement `first` or after its statement `last`
/// in program order.
bool bare_ends(const Stmt& body, const StmtNode* first, const StmtNode* last) {
  bool seen_first = false, seen_last = false, bare = true;
  pre_order_visit(body, [&](const Stmt& s) {
    seen_first = seen_first || s.get() == first;
    seen_last = seen_last || s.get() == last;
    if (s.as<TileOpNode>() && (!seen_first || seen_last)) bare = false;
  });
  return bare;
}

/// Every unit guarded at once, asked in one question, where that answer is the sequence of
/// questions' (docs/compiler.md, "Compile latency"): the bodies the loop of guard_loop_credits
/// ends with when every one of its questions holds, or nullopt (then the loop asks them one by
/// one, as without the shortcut). A unit's flag queue is its own (its four statements are all
/// of its flag's, and no flag of its pipes has a computed id), so guarding it only removes two
/// happens-before edges (the pre-set to the first wait, the last set to the drain) and two
/// events of its own queue. With every unit guarded the replay has a subset of the order each
/// question's replay has (the same ops, every clock at most as far), so each conflict a question
/// would find the joint replay finds too; each guarded queue runs as it does in the question
/// that guards it, and each unguarded one as in the bodies as they are (which replay clean). So
/// if the joint replay is clean, every question's is, and the budget is checked for all of them
/// (Prover::holds_all).
///
/// Where the joint question fails it is one question more than the sequence, so it is asked only
/// where it is expected to hold: every unit's pre-set comes before every op of its scope and its
/// drain after every op (gemm_dev's credits), so that the two edges guarding removes carry
/// nothing (the pre-set's pipe has issued nothing; nothing runs after the drain). Where a
/// prologue runs first (flash_attention_dev), a unit's pre-set may order it, and the questions
/// are asked one by one. The choice changes the cost only, never the answer.
std::optional<std::array<Stmt, 2>> all_at_once(const std::array<Stmt, 2>& bodies,
                                               replay::Prover& prover) {
  if (!replay::shortcuts()) return std::nullopt;
  // Decided on the bodies as they are, before any rewrite (the units' walk below recollects the
  // sites once per flag): guarding a unit moves no other flag's statements and no op.
  const auto computed = computed_ids(bodies);
  size_t found = 0;
  for (const auto& [key, sites] : dev::flag_sites(bodies.data())) {
    auto g = unit_guards(sites);
    if (!g) continue;
    ++found;
    const int scope = std::get<0>(key);
    if (computed.count({scope, g->wait->sync()->src, g->wait->sync()->dst}) ||
        !bare_ends(bodies[scope], g->pre_set->stmt.get(), g->drain->stmt.get()))
      return std::nullopt;
  }
  if (found < 2) return std::nullopt;  // one unit is one question either way
  std::array<Stmt, 2> joint = bodies;
  size_t units = 0;
  const bool changed = guard_units(
      joint, [](const std::array<Stmt, 2>&) { return true; }, &units);
  if (!changed || units != found || !prover.holds_all(joint.data(), units)) return std::nullopt;
  return joint;
}

}  // namespace

PrimFunc guard_loop_credits(const PrimFunc& f, const Target& target) {
  const KernelNode* k = dev::find_kernel(f);
  if (!k || !k->vid.defined()) return f;
  std::array<Stmt, 2> bodies = dev::scope_bodies(*k);
  replay::Prover prover(*k, bodies.data(), target, kMaxBlocks, kMaxReplayedEvents);
  if (!prover.clean()) return f;
  if (auto joint = all_at_once(bodies, prover)) return dev::with_scope_bodies(f, *joint);
  size_t units = 0;
  const bool changed = guard_units(
      bodies, [&](const std::array<Stmt, 2>& trial) { return prover.holds(trial.data()); }, &units);
  if (!changed) return f;
  return dev::with_scope_bodies(f, bodies);
}

}  // namespace tl
