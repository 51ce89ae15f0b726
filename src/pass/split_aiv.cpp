// split_aiv (lowered developer kernels with threads = 2, after vectorize_parallel; tl/pass.h):
// gives each of a block's two AIVs half of the vector work, as the expert kernels do by hand
// (docs/developer_mode.md section 2, the pass table). Before it, the vector work runs on AIV 0 (`if
// vid == 0`).
//
// Row split. The rows of a UB tile that is copied from or to GM (or a channel workspace) are the
// candidates. Which other tiles' dimensions are "the same rows" follows from the ops that relate
// them (dimension labels unified across ops, a union-find over (buffer, dimension)):
// elementwise ops relate every dimension, a row-wise expansion relates the row vector to the
// matrix's rows, a broadcast the vector to the matrix's columns, a reduction the kept dimensions.
// Every dimension labelled "rows" (of extent R, even) is halved: AIV v works on rows
// [v R/2, (v+1) R/2) of each tile; its GM and workspace copies move those rows (clipped for a
// tail tile: a copy that would move none is skipped), and every op on such a tile runs over
// rows [0, R/2) of it. Tiles whose dimensions are not rows (the key mask of attention, a
// weight vector) stay whole on both AIVs (replicated: each computes them); a whole tile written
// to GM is written by AIV 0 only. Split tiles shrink to R/2 rows, so each AIV's UB holds twice
// the rows it did; except the operands of a compare whose half would break A2's 256-byte Compare
// granule (a row state of 64 fp32): that compare runs over the whole tile, whose rows past R/2
// hold nothing either AIV uses.
//
// Iteration split, when the rows cannot be split: the vector work is one loop of independent
// tiles (each iteration writes every UB tile it reads, stores to its own part of GM, and no
// tile crosses cores), and AIV v runs its iterations min + 2 k + v. A remark says so.
//
// Fallback, 1:1 (AIV 0 does everything, AIV 1 runs the flag protocol), with a remark naming
// the reasons: an odd row count, a reduction over the rows (a dim-0 reduce needs both halves),
// rows that meet a position-dependent op (an index vector, a gather, a sort, a transpose, a
// scalar element access), a sub-range of the rows, a whole tile pushed to the cube, or a
// split kernel the verifier would reject; and why the iterations cannot be split either (no
// loop, a value carried from one iteration to the next, two iterations writing the same GM,
// tiles crossing cores, GM stores outside the loop).
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "developer.h"
#include "split_aiv_turns.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/verifier.h"

namespace tl {
namespace {

/// An int32 immediate where it fits (prints `8`, not `T.int64(8)`).
Expr int_imm(int64_t v) {
  return v >= INT32_MIN && v <= INT32_MAX ? Expr(static_cast<int>(v)) : Expr(v);
}

/// Dimension labels: a union-find over (buffer, dimension) of the UB tiles.
class Labels {
 public:
  int node(const BufferNode* b, int d) {
    auto [it, fresh] = id_.try_emplace({b, d}, static_cast<int>(parent_.size()));
    if (fresh) {
      parent_.push_back(it->second);
      pinned_.emplace_back();
      keys_.push_back({b, d});
    }
    return it->second;
  }
  int find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void unite(const BufferNode* a, int da, const BufferNode* b, int db) {
    int x = find(node(a, da)), y = find(node(b, db));
    if (x == y) return;
    parent_[y] = x;
    if (pinned_[x].empty()) pinned_[x] = pinned_[y];
  }
  void pin(const BufferNode* b, int d, const std::string& why) {
    int x = find(node(b, d));
    if (pinned_[x].empty()) pinned_[x] = why;
  }
  const std::string& pinned(const BufferNode* b, int d) { return pinned_[find(node(b, d))]; }
  bool same(const BufferNode* a, int da, const BufferNode* b, int db) {
    return find(node(a, da)) == find(node(b, db));
  }
  /// The (buffer, dimension) pairs labelled like (b, d).
  std::vector<std::pair<const BufferNode*, int>> members(const BufferNode* b, int d) {
    int r = find(node(b, d));
    std::vector<std::pair<const BufferNode*, int>> out;
    for (size_t i = 0; i < keys_.size(); ++i)
      if (find(static_cast<int>(i)) == r) out.push_back(keys_[i]);
    return out;
  }

 private:
  std::map<std::pair<const BufferNode*, int>, int> id_;
  std::vector<int> parent_;
  std::vector<std::string> pinned_;
  std::vector<std::pair<const BufferNode*, int>> keys_;
};

class AivSplit {
 public:
  AivSplit(const Target& t, const KernelNode& k) : target_(t), kernel_(k) {
    // The channel workspaces: GM buffers the kernel declares (the others are its parameters).
    if (auto* q = k.body.as<SeqNode>())
      for (const Stmt& s : q->stmts)
        if (auto* a = s.as<AllocateNode>(); a && a->buffer->scope == MemScope::GM)
          workspaces_.insert(a->buffer.get());
  }

