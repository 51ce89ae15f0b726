// Internal: live ranges of on-chip buffers in a pre-order linearisation of the statements
// (one index per statement). plan_memory places buffers by them; pipeline_loops bounds the
// memory its slots would take with them. A buffer accessed inside a loop its declaration is not
// in lives for the whole of the outermost such loop (its value crosses iterations), unless
// `per_iteration` is set and each iteration's first access of it in that loop is an
// unconditional write of all of it (or a write in one branch of an if that holds every access
// of it in the loop): then no value crosses iterations, and it lives from that write to its last
// access (issue 29: developer kernels declare every tile at the top, and a loop's scratch tile
// counted as live across the whole body overflowed UB by a few hundred bytes; an accumulator
// written by `gemm_v0(..., init=True)` is such a write; so is an inner loop writing `buf[i, :]`
// for every row i, unconditionally or in both branches of an if: sparse_attention.py's gathered
// kv tile). The rule applies loop by loop inward:
// a buffer whose accesses in a loop all lie in one inner loop that starts each of its
// iterations with such a write holds no value across either loop.
#pragma once

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tl/error.h"
#include "tl/ir_equal.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/storage.h"

namespace tl {

struct BufferLife {
  Buffer buffer;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  int64_t decl_pos = 0;
  size_t decl_depth = 0;  // loops enclosing the declaration
  int64_t first = -1, last = -1;
};

/// Live ranges of the on-chip buffers, in statement indices of a pre-order walk.
class Liveness : public IRVisitor {
 public:
  using IRVisitor::visit;
  std::vector<BufferLife> buffers;
  std::unordered_map<const BufferNode*, size_t> index;  // views map to their base's entry
  struct View {
    Buffer buffer;
    size_t base;  // index into buffers
  };
  std::vector<View> views;
  std::vector<SourceLoc> stmt_loc;  // per statement index
  /// Each loop's statements, [first, last] statement indices (the loop itself first).
  std::unordered_map<const ForNode*, std::pair<int64_t, int64_t>> loop_range;
  /// Per-iteration live ranges (above). plan_memory uses them only where a memory would
  /// overflow without them, and only when insert_syncs follows to order a reuse across the
  /// loop's back edge.
  bool per_iteration = false;
  /// With per_iteration: one region per iteration (a slot of a double buffer) written before it
  /// is read counts as a whole write (fresh()). plan_memory's last resort, so that a kernel that
  /// fit with the plain per-iteration ranges keeps its plan.
  bool slots = false;

  void visit(const Stmt& s) override {
    if (!s.defined()) return;
    pos_ = static_cast<int64_t>(stmt_loc.size());
    stmt_loc.push_back(s->loc);
    IRVisitor::visit(s);
  }

  /// Resolves the accesses into [first, last] once every loop's extent in the order is known.
  void finish() {
    for (size_t i = 0; i < accesses_.size(); ++i) {
      const Access& a = accesses_[i];
      BufferLife& b = buffers[a.buffer];
      int64_t lo = a.pos, hi = a.pos;
      // The outermost enclosing loop (inside the declaration's) whose iterations may pass a
      // value of the buffer on: the access lives over the whole of it.
      for (size_t k = 0; k < a.loops.size(); ++k) {
        if (fresh(i, k)) continue;
        lo = loops_[a.loops[k]].first, hi = loops_[a.loops[k]].last;
        break;
      }
      b.first = b.first < 0 ? lo : std::min(b.first, lo);
      b.last = std::max(b.last, hi);
    }
    for (auto& b : buffers)
      if (b.first < 0) b.first = b.last = b.decl_pos;  // never used: live where declared
  }

