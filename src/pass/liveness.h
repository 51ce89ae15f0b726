// Internal: live ranges of on-chip buffers in a pre-order linearisation of the statements
// (one index per statement). plan_memory places buffers by them; pipeline_loops bounds the
// memory its slots would take with them. A buffer accessed inside a loop its declaration is not
// in lives for the whole of the outermost such loop (its value crosses iterations).
#pragma once

#include <unordered_map>
#include <utility>
#include <vector>

#include "tl/error.h"
#include "tl/ir_functor.h"
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

  void visit(const Stmt& s) override {
    if (!s.defined()) return;
    pos_ = static_cast<int64_t>(stmt_loc.size());
    stmt_loc.push_back(s->loc);
    IRVisitor::visit(s);
  }

  /// Resolves the accesses into [first, last] once every loop's extent in the order is known.
  void finish() {
    for (const auto& a : accesses_) {
      BufferLife& b = buffers[a.buffer];
      int64_t lo = a.loop >= 0 ? loops_[a.loop].first : a.pos;
      int64_t hi = a.loop >= 0 ? loops_[a.loop].last : a.pos;
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
    accesses_.push_back({it->second, pos_, loop});
  }

 private:
  struct Loop {
    int64_t first, last;
  };
  struct Access {
    size_t buffer;
    int64_t pos;
    int64_t loop;  // index into loops_, or -1
  };
  int64_t pos_ = 0;
  std::vector<Loop> loops_;
  std::vector<size_t> stack_;
  std::vector<Access> accesses_;
};

}  // namespace tl