  bool has_channels() const { return !workspaces_.empty(); }

  /// The vector work for both AIVs, or nullopt and `why` (the fallback's remark).
  std::optional<Stmt> run(const Stmt& work, std::string& why) {
    pre_order_visit(work, [&](const Stmt& s) {
      if (auto* a = s.as<AllocateNode>(); a && a->buffer->scope == MemScope::UB) {
        ub_.insert(a->buffer.get());
        if (a->is_view()) {
          for (size_t d = 0; d < a->buffer->ndim(); ++d) {
            labels_.pin(a->buffer.get(), static_cast<int>(d),
                        "a view of its bytes (" + dev::describe(a->buffer) + ")");
            labels_.pin(a->view_of.get(), static_cast<int>(d), "a view of its bytes");
          }
        }
      }
    });
    pre_order_visit(work, [&](const Stmt& s) {
      if (auto* op = s.as<TileOpNode>())
        for (size_t i = 0; i < op->args.size() && i < op->op->operands.size(); ++i)
          if (op->op->operands[i].bitmask && is_ub(op->args[i]))
            masks_.insert(op->args[i].region.buffer.get());
    });
    pre_order_visit(
        work, [&](const Stmt& s) { relate(s); },
        [&](const Expr& e) {
          if (auto* l = e.as<LoadNode>(); l && ub_.count(l->buffer.get()))
            pin_all(l->buffer.get(), "an element read by the scalar unit");
        });
    if (!fallback_.empty()) return fail(why, fallback_);
    // The row classes: dimension 0 of every tile of rank >= 2 that GM copies touch.
    for (const auto& c : gm_copies_)
      if (c.ub->ndim() >= 2) rows_.insert(labels_.find(labels_.node(c.ub, 0)));
    if (rows_.empty())
      return fail(why,
                  "no tile of rank 2 or more is copied from or to GM: nothing to split by rows");
    for (int r : rows_) {
      auto m = labels_.members(keys_of(r).first, keys_of(r).second);
      for (const auto& [b, d] : m) {
        const std::string& pin = labels_.pinned(b, d);
        if (!pin.empty()) return fail(why, fmt::format("the rows of '{}' meet {}", b->name, pin));
        if (d != 0)
          return fail(
              why,
              fmt::format(
                  "dimension {} of '{}' is labelled as the rows of '{}' (only leading rows split)",
                  d, b->name, keys_of(r).first->name));
        auto ext = as_const_int(b->shape[0]);
        if (!ext) return fail(why, fmt::format("'{}' has a symbolic row count", b->name));
        if (*ext % 2 != 0)
          return fail(why, fmt::format("'{}' has an odd row count ({})", b->name, *ext));
        half_[b] = *ext / 2;
      }
      int64_t h = half_.at(keys_of(r).first);
      for (const auto& [b, d] : m)
        if (half_.at(b) != h && padded_row_vector(work, b, 2 * h)) {
          // legalize_copies pads a per-row statistic of R floats to whole 32-byte blocks
          // (block_M = 2: 8 floats); only its first R rows mean anything, so it splits like
          // the tile it belongs to and keeps its padded allocation (issue 29).
          half_[b] = h;
          keep_size_.insert(b);
        }
      for (const auto& [b, d] : m)
        if (half_.at(b) != h)
          return fail(
              why,
              fmt::format("'{}' and '{}' share a row label but have {} and {} rows{}",
                          keys_of(r).first->name, b->name, 2 * h, 2 * half_.at(b),
                          b->ndim() == 1 && half_.at(b) > h
                              ? fmt::format(" ('{}' is padded to whole 32-byte blocks and an op "
                                            "uses more than its first {}: an element loop over "
                                            "it runs over the padding)",
                                            b->name, 2 * h)
                              : std::string()));
    }
    // A whole tile pushed to the cube: the AIVs take turns at the loop around the push
    // (split_aiv_turns.cpp), or the split fails.
    std::set<const BufferNode*> pushed, split;
    for (const auto& c : gm_copies_)
      if (!half_.count(c.ub) && c.to_gm && c.workspace) pushed.insert(c.ub);
    for (const auto& [b, h] : half_) split.insert(b);
    if (!pushed.empty()) {
      auto loops = dev::turn_loops(work, pushed, split, target_, why);
      if (!loops) return std::nullopt;
      turns_ = std::move(*loops);
    }
    plan_sizes(work);
    Stmt out = rewrite(work);
    if (!fallback_.empty()) return fail(why, fallback_);
    return out;
  }

