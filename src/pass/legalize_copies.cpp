// legalize_copies (developer mode, after infer_scopes and lower_cube_ops): makes every copy a
// legal path for every block, so a developer kernel handles row and column tails without one
// `T::If` per tail kind (docs/developer_mode.md, "Tails"):
//   - Clipping. A copy between a GM tensor and an on-chip tile moves the part of the tile that
//     lies inside the tensor: along each dimension whose end the compiler cannot prove inside
//     the tensor, the extent becomes min(tile extent, tensor extent - start) on both sides. A
//     tail block moves fewer rows or columns; the rows past the tensor stay stale in the tile and
//     are never stored (TileLang's copies clip the same way).
//   - Padded UB rows. A UB tile whose rows are not whole 32-byte blocks gets its last dimension
//     padded (to a common width for every tile of that logical width, so element loops over
//     tiles of different dtypes stay aligned), and its GM copies use the padded form
//     (DataCopyPad) in both directions. Element loops and elementwise tile ops over the logical
//     width are widened to the padded width: the pad lanes compute garbage that no copy stores
//     and no reduction reads (reductions keep the logical width; each row is one count-form
//     ReduceSum/ReduceMax, which takes any count).
//   - Channels. A copy between the two cores' memories without a path on the target (L0C -> UB,
//     UB -> L1 on A2) goes through the producer block's slot of a GM workspace
//     [num_blocks, rows, cols] declared at the kernel's top (the launcher allocates it);
//     insert_channel_syncs orders the two halves with cross-core flags.
//   - Cleared L1 tails. A GM -> L1 copy that may move a partial tile first zero-fills the tile
//     when it does (T.init_const, AscendC InitConstValue): the hardware zero-fills only up to
//     the next 32-byte block, and a stale K tail would enter the product.
//   - Defined tails. A clipped GM -> UB copy into a whole tile is marked `clipped=True`: the
//     tile's elements past the tensor are stale after it (mask_tails, which runs before this
//     pass with the same clipping rule, keeps them out of every result; the virtual NPU's
//     stale-data checker marks them invalid). With the author's pad (`pad_value`), the tile is
//     first filled with the value on the iterations the copy is clipped, so they hold it.
// Expert kernels are returned unchanged.
#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "developer.h"
#include "tile_bounds.h"
#include "tl/arith.h"
#include "tl/ir_equal.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/target.h"

namespace tl {
namespace {

// Bytes; UB rows are whole blocks (docs/hardware.md section 5, "Data movement").
constexpr int64_t kUbBlock = 32;

std::optional<int64_t> const_last_dim(const Buffer& b) {
  if (b->shape.empty()) return std::nullopt;
  return as_const_int(b->shape.back());
}

/// A logical row width W shared by UB tiles that need padding, and the width P they all get.
struct PadWidth {
  int64_t logical = 0, padded = 0;
};

/// Decides which UB tiles get padded rows: per logical width W, the tiles of that width are
/// padded together to a multiple of 32 bytes for the narrowest dtype among them, when any of
/// them has rows that are not whole blocks. Views (reinterpretations of a tile's bytes) keep a
/// group unpadded: their layout is the author's.
class PadPlanner : public IRVisitor {
 public:
  std::unordered_map<const BufferNode*, PadWidth> plan() const {
    std::unordered_map<const BufferNode*, PadWidth> out;
    for (const auto& [w, g] : groups_) {
      if (!g.needs || g.has_view) continue;
      const int64_t per_block = kUbBlock / g.min_bytes;
      const int64_t padded = (w + per_block - 1) / per_block * per_block;
      for (const BufferNode* b : g.members) out[b] = {w, padded};
    }
    return out;
  }

 protected:
  void visit_(const AllocateNode* n) override {
    const Buffer& b = n->buffer;
    if (b->scope == MemScope::UB && b->strides.empty() && b->address < 0) {
      if (auto w = const_last_dim(b); w && *w > 0) {
        Group& g = groups_[*w];
        const int64_t es = dtype_bytes(b->dtype);
        g.min_bytes = std::min(g.min_bytes, es);
        g.needs = g.needs || (*w * es) % kUbBlock != 0;
        if (n->is_view())
          g.has_view = true;
        else
          g.members.push_back(b.get());
      }
    }
    IRVisitor::visit_(n);
  }

