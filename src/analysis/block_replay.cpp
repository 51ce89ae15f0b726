// block_replay (tl/replay.h): the streams of one block's three cores (unroll_one), each walked
// by the unroller (block_replay_unroller.h), and the replay's shortcut switches.
#include "tl/replay.h"

#include "block_replay_unroller.h"

#include <atomic>

namespace tl::replay {
namespace {

using walk::Interner;
using walk::Unroller;

/// Whether the scalar unit reads or writes memory anywhere in `body` (a store, or a load in any
/// expression): the streams leave scalar instructions out, so no access of theirs is checked.
bool memory_on_s(const Stmt& body) {
  if (!body.defined()) return false;
  bool hit = false;
  pre_order_visit(
      body,
      [&](const Stmt& x) {
        if (auto* st = x.as<StoreNode>(); st && st->buffer->scope != MemScope::Var) hit = true;
      },
      [&](const Expr& e) {
        if (auto* l = e.as<LoadNode>(); l && l->buffer->scope != MemScope::Var) hit = true;
      });
  return hit;
}

}  // namespace

/// unroll_block, recording each op execution's events into `rec` or taking them from `reuse`
/// (then `missed` says whether a failure was the recording's: an op ran a different number of
/// times), and with `trace` what ran on each core (with `trace_only`, and `reuse`, no streams:
/// each core's is empty, and `*events` says how many events they would hold).
std::optional<Streams> unroll_one(const KernelNode& k, const Stmt& cube, const Stmt& vector,
                                  const Target& t, const std::vector<Channel>& channels,
                                  bool accesses, std::optional<int64_t> cid, Recorded* rec,
                                  const Recorded* reuse, bool* missed, std::array<Trace, 3>* trace,
                                  bool trace_only, size_t* events,
                                  std::pair<int64_t, int64_t> range, bool* undecided, Expr* split) {
  if (accesses && (memory_on_s(cube) || memory_on_s(vector))) return std::nullopt;
  Interner in;
  Streams out;
  // The GM tensors some op writes (a channel's workspace, the outputs): fold() keeps their spans.
  walk::WrittenGm written_gm{{&cube, &vector}, &t, std::nullopt};
  for (int core = 0; core < 3; ++core) {
    const Stmt& body = core == 0 ? cube : vector;
    if (!body.defined()) {
      if (reuse && !reuse->cores[core].ranges.empty()) return *missed = true, std::nullopt;
      continue;
    }
    Unroller u(t, channels, k, core, accesses, in, cid);
    u.written_gm(&written_gm);
    if (rec) u.record_into(&rec->cores[core]);
    if (reuse) u.reuse(&reuse->cores[core]);
    if (trace) u.trace_into(&(*trace)[core], trace_only);
    if (range.first <= range.second && !cid) u.cid_range(k, range.first, range.second);
    auto stream = u.run(body);
    if (!stream) {
      // The recording of a failed attempt is kept (Prover::record: a rewrite's attempt reuses it,
      // and fails the same way or at a recorded op), so it keeps each core's stream: the failing
      // core's (Unroller::run) and those of the cores before it, which succeeded and would be
      // dropped with `out` here, leaving their recorded ranges pointing into empty streams.
      if (rec)
        for (int c = 0; c < core; ++c) rec->cores[c].stream = std::move(out[c]);
      if (missed && u.missed()) *missed = true;
      if (undecided && u.unknown()) *undecided = true;
      if (split && u.unknown()) *split = u.split();
      return std::nullopt;
    }
    if (events) *events += u.emitted();
    out[core] = std::move(*stream);
  }
  if (rec) rec->cid = cid;
  return out;
}

namespace {

std::atomic<bool> g_shortcuts{true};
std::atomic<bool> g_fold_loops{true};

}  // namespace

void set_shortcuts(bool on) {
  g_shortcuts = on;
}
bool shortcuts() {
  return g_shortcuts;
}
void set_fold_loops(bool on) {
  g_fold_loops = on;
}
bool fold_loops() {
  return g_fold_loops && g_shortcuts;
}

}  // namespace tl::replay
