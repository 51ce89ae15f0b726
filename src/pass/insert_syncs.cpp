// insert_syncs (tl/pass.h): the synchronisation of a developer kernel, written by the compiler.
// Each T::Scope without synchronisation of its own becomes a tree of blocks (the scope body,
// loop bodies, if branches) whose statements issue instructions (pipe + conservative byte
// ranges per memory, from the planned addresses, so plan_memory's reuse counts). An abstract
// walk keeps every access that some pipe has not yet seen complete (all of them, not only the
// latest per buffer) with the pipes that know it is done and the flags in flight that carry it,
// iterates loops to a fixpoint and joins if branches (pending: union; knowledge: intersection).
// When an access conflicts with a pending one its pipe does not know about, the rule table
// (tl/sync_rules.h, shared with the hazard checker) says what orders them: pipe_barrier for a
// pipe that overlaps itself, otherwise a set_flag/wait_flag pair placed in the nearest block
// that holds both ends (set right after the source statement, wait right before the
// destination), or around a loop for a dependence over its back edge (pre-set before the loop,
// wait/set in the body, drain after it: balanced for any trip count). Placements are planned,
// the walk reruns until it finds nothing unordered, and event ids are coloured by live interval
// per pipe pair within the target's budget (a pair that runs out is coarsened to set+wait next
// to the destination; failing that, an error lists the live flags).
#include "insert_syncs_impl.h"

