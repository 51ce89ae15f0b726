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
//   - Reductions over a clipped dimension. A UB tile filled by a clipped copy holds stale data
//     past the clip; so does a tile computed element by element from it. The pass follows the
//     valid extents forward (copies, element loops, elementwise ops, reductions) and narrows a
//     reduction over such a dimension to the valid part (a column sum of a tail block sums its
//     rows, not the stale ones).
// Expert kernels are returned unchanged.
#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "developer.h"
#include "tl/arith.h"
#include "tl/ir_equal.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/target.h"

namespace tl {
namespace {

constexpr int64_t kUbBlock = 32;  // bytes; UB rows are whole blocks (ASCENDC_API.md, DataCopy)

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
        if (n->is_view()) g.has_view = true;
        else g.members.push_back(b.get());
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

/// Vector tile ops that act element by element on same-shaped operands: widening them to the
/// padded width changes only pad lanes. Reductions, broadcasts, gathers, sorts and bitmask ops
/// are not among them.
bool is_elementwise(const OpDef& op) {
  static const std::unordered_set<std::string> kOthers = {
      "tile.cast", "tile.fill", "tile.relu", "tile.axpy", "tile.leaky_relu", "tile.clamp",
      "tile.bitwise_and", "tile.bitwise_or", "tile.bitwise_not", "tile.shift_left", "tile.shift_right"};
  if (op.unit != OpUnit::Vector) return false;
  if (kOthers.count(op.name)) return true;
  static const std::unordered_set<std::string> kFromDef = [] {
    std::unordered_set<std::string> s;
#define TL_VECTOR_BINARY(NAME, DTYPES, COST, F, FI, SUMMARY) s.insert("tile." #NAME);
#define TL_VECTOR_UNARY(NAME, DTYPES, COST, F, SUMMARY) s.insert("tile." #NAME);
#define TL_VECTOR_ROW_EXPAND(NAME, DTYPES, COST, F, FI, SUMMARY)
#include "tl/vector_ops.def"
    return s;
  }();
  return kFromDef.count(op.name) > 0;
}

bool is_gm(const Buffer& b) { return b->scope == MemScope::GM; }
/// Memories a GM copy reaches: UB (MTE2/MTE3), L1 (MTE2), L0C (the fixpipe, out only).
bool is_on_chip(const Buffer& b) {
  return b->scope == MemScope::UB || b->scope == MemScope::L1 || b->scope == MemScope::L0C;
}

Attr* find_attr(std::vector<Attr>& attrs, std::string_view key) {
  for (auto& a : attrs)
    if (a.key == key) return &a;
  return nullptr;
}

class Legalizer : public IRMutator {
 public:
  Legalizer(std::unordered_map<const BufferNode*, PadWidth> pads, const Target& target,
            std::unordered_set<std::string> taken)
      : pads_(std::move(pads)), target_(target), taken_(std::move(taken)) {}

  Buffer mutate_buffer(const Buffer& b) override {
    if (!b.defined()) return b;
    auto it = pads_.find(b.get());
    if (it == pads_.end()) return b;
    auto done = padded_.find(b.get());
    if (done != padded_.end()) return done->second;
    std::vector<Expr> shape = b->shape;
    shape.back() = arith::make_int(shape.back().dtype(), it->second.padded);
    Buffer p = BufferNode::make(b->name, b->dtype, std::move(shape), b->scope, b->strides, b->address, b->loc,
                                b->origin.empty() ? fmt::format("rows padded from {} to {}", it->second.logical,
                                                                it->second.padded)
                                                  : b->origin);
    padded_.emplace(b.get(), p);
    width_of_.emplace(p.get(), it->second);
    return p;
  }

 protected:
  Stmt mutate_(const KernelNode* n, const Stmt& self) override {
    if (!n->developer()) return IRMutator::mutate_(n, self);
    arith::Interval blocks = arith::bound(n->num_blocks, vars_);
    vars_[n->cid.node()] = {0, std::max<int64_t>(blocks.hi - 1, 0)};
    kernel_ = n;
    Stmt body = mutate(n->body);
    if (workspaces_.empty() && body.same_as(n->body)) return self;
    // Workspaces are declared first: every block and core indexes the same tensors.
    std::vector<Stmt> stmts = std::move(workspaces_);
    if (auto* q = body.as<SeqNode>()) stmts.insert(stmts.end(), q->stmts.begin(), q->stmts.end());
    else stmts.push_back(body);
    return KernelNode::make(n->num_blocks, n->cid, n->vid, SeqNode::make(std::move(stmts), n->loc), n->loc,
                            n->threads);
  }

