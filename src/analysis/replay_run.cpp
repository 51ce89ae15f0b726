// The replay of block_replay's streams (tl/replay.h): the three cores' instruction streams run
// with the hazard checker's happens-before rules (tl/sync_rules.h; src/npu/hazard.cpp): vector
// clocks per (core, pipe) timeline, intra-core flags and cross-core flags as queues of the
// clocks their sets carried, and every access checked against the conflicting ones recorded
// before it. block_replay.cpp builds the streams; this file only runs them.
#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "tl/replay.h"
#include "tl/sync_rules.h"

namespace tl::replay {
namespace {

constexpr int kClock = 3 * kPipes;  // (core, pipe) timelines of one block

using Clock = std::array<uint32_t, kClock>;
void join(Clock& a, const Clock& b) {
  for (int i = 0; i < kClock; ++i) a[i] = std::max(a[i], b[i]);
}

bool overlap(const Span& a, const Span& b) {
  if (a.mem != b.mem) return false;
  if (a.base < 0 || b.base < 0 || a.base != b.base) return true;
  return a.lo < b.hi && b.lo < a.hi;
}
bool covers(const Span& a, const Span& b) {
  return a.mem == b.mem && a.base >= 0 && a.base == b.base && a.lo <= b.lo && b.hi <= a.hi;
}

/// An access not yet replaced by a covering one ordered after it (the hazard checker's shadow).
struct Rec {
  Span span;
  int core, timeline;
  uint32_t clock;
  size_t event;
};

/// One memory's recorded accesses, by base, length class (the bit width of the length) and first
/// byte, so that an access visits the records that may overlap it (overlap()) without scanning
/// the others: a block's streams touch the rows of a tile hundreds of times, and none covers
/// another. In a class, a record that starts at or before a.lo - 2^(class) ends at or before a.lo.
class Shadow {
 public:
  /// Calls `f` on every record that overlaps `a` (a span of this memory).
  template <class F>
  void overlapping(const Span& a, F&& f) const {
    for (const Rec& r : unknown_) f(r);
    for (const auto& [base, classes] : bases_)
      for (const Class& m : classes) {
        if (a.base < 0 || base != a.base) {  // another base, or an unknown one: every record
          for (const Rec& r : m.sorted)
            if (r.clock) f(r);
          for (const Rec& r : m.recent) f(r);
          continue;
        }
        int64_t from;
        auto it = m.cls >= 63 || __builtin_sub_overflow(a.lo, int64_t{1} << m.cls, &from)
                      ? m.sorted.begin()
                      : std::upper_bound(m.sorted.begin(), m.sorted.end(), from, by_lo);
        for (; it != m.sorted.end() && it->span.lo < a.hi; ++it)
          if (it->clock && overlap(it->span, a)) f(*it);
        for (const Rec& r : m.recent)
          if (overlap(r.span, a)) f(r);
      }
  }
  /// Erases the records `a` covers (covers()) for which `pred` holds.
  template <class P>
  void erase_covered(const Span& a, P&& pred) {
    if (a.base < 0) return;
    auto b = std::find_if(bases_.begin(), bases_.end(),
                          [&](const auto& x) { return x.first == a.base; });
    if (b == bases_.end()) return;
    auto gone = [&](const Rec& r) { return r.clock && covers(a, r.span) && pred(r); };
    for (Class& m : b->second) {
      auto from = std::lower_bound(m.sorted.begin(), m.sorted.end(), a.lo, lo_before);
      for (auto it = from; it != m.sorted.end() && it->span.lo <= a.hi; ++it)
        if (gone(*it)) it->clock = 0;
      m.recent.erase(std::remove_if(m.recent.begin(), m.recent.end(), gone), m.recent.end());
    }
  }
  void add(const Rec& r) {
    if (r.span.base < 0) {
      unknown_.push_back(r);
      return;
    }
    int64_t length;
    if (__builtin_sub_overflow(r.span.hi, r.span.lo, &length) || length < 0) length = INT64_MAX;
    const int cls = 64 - __builtin_clzll(static_cast<uint64_t>(length) | 1);  // length < 2^cls
    auto b = std::find_if(bases_.begin(), bases_.end(),
                          [&](const auto& x) { return x.first == r.span.base; });
    if (b == bases_.end()) b = bases_.insert(b, {r.span.base, {}});
    auto c = std::find_if(b->second.begin(), b->second.end(),
                          [&](const Class& x) { return x.cls == cls; });
    if (c == b->second.end()) c = b->second.insert(c, Class{cls, {}, {}});
    c->recent.push_back(r);
    if (c->recent.size() >= kRecent) c->merge();
  }

