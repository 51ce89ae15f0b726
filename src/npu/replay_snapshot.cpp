// Timed mode with data runs a launch twice from the same memory (replay.h): this keeps what the
// second run needs of the first run's starting state, and compares the two results.
//
// Copying every tensor argument before the functional run, restoring it after and packing both
// results for the comparison cost more than the replay itself (docs/virtual_npu.md, "Data in
// simulated-time order"). Instead, a GM byte is kept only when the functional run is about to
// write it for the first time: the trace records a tile op's (or a scalar store's) accesses
// before it executes, so the interpreter calls save_gm_writes with them. Restoring swaps the
// kept bytes with the live ones, so afterwards the keep holds the program-order result of
// exactly the bytes that can differ, and the comparison reads only those.
#include <algorithm>
#include <cstring>

#include "replay.h"
#include "tl/error.h"
#include "tl/npu/numerics.h"

namespace tl::npu {
namespace {

constexpr size_t kGranule = 64;  // bytes kept together (one bit of Span::kept)

/// Bytes of a tensor view from its first to its last element.
std::pair<uint8_t*, size_t> bytes_of(const Tensor& t) {
  int64_t last = 0;
  for (int d = 0; d < t.ndim(); ++d) {
    if (t.dim(d) == 0) return {t.data(), 0};
    last += (t.dim(d) - 1) * t.strides()[d];
  }
  return {t.data(), static_cast<size_t>((last + 1) * dtype_bytes(t.dtype()))};
}

/// Byte offset of element `flat` (row-major) of a view.
int64_t byte_offset(const Tensor& t, int64_t flat) {
  int64_t off = 0;
  for (int d = t.ndim(); d-- > 0;) {
    off += (flat % t.dim(d)) * t.strides()[d];
    flat /= t.dim(d);
  }
  return off * dtype_bytes(t.dtype());
}

std::string index_str(const Tensor& t, int64_t flat) {
  std::vector<int64_t> idx(t.ndim());
  for (int d = t.ndim(); d-- > 0;) {
    idx[d] = flat % t.dim(d);
    flat /= t.dim(d);
  }
  return fmt::format("[{}]", fmt::join(idx, ", "));
}

}  // namespace

struct LaunchSnapshot::Span {
  uint8_t* data = nullptr;
  size_t len = 0;
  std::unique_ptr<uint8_t[]> saved;  // at the offsets of `data`; pages of kept granules only
  std::vector<uint64_t> kept;        // a bit per granule