  Stmt mutate_(const ForNode* n, const Stmt& self) override {
    arith::Interval lo = arith::bound(n->min, vars_), ext = arith::bound(n->extent, vars_);
    int64_t end;
    const bool fits = !__builtin_add_overflow(lo.hi, ext.hi, &end);
    vars_[n->var.node()] = {lo.lo, fits ? std::max(lo.lo, end - 1) : arith::Interval::of_dtype(n->var.dtype()).hi};
    const bool outer_parallel = n->for_kind == ForKind::Parallel && !in_parallel_;
    if (outer_parallel) in_parallel_ = true;
    // Valid extents over a serial loop: its body may run 0 times, and an extent noted in one
    // iteration names that iteration's variables; what the body writes is unknown on entry and
    // known after the loop only where the body and the skip agree.
    const bool serial = n->for_kind != ForKind::Parallel;
    std::map<const BufferNode*, Valid> before;
    if (serial) {
      forget_written(n->body);
      before = valid_;
    }
    Stmt s = IRMutator::mutate_(n, self);
    if (serial) keep_agreeing(before);
    if (outer_parallel) in_parallel_ = false;
    const auto* f = s.as<ForNode>();
    if (!f || f->for_kind != ForKind::Parallel) return s;
    if (outer_parallel) follow_element_loop(*f);
    if (auto w = widened_extent(*f)) return ForNode::make(f->var, f->min, *w, f->for_kind, f->num_stages, f->body, f->loc);
    return s;
  }

  /// A let's variable ranges over its value's bound (bx = cid % q_tiles: [0, q_tiles - 1]), so
  /// a copy indexed by it is clipped only where it can pass its tensor's end.
  Stmt mutate_(const LetNode* n, const Stmt& self) override {
    if (is_int(n->var.dtype())) vars_[n->var.node()] = arith::bound(n->value, vars_);
    return IRMutator::mutate_(n, self);
  }

  /// Valid extents after an if: those both branches (or the skipped else) agree on. In the
  /// then branch, a condition `v < e` (or `v <= e`, `e > v`, `e >= v`) bounds the variable v
  /// by e's bound: T.Persistent's `if tile < total` keeps the tile coordinates inside the
  /// domain, so their copies need no tail handling.
  Stmt mutate_(const IfNode* n, const Stmt& self) override {
    const auto before = valid_;
    const auto vars_before = vars_;
    refine_from(n->cond);
    Stmt t = mutate(n->then_case);
    vars_ = vars_before;
    const auto after_then = valid_;
    valid_ = before;
    Stmt e = n->else_case.defined() ? mutate(n->else_case) : n->else_case;
    keep_agreeing(after_then);
    if (t.same_as(n->then_case) && e.same_as(n->else_case)) return self;
    return IfNode::make(n->cond, t, e, n->loc);
  }

  /// Narrows the upper bound of an integer variable that `cond` (true) bounds from above.
  void refine_from(const Expr& cond) {
    auto* b = cond.as<BinaryNode>();
    if (!b) return;
    if (b->op == BinOp::And) {
      refine_from(b->a);
      refine_from(b->b);
      return;
    }
    const Expr* var = nullptr;
    const Expr* limit = nullptr;
    int64_t strict = 0;
    if (b->op == BinOp::LT || b->op == BinOp::LE) var = &b->a, limit = &b->b, strict = b->op == BinOp::LT;
    else if (b->op == BinOp::GT || b->op == BinOp::GE) var = &b->b, limit = &b->a, strict = b->op == BinOp::GT;
    else return;
    auto* v = var->as<VarNode>();
    if (!v || !is_int(v->dtype)) return;
    arith::Interval cur = vars_.count(v) ? vars_.at(v) : arith::bound(*var, vars_);
    arith::Interval lim = arith::bound(*limit, vars_);
    if (lim.hi == arith::Interval::of_dtype(DType::Int64).hi) return;
    vars_[v] = {cur.lo, std::max(cur.lo, std::min(cur.hi, lim.hi - strict))};
  }