 private:
  struct Group {
    int64_t min_bytes = kUbBlock;
    bool needs = false, has_view = false;
    std::vector<const BufferNode*> members;
  };
  std::map<int64_t, Group> groups_;
};

bool is_gm(const Buffer& b) {
  return b->scope == MemScope::GM;
}
/// Memories a GM copy reaches: UB (MTE2/MTE3), L1 (MTE2), L0C (the fixpipe, out only).
bool is_on_chip(const Buffer& b) {
  return b->scope == MemScope::UB || b->scope == MemScope::L1 || b->scope == MemScope::L0C;
}

Attr* find_attr(std::vector<Attr>& attrs, std::string_view key) {
  for (auto& a : attrs)
    if (a.key == key) return &a;
  return nullptr;
}

/// Where a stale element of an L1 tile can go (legalize_copies zero-fills a partial L1 tile
/// only where it could reach a result). lower_cube_ops reads an L1 tile into L0A (op(A), [M, K])
/// or L0B (op(B), [K, N]) and multiplies row i of op(A) into row i of C, column j of op(B) into
/// column j of C: a stale K element enters every product of its row or column, a stale M row of
/// A (N column of B) only its own row (column) of C. Such a row is harmless when every L0C tile
/// is read only by copies to GM that the same rule clips (start and tensor extent equal to the
/// L1 copy's along that dimension): they store exactly the rows the L1 copy moved. Anything else
/// (another reader of the tile, a tile read both ways, an L0C tile read by anything else, the
/// stores not provably alike) keeps the fill.
class CubeTails : public IRVisitor {
 public:
  /// The tile dimension that is K and the dimension of C the other one becomes; nullopt: every
  /// dimension needs the fill.
  struct Role {
    int k_dim = 0, c_dim = 0;
  };
  std::optional<Role> role(const BufferNode* tile) const {
    auto it = roles_.find(tile);
    if (it == roles_.end() || !it->second) return std::nullopt;
    return it->second;
  }
  /// Whether C's stores drop a stale row (column) of an L1 tile along tile dimension `d` (not
  /// K) that the GM -> L1 copy from `gm` left partial.
  bool stores_drop(const Role& r, const BufferRegion& gm, size_t d) const {
    if (l0c_elsewhere_ || gm.ranges.size() != 2 || gm.buffer->shape.size() != 2) return false;
    for (const TileOpNode* st : stores_) {
      const BufferRegion &src = st->args[0].region, &dst = st->args[1].region;
      if (src.ranges.size() != 2 || dst.ranges.size() != 2 || dst.buffer->shape.size() != 2)
        return false;
      auto src_min = as_const_int(src.ranges[r.c_dim].min);
      if (!src_min || *src_min != 0) return false;
      if (!dev::same_extent(dst.ranges[r.c_dim].min, gm.ranges[d].min) ||
          !dev::same_extent(dst.buffer->shape[r.c_dim], gm.buffer->shape[d]))
        return false;
    }
    return true;
  }

 protected:
  void visit_(const TileOpNode* n) override {
    IRVisitor::visit_(n);
    const bool copy = n->op == &ops::copy() && n->args.size() >= 2 && n->args[0].is_region() &&
                      n->args[1].is_region();
    const MemScope s0 = copy ? n->args[0].region.buffer->scope : MemScope::GM;
    const MemScope s1 = copy ? n->args[1].region.buffer->scope : MemScope::GM;
    for (size_t i = 0; i < n->args.size(); ++i) {
      if (!n->args[i].is_region()) continue;
      const BufferNode* b = n->args[i].region.buffer.get();
      if (b->scope == MemScope::L1) {
        if (copy && i == 1 && s0 == MemScope::GM) continue;  // the load itself
        if (copy && i == 0 && (s1 == MemScope::L0A || s1 == MemScope::L0B) &&
            b->shape.size() == 2) {
          // L0A holds op(A) [M, K], L0B op(B) [K, N]; a transposing load swaps the dims.
          const bool t = n->attr_bool("transpose"), a = s1 == MemScope::L0A;
          const Role r{.k_dim = a ? (t ? 0 : 1) : (t ? 1 : 0), .c_dim = a ? 0 : 1};
          auto [it, fresh] = roles_.try_emplace(b, r);
          if (!fresh && it->second &&
              (it->second->k_dim != r.k_dim || it->second->c_dim != r.c_dim))
            it->second.reset();
          continue;
        }
        roles_[b].reset();
      } else if (b->scope == MemScope::L0C) {
        if (n->op == &ops::mma()) continue;
        if (copy && i == 0 && s1 == MemScope::GM) {
          stores_.push_back(n);
          continue;
        }
        l0c_elsewhere_ = true;
      }
    }
  }