 private:
  struct GmCopy {
    const BufferNode* ub;
    bool to_gm, workspace;
  };

  /// A 1-D tile longer than the R rows of its class whose every use is its first R elements
  /// (a row statistic padded to whole blocks): those are its rows.
  bool padded_row_vector(const Stmt& work, const BufferNode* b, int64_t rows) const {
    auto ext = as_const_int(b->shape[0]);
    if (b->ndim() != 1 || !ext || *ext <= rows) return false;
    bool ok = true;
    pre_order_visit(
        work,
        [&](const Stmt& s) {
          if (auto* op = s.as<TileOpNode>())
            for (const TileArg& a : op->args)
              if (a.is_region() && a.region.buffer.get() == b) {
                auto lo = as_const_int(a.region.ranges[0].min);
                auto n = as_const_int(a.region.ranges[0].extent);
                ok = ok && lo && *lo == 0 && n && *n == rows;
              }
        },
        [&](const Expr& e) {
          if (auto* l = e.as<LoadNode>(); l && l->buffer.get() == b) ok = false;
        });
    return ok;
  }

  std::optional<Stmt> fail(std::string& why, const std::string& reason) {
    why = reason;
    return std::nullopt;
  }
  std::pair<const BufferNode*, int> keys_of(int root) {
    for (const auto& c : gm_copies_)
      if (c.ub->ndim() >= 2 && labels_.find(labels_.node(c.ub, 0)) == root) return {c.ub, 0};
    TL_ASSERT(false, "split_aiv: row class {} has no copied tile", root);
  }
  void pin_all(const BufferNode* b, const std::string& why) {
    for (size_t d = 0; d < b->ndim(); ++d) labels_.pin(b, static_cast<int>(d), why);
  }
  bool is_ub(const TileArg& a) const { return a.is_region() && ub_.count(a.region.buffer.get()); }
  void unite_all_dims(const BufferRegion& a, const BufferRegion& b, const std::string& op) {
    if (a.buffer->ndim() != b.buffer->ndim()) {
      pin_all(a.buffer.get(), op + " on operands of different ranks");
      pin_all(b.buffer.get(), op + " on operands of different ranks");
      return;
    }
    for (size_t d = 0; d < a.buffer->ndim(); ++d)
      labels_.unite(a.buffer.get(), static_cast<int>(d), b.buffer.get(), static_cast<int>(d));
  }

  /// The dimension relations one statement adds.
  void relate(const Stmt& s) {
    auto* op = s.as<TileOpNode>();
    if (!op) {
      if (auto* st = s.as<StoreNode>(); st && ub_.count(st->buffer.get()))
        pin_all(st->buffer.get(), "an element written by the scalar unit");
      return;
    }
    const OpDef& def = *op->op;
    const std::string what = "T." + def.name + " at " + op->loc.str();
    // UB region operands, in order; a bit vector (compare's dst, select's mask) has no rows of
    // its own: relate_masks gives it those of the tiles it was compared from.
    std::vector<const BufferRegion*> ub;
    for (size_t i = 0; i < op->args.size(); ++i)
      if (is_ub(op->args[i]) && !masks_.count(op->args[i].region.buffer.get()))
        ub.push_back(&op->args[i].region);
    relate_masks(*op, ub, what);
    switch (def.rows) {
      case RowMap::Copy:
        if (op->args.size() == 2 && op->args[0].is_region() && op->args[1].is_region()) {
          const bool src_ub = is_ub(op->args[0]), dst_ub = is_ub(op->args[1]);
          if (src_ub && dst_ub) return unite_all_dims(op->args[0].region, op->args[1].region, what);
          if (src_ub || dst_ub) {
            const BufferNode* g = op->args[src_ub ? 1 : 0].region.buffer.get();
            gm_copies_.push_back(
                {op->args[src_ub ? 0 : 1].region.buffer.get(), src_ub, workspaces_.count(g) > 0});
          }
          return;
        }
        break;
      case RowMap::RowExpand:
        if (ub.size() == 3) {
          unite_all_dims(*ub[0], *ub[1], what);
          if (ub[2]->buffer->ndim() == 1)
            labels_.unite(ub[2]->buffer.get(), 0, ub[0]->buffer.get(), 0);
          else
            pin_all(ub[2]->buffer.get(), what + " with a row vector of rank > 1");
          return;
        }
        break;
      case RowMap::Broadcast:
        if (ub.size() == 2) {
          const BufferNode* dst = ub[0]->buffer.get();
          const BufferNode* src = ub[1]->buffer.get();
          // A one-dimensional source is a row of dst (its last dimension) or, with axis=1, a
          // column: one value per row (tl/shape_rules.h, broadcast_source_extents).
          const bool column = op->attr_int("axis") == 1;
          if (src->ndim() == 1 && column && dst->ndim() >= 2)
            labels_.unite(src, 0, dst, static_cast<int>(dst->ndim()) - 2);
          else if (src->ndim() == 1 && dst->ndim() >= 1 && !column)
            labels_.unite(src, 0, dst, static_cast<int>(dst->ndim()) - 1);
          else
            unite_all_dims(*ub[0], *ub[1], what);
          return;
        }
        break;
      case RowMap::Reduce:
        if (ub.size() == 2) return relate_reduction(*op, *ub[0], *ub[1], what);
        break;
      case RowMap::Elementwise:
        for (size_t i = 1; i < ub.size(); ++i) unite_all_dims(*ub[0], *ub[i], what);
        return;
      case RowMap::Whole:
      case RowMap::Unset:
        break;
    }
    // Position-dependent, or an operand shape the row map does not cover: no operand is split
    // (bit vectors included).
    for (const TileArg& a : op->args)
      if (is_ub(a)) pin_all(a.region.buffer.get(), what);
  }