 private:
  // Bases and length classes in the order first seen, searched in order: a memory has a few of
  // each, and every access visits them all (overlapping()), which tree nodes made dear. A class
  // keeps its records contiguous, as every access scans a window of them (on other bases, all
  // of them): sorted by first byte, erased ones left in place as tombstones (clock 0, which no
  // access is ordered before, the live records' clocks being issue counts from 1), the latest
  // added unsorted until kRecent of them are merged in with the tombstones dropped. Inserting
  // each into the sorted records moved all those after it: quadratic in a tile's rows, which
  // are added interleaved with another buffer's (the 171-row-tile RoPE).
  static constexpr size_t kRecent = 32;
  struct Class {
    int cls;                  // the length class
    std::vector<Rec> sorted;  // by lo, with tombstones
    std::vector<Rec> recent;  // in the order added
    void merge() {
      std::stable_sort(recent.begin(), recent.end(),
                       [](const Rec& x, const Rec& y) { return x.span.lo < y.span.lo; });
      std::vector<Rec> out;
      out.reserve(sorted.size() + recent.size());
      auto live = [](const Rec& x) { return x.clock != 0; };
      auto it = sorted.begin();
      for (const Rec& r : recent) {
        for (; it != sorted.end() && it->span.lo <= r.span.lo; ++it)
          if (live(*it)) out.push_back(*it);
        out.push_back(r);
      }
      for (; it != sorted.end(); ++it)
        if (live(*it)) out.push_back(*it);
      sorted = std::move(out);
      recent.clear();
    }
  };
  static bool by_lo(int64_t lo, const Rec& r) { return lo < r.span.lo; }
  static bool lo_before(const Rec& r, int64_t lo) { return r.span.lo < lo; }
  std::vector<Rec> unknown_;  // base < 0: overlaps every span
  std::vector<std::pair<int, std::vector<Class>>> bases_;
};

}  // namespace

Prepared prepare(const Streams& streams) {
  Prepared p;
  uint64_t last = 0;
  for (int c = 0; c < 3; ++c)
    for (const Event& e : streams[c]) {
      if (e.channel >= 0 && !e.push) p.consumers.insert({c, e.channel});
      for (const Span& a : e.spans)
        if (a.write && !(a.mem == last && !p.written.empty()) &&
            std::find(p.written.begin(), p.written.end(), a.mem) == p.written.end())
          p.written.push_back(last = a.mem);
    }
  return p;
}

namespace {

class Replayer {
 public:
  /// `prepared`: prepare(streams), computed once for streams replayed many times, or null.
  Replayer(const Streams& streams, const std::vector<Channel>& channels, const Query& q,
           const Prepared* prepared)
      : streams_(streams),
        channels_(channels),
        q_(q),
        dropped_(q.dropped.begin(), q.dropped.end()) {
    if (!prepared) prepared = &(own_ = prepare(streams));
    consumers_ = &prepared->consumers;
    for (uint64_t mem : prepared->written) shadows_.emplace_back(mem, Shadow());
  }

  bool run() {
    advance([](int, const Event&) { return false; });
    return finished();
  }

  /// Runs the schedule on: each core until it blocks on a cross-core wait, round-robin until all
  /// finish or none moves, stopping early where a step fails or where `pause(core, event)` holds
  /// before a step; false then, and calling it again resumes there. The schedule is the same
  /// whatever intra-core syncs the query drops (only cross-core waits block, and only their sets
  /// unblock them), so a replay paused before step n is, for any other query that drops the same
  /// events among the first n and the same cross-core flag, that query's replay paused there
  /// (screen()).
  template <class Pause>
  bool advance(Pause&& pause) {
    while (ok_) {
      if (core_ == 3) {
        if (!progress_) break;
        progress_ = false;
        core_ = 0;
      }
      Core& s = cores_[core_];
      while (ok_ && s.pc < streams_[core_].size()) {
        const Event& e = streams_[core_][s.pc];
        if (pause(core_, e)) return false;
        if (!step(core_, e)) break;
        ++s.pc;
        ++steps_;
        progress_ = true;
      }
      ++core_;
    }
    return true;
  }

