// The hazard checker's shadow memories (hazard_engine.h): each access checked against the
// recent accesses of its memory and recorded, the data-cache and small-Mmad rules, and the
// hazards as reports (docs/virtual_npu.md, "Hazard checker").
#include <algorithm>

#include "hazard_engine.h"
#include "tl/ops.h"
#include "tl/sync_rules.h"

namespace tl::npu::hazard_engine {

const Access* Engine::keep(const Access& a, int64_t block) {
  // A retired block's events are freed; the GM stores (and dccis) other blocks may still
  // conflict with are kept as copies (never freed: a deque, so the addresses stay; a GM read's
  // copy is its record's own, Rec::own). A launch checked after it ran keeps every event, and
  // uses them.
  if (!streaming_ || (a.mem.scope != MemScope::GM && a.mem.block == block)) return &a;
  return &kept_.emplace_back(a);
}

void Engine::free_rec(uint32_t id) {
  Rec& r = recs_[id];
  r.reads.reset();
  r.srcs.reset();
  free_.push_back(id);
}

/// True if every read in `rc` is ordered before an access starting with `start` in `block`.
bool Engine::all_before(const ReadClocks& rc, const Know& start, int64_t block) const {
  for (const auto& [b, vc] : rc.blocks)
    for (int i = 0; i < kLocal; ++i)
      if (vc[i] && !hb(b, static_cast<uint8_t>(i), vc[i], start, block)) return false;
  return true;
}

Shadow& Engine::shadow_of(const MemoryId& m) {
  auto [it, fresh] = shadow_.try_emplace(MemKey{static_cast<int>(m.scope), m.block, m.core});
  if (fresh) it->second.per_block = m.scope == MemScope::GM;
  return it->second;
}

void Engine::access(int ci, const TraceEvent& e, int p, uint32_t c, const Know& start) {
  const int64_t block = block_of(ci);
  const uint8_t t = static_cast<uint8_t>(slot_of(ci) * kPipes + p);
  // Check every access against the recent ones, then record them. A read conflicts only
  // with writes; the conflicts are reported in (start, insertion) order, as the single map
  // by start this replaced visited them.
  srcs_.clear();
  srcs_.resize(e.accesses.size());
  for (const Access& a : e.accesses) {
    if (inert(a)) continue;
    Shadow& sh = shadow_of(a.mem);
    cand_.clear();
    before_.clear();
    const bool gm_read = !a.write && a.mem.scope == MemScope::GM;
    const auto visit = [&](uint32_t id, uint64_t s, uint64_t q) {
      const Rec& r = recs_[id];
      if (r.atomic && a.atomic) return;  // atomic adds commute and do not tear
      // The O(1) order test first: most candidates of a synchronised program are ordered,
      // and overlaps() walks the rows of strided accesses (same result, either order).
      if (hb(r, start, block)) {
        if (gm_read && r.write) before_.push_back(id);
        return;
      }
      if (!overlaps(*r.acc, a)) return;
      cand_.push_back({s, q, id});
    };
    sh.writes.overlapping(a.start, a.end(), visit);
    if (a.write) sh.reads.overlapping(a.start, a.end(), visit);
    std::sort(cand_.begin(), cand_.end(), [](const Cand& x, const Cand& y) {
      return x.start != y.start ? x.start < y.start : x.seq < y.seq;
    });
    srcs_[static_cast<size_t>(&a - e.accesses.data())] = sources_of(recs_, before_, a);
    const Sources* mine = srcs_[static_cast<size_t>(&a - e.accesses.data())].get();
    for (const Cand& k : cand_) {
      const Rec& r = recs_[k.id];
      const bool same =
          r.write ? reads_same_bytes(mine, *r.acc, r.core)
                  : a.write && reads_same_bytes(r.srcs.get(), a, static_cast<uint32_t>(ci));
      if (!same) report(r, ci, e, a, start, block);
    }
  }
  for (const Access& a : e.accesses) {
    if (inert(a)) continue;
    Shadow& sh = shadow_of(a.mem);
    // A store that may later be found a duplicate keeps the clocks of the reads it replaces.
    const bool keep_reads = a.write && a.digested && a.mem.scope == MemScope::GM;
    std::unique_ptr<ReadClocks> reads;
    // Only accesses ordered before this one (or of this very event) are replaced: without a
    // sync_all behind it, only its own block's.
    const bool by_block = sh.per_block && start.gen == 0;
    kill_.clear();
    const auto visit = [&](uint32_t id, uint64_t, uint64_t) {
      const Rec& r = recs_[id];
      bool same = r.core == static_cast<uint32_t>(ci) && r.event == st_[ci].pc;
      if ((same || hb(r, start, block)) && covers(a, *r.acc)) kill_.push_back(id);
    };
    RangeIndex* rd = &sh.reads;
    RangeIndex* wr = &sh.writes;
    if (by_block) {
      auto& bl = sh.blocks[block];
      rd = &bl[0];
      wr = &bl[1];
    }
    rd->inside(a.start, a.end(), visit);
    if (a.write) wr->inside(a.start, a.end(), visit);
    for (uint32_t id : kill_) {
      Rec& r = recs_[id];
      if (keep_reads && (!r.write || r.reads)) {
        if (!reads) reads = std::make_unique<ReadClocks>();
        if (!r.write)
          reads->add(r.block, r.t, r.clock);
        else
          reads->merge(*r.reads);
      }
      index_of(sh, r, false).erase(r.start, r.end, r.seq);
      if (sh.per_block) index_of(sh, r, true).erase(r.start, r.end, r.seq);
      free_rec(id);
    }
    uint32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      id = static_cast<uint32_t>(recs_.size());
      recs_.emplace_back();
    }
    Rec& r = recs_[id];
    const bool own = streaming_ && !a.write && a.mem.scope == MemScope::GM;
    r = Rec{own ? nullptr : keep(a, block),
            static_cast<uint32_t>(ci),
            static_cast<uint32_t>(st_[ci].pc),
            block,
            t,
            a.write,
            a.atomic,
            c,
            a.start,
            a.end(),
            rec_seq_++,
            std::move(reads),
            std::move(srcs_[static_cast<size_t>(&a - e.accesses.data())]),
            EventInfo::of(e),
            {}};
    if (own) {
      r.own = a;
      r.acc = &r.own;
    }
    if (r.acc != &a) event_kept_.emplace_back(&a, r.acc);
    index_of(sh, r, false).insert(r.start, r.end, r.seq, id);
    if (sh.per_block) index_of(sh, r, true).insert(r.start, r.end, r.seq, id);
  }
}