  /// A bit mask holds one bit per element of the tile compared into it, and a select picks the
  /// elements of its own tiles by those bits in order: the compared tile and the selecting
  /// tiles are the same rows. Without this a tile compared once before a loop (a per-row mask
  /// or scale) stayed whole on both AIVs while the select over AIV 1's half read the bits of
  /// rows [0, R/2): AIV 1's rows silently took AIV 0's mask (tests/regress).
  void relate_masks(const TileOpNode& op, const std::vector<const BufferRegion*>& ub,
                    const std::string& what) {
    const BufferNode* data = ub.empty() ? nullptr : ub[0]->buffer.get();
    std::vector<const BufferNode*> written;
    for (size_t i = 0; i < op.args.size(); ++i) {
      if (!is_ub(op.args[i]) || !masks_.count(op.args[i].region.buffer.get())) continue;
      const BufferNode* m = op.args[i].region.buffer.get();
      const Access acc = i < op.op->operands.size() ? op.op->operands[i].access : Access::Read;
      if (acc != Access::Read) written.push_back(m);
      if (acc == Access::Write) continue;
      auto it = mask_rows_.find(m);
      if (it == mask_rows_.end()) {
        // Bits of unknown rows: nothing they select from may be split.
        if (data) pin_all(data, "the bit mask '" + m->name + "' of no compare before " + what);
        continue;
      }
      if (!data)
        data = it->second;
      else
        unite_dims(data, it->second, what);
    }
    for (const BufferNode* m : written) {
      if (data)
        mask_rows_[m] = data;
      else
        mask_rows_.erase(m);
    }
  }
  void unite_dims(const BufferNode* a, const BufferNode* b, const std::string& op) {
    if (a->ndim() != b->ndim()) {
      pin_all(a, op + " selects by the bits of a tile of another rank");
      pin_all(b, op + " selects by the bits of a tile of another rank");
      return;
    }
    for (size_t d = 0; d < a->ndim(); ++d)
      labels_.unite(a, static_cast<int>(d), b, static_cast<int>(d));
  }

  /// A reduction over `dim`: the reduced dimension must not be split; the others pair with
  /// the destination's, in order.
  void relate_reduction(const TileOpNode& op, const BufferRegion& src_region,
                        const BufferRegion& dst_region, const std::string& what) {
    const BufferNode* src = src_region.buffer.get();
    const BufferNode* dst = dst_region.buffer.get();
    int64_t dim = op.attr_int("dim");
    const int rank = static_cast<int>(src->ndim());
    if (dim < 0) dim += rank;
    for (int k = 0, j = 0; k < rank; ++k) {
      if (k == dim) {
        labels_.pin(src, k, "a reduction over them (" + what + ")");
        continue;
      }
      if (j < static_cast<int>(dst->ndim())) labels_.unite(src, k, dst, j++);
    }
  }

  /// A region of a split tile: rows [0, R) -> [0, R/2); false if it is not all the rows.
  bool halve(BufferRegion& r) {
    auto it = half_.find(r.buffer.get());
    if (it == half_.end()) return true;
    auto lo = as_const_int(r.ranges[0].min), ext = as_const_int(r.ranges[0].extent);
    if (!lo || *lo != 0 || !ext || *ext != 2 * it->second) return false;
    r.ranges[0].extent = int_imm(it->second);
    return true;
  }

