// Internal: live ranges of on-chip buffers in a pre-order linearisation of the statements
// (one index per statement). plan_memory places buffers by them; pipeline_loops bounds the
// memory its slots would take with them. A buffer accessed inside a loop its declaration is not
// in lives for the whole of the outermost such loop (its value crosses iterations), unless
// `per_iteration` is set and each iteration's first access of it in that loop is an
// unconditional write of all of it (or a write in one branch of an if that holds every access
// of it in the loop): then no value crosses iterations, and it lives from that write to its last
// access (issue 29: developer kernels declare every tile at the top, and a loop's scratch tile
// counted as live across the whole body overflowed UB by a few hundred bytes; an accumulator
// written by `gemm_v0(..., init=True)` is such a write).
#pragma once

#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tl/error.h"
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

  void visit(const Stmt& s) override {
    if (!s.defined()) return;
    pos_ = static_cast<int64_t>(stmt_loc.size());
    stmt_loc.push_back(s->loc);
    IRVisitor::visit(s);
  }

  /// Resolves the accesses into [first, last] once every loop's extent in the order is known.
  void finish() {
    // Per (buffer, loop): may the loop's accesses keep their own positions? Yes when the
    // first of them is an unconditional write of the whole buffer directly in the loop's body.
    // A write inside one if (no deeper) counts when every access of the buffer in the loop is
    // in that same branch: an iteration that skips the branch touches the buffer not at all.
    std::vector<std::unordered_map<int64_t, bool>> first_seen(buffers.size());
    std::vector<std::unordered_map<int64_t, int64_t>> branch_of(buffers.size());
    for (const auto& a : accesses_) {
      if (a.loop < 0) continue;
      auto [it, fresh] = first_seen[a.buffer].try_emplace(a.loop, false);
      if (fresh) {
        it->second = per_iteration && a.full_write && a.inner < 0 && a.ifs <= 1;
        branch_of[a.buffer][a.loop] = a.branch;
      } else if (int64_t b = branch_of[a.buffer][a.loop]; b >= 0 && a.branch != b) {
        it->second = false;
      }
    }
    for (const auto& a : accesses_) {
      BufferLife& b = buffers[a.buffer];
      int64_t lo = a.pos, hi = a.pos;
      if (a.loop >= 0) {
        // Kept positions still cover an inner loop the access is in (its value may cross
        // that loop's iterations).
        int64_t l = first_seen[a.buffer].at(a.loop) ? a.inner : a.loop;
        if (l >= 0) lo = loops_[l].first, hi = loops_[l].last;
      }
      b.first = b.first < 0 ? lo : std::min(b.first, lo);
      b.last = std::max(b.last, hi);
    }
    for (auto& b : buffers)
      if (b.first < 0) b.first = b.last = b.decl_pos;  // never used: live where declared
  }

 protected:
  void visit_(const ForNode* n) override {
    size_t id = loops_.size();
    loops_.push_back({pos_, pos_});
    stack_.push_back(id);
    IRVisitor::visit_(n);
    stack_.pop_back();
    loops_[id].last = static_cast<int64_t>(stmt_loc.size()) - 1;
    loop_range[n] = {loops_[id].first, loops_[id].last};
  }

  void visit_(const IfNode* n) override {
    visit(n->cond);
    for (const Stmt* branch : {&n->then_case, &n->else_case}) {
      ifs_.push_back({stack_.size(), next_branch_++});
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
      if (whole) full_write_.insert(b.get());
    }
    IRVisitor::visit_(n);
    full_write_.clear();
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
    // Inside a loop the declaration is not in, the value lives across iterations: the buffer
    // is live for the whole of the outermost such loop.
    int64_t loop =
        stack_.size() > life.decl_depth ? static_cast<int64_t>(stack_[life.decl_depth]) : -1;
    int64_t inner = stack_.size() > life.decl_depth + 1
                        ? static_cast<int64_t>(stack_[life.decl_depth + 1])
                        : -1;
    // The ifs inside `loop` around the access, and the outermost one's branch.
    int ifs = 0;
    int64_t branch = -1;
    for (const auto& [depth, id] : ifs_)
      if (depth > life.decl_depth && ifs++ == 0) branch = id;
    bool full = full_write_.count(b.get()) && buffers[it->second].buffer.same_as(b);
    accesses_.push_back({it->second, pos_, loop, inner, full, ifs, branch});
  }

 private:
  struct Loop {
    int64_t first, last;
  };
  struct Access {
    size_t buffer;
    int64_t pos;
    int64_t loop;     // index into loops_, or -1
    int64_t inner;    // the loop inside `loop` the access is in, or -1
    bool full_write;  // overwrites the whole buffer
    int ifs;          // ifs inside `loop` around the access
    int64_t branch;   // the outermost of them's branch (then and else apart), or -1
  };
  int64_t pos_ = 0;
  std::vector<Loop> loops_;
  std::vector<size_t> stack_;
  std::vector<Access> accesses_;
  std::vector<std::pair<size_t, int64_t>> ifs_;  // each enclosing if branch: loop depth, id
  int64_t next_branch_ = 0;
  std::unordered_set<const BufferNode*> full_write_;
};

}  // namespace tl
