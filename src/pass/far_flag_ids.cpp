// far_flag_ids: what TileLang-Ascend's targets do with a hand-written flag whose event id lies
// past the chip's range, done safely (issue 29; docs/compiler.md, "Event ids past 7 under
// TileLang-Ascend's targets").
//
// AscendC's SetFlag/WaitFlag take event ids 0-7 on A2/A3 (hiascend.com, ascendcopapi
// atlasascendc_api_07_0270). TileLang-Ascend's pto code generator emits every T.set_flag /
// T.wait_flag through a helper that does nothing for an id outside 0-7, so such a flag orders
// nothing on the chip: moe_token_permute.py's MTE2 -> MTE3 flags 10 and 11 vanish there. Its
// ascendc code generator (the default) passes the id to AscendC::SetFlag / WaitFlag unchanged,
// outside the documented range (moe_token_permute_grad.py's MTE2 -> V id 10, the sparse
// attention benchmark's V -> MTE3 id 9). Dropping or guessing an ordering the author wrote is
// unsafe, so tl-ascend keeps it on a valid id instead: every flag of a pipe pair whose ids lie
// past the range moves, by one constant shift, onto ids of that pair the kernel does not use,
// with a remark naming the line. When the pair has no such ids left, a far flag whose set_flag
// is followed at once by its wait_flag (the flag is live over no instruction: "the src pipe's
// earlier work before the dst pipe's later work") takes the id of its low three bits; were that
// id still set there, the launch stops at the set_flag ("already set"), never silently. Else,
// or when an id's range is unknown or straddles the end of the range, nothing moves and the
// verifier's event-id-range error stands.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "developer.h"
#include "tl/arith.h"
#include "tl/far_flag_ids.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/pass.h"

namespace tl {
namespace {

using arith::bound;
using arith::Interval;
using arith::VarIntervals;

bool is_flag(const SyncNode* n) {
  return (n->sync_kind == SyncKind::SetFlag || n->sync_kind == SyncKind::WaitFlag) &&
         n->event_id.defined();
}

/// Each intra-core flag with the interval of its event id, given the loops and lets around it.
class CollectFlags : public IRVisitor {
 public:
  struct Use {
    const SyncNode* node;
    Interval ids;
  };
  std::vector<Use> uses;

 protected:
  VarIntervals vars_;

  void visit_(const ForNode* n) override {
    Interval mn = bound(n->min, vars_), ext = bound(n->extent, vars_);
    // A loop that may run no iteration still binds its variable to [min, min + extent - 1]
    // in every iteration it runs; the full dtype range when the extent is unknown.
    if (ext.hi >= 1 && ext.hi < (int64_t{1} << 40) && mn.lo > -(int64_t{1} << 40) &&
        mn.hi < (int64_t{1} << 40))
      vars_[n->var.node()] = Interval{mn.lo, mn.hi + ext.hi - 1};
    IRVisitor::visit_(n);
  }
  void visit_(const LetNode* n) override {
    vars_[n->var.node()] = bound(n->value, vars_);
    IRVisitor::visit_(n);
  }
  void visit_(const SyncNode* n) override {
    if (is_flag(n)) uses.push_back({n, bound(n->event_id, vars_)});
    IRVisitor::visit_(n);
  }
};

/// The set_flag / wait_flag pairs written back to back with one constant id (a Seq's element
/// i sets, element i + 1 waits for the same pipes and id).
class AdjacentPairs : public IRVisitor {
 public:
  std::map<const SyncNode*, const SyncNode*> partner;  // both directions

 protected:
  void visit_(const SeqNode* n) override {
    for (size_t i = 0; i + 1 < n->stmts.size(); ++i) {
      auto* a = n->stmts[i].as<SyncNode>();
      auto* b = n->stmts[i + 1].as<SyncNode>();
      if (!a || !b || a->sync_kind != SyncKind::SetFlag || b->sync_kind != SyncKind::WaitFlag ||
          a->src != b->src || a->dst != b->dst || !is_flag(a) || !is_flag(b))
        continue;
      auto ia = as_const_int(a->event_id), ib = as_const_int(b->event_id);
      if (!ia || !ib || *ia != *ib) continue;
      partner[a] = b;
      partner[b] = a;
    }
    IRVisitor::visit_(n);
  }
};

class ShiftIds : public IRMutator {
 public:
  std::map<const SyncNode*, int64_t> shift;

