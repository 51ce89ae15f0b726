// Internal to the hazard checker (tl/npu/hazard.h, docs/virtual_npu.md "Hazard checker"): the
// replay engine. Its driver, synchronisation rules and block retirement are in hazard.cpp, the
// shadow-memory checks and the reports in hazard_access.cpp.
//
// Happens-before with vector clocks. Knowledge is per block: one component per (core, pipe)
// timeline of the block (3 cores x 7 pipes); a component value c on a pipe's knowledge means
// "instruction c of that timeline (and, transitively, everything it was ordered after) has
// completed before the next instruction issued on this pipe starts". Only sync_all orders
// blocks against each other; for that each pipe also knows the generation g of the last
// sync_all it is ordered after, and sync_vc[g][block] holds what every core of `block` had
// completed when it arrived there.
//
// In-order pipes (S, M, MTE1, FIX) know their own previous instruction; V, MTE2 and MTE3 only
// learn their own completions through pipe_barrier / barrier_all / flags, each of which
// drains the whole pipe, so a component value always means "everything up to c is done".
//
// The trace is replayed block by block, and within a block core by core (run until a
// cross-core wait or sync_all blocks, then the next core), which is a valid interleaving; every
// access is checked against the shadow state of its memory: the recent accesses not yet
// replaced by a covering access that is ordered after them (FastTrack-style: a later write that
// covers an earlier access and is ordered after it reports every future conflict the earlier
// one would have), kept in interval indexes (hazard_shadow.h, tl/npu/range_index.h) so that
// only candidates near the access are tested with overlaps().
#pragma once

#include <array>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "hazard_shadow.h"
#include "tl/npu/hazard.h"

namespace tl::npu::hazard_engine {

using namespace hazard_shadow;

std::string core_name_of(int ci);
std::string memory_name(const MemoryId& m);

struct MemKey {
  int scope;
  int64_t block;
  int core;
  bool operator<(const MemKey& o) const {
    return std::tie(scope, block, core) < std::tie(o.scope, o.block, o.core);
  }
};

/// A GM write, for the data-cache rule: who wrote (core, scalar unit or not), what, when, and
/// the instruction (its event's name, pipe and line: the event itself may be retired).
struct GmWrite {
  int core;
  const Access* acc;
  uint64_t seq;
  bool scalar;
  uint32_t event;
  EventInfo info;
};
/// A dcci of a core: the bytes it covers (or its whole cache), and when.
struct Dcci {
  const Access* acc;
  uint64_t seq;
  bool entire;
};

struct CoreState {
  size_t pc = 0;
  std::array<Know, kPipes> know{};
  std::array<uint32_t, kPipes> issued{};
  int syncs = 0;
  bool arrived = false;
  std::map<std::tuple<int, int, int>, KnowQueue> flags;
  // The last Mmad's event index and whether a PipeBarrier<PIPE_M> (or a full barrier) came
  // after it: mmad_needs_m_barrier.
  size_t last_mmad = SIZE_MAX;
  bool m_barrier_since = true;
};

class Engine {
 public:
  Engine(const Trace& t, int max_pending, bool hazards)
      : tr_(t), max_pending_(max_pending), check_(hazards) {}

  /// The whole trace at once (every block's events recorded).
  void run();
  /// Checking while the launch runs (HazardStream): start, then feed every block in order once
  /// its cores have finished, then finish. A fed block is retired: its on-chip shadows dropped
  /// (nothing else can touch a block's on-chip memories) and its events no longer read; the GM
  /// accesses the checker keeps are copies. Not for kernels with sync_all (blocks wait there for
  /// each other: none finishes before the others arrive).
  void start_stream();
  void feed_block(int64_t b);
  void finish();

  std::vector<Hazard> hazards;
  std::vector<Hazard> duplicates;  // duplicate stores: remarks, not hazards
  std::vector<FlagIssue> issues;