  Stmt mutate_(const TileOpNode* n, const Stmt& self) override {
    Stmt s = IRMutator::mutate_(n, self);
    const auto* t = s.as<TileOpNode>();
    if (t->op->name == "copy" && needs_channel(*t)) return channel(*t);
    if (t->op->name == "copy" || t->op->name == "atomic_add") {
      Stmt out = legalize_copy(*t, s);
      follow_copy(*t, out);
      return out;
    }
    if (is_elementwise(*t->op)) {
      Stmt out = widen_elementwise(*t, s);
      follow_elementwise(*t);
      return out;
    }
    if (t->op->name == "reduce_sum" || t->op->name == "reduce_max" || t->op->name == "reduce_min")
      return narrow_reduction(*t, s);
    forget_writes(*t);
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
          if (st.as<TileOpNode>()) ok = false;  // not an element loop: vectorize_parallel reports it
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
      if (a.is_region()) a.region.ranges.back().extent = arith::make_int(a.region.ranges.back().extent.dtype(), group->padded);
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

  /// A channel (DEVMODE.md section 2): the producer core copies the tile into its block's slot
  /// of a GM workspace [num_blocks, slots, rows, cols] of the consumer's dtype (the fixpipe
  /// converts on the way out of L0C), the consumer core copies it in; insert_channel_syncs
  /// orders the two with cross-core flags. One slot here; pipeline_loops gives a channel in a
  /// T.Pipelined loop one slot per stage, and insert_channel_syncs one credit per slot.
  Stmt channel(const TileOpNode& n) {
    const BufferRegion& src = n.args[0].region;
    const BufferRegion& dst = n.args[1].region;
    BufferRegion slot = workspace_slot(n, dst);
    return SeqNode::make({make_tile_op("copy", {src, slot}, {}, n.loc), make_tile_op("copy", {slot, dst}, {}, n.loc)},
                         n.loc);
  }

  /// Block cid's slot 0 of a new channel workspace shaped like `dst` (declared at the kernel's top).
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
        user_error(n.loc, "T.copy from {} to {}: the tile '{}' crosses cores through a GM workspace, whose "
                          "extents must be constants; dimension {} has extent {}",
                   scope_name(src.buffer->scope), scope_name(dst.buffer->scope), dst.buffer->name, d,
                   print(dst.ranges[d].extent));
    std::string name = dst.buffer->name + "_ws";
    for (int i = 1; taken_.count(name); ++i) name = fmt::format("{}_ws{}", dst.buffer->name, i);
    taken_.insert(name);
    Buffer ws = BufferNode::make(name, dst.buffer->dtype, shape, MemScope::GM, {}, -1, n.loc,
                                  fmt::format("GM workspace of the channel into '{}'", dst.buffer->name));
    workspaces_.push_back(AllocateNode::make(ws, n.loc));
    return ws.region(starts, extents);
  }

  /// The crossings of a block that write column parts of one tile (lower_cube_ops drains a
  /// split accumulator chunk by chunk): per destination, the part copies in order, when they
  /// are two or more, cover every row and together exactly its columns. Such parts make one
  /// channel: each part goes to its columns of the workspace slot, and the consumer copies the
  /// whole slot once, after the last part (insert_channel_syncs flags the run of parts once).
  std::unordered_map<const BufferNode*, std::vector<const TileOpNode*>> column_parts(const std::vector<Stmt>& ss) const {
    std::unordered_map<const BufferNode*, std::vector<const TileOpNode*>> parts;
    for (const Stmt& s : ss)
      if (auto* t = s.as<TileOpNode>(); t && t->op->name == "copy" && needs_channel(*t))
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
      auto it = t && t->op->name == "copy" ? parts.find(t->args[1].region.buffer.get()) : parts.end();
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
      out.push_back(make_tile_op("copy", {mutate_region(t->args[0].region), cols}, {}, t->loc));
      if (t == it->second.back())
        out.push_back(make_tile_op("copy", {slot->second, whole_dst}, {}, t->loc));
    }
    return SeqNode::make(std::move(out), n->loc);
  }

