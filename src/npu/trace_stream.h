// Internal: streamed timed launches (docs/virtual_npu.md, "Timed mode"). The functional
// interpreter's threads hand each core's trace events to the timing model in chunks as they
// record them; the model, on the launching thread, consumes them in its own order and frees
// them, so a timing-only launch holds a window of events per core instead of its whole trace
// (about 600 bytes an event: FlashAttention at S = 32K has over a hundred million).
//
// Flow control: a core whose handed-over but not yet consumed events reach its cap is held
// (its interpreter pauses before its next statement) until the model frees room. A hold can
// close a cycle (the model waits for an event of core X; X waits, functionally, for a core
// that is held), so when the model waits for a core that cannot move on its own (blocked,
// not started, or held), the producer threads raise the caps of their held cores: windows
// grow only where the kernel's own dependencies demand it. The model reads each core's events
// in program order whatever the host threads did, so its result does not depend on them.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "tl/npu/timing.h"
#include "tl/npu/trace.h"

namespace tl::npu {

/// Thrown to the timing model when the producer ended without finishing a core's events (it
/// failed or was cancelled: the launch reports the producer's error instead).
struct StreamAborted {};

struct TraceStream {
  static constexpr uint64_t kWindow = 4096;  // a core's window, in events (TL_TRACE_WINDOW)

  /// `window`: events a core may hand over before the model consumes them (more where the
  /// kernel's dependencies demand it); handed over in chunks of a sixteenth of that.
  TraceStream(size_t cores, uint64_t window)
      : chunk(std::max<uint64_t>(1, std::min<uint64_t>(256, window / 16))),
        window_(std::max<uint64_t>(1, window)),
        cores_(cores, PerCore{{}, 0, 0, window_}) {}
  const uint64_t chunk;

  // Producer side (the interpreter's threads).
  /// Hands `ct.events` over (leaving it empty). `finished`: the core's events of this block
  /// are complete (ct.pending_scalar_ops is its tail); `blocked`: its interpreter waits for
  /// another core. Sets ct.hold when the core is over its cap.
  void publish(CoreTrace& ct, bool finished, bool blocked);
  /// For a producer thread none of whose cores can move while `held` ones are held: waits
  /// until one of them may run again and clears its hold.
  void wait_for_room(const std::vector<CoreTrace*>& held);
  /// Every producer thread has returned.
  void producer_ended();

  // Model side (the launching thread).
  /// Appends the events handed over for core `c` to `out`, waiting for some. false: the core
  /// is finished and nothing more came (`tail`: the scalar operations after its last event).
  bool pull(size_t c, std::deque<TraceEvent>& out, int64_t& tail);
  /// The model no longer needs core c's events before index `upto`.
  void consumed(size_t c, uint64_t upto);
  /// The model stopped with an error: the producer runs on unheld and its events are dropped.
  void discard();

 private:
  static size_t index(const CoreTrace& ct) {
    return static_cast<size_t>(ct.block) * 3 + (ct.kind == CoreKind::Cube ? 0 : 1 + ct.vid);
  }
  bool over_cap(size_t c) const {
    const auto& p = cores_[c];
    return !discard_ && !p.finished && p.produced - p.consumed >= p.cap;
  }
  struct PerCore {
    std::vector<std::vector<TraceEvent>> chunks;
    uint64_t produced = 0, consumed = 0, cap = 0;
    bool started = false, finished = false, blocked = false, held = false;
    int64_t tail = 0;
  };
  const uint64_t window_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<PerCore> cores_;
  int64_t starved_ = -1;  // the core whose events the model waits for
  bool ended_ = false, discard_ = false;
};

/// The timing model's side of a streamed launch: each core's events in a local window, read
/// by index in program order.
class StreamReader {
 public:
  StreamReader(TraceStream& s, size_t cores) : s_(s), local_(cores) {}
  /// True once core c's event i exists (waits for it); false if the core ended before it.
  bool has(size_t c, size_t i) {
    Local& l = local_[c];
    while (i >= l.base + l.q.size()) {
      if (l.finished) return false;
      if (!s_.pull(c, l.q, l.tail)) l.finished = true;
    }
    return true;
  }
  const TraceEvent& at(size_t c, size_t i) const { return local_[c].q[i - local_[c].base]; }
  /// Frees core c's events before `below`.
  void release(size_t c, size_t below) {
    Local& l = local_[c];
    if (below <= l.base) return;
    while (l.base < below && !l.q.empty()) {
      l.q.pop_front();
      ++l.base;
    }
    if (l.base >= l.reported + s_.chunk) {
      l.reported = l.base;
      s_.consumed(c, l.base);
    }
  }
  int64_t tail(size_t c) const { return local_[c].tail; }
  size_t count(size_t c) const { return local_[c].base + local_[c].q.size(); }

 private:
  struct Local {
    std::deque<TraceEvent> q;
    size_t base = 0, reported = 0;
    bool finished = false;
    int64_t tail = 0;
  };
  TraceStream& s_;
  std::vector<Local> local_;
};

/// What the timing model needs to know of a streamed launch before its events arrive.
struct StreamedLaunch {
  StreamReader* reader = nullptr;
  std::string kernel;
  int64_t num_blocks = 0;
  int physical_blocks = 0;
  int sync_participants = 0;          // cores that take part in every T.sync_all
  std::map<int64_t, int> cross_mode;  // cross-core flag id -> the one mode it is set with
};

/// The mode each cross-core flag id of `body` is set with. false if an id is not a constant
/// or is set with two modes: the model could then not tell a wait's sources before the
/// functional run ends, and the launch records its whole trace instead.
bool cross_flag_modes(const Stmt& body, std::map<int64_t, int>& modes);

/// simulate_timing over a stream: the same model, the same cycles.
Profile simulate_timing_streamed(const StreamedLaunch& in, const Target& target,
                                 const TimingOptions& opt);

}  // namespace tl::npu