  /// After advance() returned true: whether every core finished and the query's checks hold.
  bool finished() const {
    for (int c = 0; c < 3; ++c)
      if (cores_[c].pc < streams_[c].size()) return false;  // a deadlock
    if (q_.balanced)
      for (const Core& c : cores_)
        for (const auto& [flag, sets] : c.flags)
          if (!sets.empty()) return false;  // a set no wait consumes: the next kernel would see it
    return ok_;
  }

  bool failed() const { return !ok_; }
  size_t steps() const { return steps_; }
  /// Drops `sorted` (sync statements, sorted) from here on instead of the query's.
  void drop(std::vector<const SyncNode*> sorted) { dropped_ = std::move(sorted); }

 private:
  struct Core {
    size_t pc = 0;
    std::array<uint32_t, kPipes> issued{};
    std::array<Clock, kPipes> know{};
    std::map<std::tuple<int, int, int>, std::deque<std::pair<Clock, const SyncNode*>>> flags;
    std::map<int, std::vector<std::pair<int, uint32_t>>> pops;  // channel -> (pipe, count) per tile
    std::map<int, int> pushes;                                  // channel -> tiles pushed
  };

  Clock drained(int c, int p) const {
    Clock k{};
    if (p >= kPipes) {
      for (int x = 0; x < kPipes; ++x) {
        join(k, cores_[c].know[x]);
        k[c * kPipes + x] = std::max(k[c * kPipes + x], cores_[c].issued[x]);
      }
      return k;
    }
    k = cores_[c].know[p];
    k[c * kPipes + p] = std::max(k[c * kPipes + p], cores_[c].issued[p]);
    return k;
  }
  void join_all(int c, const Clock& k) {
    for (auto& x : cores_[c].know) join(x, k);
  }
  bool dropped(const Event& e) const {
    if (e.kind == Event::SetCross || e.kind == Event::WaitCross) return e.id == q_.dropped_cross;
    if (e.kind == Event::Set || e.kind == Event::Wait)
      return !dropped_.empty() && std::binary_search(dropped_.begin(), dropped_.end(), e.sync);
    return false;
  }

  /// Executes `e` on core `c`; false when it blocks (a cross-core wait with no set yet).
  bool step(int c, const Event& e) {
    Core& s = cores_[c];
    if (dropped(e)) return true;
    switch (e.kind) {
      case Event::WaitCross:
        if (c == 0) {
          auto &a = cross_[{3, e.id}], &b = cross_[{4, e.id}];
          if (a.empty() || b.empty()) return false;
          join_all(c, a.front());
          join_all(c, b.front());
          a.pop_front();
          b.pop_front();
        } else {
          auto& q = cross_[{c, e.id}];
          if (q.empty()) return false;
          join_all(c, q.front());
          q.pop_front();
        }
        return true;
      case Event::SetCross: {
        Clock k = drained(c, e.pipe);
        if (c == 0) {
          cross_[{1, e.id}].push_back(k);
          cross_[{2, e.id}].push_back(k);
        } else {
          cross_[{2 + c, e.id}].push_back(k);
        }
        return true;
      }
      case Event::Set:
        s.flags[{e.pipe, e.dst, e.id}].push_back({drained(c, e.pipe), e.sync});
        return true;
      case Event::Wait: {
        auto& q = s.flags[{e.pipe, e.dst, e.id}];
        if (q.empty()) return ok_ = false;  // a wait no set raises: it would hang
        if (e.dst >= kPipes)
          join_all(c, q.front().first);
        else
          join(s.know[e.dst], q.front().first);
        if (q_.matches) q_.matches->push_back({q.front().second, e.sync});
        q.pop_front();
        return true;
      }
      case Event::Barrier:
        if (e.pipe >= kPipes)
          join_all(c, drained(c, kPipes));
        else
          join(s.know[e.pipe], drained(c, e.pipe));
        return true;
      case Event::Op:
        op(c, e);
        return true;
    }
    return true;
  }

  void op(int c, const Event& e) {
    Core& s = cores_[c];
    const Clock start = s.know[e.pipe];
    const uint32_t count = ++s.issued[e.pipe];
    if (q_.accesses) access(c, e, start, count);
    if (pipe_in_order(static_cast<Pipe>(e.pipe))) s.know[e.pipe][c * kPipes + e.pipe] = count;
    if (pipe_orders_later_issue(static_cast<Pipe>(e.pipe))) join_all(c, Clock(s.know[e.pipe]));
    if (e.channel >= 0 && !e.push) s.pops[e.channel].push_back({e.pipe, count});
    if (e.channel == q_.slot_channel && e.push && e.first) {
      const int n = s.pushes[e.channel]++;
      const int prev = n - channels_[e.channel].slots;
      if (prev >= 0)
        for (int o = 0; o < 3; ++o) {
          if (o == c || !consumers_->count({o, e.channel})) continue;
          const auto& pops = cores_[o].pops[e.channel];
          if (static_cast<int>(pops.size()) <= prev ||
              start[o * kPipes + pops[prev].first] < pops[prev].second)
            ok_ = false;
        }
    }
  }

