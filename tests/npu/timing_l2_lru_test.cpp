// The L2 model's recency rule (src/npu/timing_l2.h; docs/calibration.md, "Known gaps of the
// model"): an LRU of 512-byte blocks with a byte budget of L2's capacity. Hand-made traces of
// GM copies on one pipe, so that the model sees them in program order, with L2 shrunk to 1 MB:
// a hot set re-read after a cold stream smaller than L2 hits, after one larger than L2 misses,
// a hot set refreshed inside a long stream keeps hitting (FlashAttention's K/V and workspaces),
// a stream larger than L2 read twice hits nothing, the write rule, exact bytes on odd rows, and
// the same cycles on every run and for any host thread count.
#include <gtest/gtest.h>

#include <bitset>
#include <map>
#include <random>
#include <string>

#include "npu/example_cases.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"

namespace tl {
namespace {

using npu::Access;
using npu::Trace;
using npu::TraceEvent;

constexpr uint64_t kBase = 0x7f0000000000;  // a host-like GM address, 4 KB aligned
constexpr double kKB = 1024, kMB = 1024 * 1024;

/// One block whose AIV0 issues `Op`s in order on MTE2 (copies GM <-> UB).
struct Ops {
  Trace t;
  Ops() {
    t.kernel = "l2_lru";
    t.num_blocks = 1;
    t.physical_blocks = 1;
    t.cores.resize(3);
    for (int i = 0; i < 3; ++i) {
      t.cores[i].kind = i == 0 ? CoreKind::Cube : CoreKind::Vector;
      t.cores[i].vid = i == 0 ? 0 : i - 1;
    }
  }
  /// `count` rows of `len` bytes, `pitch` apart, from `off` bytes past kBase.
  Ops& copy(bool write, uint64_t off, uint64_t len, uint64_t count = 1, uint64_t pitch = 0) {
    TraceEvent e;
    e.name = write ? "copy_out" : "copy_in";
    e.kind = npu::EventKind::Op;
    e.pipe = Pipe::MTE2;
    e.cost = CostClass::Copy;
    e.src_scope = write ? MemScope::UB : MemScope::GM;
    e.dst_scope = write ? MemScope::GM : MemScope::UB;
    e.bytes = static_cast<int64_t>(len * count);
    Access gm;
    gm.start = kBase + off;
    gm.len = len;
    gm.count = count;
    gm.pitch = count > 1 ? pitch : 0;
    gm.write = write;
    Access ub;
    ub.mem = {MemScope::UB, 0, 1};
    ub.len = len * count;
    ub.write = !write;
    e.accesses = {gm, ub};
    t.cores[1].events.push_back(std::move(e));
    return *this;
  }
  Ops& read(uint64_t off, uint64_t bytes) { return chunks(false, off, bytes); }
  Ops& write(uint64_t off, uint64_t bytes) { return chunks(true, off, bytes); }
  /// [off, off + bytes) in copies of at most 64 KB (a UB's worth).
  Ops& chunks(bool w, uint64_t off, uint64_t bytes) {
    for (uint64_t c = 0; c < bytes; c += 65536)
      copy(w, off + c, std::min<uint64_t>(65536, bytes - c));
    return *this;
  }
  double hbm(double l2 = 1 * kMB) const {
    Target small = default_target();
    small.costs.l2_bytes = l2;
    return npu::simulate_timing(t, small).gm_hbm_bytes;
  }
};

constexpr uint64_t H = 256 * 1024;            // the hot set
constexpr uint64_t kCold = 64 * 1024 * 1024;  // where the cold bytes start

TEST(TimingL2Lru, HotSetHitsAfterAColdStreamSmallerThanL2) {
  Ops o;
  o.read(0, H).read(kCold, 512 * 1024).read(0, H);
  EXPECT_DOUBLE_EQ(o.hbm(), H + 512 * kKB);
}

TEST(TimingL2Lru, HotSetMissesAfterAColdStreamLargerThanL2) {
  Ops o;
  o.read(0, H).read(kCold, 2 * 1024 * 1024).read(0, H);
  EXPECT_DOUBLE_EQ(o.hbm(), 2 * H + 2 * kMB);
  // Just within: the hot set and the stream are L2's size; one more block drops the hot set's
  // oldest block (the least recently touched), so its re-read misses 512 bytes.
  Ops fits, over;
  fits.read(0, H).read(kCold, 1024 * 1024 - H).read(0, H);
  over.read(0, H).read(kCold, 1024 * 1024 - H + 512).read(0, H);
  EXPECT_DOUBLE_EQ(fits.hbm(), 1 * kMB);
  // The re-read's first block misses and, allocating, drops the next one: every block of the
  // hot set then misses in turn (an LRU re-reading in the order it was filled).
  EXPECT_DOUBLE_EQ(over.hbm(), 1 * kMB + 512 + H);
}

TEST(TimingL2Lru, AHotSetRefreshedInsideALongStreamKeepsHitting) {
  // 4 MB streamed (four L2s) in 128 KB chunks, the hot set re-read after each: LRU keeps it.
  // The fluid rule this replaces (hits scaled by L2 / footprint) charged most of the re-reads.
  Ops o;
  o.read(0, H);
  for (uint64_t c = 0; c < 32; ++c) o.read(kCold + c * 128 * 1024, 128 * 1024).read(0, H);
  EXPECT_DOUBLE_EQ(o.hbm(), H + 4 * kMB);
}

TEST(TimingL2Lru, AStreamLargerThanL2ReadTwiceHitsNothing) {
  Ops o;
  o.read(kCold, 2 * 1024 * 1024).read(kCold, 2 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(o.hbm(), 4 * kMB);
  // Smaller than L2: the second pass hits.
  Ops s;
  s.read(kCold, 768 * 1024).read(kCold, 768 * 1024);
  EXPECT_DOUBLE_EQ(s.hbm(), 768 * kKB);
}

TEST(TimingL2Lru, WritesAfterTheFirstDrop) {
  // A workspace W written before L2 is full and kept hot through a 2 MB stream: once L2 drops
  // a block, the bytes written before are owed and the next allocations write them back (64 KB,
  // the rule kept from the footprint model). Rewritten while held (dirty), W costs nothing
  // more, and its read-backs hit. Bytes first read (clean) and then written cost their
  // write-back; new bytes written cost in full.
  Ops o;
  o.write(0, 64 * 1024);  // free: L2 is not full
  for (uint64_t c = 0; c < 16; ++c) o.read(kCold + c * 128 * 1024, 128 * 1024).read(0, 64 * 1024);
  for (int i = 0; i < 4; ++i) o.write(0, 64 * 1024).read(0, 64 * 1024);  // held, dirty: free
  o.read(kCold + 4 * 1024 * 1024, 32 * 1024);                            // clean, 32 KB read
  o.write(kCold + 4 * 1024 * 1024, 32 * 1024);  // the same bytes written: 32 KB
  o.write(kCold + 8 * 1024 * 1024, 16 * 1024);  // new bytes: 16 KB
  EXPECT_DOUBLE_EQ(o.hbm(), 2 * kMB + 64 * kKB + 32 * kKB + 32 * kKB + 16 * kKB);
  // With a roomy L2 nothing is dropped and every write stays: only the reads of new bytes cost.
  EXPECT_DOUBLE_EQ(o.hbm(192 * kMB), 2 * kMB + 32 * kKB);
  // W not kept hot: the stream drops it (the oldest), so its first rewrite allocates anew and
  // costs 64 KB; after that it is held and dirty again.
  Ops cold;
  cold.write(0, 64 * 1024).read(kCold, 2 * 1024 * 1024);
  for (int i = 0; i < 4; ++i) cold.write(0, 64 * 1024).read(0, 64 * 1024);
  EXPECT_DOUBLE_EQ(cold.hbm(), 2 * kMB + 64 * kKB + 64 * kKB);
}

TEST(TimingL2Lru, ExactBytesOnOddRows) {
  // Rows of n bytes, 5 bytes apart, 3 bytes off the block grid: a re-read of the rows hits all
  // of them, a read of the whole span hits the rows and misses exactly the gaps, and a row
  // next to them (in the same 512-byte blocks) misses: blocks hold bytes, not lines.
  for (uint64_t n : {1, 7, 33, 1000, 4097}) {
    SCOPED_TRACE(n);
    const uint64_t rows = 64, pitch = n + 5, span = (rows - 1) * pitch + n;
    Ops o;
    o.copy(false, 3, n, rows, pitch).read(kCold, 256 * 1024).copy(false, 3, n, rows, pitch);
    EXPECT_DOUBLE_EQ(o.hbm(), static_cast<double>(rows * n) + 256 * kKB);
    o.copy(false, 3, span);
    EXPECT_DOUBLE_EQ(o.hbm(), static_cast<double>(rows * n + (span - rows * n)) + 256 * kKB);
    o.copy(false, 3 + span, n);
    EXPECT_DOUBLE_EQ(o.hbm(), static_cast<double>(span + n) + 256 * kKB);
  }
}

TEST(TimingL2Lru, BypassingReadsRefreshNothing) {
  // A read with L2 cache mode "disable" hits what is held but does not move it to the front:
  // the hot set, only read through the bypass, is dropped by a stream of L2's size.
  Ops o;
  o.read(0, H).read(kCold, 512 * 1024);
  o.read(0, H);
  for (size_t i = o.t.cores[1].events.size() - 4; i < o.t.cores[1].events.size(); ++i)
    o.t.cores[1].events[i].l2_bypass = true;  // the re-read: 4 copies of 64 KB
  o.read(kCold + 512 * 1024, 768 * 1024).read(0, H);
  // The bypassing re-read hits (0), the stream drops the hot set (its blocks are older than
  // the stream's first 512 KB), the last re-read misses.
  EXPECT_DOUBLE_EQ(o.hbm(), H + 512 * kKB + 768 * kKB + H);
}

/// A plain LRU with the rules of src/npu/timing_l2.h, byte by byte and block by block, for the
/// differential test below (a linear scan finds the least recent block).
struct RefL2 {
  struct Block {
    std::bitset<512> have;
    uint64_t dirtied = 0;  // the share() call that first wrote it; 0: clean
    uint64_t stamp = 0;
  };
  double cap = 0;
  std::map<uint64_t, Block> blocks;
  uint64_t clock = 0, held = 0, calls = 0;
  double dirty = 0, owed = 0;
  bool over = false;

  void evict(uint64_t keep) {
    while (static_cast<double>(held) > cap && blocks.size() > 1) {
      auto lru = blocks.end();
      for (auto it = blocks.begin(); it != blocks.end(); ++it)
        if (it->first != keep && (lru == blocks.end() || it->second.stamp < lru->second.stamp))
          lru = it;
      held -= lru->second.have.count();
      blocks.erase(lru);
      if (!over) {
        over = true;
        owed = dirty;
      }
    }
  }
  double share(const TraceEvent& e, bool write) {
    uint64_t total = 0, hit = 0, clean = 0;
    ++calls;
    for (const auto& a : e.accesses) {
      if (a.mem.scope != MemScope::GM || a.len == 0) continue;
      for (uint64_t r = 0; r < a.count; ++r) {
        total += a.len;
        for (uint64_t x = a.start + r * a.pitch, end = x + a.len; x < end;) {
          const uint64_t base = x / 512, stop = std::min(end, base * 512 + 512);
          auto it = blocks.find(base);
          if (e.l2_bypass) {
            for (; x < stop; ++x) hit += it != blocks.end() && it->second.have[x % 512];
            continue;
          }
          Block& b = blocks[base];
          b.stamp = ++clock;
          for (; x < stop; ++x) {
            if (b.have[x % 512]) {
              ++hit;
              clean += b.dirtied == 0 || b.dirtied == calls;
            } else {
              b.have[x % 512] = true;
              ++held;
            }
          }
          if (write && b.dirtied == 0) b.dirtied = calls;
          evict(base);
        }
      }
    }
    if (total == 0) return 1.0;
    if (e.l2_bypass) return write ? 1.0 : 1.0 - double(hit) / double(total);
    const double all = double(total), fresh = all - double(hit);
    if (!over) {
      if (write) dirty += fresh;
      return write ? 0.0 : fresh / all;
    }
    const double back = std::min(owed, fresh);
    owed -= back;
    return ((write ? fresh + double(clean) : fresh) + back) / all;
  }
};

TEST(TimingL2Lru, MatchesAPlainLruOnRandomCopies) {
  // Random reads and writes (some bypassing L2) of strided rows over 4 MB, with L2 at 16 KB to
  // 1 MB: the blocks are dropped, re-entered and their table entries moved all the time.
  std::mt19937_64 rng(30);
  for (double l2 : {16 * kKB, 64 * kKB, 256 * kKB, 1 * kMB}) {
    SCOPED_TRACE(l2);
    Ops o;
    for (int i = 0; i < 1500; ++i) {
      const uint64_t len = 1 + rng() % 3000, count = 1 + rng() % 8;
      const uint64_t pitch = rng() % 2 ? len : len + rng() % 600;
      o.copy(rng() % 5 < 2, rng() % (4 << 20), len, count, pitch);
      o.t.cores[1].events.back().l2_bypass = rng() % 10 == 0;
    }
    RefL2 ref;
    ref.cap = l2;
    double want = 0;
    for (const auto& e : o.t.cores[1].events)
      want += static_cast<double>(e.bytes) * ref.share(e, e.dst_scope == MemScope::GM);
    EXPECT_NEAR(o.hbm(l2), want, 1e-9 * want);
    EXPECT_TRUE(ref.over);
  }
}

TEST(TimingL2Lru, SameCyclesOnEveryRunAndAnyHostThreadCount) {
  // FlashAttention (K/V re-reads, GM workspaces rewritten) past an L2 shrunk to 64 KB: its
  // traces recorded on 1 and 4 host threads, each simulated twice, give the same cycles, HBM
  // bytes and instruction times.
  ExampleCase c = flash_attention_pipelined_case();
  Target small = default_target();
  small.costs.l2_bytes = 64 * kKB;
  auto kern = compile(c.f);
  std::vector<npu::Profile> ps;
  for (int threads : {1, 4}) {
    Device dev;
    auto args = c.args(dev);
    npu::Trace t;
    kern.launch(dev, args, {.threads = threads, .trace = &t});
    ps.push_back(npu::simulate_timing(t, small));
    ps.push_back(npu::simulate_timing(t, small));
  }
  for (const auto& p : ps) {
    EXPECT_EQ(p.total_cycles, ps[0].total_cycles);
    EXPECT_EQ(p.gm_hbm_bytes, ps[0].gm_hbm_bytes);
    ASSERT_EQ(p.instrs.size(), ps[0].instrs.size());
    for (size_t i = 0; i < p.instrs.size(); ++i) EXPECT_EQ(p.instrs[i].end, ps[0].instrs[i].end);
  }
  // A larger L2 holds more of the re-read and rewritten bytes: HBM falls with its size, to
  // Q, K and V's first reads (128 KB each; O's writes stay in L2) once everything fits.
  double last = 2 * ps[0].gm_bytes;
  for (double kb : {64, 256, 1024, 4096}) {
    SCOPED_TRACE(kb);
    small.costs.l2_bytes = kb * kKB;
    Device dev;
    auto args = c.args(dev);
    npu::Trace t;
    kern.launch(dev, args, {.trace = &t});
    const double hbm = npu::simulate_timing(t, small).gm_hbm_bytes;
    EXPECT_LT(hbm, last);
    last = hbm;
  }
  EXPECT_DOUBLE_EQ(last, 3 * 128 * kKB);
}

}  // namespace
}  // namespace tl