 private:
  struct Loop {
    int64_t first, last;
    const ForNode* node;
  };
  struct Access {
    size_t buffer;
    int64_t pos;
    std::vector<size_t> loops;  // indices into loops_, outermost first (inside the declaration's)
    std::vector<std::pair<size_t, int64_t>> ifs;  // enclosing if branches: loops around, id
    bool full_write;                              // overwrites the whole buffer
    bool sweep_write;  // overwrites row `i` whole, i the innermost loop's variable over all rows
    /// The one region of the buffer this tile op touches (nullptr: a scalar access, or two
    /// regions), with no memory load in its bounds, and whether the op overwrites it whole
    /// without reading the buffer (a slot of a double buffer: `kv_l0b[kk % 2, :, :]`).
    const BufferRegion* region = nullptr;
    bool region_write = false;
  };

  /// Whether no value of access `i`'s buffer crosses the iterations of the access's k-th
  /// enclosing loop L (0: the outermost inside the declaration's), i.e. each iteration of L
  /// touches the buffer first by overwriting it whole (only with `per_iteration`). Either the
  /// first access in L is an unconditional whole write directly in L's body, or a write inside
  /// one if (no deeper) whose branch holds every access in L (an iteration that skips the
  /// branch touches the buffer not at all); or every access in L lies in one inner loop M and
  /// the same holds of M (issue 29: sparse_flash_attention's kv_tail_l1 and acc_s_l1 share
  /// pinned L1 bytes, both written whole and read within one iteration of the kv loop, itself
  /// inside the loop over query rows).
  bool fresh(size_t i, size_t k) {
    if (!per_iteration) return false;
    const Access& a = accesses_[i];
    auto key = std::make_pair(a.buffer, a.loops[k]);
    if (auto it = fresh_.find(key); it != fresh_.end()) return it->second;
    // The buffer's accesses in L, in program order.
    std::vector<const Access*> in_l;
    for (const Access& x : accesses_)
      if (x.buffer == a.buffer && x.loops.size() > k && x.loops[k] == a.loops[k])
        in_l.push_back(&x);
    const Access& w = *in_l.front();
    // One slot per iteration: every access in L directly in its body and of the same region
    // (the same bounds, evaluated in the same iteration), so a write of that region is a whole
    // write as far as this iteration is concerned (issue 29: bench_sfa's kv_l0b, written and
    // read at `[kk % 2, :, :]` in each iteration of the kk loop).
    const bool slot =
        slots && w.region && std::all_of(in_l.begin(), in_l.end(), [&](const Access* x) {
          return x->region && x->loops.size() == k + 1 && same_region(*x->region, *w.region);
        });
    auto writes = [&](const Access& x) { return x.full_write || (slot && x.region_write); };
    bool ok = false;
    if (w.loops.size() == k + 1) {
      // Directly in L, under the if branches `chain` inside L (outermost first). Every access
      // in L must lie in the innermost of them (an iteration that skips it touches the buffer
      // not at all), where the write comes first. If that branch is a then (even id: each if
      // takes two ids, then first) and its else also starts with a whole write, the if is the
      // write, and the accesses need only lie in the branch around it (issue 29: in
      // sparse_flash_attn_mask_pa.py kv_ub is a copy if the index is valid, a fill if not,
      // inside two ifs of the query loop).
      std::vector<int64_t> chain;
      for (const auto& [depth, id] : w.ifs)
        if (depth > k) chain.push_back(id);
      auto holds = [](const Access& x, int64_t branch) {
        return std::any_of(x.ifs.begin(), x.ifs.end(),
                           [&](const auto& dep_id) { return dep_id.second == branch; });
      };
      ok = writes(w);
      if (ok && !chain.empty()) {
        const int64_t inner = chain.back();
        bool both = false;
        if (inner % 2 == 0)
          for (const Access* x : in_l)
            if (holds(*x, inner + 1)) {
              both = writes(*x) && x->loops.size() == k + 1 && x->ifs.back().second == inner + 1;
              break;
            }
        const int64_t need = !both ? inner : chain.size() >= 2 ? chain[chain.size() - 2] : -1;
        for (const Access* x : in_l) ok = ok && (need < 0 || holds(*x, need));
      }
    } else if (w.sweep_write && w.loops.size() == k + 2 && writes_every_row(in_l, w, k)) {
      // An inner loop M directly in L that overwrites the buffer row by row (`buf[i, :] = ...`
      // over all rows) before anything else touches it: M is the whole write (issue 29,
      // sparse_flash_attn_mask.py's acc_s_ub, written by a T.tile.select per row;
      // sparse_attention.py's kv_ub, a copy of the indexed kv row or of a zero row per row).
      ok = true;
      for (const Access* x : in_l)
        if (x->loops.size() > k + 1 && x->loops[k + 1] == w.loops[k + 1])
          ok = ok && x->sweep_write && x->loops.size() == k + 2;
    } else {
      ok = true;
      for (const Access* x : in_l)
        ok = ok && x->loops.size() > k + 1 && x->loops[k + 1] == w.loops[k + 1];
      ok = ok && fresh(static_cast<size_t>(&w - accesses_.data()), k + 1);
    }
    fresh_[key] = ok;
    return ok;
  }