  /// Every access of `e` ordered after the conflicting ones recorded; then recorded itself,
  /// replacing those it covers and is ordered after (as the hazard checker's shadow does).
  void access(int c, const Event& e, const Clock& start, uint32_t count) {
    const size_t event = cores_[c].pc;
    for (const Span& a : e.spans) {
      if (!ok_) break;  // the answer is known
      const Shadow* sh = shadow_of(a.mem);
      if (!sh) continue;  // read-only memory (the inputs): nothing conflicts
      sh->overlapping(a, [&](const Rec& r) {
        if ((r.span.write || a.write) && start[r.timeline] < r.clock &&
            !(r.core == c && r.event == event))
          ok_ = false;
      });
    }
    for (const Span& a : e.spans) {
      Shadow* found = shadow_of(a.mem);
      if (!found) continue;
      Shadow& sh = *found;
      sh.erase_covered(a, [&](const Rec& r) {
        const bool same = r.core == c && r.event == event;
        return (a.write || !r.span.write) && (same || start[r.timeline] >= r.clock);
      });
      sh.add({a, c, c * kPipes + e.pipe, count, event});
    }
  }

  const Streams& streams_;
  const std::vector<Channel>& channels_;
  const Query& q_;
  std::array<Core, 3> cores_{};
  std::map<std::pair<int, int>, std::deque<Clock>> cross_;  // (to: 1, 2 AIVs; 3, 4 from AIVs, id)
  // The statements q_ drops, sorted (std::set's order): looked up for every set and wait.
  std::vector<const SyncNode*> dropped_;
  Prepared own_;                                    // prepare(streams_) when not given
  const std::set<std::pair<int, int>>* consumers_;  // (core, channel) pairs that read it
  /// The shadow of memory `mem`, which some op writes; null when none does (the inputs).
  Shadow* shadow_of(uint64_t mem) {
    if (last_ < shadows_.size() && shadows_[last_].first == mem) return &shadows_[last_].second;
    for (size_t i = 0; i < shadows_.size(); ++i)
      if (shadows_[i].first == mem) return &shadows_[last_ = i].second;
    return nullptr;
  }
  // The memories some op writes, with their shadows: a few per core, searched in order (the
  // last one found first: an op's spans and the next op's are mostly of the same memories),
  // cheaper than hashing each span's memory twice.
  std::vector<std::pair<uint64_t, Shadow>> shadows_;
  size_t last_ = 0;
  bool ok_ = true;
  int core_ = 0;           // advance(): the core it runs
  bool progress_ = false;  // ... and whether some core moved in this round
  size_t steps_ = 0;       // steps taken
};
}  // namespace

namespace {
/// Each GM span's bytes relative to the first span of its tensor and base in the streams: two
/// blocks whose streams are equal in this form replay alike (the replay compares spans of one
/// tensor and base only by overlap and cover, which a common translation keeps).
struct Canonical {
  std::map<std::pair<uint64_t, int>, int64_t> origin;
  std::pair<int64_t, int64_t> bytes(const Span& s) {
    if (!(s.mem >> 63) || s.base < 0) return {s.lo, s.hi};
    const int64_t o = origin.try_emplace({s.mem, s.base}, s.lo).first->second;
    return {s.lo - o, s.hi - o};
  }
};

uint64_t mix(uint64_t h, uint64_t v) {
  return (h ^ v) * 0x100000001b3ull + (h >> 29);
}

uint64_t canonical_hash(const Streams& s) {
  Canonical c;
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& stream : s) {
    h = mix(h, stream.size());
    for (const Event& e : stream) {
      h = mix(h, (uint64_t{e.kind} << 40) ^ (uint64_t(e.pipe) << 32) ^ (uint64_t(e.dst) << 24) ^
                     uint64_t(uint32_t(e.id)));
      h = mix(h, reinterpret_cast<uintptr_t>(e.sync));
      for (const Span& sp : e.spans) {
        auto [lo, hi] = c.bytes(sp);
        h = mix(mix(mix(h, sp.mem ^ uint64_t(uint32_t(sp.base)) << 1 ^ sp.write), uint64_t(lo)),
                uint64_t(hi));
      }
    }
  }
  return h;
}

bool same_replay(const Streams& a, const Streams& b) {
  Canonical ca, cb;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].size() != b[k].size()) return false;
    for (size_t i = 0; i < a[k].size(); ++i) {
      const Event &x = a[k][i], &y = b[k][i];
      if (x.kind != y.kind || x.pipe != y.pipe || x.dst != y.dst || x.id != y.id ||
          x.channel != y.channel || x.push != y.push || x.first != y.first || x.sync != y.sync ||
          x.spans.size() != y.spans.size())
        return false;
      for (size_t j = 0; j < x.spans.size(); ++j) {
        const Span &u = x.spans[j], &v = y.spans[j];
        if (u.mem != v.mem || u.base != v.base || u.write != v.write || ca.bytes(u) != cb.bytes(v))
          return false;
      }
    }
  }
  return true;
}

}  // namespace