  /// Clips a GM <-> on-chip copy to the tensor (both sides), and picks the padded form where
  /// a UB row is not whole blocks.
  Stmt legalize_copy(const TileOpNode& n, const Stmt& self) {
    if (n.args.size() < 2 || !n.args[0].is_region() || !n.args[1].is_region()) return self;
    const bool atomic = n.op->name == "atomic_add";
    const int gi = is_gm(n.args[0].region.buffer) ? 0 : 1, ti = 1 - gi;
    BufferRegion g = n.args[gi].region, t = n.args[ti].region;
    if (!is_gm(g.buffer) || !is_on_chip(t.buffer)) return self;
    const size_t ng = g.ranges.size(), nt = t.ranges.size();
    if (ng == 0 || nt == 0) return self;
    bool clipped = false, clipped_last = false;
    // Trailing dimensions correspond; a dimension of one side beyond the other's rank must
    // have extent 1 (checked by the verifier's copy rule).
    for (size_t k = 1; k <= std::min(ng, nt); ++k) {
      Range& gr = g.ranges[ng - k];
      Range& tr = t.ranges[nt - k];
      if (!ir_equal_ext(gr.extent, tr.extent)) return self;  // shapes differ: the author's layout
      const Expr& size = g.buffer->shape[ng - k];
      arith::Interval room = arith::bound(size - gr.min - gr.extent, vars_);
      if (room.lo >= 0) continue;
      Expr ext = simplify(min(gr.extent, size - gr.min));
      gr.extent = ext;
      tr.extent = ext;
      clipped = true;
      if (k == 1) clipped_last = true;
    }
    const Buffer& tb = t.buffer;
    const bool padded_rows = width_of_.count(tb.get()) > 0;
    std::vector<Attr> attrs = n.attrs;
    bool padded_form = false;
    if (tb->scope == MemScope::UB && !atomic) {
      const int64_t es = dtype_bytes(tb->dtype);
      auto run = as_const_int(t.ranges.back().extent);
      const bool whole_blocks = run && (*run * es) % kUbBlock == 0;
      Attr* pad = find_attr(attrs, "pad");
      if (pad && (padded_rows || clipped_last || !whole_blocks) && !n.attr_bool("pad")) {
        pad->value = true;
        padded_form = true;
      }
    }
    if (!clipped && !padded_form) return self;
    // A clipped GM -> UB copy into a whole tile leaves the tile's elements past the tensor
    // stale: say so, for the stale-data checker.
    if (clipped && gi == 0 && tb->scope == MemScope::UB && !atomic && whole(n.args[ti].region))
      find_attr(attrs, "clipped")->value = true;
    std::vector<TileArg> args = n.args;
    args[gi] = g;
    args[ti] = t;
    Stmt copy = TileOpNode::make(n.op, std::move(args), std::move(attrs), n.loc);
    if (!clipped || tb->scope != MemScope::L1 || atomic || gi != 0) return copy;
    // A partial L1 tile: zero it first (when the tile is partial) so no stale K tail enters
    // a product.
    Expr partial;
    const auto& orig = n.args[ti].region;
    for (size_t d = 0; d < nt; ++d) {
      if (t.ranges[d].extent.same_as(orig.ranges[d].extent)) continue;
      Expr p = t.ranges[d].extent < orig.ranges[d].extent;
      partial = partial.defined() ? (partial || p) : p;
    }
    Stmt clear = make_tile_op("init_const", {BufferRegion::full(tb), arith::make_const(tb->dtype, arith::Value::of_float(0.0))}, {}, n.loc);
    partial = simplify(partial);
    if (auto always = as_const_int(partial)) return *always ? SeqNode::make({clear, copy}, n.loc) : copy;
    return SeqNode::make({IfNode::make(partial, clear, Stmt(), n.loc), copy}, n.loc);
  }

  // ---- valid extents ---------------------------------------------------------------------
  // Per UB tile, the extent of each dimension that holds data (undefined: all of it), set by a
  // clipped copy into the whole tile and carried to tiles computed from it element by element.

  using Valid = std::vector<Expr>;

  /// Drops every valid extent `other` does not hold identically.
  void keep_agreeing(const std::map<const BufferNode*, Valid>& other) {
    for (auto it = valid_.begin(); it != valid_.end();) {
      auto o = other.find(it->first);
      bool same = o != other.end() && o->second.size() == it->second.size();
      for (size_t d = 0; same && d < it->second.size(); ++d)
        same = it->second[d].defined() == o->second[d].defined() &&
               (!it->second[d].defined() || structural_equal(it->second[d], o->second[d]));
      it = same ? std::next(it) : valid_.erase(it);
    }
  }
  /// Forgets the valid extents of every buffer `s` (not yet mutated) writes.
  void forget_written(const Stmt& s) {
    auto forget = [&](const Buffer& b) {
      valid_.erase(b.get());
      if (auto p = padded_.find(b.get()); p != padded_.end()) valid_.erase(p->second.get());
    };
    pre_order_visit(s, [&](const Stmt& x) {
      if (const auto* st = x.as<StoreNode>()) forget(st->buffer);
      if (const auto* t = x.as<TileOpNode>())
        for (size_t i = 0; i < t->args.size() && i < t->op->operands.size(); ++i)
          if (t->args[i].is_region() && t->op->operands[i].access != Access::Read) forget(t->args[i].region.buffer);
    });
  }

