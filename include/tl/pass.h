// The compiler's pass pipeline. `lower` takes a kernel as written and returns the form the
// backends execute: verified, simplified, with every on-chip buffer at a planned address.
// The pipeline itself is one short function (src/pass/lower.cpp) that reads as a table of
// contents; each pass lives in its own file and is tested on IR text in, IR text out.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tl/ir.h"
#include "tl/target.h"

namespace tl {

struct PassOptions {
  /// Print the IR after every pass that changed it (also: env TL_PRINT_AFTER_ALL=1).
  bool print_after_all = false;
  /// Print the IR after these passes only (also: env TL_PRINT_AFTER=name1,name2).
  std::vector<std::string> print_after;
  /// Report the time each pass took (also: env TL_TIME_PASSES=1).
  bool time_passes = false;
  /// Where dumps and timings go (default: stderr).
  std::function<void(const std::string&)> sink;
};

/// Runs the pipeline. User errors (tl::Error) carry the kernel's source location.
PrimFunc lower(const PrimFunc& f, const Target& target, const PassOptions& opt = {});

}  // namespace tl