  /// A2's Compare counts in 256-byte granules, and half a row state may not be one: such a
  /// compare runs over the whole tile (its other rows hold nothing either AIV uses), so its
  /// operands keep their size. Every other split tile shrinks to its half.
  bool compare_needs_whole(const TileOpNode& op) {
    if (!op.op->granular_count || target_.compare_align_bytes <= 0 || op.args.size() < 2 ||
        !op.args[1].is_region())
      return false;
    const BufferRegion& src = op.args[1].region;
    auto it = half_.find(src.buffer.get());
    if (it == half_.end()) return false;
    int64_t n = it->second;
    for (size_t d = 1; d < src.ranges.size(); ++d)
      n *= as_const_int(src.ranges[d].extent).value_or(1);
    return (n * dtype_bytes(src.buffer->dtype)) % target_.compare_align_bytes != 0;
  }
  void plan_sizes(const Stmt& work) {
    std::set<const BufferNode*> whole;
    pre_order_visit(work, [&](const Stmt& s) {
      if (auto* op = s.as<TileOpNode>(); op && compare_needs_whole(*op))
        for (const TileArg& a : op->args)
          if (is_ub(a)) whole.insert(a.region.buffer.get());
    });
    for (const auto& [b, h] : half_) {
      if (whole.count(b) || keep_size_.count(b)) continue;
      std::vector<Expr> shape = b->shape;
      shape[0] = int_imm(h);
      shrunk_[b] = BufferNode::make(b->name, b->dtype, shape, b->scope, b->strides, b->address,
                                    b->loc, b->origin, b->channel_slots, b->l2_cache, b->slot);
    }
  }
  BufferRegion resized(BufferRegion r) const {
    if (auto it = shrunk_.find(r.buffer.get()); it != shrunk_.end()) r.buffer = it->second;
    return r;
  }

  Stmt rewrite(const Stmt& s) {
    if (!s.defined()) return s;
    if (auto* a = s.as<AllocateNode>(); a && shrunk_.count(a->buffer.get()))
      return AllocateNode::make(shrunk_.at(a->buffer.get()), a->loc);
    // Work that must happen once per block, not once per AIV: AIV 0 does it.
    if (dev::once_per_block(s))
      return IfNode::make(Expr(kernel_.vid) == Expr(0), s, Stmt(), s->loc);
    if (auto* q = s.as<SeqNode>()) {
      std::vector<Stmt> out;
      for (const Stmt& x : q->stmts) out.push_back(rewrite(x));
      return SeqNode::make(std::move(out), s->loc);
    }
    if (auto* l = s.as<ForNode>(); l && turns_.count(l)) return dev::take_in_turns(*l, kernel_.vid);
    if (auto* l = s.as<ForNode>())
      return ForNode::make(l->var, l->min, l->extent, l->for_kind, l->num_stages, l->skew,
                           rewrite(l->body), l->loc);
    if (auto* n = s.as<IfNode>())
      return IfNode::make(n->cond, rewrite(n->then_case), rewrite(n->else_case), n->loc);
    auto* op = s.as<TileOpNode>();
    if (!op) return s;
    if (op->op->rows == RowMap::Copy && op->args.size() == 2 && op->args[0].is_region() &&
        op->args[1].is_region() && is_ub(op->args[0]) != is_ub(op->args[1]))
      return rewrite_gm_copy(*op, s);
    if (compare_needs_whole(*op)) return s;
    std::vector<TileArg> args = op->args;
    for (TileArg& a : args) {
      if (!a.is_region()) continue;
      if (!halve(a.region)) {
        fallback_ = fmt::format("T.{} at {} works on part of the rows of '{}'", op->op->name,
                                op->loc.str(), a.region.buffer->name);
        return s;
      }
      a.region = resized(a.region);
    }
    return TileOpNode::make(op->op, std::move(args), op->attrs, op->loc);
  }

