// The block replay (src/analysis/block_replay.cpp; the analysis module): one block of a lowered
// developer kernel as the instruction streams its three cores issue (the AIC, AIV 0, AIV 1),
// replayed with the hazard checker's happens-before rules
// (tl/sync_rules.h; src/npu/hazard.cpp), so a pass can prove at compile time that a sync is
// implied by the others: drop it in the replay and check that every conflicting pair of
// accesses, on any core and across cores, is still ordered and nothing deadlocks.
// elide_channel_credits asks it about a channel's credit, elide_implied_syncs about each
// intra-core flag.
//
// The streams are exact where a kernel's protocol is static: every trip count and condition
// around a sync (or a channel copy) must be a constant once vid is fixed; otherwise there are
// no streams and the passes keep every sync. The accesses are conservative byte ranges (a
// region's first to last byte; a whole buffer, memory or tensor where a bound is not known), so
// a replay can only find more conflicts than the kernel has, never fewer.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "tl/ir.h"
#include "tl/target.h"

namespace tl::replay {

constexpr int kPipes = 7;  // S V M MTE1 MTE2 MTE3 FIX

/// Bytes one instruction reads or writes: [lo, hi) of memory `mem` (an on-chip memory of the
/// core, or a GM tensor). GM offsets are relative to `base`, an interned symbolic part of the
/// address (cid * 8192, ...): two spans compare exactly only when their bases are equal.
struct Span {
  uint64_t mem = 0;
  int base = 0;  // -1: unknown (overlaps every span of the memory)
  int64_t lo = 0, hi = INT64_MAX;
  bool write = false;
};

/// An op instruction's spans: a run of an arena its stream's builder appends to (one per core's
/// walk, never changed below its end), shared by every copy of the event. The unroller then
/// allocates no memory per event, and a Prover question, which builds its streams by copying
/// the recorded events (tens of thousands per question on flash_attention_dev at S=32768), pays
/// a reference count per event instead of an allocation and a copy of its spans.
class SpanList {
 public:
  SpanList() = default;
  /// Spans of their own (an event built by hand).
  explicit SpanList(const std::vector<Span>& spans)
      : SpanList(std::make_shared<const std::vector<Span>>(spans), 0,
                 static_cast<uint32_t>(spans.size())) {}
  /// Spans [at, at + n) of `arena`.
  SpanList(std::shared_ptr<const std::vector<Span>> arena, uint32_t at, uint32_t n)
      : arena_(n ? std::move(arena) : nullptr), at_(at), n_(n) {}
  const Span* begin() const { return arena_ ? arena_->data() + at_ : nullptr; }
  const Span* end() const { return begin() + n_; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const Span& operator[](size_t i) const { return begin()[i]; }

 private:
  std::shared_ptr<const std::vector<Span>> arena_;
  uint32_t at_ = 0, n_ = 0;
};

/// One instruction of a core's stream.
struct Event {
  enum Kind : uint8_t { Op, Set, Wait, Barrier, SetCross, WaitCross } kind = Op;
  int pipe = 0, dst = 0, id = 0;
  int channel = -1;                // a channel copy: its channel
  bool push = false;               // ... into the workspace (else out of it)
  bool first = false;              // a push: the first (or only) column part of its slot
  const SyncNode* sync = nullptr;  // a sync: its statement
  SpanList spans;                  // Op, when the streams record accesses
};

/// A cross-core channel: its workspace, slots, and the credit id (the cross flag raised after a
/// pop; -1: none).
struct Channel {
  const BufferNode* ws = nullptr;
  int slots = 1;
  int credit = -1;
};

/// One core's instruction stream, as its events in order (`size()`, `operator[]`), stored with
/// each run of alike loop iterations once: block_replay proves that every iteration of a loop's
/// middle range emits the same events (every decision one value over the range, every span of a
/// memory some op writes the same; docs/compiler.md, "Compile latency", the eighth round) and
/// stores one iteration with its count. The unroll's and the replay's work on such a loop is
/// then independent of its trip count where the replay folds its periods. Spans of a memory no
/// op writes, which no replay reads (replay_run.cpp, `shadow_of`), may differ between the
/// iterations of a run: its stored iteration holds them as the whole memory.
class Stream {
 public:
  /// Iterations [vat, vat + len * count) are `count` copies of the stored events [at, at + len).
  struct Run {
    size_t at = 0, len = 0, count = 0, vat = 0;
  };
  size_t size() const { return events_.size() + extra_; }
  bool empty() const { return size() == 0; }
  const Event& operator[](size_t v) const {
    if (runs_.empty()) return events_[v];
    return events_[stored_at(v)];
  }
  /// The index in stored() of event `v`.
  size_t stored_at(size_t v) const {
    size_t shift = 0;
    for (const Run& r : runs_) {
      if (v < r.vat + r.len) break;
      if (v < r.vat + r.len * r.count) return r.at + (v - r.vat) % r.len;
      shift += r.len * (r.count - 1);
    }
    return v - shift;
  }
  /// Whether events `a` < `b` are equal because both lie in one run, a multiple of its
  /// iteration apart; then `*end` is the run's end (every event up to it is the one b - a
  /// before it).
  bool same_in_run(size_t a, size_t b, size_t* end) const {
    for (const Run& r : runs_)
      if (a >= r.vat && b < r.vat + r.len * r.count) {
        if ((b - a) % r.len) return false;
        *end = r.vat + r.len * r.count;
        return true;
      }
    return false;
  }
  /// Each event once, runs stored once (a scan for what the stream holds, not its order).
  const std::vector<Event>& stored() const { return events_; }
  std::vector<Event>& stored() { return events_; }
  const std::vector<Run>& runs() const { return runs_; }
  void push_back(Event e) { events_.push_back(std::move(e)); }
  void reserve(size_t n) { events_.reserve(n); }
  Event& back() { return events_.back(); }
  /// The stored events from `at` on (appended last) are one iteration of `count` alike ones.
  void repeat(size_t at, size_t count) {
    const size_t len = events_.size() - at;
    if (len == 0 || count <= 1) return;
    runs_.push_back({at, len, count, at + extra_});
    extra_ += len * (count - 1);
  }
  /// Removes the events `drop` holds, from every iteration of a run alike.
  template <class Pred>
  void remove_if(Pred drop) {
    std::vector<Event> kept;
    kept.reserve(events_.size());
    std::vector<Run> runs;
    size_t extra = 0, r = 0;
    for (size_t i = 0; i <= events_.size(); ++i) {
      if (r < runs_.size() && i == runs_[r].at + runs_[r].len) {  // a run's stored end
        Run n = runs_[r];
        n.len = 0;
        for (size_t j = n.at; j < i; ++j) n.len += !drop(events_[j]);
        n.at = kept.size() - n.len;
        n.vat = n.at + extra;
        if (n.len > 0) runs.push_back(n), extra += n.len * (n.count - 1);
        ++r;
      }
      if (i < events_.size() && !drop(events_[i])) kept.push_back(std::move(events_[i]));
    }
    events_ = std::move(kept);
    runs_ = std::move(runs);
    extra_ = extra;
  }
  bool operator==(const Stream& o) const = delete;

