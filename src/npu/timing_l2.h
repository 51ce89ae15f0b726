// The timing model's L2 cache (docs/calibration.md, "GM side" and "Known gaps of the model"):
// which share of a GM instruction's bytes costs HBM time. Split from timing_model.cpp, which
// holds the pipes and the fluid bandwidth sharing that use the share.
//
// L2 is an LRU of 512-byte blocks with a byte budget of L2's capacity (192 MB on A2/A3): a block
// holds exactly the bytes that entered it (a 512-bit mask), so a read hits for the bytes any
// earlier instruction read or wrote, whatever the shapes of the two accesses, as long as their
// block was touched recently enough to still be held. Each access moves its blocks to the front;
// while the bytes held exceed the capacity the least recently touched block is dropped. No page
// publishes the chip's line size, sets or replacement order (docs/calibration.md, "GM side");
// 512 B is the GM request size AscendC's alignment advice names, and an exact LRU is the
// simplest order that lets a small hot set (FlashAttention's K/V re-reads and workspaces) hit
// while a stream larger than L2 hits nothing. The bytes that entered L2 come from reads and
// writes of GM tensors in the normal L2 cache mode. A tensor in mode "disable"
// (T.annotate_l2_cache, AscendC's SetL2CacheHint(CACHE_MODE_DISABLE)) does not enter it: its
// reads hit only what is already held (and refresh nothing), its writes go to HBM.
//
// Writes (MTE3, FIX) allocate in L2 (AscendC best practices, "Setting a Proper L2 CacheMode":
// data moved out by MTE3 or Fixpipe goes through L2; old data is written back to GM when it is
// replaced, which occupies GM bandwidth). Until L2 first has to drop a block, a write costs no
// HBM time (its dirty bytes are left in L2 at the kernel's end: asc-devkit's add example with
// its reads bypassing L2, 134 MB of writes that do not show in its time). From then on the chip
// pays HBM time for every byte written (the same example with its reads entering L2, 403 MB,
// and asc-devkit's GELU, 537 MB, both move all their bytes at the streaming rate), so: a write
// of bytes L2 does not hold costs its bytes in full, a write of held bytes in a block no earlier
// instruction has written since it entered L2 costs them too (they become dirty and will be
// written back), a rewrite of held bytes of a dirty block costs nothing, and the bytes written
// before the first drop are owed: every later allocation (a read's or a write's bytes new to
// L2) writes back as many of them as it allocates, until none are left. An instruction's share
// can then exceed 1.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "tl/npu/trace.h"

namespace tl::npu {

class L2Cache {
 public:
  static constexpr uint64_t kBlock = 512;  // bytes a block spans

  explicit L2Cache(double capacity_bytes);

  /// The HBM bytes of `e` per byte it moves (1 for an instruction touching no GM; more than 1
  /// when it also writes back older dirty bytes), and updates what L2 holds.
  double hbm_share(const TraceEvent& e, bool write);

  /// Bytes L2 holds now.
  double held() const { return static_cast<double>(held_); }
  double owed() const { return owed_; }
  /// Whether L2 has had to drop a block (the write rule's switch, above).
  bool over() const { return over_; }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Block {
    uint64_t base = 0;                    // address / kBlock
    uint32_t prev = kNone, next = kNone;  // LRU list, front = most recent
    uint32_t bytes = 0;                   // bits set in `mask`
    // The instruction (`serial_`) that first wrote it since it entered L2; 0: none (clean).
    // An instruction's own rows do not dirty a block for each other, whatever its row split.
    uint32_t dirtied = 0;
    std::array<uint64_t, kBlock / 64> mask{};
  };
  struct Tally {
    uint64_t hit = 0;    // bytes held before this instruction
    uint64_t clean = 0;  // of those, in blocks no write had dirtied (a write's cost)
  };

  /// Touches [s, e) (allocating what is not held, refreshing its blocks) and adds to `t`.
  void touch(uint64_t s, uint64_t e, bool write, Tally& t);
  /// How many bytes of [s, e) are held (nothing changes).
  uint64_t resident(uint64_t s, uint64_t e) const;
  void unlink(uint32_t i);
  void push_front(uint32_t i);
  /// Drops least recently touched blocks while more than the capacity is held, sparing `keep`.
  void evict(uint32_t keep);

  double capacity_;
  uint64_t held_ = 0;          // bytes in held blocks
  double dirty_ = 0;           // bytes written before the first drop
  uint32_t serial_ = 0;        // the instruction hbm_share is at (never 0)
  double owed_ = 0;            // of those, not yet written back since
  bool over_ = false;          // a block has been dropped
  std::vector<Block> blocks_;  // held blocks and free slots
  std::vector<uint32_t> free_;
  uint32_t head_ = kNone, tail_ = kNone;
  // Block base -> slot: open addressing, linear probing (timing_l2.cpp, `home`: a tensor's
  // consecutive blocks mostly land in consecutive entries; the host's cost is cache misses).
  struct Entry {
    uint64_t base = kEmpty;
    uint32_t slot = 0;
  };
  static constexpr uint64_t kEmpty = UINT64_MAX;
  uint32_t find(uint64_t base) const;
  void insert(uint64_t base, uint32_t slot);
  void erase(uint64_t base);
  std::vector<Entry> table_ = std::vector<Entry>(1024);
  size_t entries_ = 0;
};

}  // namespace tl::npu
