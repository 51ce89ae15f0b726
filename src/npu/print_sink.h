// Internal: where T.printf / T.dump_tensor lines go during a launch. Lines reach the output in
// (block, core, program) order, whatever the host threads do, and stream: the lines of the
// first core in that order that has not finished go out as they are printed; other cores'
// lines wait until every core before them has finished. Waiting lines are held in memory up
// to a bound, beyond which they move to an anonymous temporary file, so a launch that prints
// millions of lines needs neither memory nor time proportional to its output at the end.
#pragma once

#include <cstdint>
#include <cstdio>
#include <iosfwd>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tl::npu {

class PrintSink {
 public:
  PrintSink() = default;
  PrintSink(const PrintSink&) = delete;
  PrintSink& operator=(const PrintSink&) = delete;
  ~PrintSink();

  /// Starts a launch's output to `out`. `hold`: keep every line until finish() or discard()
  /// (the first run of a timed launch, whose output only counts if it fails).
  void open(std::ostream* out, bool hold);
  /// A line of core `core` (block * 3 + slot); thread-safe.
  void line(int64_t core, std::string_view text);
  /// Core `core` prints no more lines in this launch.
  void done(int64_t core);
  /// Writes every held line in order and flushes (end of a launch, or its failure).
  void finish();
  /// Drops every held line.
  void discard();

  /// Bytes of held lines kept in memory before they move to the temporary file.
  static constexpr size_t kMemoryBound = 8 << 20;

 private:
  struct Held {
    std::string text;                              // newest lines, in memory
    std::vector<std::pair<long, size_t>> spilled;  // older lines: (offset, bytes) in spill_
    bool done = false;
  };
  void advance();       // writes out every finished core at the cursor
  void write(Held& h);  // writes h's lines (spilled first) and empties it
  void spill();         // moves every in-memory held line to the temporary file
  void close_spill();

  std::mutex mu_;
  std::ostream* out_ = nullptr;
  bool hold_ = false;
  int64_t cursor_ = 0;            // the core whose lines go straight out
  std::map<int64_t, Held> held_;  // cores after the cursor (or all, when holding)
  size_t in_memory_ = 0;
  std::FILE* spill_ = nullptr;
  long spill_end_ = 0;
};

}  // namespace tl::npu
