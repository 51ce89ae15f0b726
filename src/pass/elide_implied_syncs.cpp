// elide_implied_syncs (lowered developer kernels, last, with minimise_syncs): drops the
// intra-core flags that the other core's flags already imply. insert_syncs orders each core's
// own pipes and cannot see the other core, so it keeps a flag whose order a cross-core round
// trip already carries: in FlashAttention the vector unit's credit for reusing the S slot of
// tile t (V done reading it before MTE2 refills it with tile t + 2) is implied, because tile
// t + 2's S only arrives after the cube popped P of tile t, which the vector unit wrote after it
// finished reading S of tile t. The cube's L0 and L0C slot credits are implied the same way.
//
// A sync of the compiler's that no block runs at all (in a branch no cid takes, such as the odd
// tail of a pipelined pair when every block has an even count) goes too: the streams hold every
// execution, so removing it changes nothing that runs.
//
// Proven per flag on the kernel as it will run: block_replay unrolls one block's three cores
// with the bytes each op touches and replays them with the hazard checker's rules. A flag (its
// every set and wait in its scope: pre-sets, drains and both AIVs included) goes when the
// replay without it, and without the flags already gone, still orders every conflicting pair
// of accesses and finishes on every core. The baseline replay must find every pair ordered
// first: the byte ranges are conservative, so a pair they cannot tell apart would otherwise
// hide a new one. One replay stands for every block when no sync depends on cid; otherwise
// each block is replayed (a tail tile's block runs other syncs), up to 64 of them. Where the
// streams cannot be built (a dynamic trip count or condition around a sync, scalar memory
// accesses, more blocks) every flag stays, as do the candidates past a budget of replayed
// events (5 M, deterministic); pipe barriers, the author's syncs and cross-core flags are never
// candidates (elide_channel_credits owns the credits).
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "developer.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/pass.h"
#include "tl/replay.h"

