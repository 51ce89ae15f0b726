// Bounds of the variables along a developer pass's walk, and the copy clipping rule
// (src/pass/tile_bounds.h).
#include "tile_bounds.h"

#include <algorithm>

#include "tl/ir_equal.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/pass.h"

namespace tl::dev {

void Bounds::kernel(const KernelNode& k) {
  arith::Interval blocks = arith::bound(k.num_blocks, vars);
  vars[k.cid.node()] = {0, std::max<int64_t>(blocks.hi - 1, 0)};
}

void Bounds::loop(const ForNode& f) {
  arith::Interval lo = arith::bound(f.min, vars), ext = arith::bound(f.extent, vars);
  int64_t end;
  const bool fits = !__builtin_add_overflow(lo.hi, ext.hi, &end);
  vars[f.var.node()] = {
      lo.lo, fits ? std::max(lo.lo, end - 1) : arith::Interval::of_dtype(f.var.dtype()).hi};
}

void Bounds::let(const LetNode& l) {
  if (!is_int(l.var.dtype())) return;
  vars[l.var.node()] = arith::bound(l.value, vars);
  if (reads_memory(l.value)) loaded.insert(l.var.node());
}

bool Bounds::reads_memory(const Expr& e) const {
  // A small walk over the expression: loads and the variables bound to them.
  struct Finder : IRVisitor {
    const std::unordered_set<const VarNode*>* loaded = nullptr;
    bool found = false;
    void visit_(const LoadNode*) override { found = true; }
    void visit_(const VarNode* v) override { found = found || loaded->count(v) > 0; }
  } finder;
  finder.loaded = &loaded;
  finder.visit(e);
  return finder.found;
}

void Bounds::refine(const Expr& cond) {
  auto* b = cond.as<BinaryNode>();
  if (!b) return;
  if (b->op == BinOp::And) {
    refine(b->a);
    refine(b->b);
    return;
  }
  const Expr* var = nullptr;
  const Expr* limit = nullptr;
  int64_t strict = 0;
  if (b->op == BinOp::LT || b->op == BinOp::LE)
    var = &b->a, limit = &b->b, strict = b->op == BinOp::LT;
  else if (b->op == BinOp::GT || b->op == BinOp::GE)
    var = &b->b, limit = &b->a, strict = b->op == BinOp::GT;
  else
    return;
  auto* v = var->as<VarNode>();
  if (!v || !is_int(v->dtype)) return;
  arith::Interval cur = vars.count(v) ? vars.at(v) : arith::bound(*var, vars);
  arith::Interval lim = arith::bound(*limit, vars);
  if (lim.hi == arith::Interval::of_dtype(DType::Int64).hi) return;
  vars[v] = {cur.lo, std::max(cur.lo, std::min(cur.hi, lim.hi - strict))};
}

bool same_extent(const Expr& a, const Expr& b) {
  auto x = as_const_int(a), y = as_const_int(b);
  if (x && y) return *x == *y;
  if (structural_equal(a, b)) return true;
  // Equal as linear forms: `(cid * 32 + (vid + 1) * 32 // 2) - (cid * 32 + vid * 32 // 2)` is 16.
  auto d = arith::constant_difference(a, b);
  return d && *d == 0;
}

std::optional<ClippedCopy> clip_copy(BufferRegion g, BufferRegion t, const Bounds& bounds) {
  const arith::VarIntervals& vars = bounds.vars;
  ClippedCopy out;
  const size_t ng = g.ranges.size(), nt = t.ranges.size();
  // Trailing dimensions correspond; a dimension of one side beyond the other's rank must have
  // extent 1 (checked by the verifier's copy rule).
  for (size_t k = 1; k <= std::min(ng, nt); ++k) {
    Range& gr = g.ranges[ng - k];
    Range& tr = t.ranges[nt - k];
    if (!same_extent(gr.extent, tr.extent))
      return std::nullopt;  // shapes differ: the author's layout
    const Expr& size = g.buffer->shape[ng - k];
    arith::Interval room = arith::bound(size - gr.min - gr.extent, vars);
    if (room.lo >= 0) continue;
    auto one = as_const_int(gr.extent);
    if (one && *one == 1 && bounds.reads_memory(gr.min)) continue;  // a gathered row
    Expr ext = simplify(min(gr.extent, size - gr.min));
    gr.extent = ext;
    tr.extent = ext;
    out.clipped = true;
    if (k == 1) out.clipped_last = true;
  }
  out.gm = std::move(g);
  out.tile = std::move(t);
  return out;
}

}  // namespace tl::dev