 private:
  std::unordered_map<const BufferNode*, std::optional<Role>> roles_;
  std::vector<const TileOpNode*> stores_;  // L0C -> GM copies
  bool l0c_elsewhere_ = false;
};

class Legalizer : public IRMutator {
 public:
  Legalizer(std::unordered_map<const BufferNode*, PadWidth> pads, const CubeTails& cube,
            const Target& target, std::unordered_set<std::string> taken)
      : pads_(std::move(pads)), cube_(cube), target_(target), taken_(std::move(taken)) {}

  Buffer mutate_buffer(const Buffer& b) override {
    if (!b.defined()) return b;
    auto it = pads_.find(b.get());
    if (it == pads_.end()) return b;
    auto done = padded_.find(b.get());
    if (done != padded_.end()) return done->second;
    std::vector<Expr> shape = b->shape;
    shape.back() = arith::make_int(shape.back().dtype(), it->second.padded);
    Buffer p = BufferNode::make(
        b->name, b->dtype, std::move(shape), b->scope, b->strides, b->address, b->loc,
        b->origin.empty()
            ? fmt::format("rows padded from {} to {}", it->second.logical, it->second.padded)
            : b->origin);
    padded_.emplace(b.get(), p);
    width_of_.emplace(p.get(), it->second);
    return p;
  }

 protected:
  Stmt mutate_(const KernelNode* n, const Stmt& self) override {
    if (!n->developer()) return IRMutator::mutate_(n, self);
    bounds_.kernel(*n);
    kernel_ = n;
    Stmt body = mutate(n->body);
    if (workspaces_.empty() && body.same_as(n->body)) return self;
    // Workspaces are declared first: every block and core indexes the same tensors.
    std::vector<Stmt> stmts = std::move(workspaces_);
    if (auto* q = body.as<SeqNode>())
      stmts.insert(stmts.end(), q->stmts.begin(), q->stmts.end());
    else
      stmts.push_back(body);
    return KernelNode::make(n->num_blocks, n->cid, n->vid, SeqNode::make(std::move(stmts), n->loc),
                            n->loc, n->threads);
  }

  Stmt mutate_(const ForNode* n, const Stmt& self) override {
    bounds_.loop(*n);
    Stmt s = IRMutator::mutate_(n, self);
    const auto* f = s.as<ForNode>();
    if (!f || f->for_kind != ForKind::Parallel) return s;
    if (auto w = widened_extent(*f))
      return ForNode::make(f->var, f->min, *w, f->for_kind, f->num_stages, f->skew, f->body,
                           f->loc);
    return s;
  }

  Stmt mutate_(const LetNode* n, const Stmt& self) override {
    bounds_.let(*n);
    return IRMutator::mutate_(n, self);
  }

  /// In the then branch, the condition may bound a variable (Bounds::refine).
  Stmt mutate_(const IfNode* n, const Stmt& self) override {
    const auto vars_before = bounds_.vars;
    bounds_.refine(n->cond);
    Stmt t = mutate(n->then_case);
    bounds_.vars = vars_before;
    Stmt e = n->else_case.defined() ? mutate(n->else_case) : n->else_case;
    if (t.same_as(n->then_case) && e.same_as(n->else_case)) return self;
    return IfNode::make(n->cond, t, e, n->loc);
  }

  Stmt mutate_(const TileOpNode* n, const Stmt& self) override {
    Stmt s = IRMutator::mutate_(n, self);
    const auto* t = s.as<TileOpNode>();
    if (t->op == &ops::copy() && needs_channel(*t)) return channel(*t);
    if (t->op == &ops::copy() || t->op == &ops::atomic_add()) return legalize_copy(*t, s);
    if (t->op->elementwise()) return widen_elementwise(*t, s);
    return s;
  }