 private:
  std::vector<Event> events_;
  std::vector<Run> runs_;
  size_t extra_ = 0;  // the events the runs stand for beyond their stored iteration
};

using Streams = std::array<Stream, 3>;  // 0: AIC, 1: AIV 0, 2: AIV 1

/// The streams of one block of kernel `k` (its Cube scope body `cube`, its Vector scope body
/// `vector`; either may be undefined), with the bytes each op touches when `accesses`: of block
/// `cid`, or of every block when cid is not given (its value then stays unknown). nullopt when
/// the protocol is not static, a stream grows too long, or (with `accesses`) the scalar unit
/// reads or writes memory, which the streams leave out.
std::optional<Streams> unroll_block(const KernelNode& k, const Stmt& cube, const Stmt& vector,
                                    const Target& t, const std::vector<Channel>& channels,
                                    bool accesses, std::optional<int64_t> cid = std::nullopt);

/// The streams of every block: one set for all when the protocol does not depend on cid (and
/// not `each_block`), else one per block (exact addresses) when there are at most `max_blocks`
/// with 500 k events in all; empty when neither can be built. Where the protocol reads cid but
/// every decision it takes is one value for every block (a trip count `min(rows - cid * t, t)`
/// that no block clips), one set stands for the blocks' (cid's range, block_replay.cpp), within
/// the limits of theirs; blocks whose decisions differ split into ranges of cid that decide
/// alike, one set each. `*weights`: how many blocks each set stands for in the budgets;
/// `*shared`: whether the sets stand for several blocks with cid unknown (else one per block).
std::vector<Streams> unroll_blocks(const KernelNode& k, const Stmt& cube, const Stmt& vector,
                                   const Target& t, const std::vector<Channel>& channels,
                                   bool accesses, int64_t max_blocks, bool each_block = false,
                                   std::vector<int64_t>* weights = nullptr, bool* shared = nullptr);

/// Whether the replay takes its shortcuts (on by default): one set of streams for the blocks
/// whose decisions are each one value over cid's range (unroll_blocks), a Prover block whose
/// walk runs as an earlier block's neither built nor replayed (Prover), and the loop fold (a
/// replay skips the periods that repeat a period's state and events: replay_run.cpp). Off: every
/// block's streams built and grouped as without them, the same answers at a higher cost; for the
/// test that compares the lowered IR both ways (tests/analysis/replay_shortcuts_test.cpp).
void set_shortcuts(bool on);
bool shortcuts();
/// Whether the unroll stores a loop's alike middle iterations once (Stream's runs; on by
/// default, and only with the shortcuts): off, every iteration is walked and stored, the streams
/// the same event for event (tests/analysis/replay_unroll_fold_test.cpp compares them).
void set_fold_loops(bool on);
bool fold_loops();

/// Each op execution's events of one unrolled block, per core (block_replay.cpp).
struct Recorded;

/// For each set of streams in `blocks`, the index of the first set that replays exactly as it
/// does, whatever the query (the same events, and the same bytes but for one translation of each
/// GM tensor's addresses per base: the row tiles of another block): a caller replays only the
/// sets that are their own class.
std::vector<size_t> replay_classes(const std::vector<Streams>& blocks);

/// What to leave out of a replay, what to check and what to report.
struct Query {
  std::set<const SyncNode*> dropped;  // intra-core sets and waits left out (by statement)
  int dropped_cross = -1;             // a cross-core flag id whose sets and waits are left out
  int slot_channel =
      -1;  // check: every push of this channel after the reads of its slot's previous tile
  bool accesses = false;  // check: every conflicting pair of accesses ordered
  bool balanced = false;  // check: every intra-core set consumed by a wait by the end
  /// Report: each intra-core wait with the set it consumed (set statement, wait statement), each
  /// pair at least once (the periods a fold skips repeat pairs already reported).
  std::vector<std::pair<const SyncNode*, const SyncNode*>>* matches = nullptr;
  /// Report: the loop periods the replay skipped (the fold, docs/compiler.md), added to.
  size_t* skipped = nullptr;
};

/// What a replay learns from its streams before it runs, whatever the query: the memories some
/// op writes (in the order first written; the others are read-only, never conflicting) and the
/// (core, channel) pairs that pop a channel.
struct Prepared {
  std::vector<uint64_t> written;
  std::set<std::pair<int, int>> consumers;
};
Prepared prepare(const Streams& streams);

/// Replays `streams` without what `q` drops: true when every core finishes (no deadlock, no
/// wait without a set) and what `q` checks holds. `prepared`: prepare(streams), for streams
/// replayed many times (elide_implied_syncs' candidates), or null.
bool replay(const Streams& streams, const std::vector<Channel>& channels, const Query& q,
            const Prepared* prepared = nullptr);

/// elide_implied_syncs' screen of its candidates (docs/compiler.md, "Compile latency"): each of
/// `units` (sync statements dropped together, closed under the matches of the replay with
/// `q.dropped`, which must be clean) replayed with `q.dropped` and the unit, resumed from the
/// state the replay with `q.dropped` has just before the unit's first event and run `cap` steps
/// at most. `refused[u]` becomes true where that replay fails: dropping more of such units only
/// removes happens-before edges (fewer records replaced, every clock at most as far), so the
/// unit fails too with whatever the greedy sequence of questions has dropped by its turn. A unit
/// not refused is undecided (entries already true stay true: one call per set of streams).
void screen(const Streams& streams, const std::vector<Channel>& channels, const Query& q,
            const Prepared* prepared, const std::vector<std::vector<const SyncNode*>>& units,
            size_t cap, std::vector<bool>& refused);

/// Proves rewrites of a lowered kernel's scope bodies (merge_flags, guard_loop_credits): built on
/// the bodies as they are, whose replay must be clean (every conflicting pair ordered, every
/// core finishing, every set consumed), then asked whether rewritten bodies still are. All
/// blocks stand in one replay when the protocol does not depend on cid and the ranges with cid
/// unknown tell every pair apart; otherwise each block is replayed, up to `max_blocks`.
/// Deterministic: a budget of replayed events (a count, not a clock) bounds the questions.
class Prover {
 public:
  Prover(const KernelNode& k, const Stmt bodies[2], const Target& t, int64_t max_blocks,
         size_t budget);
  /// Whether the bodies as they are replay clean; nothing can be proven otherwise.
  bool clean() const { return clean_; }
  /// Whether `bodies` (the Cube and Vector scope bodies) replay clean; false past the budget.
  bool holds(const Stmt bodies[2]);
  /// Whether `bodies` replay clean, asked for `questions` rewrites at once (guard_loop_credits:
  /// every unit guarded, which holds only if each question would): true only where the budget
  /// has room for all of them and the streams are built from the recording as every question's
  /// would be (not unrolled anew); then charged as they would be. False changes nothing, so the
  /// questions can still be asked one by one, as without the shortcut.
  bool holds_all(const Stmt bodies[2], size_t questions);