  /// A GM (or workspace) <-> UB copy: the AIV's rows of a split tile; a whole tile's copy to GM
  /// by AIV 0 alone.
  Stmt rewrite_gm_copy(const TileOpNode& op, const Stmt& self) {
    const int ui = is_ub(op.args[0]) ? 0 : 1, gi = 1 - ui;
    BufferRegion u = op.args[ui].region, g = op.args[gi].region;
    auto it = half_.find(u.buffer.get());
    if (it == half_.end()) {
      if (ui == 0) return IfNode::make(Expr(kernel_.vid) == Expr(0), self, Stmt(), op.loc);
      return self;
    }
    const int64_t h = it->second;
    if (u.ranges.size() > g.ranges.size() || !as_const_int(u.ranges[0].min) ||
        *as_const_int(u.ranges[0].min) != 0) {
      fallback_ = fmt::format("T.copy at {} moves rows of '{}' that do not start at its first row",
                              op.loc.str(), u.buffer->name);
      return self;
    }
    const size_t gd = g.ranges.size() - u.ranges.size();  // the GM dimension of the tile's rows
    // The tile's dimensions are the region's last ones. A copy that pairs them otherwise (a
    // per-row vector copied from a column, W[r0:r0 + R, c]) would move AIV 1's rows along
    // the wrong dimension: refuse it rather than guess.
    for (size_t d = 0; d < u.ranges.size(); ++d) {
      auto ge = as_const_int(g.ranges[gd + d].extent), ue = as_const_int(u.ranges[d].extent);
      if (ge && ue && *ge != *ue) {
        fallback_ = fmt::format(
            "T.copy at {} pairs the dimensions of '{}' with dimensions of '{}' other than its "
            "last {}",
            op.loc.str(), u.buffer->name, g.buffer->name, u.ranges.size());
        return self;
      }
    }
    const Expr rows = u.ranges[0].extent;
    const Expr skip = Expr(kernel_.vid) * int_imm(h);
    const auto whole = as_const_int(rows);
    const bool all_rows = whole && *whole == 2 * h;
    const Expr mine = all_rows ? int_imm(h) : simplify(max(min(rows - skip, int_imm(h)), Expr(0)));
    u.ranges[0].extent = mine;
    g.ranges[gd].min = simplify(g.ranges[gd].min + skip);
    g.ranges[gd].extent = mine;
    std::vector<TileArg> args = op.args;
    args[ui] = resized(u);
    args[gi] = g;
    Stmt copy = TileOpNode::make(op.op, std::move(args), op.attrs, op.loc);
    if (all_rows) return copy;
    return IfNode::make(mine > Expr(0), copy, Stmt(), op.loc);
  }

  const Target& target_;
  const KernelNode& kernel_;
  std::set<const BufferNode*> ub_, workspaces_;
  std::set<const BufferNode*> masks_;  // bit masks (compare's dst, select's mask)
  std::map<const BufferNode*, const BufferNode*> mask_rows_;  // mask -> the tile compared into it
  Labels labels_;
  std::vector<GmCopy> gm_copies_;
  std::set<int> rows_;
  std::map<const BufferNode*, int64_t> half_;
  std::map<const BufferNode*, Buffer> shrunk_;  // split tiles at half their rows
  std::set<const BufferNode*> keep_size_;       // padded row vectors: split, not shrunk
  std::set<const ForNode*> turns_;              // loops the AIVs take in turns
  std::string fallback_;
};

/// Iteration split: when the rows cannot be split, AIV v runs iterations min + 2 k + v of the
/// vector work's loop (a persistent or pipelined tile loop), as expert kernels give each AIV its
/// own tiles. Only where the iterations are independent: every UB tile the loop writes is
/// written before it is read in each iteration and not used after the loop, no GM tensor is
/// both read and written in it, its GM writes of two iterations never overlap, and nothing
/// crosses cores (a channel's mode-2 flags pair one AIC step with both AIVs' steps).
class IterationSplit {
 public:
  IterationSplit(const Target& t, const KernelNode& k, bool channels)
      : target_(t), kernel_(k), channels_(channels) {}

  std::optional<Stmt> run(const Stmt& work, std::string& why) {
    if (channels_) return fail(why, "the vector work exchanges tiles with the cube");
    std::vector<Stmt> top = dev::stmts_of(work);
    int loop = -1;
    for (size_t i = 0; i < top.size(); ++i)
      if (auto* f = top[i].as<ForNode>(); f && f->for_kind != ForKind::Parallel) {
        if (loop >= 0) return fail(why, "the vector work has more than one loop");
        loop = static_cast<int>(i);
      }
    if (loop < 0) return fail(why, "the vector work has no loop");
    const auto& L = *top[static_cast<size_t>(loop)].as<ForNode>();
    const std::vector<Stmt> body = dev::stmts_of(L.body);
    if (auto reason = dependence(L, body, top, static_cast<size_t>(loop)))
      return fail(why, *reason);
    // Both AIVs run what is around the loop: declarations, lets and UB work only (a debug print
    // there is AIV 0's).
    for (const Stmt& s : top)
      if (!s.same_as(top[static_cast<size_t>(loop)]) && !s.as<AllocateNode>() && !s.as<LetNode>() &&
          !(s.as<TileOpNode>() && !writes_gm(s)))
        return fail(why, fmt::format("{} outside its loop", dev::describe(s)));
    for (Stmt& s : top)
      if (!s.same_as(top[static_cast<size_t>(loop)]) && dev::once_per_block(s))
        s = IfNode::make(Expr(kernel_.vid) == Expr(0), s, Stmt(), s->loc);
    // for k in range((extent - vid + 1) // 2): the body at t = min + 2 k + vid.
    Var k(L.var.name() + "_aiv", L.var.dtype());
    const Expr vid = L.var.dtype() == kernel_.vid.dtype() ? Expr(kernel_.vid)
                                                          : cast(L.var.dtype(), Expr(kernel_.vid));
    const Expr two = arith::make_int(L.var.dtype(), 2), one = arith::make_int(L.var.dtype(), 1);
    Stmt split_body =
        arith::substitute(L.body, arith::VarMap{{L.var.node(), L.min + k * two + vid}});
    Expr extent = simplify(floordiv(L.extent - vid + one, two));
    top[static_cast<size_t>(loop)] =
        ForNode::make(k, arith::make_int(L.var.dtype(), 0), extent, L.for_kind, L.num_stages,
                      L.skew, split_body, L.loc);
    loop_ = &L;
    return SeqNode::make(std::move(top), work->loc);
  }