 private:
  /// The padded extent for a Parallel loop over the logical width W of padded tiles: every
  /// element access indexed by the loop variable uses it as the last index of a padded tile
  /// of width W. Anything else (the variable in another index, or in an index expression)
  /// keeps the loop as written.
  std::optional<Expr> widened_extent(const ForNode& f) const {
    auto w = as_const_int(f.extent);
    auto m = as_const_int(f.min);
    if (!w || !m || *m != 0) return std::nullopt;
    std::optional<int64_t> padded;
    bool ok = true;
    auto check = [&](const Buffer& b, const std::vector<Expr>& idx) {
      for (size_t d = 0; d < idx.size(); ++d) {
        if (!uses_var(idx[d], f.var)) continue;
        auto it = width_of_.find(b.get());
        const bool last_is_var = d + 1 == idx.size() && idx[d].as<VarNode>() == f.var.node();
        if (!last_is_var || it == width_of_.end() || it->second.logical != *w) {
          ok = false;
          return;
        }
        if (padded && *padded != it->second.padded) ok = false;
        padded = it->second.padded;
      }
    };
    pre_order_visit(
        f.body,
        [&](const Stmt& st) {
          if (const auto* store = st.as<StoreNode>()) check(store->buffer, store->indices);
          if (st.as<TileOpNode>())
            ok = false;  // not an element loop: vectorize_parallel reports it
        },
        [&](const Expr& e) {
          if (const auto* ld = e.as<LoadNode>()) check(ld->buffer, ld->indices);
        });
    if (!ok || !padded || *padded == *w) return std::nullopt;
    return arith::make_int(f.extent.dtype(), *padded);
  }

  static bool uses_var(const Expr& e, const Var& v) {
    struct Finder : IRVisitor {
      const VarNode* v;
      bool found = false;
      void visit_(const VarNode* n) override { found = found || n == v; }
    } finder;
    finder.v = v.node();
    finder.visit(e);
    return finder.found;
  }

  /// Widens every region operand of an elementwise op to the padded width, when all of them
  /// cover the logical width of one padded group (a row_expand's per-row operand excepted).
  Stmt widen_elementwise(const TileOpNode& n, const Stmt& self) {
    std::optional<PadWidth> group;
    for (size_t i = 0; i < n.args.size(); ++i) {
      const TileArg& a = n.args[i];
      if (!a.is_region()) continue;
      auto it = width_of_.find(a.region.buffer.get());
      if (it == width_of_.end()) return self;
      const Range& last = a.region.ranges.back();
      auto mn = as_const_int(last.min), ext = as_const_int(last.extent);
      if (!mn || *mn != 0 || !ext || *ext != it->second.logical) return self;
      if (group && group->padded != it->second.padded) return self;
      group = it->second;
    }
    if (!group) return self;
    std::vector<TileArg> args = n.args;
    for (auto& a : args)
      if (a.is_region())
        a.region.ranges.back().extent =
            arith::make_int(a.region.ranges.back().extent.dtype(), group->padded);
    return TileOpNode::make(n.op, std::move(args), n.attrs, n.loc);
  }

  /// A copy between the two cores' memories that the target has no path for (L0C -> UB, UB ->
  /// L1 on A2).
  bool needs_channel(const TileOpNode& n) const {
    if (n.args.size() < 2 || !n.args[0].is_region() || !n.args[1].is_region()) return false;
    const MemScope s = n.args[0].region.buffer->scope, d = n.args[1].region.buffer->scope;
    auto cs = target_.memory_core(s), cd = target_.memory_core(d);
    return cs && cd && *cs != *cd && !target_.copy_path(s, d);
  }

  /// A channel (docs/developer_mode.md, "Data that crosses cores"): the producer core copies the
  /// tile into its block's slot of a GM workspace [num_blocks, slots, rows, cols] of the consumer's
  /// dtype (the fixpipe converts on the way out of L0C), the consumer core copies it in;
  /// insert_channel_syncs orders the two with cross-core flags. One slot here; pipeline_loops gives
  /// a channel in a T.Pipelined loop one slot per stage, and insert_channel_syncs one credit per
  /// slot.
  Stmt channel(const TileOpNode& n) {
    const BufferRegion& src = n.args[0].region;
    const BufferRegion& dst = n.args[1].region;
    BufferRegion slot = workspace_slot(n, dst);
    return SeqNode::make({make_tile_op(ops::copy(), {src, slot}, {}, n.loc),
                          make_tile_op(ops::copy(), {slot, dst}, {}, n.loc)},
                         n.loc);
  }

