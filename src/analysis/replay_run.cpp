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
#include <unordered_set>

#include "replay_shadow.h"
#include "tl/replay.h"
#include "tl/sync_rules.h"

namespace tl::replay {

using namespace detail;  // the shadow (replay_shadow.h) is this file's, apart for length

Prepared prepare(const Streams& streams) {
  Prepared p;
  uint64_t last = 0;
  for (int c = 0; c < 3; ++c)
    for (const Event& e : streams[c].stored()) {  // the memories in the order first written
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
    fold(shortcuts());
    advance([](int, const Event&) { return false; });
    return finished();
  }

  /// Whether advance() folds the periods that repeat (below). A caller's pause must then be one
  /// that fires only on a statement's first event (the skipped events' statements are the last
  /// period's, every one of them already seen by it) or on a count of steps (which counts the
  /// skipped ones, none of which fails).
  void fold(bool on) {
    fold_ = on;
    history_.clear();  // snapshots of another query's replay (a copy's base) compare nothing
    probed_ = SIZE_MAX;
    next_probe_ = steps_;
    misses_ = 0;
    if (!on) return;
    pushers_ = {};
    if (q_.slot_channel >= 0)  // the cores that push the checked channel's slots
      for (int c = 0; c < 3; ++c)
        for (const Event& e : streams_[c].stored())
          if (e.channel == q_.slot_channel && e.push && e.first) {
            pushers_[c] = true;
            break;
          }
    lead_ = 0;
    while (lead_ < 2 && streams_[lead_].empty()) ++lead_;  // the first core with a stream
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
        if (fold_ && core_ == lead_ && streams_[core_][s.pc].sync) probe();
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

  // The loop fold (docs/compiler.md, "Compile latency"). A replay's step is a function of the
  // state and the event: it takes maxima and comparisons of clocks, increments issue counts,
  // and compares spans of written memories (the others have no records). So where the state
  // with the lead core (the first with a stream) about to run a statement again equals the state it
  // had the last time, every clock moved by its timeline's issue count (phi below: v -> v + delta
  // for v > 0, 0 kept, a strictly increasing map, under which maxima, comparisons and increments
  // commute), and the events from there on repeat the events of that period (the same kinds, flags,
  // statements and written spans), the replay of the next period is the last one's, shifted: after
  // m periods the state is the snapshot's shifted m times, and no step of them fails (none of the
  // last period's did). A record every pipe that may access its memory already knows complete can
  // never conflict again (clocks only grow), nor changes another record's fate: the states are
  // compared without such records. The matches of the skipped periods are the last period's again,
  // already reported.
  struct Snapshot {
    const SyncNode* marker = nullptr;
    std::array<size_t, 3> pc{};
    Clock issued{};  // per timeline
    std::array<std::array<Clock, kPipes>, 3> know{};
    std::vector<std::tuple<int, std::tuple<int, int, int>, Clock, const SyncNode*>> flags;
    std::vector<std::pair<std::pair<int, int>, Clock>> cross;
    std::vector<Rec> live;  // sorted (by_record)
    bool progress = false;
    size_t steps = 0;
    // The slot check's channel: the tiles each core pushed, and the pops of each consumer from
    // the first a later push reads (the pushers' least count less the slots) on.
    std::array<int, 3> pushes{};
    int64_t first_read = 0;
    std::array<size_t, 3> popped{};  // each consumer's pops in all
    std::array<std::vector<std::pair<int, uint32_t>>, 3> pops;
  };
  static constexpr size_t kProbe = 64;       // steps between snapshots when none is pending
  static constexpr size_t kForget = 2048;    // steps after which a marker not seen again goes
  static constexpr int kMisses = 8;          // snapshots of one marker that differ, at most
  static constexpr size_t kHistory = 4;      // snapshots of it compared with a new one
  static constexpr size_t kFreeWork = 2048;  // snapshot work allowed whatever the steps

  static bool by_record(const Rec& x, const Rec& y) {
    return std::tie(x.span.mem, x.span.base, x.span.lo, x.span.hi, x.span.write, x.core, x.timeline,
                    x.clock) < std::tie(y.span.mem, y.span.base, y.span.lo, y.span.hi, y.span.write,
                                        y.core, y.timeline, y.clock);
  }
  static bool same_record(const Rec& x, const Rec& y) {
    return !by_record(x, y) && !by_record(y, x);
  }

  Snapshot take(const SyncNode* marker) {
    Snapshot n;
    n.marker = marker;
    for (int c = 0; c < 3; ++c) {
      n.pc[c] = cores_[c].pc;
      n.know[c] = cores_[c].know;
      for (int p = 0; p < kPipes; ++p) n.issued[c * kPipes + p] = cores_[c].issued[p];
      for (const auto& [key, sets] : cores_[c].flags)
        for (const auto& [clock, y] : sets) n.flags.emplace_back(c, key, clock, y);
    }
    for (const auto& [key, sets] : cross_)
      for (const Clock& k : sets) n.cross.emplace_back(key, k);
    // What each core's pipes all know of each timeline: a record below it is dead for the cores
    // that may access its memory (an on-chip memory is its core's: memory_key).
    std::array<Clock, 3> least;
    for (int c = 0; c < 3; ++c) {
      least[c] = cores_[c].know[0];
      for (int p = 1; p < kPipes; ++p)
        for (int t = 0; t < kClock; ++t) least[c][t] = std::min(least[c][t], cores_[c].know[p][t]);
    }
    size_t records = 0;
    for (auto& [mem, sh] : shadows_)
      sh.each([&](const Rec& r) {
        ++records;
        const bool gm = mem >> 63;
        const int owner = static_cast<int>(mem & 3);
        bool live = false;
        for (int c = 0; c < 3; ++c)
          if ((gm || c == owner) && least[c][r.timeline] < r.clock) live = true;
        if (live) n.live.push_back(r);
      });
    std::sort(n.live.begin(), n.live.end(), by_record);
    work_ += records + 16 * n.live.size();
    if (q_.slot_channel >= 0) {
      const int ch = q_.slot_channel;
      int64_t least = INT64_MAX;
      for (int c = 0; c < 3; ++c) {
        auto it = cores_[c].pushes.find(ch);
        n.pushes[c] = it == cores_[c].pushes.end() ? 0 : it->second;
        if (pushers_[c]) least = std::min<int64_t>(least, n.pushes[c]);
      }
      n.first_read = least == INT64_MAX ? 0 : least - channels_[ch].slots;
      for (int o = 0; o < 3; ++o) {
        auto it = cores_[o].pops.find(ch);
        if (!consumers_->count({o, ch}) || it == cores_[o].pops.end() || n.first_read < 0) continue;
        const size_t from = static_cast<size_t>(n.first_read);
        n.popped[o] = it->second.size();
        if (from < it->second.size()) n.pops[o].assign(it->second.begin() + from, it->second.end());
      }
    }
    n.progress = progress_;
    n.steps = steps_;
    return n;
  }

  /// Whether `b` is `a` with every clock moved by phi; `delta`: each timeline's issue count.
  bool alike(const Snapshot& a, const Snapshot& b, Clock& delta) const {
    for (int t = 0; t < kClock; ++t) {
      if (b.issued[t] < a.issued[t]) return false;
      delta[t] = b.issued[t] - a.issued[t];
      if (a.issued[t] == 0 && delta[t] != 0) return false;  // phi(0) is 0
    }
    auto phi = [&](const Clock& x, const Clock& y) {  // y == phi(x)
      for (int t = 0; t < kClock; ++t)
        if (y[t] != (x[t] ? x[t] + delta[t] : 0)) return false;
      return true;
    };
    if (a.progress != b.progress || a.flags.size() != b.flags.size() ||
        a.cross.size() != b.cross.size() || a.live.size() != b.live.size())
      return false;
    for (int c = 0; c < 3; ++c)
      for (int p = 0; p < kPipes; ++p)
        if (!phi(a.know[c][p], b.know[c][p])) return false;
    for (size_t i = 0; i < a.flags.size(); ++i) {
      const auto &x = a.flags[i], &y = b.flags[i];
      if (std::get<0>(x) != std::get<0>(y) || std::get<1>(x) != std::get<1>(y) ||
          std::get<3>(x) != std::get<3>(y) || !phi(std::get<2>(x), std::get<2>(y)))
        return false;
    }
    for (size_t i = 0; i < a.cross.size(); ++i)
      if (a.cross[i].first != b.cross[i].first || !phi(a.cross[i].second, b.cross[i].second))
        return false;
    if (q_.slot_channel >= 0) {
      // Every pusher pushed the same tiles in the period, each consumer popped as many, and a
      // later push reads only pops both snapshots hold (none before the first: a push there
      // checks nothing, its period's counterpart would).
      if (a.first_read < 0) return false;
      int64_t tiles = -1;
      for (int c = 0; c < 3; ++c) {
        if (!pushers_[c]) continue;
        if (tiles >= 0 && b.pushes[c] - a.pushes[c] != tiles) return false;
        tiles = b.pushes[c] - a.pushes[c];
      }
      if (tiles < 0) tiles = 0;  // no pusher: no check reads the pops
      if (b.first_read != a.first_read + tiles) return false;
      for (int o = 0; o < 3; ++o) {
        if (!consumers_->count({o, q_.slot_channel})) continue;
        if (b.popped[o] != a.popped[o] + static_cast<size_t>(tiles) ||
            a.pops[o].size() != b.pops[o].size())
          return false;
        for (size_t i = 0; i < a.pops[o].size(); ++i) {
          const auto &x = a.pops[o][i], &y = b.pops[o][i];
          if (x.first != y.first || y.second != x.second + delta[o * kPipes + x.first])
            return false;
        }
      }
    }
    std::vector<Rec> moved = a.live;
    for (Rec& r : moved) r.clock += delta[r.timeline];  // live clocks are > 0
    std::sort(moved.begin(), moved.end(), by_record);
    return std::equal(moved.begin(), moved.end(), b.live.begin(), same_record);
  }

  bool written(uint64_t mem) const {
    for (const auto& [m, sh] : shadows_)
      if (m == mem) return true;
    return false;
  }
  /// Whether `x` replays as `y` does: the same event but for spans of memories no op writes.
  bool same_event(const Event& x, const Event& y) const {
    if (x.kind != y.kind || x.pipe != y.pipe || x.dst != y.dst || x.id != y.id ||
        x.channel != y.channel || x.push != y.push || x.first != y.first || x.sync != y.sync)
      return false;
    if (!q_.accesses) return true;
    auto equal = [](const Span& u, const Span& v) {
      return u.mem == v.mem && u.base == v.base && u.lo == v.lo && u.hi == v.hi &&
             u.write == v.write;
    };
    if (std::equal(x.spans.begin(), x.spans.end(), y.spans.begin(), y.spans.end(), equal))
      return true;  // most events of a period: no span moved
    size_t i = 0, j = 0;
    for (;; ++i, ++j) {
      while (i < x.spans.size() && !written(x.spans[i].mem)) ++i;
      while (j < y.spans.size() && !written(y.spans[j].mem)) ++j;
      if (i == x.spans.size() || j == y.spans.size())
        return i == x.spans.size() && j == y.spans.size();
      if (!equal(x.spans[i], y.spans[j])) return false;
    }
  }
  /// How many periods (from `a` to `b`) the events after `b` repeat: on each core that moved,
  /// every event from b's pc through the m-th period's end, and the one after it (where the
  /// core may stop, blocked), is the event a period before it.
  size_t periods(const Snapshot& a, const Snapshot& b) const {
    size_t m = SIZE_MAX;
    for (int c = 0; c < 3 && m > 0; ++c) {
      const size_t period = b.pc[c] - a.pc[c];
      if (period == 0) continue;  // blocked or finished the whole period: it stays so
      const auto& s = streams_[c];
      const size_t need = m == SIZE_MAX ? SIZE_MAX : m * period + 1;
      size_t run = 0;
      for (size_t p = b.pc[c], end = 0; p < s.size() && run < need;) {
        // A run of alike iterations (Stream) a multiple of its iteration apart: equal throughout.
        if (s.same_in_run(p - period, p, &end)) {
          const size_t n = std::min(end - p, need - run);
          run += n, p += n;
          continue;
        }
        if (!same_event(s[p], s[p - period])) break;
        ++run, ++p;
      }
      m = run == 0 ? 0 : std::min(m, (run - 1) / period);
    }
    return m == SIZE_MAX ? 0 : m;
  }

  /// The state `m` periods on: every clock moved by phi m times, every pc by m periods.
  void jump(const Snapshot& a, const Snapshot& b, const Clock& delta, size_t m) {
    Clock d;
    for (int t = 0; t < kClock; ++t) d[t] = static_cast<uint32_t>(delta[t] * m);
    auto shift = [&](Clock& k) {
      for (int t = 0; t < kClock; ++t)
        if (k[t]) k[t] += d[t];
    };
    for (int c = 0; c < 3; ++c) {
      Core& s = cores_[c];
      s.pc += m * (b.pc[c] - a.pc[c]);
      for (int p = 0; p < kPipes; ++p) {
        s.issued[p] += d[c * kPipes + p];
        shift(s.know[p]);
      }
      for (auto& [key, sets] : s.flags)
        for (auto& set : sets) shift(set.first);
    }
    for (auto& [key, sets] : cross_)
      for (Clock& k : sets) shift(k);
    for (auto& [mem, sh] : shadows_) sh.each([&](Rec& r) { r.clock += d[r.timeline]; });
    if (q_.slot_channel >= 0) {
      // Each pusher's count moves m periods on; each consumer's pops grow by m periods' worth,
      // each pop the one a period before it moved by phi (alike() compared the readable ones).
      const int ch = q_.slot_channel;
      int tiles = 0;
      for (int c = 0; c < 3; ++c)
        if (pushers_[c]) {
          tiles = b.pushes[c] - a.pushes[c];
          cores_[c].pushes[ch] += static_cast<int>(m) * tiles;
        }
      for (int o = 0; o < 3; ++o) {
        if (!consumers_->count({o, ch})) continue;
        auto& pops = cores_[o].pops[ch];
        const size_t add = m * static_cast<size_t>(tiles);
        for (size_t i = 0; i < add; ++i) {  // alike(): the period's pops are the last `tiles`
          auto p = pops[pops.size() - static_cast<size_t>(tiles)];
          p.second += delta[o * kPipes + p.first];
          pops.push_back(p);
        }
      }
    }
    // The skipped periods' matches are the last period's, already reported (Query::matches is
    // a set of pairs): appending them m times made the report, and its reader, linear in the
    // trip count.
    steps_ += m * (b.steps - a.steps);
  }

  /// The lead core is about to run an event with a statement: a snapshot, or a fold where the
  /// last snapshot at this statement repeats.
  void probe() {
    const size_t pc = cores_[lead_].pc;
    if (pc == probed_) return;  // blocked here last round: the same state
    probed_ = pc;
    // Snapshots cost the records they visit and sort: kept to a fraction of the steps, so that
    // a replay whose periods never repeat (each row tile's records live on) pays little for them.
    if (work_ > 2 * steps_ + kFreeWork) return;
    const SyncNode* y = streams_[lead_][pc].sync;
    if (!history_.empty() && steps_ - history_.back().steps > kForget) history_.clear();
    if (history_.empty()) {
      // A marker is a statement seen before: one in a loop, which may come again.
      if (steps_ < next_probe_) return;
      if (seen_.insert(y).second) return;
      history_.push_back(take(y));
      misses_ = 0;
      return;
    }
    if (y != history_.back().marker) return;
    Snapshot now = take(y);
    // A period may span several visits (a loop whose schedule alternates between two phases):
    // the latest snapshots of the marker are each compared, the most recent first.
    for (size_t i = history_.size(); i-- > 0;) {
      Clock delta{};
      if (!alike(history_[i], now, delta)) continue;
      if (const size_t m = periods(history_[i], now); m > 0) {
        jump(history_[i], now, delta, m);
        if (q_.skipped) *q_.skipped += m;
        history_.clear();
        next_probe_ = steps_;
        return;
      }
    }
    if (++misses_ > kMisses) {
      history_.clear();
      next_probe_ = steps_ + kProbe;
      return;
    }
    if (history_.size() == kHistory) history_.erase(history_.begin());
    history_.push_back(std::move(now));
  }

  bool fold_ = false;
  std::array<bool, 3> pushers_{};             // the cores that push the slot check's channel
  std::unordered_set<const SyncNode*> seen_;  // the lead core's statements run so far
  int lead_ = 0;  // the core whose statements mark the periods: the first with a stream
  std::vector<Snapshot> history_;  // the latest snapshots of one marker, oldest first
  size_t probed_ = SIZE_MAX, next_probe_ = 0;
  size_t work_ = 0;  // records the snapshots visited, and sorted (x16)
  int misses_ = 0;

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
    for (const Stream::Run& r : stream.runs()) h = mix(mix(mix(h, r.at), r.len), r.count);
    for (const Event& e : stream.stored()) {
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
  // Stored events and runs equal: the streams are (their runs' first occurrence of each tensor
  // and base is in their stored iteration, so the origins are the same).
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].size() != b[k].size() || a[k].stored().size() != b[k].stored().size() ||
        a[k].runs().size() != b[k].runs().size())
      return false;
    for (size_t i = 0; i < a[k].runs().size(); ++i) {
      const Stream::Run &x = a[k].runs()[i], &y = b[k].runs()[i];
      if (x.at != y.at || x.len != y.len || x.count != y.count) return false;
    }
    for (size_t i = 0; i < a[k].stored().size(); ++i) {
      const Event &x = a[k].stored()[i], &y = b[k].stored()[i];
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
  // The baseline folds (its pause fires at a unit's first event only), and so do the copies:
  // their steps count the skipped periods' (jump()), in which no step fails, so a copy stops
  // where it would have, or just after a jump past it, with the same answer (a jump leaves an
  // event on every core that moved, where the pause stops it).
  base.fold(shortcuts());
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
    trial.fold(shortcuts());  // its own snapshots: it drops more than the baseline
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
