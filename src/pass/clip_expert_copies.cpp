// clip_expert_copies (expert kernels, after legalize_copies; tl/pass.h): TileLang-Ascend lowers
// a copy between a GM tensor and an on-chip tile to DataCopyPad of the part inside the tensor,
// so an expert kernel whose blocks do not divide its tensors (sigmoid at 300x300 in 64x64
// blocks) handles its tails without a `T.If`. This pass gives tl-ascend's expert kernels the same
// semantics, with the clipping rule of developer mode (dev::clip_copy, docs/developer_mode.md,
// "Tails"):
//   - along each dimension whose end the compiler cannot prove inside the tensor, both sides'
//     extent becomes max(min(extent, size - start), 0) at run time, and the GM start is kept
//     inside the tensor (a block wholly past its end moves nothing);
//   - a clipped UB row moves as DataCopyPad (rows of any byte length); a read fills only the
//     valid part. Past it, a whole UB tile holds what TileLang-Ascend's copy_gm_to_ub leaves
//     there: for 16- and 32-bit dtypes it first fills the whole tile with pad_value (0 without
//     one) on the iterations the copy is partial, and so does this pass; for other dtypes
//     (int8, ...) nothing fills it and the rest is undefined (`clipped=True`: the virtual NPU's
//     stale-data checker marks it invalid and reports it if it reaches GM); a partial L1 tile
//     is zero-filled first (no stale K tail enters a product);
//   - a write stores only the valid part, so the part past the tensor never reaches GM.
// A reduction, sort or top-k over a clipped dimension must find there its identity (a sum over
// a 0-padded part is exact, a max over it is not when every value is negative):
// clip_pad_values.cpp follows the pad through the kernel in program order and rejects the op
// otherwise, naming it, the tile and the copy. Developer kernels are returned unchanged
// (legalize_copies and mask_tails do this for them).
#include <algorithm>
#include <map>
#include <unordered_map>

#include "clip_pad_values.h"
#include "developer.h"
#include "tail_identity.h"
#include "tile_bounds.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/pass.h"

namespace tl {
namespace {

bool on_chip(const Buffer& b) {
  return b->scope == MemScope::UB || b->scope == MemScope::L1 || b->scope == MemScope::L0C;
}

Attr* attr_of(std::vector<Attr>& attrs, std::string_view key) {
  for (auto& a : attrs)
    if (a.key == key) return &a;
  return nullptr;
}

/// Whether TileLang-Ascend's copy_gm_to_ub fills a partial tile of this dtype with pad_value
/// first (its IsDuplicateSupported_v: Duplicate of the whole dstM x dstN tile, before the
/// DataCopyPad, on the copies whose valid part is smaller than the tile). Other dtypes (int8,
/// uint8, fp8, 64-bit) get no fill: the part past the tensor keeps whatever UB held.
bool chip_fills_pad(DType t) {
  switch (t) {
    case DType::Int16:
    case DType::UInt16:
    case DType::Float16:
    case DType::BFloat16:
    case DType::Int32:
    case DType::UInt32:
    case DType::Float32:
      return true;
    default:
      return false;
  }
}

class Clipper : public IRMutator {
 public:
  std::unordered_map<const TileOpNode*, dev::ClippedRead> reads;  // clipped whole-tile reads