std::vector<size_t> replay_classes(const std::vector<Streams>& blocks) {
  std::vector<size_t> rep(blocks.size());
  // Streams of other lengths never replay alike (same_replay): a block whose three lengths no
  // other block has is its own class, not hashed (the Prover's sets of cid ranges, one per
  // trip count, ask this for every question).
  std::map<std::array<size_t, 3>, int> lengths;
  auto length = [&](size_t b) {
    return std::array<size_t, 3>{blocks[b][0].size(), blocks[b][1].size(), blocks[b][2].size()};
  };
  for (size_t b = 0; b < blocks.size(); ++b) ++lengths[length(b)];
  std::unordered_map<uint64_t, std::vector<size_t>> by_hash;
  for (size_t b = 0; b < blocks.size(); ++b) {
    rep[b] = b;
    if (lengths[length(b)] == 1) continue;
    auto& firsts = by_hash[canonical_hash(blocks[b])];
    for (size_t r : firsts)
      if (same_replay(blocks[r], blocks[b])) {
        rep[b] = r;
        break;
      }
    if (rep[b] == b) firsts.push_back(b);
  }
  return rep;
}

bool replay(const Streams& streams, const std::vector<Channel>& channels, const Query& q,
            const Prepared* prepared) {
  return Replayer(streams, channels, q, prepared).run();
}

void screen(const Streams& streams, const std::vector<Channel>& channels, const Query& q,
            const Prepared* prepared, const std::vector<std::vector<const SyncNode*>>& units,
            size_t cap, std::vector<bool>& refused) {
  Prepared own;
  if (!prepared) prepared = &(own = prepare(streams));  // a copy's consumers_ must outlive it
  Query quiet = q;
  quiet.matches = nullptr;
  std::map<const SyncNode*, size_t> unit_of;
  for (size_t u = 0; u < units.size(); ++u)
    for (const SyncNode* y : units[u]) unit_of.emplace(y, u);
  std::vector<bool> reached(units.size(), false);
  refused.resize(units.size(), false);
  // The replay with q's drops, paused before the first event of each unit's statements; there a
  // copy runs on with the unit dropped too, for `cap` steps at most.
  Replayer base(streams, channels, quiet, prepared);
  size_t unit = 0, left = units.size();
  auto first = [&](int, const Event& e) {
    if (!e.sync || (e.kind != Event::Set && e.kind != Event::Wait)) return false;
    auto it = unit_of.find(e.sync);
    if (it == unit_of.end() || reached[it->second]) return false;
    unit = it->second;
    return true;
  };
  // Once every unit is reached, the rest of the replay answers nothing.
  while (left > 0 && !base.advance(first)) {
    reached[unit] = true;
    --left;
    if (refused[unit]) continue;
    std::vector<const SyncNode*> drops(quiet.dropped.begin(), quiet.dropped.end());
    drops.insert(drops.end(), units[unit].begin(), units[unit].end());
    std::sort(drops.begin(), drops.end());
    Replayer trial = base;
    trial.drop(std::move(drops));
    const size_t stop = trial.steps() + cap;
    // Past `cap` steps the answer is left to the caller's full replays (a unit the replay
    // clears is not cleared whatever else the greedy sequence drops by then).
    if (trial.advance([&](int, const Event&) { return trial.steps() >= stop; }))
      refused[unit] = !trial.finished();
    else
      refused[unit] = trial.failed();
  }
}

}  // namespace tl::replay