  static bool same_region(const BufferRegion& a, const BufferRegion& b) {
    if (a.ranges.size() != b.ranges.size()) return false;
    for (size_t d = 0; d < a.ranges.size(); ++d)
      if (!structural_equal(a.ranges[d].min, b.ranges[d].min) ||
          !structural_equal(a.ranges[d].extent, b.ranges[d].extent))
        return false;
    return true;
  }

  /// Whether every iteration of the inner loop M of the sweep write `w` (directly in the k-th
  /// loop L around it) writes its row: M runs in every iteration of L (no if of L's body around
  /// it), and some write in M is under no if of M's body, or the two branches of one if directly
  /// in M's body each hold one (whichever way the condition goes, the row is written). The caller
  /// checks that every access in M is such a row write.
  static bool writes_every_row(const std::vector<const Access*>& in_l, const Access& w, size_t k) {
    for (const auto& [depth, id] : w.ifs)
      if (depth == k + 1) return false;    // M itself is conditional in L
    std::unordered_set<int64_t> branches;  // of an if directly in M's body, holding a write
    for (const Access* x : in_l) {
      if (x->loops.size() != k + 2 || x->loops[k + 1] != w.loops[k + 1]) continue;
      std::vector<int64_t> inner;
      for (const auto& [depth, id] : x->ifs)
        if (depth > k + 1) inner.push_back(id);
      if (inner.empty()) return true;
      if (inner.size() == 1) branches.insert(inner.front());
    }
    // Each if's branch ids are even (then) and the next one (else): visit_(IfNode).
    for (int64_t b : branches)
      if (b % 2 == 0 && branches.count(b + 1)) return true;
    return false;
  }

 protected:
  void visit_(const ForNode* n) override {
    size_t id = loops_.size();
    loops_.push_back({pos_, pos_, n});
    stack_.push_back(id);
    IRVisitor::visit_(n);
    stack_.pop_back();
    loops_[id].last = static_cast<int64_t>(stmt_loc.size()) - 1;
    loop_range[n] = {loops_[id].first, loops_[id].last};
  }

  /// Each if takes two branch ids at once, its then's even and its else's the next one, before
  /// either branch is visited: an if nested in the then branch takes ids after both (numbering
  /// the branches as visited gave a then nested in another then an odd id, and the pair tests of
  /// fresh() missed it: a row fill inside the `if vid == 0` that a vector kernel never reading vid
  /// runs under, python/tests/test_tla_row_fill.py).
  void visit_(const IfNode* n) override {
    visit(n->cond);
    const int64_t then_id = next_branch_;
    next_branch_ += 2;
    for (const Stmt* branch : {&n->then_case, &n->else_case}) {
      ifs_.push_back({stack_.size(), branch == &n->then_case ? then_id : then_id + 1});
      visit(*branch);
      ifs_.pop_back();
    }
  }

