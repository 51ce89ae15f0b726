// Internal: the stale-data checker's state and the helpers its per-op rules share
// (include/tl/npu/stale.h is the public part; docs/virtual_npu.md, "Stale-data checker").
//
// Shadow memory mirrors every memory byte for byte: a shadow byte is 0 when its byte is valid,
// otherwise the id of the invalid data's origin (StaleLaunch::origin). Because the shadow has
// the data's layout, a TileRef whose base points into the shadow is the shadow of that region,
// and the byte movers of the op semantics (copies, ND <-> NZ conversions, LoadData) move
// validity exactly as they move bytes. An element is invalid when any of its bytes is; an op
// combining elements takes the first invalid input's origin (first_of).
#pragma once

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "exec.h"
#include "program.h"
#include "tl/npu/stale.h"

namespace tl::npu {

// Fixed origin ids; clipped copies and variables follow from kFirstOwnOrigin.
inline constexpr uint8_t kValid = 0;
inline constexpr uint8_t kNeverWritten = 1;   // on-chip memory and workspaces at launch start
inline constexpr uint8_t kEarlierBlock = 2;   // what an earlier block left in a core's memory
inline constexpr uint8_t kUnsetVariable = 3;  // a variable without an origin of its own
inline constexpr uint8_t kFirstOwnOrigin = 4;
inline constexpr uint8_t kManyOrigins = 255;  // more origins than ids: described generically

inline uint8_t first_of(uint8_t a, uint8_t b) {
  return a ? a : b;
}

/// A per-op validity rule: before the op's semantics run (its inputs as they are), writes the
/// shadow of everything the op writes. Registered per op beside the semantics (exec.cpp checks
/// that every op with semantics has one).
using StaleRule = void (*)(const TileOpNode& op, Core& core);
struct StaleEntry {
  const OpDef* op;  // its handle (tl/ops.h)
  StaleRule rule;
};
std::vector<StaleEntry> move_stale_rules();
std::vector<StaleEntry> cube_stale_rules();
std::vector<StaleEntry> vector_stale_rules();
std::vector<StaleEntry> reduce_sort_stale_rules();
std::vector<StaleEntry> debug_stale_rules();
std::vector<StaleEntry> prim_stale_rules();  // prim_semantics.cpp
StaleRule find_stale_rule(const OpDef* op);

/// What one launch's checker shares between its cores, built before the threads start. The
/// GM shadows are written by the cores (disjoint bytes, or a race the hazard checker reports).
struct StaleLaunch {
  std::vector<std::string> origin;                         // description per origin id
  std::unordered_map<const TileOpNode*, uint8_t> clipped;  // a clipped copy -> its origin
  // A copy with `pad_undefined` -> the origin of its UB pad lanes (undefined on the chip).
  std::unordered_map<const TileOpNode*, uint8_t> pad_lanes;
  std::vector<uint8_t> slot_unset;  // per scalar slot: its origin until set (0: set at block start)
  // GM, per LaunchState::tensors entry: the shadow of the byte at data() once it exists. A
  // workspace's exists from the start (invalid); a parameter's only once something invalid is
  // stored into it (until then it is all valid, and reads see `zeros`), so a clean launch
  // spends nothing on the tensors' shadows.
  std::unique_ptr<std::atomic<uint8_t*>[]> gm;
  std::vector<bool> gm_param;      // a parameter (invalid stores are findings), else a workspace
  std::vector<int64_t> gm_before;  // bytes of the tensor's span before data() (negative strides)
  std::vector<int64_t> gm_bytes;   // bytes of the tensor's span
  const uint8_t* zeros = nullptr;  // read-only zero bytes, as many as the largest span
  std::mutex gm_mu;
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<uint8_t, Free>> gm_storage;