  const ForNode* loop() const { return loop_; }

 private:
  bool writes_gm(const Stmt& s) const {
    bool out = false;
    for (const dev::Touch& t : dev::touches_of(s, target_))
      out = out || (t.write && t.buffer->scope == MemScope::GM);
    return out;
  }

  /// Why the iterations of L depend on each other, if they may.
  std::optional<std::string> dependence(const ForNode& L, const std::vector<Stmt>& body,
                                        const std::vector<Stmt>& top, size_t loop) const {
    std::set<const BufferNode*> gm_read, gm_written;
    std::set<const BufferNode*> ub_written;
    pre_order_visit(L.body, [&](const Stmt& x) {
      if (auto* op = x.as<TileOpNode>(); op && op->op->atomic)
        for (const TileArg& a : op->args)
          if (a.is_region() && a.region.buffer->scope == MemScope::GM)
            gm_read.insert(a.region.buffer.get());
    });
    for (const dev::Touch& t : dev::touches_of(L.body, target_)) {
      if (t.buffer->scope == MemScope::GM) {
        (t.write ? gm_written : gm_read).insert(t.buffer);
      } else if (t.write) {
        ub_written.insert(t.buffer);
      }
    }
    for (const BufferNode* b : gm_written)
      if (gm_read.count(b))
        return fmt::format("its loop both reads and writes (or accumulates into) '{}'", b->name);
    for (const BufferNode* b : ub_written) {
      if (!dev::privatisable(b, body, target_))
        return fmt::format("'{}' carries a value from one iteration of its loop to the next",
                           b->name);
      for (size_t i = loop + 1; i < top.size(); ++i)
        for (const dev::Touch& t : dev::touches_of(top[i], target_))
          if (t.buffer == b) return fmt::format("'{}' is used after its loop", b->name);
    }
    // GM writes: one store per tensor, not in an inner loop, whose regions in two iterations
    // never meet (lets of the body inlined). Two stores to one tensor could meet across
    // iterations (row t + 1 of this one, row t of the next), and so could an inner loop's.
    arith::VarMap lets;
    std::optional<std::string> out;
    std::set<const BufferNode*> stored;
    std::function<void(const Stmt&, bool)> walk = [&](const Stmt& x, bool inner) {
      if (out || !x.defined()) return;
      if (auto* q = x.as<SeqNode>()) {
        for (const Stmt& y : q->stmts) walk(y, inner);
      } else if (auto* l = x.as<LetNode>()) {
        lets[l->var.node()] = arith::substitute(l->value, lets);
      } else if (auto* f = x.as<ForNode>()) {
        walk(f->body, true);
      } else if (auto* n = x.as<IfNode>()) {
        walk(n->then_case, inner);
        walk(n->else_case, inner);
      } else if (auto* op = x.as<TileOpNode>()) {
        for (const dev::Touch& t : dev::touches_of(x, target_)) {
          if (!t.write || t.buffer->scope != MemScope::GM) continue;
          if (inner || !stored.insert(t.buffer).second || !apart(*op, t.buffer, lets, L))
            out = fmt::format("{} may write the same part of '{}' in two iterations of its loop",
                              dev::describe(x), t.buffer->name);
        }
      } else if (auto* st = x.as<StoreNode>(); st && st->buffer->scope == MemScope::GM) {
        // A scalar store: one element, at its indices.
        BufferRegion r{st->buffer, {}};
        for (const Expr& i : st->indices) r.ranges.push_back({i, Expr(1)});
        if (inner || !stored.insert(st->buffer.get()).second || !apart_region(r, lets, L))
          out = fmt::format("{} may write the same part of '{}' in two iterations of its loop",
                            dev::describe(x), st->buffer->name);
      }
    };
    walk(L.body, false);
    return out;
  }

