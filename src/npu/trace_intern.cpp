// The trace's interned strings and source locations (tl/npu/trace.h, TraceName / TraceLoc):
// one process-wide copy of each distinct value, so that an event of a launch's trace holds
// 8-byte pointers instead of a SourceLoc and strings of its own (docs/virtual_npu.md, "Trace
// memory").
//
// The interned values live in node-based sets (stable addresses) behind one mutex, and are
// never freed. The cores record on several threads, each event interns its name and location,
// so each thread first looks the value up in its own cache (by content: no lock, no
// allocation); only a value the thread has not met yet takes the lock.
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "tl/npu/trace.h"

namespace tl::npu {

namespace {

struct LocView {
  std::string_view file, via;
  int line;
  bool operator==(const LocView& o) const {
    return line == o.line && file == o.file && via == o.via;
  }
};
struct LocHash {
  size_t operator()(const LocView& l) const {
    const std::hash<std::string_view> h;
    return h(l.file) ^ (h(l.via) * 31) ^ (static_cast<size_t>(l.line) * 0x9E3779B97F4A7C15ull);
  }
};
LocView view_of(const SourceLoc& l) {
  return {l.file, l.via, l.line};
}

std::mutex& intern_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

const std::string* intern_string(std::string_view s) {
  thread_local std::unordered_map<std::string_view, const std::string*> mine;
  if (auto it = mine.find(s); it != mine.end()) return it->second;
  static std::unordered_set<std::string> all;
  const std::string* p;
  {
    std::lock_guard<std::mutex> lock(intern_mutex());
    p = &*all.emplace(s).first;
  }
  mine.emplace(*p, p);  // keyed by a view of the interned copy, which outlives the cache
  return p;
}

const SourceLoc* intern_loc(const SourceLoc& l) {
  thread_local std::unordered_map<LocView, const SourceLoc*, LocHash> mine;
  if (auto it = mine.find(view_of(l)); it != mine.end()) return it->second;
  static std::unordered_map<LocView, std::unique_ptr<SourceLoc>, LocHash> all;
  const SourceLoc* p;
  {
    std::lock_guard<std::mutex> lock(intern_mutex());
    auto it = all.find(view_of(l));
    if (it == all.end()) {
      auto copy = std::make_unique<SourceLoc>(l);
      const LocView key = view_of(*copy);
      it = all.emplace(key, std::move(copy)).first;
    }
    p = it->second.get();
  }
  mine.emplace(view_of(*p), p);
  return p;
}

}  // namespace tl::npu