  /// Whether `r` is all of its tile (a padded tile's logical width counts as all of a row).
  bool whole(const BufferRegion& r) const {
    for (size_t d = 0; d < r.ranges.size(); ++d) {
      auto mn = as_const_int(r.ranges[d].min);
      if (!mn || *mn != 0) return false;
      if (ir_equal_ext(r.ranges[d].extent, r.buffer->shape[d])) continue;
      auto w = width_of_.find(r.buffer.get());
      auto e = as_const_int(r.ranges[d].extent);
      if (d + 1 != r.ranges.size() || w == width_of_.end() || !e || *e != w->second.logical) return false;
    }
    return true;
  }
  static bool same_shape(const Buffer& a, const Buffer& b) {
    if (a->shape.size() != b->shape.size()) return false;
    for (size_t d = 0; d + 1 < a->shape.size(); ++d)  // the last may be padded differently
      if (!ir_equal_ext(a->shape[d], b->shape[d])) return false;
    return true;
  }
  /// `dst` now holds values computed from `srcs` element by element (or nothing known).
  void follow(const Buffer& dst, const std::vector<Buffer>& srcs) {
    if (dst->scope != MemScope::UB) return;
    for (const Buffer& src : srcs) {
      auto it = valid_.find(src.get());
      if (it != valid_.end() && !src.same_as(dst) && same_shape(src, dst)) {
        valid_[dst.get()] = it->second;
        return;
      }
    }
    if (std::find_if(srcs.begin(), srcs.end(), [&](const Buffer& b) { return b.same_as(dst); }) == srcs.end())
      valid_.erase(dst.get());
  }
  /// A copy into a whole UB tile: clipped (`out` moves less than the tile), its valid extents;
  /// from another UB tile, that tile's.
  void follow_copy(const TileOpNode& before, const Stmt& out) {
    if (before.op->name != "copy" || before.args.size() < 2 || !before.args[1].is_region()) return;
    const BufferRegion& dst = before.args[1].region;
    if (dst.buffer->scope != MemScope::UB) return;
    if (!whole(dst)) return void(valid_.erase(dst.buffer.get()));
    const TileOpNode* after = out.as<TileOpNode>();
    if (!after || !before.args[0].is_region()) return;
    if (before.args[0].region.buffer->scope == MemScope::UB) return follow(dst.buffer, {before.args[0].region.buffer});
    Valid v(dst.ranges.size());
    bool any = false;
    for (size_t d = 0; d < v.size(); ++d) {
      const Expr& e = after->args[1].region.ranges[d].extent;
      if (!ir_equal_ext(e, dst.ranges[d].extent)) {
        v[d] = e;
        any = true;
      }
    }
    if (any) valid_[dst.buffer.get()] = std::move(v);
    else valid_.erase(dst.buffer.get());
  }
  void follow_elementwise(const TileOpNode& n) {
    std::vector<Buffer> srcs;
    const BufferRegion* dst = nullptr;
    for (size_t i = 0; i < n.args.size(); ++i) {
      if (!n.args[i].is_region()) continue;
      if (!dst) dst = &n.args[i].region;  // the destination comes first
      else srcs.push_back(n.args[i].region.buffer);
    }
    if (!dst) return;
    if (whole(*dst)) follow(dst->buffer, srcs);
    else valid_.erase(dst->buffer.get());
  }
  /// Any other op: what it writes is no longer known to be stale past a clip.
  void forget_writes(const TileOpNode& n) {
    for (size_t i = 0; i < n.args.size() && i < n.op->operands.size(); ++i)
      if (n.args[i].is_region() && n.op->operands[i].access != Access::Read) valid_.erase(n.args[i].region.buffer.get());
  }
  /// An element loop nest: each buffer it stores all of (indexed by the nest's variables, in
  /// order, over its whole shape) takes the valid extents of a same-shaped buffer it loads; a
  /// buffer it stores part of forgets its own.
  void follow_element_loop(const ForNode& f) {
    std::vector<const ForNode*> nest = {&f};
    while (const auto* inner = single_parallel_child(*nest.back())) nest.push_back(inner);
    std::vector<const StoreNode*> stores;
    std::vector<Buffer> loaded;
    pre_order_visit(
        f.body,
        [&](const Stmt& st) {
          if (const auto* store = st.as<StoreNode>()) stores.push_back(store);
        },
        [&](const Expr& e) {
          if (const auto* ld = e.as<LoadNode>()) loaded.push_back(ld->buffer);
        });
    for (const StoreNode* st : stores) {
      bool all = st->indices.size() == nest.size();
      for (size_t d = 0; all && d < nest.size(); ++d) {
        auto mn = as_const_int(nest[d]->min);
        BufferRegion r{st->buffer, {}};
        all = st->indices[d].as<VarNode>() == nest[d]->var.node() && mn && *mn == 0;
        if (all) {
          for (size_t k = 0; k < nest.size(); ++k) r.ranges.push_back({Expr(0), nest[k]->extent});
          all = whole(r);
        }
      }
      if (all) follow(st->buffer, loaded);
      else valid_.erase(st->buffer.get());
    }
  }
  static const ForNode* single_parallel_child(const ForNode& f) {
    Stmt b = f.body;
    if (const auto* q = b.as<SeqNode>(); q && q->stmts.size() == 1) b = q->stmts[0];
    const auto* inner = b.as<ForNode>();
    return inner && inner->for_kind == ForKind::Parallel ? inner : nullptr;
  }
  /// A reduction over a dimension whose valid extent is known reads only that part; its
  /// destination keeps the source's other valid extents.
  Stmt narrow_reduction(const TileOpNode& n, const Stmt& self) {
    const TileArg* src = op_operand(n, "src");
    const TileArg* dst = op_operand(n, "dst");
    if (!src || !dst || !src->is_region() || !dst->is_region()) return self;
    const BufferRegion& r = src->region;
    auto it = valid_.find(r.buffer.get());
    const int64_t nd = static_cast<int64_t>(r.ranges.size());
    int64_t dim = n.attr_int("dim");
    if (dim < 0) dim += nd;
    if (it == valid_.end() || dim < 0 || dim >= nd) {
      valid_.erase(dst->region.buffer.get());
      return self;
    }
    const Valid v = it->second;
    Valid out;
    for (int64_t d = 0; d < nd; ++d)
      if (d != dim) out.push_back(v[d]);
    if (dst->region.ranges.size() == out.size() && std::any_of(out.begin(), out.end(), [](const Expr& e) { return e.defined(); }))
      valid_[dst->region.buffer.get()] = out;
    else
      valid_.erase(dst->region.buffer.get());
    if (!v[dim].defined() || !whole(r)) return self;
    std::vector<TileArg> args = n.args;
    for (auto& a : args)
      if (a.is_region() && a.region.buffer.same_as(r.buffer)) a.region.ranges[dim].extent = v[dim];
    return TileOpNode::make(n.op, std::move(args), n.attrs, n.loc);
  }

  static bool ir_equal_ext(const Expr& a, const Expr& b) {
    auto x = as_const_int(a), y = as_const_int(b);
    return x && y ? *x == *y : structural_equal(a, b);
  }

  std::unordered_map<const BufferNode*, PadWidth> pads_;
  const Target& target_;
  std::unordered_set<std::string> taken_;  // names in the function, for the workspaces
  const KernelNode* kernel_ = nullptr;
  std::vector<Stmt> workspaces_;  // their declarations, for the kernel's top
  std::unordered_map<const BufferNode*, Buffer> padded_;
  std::unordered_map<const BufferNode*, PadWidth> width_of_;  // padded buffer -> its widths
  std::map<const BufferNode*, Valid> valid_;                 // UB tile -> its valid extents
  bool in_parallel_ = false;
  arith::VarIntervals vars_;
};

}  // namespace

PrimFunc legalize_copies(const PrimFunc& f, const Target& target) {
  if (!dev::is_developer(f)) return f;
  PadPlanner planner;
  planner.visit(f->body);
  Legalizer legalizer(planner.plan(), target, arith::names_in(f));
  Stmt body = legalizer.mutate(f->body);
  return body.same_as(f->body) ? f : with_body(f, body);
}

}  // namespace tl
