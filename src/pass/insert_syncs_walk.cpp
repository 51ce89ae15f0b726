// insert_syncs' abstract walk: runs the block tree keeping every pending access with the pipes
// that know it is done, iterates loops to a fixpoint, joins if branches, and plans a barrier
// or a set_flag/wait_flag pair (or a loop-carried pair) where an access conflicts with one its
// pipe does not know about. See insert_syncs.cpp's top comment.
#include "insert_syncs_impl.h"

namespace tl {
namespace sync_detail {

void Inserter::run_block(int b, State& st) {
  for (size_t i = 0; i < blocks_[b].nodes.size(); ++i) {
    if (checking_ && unordered_) return;  // prune(): the answer is known
    apply(b, static_cast<int>(i), false, st);
    run_node(blocks_[b].nodes[i], st);
    apply(b, static_cast<int>(i), true, st);
  }
}

void Inserter::run_node(int n, State& st) {
  for (const Instr& in : nodes_[n].instrs) exec(n, in, st);
  const Stmt& s = nodes_[n].s;
  if (s.kind() == StmtKind::For) {
    // Iterate the body to a fixpoint: its entry state joins the state before the loop and
    // the state at the end of the body (the back edge).
    shadow_loop(n, st);
    State entry = st, in = st, out;
    for (int it = 0;; ++it) {
      out = in;
      run_block(nodes_[n].blocks[0], out);
      if (checking_ && unordered_) break;
      State next = join(entry, out);
      if (next == in) break;
      if (it > 64) {  // let the next round finish it (the plan keeps growing until it holds)
        changed_ = true;
        break;
      }
      in = std::move(next);
    }
    auto ext = as_const_int(s.as<ForNode>()->extent);
    st = ext && *ext >= 1 ? out : join(entry, out);  // zero iterations: the state before it
  } else if (s.kind() == StmtKind::If) {
    State other = st;
    run_block(nodes_[n].blocks[0], st);
    if (nodes_[n].blocks.size() > 1) run_block(nodes_[n].blocks[1], other);
    st = join(st, other);
  }
}

void Inserter::apply(int b, int pos, bool after, State& st) {
  auto it = plan_.find({b, pos, after});
  if (it == plan_.end()) return;
  for (const Planned& p : it->second)
    if (!(p.off || (p.flag >= 0 && flags_[p.flag].off))) effect(p, st);
}

void Inserter::effect(const Planned& p, State& st) {
  if (p.kind == Planned::Barrier) {
    for (auto& [k, r] : st)
      if (acc(k).pipe == p.pipe) r.known |= bit(p.pipe) | (p.pipe == Pipe::M ? kMBarriered : 0);
    return;
  }
  const Flag& f = flags_[p.flag];
  for (auto it = st.begin(); it != st.end();) {
    Rec& r = it->second;
    auto c = std::lower_bound(r.carried.begin(), r.carried.end(), p.flag);
    bool has = c != r.carried.end() && *c == p.flag;
    if (p.kind == Planned::Set) {
      // set_flag fires once every earlier instruction of its pipe is done, and carries what
      // that pipe knew.
      if (!has && (acc(it->first).pipe == f.p || (r.known & bit(f.p)))) r.carried.insert(c, p.flag);
    } else if (has) {
      r.carried.erase(c);
      r.known |= bit(f.q);
    }
    it = (r.known & kAllPipes) == kAllPipes ? st.erase(it) : std::next(it);
  }
}

/// An author's set_flag carries every pending access its pipe has done or knows done, as a
/// planned set does; the wait_flag of the same pipe pair and id teaches the waiting pipe all it
/// carries. So an author's pair orders what it orders and the walk plans syncs only for the rest
/// (TileLang-Ascend's auto sync keeps the flags its author wrote: moe_token_unpermute_grad.py).
/// The walk assumes the author's flags balanced: a second set of a key before its wait is a
/// flag error of the program, which the hazard checker reports (docs/virtual_npu.md).
void Inserter::author_flag(const Instr& in, State& st) {
  for (auto it = st.begin(); it != st.end();) {
    Rec& r = it->second;
    auto c = std::lower_bound(r.carried.begin(), r.carried.end(), in.key);
    const bool has = c != r.carried.end() && *c == in.key;
    if (in.kind == Instr::AuthorSet) {
      if (!has && (acc(it->first).pipe == in.pipe || (r.known & bit(in.pipe))))
        r.carried.insert(c, in.key);
    } else if (has) {
      r.carried.erase(c);
      r.known |= bit(in.dst);
    }
    it = (r.known & kAllPipes) == kAllPipes ? st.erase(it) : std::next(it);
  }
}

void Inserter::exec(int n, const Instr& in, State& st) {
  if (in.kind == Instr::BarrierAll) {
    st.clear();
    return;
  }
  if (in.kind == Instr::PipeBarrier) {
    effect({Planned::Barrier, -1, in.pipe}, st);
    return;
  }
  if (in.kind == Instr::AuthorSet || in.kind == Instr::AuthorWait) {
    author_flag(in, st);
    return;
  }
  const Pipe q = in.pipe;
  std::map<Pipe, std::vector<int>> needs;  // by source pipe
  for (const auto& [k, r] : st) {
    const Acc& a = acc(k);
    const bool m_rule = in.small_mmad && a.pipe == Pipe::M && a.write &&
                        a.region.scope == MemScope::L0C && !(r.known & kMBarriered);
    if ((r.known & bit(q)) && !m_rule) continue;
    bool hit = false;
    if (in.kind == Instr::Publish) {
      hit = a.region.scope == MemScope::GM && a.pipe != q;
    } else {
      for (int x : in.accs) {
        // The same access of an earlier iteration of this execution of its loop (shadows
        // hold earlier executions' instances).
        const Acc& b = accs_[x];
        if (k < static_cast<int>(accs_.size()) && a.node == b.node && !b.iteration_key.empty() &&
            a.iteration_key == b.iteration_key)
          continue;
        if ((a.write || accs_[x].write) &&
            conflict(a.region, accs_[x].region, k < static_cast<int>(accs_.size()),
                     a.node == accs_[x].node)) {
          hit = true;
          break;
        }
      }
    }
    if (hit) needs[a.pipe].push_back(k);
  }
  for (const auto& [p, recs] : needs) order(n, p, q, recs, st);
  // Issue: an in-order pipe knows its own instruction is done before its next one starts;
  // the scalar unit's instruction happens before everything issued after it.
  const uint8_t fresh = pipe_orders_later_issue(q) ? kAllPipes : pipe_in_order(q) ? bit(q) : 0;
  if (fresh != kAllPipes)
    for (int x : in.accs) {
      auto [it, added] = st.emplace(x, Rec{fresh, {}});
      if (!added) it->second = Rec{static_cast<uint8_t>(it->second.known & fresh), {}};
    }
  if (pipe_orders_later_issue(q))
    for (auto it = st.begin(); it != st.end();)
      it = (it->second.known & bit(q)) ? st.erase(it) : std::next(it);
}

/// Plans what orders the pending accesses `recs` (all on pipe p) before instruction `in` of
/// node `n` on pipe q, and applies its effect to the state.
void Inserter::order(int n, Pipe p, Pipe q, const std::vector<int>& recs, State& st) {
  // A pair the author orders with flags of run-time ids (the lane-pipelined kernel of
  // moe_token_permute_grad.py: wait_flag("mte2", "v", cur_stage)): left to the author, as it
  // was when the whole scope was left alone; only the other pairs and the barriers are planned.
  if (opaque_.count({p, q}) && ordering_needed(p, q) == Ordering::Flag) {
    for (int r : recs) st[r].known |= bit(q);
    return;
  }
  if (checking_) {
    unordered_ = true;
    for (int r : recs) st[r].known |= bit(q) | (p == Pipe::M && q == Pipe::M ? kMBarriered : 0);
    return;
  }
  // M after M is in order except for the PIPE_M rule of small Mmads: a barrier.
  switch (p == Pipe::M && q == Pipe::M ? Ordering::PipeBarrier : ordering_needed(p, q)) {
    case Ordering::Nothing:
      TL_ASSERT(false, "insert_syncs: {} -> {} needs no order but was unordered", pipe_name(p),
                pipe_name(q));
    case Ordering::PipeBarrier: {
      // Before the destination's statement in the innermost enclosing block that holds a
      // source: a source outside it ran before the block was entered, so a barrier in
      // front of a loop orders it before every iteration at once.
      int x = n;
      while (blocks_[nodes_[x].blk].owner >= 0 &&
             std::none_of(recs.begin(), recs.end(),
                          [&](int r) { return pos_in(acc(r).node, nodes_[x].blk) >= 0; }))
        x = blocks_[nodes_[x].blk].owner;
      auto& at = plan_[{nodes_[x].blk, nodes_[x].pos, false}];
      bool have = std::any_of(at.begin(), at.end(), [&](const Planned& x) {
        return x.kind == Planned::Barrier && x.pipe == q;
      });
      if (!have) {
        at.push_back({Planned::Barrier, -1, q});
        changed_ = true;
      }
      effect({Planned::Barrier, -1, q}, st);
      return;
    }
    case Ordering::Flag:
      break;
  }
  if (coarse_.count({p, q}) || !t_.hard_event_ok(p, q)) {
    adjacent(n, p, q, recs, st);
    return;
  }
  // The nearest enclosing block that holds a source before the destination (same
  // iteration), or a loop body that holds a source after it (over the back edge).
  int x = n;
  while (x >= 0) {
    int blk = nodes_[x].blk, k = nodes_[x].pos;
    int before = -1, any = -1;
    for (int r : recs) {
      int pos = pos_in(acc(r).node, blk);
      if (pos < 0) continue;
      if (pos < k) before = std::max(before, pos);
      any = std::max(any, pos);
    }
    if (before >= 0) {
      add_flag({Flag::Same, p, q, blk, before, k, round_}, n, recs, st);
      return;
    }
    if (blocks_[blk].loop_body && any >= 0) {
      add_flag({Flag::Carried, p, q, blk, any, k, round_}, n, recs, st);
      return;
    }
    x = blocks_[blk].owner;
  }
  adjacent(n, p, q, recs, st);
}

int Inserter::pos_in(int node, int blk) const {
  for (int x = node; x >= 0; x = blocks_[nodes_[x].blk].owner)
    if (nodes_[x].blk == blk) return nodes_[x].pos;
  return -1;
}

/// set_flag + wait_flag right before the destination: always orders every earlier access of
/// p. A pair without a hardware event goes through a pipe that has one both ways.
void Inserter::adjacent(int n, Pipe p, Pipe q, const std::vector<int>& recs, State& st) {
  int blk = nodes_[n].blk, k = nodes_[n].pos;
  if (t_.hard_event_ok(p, q)) {
    add_flag({Flag::Adjacent, p, q, blk, k, k, round_}, n, recs, st, true);
    return;
  }
  for (Pipe r : {Pipe::S, Pipe::V, Pipe::M, Pipe::MTE1, Pipe::MTE2, Pipe::MTE3, Pipe::FIX})
    // Never through a pair the author flags with run-time ids: a planned id there could be
    // one of the author's.
    if (r != p && r != q && t_.hard_event_ok(p, r) && t_.hard_event_ok(r, q) &&
        !opaque_.count({p, r}) && !opaque_.count({r, q})) {
      add_flag({Flag::Adjacent, p, r, blk, k, k, round_}, n, recs, st, true);
      add_flag({Flag::Adjacent, r, q, blk, k, k, round_}, n, recs, st, true);
      return;
    }
  throw Error(nodes_[n].s->loc,
              fmt::format("insert_syncs: no hardware event orders pipe {} before pipe {} on {}, "
                          "not even through a third pipe",
                          pipe_name(p), pipe_name(q), t_.name));
}

void Inserter::add_flag(Flag f, int n, const std::vector<int>& recs, State& st, bool is_fallback) {
  auto same =
      std::find_if(flags_.begin(), flags_.end(), [&](const Flag& g) { return g.key() == f.key(); });
  if (same != flags_.end()) {
    // Planned in an earlier round, so the walk already saw it and it did not order these
    // accesses (its set came before a source it was meant to follow): fall back.
    if (same->round < round_) {
      TL_ASSERT(!is_fallback,
                "insert_syncs: set+wait of {} -> {} right before the destination did not order it",
                pipe_name(f.p), pipe_name(f.q));
      adjacent(n, f.p, f.q, recs, st);
      return;
    }
  } else {
    int id = static_cast<int>(flags_.size());
    flags_.push_back(f);
    changed_ = true;
    auto at = [&](int blk, int pos, bool after) -> std::vector<Planned>& {
      return plan_[{blk, pos, after}];
    };
    switch (f.kind) {
      case Flag::Same:
        at(f.blk, f.set_pos, true).push_back({Planned::Set, id});
        at(f.blk, f.wait_pos, false).push_back({Planned::Wait, id});
        break;
      case Flag::Carried: {
        const Node& loop = nodes_[blocks_[f.blk].owner];
        at(loop.blk, loop.pos, false).push_back({Planned::Set, id});
        at(f.blk, f.set_pos, true).push_back({Planned::Set, id});
        at(f.blk, f.wait_pos, false).push_back({Planned::Wait, id});
        at(loop.blk, loop.pos, true).push_back({Planned::Wait, id});
        break;
      }
      case Flag::Adjacent:
        at(f.blk, f.wait_pos, false).push_back({Planned::Set, id});
        at(f.blk, f.wait_pos, false).push_back({Planned::Wait, id});
        break;
    }
  }
  // This round's walk has passed the set already: assume the plan holds (the next round
  // checks it).
  for (int r : recs)
    if (auto it = st.find(r); it != st.end()) it->second.known |= bit(f.q);
}

}  // namespace sync_detail
}  // namespace tl
