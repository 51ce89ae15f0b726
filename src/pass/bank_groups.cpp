// The UB bank-group placement plan_memory asks for (bank_groups.h): which pairs of UB sources
// the layout decides, how much each costs in conflicting repeats, and the residues modulo the
// bank period that avoid the heaviest. Everything comes from the op traits (the instruction
// expansion's cost classes and read operands), never from op names.
#include "bank_groups.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>

#include "tl/ir_equal.h"
#include "tl/ir_functor.h"
#include "tl/linear.h"
#include "tl/op.h"
#include "tl/storage.h"

namespace tl {
namespace {

using Form = arith::LinearForm<6>;

/// A loop of unknown trip count (a dynamic tile count) is taken to run this many times: only the
/// relative weight of instructions inside and outside it matters, and a loop over tiles usually
/// encloses every instruction of the kernel.
constexpr double kDynamicTrips = 16;

class PairFinder : public IRVisitor {
 public:
  using IRVisitor::visit;
  PairFinder(const Target& t, const Liveness& lv, const std::vector<const BufferLife*>& lives)
      : t_(t), lv_(lv), period_(t.costs.ub_bank_bytes * t.costs.ub_bank_groups) {
    for (size_t i = 0; i < lives.size(); ++i) slot_.emplace(lives[i]->buffer.get(), i);
  }
  std::map<std::tuple<size_t, size_t, int64_t>, double> pairs;

 protected:
  void visit_(const ForNode* n) override {
    auto e = as_const_int(n->extent);
    trips_.push_back(e ? static_cast<double>(std::max<int64_t>(*e, 0)) : kDynamicTrips);
    IRVisitor::visit_(n);
    trips_.pop_back();
  }

  void visit_(const TileOpNode* n) override {
    IRVisitor::visit_(n);
    const OpDef& op = *n->op;
    const double trips = std::accumulate(trips_.begin(), trips_.end(), 1.0, std::multiplies<>());
    if (trips == 0) return;
    for (const InstrSpec& spec : op.expansion) {
      if (spec.kind != InstrSpec::Kind::Op || !is_vector_cost(spec.cost)) continue;
      // The distinct sources as the virtual NPU counts them: each Read touch of a UB region
      // operand, equal starts once.
      struct Source {
        size_t slot;
        Form at;  // byte offset in the planned buffer
      };
      std::vector<Source> sources;
      bool known = true;
      for (const auto& touch : spec.touches) {
        if (touch.operand < 0 || touch.access != Access::Read ||
            static_cast<size_t>(touch.operand) >= n->args.size())
          continue;
        const TileArg& arg = n->args[static_cast<size_t>(touch.operand)];
        if (!arg.is_region() || arg.region.buffer->scope != MemScope::UB) continue;
        auto s = source_of(arg.region);
        if (!s) {
          known = false;  // a source the planner cannot follow: leave the instruction out
          break;
        }
        bool dup = std::any_of(sources.begin(), sources.end(), [&](const Source& x) {
          return x.slot == s->first && x.at.minus(s->second) == std::optional<int64_t>(0);
        });
        if (!dup) sources.push_back({s->first, s->second});
      }
      if (!known || sources.size() != 2 || sources[0].slot == sources[1].slot) continue;
      // Their distance modulo the period must not depend on a loop variable: every atom's
      // coefficient a multiple of the period (the slot index of a pipelined buffer whose slots
      // are whole periods, say).
      Form d = sources[0].at;
      d.add(sources[1].at, -1);
      if (d.overflow()) continue;
      bool fixed = true;
      for (const auto& term : d) fixed = fixed && term.second % period_ == 0;
      const int64_t delta = ((d.constant() % period_) + period_) % period_;
      if (!fixed || delta % t_.costs.ub_bank_bytes != 0) continue;
      pairs[{sources[0].slot, sources[1].slot, delta}] += trips * repeats(*n);
    }
  }

 private:
  /// The planned buffer of region `r` and its start's byte offset in it, as a linear form.
  std::optional<std::pair<size_t, Form>> source_of(const BufferRegion& r) {
    auto idx = lv_.index.find(r.buffer.get());
    if (idx == lv_.index.end()) return std::nullopt;
    auto slot = slot_.find(lv_.buffers[idx->second].buffer.get());
    if (slot == slot_.end()) return std::nullopt;
    const BufferNode& b = *r.buffer;
    if (r.ranges.size() != b.ndim()) return std::nullopt;
    // Element strides: the buffer's own, else dense row-major over its constant shape.
    std::vector<int64_t> strides(b.ndim(), 1);
    for (size_t k = b.ndim(); k-- > 0;) {
      if (!b.strides.empty()) {
        auto s = as_const_int(b.strides[k]);
        if (!s) return std::nullopt;
        strides[k] = *s;
      } else if (k + 1 < b.ndim()) {
        auto e = as_const_int(b.shape[k + 1]);
        if (!e) return std::nullopt;
        strides[k] = strides[k + 1] * *e;
      }
    }
    Form at;
    for (size_t k = 0; k < b.ndim(); ++k) {
      auto f = arith::decompose<6>(r.ranges[k].min, [&](const Expr& x) -> std::optional<Form> {
        return Form::atom(atom_key(x));
      });
      if (!f) return std::nullopt;
      at.add(*f, strides[k] * dtype_bytes(b.dtype));
    }
    if (at.overflow()) return std::nullopt;
    return std::pair{slot->second, at};
  }