 protected:
  Stmt mutate_(const SyncNode* n, const Stmt& self) override {
    auto it = shift.find(n);
    if (it == shift.end()) return self;
    Expr id = simplify(n->event_id - arith::make_int(n->event_id.dtype(), it->second));
    return SyncNode::make(n->sync_kind, n->src, n->dst, id, n->mode, n->loc, n->origin);
  }
};

std::string id_range(int64_t lo, int64_t hi) {
  return lo == hi ? fmt::format("id {}", lo) : fmt::format("ids {}-{}", lo, hi);
}

}  // namespace

PrimFunc keep_far_flag_ids(const PrimFunc& f, const Target& target, const RemarkSink& sink,
                           const std::string& codegen) {
  if (codegen != "pto" && codegen != "ascendc")
    throw Error(fmt::format("keep_far_flag_ids: codegen must be \"pto\" or \"ascendc\", got \"{}\"",
                            codegen));
  const std::string what =
      codegen == "pto"
          ? "TileLang-Ascend's pto target drops such flags, leaving the two pipes unordered"
          : "TileLang-Ascend's ascendc target passes the id to AscendC SetFlag/WaitFlag "
            "unchanged, outside their documented range";
  CollectFlags c;
  c.visit(f->body);
  AdjacentPairs adj;
  adj.visit(f->body);
  const int64_t n_ids = target.num_event_ids;
  // Per pipe pair: the flags past the range and the intervals of those inside it.
  struct Pair {
    std::vector<CollectFlags::Use> far;
    std::vector<Interval> near;
    bool unknown = false;  // an id straddling the range's end, negative or unbounded
  };
  std::map<std::pair<Pipe, Pipe>, Pair> pairs;
  for (const auto& u : c.uses) {
    Pair& p = pairs[{u.node->src, u.node->dst}];
    if (u.ids.lo >= 0 && u.ids.hi < n_ids)
      p.near.push_back(u.ids);
    else if (u.ids.lo >= n_ids && u.ids.hi - u.ids.lo < n_ids)
      p.far.push_back(u);
    else
      p.unknown = true;
  }
  ShiftIds m;
  for (auto& [pipes, p] : pairs) {
    if (p.far.empty() || p.unknown) continue;
    int64_t lo = p.far[0].ids.lo, hi = p.far[0].ids.hi;
    for (const auto& u : p.far) lo = std::min(lo, u.ids.lo), hi = std::max(hi, u.ids.hi);
    const int64_t width = hi - lo + 1;
    // The lowest base whose ids no flag of this pair inside the range uses: the moved flags
    // then never meet the author's other flags of the pair on one id.
    std::optional<int64_t> base;
    for (int64_t b = 0; b + width <= n_ids && !base; ++b) {
      bool clash = std::any_of(p.near.begin(), p.near.end(), [&](const Interval& iv) {
        return iv.lo <= b + width - 1 && b <= iv.hi;
      });
      if (!clash) base = b;
    }
    if (!base) {
      // Every id of the pair is taken somewhere. A set waited for at once needs its id only
      // between the two: the id of its low three bits, checked at run time (a set of a set
      // flag is an error), as the chip's 3-bit event field would take it.
      const bool all_adjacent = std::all_of(p.far.begin(), p.far.end(), [&](const auto& u) {
        return adj.partner.count(u.node) && u.ids.lo == u.ids.hi;
      });
      if (!all_adjacent) continue;
      const SyncNode* first = p.far[0].node;
      for (const auto& u : p.far) {
        m.shift[u.node] = u.ids.lo - u.ids.lo % n_ids;
        if (u.node->loc.line < first->loc.line) first = u.node;
      }
      dev::remark(sink, "far_flag_ids", first->loc,
                  fmt::format("{} -> {} flags use event {}, past the chip's [0, {}) on {}; {}. "
                              "Every id of this pipe pair is used elsewhere, but each such "
                              "set_flag is waited for at once: tl-ascend issues it on the id of "
                              "its low three bits ({}), and stops at the set_flag if that id is "
                              "still set there",
                              pipe_name(pipes.first), pipe_name(pipes.second), id_range(lo, hi),
                              n_ids, target.name, what, id_range(lo % n_ids, hi % n_ids)));
      continue;
    }
    const SyncNode* first = p.far[0].node;
    for (const auto& u : p.far) {
      m.shift[u.node] = lo - *base;
      if (u.node->loc.line < first->loc.line) first = u.node;
    }
    dev::remark(sink, "far_flag_ids", first->loc,
                fmt::format("{} -> {} flags use event {}, past the chip's [0, {}) on {}; {}. "
                            "tl-ascend keeps the ordering on {}, which no other flag of this pipe "
                            "pair uses",
                            pipe_name(pipes.first), pipe_name(pipes.second), id_range(lo, hi),
                            n_ids, target.name, what, id_range(*base, *base + width - 1)));
  }
  if (m.shift.empty()) return f;
  return with_body(f, m.mutate(f->body));
}

PrimFunc keep_far_flag_ids(const PrimFunc& f, const Target& target, const RemarkSink& sink) {
  return keep_far_flag_ids(f, target, sink, "pto");
}

}  // namespace tl
