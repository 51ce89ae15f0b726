// What block_replay.cpp (the unroller) and replay_prover.cpp (the Prover) share: the recorded
// op events a Prover reuses, the walk of one set of streams, and the sets of cid ranges
// (tl/replay.h; docs/compiler.md, "Compile latency").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tl/replay.h"

namespace tl::replay {

constexpr size_t kMaxBlockEvents = 500000;  // all blocks, when each is unrolled: beyond it, none

/// The events each execution of each tile op added to a core's stream: per op, one [begin, end)
/// range of the stream per execution, in order. A Prover records them on the bodies as they are
/// and copies them into the streams of a rewrite that only moves, guards or drops syncs: its ops
/// run in the same executions with the same variables, so their events are the same, and the
/// unroller skips their address arithmetic (most of an unroll's time).
struct OpEvents {
  std::unordered_map<const TileOpNode*, std::vector<std::pair<uint32_t, uint32_t>>> ranges;
  Stream stream;  // the ranges index its stored events
  /// Each loop (by its variable) whose middle iterations the walk tried to fold, in order: its
  /// count where they are stored once, -1 where walked (a rewrite's walk must fold exactly these to
  /// reuse the ranges, whose execution indices count a folded run's iterations once).
  std::vector<std::pair<const VarNode*, int64_t>> folds;
};
/// What a walk of the bodies executed, in order: each op execution as (op, its execution index),
/// each sync as (statement, its event id). With the recorded op events it determines the stream
/// (Prover::streams compares the traces of blocks whose recordings replay alike).
using Trace = std::vector<std::pair<const void*, int64_t>>;
/// One block's (or, with cid unknown, every block's) recorded op events, per core. Each core's
/// stream is the one its ranges index: a failed attempt's is kept by unroll_one, every core's up
/// to the one that failed; a successful one's is returned and moved in by its recorder once
/// replayed (Prover::adopt). A walk that reuses a recording asserts it.
struct Recorded {
  std::optional<int64_t> cid;
  std::array<OpEvents, 3> cores;
};

/// unroll_block, recording each op execution's events into `rec` or taking them from `reuse`
/// (then `missed` says whether a failure was the recording's: an op ran a different number of
/// times), and with `trace` what ran on each core (with `trace_only`, and `reuse`, no streams:
/// each core's is empty, and `*events` says how many events they would hold). With a `range`
/// of cid (lo <= hi, cid not given), the streams of every block of the range; `*undecided` then
/// says whether the walk failed on a decision that differs between them (`*split`: it).
std::optional<Streams> unroll_one(const KernelNode& k, const Stmt& cube, const Stmt& vector,
                                  const Target& t, const std::vector<Channel>& channels,
                                  bool accesses, std::optional<int64_t> cid, Recorded* rec,
                                  const Recorded* reuse, bool* missed,
                                  std::array<Trace, 3>* trace = nullptr, bool trace_only = false,
                                  size_t* events = nullptr,
                                  std::pair<int64_t, int64_t> range = {0, -1},
                                  bool* undecided = nullptr, Expr* split = nullptr);

/// One set of streams as a list, moved in (a braced list `{std::move(s)}` copies every event).
inline std::vector<Streams> only(Streams&& s) {
  std::vector<Streams> out;
  out.push_back(std::move(s));
  return out;
}

using Ranges = std::vector<std::pair<int64_t, int64_t>>;
/// The sets of streams of cid ranges (block_replay.cpp): see there.
std::optional<std::vector<Streams>> ranged_sets(const KernelNode& k, const Stmt& cube,
                                                const Stmt& vector, const Target& t,
                                                const std::vector<Channel>& channels, bool accesses,
                                                int64_t max_blocks, std::vector<Recorded>* recs,
                                                const std::vector<Recorded>* reuse, Ranges* ranges,
                                                bool* missed, std::vector<int64_t>* weights);

}  // namespace tl::replay