/// The scalar unit's data cache over GM (AscendC DataCacheCleanAndInvalid): a scalar load of
/// GM bytes that DMA or another core wrote may read a stale cached line unless this core ran
/// a dcci covering them after the write; a scalar store stays in this core's cache (DMA and
/// the other cores read GM) until a dcci of this core writes it back. Both are reported as
/// hazards saying so, even when happens-before orders the two accesses.
void Engine::data_cache(int ci, const TraceEvent& e, int p, bool dcci) {
  ++seq_;
  const bool scalar = static_cast<Pipe>(p) == Pipe::S;
  for (const Access& a : e.accesses) {
    if (a.mem.scope != MemScope::GM) continue;
    if (dcci) {
      if (a.write) dcci_[ci].push_back({keep(a, block_of(ci)), seq_, e.mode == 1});
      continue;
    }
    if (!a.write) {
      // A scalar load: written since this core's last covering dcci by DMA or another core?
      // (Reported in (start, order of the writes), as the map by start this replaced did.)
      if (scalar) {
        cand_.clear();
        gm_write_index_.overlapping(a.start, a.end(), [&](uint32_t id, uint64_t s, uint64_t q) {
          const GmWrite& w = gm_writes_[id];
          if ((w.core != ci || !w.scalar) && overlaps(*w.acc, a) && !dcci_after(ci, w.seq, a))
            cand_.push_back({s, q, id});
        });
        std::sort(cand_.begin(), cand_.end(), [](const Cand& x, const Cand& y) {
          return x.start != y.start ? x.start < y.start : x.seq < y.seq;
        });
        for (const Cand& k : cand_)
          cache_hazard(gm_writes_[k.id], ci, e, a,
                       "a scalar load of GM that DMA or another core wrote reads this core's data "
                       "cache, which may hold the old bytes: dcci (DataCacheCleanAndInvalid) them "
                       "after the write, before the load");
      }
      // Anything but the storing core's own scalar unit reading bytes a scalar store left in
      // that core's cache (in the order of the stores).
      cand_.clear();
      scalar_write_index_.overlapping(a.start, a.end(), [&](uint32_t id, uint64_t, uint64_t) {
        const GmWrite& w = scalar_writes_[id];
        if ((w.core != ci || !scalar) && overlaps(*w.acc, a) && !dcci_after(w.core, w.seq, *w.acc))
          cand_.push_back({0, id, id});
      });
      std::sort(cand_.begin(), cand_.end(),
                [](const Cand& x, const Cand& y) { return x.seq < y.seq; });
      for (const Cand& k : cand_)
        cache_hazard(scalar_writes_[k.id], ci, e, a,
                     "a scalar store to GM stays in the storing core's data cache until a dcci "
                     "(DataCacheCleanAndInvalid) on that core writes it back");
      continue;
    }
    // The copy the shadow record of this store took, if any (one copy per store).
    const Access* kept = nullptr;
    for (const auto& [orig, copy] : event_kept_)
      if (orig == &a) kept = copy;
    const GmWrite w{ci,     kept ? kept : keep(a, block_of(ci)), seq_,
                    scalar, static_cast<uint32_t>(st_[ci].pc),   EventInfo::of(e)};
    const auto n = static_cast<uint32_t>(gm_writes_.size());
    gm_write_index_.insert(a.start, a.end(), n, n);
    gm_writes_.push_back(w);
    if (scalar) {
      const auto m = static_cast<uint32_t>(scalar_writes_.size());
      scalar_write_index_.insert(a.start, a.end(), m, m);
      scalar_writes_.push_back(w);
    }
  }
}
/// True if core `core` ran a dcci covering `a` after data-cache step `seq`.
bool Engine::dcci_after(int core, uint64_t seq, const Access& a) const {
  auto it = dcci_.find(core);
  if (it == dcci_.end()) return false;
  const auto& v = it->second;  // in seq order: skip the earlier ones
  auto d = std::upper_bound(v.begin(), v.end(), seq,
                            [](uint64_t s, const Dcci& x) { return s < x.seq; });
  for (; d != v.end(); ++d)
    if (d->entire || covers(*d->acc, a)) return true;
  return false;
}
void Engine::cache_hazard(const GmWrite& w, int ci, const TraceEvent& e, const Access& a,
                          const char* why) {
  Hazard h;
  h.kind = "RAW";
  h.memory = "GM";
  h.first = side(w.core, w.event, w.info, *w.acc);
  h.second = side(ci, st_[ci].pc, EventInfo::of(e), a);
  h.why = why;
  add_rule_hazard(std::move(h));
}