  /// The buffers this op overwrites whole without reading them (a Write operand over every
  /// element, the buffer in no other operand).
  void visit_(const TileOpNode* n) override {
    std::unordered_map<const BufferNode*, int> uses;
    for (const auto& a : n->args)
      if (a.is_region()) ++uses[a.region.buffer.get()];
    // A cube op's accumulator with a constant true `init` (gemm_v0 / mma: C = A x B, C
    // cleared first) is overwritten whole, not read (TileLang-Ascend's FlashAttention reuses
    // one L0C for two products per iteration so).
    bool init = false;
    for (size_t i = 0; i < n->args.size() && i < n->op->operands.size(); ++i) {
      auto v = n->args[i].is_scalar() ? as_const_int(n->args[i].scalar) : std::nullopt;
      if (n->op->operands[i].name == "init" && v && *v != 0) init = true;
    }
    for (size_t i = 0; i < n->args.size() && i < n->op->operands.size(); ++i) {
      const TileArg& a = n->args[i];
      if (!a.is_region()) continue;
      const BufferNode* b = a.region.buffer.get();
      const bool write_only = n->op->operands[i].access == tl::Access::Write && uses[b] == 1;
      if (uses[b] == 1 && !loads_memory(a.region)) {
        region_.emplace(b, &a.region);
        if (write_only) region_write_.insert(b);
      }
    }
    for (size_t i = 0; i < n->args.size() && i < n->op->operands.size(); ++i) {
      const TileArg& a = n->args[i];
      tl::Access acc = n->op->operands[i].access;
      bool writes = acc == tl::Access::Write ||
                    (init && acc == tl::Access::ReadWrite && n->op->operands[i].name == "C");
      if (!a.is_region() || !writes || uses[a.region.buffer.get()] != 1) continue;
      const Buffer& b = a.region.buffer;
      bool whole = a.region.ranges.size() == b->shape.size();
      for (size_t d = 0; whole && d < b->shape.size(); ++d) {
        auto mn = as_const_int(a.region.ranges[d].min),
             ext = as_const_int(a.region.ranges[d].extent);
        whole = mn && *mn == 0 && ext && ext == as_const_int(b->shape[d]);
      }
      // A copy the compiler clipped at a tensor's end (clipped=True) counts as whole: what it
      // leaves is stale by construction, and mask_tails keeps the stale part out of every
      // result, so no value of an earlier iteration is read there either.
      if (!whole && clipped(*n)) {
        whole = a.region.ranges.size() == b->shape.size();
        for (size_t d = 0; whole && d < b->shape.size(); ++d) {
          auto mn = as_const_int(a.region.ranges[d].min);
          whole = mn && *mn == 0;
        }
      }
      if (whole)
        full_write_.insert(b.get());
      else if (sweeps(a.region))
        sweep_write_.insert(b.get());
    }
    IRVisitor::visit_(n);
    full_write_.clear();
    sweep_write_.clear();
    region_.clear();
    region_write_.clear();
  }

  /// Whether a region's bounds read memory (a value that may change between two accesses).
  static bool loads_memory(const BufferRegion& r) {
    struct Loads : IRVisitor {
      using IRVisitor::visit;
      bool found = false;
      void visit_(const LoadNode*) override { found = true; }
    } v;
    for (const auto& range : r.ranges) {
      v.visit(range.min);
      v.visit(range.extent);
    }
    return v.found;
  }