 protected:
  Stmt mutate_(const KernelNode* n, const Stmt& self) override {
    bounds_.kernel(*n);
    if (n->vid.defined()) bounds_.vars[n->vid.node()] = {0, 1};  // two AIVs per AI core
    return IRMutator::mutate_(n, self);
  }
  /// Whether the scope synchronises itself (insert_syncs then leaves it as written): the fill
  /// this pass puts before a partial read is then ordered by a barrier of its own.
  Stmt mutate_(const ScopeNode* n, const Stmt& self) override {
    const bool saved = own_syncs_;
    own_syncs_ = false;
    pre_order_visit(n->body, [&](const Stmt& s) {
      auto* y = s.as<SyncNode>();
      if (y && y->sync_kind != SyncKind::SetCrossFlag && y->sync_kind != SyncKind::WaitCrossFlag)
        own_syncs_ = true;
    });
    Stmt out = IRMutator::mutate_(n, self);
    own_syncs_ = saved;
    return out;
  }
  Stmt mutate_(const ForNode* n, const Stmt& self) override {
    bounds_.loop(*n);
    return IRMutator::mutate_(n, self);
  }
  Stmt mutate_(const LetNode* n, const Stmt& self) override {
    bounds_.let(*n);
    lets_[n->var.node()] = arith::substitute(n->value, lets_);
    return IRMutator::mutate_(n, self);
  }
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
    if (n->op != &ops::copy() && n->op != &ops::atomic_add()) return self;
    if (n->args.size() < 2 || !n->args[0].is_region() || !n->args[1].is_region()) return self;
    const bool read = n->args[0].region.buffer->scope == MemScope::GM;
    const int gi = read ? 0 : 1, ti = 1 - gi;
    const BufferRegion& g = n->args[gi].region;
    const BufferRegion& t0 = n->args[ti].region;
    if (g.buffer->scope != MemScope::GM || !on_chip(t0.buffer)) return self;
    if (g.ranges.empty() || t0.ranges.empty()) return self;
    if (read && n->op == &ops::copy() && t0.buffer->scope == MemScope::UB && is_whole(t0))
      if (Stmt s = short_read(*n, g, t0); s.defined()) return s;
    auto c = dev::clip_copy(g, t0, bounds_);
    const bool short_rows = n->op == &ops::copy() && t0.buffer->scope == MemScope::UB &&
                            !n->attr_bool("pad") && !whole_blocks(t0);
    if ((!c || !c->clipped) && short_rows) {
      // TileLang-Ascend moves every GM <-> UB copy with DataCopyPad (copy_gm_to_ub /
      // copy_ub_to_gm: blockLen in bytes, each UB row padded to 32 B), so a row of 4 int32 (16
      // bytes) moves as written, into a row of its own tile or into the first 4 floats of a
      // longer UB row (`T.copy(A_log[0], A_log_ub[0, :4])`, fused_gdn_gating.py). A read
      // overwrites the UB lanes from the row's end to its 32-byte boundary with what
      // copy_gm_to_ub leaves there (isPad=false: undefined): `pad_undefined` has the
      // stale-data checker mark them. A store reads only the row. Starts and the pitch of
      // several rows stay 32-byte aligned (the verifier's rules).
      std::vector<Attr> attrs = n->attrs;
      attr_of(attrs, "pad")->value = true;
      if (read) attr_of(attrs, "pad_undefined")->value = true;
      return TileOpNode::make(n->op, n->args, std::move(attrs), n->loc);
    }
    if (!c || !c->clipped) return self;
    // A block may lie wholly past the tensor (the second AIV's half of a one-row tail): its
    // extent is then 0 and its start the tensor's end, which every access check accepts.
    uint32_t dims = 0;
    const size_t ng = g.ranges.size(), nt = t0.ranges.size();
    for (size_t k = 1; k <= std::min(ng, nt); ++k) {
      Range& gr = c->gm.ranges[ng - k];
      Range& tr = c->tile.ranges[nt - k];
      if (gr.extent.same_as(g.ranges[ng - k].extent)) continue;
      dims |= 1u << (nt - k);
      const Expr& size = g.buffer->shape[ng - k];
      if (arith::bound(size - g.ranges[ng - k].min, bounds_.vars).lo >= 0) continue;
      Expr zero = arith::make_int(gr.extent.dtype(), 0);
      gr.extent = simplify(max(gr.extent, zero));
      tr.extent = gr.extent;
      gr.min = simplify(min(g.ranges[ng - k].min, size));
    }
    const Buffer& tb = t0.buffer;
    std::vector<Attr> attrs = n->attrs;
    const bool author_pad = n->attr_bool("pad");
    if (tb->scope == MemScope::UB && n->op == &ops::copy() && (c->clipped_last || short_rows))
      attr_of(attrs, "pad")->value = true;  // DataCopyPad: rows of any byte length
    const bool whole_tile = read && n->op == &ops::copy() && is_whole(t0);
    // One slab of a tile (`buf[slot, :, :]`: leading unit extents, the rest whole), as a
    // double-buffered slot is read: copy_gm_to_ub Duplicates the pad over dstM x dstN, the
    // destination's last two dimensions from the slab's start, i.e. over the whole slab.
    const bool slab = read && n->op == &ops::copy() && !whole_tile && is_slab(t0);
    // What the chip leaves past the tensor in a whole UB tile: the pad (the author's pad_value,
    // 0 without one) where copy_gm_to_ub fills the tile first, else undefined bytes (the
    // stale-data checker's `clipped` mark). TileLang-Ascend's T.copy always passes a pad value.
    const bool chip_fill = tb->scope == MemScope::UB && chip_fills_pad(tb->dtype);
    const double pad = author_pad ? n->attr_float("pad_value") : 0.0;
    if (whole_tile && tb->scope == MemScope::UB && !chip_fill)
      attr_of(attrs, "clipped")->value = true;
    std::vector<TileArg> args = n->args;
    args[gi] = c->gm;
    args[ti] = c->tile;
    Stmt copy = TileOpNode::make(n->op, std::move(args), std::move(attrs), n->loc);
    if (whole_tile && tb->scope == MemScope::UB)
      reads[copy.as<TileOpNode>()] = {dims, chip_fill ? std::optional(pad) : std::nullopt, self};
    if (!read || n->op != &ops::copy()) return copy;
    Stmt fill;
    if (tb->scope == MemScope::L1) {
      fill = make_tile_op(
          ops::init_const(),
          {BufferRegion::full(tb), arith::make_const(tb->dtype, arith::Value::of_float(0.0))}, {},
          n->loc);
    } else if ((whole_tile || slab) && chip_fill) {
      fill = make_tile_op(
          ops::tile::fill(),
          {whole_tile ? BufferRegion::full(tb) : t0, dev::constant_of(tb->dtype, pad)}, {}, n->loc);
    } else {
      return copy;
    }
    // The fill (V pipe for UB, an MTE2 init for L1) and the copy both write the tile, and DMA
    // writes are not ordered by their pipe alone: in a scope whose syncs are the author's
    // nothing else orders them (with auto_sync, insert_syncs does).
    if (own_syncs_)
      fill = SeqNode::make({fill, SyncNode::make(SyncKind::PipeBarrier, Pipe::ALL, Pipe::S, Expr(),
                                                 0, n->loc, SyncOrigin::Auto)},
                           n->loc);
    // Only on the iterations the copy is partial.
    Expr partial;
    for (size_t d = 0; d < nt; ++d) {
      if (!(dims >> d & 1u)) continue;
      Expr p = c->tile.ranges[d].extent < t0.ranges[d].extent;
      partial = partial.defined() ? (partial || p) : p;
    }
    partial = simplify(partial);
    if (auto always = as_const_int(partial))
      return *always ? SeqNode::make({fill, copy}, n->loc) : copy;
    return SeqNode::make({IfNode::make(partial, fill, Stmt(), n->loc), copy}, n->loc);
  }

