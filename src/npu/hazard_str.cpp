// The hazard checker's reports as text (tl/npu/hazard.h): a hazard names both instructions, what
// they touch (a GM tensor's elements, never host addresses) and their source lines.
#include "tl/npu/hazard.h"

namespace tl::npu {

namespace {

std::string side_str(const HazardSide& s) {
  if (!s.where.empty())  // GM: the tensor's elements
    return fmt::format("{} ({}, {}) {} {} at {}", s.op, pipe_name(s.pipe), s.core,
                       s.write ? "writes" : "reads", s.where, s.loc.str());
  return fmt::format("{} ({}, {}) {} {} bytes [{}, {}) at {}", s.op, pipe_name(s.pipe), s.core,
                     s.write ? "writes" : "reads", s.buffer, s.start, s.end, s.loc.str());
}

}  // namespace

std::string Hazard::str() const {
  if (duplicate)
    return fmt::format(
        "duplicate store on {}: {}\n    stores the same bytes as {}, unordered with it: the "
        "chip keeps these bytes whichever lands last{}",
        memory, side_str(second), side_str(first),
        count > 1 ? fmt::format("\n    ({} occurrences)", count) : "");
  return fmt::format("{} hazard on {}: {}\n    is not ordered after {}{}{}", kind, memory,
                     side_str(second), side_str(first), why.empty() ? "" : "\n    " + why,
                     count > 1 ? fmt::format("\n    ({} occurrences)", count) : "");
}

std::string FlagIssue::str() const {
  std::string s =
      fmt::format("{}: {} on {} (pipe {}) at {}", kind, flag, core, pipe_name(pipe), loc.str());
  if (!last_events.empty()) {
    s += "\n    last events:";
    for (const auto& e : last_events) s += "\n      " + e;
  }
  return s;
}

}  // namespace tl::npu