  /// Origin ids and slot origins for `p`, shadows for the launch's tensors.
  StaleLaunch(const Program& p, const LaunchState& ls);
  /// The shadow of tensor `i` (at data()), created all valid if it does not exist yet.
  uint8_t* gm_for_write(size_t i, const std::string& kernel);
};

/// One core's shadow state for a launch.
struct CoreShadow {
  std::array<std::span<uint8_t>, kNumMemScopes> mem;  // shadows of Core::mem, same sizes
  std::vector<uint8_t> slot;                          // per scalar slot
  uint8_t taint = 0;  // origins met while an expression is evaluated (Core::var, Core::load)
  /// A rule's tl::Error, held until the op's semantics have run: their error, raised in the
  /// same place without the checker, wins; if they succeed the rule's error is raised.
  std::optional<Error> rule_error;
  uint8_t address_taint = 0;  // of the current tile op's regions, or the current store's indices
  uint8_t held = 0;           // a store's value origin, between Core::stale_store's two calls
  // A compare's mask byte whose eight positions are partly valid (the lanes past a short row
  // compared with the row): its shadow holds the first invalid origin, and this map, keyed by
  // the shadow byte, which bits are invalid. T.tile.select reads a bit as valid when the byte
  // still holds that origin and the bit is not in the set (stale_rules.cpp).
  std::unordered_map<const uint8_t*, std::pair<uint8_t, uint8_t>> mask_bits;
  struct Entry {
    StaleFinding f;
    int64_t block, seq;  // first occurrence on this core: its block, and its order on the core
  };
  using Key = std::tuple<int, std::string, std::string, std::string, std::string,
                         int>;  // kind, op, operand, buffer, file, line
  std::map<Key, Entry> findings;
};

/// The shadow of region `t` of core `c` (same layout; base in the shadow memory). A GM
/// parameter without a shadow yet reads as all valid (read-only zeros: never write through it).
TileRef shadow_of(Core& c, const TileRef& t);
/// The same for writing: a GM parameter's shadow is created first.
TileRef shadow_for_write(Core& c, const TileRef& t);
/// True when GM region `t` is a parameter's that has no shadow yet (every byte valid).
bool gm_all_valid(Core& c, const TileRef& t);

/// First nonzero byte of [p, p + n), or 0.
uint8_t first_nonzero(const uint8_t* p, int64_t n);

/// Calls f(flat, p, n) for runs of n region elements (row-major region order, the first at
/// position `flat`) that lie contiguously at p in t's storage (ND or fractal); f returns false
/// to stop.
template <typename F>
void for_each_run(const TileRef& t, F&& f) {
  const size_t nd = t.extent.size();
  if (nd == 0 || t.numel() == 0) return;
  const int64_t es = dtype_bytes(t.dtype), R = t.rows(), C = t.cols();
  const bool nd_layout = t.scope == MemScope::GM || t.scope == MemScope::UB;
  int64_t idx[Dims::kMaxRank];
  for (int64_t r = 0; r < R; ++r) {
    if (nd_layout) {
      uint8_t* p = row_ptr(t, r);
      if (t.strides[nd - 1] == 1) {
        if (!f(r * C, p, C)) return;
      } else {
        for (int64_t k = 0; k < C; ++k)
          if (!f(r * C + k, p + k * t.strides[nd - 1] * es, 1)) return;
      }
      continue;
    }
    int64_t rem = r;
    for (size_t d = nd - 1; d-- > 0;) {
      idx[d] = t.start[d] + rem % t.extent[d];
      rem /= t.extent[d];
    }
    for (int64_t k = 0; k < C;) {
      idx[nd - 1] = t.start[nd - 1] + k;
      int64_t run;
      const int64_t off = storage_offset(t, idx, &run);
      const int64_t n = std::max<int64_t>(1, std::min(run, C - k));
      if (!f(r * C + k, t.base + off * es, n)) return;
      k += n;
    }
  }
}

/// The first invalid origin of shadow region `s` in region order (0: all valid).
uint8_t region_origin(const TileRef& s);
/// Each element's origin (row-major region order) / sets each element's bytes.
void region_origins(const TileRef& s, std::vector<uint8_t>& out);
void region_store(const TileRef& s, const std::vector<uint8_t>& in);
/// Every byte of shadow region `s` = origin.
void region_fill(const TileRef& s, uint8_t origin);

/// The origin of scalar operand `name` of `n` (0 when omitted or a region), evaluated as the
/// op evaluates it.
uint8_t scalar_operand_taint(const TileOpNode& n, Core& c, std::string_view name);
/// first_of over every scalar operand of `n`.
uint8_t scalar_taints(const TileOpNode& n, Core& c);

/// Records a finding at the core's current statement (first occurrence kept, others counted).
void add_finding(Core& c, StaleFinding f, uint8_t origin);

/// Runs the rule of tile op `n` before its semantics (stale_before) and finishes after them
/// (stale_after): region addresses from invalid values, GM stores of invalid elements.
void stale_before(const TileOpNode& n, Core& c);
void stale_after(const TileOpNode& n, Core& c);

/// The findings of every core of a launch, merged in (block, core, program) order, duplicates
/// counted; and the message of the tl::Error listing them (empty when there are none).
std::vector<StaleFinding> merge_findings(const std::vector<const CoreShadow*>& cores);
std::string stale_report(const std::string& kernel, const std::vector<StaleFinding>& findings);

/// Whether a launch with these options runs the checker (LaunchOptions::check_stale, the
/// TL_CHECK_STALE environment variable, check_hazards; never for timing-only launches).
bool stale_check_enabled(const LaunchOptions& opt);

}  // namespace tl::npu