  /// `buf[i, ...]` with every other dimension whole, i the variable of the innermost loop, which
  /// runs from 0 over all of dimension 0: the loop's iterations together overwrite the buffer.
  bool sweeps(const BufferRegion& r) const {
    const Buffer& b = r.buffer;
    if (stack_.empty() || r.ranges.size() != b->shape.size() || r.ranges.empty()) return false;
    const ForNode* loop = loops_[stack_.back()].node;
    if (!r.ranges[0].min.same_as(loop->var) || as_const_int(r.ranges[0].extent) != 1 ||
        as_const_int(loop->min) != 0 || !as_const_int(loop->extent) ||
        as_const_int(loop->extent) != as_const_int(b->shape[0]))
      return false;
    for (size_t d = 1; d < b->shape.size(); ++d) {
      auto mn = as_const_int(r.ranges[d].min), ext = as_const_int(r.ranges[d].extent);
      if (!mn || *mn != 0 || !ext || ext != as_const_int(b->shape[d])) return false;
    }
    return true;
  }

  static bool clipped(const TileOpNode& n) {
    const AttrValue* v = n.attr("clipped");
    return v && std::holds_alternative<bool>(*v) && std::get<bool>(*v);
  }

  void visit_(const AllocateNode* n) override {
    const BufferNode& b = *n->buffer;
    if (!is_planned_scope(b.scope)) return;
    if (n->is_view()) {
      // A view is its base's bytes: every access through it is an access of the base, and it
      // is placed where the base is.
      visit_buffer(n->view_of);
      if (auto it = index.find(n->view_of.get()); it != index.end()) {
        index.emplace(&b, it->second);
        views.push_back({n->buffer, it->second});
      }
      return;
    }
    if (auto it = index.find(&b); it != index.end()) {
      // Declared again (a generator reusing a handle): the outermost declaration governs.
      auto& life = buffers[it->second];
      life.decl_depth = std::min(life.decl_depth, stack_.size());
      return;
    }
    BufferLife life;
    life.buffer = n->buffer;
    for (const auto& s : b.shape) {
      auto v = as_const_int(s);
      if (!v || *v <= 0)
        throw Error(
            n->loc,
            fmt::format("buffer '{}': on-chip buffer shapes must be positive constants, got {}",
                        b.name, v ? std::to_string(*v) : "a symbolic size"));
      life.shape.push_back(*v);
    }
    life.bytes = storage_bytes(b.scope, b.dtype, life.shape);
    life.decl_pos = pos_;
    life.decl_depth = stack_.size();
    index.emplace(&b, buffers.size());
    buffers.push_back(std::move(life));
  }

  void visit_buffer(const Buffer& b) override {
    auto it = index.find(b.get());
    if (it == index.end()) return;
    const BufferLife& life = buffers[it->second];
    // Inside a loop the declaration is not in, the value may live across iterations (finish
    // decides): the loops around the access inside the declaration's, and the if branches in
    // them with the number of those loops around each.
    Access acc{it->second, pos_, {}, {}, false, false};
    acc.loops.assign(stack_.begin() + static_cast<std::ptrdiff_t>(life.decl_depth), stack_.end());
    for (const auto& [depth, id] : ifs_)
      if (depth > life.decl_depth) acc.ifs.push_back({depth - life.decl_depth, id});
    acc.full_write = full_write_.count(b.get()) && buffers[it->second].buffer.same_as(b);
    acc.sweep_write = sweep_write_.count(b.get()) && buffers[it->second].buffer.same_as(b);
    if (auto r = region_.find(b.get());
        r != region_.end() && buffers[it->second].buffer.same_as(b)) {
      acc.region = r->second;
      acc.region_write = region_write_.count(b.get()) > 0;
    }
    accesses_.push_back(std::move(acc));
  }

  int64_t pos_ = 0;
  std::vector<Loop> loops_;
  std::vector<size_t> stack_;
  std::vector<Access> accesses_;
  std::vector<std::pair<size_t, int64_t>> ifs_;  // each enclosing if branch: loop depth, id
  int64_t next_branch_ = 0;
  std::unordered_set<const BufferNode*> full_write_, sweep_write_, region_write_;
  std::unordered_map<const BufferNode*, const BufferRegion*> region_;
  std::map<std::pair<size_t, size_t>, bool> fresh_;  // (buffer, loop) -> fresh(), memoised
};

}  // namespace tl