  /// Block cid's slot 0 of a new channel workspace shaped like `dst` (declared at the kernel's
  /// top).
  BufferRegion workspace_slot(const TileOpNode& n, const BufferRegion& dst) {
    const BufferRegion& src = n.args[0].region;
    std::vector<Expr> shape = {kernel_->num_blocks, Expr(1)};
    std::vector<Expr> starts = {Expr(kernel_->cid), Expr(0)}, extents = {Expr(1), Expr(1)};
    for (const auto& r : dst.ranges) {
      shape.push_back(r.extent);
      starts.push_back(Expr(0));
      extents.push_back(r.extent);
    }
    for (size_t d = 0; d < dst.ranges.size(); ++d)
      if (!as_const_int(dst.ranges[d].extent))
        user_error(
            n.loc,
            "T.copy from {} to {}: the tile '{}' crosses cores through a GM workspace, whose "
            "extents must be constants; dimension {} has extent {}",
            scope_name(src.buffer->scope), scope_name(dst.buffer->scope), dst.buffer->name, d,
            print(dst.ranges[d].extent));
    std::string name = dst.buffer->name + "_ws";
    for (int i = 1; taken_.count(name); ++i) name = fmt::format("{}_ws{}", dst.buffer->name, i);
    taken_.insert(name);
    Buffer ws =
        BufferNode::make(name, dst.buffer->dtype, shape, MemScope::GM, {}, -1, n.loc,
                         fmt::format("GM workspace of the channel into '{}'", dst.buffer->name),
                         /*channel_slots=*/1);
    workspaces_.push_back(AllocateNode::make(ws, n.loc));
    return ws.region(starts, extents);
  }

  /// The crossings of a block that write column parts of one tile (lower_cube_ops drains a
  /// split accumulator chunk by chunk): per destination, the part copies in order, when they
  /// are two or more, cover every row and together exactly its columns. Such parts make one
  /// channel: each part goes to its columns of the workspace slot, and the consumer copies the
  /// whole slot once, after the last part (insert_channel_syncs flags the run of parts once).
  std::unordered_map<const BufferNode*, std::vector<const TileOpNode*>> column_parts(
      const std::vector<Stmt>& ss) const {
    std::unordered_map<const BufferNode*, std::vector<const TileOpNode*>> parts;
    for (const Stmt& s : ss)
      if (auto* t = s.as<TileOpNode>(); t && t->op == &ops::copy() && needs_channel(*t))
        parts[t->args[1].region.buffer.get()].push_back(t);
    for (auto it = parts.begin(); it != parts.end();)
      it = tiles_columns(it->first, it->second) ? std::next(it) : parts.erase(it);
    return parts;
  }

  bool tiles_columns(const BufferNode* dst, const std::vector<const TileOpNode*>& copies) const {
    if (copies.size() < 2 || pads_.count(dst) || dst->shape.empty()) return false;
    auto width = as_const_int(dst->shape.back());
    if (!width) return false;
    std::vector<std::pair<int64_t, int64_t>> cols;
    for (const TileOpNode* c : copies) {
      const BufferRegion& r = c->args[1].region;
      if (r.ranges.size() != dst->shape.size()) return false;
      for (size_t d = 0; d + 1 < r.ranges.size(); ++d)
        if (as_const_int(r.ranges[d].min) != 0 || !as_const_int(r.ranges[d].extent) ||
            as_const_int(r.ranges[d].extent) != as_const_int(dst->shape[d]))
          return false;
      auto mn = as_const_int(r.ranges.back().min), ext = as_const_int(r.ranges.back().extent);
      if (!mn || !ext || *ext <= 0) return false;
      cols.emplace_back(*mn, *ext);
    }
    std::sort(cols.begin(), cols.end());
    int64_t next = 0;
    for (const auto& [mn, ext] : cols) {
      if (mn != next) return false;
      next = mn + ext;
    }
    return next == *width;
  }