  /// One key per structurally distinct atom (two `k % 2` of one loop are one atom).
  int64_t atom_key(const Expr& x) {
    for (size_t i = 0; i < atoms_.size(); ++i)
      if (structural_equal(atoms_[i], x)) return static_cast<int64_t>(i);
    atoms_.push_back(x);
    return static_cast<int64_t>(atoms_.size() - 1);
  }

  /// Repeats of one instruction, as the timing model counts them: its widest operand's bytes
  /// over 256 (trace_record.cpp, set_cost_inputs), from the regions of constant extent.
  double repeats(const TileOpNode& n) const {
    int64_t bytes = 0;
    for (const auto& a : n.args) {
      if (!a.is_region() || a.region.partial()) continue;
      int64_t count = 1;
      for (const auto& rg : a.region.ranges) count *= as_const_int(rg.extent).value_or(1);
      bytes = std::max<int64_t>(bytes, count * dtype_bytes(a.region.buffer->dtype));
    }
    const double per = t_.costs.vector_bytes_per_repeat;
    return std::max(1.0, std::ceil(static_cast<double>(bytes) / per));
  }

  const Target& t_;
  const Liveness& lv_;
  const int64_t period_;
  std::unordered_map<const BufferNode*, size_t> slot_;
  std::vector<double> trips_;
  std::vector<Expr> atoms_;
};

bool conflicts(int64_t at_a, int64_t at_b, int64_t delta, const Target& t) {
  const int64_t block = t.costs.ub_bank_bytes, groups = t.costs.ub_bank_groups;
  const int64_t d = ((at_a - at_b + delta) / block % groups + groups) % groups;
  return d != groups / 2;
}

}  // namespace

std::vector<BankPair> bank_pairs(const Stmt& body, const Target& target, const Liveness& lv,
                                 const std::vector<const BufferLife*>& lives) {
  if (target.costs.bank_conflict_factor == 1 || target.costs.ub_bank_groups < 2) return {};
  PairFinder finder(target, lv, lives);
  finder.visit(body);
  std::vector<BankPair> out;
  for (const auto& [key, w] : finder.pairs)
    out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), w});
  return out;
}

double bank_conflicts(const std::vector<BankPair>& pairs, const std::vector<int64_t>& offsets,
                      const Target& target) {
  double cost = 0;
  for (const auto& p : pairs)
    if (conflicts(offsets[p.a], offsets[p.b], p.delta, target)) cost += p.weight;
  return cost;
}

std::vector<int64_t> bank_residues(const std::vector<BankPair>& pairs, size_t n,
                                   const std::vector<int64_t>& base,
                                   const std::vector<int64_t>& fixed, const Target& target) {
  const int64_t block = target.costs.ub_bank_bytes, period = block * target.costs.ub_bank_groups;
  std::vector<double> weight(n, 0);
  for (const auto& p : pairs) weight[p.a] += p.weight, weight[p.b] += p.weight;
  std::vector<int64_t> res(n, -1);
  for (size_t i = 0; i < n; ++i)
    if (fixed[i] >= 0 && weight[i] > 0) res[i] = fixed[i] % period;
  // The cost of buffer i at residue r against the buffers already given one.
  auto cost_at = [&](size_t i, int64_t r) {
    double c = 0;
    for (const auto& p : pairs) {
      if (p.a == i && res[p.b] >= 0 && conflicts(r, res[p.b], p.delta, target)) c += p.weight;
      if (p.b == i && res[p.a] >= 0 && conflicts(res[p.a], r, p.delta, target)) c += p.weight;
    }
    return c;
  };
  // The best residue of buffer i, its base layout's on a tie (then the lowest).
  auto best = [&](size_t i) {
    const int64_t keep = (base[i] % period) / block * block;
    int64_t pick = keep;
    double least = cost_at(i, keep);
    for (int64_t r = 0; r < period; r += block) {
      double c = cost_at(i, r);
      if (c < least) least = c, pick = r;
    }
    return pick;
  };
  std::vector<size_t> order;
  for (size_t i = 0; i < n; ++i)
    if (weight[i] > 0 && fixed[i] < 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return weight[x] > weight[y]; });
  for (size_t i : order) res[i] = best(i);
  for (int round = 0; round < 8; ++round) {
    bool changed = false;
    for (size_t i : order) {
      const int64_t was = res[i];
      res[i] = -1;
      const int64_t now = best(i);
      // Move only for a strict gain, so the rounds end.
      res[i] = cost_at(i, now) < cost_at(i, was) ? now : was;
      changed = changed || res[i] != was;
    }
    if (!changed) break;
  }
  for (size_t i = 0; i < n; ++i)
    if (fixed[i] >= 0) res[i] = -1;  // pinned: nothing to ask of the placement
  return res;
}

}  // namespace tl
