// The hand-over of trace events from the interpreter's threads to the timing model in a
// streamed timed launch (trace_stream.h: the flow control and why it cannot deadlock).
#include "trace_stream.h"

#include "tl/ir_functor.h"

namespace tl::npu {

bool cross_flag_modes(const Stmt& body, std::map<int64_t, int>& modes) {
  bool ok = true;
  pre_order_visit(body, [&](const Stmt& x) {
    auto* y = x.as<SyncNode>();
    if (!y || y->sync_kind != SyncKind::SetCrossFlag) return;
    auto id = as_const_int(y->event_id);
    if (!id) {
      ok = false;
      return;
    }
    auto [it, fresh] = modes.try_emplace(*id, static_cast<int>(y->mode));
    if (!fresh && it->second != static_cast<int>(y->mode)) ok = false;
  });
  return ok;
}

void TraceStream::publish(CoreTrace& ct, bool finished, bool blocked) {
  const size_t c = index(ct);
  std::lock_guard<std::mutex> lk(mu_);
  PerCore& p = cores_[c];
  p.started = true;
  if (!ct.events.empty()) {
    p.produced += ct.events.size();
    if (!discard_) p.chunks.push_back(std::move(ct.events));
    ct.events = {};
    ct.events.reserve(chunk);
  }
  if (finished) {
    p.finished = true;
    p.tail = ct.pending_scalar_ops;
  }
  p.blocked = blocked;
  p.held = over_cap(c);
  ct.hold = p.held;
  // The model, or a producer thread deciding whether to raise its caps, may wait on this core.
  if (starved_ >= 0) cv_.notify_all();
}

void TraceStream::wait_for_room(const std::vector<CoreTrace*>& held) {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    bool any = false;
    for (CoreTrace* ct : held) {
      PerCore& p = cores_[index(*ct)];
      if (!over_cap(index(*ct))) {
        p.held = ct->hold = false;
        any = true;
      }
    }
    if (any) return;
    if (starved_ >= 0) {
      const PerCore& s = cores_[starved_];
      // The model waits for a core that cannot move on its own: only a raised cap moves it
      // (the starved core itself if it is held here; else whatever is held here, one window
      // more, since the starved core may wait for any of them).
      if (!s.started || s.blocked || s.held) {
        bool mine = false;
        for (CoreTrace* ct : held) mine |= index(*ct) == static_cast<size_t>(starved_);
        if (mine || !s.held) {
          for (CoreTrace* ct : held) {
            const size_t c = index(*ct);
            if (mine && c != static_cast<size_t>(starved_)) continue;
            PerCore& p = cores_[c];
            p.cap = p.produced - p.consumed + window_;
            p.held = ct->hold = false;
          }
          return;
        }
      }
    }
    cv_.wait(lk);
  }
}

void TraceStream::producer_ended() {
  std::lock_guard<std::mutex> lk(mu_);
  ended_ = true;
  cv_.notify_all();
}

bool TraceStream::pull(size_t c, std::deque<TraceEvent>& out, int64_t& tail) {
  std::vector<std::vector<TraceEvent>> got;
  {
    std::unique_lock<std::mutex> lk(mu_);
    PerCore& p = cores_[c];
    while (p.chunks.empty()) {
      if (p.finished) {
        tail = p.tail;
        starved_ = -1;
        return false;
      }
      if (ended_) throw StreamAborted{};
      starved_ = static_cast<int64_t>(c);
      cv_.notify_all();
      cv_.wait(lk);
    }
    starved_ = -1;
    got.swap(p.chunks);
  }
  for (auto& ch : got)
    for (auto& e : ch) out.push_back(std::move(e));
  return true;
}

void TraceStream::consumed(size_t c, uint64_t upto) {
  std::lock_guard<std::mutex> lk(mu_);
  PerCore& p = cores_[c];
  p.consumed = upto;
  // A window raised to break a cycle shrinks back once the model has caught up.
  if (p.produced - p.consumed < window_ / 2) p.cap = window_;
  if (p.held && !over_cap(c)) cv_.notify_all();
}

void TraceStream::discard() {
  std::lock_guard<std::mutex> lk(mu_);
  discard_ = true;
  for (auto& p : cores_) p.chunks.clear();
  cv_.notify_all();
}

}  // namespace tl::npu