  Stmt mutate_(const SeqNode* n, const Stmt& self) override {
    auto parts = column_parts(n->stmts);
    if (parts.empty()) return IRMutator::mutate_(n, self);
    std::unordered_map<const BufferNode*, BufferRegion> slots;
    std::vector<Stmt> out;
    for (const Stmt& s : n->stmts) {
      auto* t = s.as<TileOpNode>();
      auto it =
          t && t->op == &ops::copy() ? parts.find(t->args[1].region.buffer.get()) : parts.end();
      if (it == parts.end()) {
        out.push_back(mutate(s));
        continue;
      }
      const BufferRegion dst = mutate_region(t->args[1].region);
      const BufferRegion whole_dst = BufferRegion::full(dst.buffer);
      auto [slot, fresh] = slots.try_emplace(it->first);
      if (fresh) slot->second = workspace_slot(*t, whole_dst);
      BufferRegion cols = slot->second;
      cols.ranges.back() = dst.ranges.back();
      out.push_back(
          make_tile_op(ops::copy(), {mutate_region(t->args[0].region), cols}, {}, t->loc));
      if (t == it->second.back())
        out.push_back(make_tile_op(ops::copy(), {slot->second, whole_dst}, {}, t->loc));
    }
    return SeqNode::make(std::move(out), n->loc);
  }

  /// Clips a GM <-> on-chip copy to the tensor (both sides, dev::clip_copy), picks the padded
  /// form where a UB row is not whole blocks, and says what the tile holds past the tensor: the
  /// author's pad_value (filled on the iterations the copy is clipped), zeros for an L1 tile (a
  /// product must not see a stale K tail), else stale (`clipped=True`, for mask_tails' reasoning
  /// and the virtual NPU's stale-data checker).
  Stmt legalize_copy(const TileOpNode& n, const Stmt& self) {
    if (n.args.size() < 2 || !n.args[0].is_region() || !n.args[1].is_region()) return self;
    const bool atomic = n.op == &ops::atomic_add();
    const int gi = is_gm(n.args[0].region.buffer) ? 0 : 1, ti = 1 - gi;
    if (!is_gm(n.args[gi].region.buffer) || !is_on_chip(n.args[ti].region.buffer)) return self;
    if (n.args[gi].region.ranges.empty() || n.args[ti].region.ranges.empty()) return self;
    auto c = dev::clip_copy(n.args[gi].region, n.args[ti].region, bounds_);
    if (!c) return self;
    const BufferRegion& t = c->tile;
    const Buffer& tb = t.buffer;
    const bool padded_rows = width_of_.count(tb.get()) > 0;
    std::vector<Attr> attrs = n.attrs;
    bool padded_form = false;
    if (tb->scope == MemScope::UB && !atomic) {
      const int64_t es = dtype_bytes(tb->dtype);
      auto run = as_const_int(t.ranges.back().extent);
      const bool whole_blocks = run && (*run * es) % kUbBlock == 0;
      Attr* pad = find_attr(attrs, "pad");
      if (pad && (padded_rows || c->clipped_last || !whole_blocks) && !n.attr_bool("pad")) {
        pad->value = true;
        padded_form = true;
      }
    }
    if (!c->clipped && !padded_form) return self;
    const bool into_whole_tile = c->clipped && gi == 0 && !atomic && whole(n.args[ti].region);
    // atomic_add has no pad attribute (issue 29: a tail atomic_add was an internal error).
    const bool author_pad = tb->scope == MemScope::UB && !atomic && n.attr_bool("pad");
    if (into_whole_tile && tb->scope == MemScope::UB && !author_pad)
      find_attr(attrs, "clipped")->value = true;
    std::vector<TileArg> args = n.args;
    args[gi] = c->gm;
    args[ti] = t;
    Stmt copy = TileOpNode::make(n.op, std::move(args), std::move(attrs), n.loc);
    if (!c->clipped || gi != 0 || atomic) return copy;
    Stmt fill;
    // The dimensions whose partiality asks for the fill: for an L1 tile, those a stale element
    // could carry into a result (CubeTails); for the author's pad, every clipped one.
    const std::vector<bool> fill_dims =
        tb->scope == MemScope::L1 ? zero_dims(n, *c) : std::vector<bool>(t.ranges.size(), true);
    if (tb->scope == MemScope::L1 &&
        std::none_of(fill_dims.begin(), fill_dims.end(), [](bool b) { return b; })) {
      // Stale only along M (N) rows (columns) that C's clipped stores drop: no fill, so a
      // whole tile's copy is not ordered after one (the dynamic-M GEMM's A panels, docs/ops.md
      // "GEMM"). Marked clipped: the stale-data checker follows the rows into C.
      if (!into_whole_tile) return copy;
      const auto* moved = copy.as<TileOpNode>();
      std::vector<Attr> marked = moved->attrs;
      find_attr(marked, "clipped")->value = true;
      return TileOpNode::make(n.op, moved->args, std::move(marked), n.loc);
    }
    if (tb->scope == MemScope::L1) {
      // A partial L1 tile: zero it first so no stale K tail enters a product.
      fill = make_tile_op(
          ops::init_const(),
          {BufferRegion::full(tb), arith::make_const(tb->dtype, arith::Value::of_float(0.0))}, {},
          n.loc);
    } else if (tb->scope == MemScope::UB && author_pad && into_whole_tile) {
      // The author said what the tile holds past the tensor (DataCopyPad itself pads only to
      // the next 32-byte block).
      fill = make_tile_op(
          ops::tile::fill(),
          {BufferRegion::full(tb),
           arith::make_const(tb->dtype, arith::Value::of_float(n.attr_float("pad_value")))},
          {}, n.loc);
    } else {
      return copy;
    }
    // Only on the iterations the copy is partial.
    Expr partial;
    const auto& orig = n.args[ti].region;
    for (size_t d = 0; d < t.ranges.size(); ++d) {
      if (t.ranges[d].extent.same_as(orig.ranges[d].extent) || !fill_dims[d]) continue;
      Expr p = t.ranges[d].extent < orig.ranges[d].extent;
      partial = partial.defined() ? (partial || p) : p;
    }
    partial = simplify(partial);
    if (auto always = as_const_int(partial))
      return *always ? SeqNode::make({fill, copy}, n.loc) : copy;
    return SeqNode::make({IfNode::make(partial, fill, Stmt(), n.loc), copy}, n.loc);
  }