/// Records a hazard of a rule beyond "unordered" (`why` set), once per pair of source lines.
void Engine::add_rule_hazard(Hazard h) {
  auto same = std::find_if(hazards.begin(), hazards.end(), [&](const Hazard& o) {
    return o.why == h.why && o.first.loc.str() == h.first.loc.str() &&
           o.second.loc.str() == h.second.loc.str();
  });
  if (same != hazards.end())
    ++same->count;
  else
    hazards.push_back(std::move(h));
}

/// An Mmad accumulating into the L0C tile the previous Mmad wrote, without a
/// PipeBarrier<PIPE_M> between them, when the tile is small (mmad_needs_m_barrier).
void Engine::small_mmad(int ci, const TraceEvent& e) {
  CoreState& s = st_[ci];
  const size_t ev = s.pc;
  const auto l0c_write = [](const TraceEvent& x) -> const Access* {
    for (const Access& a : x.accesses)
      if (a.write && a.mem.scope == MemScope::L0C) return &a;
    return nullptr;
  };
  if (e.accumulates && !s.m_barrier_since && s.last_mmad != SIZE_MAX &&
      mmad_needs_m_barrier(e.m, e.n)) {
    const TraceEvent& prev = tr_.cores[ci].events[s.last_mmad];
    const Access *a = l0c_write(e), *b = l0c_write(prev);
    if (a && b && overlaps(*a, *b)) {
      Hazard h;
      h.kind = "RAW";
      h.memory = memory_name(a->mem);
      h.first = side(ci, s.last_mmad, EventInfo::of(prev), *b);
      h.second = side(ci, ev, EventInfo::of(e), *a);
      h.why = fmt::format(
          "an Mmad accumulating into a {} x {} tile ({} fractals, fewer than 10) needs "
          "pipe_barrier(M) after the previous Mmad into it (AscendC Mmad sync notes)",
          e.m, e.n, ((e.m + 15) / 16) * ((e.n + 15) / 16));
      add_rule_hazard(std::move(h));
    }
  }
  s.last_mmad = ev;
  s.m_barrier_since = false;
}