 private:
  /// Whether the region's innermost run (its last dimension, past trailing dimensions of size
  /// 1, as the verifier counts it) is provably whole 32-byte blocks.
  static bool whole_blocks(const BufferRegion& r) {
    size_t last = r.ranges.size();
    if (last == 0 || last != r.buffer->shape.size()) return true;
    --last;
    while (last > 0 && is_const_one(r.buffer->shape[last])) --last;
    auto ext = as_const_int(r.ranges[last].extent);
    return !ext || (*ext * dtype_bytes(r.buffer->dtype)) % 32 == 0;
  }
  static bool is_const_one(const Expr& e) {
    auto v = as_const_int(e);
    return v && *v == 1;
  }

  /// Leading dimensions of extent 1, then at least one whole dimension through the last.
  static bool is_slab(const BufferRegion& r) {
    size_t k = 0;
    while (k < r.ranges.size() && is_const_one(r.ranges[k].extent) &&
           !is_const_one(r.buffer->shape[k]))
      ++k;
    if (k == 0 || k == r.ranges.size()) return false;
    for (size_t d = k; d < r.ranges.size(); ++d) {
      auto mn = as_const_int(r.ranges[d].min);
      if (!mn || *mn != 0 || !dev::same_extent(r.ranges[d].extent, r.buffer->shape[d]))
        return false;
    }
    return true;
  }
  static bool is_whole(const BufferRegion& r) {
    for (size_t d = 0; d < r.ranges.size(); ++d) {
      auto mn = as_const_int(r.ranges[d].min);
      if (!mn || *mn != 0 || !dev::same_extent(r.ranges[d].extent, r.buffer->shape[d]))
        return false;
    }
    return true;
  }