 private:
  const Trace& tr_;
  int max_pending_;
  bool check_;
  bool streaming_ = false;
  std::vector<CoreState> st_;
  int participants_ = 0;
  std::map<int, int> arrivals_;                                     // sync index -> cores arrived
  std::vector<std::vector<std::array<uint32_t, kLocal>>> sync_vc_;  // [generation][block]
  std::map<std::tuple<int64_t, int, int>, KnowQueue> cross_;        // (block, slot, id)
  std::map<std::tuple<int64_t, int, int>, bool> cross_reported_;
  std::map<MemKey, Shadow> shadow_;
  // The shadows' records; ids index it. A deque: a record's address stays while it lives (a
  // streamed check's GM read points into its record's own copy of its access, Rec::own).
  std::deque<Rec> recs_;
  std::vector<uint32_t> free_;  // ids of erased records, reused
  uint64_t rec_seq_ = 0;        // insertion order of the records (the old map's tie order)
  // Copies of the GM accesses the checker keeps (shadow records, the data-cache rule's writes
  // and dccis, the stores a read is ordered after): stable addresses that outlive the events.
  std::deque<Access> kept_;
  // The flag issues found when a block ends, kept apart so that the list reads as it did when
  // they were all found after the replay: deadlocks, then flags left set, then cross-core
  // flags left set (each in block order).
  std::vector<FlagIssue> dead_, left_, cross_left_;
  struct Cand {
    uint64_t start, seq;
    uint32_t id;
  };
  std::vector<Cand> cand_;                      // scratch: the conflicts of one access
  std::vector<uint32_t> before_;                // scratch: the stores a GM read is ordered after
  std::vector<std::unique_ptr<Sources>> srcs_;  // scratch: Rec::srcs per access of one event
  std::vector<uint32_t> kill_;                  // scratch: the records one access replaces
  // scratch: the copies the current event's accesses got (trace access -> copy)
  std::vector<std::pair<const Access*, const Access*>> event_kept_;
  std::unordered_map<std::string, size_t> seen_;
  std::unordered_map<std::string, size_t> seen_dup_;
  std::vector<std::pair<uint64_t, uint64_t>> gm_written_;  // gm_write_ranges of the trace
  uint64_t seq_ = 0;                                       // data-cache order: one step per event
  std::vector<GmWrite> gm_writes_;         // every GM write so far, for the data-cache rule
  RangeIndex gm_write_index_;              // of gm_writes_ (id: its index, seq: the same)
  std::vector<GmWrite> scalar_writes_;     // the scalar stores among them (read by every GM read)
  RangeIndex scalar_write_index_;          // of scalar_writes_ (id, seq: its index)
  std::map<int, std::vector<Dcci>> dcci_;  // per core, its dccis (in seq order)

  int64_t block_of(int ci) const { return ci / 3; }
  int slot_of(int ci) const { return ci % 3; }
  int64_t num_blocks() const { return static_cast<int64_t>((tr_.cores.size() + 2) / 3); }

  Know drained(int ci, int p) const;
  void join_all(int ci, const Know& k) {
    for (auto& x : st_[ci].know) x.join(k);
  }
  void join_pipe(int ci, int p, const Know& k) {
    if (p >= kPipes)
      join_all(ci, k);
    else
      st_[ci].know[p].join(k);
  }

  // hazard.cpp: the driver and the synchronisation rules.
  void begin(bool streaming);
  bool run_block(int64_t b);
  void close_block(int64_t b);
  void retire_block(int64_t b);
  template <typename Pred>
  const TraceEvent* last_event(int ci, Pred pred) const;
  void unbalanced(int64_t b);
  void issue(std::vector<FlagIssue>& to, int ci, std::string kind, Pipe pipe, std::string flag,
             const TraceEvent& e, const std::string& why);
  bool step(int ci, const TraceEvent& e);

  // hazard_access.cpp: the shadows, the data-cache and small-Mmad rules, the reports.
  bool hb(const Rec& r, const Know& start, int64_t block) const {
    return hb(r.block, r.t, r.clock, start, block);
  }
  bool hb(int64_t rblock, uint8_t t, uint32_t clock, const Know& start, int64_t block) const {
    if (rblock == block) return start.vc[t] >= clock;
    return start.gen > 0 && sync_vc_[start.gen][rblock][t] >= clock;
  }
  bool all_before(const ReadClocks& rc, const Know& start, int64_t block) const;
  Shadow& shadow_of(const MemoryId& m);
  RangeIndex& index_of(Shadow& sh, const Rec& r, bool by_block) {
    if (by_block) return sh.blocks[r.block][r.write ? 1 : 0];
    return r.write ? sh.writes : sh.reads;
  }
  bool inert(const Access& a) const { return !streaming_ && inert_gm_read(gm_written_, a); }
  /// `a` itself if its event outlives the record (an on-chip memory of the block: its shadows
  /// go with its events), else a kept copy (GM).
  const Access* keep(const Access& a, int64_t block);
  void free_rec(uint32_t id);
  void access(int ci, const TraceEvent& e, int p, uint32_t c, const Know& start);
  void data_cache(int ci, const TraceEvent& e, int p, bool dcci);
  bool dcci_after(int core, uint64_t seq, const Access& a) const;
  void cache_hazard(const GmWrite& w, int ci, const TraceEvent& e, const Access& a,
                    const char* why);
  void add_rule_hazard(Hazard h);
  void small_mmad(int ci, const TraceEvent& e);
  HazardSide side(int ci, size_t ev, const EventInfo& info, const Access& a) const;
  void report(const Rec& r, int ci, const TraceEvent& e, const Access& a, const Know& start,
              int64_t block);
};

}  // namespace tl::npu::hazard_engine