namespace tl {
namespace sync_detail {

/// The scope body with its syncs; undefined when it needs none.
Stmt Inserter::run() {
  for (;;) {
    reset();
    for (round_ = 0;; ++round_) {
      TL_ASSERT(round_ < 10000, "insert_syncs: the analysis does not converge");
      changed_ = false;
      State st;
      run_block(body_, st);
      if (!changed_) break;
    }
    if (minimise_) prune();
    if (colour()) break;
  }
  bool any = std::any_of(flags_.begin(), flags_.end(), [](const Flag& f) { return !f.off; });
  for (const auto& [at, list] : plan_)
    for (const Planned& p : list) any |= p.kind == Planned::Barrier && !p.off;
  return any ? rebuild_block(body_) : Stmt();
}

void Inserter::shadow_loop(int loop, State& st) const {
  State moved;
  for (auto it = st.begin(); it != st.end();) {
    if (it->first < static_cast<int>(accs_.size()) && inside(acc(it->first).node, loop)) {
      int key = it->first + static_cast<int>(accs_.size());
      join_into(moved, key, it->second);
      it = st.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [k, r] : moved) join_into(st, k, r);
}

/// Syncs are planned greedily, one need at a time, so a barrier or flag planned early may be
/// implied by flags planned later (one set orders all earlier work of its pipe, and flags
/// carry what their pipe knew). Drop each one whose absence leaves nothing unordered, the
/// last planned first.
bool Inserter::still_ordered() {
  checking_ = true;
  unordered_ = false;
  State st;
  run_block(body_, st);
  checking_ = false;
  return !unordered_;
}
void Inserter::prune() {
  std::vector<Planned*> barriers;
  for (auto& [at, list] : plan_)
    for (Planned& p : list)
      if (p.kind == Planned::Barrier) barriers.push_back(&p);
  for (Planned* b : barriers) {
    b->off = true;
    if (!still_ordered()) b->off = false;
  }
  for (size_t i = flags_.size(); i-- > 0;) {
    flags_[i].off = true;
    if (!still_ordered()) flags_[i].off = false;
  }
}

// ---- event ids ----------------------------------------------------------------------------

/// Colours flag ids per pipe pair by live interval. False (and the pair coarsened) when a
/// pair runs out; throws when a coarsened pair still does.
bool Inserter::colour() {
  std::vector<int> all_ids;
  for (int i = 0; i < t_.num_event_ids; ++i)
    if (std::find(t_.reserved_event_ids.begin(), t_.reserved_event_ids.end(), i) ==
        t_.reserved_event_ids.end())
      all_ids.push_back(i);
  std::map<std::pair<Pipe, Pipe>, std::vector<int>> by_pair;
  for (size_t i = 0; i < flags_.size(); ++i) {
    Flag& f = flags_[i];
    if (f.off) continue;
    const Block& b = blocks_[f.blk];
    switch (f.kind) {
      case Flag::Same:
        f.lo = nodes_[b.nodes[f.set_pos]].end;
        f.hi = nodes_[b.nodes[f.wait_pos]].start;
        break;
      case Flag::Carried: {
        const Node& loop = nodes_[b.owner];
        f.lo = loop.start;
        f.hi = loop.end;
        break;
      }
      case Flag::Adjacent:
        f.lo = f.hi = nodes_[b.nodes[f.wait_pos]].start;
        break;
    }
    by_pair[{f.p, f.q}].push_back(static_cast<int>(i));
  }
  for (auto& [pair, fs] : by_pair) {
    // The ids the author uses for this pipe pair are theirs wherever they are live: a planned
    // flag with one of them could consume the author's set, or be consumed by its wait.
    std::vector<int> ids = all_ids;
    if (auto a = author_ids_.find(pair); a != author_ids_.end())
      std::erase_if(ids, [&](int id) { return a->second.count(id) > 0; });
    std::sort(fs.begin(), fs.end(), [&](int a, int b) { return flags_[a].lo < flags_[b].lo; });
    std::vector<int> busy_until(ids.size(), INT_MIN);  // per id: the end of its last interval
    std::vector<int> holder(ids.size(), -1);
    for (int i : fs) {
      Flag& f = flags_[i];
      size_t c = 0;
      while (c < ids.size() && busy_until[c] >= f.lo) ++c;
      if (c == ids.size()) {
        if (!coarse_.count(pair)) {
          coarse_.insert(pair);
          return false;
        }
        std::string live;
        for (size_t j = 0; j < ids.size(); ++j)
          live +=
              fmt::format("\n  set_flag(\"{}\", \"{}\", {}) live from {}", pipe_name(pair.first),
                          pipe_name(pair.second), ids[j], describe(flags_[holder[j]]));
        throw Error(
            nodes_[blocks_[f.blk].nodes[f.wait_pos]].s->loc,
            fmt::format(
                "insert_syncs: more than {} {} -> {} flags are live at once on {} (event ids {}); "
                "the live flags:{}{}",
                ids.size(), pipe_name(pair.first), pipe_name(pair.second), t_.name,
                fmt::join(ids, ", "), live, authors_note(pair)));
      }
      busy_until[c] = f.hi;
      holder[c] = i;
      f.id = ids[c];
    }
  }
  return true;
}

/// Why a pipe pair has fewer ids than the chip: the ids the scope's author uses on it.
std::string Inserter::authors_note(std::pair<Pipe, Pipe> pair) const {
  auto a = author_ids_.find(pair);
  if (a == author_ids_.end()) return "";
  return fmt::format(
      "\n  (the author's set_flag/wait_flag in this scope use {} -> {} event id(s) {}: those are "
      "theirs; give the author's flags fewer ids, or write all of this scope's syncs by hand "
      "without TL_ASCEND_AUTO_SYNC)",
      pipe_name(pair.first), pipe_name(pair.second), fmt::join(a->second, ", "));
}

std::string Inserter::describe(const Flag& f) const {
  const Block& b = blocks_[f.blk];
  return fmt::format("{} to {}", nodes_[b.nodes[f.set_pos]].s->loc.str(),
                     nodes_[b.nodes[f.wait_pos]].s->loc.str());
}

// ---- output -------------------------------------------------------------------------------

Stmt Inserter::sync_stmt(const Planned& p, const SourceLoc& loc) const {
  if (p.kind == Planned::Barrier)
    return SyncNode::make(SyncKind::PipeBarrier, p.pipe, Pipe::S, Expr(), 0, loc, SyncOrigin::Auto);
  const Flag& f = flags_[p.flag];
  return SyncNode::make(p.kind == Planned::Set ? SyncKind::SetFlag : SyncKind::WaitFlag, f.p, f.q,
                        Expr(f.id), 0, loc, SyncOrigin::Auto);
}

Stmt Inserter::rebuild_block(int b) const {
  std::vector<Stmt> out;
  const Block& blk = blocks_[b];
  for (size_t i = 0; i < blk.nodes.size(); ++i) {
    const Node& nd = nodes_[blk.nodes[i]];
    auto emit = [&](bool after) {
      auto it = plan_.find({b, static_cast<int>(i), after});
      if (it != plan_.end())
        for (const Planned& p : it->second)
          if (!(p.off || (p.flag >= 0 && flags_[p.flag].off)))
            out.push_back(sync_stmt(p, nd.s->loc));
    };
    emit(false);
    out.push_back(rebuild_node(blk.nodes[i]));
    emit(true);
  }
  return SeqNode::make(std::move(out));
}

Stmt Inserter::rebuild_node(int n) const {
  const Node& nd = nodes_[n];
  if (auto* f = nd.s.as<ForNode>())
    return ForNode::make(f->var, f->min, f->extent, f->for_kind, f->num_stages, f->skew,
                         rebuild_block(nd.blocks[0]), f->loc);
  if (auto* f = nd.s.as<IfNode>())
    return IfNode::make(f->cond, rebuild_block(nd.blocks[0]),
                        nd.blocks.size() > 1 ? rebuild_block(nd.blocks[1]) : Stmt(), f->loc);
  return nd.s;
}

/// A scope is left as written when it holds a set_flag / wait_flag from an earlier run (the pass
/// is idempotent). An author's flags with constant ids are run over as TileLang-Ascend's
/// auto sync does (moe_token_unpermute_grad.py writes its own mte2 -> v and mte3 -> v pairs and
/// leaves the rest to the compiler; left alone, that scope raced on its other pipe pairs): each
/// pair orders what it orders, the compiler plans syncs for the rest and gives its own flags
/// ids the author does not use on that pipe pair. Cross-core flags, the
/// author's or the compiler's, are kept and respected: TileLang-Ascend's auto sync writes the
/// intra-core syncs of a scope whose author wrote only its cross-core flags (int8_gemm.py), and
/// that scope left alone raced on its own pipes. So are an author's barriers (pipe_barrier,
/// barrier_all): TileLang-Ascend's auto sync runs over them (moe_token_unpermute.py's
/// `pipe_barrier("mte3")` between an MTE3 read of a tile and the next iteration's MTE2 write
/// into it orders only MTE3, and left alone that scope raced); the walk counts what they order.
bool has_compiler_syncs(const Stmt& body) {
  bool found = false;
  pre_order_visit(body, [&](const Stmt& s) {
    auto* y = s.as<SyncNode>();
    found |= y && (y->sync_kind == SyncKind::SetFlag || y->sync_kind == SyncKind::WaitFlag) &&
             y->origin != SyncOrigin::User;
  });
  return found;
}

/// The pipe pairs of an author's flags whose id is not a constant (or out of the modelled
/// range): the walk cannot tell which wait such a set reaches. Before, a scope holding one was
/// left as written, so its other pairs and its V -> V barriers went missing where
/// TileLang-Ascend's auto sync inserts them (it runs over any author flags, and brackets each
/// `if` with PipeBarrier(PIPE_ALL): moe_token_permute_grad.py's 14 unordered pairs). Now those
/// pairs are left to the author and the rest is planned (docs/tla_races.md, corpus2 round).
std::set<std::pair<Pipe, Pipe>> opaque_pairs(const Stmt& body) {
  std::set<std::pair<Pipe, Pipe>> out;
  pre_order_visit(body, [&](const Stmt& s) {
    auto* y = s.as<SyncNode>();
    if (!y || (y->sync_kind != SyncKind::SetFlag && y->sync_kind != SyncKind::WaitFlag)) return;
    auto id = as_const_int(y->event_id);
    if (!id || *id < 0 || *id >= kMaxAuthorEventId) out.insert({y->src, y->dst});
  });
  return out;
}

struct ScopeRewriter : IRMutator {
  const Target& t;
  const bool minimise;
  ScopeRewriter(const Target& tg, bool m) : t(tg), minimise(m) {}
  Stmt mutate_(const ScopeNode* n, const Stmt& self) override {
    if (has_compiler_syncs(n->body)) return self;
    // The scalar unit's GM accesses get their data-cache maintenance first
    // (src/pass/insert_dcci.cpp), so that the walk orders each dcci after the DMA writes it must
    // follow.
    Stmt with_dcci = dev::with_dcci(n->body, t);
    Stmt body = Inserter(with_dcci, t, minimise, opaque_pairs(n->body)).run();
    if (body.defined()) return ScopeNode::make(n->core, body, n->loc);
    return with_dcci.same_as(n->body) ? self : ScopeNode::make(n->core, with_dcci, n->loc);
  }
};

}  // namespace sync_detail

PrimFunc insert_syncs(const PrimFunc& f, const Target& target, bool minimise) {
  Stmt body = sync_detail::ScopeRewriter(target, minimise).mutate(f->body);
  return body.same_as(f->body) ? f : with_body(f, body);
}

}  // namespace tl