HazardSide Engine::side(int ci, size_t ev, const EventInfo& e, const Access& a) const {
  HazardSide s;
  s.op = e.name;
  s.pipe = e.pipe;
  s.core = core_name_of(ci);
  s.buffer = a.buffer;
  s.start = a.start;
  s.end = a.end();
  s.write = a.write;
  s.loc = e.loc;
  s.core_index = ci;
  s.event = ev;
  if (a.mem.scope == MemScope::GM) {
    const auto& gm = tr_.cores[static_cast<size_t>(ci)].gm;
    if (auto it = gm.find(a.buffer); it != gm.end())
      s.where = gm_elements(a.buffer, it->second, a.start, a.end());
  }
  return s;
}

void Engine::report(const Rec& r, int ci, const TraceEvent& e, const Access& a, const Know& start,
                    int64_t block) {
  const EventInfo& first = r.info;
  std::string kind = r.acc->write ? (a.write ? "WAW" : "RAW") : "WAR";
  std::string why;
  bool duplicate = false;
  if (same_bytes(*r.acc, static_cast<int>(r.core), a, ci)) {
    // Identical bytes; a read the first store replaced in the shadow (it was ordered before
    // that store) must be ordered before this one too, or it may see this store's bytes.
    duplicate = !r.reads || all_before(*r.reads, start, block);
    if (!duplicate)
      why =
          "both store the same bytes, but a read of them ordered before the first store is "
          "not ordered before the second: it may read the second store's bytes";
  }
  auto& seen = duplicate ? seen_dup_ : seen_;
  auto& out = duplicate ? duplicates : hazards;
  std::string key =
      fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", first.loc.str(), e.loc.str(), r.acc->buffer,
                  a.buffer, kind, first.name, e.name, pipe_name(e.pipe), why);
  auto [it, fresh] = seen.emplace(key, out.size());
  if (!fresh) {
    ++out[it->second].count;
    return;
  }
  Hazard h;
  h.kind = kind;
  h.memory = memory_name(a.mem);
  h.first = side(static_cast<int>(r.core), r.event, r.info, *r.acc);
  h.second = side(ci, st_[ci].pc, EventInfo::of(e), a);
  h.why = std::move(why);
  h.duplicate = duplicate;
  out.push_back(std::move(h));
}

}  // namespace tl::npu::hazard_engine
