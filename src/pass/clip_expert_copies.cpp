// clip_expert_copies (tl/pass.h): an expert kernel's copies at the end of a tensor move the part
// that lies inside it, as TileLang-Ascend's expert copies do (a tail block of a GEMM whose M, N
// or K is no multiple of the block: examples/gemm/example_gemm_tail_block_developer.py). Without
// it such a copy stopped the launch with an out-of-bounds error. Clipped here, only where the
// result stays right without the author's help:
//   - GM -> L1 into a whole tile: the tile is zero-filled first on the iterations the copy is
//     partial (T.init_const, on MTE2 like the copy, so the author's syncs that order the copy
//     order it too; in a scope with syncs of its own a pipe_barrier(MTE2) then orders the copy
//     after it, where auto_sync's insert_syncs does it otherwise): no stale K tail enters a
//     product, stale M / N rows reach only rows that the clipped store leaves out;
//   - L0C -> GM and UB -> GM stores: the rows and columns past the tensor are not stored (a UB
//     row that is no whole 32-byte blocks takes the padded form, DataCopyPad).
// A GM -> UB load past the tensor is left as written, so it stays a launch error naming the
// copy: the tile's part past the tensor would be stale, and an expert kernel's vector work
// (a row reduction) would silently read it (developer mode keeps it out: mask_tails). The rule
// is legalize_copies' (dev::clip_copy: only a dimension whose end is not provably inside the
// tensor is clipped), so a kernel whose blocks fit is unchanged. Developer kernels are left to
// legalize_copies.
#include "developer.h"
#include "tile_bounds.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/pass.h"

namespace tl {
namespace {

bool whole_tile(const BufferRegion& r) {
  for (size_t d = 0; d < r.ranges.size(); ++d) {
    auto mn = as_const_int(r.ranges[d].min);
    if (!mn || *mn != 0 || !dev::same_extent(r.ranges[d].extent, r.buffer->shape[d])) return false;
  }
  return true;
}

class Clipper : public IRMutator {
 protected:
  /// Whether the scope has syncs of its own (then insert_syncs leaves it as written, and the
  /// fill needs its barrier from here).
  Stmt mutate_(const ScopeNode* n, const Stmt& self) override {
    bool synced = false;
    pre_order_visit(n->body, [&](const Stmt& s) { synced |= s.as<SyncNode>() != nullptr; });
    const bool before = scope_synced_;
    scope_synced_ = synced;
    Stmt out = IRMutator::mutate_(n, self);
    scope_synced_ = before;
    return out;
  }
  Stmt mutate_(const KernelNode* n, const Stmt& self) override {
    bounds_.kernel(*n);
    return IRMutator::mutate_(n, self);
  }
  Stmt mutate_(const ForNode* n, const Stmt& self) override {
    bounds_.loop(*n);
    return IRMutator::mutate_(n, self);
  }
  Stmt mutate_(const LetNode* n, const Stmt& self) override {
    bounds_.let(*n);
    return IRMutator::mutate_(n, self);
  }
  /// In the then branch, the condition may bound a variable (an author's `if` around a tail).
  Stmt mutate_(const IfNode* n, const Stmt& self) override {
    const auto before = bounds_.vars;
    bounds_.refine(n->cond);
    Stmt t = mutate(n->then_case);
    bounds_.vars = before;
    Stmt e = n->else_case.defined() ? mutate(n->else_case) : n->else_case;
    if (t.same_as(n->then_case) && e.same_as(n->else_case)) return self;
    return IfNode::make(n->cond, t, e, n->loc);
  }
  Stmt mutate_(const TileOpNode* n, const Stmt& self) override {
    if (n->op != &ops::copy() || n->args.size() < 2 || !n->args[0].is_region() ||
        !n->args[1].is_region())
      return self;
    const Buffer& src = n->args[0].region.buffer;
    const Buffer& dst = n->args[1].region.buffer;
    const bool load_l1 =
        src->scope == MemScope::GM && dst->scope == MemScope::L1 && whole_tile(n->args[1].region);
    const bool store =
        dst->scope == MemScope::GM && (src->scope == MemScope::UB || src->scope == MemScope::L0C);
    if (!load_l1 && !store) return self;
    const int gi = load_l1 ? 0 : 1, ti = 1 - gi;
    if (n->args[gi].region.ranges.empty() || n->args[ti].region.ranges.empty()) return self;
    auto c = dev::clip_copy(n->args[gi].region, n->args[ti].region, bounds_.vars);
    if (!c || !c->clipped) return self;
    std::vector<Attr> attrs = n->attrs;
    if (store && src->scope == MemScope::UB && !n->attr_bool("pad")) {
      // A clipped row is a run-time width: the padded form moves any count.
      for (auto& a : attrs)
        if (a.key == "pad") a.value = true;
    }
    std::vector<TileArg> args = n->args;
    args[gi] = c->gm;
    args[ti] = c->tile;
    Stmt copy = TileOpNode::make(n->op, std::move(args), std::move(attrs), n->loc);
    if (!load_l1) return copy;
    Stmt fill = make_tile_op(
        ops::init_const(),
        {BufferRegion::full(dst), arith::make_const(dst->dtype, arith::Value::of_float(0.0))}, {},
        n->loc);
    if (scope_synced_)
      fill = SeqNode::make({fill, SyncNode::make(SyncKind::PipeBarrier, Pipe::MTE2, Pipe::S, Expr(),
                                                 0, n->loc, SyncOrigin::Auto)},
                           n->loc);
    Expr partial;  // only on the iterations the copy is partial
    const auto& orig = n->args[ti].region;
    for (size_t d = 0; d < c->tile.ranges.size(); ++d) {
      if (c->tile.ranges[d].extent.same_as(orig.ranges[d].extent)) continue;
      Expr p = c->tile.ranges[d].extent < orig.ranges[d].extent;
      partial = partial.defined() ? (partial || p) : p;
    }
    if (!partial.defined()) return copy;
    partial = simplify(partial);
    if (auto always = as_const_int(partial))
      return *always ? SeqNode::make({fill, copy}, n->loc) : copy;
    return SeqNode::make({IfNode::make(partial, fill, Stmt(), n->loc), copy}, n->loc);
  }

 private:
  dev::Bounds bounds_;
  bool scope_synced_ = false;
};

}  // namespace

PrimFunc clip_expert_copies(const PrimFunc& f, const Target&) {
  const KernelNode* k = dev::find_kernel(f);
  if (!k || k->developer() || f->lowered_from_developer > 0) return f;
  Stmt body = Clipper().mutate(f->body);
  return body.same_as(f->body) ? f : with_body(f, body);
}

}  // namespace tl