  bool is_kept(size_t g) const { return kept[g / 64] >> (g % 64) & 1; }
  /// Calls f(lo, hi) for each maximal byte range of kept granules.
  template <typename F>
  void for_each_kept(F&& f) const {
    const size_t n = (len + kGranule - 1) / kGranule;
    for (size_t g = 0; g < n;) {
      if (kept[g / 64] == 0) {
        g = (g / 64 + 1) * 64;
        continue;
      }
      if (!is_kept(g)) {
        ++g;
        continue;
      }
      size_t e = g + 1;
      while (e < n && is_kept(e)) ++e;
      f(g * kGranule, std::min(len, e * kGranule));
      g = e;
    }
  }
  /// Keeps the granules of bytes [lo, hi) (offsets) not kept yet.
  void keep(size_t lo, size_t hi) {
    if (!saved) saved.reset(new uint8_t[len]);  // uninitialised: only kept pages are touched
    const size_t last = (hi - 1) / kGranule;
    for (size_t g = lo / kGranule; g <= last;) {
      if (is_kept(g)) {
        ++g;
        continue;
      }
      size_t e = g + 1;
      while (e <= last && !is_kept(e)) ++e;
      const size_t a = g * kGranule, b = std::min(len, e * kGranule);
      std::memcpy(saved.get() + a, data + a, b - a);
      for (size_t k = g; k < e; ++k) kept[k / 64] |= uint64_t{1} << (k % 64);
      g = e;
    }
  }
};

LaunchSnapshot::LaunchSnapshot(const LaunchState& ls, DeviceMemories& mem,
                               std::vector<std::array<size_t, kNumMemScopes>> poisoned)
    : mem_(mem), core_bytes_(std::move(poisoned)) {
  // Merge the tensor arguments' byte spans (views may share storage).
  std::vector<std::pair<uint8_t*, size_t>> spans;
  for (const auto& t : ls.tensors)
    if (t.defined()) spans.push_back(bytes_of(t));
  std::sort(spans.begin(), spans.end());
  for (const auto& [p, len] : spans) {
    // A tensor without elements has no bytes to keep (and possibly no storage).
    if (len == 0) continue;
    if (!gm_.empty() && p <= gm_.back().data + gm_.back().len) {
      auto& last = gm_.back();
      last.len = std::max(last.len, static_cast<size_t>(p + len - last.data));
      continue;
    }
    gm_.emplace_back();
    gm_.back().data = p;
    gm_.back().len = len;
  }
  for (auto& s : gm_) s.kept.assign((s.len + kGranule * 64 - 1) / (kGranule * 64), 0);
}

LaunchSnapshot::~LaunchSnapshot() = default;

LaunchSnapshot::Span* LaunchSnapshot::span_of(uint64_t address, uint64_t len) {
  auto it = std::upper_bound(gm_.begin(), gm_.end(), address, [](uint64_t a, const Span& s) {
    return a < reinterpret_cast<uintptr_t>(s.data);
  });
  if (it == gm_.begin()) return nullptr;
  --it;
  const auto lo = reinterpret_cast<uintptr_t>(it->data);
  return address + len <= lo + it->len ? &*it : nullptr;
}

void LaunchSnapshot::save_gm_writes(const CoreTrace& ct, size_t first) {
  std::unique_lock<std::mutex> lock(mu_, std::defer_lock);
  for (size_t i = first; i < ct.events.size(); ++i)
    for (const Access& a : ct.events[i].accesses) {
      if (!a.write || a.mem.scope != MemScope::GM || a.len == 0 || a.count == 0) continue;
      if (!lock.owns_lock()) lock.lock();
      Span* s = span_of(a.start, a.end() - a.start);
      TL_ASSERT(s, "timed mode: a GM write of {} bytes at {:#x} outside every tensor argument",
                a.end() - a.start, a.start);
      const size_t base = a.start - reinterpret_cast<uintptr_t>(s->data);
      if (a.count == 1 || a.pitch <= a.len) {
        s->keep(base, base + (a.end() - a.start));
        continue;
      }
      for (uint64_t r = 0; r < a.count; ++r)
        s->keep(base + r * a.pitch, base + r * a.pitch + a.len);
    }
}

void LaunchSnapshot::restore() {
  for (auto& s : gm_)
    if (s.saved)
      s.for_each_kept([&](size_t lo, size_t hi) {
        std::swap_ranges(s.data + lo, s.data + hi, s.saved.get() + lo);
      });
  // A timed launch starts from poisoned on-chip memories (launch.cpp).
  for (size_t i = 0; i < core_bytes_.size(); ++i)
    for (size_t m = 0; m < kNumMemScopes; ++m) {
      auto& live = mem_.cores[i][m];
      TL_ASSERT(live.size() >= core_bytes_[i][m], "replay: core memory shrank");
      std::fill(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(core_bytes_[i][m]),
                uint8_t{0xFF});
    }
}

std::vector<std::string> LaunchSnapshot::diff(const LaunchState& ls) const {
  std::vector<std::string> out;
  // Which spans differ at all (the common case: none).
  std::vector<const Span*> differ;
  for (const auto& s : gm_) {
    bool same = true;
    if (s.saved)
      s.for_each_kept([&](size_t lo, size_t hi) {
        same = same && std::memcmp(s.data + lo, s.saved.get() + lo, hi - lo) == 0;
      });
    if (!same) differ.push_back(&s);
  }
  if (differ.empty()) return out;
  const auto& params = ls.program.func->params;
  for (size_t i = 0; i < ls.tensors.size(); ++i) {
    const Tensor& t = ls.tensors[i];
    if (!t.defined() || t.numel() == 0) continue;
    const Span* s = nullptr;
    for (const Span* d : differ)
      if (t.data() >= d->data && t.data() < d->data + d->len) s = d;
    if (!s) continue;
    // The program-order image of the span: the live bytes, with the kept ones put back.
    std::vector<uint8_t> was(s->data, s->data + s->len);
    s->for_each_kept(
        [&](size_t lo, size_t hi) { std::memcpy(was.data() + lo, s->saved.get() + lo, hi - lo); });
    const size_t at = static_cast<size_t>(t.data() - s->data);
    const int64_t es = dtype_bytes(t.dtype());
    int64_t count = 0, first = -1;
    for (int64_t e = 0; e < t.numel(); ++e) {
      const int64_t off = byte_offset(t, e);
      if (std::memcmp(was.data() + at + off, t.data() + off, es) != 0) {
        if (first < 0) first = e;
        ++count;
      }
    }
    if (first < 0) continue;
    // Tensors after the parameters are the launch's workspaces.
    const std::string name = i < params.size()
                                 ? params[i].name()
                                 : "workspace " + ls.program.workspaces[i - params.size()]->name;
    const int64_t off = byte_offset(t, first);
    out.push_back(fmt::format(
        "{}{}: {} in program order, {} in simulated-time order ({} of {} elements differ)", name,
        index_str(t, first), to_double(t.dtype(), was.data() + at + off),
        to_double(t.dtype(), t.data() + off), count, t.numel()));
  }
  return out;
}

}  // namespace tl::npu