  /// Per dimension of a clipped GM -> L1 copy's tile, whether its being partial asks for the
  /// zero fill: K of a product, or any dimension whose stale rows could reach anything but C's
  /// clipped stores (CubeTails: every dimension when the tile's use is not known).
  std::vector<bool> zero_dims(const TileOpNode& n, const dev::ClippedCopy& c) const {
    const BufferRegion& orig = n.args[1].region;
    std::vector<bool> v(c.tile.ranges.size(), true);
    auto r = cube_.role(c.tile.buffer.get());
    if (!r || orig.ranges.size() != v.size()) return v;
    for (size_t d = 0; d < v.size(); ++d)
      v[d] = !c.tile.ranges[d].extent.same_as(orig.ranges[d].extent) &&
             (static_cast<int>(d) == r->k_dim || !cube_.stores_drop(*r, n.args[0].region, d));
    return v;
  }

  /// Whether `r` is all of its tile (a padded tile's logical width counts as all of a row).
  bool whole(const BufferRegion& r) const {
    for (size_t d = 0; d < r.ranges.size(); ++d) {
      auto mn = as_const_int(r.ranges[d].min);
      if (!mn || *mn != 0) return false;
      if (ir_equal_ext(r.ranges[d].extent, r.buffer->shape[d])) continue;
      auto w = width_of_.find(r.buffer.get());
      auto e = as_const_int(r.ranges[d].extent);
      if (d + 1 != r.ranges.size() || w == width_of_.end() || !e || *e != w->second.logical)
        return false;
    }
    return true;
  }

  static bool ir_equal_ext(const Expr& a, const Expr& b) { return dev::same_extent(a, b); }

  std::unordered_map<const BufferNode*, PadWidth> pads_;
  const CubeTails& cube_;
  const Target& target_;
  std::unordered_set<std::string> taken_;  // names in the function, for the workspaces
  const KernelNode* kernel_ = nullptr;
  std::vector<Stmt> workspaces_;  // their declarations, for the kernel's top
  std::unordered_map<const BufferNode*, Buffer> padded_;
  std::unordered_map<const BufferNode*, PadWidth> width_of_;  // padded buffer -> its widths
  dev::Bounds bounds_;
};

}  // namespace

PrimFunc legalize_copies(const PrimFunc& f, const Target& target) {
  if (!dev::is_developer(f)) return f;
  PadPlanner planner;
  planner.visit(f->body);
  CubeTails cube;
  cube.visit(f->body);
  Legalizer legalizer(planner.plan(), cube, target, arith::names_in(f));
  Stmt body = legalizer.mutate(f->body);
  return body.same_as(f->body) ? f : with_body(f, body);
}

}  // namespace tl
