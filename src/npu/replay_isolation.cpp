// Which tile ops the time-ordered replay may execute in place at their start (see the header
// for the argument). One sweep over the ops in start order keeps, per memory (an on-chip
// memory of a physical core, or a 64 KB chunk of GM host addresses), the ops whose simulated
// interval is still open; an op that conflicts on a byte with one of them (one of the two
// writes it) makes both non-isolated. Scalar loads and stores (Let / Store events of the S pipe)
// act when the interpreter reaches them, which the trace does not pin to a cycle exactly, so an
// op touching the bytes of one at any time is not isolated.
#include "replay_isolation.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <unordered_map>

#include "tl/ir_functor.h"

namespace tl::npu {
namespace {

constexpr uint64_t kOnChip = uint64_t{1} << 62;  // keys of on-chip memories (GM: address chunks)
constexpr int kChunkBits = 16;

using Span = IsolatedOps::Span;
using Group = IsolatedOps::Group;

/// Does some run of `y` intersect [s, e)? (as trace_record.cpp's overlaps)
bool hits_run(const Span& y, uint64_t s, uint64_t e) {
  if (e <= y.start || s >= y.end()) return false;
  if (y.count == 1 || y.pitch <= y.len) return true;
  uint64_t j = s < y.start + y.len ? 0 : (s - y.start - y.len) / y.pitch + 1;
  return j < y.count && y.start + j * y.pitch < e;
}

bool overlap(const Span& a, const Span& b) {
  if (a.gm != b.gm || (!a.gm && a.key != b.key)) return false;
  if (a.len == 0 || b.len == 0 || a.count == 0 || b.count == 0) return false;
  if (a.end() <= b.start || b.end() <= a.start) return false;
  const Span& x = a.count <= b.count ? a : b;
  const Span& y = a.count <= b.count ? b : a;
  if (x.count == 1 || x.pitch <= x.len) return hits_run(y, x.start, x.end());
  for (uint64_t i = 0; i < x.count; ++i) {
    uint64_t s = x.start + i * x.pitch;
    if (hits_run(y, s, s + x.len)) return true;
  }
  return false;
}

/// Sorted, merged byte intervals [lo, hi).
struct Intervals {
  std::vector<std::pair<uint64_t, uint64_t>> v;
  void add(const Span& s) {
    if (s.len == 0 || s.count == 0) return;
    if (s.count == 1 || s.pitch <= s.len) return v.push_back({s.start, s.end()});
    for (uint64_t i = 0; i < s.count; ++i)
      v.push_back({s.start + i * s.pitch, s.start + i * s.pitch + s.len});
  }
  void finish() {
    std::sort(v.begin(), v.end());
    size_t w = 0;
    for (const auto& iv : v) {
      if (w > 0 && iv.first <= v[w - 1].second)
        v[w - 1].second = std::max(v[w - 1].second, iv.second);
      else
        v[w++] = iv;
    }
    v.resize(w);
  }
  bool hits(uint64_t lo, uint64_t hi) const {
    // The first interval ending after lo (ends are sorted too: the intervals are disjoint).
    auto it = std::upper_bound(v.begin(), v.end(), lo,
                               [](uint64_t x, const auto& iv) { return x < iv.second; });
    return it != v.end() && it->first < hi;
  }
  bool hits(const Span& s) const {
    if (v.empty() || s.len == 0 || s.count == 0 || !hits(s.start, s.end())) return false;
    if (s.count == 1 || s.pitch <= s.len) return true;
    for (uint64_t i = 0; i < s.count; ++i)
      if (hits(s.start + i * s.pitch, s.start + i * s.pitch + s.len)) return true;
    return false;
  }
};

/// Does x's write land before y reads, in the replay's action order? Commits at a cycle go
/// before starts at that cycle, except for an op without duration, whose commit is queued when
/// it starts: it may come after another start at that cycle.
bool before(const Group& x, const Group& y) {
  return x.finish < y.start || (x.finish == y.start && x.start < x.finish);
}

}  // namespace

bool replay_shortcuts_enabled() {
  const char* v = std::getenv("TL_REPLAY_IN_PLACE");
  return !(v && std::string(v) == "0");
}

bool loads_are_traced(const Program& p) {
  struct Finder : IRVisitor {
    bool found = false;
    void visit_(const LoadNode* n) override {
      if (n->buffer->scope != MemScope::Var) found = true;
      IRVisitor::visit_(n);
    }
  };
  Finder f;
  auto check = [&](const Expr& e) {
    if (e.defined()) f.visit(e);
  };
  pre_order_visit(p.func->body, [&](const Stmt& s) {
    switch (s->kind) {
      case StmtKind::If:
        check(static_cast<const IfNode*>(s.get())->cond);
        break;
      case StmtKind::For: {
        auto* n = static_cast<const ForNode*>(s.get());
        check(n->min);
        check(n->extent);
        break;
      }
      case StmtKind::Sync:
        check(static_cast<const SyncNode*>(s.get())->event_id);
        break;
      case StmtKind::TileOp:
        for (const auto& a : static_cast<const TileOpNode*>(s.get())->args) {
          check(a.scalar);
          for (const auto& r : a.region.ranges) {
            check(r.min);
            check(r.extent);
          }
        }
        break;
      default:  // Let and Store record their loads as S-pipe events
        break;
    }
  });
  return !f.found;
}

IsolatedOps::IsolatedOps(const Program& p, const Trace& trace, const Profile& prof, bool enabled) {
  const size_t n = trace.cores.size();
  first_.resize(n);
  if (!enabled || !loads_are_traced(p)) return;
  std::vector<std::vector<int>> instr_of(n);
  for (size_t c = 0; c < n; ++c) instr_of[c].assign(trace.cores[c].events.size(), -1);
  for (size_t i = 0; i < prof.instrs.size(); ++i)
    instr_of[prof.instrs[i].core][prof.instrs[i].event] = static_cast<int>(i);

  std::vector<Group>& groups = all_;
  std::vector<Span>& spans = spans_;
  std::vector<uint32_t> span_group;
  bool gm_scalar = false;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (size_t c = 0; c < n; ++c) {
    const auto& ev = trace.cores[c].events;
    first_[c].assign(ev.size(), 0);
    for (size_t i = 0; i < ev.size();) {
      size_t j = i + 1;
      while (j < ev.size() && ev[j].continues) ++j;
      Group g{static_cast<int>(c),
              static_cast<uint32_t>(i),
              static_cast<uint32_t>(spans.size()),
              0,
              kInf,
              -kInf,
              false,
              true};
      for (size_t e = i; e < j; ++e) {
        g.scalar |= ev[e].kind == EventKind::Op && ev[e].pipe == Pipe::S;
        if (int ti = instr_of[c][e]; ti >= 0) {
          g.start = std::min(g.start, prof.instrs[ti].start);
          g.finish = std::max(g.finish, prof.instrs[ti].end);
        }
        for (const Access& a : ev[e].accesses) {
          Span s{a.mem.scope == MemScope::GM, 0, a.start, a.len, a.pitch, a.count, a.write};
          if (!s.gm) {
            const int phys = trace.cores[a.mem.block * 3 + a.mem.core].phys;
            s.key = kOnChip + static_cast<uint64_t>((phys * 3 + a.mem.core) * kNumMemScopes +
                                                    static_cast<int>(a.mem.scope));
          }
          // An atomic read-modify-write acts at its end with the replay's own mechanism.
          if (a.atomic) g.isolated = false;
          spans.push_back(s);
          span_group.push_back(static_cast<uint32_t>(groups.size()));
        }
      }
      g.span_end = static_cast<uint32_t>(spans.size());
      // No timed event (none today): the replay places it at the present; it overlaps anything.
      if (g.start > g.finish) {
        g.start = -kInf;
        g.finish = kInf;
      }
      if (g.scalar)
        for (uint32_t k = g.span_begin; k < g.span_end; ++k) gm_scalar |= spans[k].gm;
      if (g.span_end > g.span_begin) groups.push_back(g);
      i = j;
    }
  }

  // Scalar loads and stores: an op touching their bytes (one of the two writing) at any time.
  std::unordered_map<uint64_t, std::pair<Intervals, Intervals>> scalar;  // key: reads, writes
  for (const Group& g : groups)
    if (g.scalar)
      for (uint32_t k = g.span_begin; k < g.span_end; ++k)
        if (!spans[k].gm) {
          auto& rw = scalar[spans[k].key];
          (spans[k].write ? rw.second : rw.first).add(spans[k]);
        }
  for (auto& [key, rw] : scalar) {
    rw.first.finish();
    rw.second.finish();
  }
  std::vector<uint32_t>& order = order_;
  for (uint32_t gi = 0; gi < groups.size(); ++gi) {
    Group& g = groups[gi];
    if (g.scalar) {
      g.isolated = false;
      continue;
    }
    order.push_back(gi);
    for (uint32_t k = g.span_begin; k < g.span_end && g.isolated; ++k) {
      const Span& s = spans[k];
      // GM scalar accesses go through the data cache: whole lines, filled and written back
      // when the interpreter gets there.
      if (s.gm) {
        g.isolated = !gm_scalar;
        continue;
      }
      auto it = scalar.find(s.key);
      if (it != scalar.end() &&
          (it->second.second.hits(s) || (s.write && it->second.first.hits(s))))
        g.isolated = false;
    }
  }
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const Group &x = groups[a], &y = groups[b];
    if (x.start != y.start) return x.start < y.start;
    return a < b;
  });

  // The sweep: `open` holds, per memory bucket, the spans of ops not yet ended.
  std::unordered_map<uint64_t, std::vector<uint32_t>> open;
  auto visit = [&](uint64_t bucket, uint32_t k, uint32_t gi) {
    Group& g = groups[gi];
    auto& list = open[bucket];
    size_t w = 0;
    for (uint32_t x : list) {
      Group& gx = groups[span_group[x]];
      if (before(gx, g)) continue;  // ended: closed for every later op too
      list[w++] = x;
      if (span_group[x] == gi || (!g.isolated && !gx.isolated)) continue;
      if ((spans[k].write || spans[x].write) && overlap(spans[k], spans[x]))
        g.isolated = gx.isolated = false;
    }
    list.resize(w);
    list.push_back(k);
  };
  for (uint32_t gi : order) {
    for (uint32_t k = groups[gi].span_begin; k < groups[gi].span_end; ++k) {
      const Span& s = spans[k];
      if (s.len == 0 || s.count == 0) continue;
      if (!s.gm) {
        visit(s.key, k, gi);
        continue;
      }
      for (uint64_t b = s.start >> kChunkBits; b <= (s.end() - 1) >> kChunkBits; ++b)
        visit(b, k, gi);
    }
  }
  all_isolated_ = true;
  for (const Group& g : groups) {
    all_isolated_ &= g.isolated;  // scalar groups never are
    if (g.scalar) continue;
    ++groups_;
    if (!g.isolated) continue;
    ++isolated_;
    first_[g.core][g.first] = 1;
  }
  if (!all_isolated_) {  // the replay cannot be skipped: free what only that check reads
    all_ = {};
    spans_ = {};
    order_ = {};
  }
}

}  // namespace tl::npu