  /// Whether op's regions of GM tensor b in two iterations never meet: along some dimension the
  /// start moves by c per iteration (affine in the loop variable, lets inlined), and |c| is at
  /// least every extent the region can have.
  static bool apart(const TileOpNode& op, const BufferNode* b, const arith::VarMap& lets,
                    const ForNode& L) {
    for (const TileArg& a : op.args)
      if (a.is_region() && a.region.buffer.get() == b && !apart_region(a.region, lets, L))
        return false;
    return true;
  }
  static bool apart_region(const BufferRegion& region, const arith::VarMap& lets,
                           const ForNode& L) {
    if (region.ranges.empty() || region.partial()) return false;
    for (const Range& r : region.ranges) {
      const Expr mn = arith::substitute(r.min, lets), ext = arith::substitute(r.extent, lets);
      auto moved = [&](int64_t by) {
        return arith::constant_difference(
            arith::substitute(mn, {{L.var.node(), L.var + arith::make_int(L.var.dtype(), by)}}),
            mn);
      };
      auto c1 = moved(1), c2 = moved(2);
      if (!c1 || !c2 || *c2 != 2 * *c1 || *c1 == 0) continue;
      if (arith::bound(ext).hi <= std::abs(*c1)) return true;
    }
    return false;
  }

  std::optional<Stmt> fail(std::string& why, const std::string& reason) {
    why = reason;
    return std::nullopt;
  }

  const Target& target_;
  const KernelNode& kernel_;
  const bool channels_;
  const ForNode* loop_ = nullptr;
};

}  // namespace

/// The first rule `work`, in place of the Vector scope `scope`, breaks that `f` keeps ("" if
/// none): a split must not break a rule the kernel keeps (alignment of the halved ops, ...);
/// what the kernel breaks anyway, verify_lowered reports.
static std::string new_violation(const PrimFunc& f, const std::vector<Stmt>& top, const Stmt& scope,
                                 const Stmt& work, const Target& target) {
  std::set<std::string> before;
  for (const Diagnostic& d : verify(f, target)) before.insert(d.str());
  std::vector<Stmt> trial = top;
  for (Stmt& x : trial)
    if (x.same_as(scope)) x = ScopeNode::make(CoreKind::Vector, work, scope->loc);
  for (const Diagnostic& d : verify(dev::with_kernel_body(f, trial), target))
    if (d.rule != "developer-loop-in-expert-mode" && !before.count(d.str())) return d.str();
  return "";
}

PrimFunc split_aiv(const PrimFunc& f, const Target& target, const RemarkSink& remark) {
  const KernelNode* k = dev::find_kernel(f);
  if (!k || !k->vid.defined()) return f;
  std::vector<Stmt> top = dev::stmts_of(k->body);
  bool changed = false;
  for (Stmt& s : top) {
    auto* scope = s.as<ScopeNode>();
    const IfNode* on_aiv0 = scope ? dev::aiv0_branch(*scope, *k) : nullptr;
    if (!on_aiv0) continue;
    std::string why;
    AivSplit split(target, *k);
    std::optional<Stmt> both = split.run(on_aiv0->then_case, why);
    if (both)
      if (std::string broken = new_violation(f, top, s, *both, target); !broken.empty()) {
        why = "the split kernel would break a rule: " + broken;
        both.reset();
      }
    if (!both) {
      // Not by rows: by iterations, when the vector work is one loop of independent tiles.
      std::string why_iterations;
      IterationSplit by_iterations(target, *k, split.has_channels());
      std::optional<Stmt> alternate = by_iterations.run(on_aiv0->then_case, why_iterations);
      if (alternate)
        if (std::string broken = new_violation(f, top, s, *alternate, target); !broken.empty()) {
          why_iterations = "the split kernel would break a rule: " + broken;
          alternate.reset();
        }
      if (!alternate) {
        dev::remark(remark, "split_aiv", on_aiv0->loc,
                    fmt::format("kernel {}: threads = 2, but the vector work stays on AIV 0: {}; "
                                "nor by iterations: {}",
                                f->name, why, why_iterations));
        continue;
      }
      dev::remark(
          remark, "split_aiv", by_iterations.loop()->loc,
          fmt::format(
              "kernel {}: threads = 2 and the rows cannot be split ({}): the AIVs take alternate "
              "iterations of `for {}`",
              f->name, why, by_iterations.loop()->var.name()));
      both = alternate;
    }
    s = ScopeNode::make(CoreKind::Vector, *both, s->loc);
    changed = true;
  }
  return changed ? dev::with_kernel_body(f, std::move(top)) : f;
}

}  // namespace tl
