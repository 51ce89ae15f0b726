// The instruction costs of the timing model (timing_costs.h): cube fractals, cube loads, copies
// along their paths (latency + bytes at the core's rate), vector instructions by cost class.
#include "timing_costs.h"

#include <algorithm>
#include <cmath>

namespace tl::npu {
namespace {
std::string path_key(MemScope s, MemScope d) { return fmt::format("{}->{}", scope_name(s), scope_name(d)); }
}  // namespace

CostModel::CostModel(const Target& t) : c_(t.costs), clock_hz_(t.clock_ghz * 1e9) {
  // GM latency: K / plateau of GM->UB (DESIGN.md 3.4), used by GM paths without their own K.
  gm_latency_ = latency(MemScope::GM, MemScope::UB);
}

double CostModel::rate(MemScope s, MemScope d) const {
  auto k = path_key(s, d);
  auto it = c_.copy_bytes_per_cycle.find(k);
  double r = it != c_.copy_bytes_per_cycle.end() ? it->second : 128;
  auto m = c_.copy_measured_bytes_per_s.find(k);
  if (m != c_.copy_measured_bytes_per_s.end()) r = std::min(r, m->second / clock_hz_);
  return r;
}
double CostModel::latency(MemScope s, MemScope d) const {
  auto it = c_.copy_latency_bytes.find(path_key(s, d));
  if (it != c_.copy_latency_bytes.end()) return it->second / rate(s, d);
  if (s == MemScope::GM || d == MemScope::GM) return gm_latency_;
  return c_.onchip_copy_latency_cycles;
}

Cost CostModel::cost(const TraceEvent& e) const {
  Cost k;
  if (e.cost == CostClass::Mmad) {
    // One 16x16x16 fp16/bf16 fractal per cycle; int8 k in 32s; fp32 a quarter of the rate.
    double kf = std::ceil(static_cast<double>(e.k) / (e.dtype == DType::Int8 || e.dtype == DType::UInt8 ? 32 : 16));
    double fr = std::ceil(e.m / 16.0) * std::ceil(e.n / 16.0) * kf;
    if (e.dtype == DType::Float32) fr *= 4;
    k.fixed = c_.cube_head_cycles + fr / c_.cube_fractals_per_cycle;
    k.interval = k.fixed;
    return k;
  }
  if (e.cost == CostClass::CubeLoad) {
    // A into L0A and B into L0B (the write accesses carry the two sizes).
    double a = 0, b = 0;
    for (const auto& x : e.accesses)
      if (x.write && x.mem.scope == MemScope::L0A) a += static_cast<double>(x.len * x.count);
      else if (x.write && x.mem.scope == MemScope::L0B) b += static_cast<double>(x.len * x.count);
    if (a + b == 0) a = static_cast<double>(e.bytes);
    k.fixed = latency(MemScope::L1, MemScope::L0A) + a / rate(MemScope::L1, MemScope::L0A) +
              b / rate(MemScope::L1, MemScope::L0B);
    k.interval = k.fixed;
    return k;
  }
  if (e.cost == CostClass::Copy) {
    MemScope s = e.src_scope, d = e.dst_scope;
    double r = rate(s, d), lat = latency(s, d), by = static_cast<double>(e.bytes);
    if (s == MemScope::GM || d == MemScope::GM) {
      k.gm = true;
      k.write = d == MemScope::GM;
      k.fixed = lat;
      k.bytes = by;
      k.rate = r;
      k.interval = c_.issue_cycles;
    } else {
      k.fixed = lat + by / r;
      k.interval = std::max(c_.issue_cycles, by / r);
    }
    return k;
  }
  if (is_vector_cost(e.cost)) {
    const CostTable::VectorCost& vc = c_.vector_cost(e.cost);
    double reps = std::max(1.0, std::ceil(static_cast<double>(e.bytes) / c_.vector_bytes_per_repeat));
    k.fixed = vc.head + vc.per_repeat * reps + vc.tail;
    k.interval = std::max(c_.issue_cycles, vc.per_repeat * reps);
    return k;
  }
  k.fixed = c_.scalar_op_cycles;
  k.interval = k.fixed;
  return k;
}

}  // namespace tl::npu