 private:
  std::vector<Streams> record(const Stmt bodies[2]);
  void adopt(std::vector<Streams>& streams);
  std::vector<Streams> streams(const Stmt bodies[2]);
  // How record() built its streams: one set for all blocks, sets of cid ranges, or per block.
  enum class Path { All, Ranged, Blocks };
  std::pair<bool, size_t> check(const std::vector<Streams>& blocks, Path path) const;
  const KernelNode& k_;
  const Target& t_;
  int64_t max_blocks_;
  size_t budget_, spent_ = 0, per_replay_ = 0;
  bool each_block_ = false, clean_ = false;
  bool anew_ = false;  // the last streams() unrolled the rewrite anew
  // The bodies' op events: of the attempt at one set of streams for all blocks, of each block.
  std::shared_ptr<const Recorded> base_all_;
  // Sets of cid ranges (unroll_blocks): their recordings, ranges and blocks (weights).
  std::shared_ptr<const std::vector<Recorded>> base_ranged_;
  std::vector<std::pair<int64_t, int64_t>> ranges_;
  std::vector<int64_t> weights_;
  std::shared_ptr<const std::vector<Recorded>> base_;
  // Per block (each_block_): the first block whose recording replays exactly as its own does
  // (replay_classes, with the same op executions): a rewrite's stream of the block then replays
  // as that block's when the two walks run the same ops and syncs (Prover::streams).
  std::vector<size_t> base_rep_;
  std::vector<Recorded*> adopting_;  // the recordings of record()'s streams, in order
  Path path_ = Path::Blocks;         // ... and how record() built them
  Path walked_ = Path::Blocks;       // how the last streams() built its streams
  std::vector<Prepared> prepared_;   // prepare() of each of them (not per block)
};

}  // namespace tl::replay