  /// A GM region read into a whole UB tile whose last non-unit extent is larger, the others
  /// equal (`T.copy(ws[r, s:s + 4], tmp)`, `tmp` of 8 floats: hc_split_sinkhorn.py).
  /// TileLang-Ascend's copy_gm_to_ub takes the tile's extent as dstN and the region's as the
  /// valid length: it Duplicates pad_value (0 without one) over the tile for 16/32-bit dtypes,
  /// then DataCopyPads the valid part. The same here: a fill, then the copy into the leading
  /// part (clipped further at the tensor's end as any copy). Undefined when no such shape.
  Stmt short_read(const TileOpNode& n, const BufferRegion& g, const BufferRegion& t0) {
    auto nonunit = [](const std::vector<std::optional<int64_t>>& v) {
      std::vector<size_t> out;
      for (size_t d = 0; d < v.size(); ++d)
        if (!v[d] || *v[d] != 1) out.push_back(d);
      return out;
    };
    std::vector<std::optional<int64_t>> ge, te;
    for (const auto& r : g.ranges) ge.push_back(const_extent(r.extent));
    for (const auto& e : t0.buffer->shape) te.push_back(as_const_int(e));
    const auto gd = nonunit(ge), td = nonunit(te);
    if (gd.empty() || gd.size() != td.size()) return Stmt();
    for (size_t k = 0; k < gd.size(); ++k) {
      auto a = ge[gd[k]], b = te[td[k]];
      if (!a || !b) return Stmt();
      if (k + 1 < gd.size() ? *a != *b : *a >= *b) return Stmt();
    }
    const size_t last = td.back();
    const int64_t valid = *ge[gd.back()];
    std::vector<TileArg> args = n.args;
    args[1].region.ranges[last].extent = arith::make_int(t0.ranges[last].extent.dtype(), valid);
    std::vector<Attr> attrs = n.attrs;
    const bool author_pad = n.attr_bool("pad");
    const double pad = author_pad ? n.attr_float("pad_value") : 0.0;
    attr_of(attrs, "pad")->value = true;
    Stmt inner = TileOpNode::make(n.op, std::move(args), std::move(attrs), n.loc);
    Stmt copy = mutate(inner);
    const Buffer& tb = t0.buffer;
    if (!chip_fills_pad(tb->dtype)) return copy;  // nothing fills the rest on the chip
    // The rest of the tile holds the pad by the author's own shape, inside the tensor: what
    // the chip computes from it is defined (no tensor tail for the pad analysis to guard).
    Stmt fill = make_tile_op(ops::tile::fill(),
                             {BufferRegion::full(tb), dev::constant_of(tb->dtype, pad)}, {}, n.loc);
    if (own_syncs_)
      fill = SeqNode::make({fill, SyncNode::make(SyncKind::PipeBarrier, Pipe::ALL, Pipe::S, Expr(),
                                                 0, n.loc, SyncOrigin::Auto)},
                           n.loc);
    return SeqNode::make({fill, copy}, n.loc);
  }

  /// A slice's extent with the lets it reads substituted (`end - start` of `start = i * 4 + 8`,
  /// `end = i * 4 + 12`: 4).
  std::optional<int64_t> const_extent(const Expr& e) const {
    Expr s = simplify(arith::substitute(e, lets_));
    if (auto c = as_const_int(s)) return c;
    if (const auto* b = s.as<BinaryNode>(); b && b->op == BinOp::Sub)
      return arith::constant_difference(b->a, b->b);
    return std::nullopt;
  }
  arith::VarMap lets_;
  dev::Bounds bounds_;
  bool own_syncs_ = false;
};

}  // namespace

PrimFunc clip_expert_copies(const PrimFunc& f, const Target&) {
  const KernelNode* k = dev::find_kernel(f);
  if (!k || k->developer() || dev::developer_threads(f) > 0) return f;
  Clipper clipper;
  Stmt body = clipper.mutate(f->body);
  dev::check_pad_values(body, clipper.reads);
  return body.same_as(f->body) ? f : with_body(f, body);
}

}  // namespace tl