namespace tl {
namespace {

/// Replayed block by block when the protocol depends on cid (tail tiles): up to this many.
constexpr int64_t kMaxBlocks = 64;
/// Events all candidate replays may take together (a replay takes every block's streams); the
/// candidates past it keep their flags. A count, not a clock, so the output is deterministic.
constexpr size_t kMaxReplayedEvents = 5'000'000;

/// The compiler's intra-core flags as units that can go: sets and waits grouped so that every
/// wait a replay ran consumed a set of its own group (a pre-set, the loop's wait and set, the
/// drain), in program order of their first statement. A unit with an author's sync stays.
std::vector<std::vector<const SyncNode*>> flag_units(
    const Stmt bodies[2], const std::vector<std::pair<const SyncNode*, const SyncNode*>>& matches) {
  std::map<const SyncNode*, const SyncNode*> parent;
  std::function<const SyncNode*(const SyncNode*)> root = [&](const SyncNode* x) {
    auto it = parent.find(x);
    if (it == parent.end() || it->second == x) return x;
    return it->second = root(it->second);
  };
  for (const auto& [set, wait] : matches) parent[root(set)] = root(wait);
  std::map<const SyncNode*, size_t> unit_of;  // root -> index into out
  std::vector<std::vector<const SyncNode*>> out;
  std::set<size_t> authors;
  for (int scope = 0; scope < 2; ++scope)
    pre_order_visit(bodies[scope], [&](const Stmt& s) {
      auto* y = s.as<SyncNode>();
      if (!y || (y->sync_kind != SyncKind::SetFlag && y->sync_kind != SyncKind::WaitFlag) ||
          !parent.count(y))
        return;
      auto [it, fresh] = unit_of.try_emplace(root(y), out.size());
      if (fresh) out.emplace_back();
      out[it->second].push_back(y);
      if (y->origin != SyncOrigin::Auto) authors.insert(it->second);
    });
  std::vector<std::vector<const SyncNode*>> units;
  for (size_t i = 0; i < out.size(); ++i)
    if (!authors.count(i)) units.push_back(std::move(out[i]));
  return units;
}

/// The greedy sequence of questions (drop unit i, with the units accepted before it, where the
/// replay stays ordered), answered in fewer replays, each answer the same (docs/compiler.md,
/// "Compile latency"). Dropping more units only removes happens-before edges (every unit is
/// closed under the baseline's matches, so the other waits consume the same sets), so a replay
/// that fails with some drops fails with more. A screen resumes the baseline just before each
/// unit's first event and refuses the units that fail within kScreenSteps: the sequence refuses
/// them whatever it accepted before. The others are asked as groups: a group whose units replay
/// ordered all dropped at once answers every question of the sequence over it (each question
/// drops a subset); a group that fails is split, its first half answered before its second.
constexpr size_t kScreenSteps = 2048;

template <class Ordered>
void answer_in_groups(const std::vector<std::vector<const SyncNode*>>& units,
                      const std::vector<replay::Streams>& blocks, const std::vector<size_t>& rep,
                      const std::vector<replay::Prepared>& prepared, replay::Query& q,
                      Ordered& ordered) {
  std::vector<bool> refused;
  for (size_t b = 0; b < blocks.size(); ++b)
    if (rep[b] == b) replay::screen(blocks[b], {}, q, &prepared[b], units, kScreenSteps, refused);
  std::vector<size_t> open;
  for (size_t u = 0; u < units.size(); ++u)
    if (!refused[u]) open.push_back(u);
  std::function<void(size_t, size_t)> resolve = [&](size_t lo, size_t hi) {
    if (lo == hi) return;
    for (size_t i = lo; i < hi; ++i) q.dropped.insert(units[open[i]].begin(), units[open[i]].end());
    if (ordered()) return;
    for (size_t i = lo; i < hi; ++i)
      for (const SyncNode* y : units[open[i]]) q.dropped.erase(y);
    if (hi - lo == 1) return;
    const size_t mid = lo + (hi - lo) / 2;
    resolve(lo, mid);
    resolve(mid, hi);
  };
  resolve(0, open.size());
}

}  // namespace

PrimFunc elide_implied_syncs(const PrimFunc& f, const Target& target) {
  const KernelNode* k = dev::find_kernel(f);
  if (!k || !k->vid.defined()) return f;
  std::array<Stmt, 2> bodies = dev::scope_bodies(*k);
  // `weights`: blocks each set of streams stands for (one set for all the blocks whose
  // decisions are the same) in the budget, which counts every block's events.
  std::vector<int64_t> weights;
  bool shared = false;
  std::vector<replay::Streams> blocks = replay::unroll_blocks(
      *k, bodies[0], bodies[1], target, {}, true, kMaxBlocks, false, &weights, &shared);
  std::vector<std::pair<const SyncNode*, const SyncNode*>> matches;
  replay::Query q;
  q.accesses = true;
  q.matches = &matches;
  // Blocks that replay alike (the same protocol on other row tiles) are replayed once: their
  // answers and the waits' matches are the same.
  std::vector<size_t> rep = replay::replay_classes(blocks);
  // What each block's replay learns before it runs, the same for every candidate.
  std::vector<replay::Prepared> prepared;
  auto ordered = [&] {
    if (prepared.size() != blocks.size()) {
      prepared.clear();
      for (const replay::Streams& b : blocks) prepared.push_back(replay::prepare(b));
    }
    for (size_t b = 0; b < blocks.size(); ++b)
      if (rep[b] == b && !replay::replay(blocks[b], {}, q, &prepared[b])) return false;
    return true;
  };
  // With cid unknown, a tail's clipped regions are whole buffers, which the ranges may not tell
  // apart: then block by block, where every address is a constant.
  if (shared && !ordered()) {
    matches.clear();
    blocks = replay::unroll_blocks(*k, bodies[0], bodies[1], target, {}, true, kMaxBlocks, true,
                                   &weights);
    rep = replay::replay_classes(blocks);
    prepared.clear();
  }
  if (blocks.empty() || !ordered()) return f;  // some pair the ranges cannot tell apart
  q.matches = nullptr;
  size_t per_replay = 0;
  for (size_t b = 0; b < blocks.size(); ++b)
    for (const auto& stream : blocks[b])
      per_replay += stream.size() * static_cast<size_t>(weights[b]);
  // The budget charges one replay per candidate, in order: the candidates past it keep their
  // flags, however their questions are answered below.
  std::vector<std::vector<const SyncNode*>> units = flag_units(bodies.data(), matches);
  if (per_replay > 0) units.resize(std::min(units.size(), kMaxReplayedEvents / per_replay));
  if (!replay::shortcuts()) {
    for (const auto& unit : units) {
      q.dropped.insert(unit.begin(), unit.end());
      if (!ordered())
        for (const SyncNode* y : unit) q.dropped.erase(y);
    }
  } else {
    answer_in_groups(units, blocks, rep, prepared, q, ordered);
  }
  // A sync of the compiler's that no block runs (in a branch no block takes at this shape, as
  // an odd tail when every block has an even count) goes too: the streams hold every execution.
  std::set<const SyncNode*> ran;
  for (const replay::Streams& b : blocks)
    for (const auto& stream : b)
      for (const replay::Event& e : stream.stored())
        if (e.sync) ran.insert(e.sync);
  for (const Stmt& b : bodies)
    pre_order_visit(b, [&](const Stmt& x) {
      if (auto* y = x.as<SyncNode>(); y && y->origin == SyncOrigin::Auto && !ran.count(y))
        q.dropped.insert(y);
    });
  if (q.dropped.empty()) return f;
  auto gone = [&](const Stmt& x) {
    auto* y = x.as<SyncNode>();
    return y && q.dropped.count(y) > 0;
  };
  for (Stmt& b : bodies)
    if (b.defined()) b = dev::without(b, gone);
  return dev::with_scope_bodies(f, bodies);
}

}  // namespace tl
