// The instruction costs of the timing model (timing_costs.h): cube fractals, cube loads, copies
// along their paths (latency + bytes at the core's rate), vector instructions by cost class.
#include "timing_costs.h"

#include <algorithm>
#include <cmath>

namespace tl::npu {
namespace {
std::string path_key(MemScope s, MemScope d) {
  return fmt::format("{}->{}", scope_name(s), scope_name(d));
}
}  // namespace

CostModel::CostModel(const Target& t) : c_(t.costs), clock_hz_(t.clock_ghz * 1e9) {
  // GM latency: K / plateau of GM->UB (docs/hardware.md section 4), used by GM paths without their
  // own K.
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
  if (d == MemScope::GM) return gm_latency_ * c_.gm_write_latency_fraction;
  if (s == MemScope::GM) return gm_latency_;
  return c_.onchip_copy_latency_cycles;
}

double CostModel::full_sort_cycles(int64_t n, int64_t keep) const {
  // AscendC's Sort (A2) is Sort32 (sorts each run of 32 scores into (score, index) pairs; one
  // repeat per run) followed by MrgSort passes, each merging up to 4 sorted lists per group, one
  // instruction per pass with a repeat per 32 pairs it writes (a pair is 8 B: 256 B a repeat,
  // the vector repeat). A top-k keeps at most k entries of each merged list. Both instructions
  // use the merge-sort row of the cost table (docs/hardware.md section 4); no Sort32 figure is
  // published.
  const CostTable::VectorCost& vc = c_.vector_cost(CostClass::VecSort);
  const double per_pass = vc.head + vc.tail;
  int64_t lists = (n + 31) / 32, len = std::min<int64_t>(32, keep);
  double cycles = per_pass + vc.per_repeat * static_cast<double>(lists);
  while (lists > 1) {
    const int64_t groups = (lists + 3) / 4;
    len = std::min(len * 4, keep);
    cycles += per_pass + vc.per_repeat * std::ceil(static_cast<double>(groups * len) / 32);
    lists = groups;
  }
  return cycles;
}

Cost CostModel::cost(const TraceEvent& e) const {
  Cost k;
  if (e.cost == CostClass::Mmad) {
    // One 16x16x16 fp16/bf16 fractal per cycle; int8 k in 32s; fp32 a quarter of the rate.
    double kf = std::ceil(static_cast<double>(e.k) /
                          (e.dtype == DType::Int8 || e.dtype == DType::UInt8 ? 32 : 16));
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
      if (x.write && x.mem.scope == MemScope::L0A)
        a += static_cast<double>(x.len * x.count);
      else if (x.write && x.mem.scope == MemScope::L0B)
        b += static_cast<double>(x.len * x.count);
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
      if (e.gm_unaligned) by /= c_.gm_unaligned_efficiency;  // partly used 512-byte requests
      k.gm = true;
      k.write = d == MemScope::GM;
      k.fixed = lat;
      k.bytes = by;
      k.rate = r;
      k.interval = std::max(c_.issue_cycles, c_.dma_issue_cycles);
    } else {
      k.fixed = lat + by / r;
      k.interval = std::max(c_.issue_cycles, by / r);
    }
    return k;
  }
  if (e.cost == CostClass::VecSort && e.m > 0) {
    k.fixed = full_sort_cycles(e.m, e.k);
    k.interval = k.fixed;
    return k;
  }
  if (is_vector_cost(e.cost)) {
    const CostTable::VectorCost& vc = c_.vector_cost(e.cost);
    double reps =
        std::max(1.0, std::ceil(static_cast<double>(e.bytes) / c_.vector_bytes_per_repeat));
    const double conflict = e.bank_conflict ? c_.bank_conflict_factor : 1;
    // Exp, ln, sqrt and div (the VecExpDiv row) process 32 elements a cycle whatever the type: a
    // 16-bit repeat holds twice the elements and takes twice the cycles (docs/hardware.md
    // section 4, "Vector").
    const double per_element = e.cost == CostClass::VecExpDiv && dtype_bytes(e.dtype) == 2 ? 2 : 1;
    double busy = vc.per_repeat * per_element * conflict * reps;
    if (e.cost == CostClass::VecReduce) {
      // One whole-repeat reduce a row (e.m rows; 0 when reducing another dimension), after the
      // row's other repeats are folded into its first at the simple rate (docs/hardware.md
      // section 4: vcmax / vcadd 7 cycles a repeat, folds about 1).
      const double rows = static_cast<double>(e.m);
      const double fold = c_.vector_cost(CostClass::VecSimple).per_repeat * conflict;
      busy = vc.per_repeat * rows + fold * std::max(0.0, reps - rows);
    }
    k.fixed = vc.head + busy + vc.tail;
    k.interval = std::max(c_.issue_cycles, busy);
    return k;
  }
  // The scalar unit: a store, a load, or another scalar instruction (dcci, printf).
  bool reads = false, writes = false;
  for (const auto& a : e.accesses) (a.write ? writes : reads) = true;
  k.fixed = writes ? c_.scalar_store_cycles : reads ? c_.scalar_load_cycles : c_.scalar_op_cycles;
  k.interval = k.fixed;
  return k;
}

}  // namespace tl::npu
