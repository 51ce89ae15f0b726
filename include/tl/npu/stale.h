// The stale-data checker of the virtual NPU: shadow validity per byte of every memory a launch
// touches, like MemorySanitizer's shadow bits, and the findings it reports.
//
// A byte is valid once this launch (for on-chip memory: this block on this core) has written it
// with data computed only from valid data. Invalid are: on-chip bytes never written in this
// launch, bytes an earlier block left in a core's memory, workspace bytes never written, the
// part of a `clipped` copy's destination buffer the copy did not fill, variables never set,
// and everything computed from an invalid value. Each op moves validity the way its semantics
// move bytes (one rule per op beside its semantics, src/npu/exec*.cpp and stale_rules.cpp, the
// table checked against the registry like the semantics). A finding is a use of an invalid
// value whose effect leaves the kernel: an invalid element stored into a GM parameter, or an
// invalid value deciding a branch, a loop bound, an address or a flag. docs/virtual_npu.md,
// "Stale-data checker", gives every rule and where the model is more lenient than the chip.
//
// On with LaunchOptions::check_stale, or when that is unset, with the environment variable
// TL_CHECK_STALE=1 or LaunchOptions::check_hazards; the findings are one tl::Error after the
// launch, or land in LaunchOptions::stale_findings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tl/error.h"
#include "tl/op.h"

namespace tl::npu {

/// One use of invalid data, reported once per (kind, statement, buffer, operand) with a count.
struct StaleFinding {
  enum class Kind : uint8_t {
    StoreToGM,  // an invalid element stored into a GM parameter (copy, fixpipe, atomic_add, store)
    Branch,     // an `if` condition computed from an invalid value
    LoopBound,  // a loop's start or extent computed from an invalid value
    Address,    // a region start or extent, a load/store index or a gather offset from one
    FlagId,     // a sync's event id computed from an invalid value
  };
  Kind kind = Kind::StoreToGM;
  std::string op;       // "copy", "atomic_add", "store", "load", "if", "for", "tile.gather", ...
  std::string operand;  // the op's operand ("src", "dst", "offsets"), or empty
  std::string buffer;   // the buffer stored into or addressed ("Y"), or empty (branches, loops)
  /// StoreToGM: the first invalid element stored (indices into `buffer`), how many of the
  /// region's `total` elements were invalid, and the region-relative row-major positions of
  /// the invalid ones (up to kMaxListed; all of the first occurrence's).
  std::vector<int64_t> element;
  int64_t invalid = 0, total = 0;
  std::vector<int64_t> invalid_positions;
  static constexpr size_t kMaxListed = 4096;
  /// Where the invalid data came from: "never written in this launch", "stale since the
  /// clipped copy at k.py:12", "the variable 'n' (let at k.py:7) was never set in this launch".
  std::string origin;
  SourceLoc loc;      // the statement
  std::string core;   // its first occurrence ("block 1 AIV0"), in (block, core) order
  int64_t count = 1;  // occurrences (over blocks, cores and iterations)
  std::string kind_name() const;
  std::string str() const;
};

/// True if the virtual NPU has a validity rule for `op` (every op with semantics must: the
/// table is checked when it is built, and a gap is a registration error).
bool has_stale_rule(const OpDef& op);

}  // namespace tl::npu
