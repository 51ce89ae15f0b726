// The unroll's fold (tl/replay.h, Stream; docs/compiler.md, "Compile latency", the eighth
// round): a loop's middle iterations walked once, with the loop variable unknown in their range,
// and kept as one iteration with its count where every iteration would emit the same events.
// What must hold, and why it is enough:
// - every decision the body takes (a branch, a trip count, an event id, a loop bound) is one
//   value over the range (arith::bound with the lets inlined, as for cid's ranges), or reads
//   neither the variable nor a let of it (then every iteration takes it alike, decided or not);
// - every span that reads the variable is either the same bytes for the whole range (one value)
//   or of a GM tensor no op of the kernel writes: the replay keeps records only of memories
//   some op writes (replay_run.cpp, `shadow_of`), and its fold compares only their spans, so
//   such a span decides nothing; the stored iteration holds it as the whole tensor.
// A Prover's rewrite reuses a recording's op events by execution index: the recording lists the
// loops it folded (OpEvents::folds), and a rewrite's walk must fold exactly those.
#include "block_replay_unroller.h"

namespace tl::replay::walk {

/// Walks `f`'s body once with its variable unknown in [lo, hi] (cid's range mechanism: every
/// decision must be one value over the range, arith::bound) and, where every decision is and
/// every span of a memory some op writes is one and the same for every value of the range,
/// keeps the walk as one iteration repeated hi - lo + 1 times (Stream::repeat): the events
/// the walk of each iteration would have emitted, but for spans of memories no op writes (the
/// whole memory here). Otherwise undoes the walk (false) and the caller walks each iteration.
bool Unroller::fold(const ForNode& f, int64_t lo, int64_t hi) {
  if (hi < lo + 1) return false;
  const VarNode* var = f.var.node();
  const int64_t count = hi - lo + 1;
  // A rewrite's walk takes its op events from the recording, so it cannot check their spans:
  // it folds where the recording did (whose walk checked them) and its own decisions allow,
  // and walks where the recording walked. A rewrite rebuilds the loops it moves syncs in: a
  // loop is known by its variable.
  if (reuse_) {
    const bool known = folds_at_ < reuse_->folds.size() && reuse_->folds[folds_at_].first == var;
    const int64_t recorded = known ? reuse_->folds[folds_at_].second : 0;
    ++folds_at_;
    if (!known || (recorded != count && recorded != -1)) {
      missed_ = true;
      fail();
      return false;
    }
    if (recorded == -1) return false;
  }
  const size_t at = out_.stored().size(), emitted = emitted_;
  const size_t trace_at = trace_ ? trace_->size() : 0, arena_at = arena_->size();
  const Expr split = split_;
  env_.erase(var);
  lin_.erase(var);
  probing_ = true;
  probe_failed_ = false;
  probe_var_ = var;
  tainted_.clear();
  tainted_atoms_.clear();
  tainted_atoms_.insert(atom_of(var));
  undo_.clear();
  range_[var] = arith::Interval{lo, hi};
  walk(f.body);
  range_.erase(var);
  sym_.erase(var);
  probing_ = false;
  split_ = split;
  bool ok = !probe_failed_ && !failed_;
  probe_failed_ = false;
  if (reuse_ && !ok) {  // the recording folded here; the rewrite decides otherwise
    missed_ = true;
    fail();
    return false;
  }
  if (record_) record_->folds.push_back({var, ok ? count : -1});
  if (!ok) {
    for (const TileOpNode* op : undo_) {
      if (reuse_)
        --taken_[op];
      else if (record_)
        record_->ranges[op].pop_back();
    }
    out_.stored().resize(at);
    arena_->resize(arena_at);
    if (trace_) trace_->resize(trace_at);
    emitted_ = emitted;
    return false;
  }
  if (trace_) trace_->push_back({&f, count});
  const size_t len = emitted_ - emitted;
  if (!trace_only_) out_.repeat(at, static_cast<size_t>(count));
  // Past kMaxEvents the walk of the last iteration fails, as the walk of each would have.
  emitted_ += len * static_cast<size_t>(count - 1);
  return true;
}

namespace {

/// Whether an expression reads one of `vars` (an IRVisitor: no IR built to visit it).
struct Reads : IRVisitor {
  explicit Reads(const std::unordered_set<const VarNode*>& v) : vars(v) {}
  bool operator()(const Expr& e) {
    hit = false;
    visit(e);
    return hit;
  }
  void visit_(const VarNode* n) override { hit = hit || vars.count(n) > 0; }
  const std::unordered_set<const VarNode*>& vars;
  bool hit = false;
};

}  // namespace

bool Unroller::writes_moving(const ForNode& f) {
  auto [it, fresh] = moving_.try_emplace(f.body.get(), false);
  if (!fresh) return it->second;
  std::unordered_set<const VarNode*> reads{f.var.node()};
  Reads reads_var(reads);
  bool moving = false;
  pre_order_visit(f.body, [&](const Stmt& x) {
    if (moving) return;
    if (auto* l = x.as<LetNode>(); l && reads_var(l->value)) reads.insert(l->var.node());
    auto* op = x.as<TileOpNode>();
    if (!op) return;
    for (const analysis::Instr& in : instrs_of(*op))
      for (const analysis::Use& u : in.uses) {
        if (!u.write || u.kind == analysis::Use::Scratch || u.kind == analysis::Use::Scalar)
          continue;
        for (const Range& r : op->args[static_cast<size_t>(u.arg)].region.ranges)
          if (reads_var(r.min) || (r.extent.defined() && reads_var(r.extent))) moving = true;
      }
  });
  return moving_[f.body.get()] = moving;
}

/// While fold() walks: whether `e`, which value() could not decide, is decided as every
/// iteration of the range would decide it (`*v`: the value); else the fold fails. An
/// expression that reads neither the loop variable nor a let of it is undecided in every
/// iteration alike (the walk takes the path it takes in each: nothing to decide).
bool Unroller::probe_decides(const Expr& e, std::optional<int64_t>& v) {
  if (!reads_probe(e)) return true;
  if (auto r = ranged(e)) return v = r, true;
  probe_fail();
  return false;
}
bool Unroller::reads_probe(const BufferRegion& r) const {
  for (const Range& x : r.ranges)
    if (reads_probe(x.min) || (x.extent.defined() && reads_probe(x.extent))) return true;
  return false;
}
/// While fold() walks: whether `e` reads the loop variable or a let of it.
bool Unroller::reads_probe(const Expr& e) const {
  struct Probe : IRVisitor {
    const Unroller& u;
    bool hit = false;
    explicit Probe(const Unroller& x) : u(x) {}
    void visit_(const VarNode* n) override {
      hit = hit || n == u.probe_var_ || u.tainted_.count(n) > 0;
    }
  } probe(*this);
  probe.visit(e);
  return probe.hit;
}
/// While fold() walks: whether linear form `l` reads the loop variable (or a let of it).
bool Unroller::tainted(const Linear& l) const {
  for (const auto& t : l.terms())
    if (tainted_atoms_.count(t.first)) return true;
  return false;
}

}  // namespace tl::replay::walk
