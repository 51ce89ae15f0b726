// mask_tails (developer mode, after lower_cube_ops, before legalize_copies): the stale part of a
// tile filled by a clipped copy never reaches a result (docs/developer_mode.md, "Tails").
//
// legalize_copies clips every GM copy that may pass its tensor's end (dev::clip_copy), so on
// those iterations its tile holds stale data past the tensor, as does every tile computed from
// it element by element (harmless where only computed on: copies out are clipped alike). This
// pass makes it harmless everywhere else, exactly, on the clipped iterations only:
//   - a reduction over a stale dimension reads the valid part (its region is narrowed);
//   - an element loop that accumulates a stale tile into a carried one (`acc = acc + f(x)`)
//     updates only the valid part: a stale leading dimension narrows the loop, a stale last
//     dimension keeps the old value past the valid columns (a select, only when clipped);
//   - an elementwise op accumulating into its destination (`T.tile.add(acc, acc, y)`), a
//     reduction it cannot narrow, a sort or top-k and a crossing into the cube's memory first
//     fill the stale part of what they read with their identity (0 for sums and products'
//     terms, -inf for max and sorts, +inf for min);
//   - where the valid part of a tile is not known at compile time (a branch or a loop leaves
//     it in more than one way) and it reaches one of these or a copy to GM, or a copy to GM
//     would store part of the stale rows, the error names the tile, the clipped copy and the
//     statement, and says how to define the tail (a pad_value on the copy).
// A copy with the author's pad_value is not stale (legalize_copies fills the tile); expert
// kernels are returned unchanged.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>

#include "bitmask_rows.h"
#include "developer.h"
#include "tail_identity.h"
#include "tile_bounds.h"
#include "tl/arith.h"
#include "tl/ir_equal.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/pass.h"
#include "tl/printer.h"

namespace tl {
namespace {

/// What is stale in a UB tile: per dimension the valid extent from 0 (undefined: all of it), or
/// when `known` is false some part the compiler cannot name.
struct Stale {
  std::vector<Expr> valid;
  bool known = true;
  SourceLoc from;                // the clipped copy it comes from
  std::optional<double> filled;  // the stale part holds this value (an identity filled in)
  std::string why;               // unknown: what made it so
};
using StaleMap = std::map<const BufferNode*, Stale>;

/// Stale somewhere the compiler cannot name, since the clipped copy at `from`.
Stale unknown_from(const SourceLoc& from, std::string why) {
  Stale s;
  s.known = false;
  s.from = from;
  s.why = std::move(why);
  return s;
}

bool same_stale(const Stale& a, const Stale& b) {
  if (a.known != b.known || a.valid.size() != b.valid.size() || a.filled != b.filled) return false;
  for (size_t d = 0; d < a.valid.size(); ++d) {
    if (a.valid[d].defined() != b.valid[d].defined()) return false;
    if (a.valid[d].defined() && !structural_equal(a.valid[d], b.valid[d])) return false;
  }
  return true;
}

/// Control flow joins: a tile keeps its stale part where every path agrees, else it is unknown.
StaleMap join(const StaleMap& a, const StaleMap& b) {
  StaleMap out;
  for (const auto& [buf, s] : a) {
    auto it = b.find(buf);
    if (it != b.end() && same_stale(s, it->second))
      out[buf] = s;
    else
      out[buf] = unknown_from(s.from, "a branch or a loop leaves it in more than one way");
  }
  for (const auto& [buf, s] : b)
    if (!a.count(buf))
      out[buf] = unknown_from(s.from, "a branch or a loop leaves it in more than one way");
  return out;
}

bool same_map(const StaleMap& a, const StaleMap& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [buf, s] : a) {
    auto it = b.find(buf);
    if (it == b.end() || !same_stale(s, it->second)) return false;
  }
  return true;
}

/// The stale part of values computed from tiles stale in `a` and `b` (same shape): the union.
Stale combine(const Stale& a, const Stale& b) {
  if (!a.known || !b.known || a.valid.size() != b.valid.size())
    return !a.known ? a : !b.known ? b : unknown_from(a.from, "tiles of different shapes meet");
  Stale out = a;
  out.filled.reset();
  for (size_t d = 0; d < a.valid.size(); ++d) {
    if (!b.valid[d].defined()) continue;
    if (!out.valid[d].defined())
      out.valid[d] = b.valid[d];
    else if (!dev::same_extent(out.valid[d], b.valid[d]))
      out.valid[d] = simplify(min(out.valid[d], b.valid[d]));
  }
  return out;
}

/// Not stale, or stale in known leading dimensions only (bitmask_rows.h).
bool rows_only(const Stale* s) {
  return !s || (s->known && (s->valid.empty() || !s->valid.back().defined()));
}

class TailMasker : public IRMutator {
 public:
  TailMasker(dev::ViewBases views, std::unordered_set<std::string> taken)
      : views_(std::move(views)), taken_(std::move(taken)) {}

 protected:
  Stmt mutate_(const KernelNode* n, const Stmt& self) override {
    bounds_.kernel(*n);
    return IRMutator::mutate_(n, self);
  }

  Stmt mutate_(const LetNode* n, const Stmt& self) override {
    bounds_.let(*n);
    return IRMutator::mutate_(n, self);
  }

  Stmt mutate_(const AllocateNode* n, const Stmt& self) override {
    if (!n->is_view()) stale_.erase(n->buffer.get());
    return self;
  }

  Stmt mutate_(const IfNode* n, const Stmt& self) override {
    const StaleMap before = stale_;
    const auto vars = bounds_.vars;
    bounds_.refine(n->cond);
    Stmt t = mutate(n->then_case);
    bounds_.vars = vars;
    const StaleMap after_then = stale_;
    stale_ = before;
    Stmt e = n->else_case.defined() ? mutate(n->else_case) : n->else_case;
    stale_ = join(after_then, stale_);
    if (t.same_as(n->then_case) && e.same_as(n->else_case)) return self;
    return IfNode::make(n->cond, t, e, n->loc);
  }

  Stmt mutate_(const ForNode* n, const Stmt& self) override {
    bounds_.loop(*n);
    if (n->for_kind == ForKind::Parallel) return element_loop(*n, self);
    // A loop's body starts from what the kernel held before it or at the end of an iteration:
    // iterate to the fixed point (the lattice is absent < known < unknown, so it is reached in
    // a few rounds), then rewrite the body once from it.
    const StaleMap entry = stale_;
    StaleMap head = entry;
    for (int round = 0; round < 8; ++round) {
      stale_ = head;
      dry_run(n->body);
      StaleMap next = join(entry, stale_);
      if (same_map(next, head)) break;
      head = std::move(next);
    }
    stale_ = head;
    Stmt body = mutate(n->body);
    stale_ = join(head, stale_);
    if (body.same_as(n->body)) return self;
    return ForNode::make(n->var, n->min, n->extent, n->for_kind, n->num_stages, n->skew, body,
                         n->loc);
  }

  Stmt mutate_(const StoreNode* n, const Stmt& self) override {
    // A scalar store writes one element: the tile's stale part is no longer a known rectangle.
    written_part(n->buffer, false);
    return self;
  }

  Stmt mutate_(const TileOpNode* n, const Stmt& self) override {
    const OpDef& op = *n->op;
    if (&op == &ops::copy()) return copy(*n, self);
    if (&op == &ops::atomic_add()) {
      check_store(self, n->args[1].region, n->args[0].region);
      return self;
    }
    if (op.rows == RowMap::Reduce) return reduction(*n, self);
    if (op.elementwise() || op.rows == RowMap::RowExpand) return elementwise(*n, self);
    if (dev::bits_pair_with_rows(*n, [&](const Buffer& b) { return rows_only(stale_of(b)); }))
      return elementwise(*n, self);  // a compare / select whose bits pair with the data's rows
    // A whole-tile op with an identity (sort, topk): its source's stale part filled with it.
    if (op.rows == RowMap::Whole && op.identity->has_value() && op.unit == OpUnit::Vector)
      return fill_then(*n, self, {op_operand(*n, "src")});
    if (n->op->unit == OpUnit::Debug) return self;
    // Any other op (gather, broadcast, transpose, compare, select, merge_sort, ...) moves
    // elements: what it writes from a stale tile is stale somewhere the compiler cannot name.
    bool reads_stale = false;
    for (size_t i = 0; i < n->args.size() && i < n->op->operands.size(); ++i)
      if (n->args[i].is_region() && n->op->operands[i].access != Access::Write &&
          stale_of(n->args[i].region.buffer))
        reads_stale = true;
    for (size_t i = 0; i < n->args.size() && i < n->op->operands.size(); ++i) {
      if (!n->args[i].is_region() || n->op->operands[i].access == Access::Read) continue;
      const BufferRegion& w = n->args[i].region;
      if (reads_stale)
        set_stale(w.buffer, unknown_from(first_stale_from(*n), fmt::format("{} moves its elements",
                                                                           dev::describe(self))));
      else
        written_part(w.buffer, dev::whole_region(w));
    }
    return self;
  }

 private:
  // ---- state -------------------------------------------------------------------------------

  const BufferNode* key(const Buffer& b) const { return views_.base(b.get()); }
  const Stale* stale_of(const Buffer& b) const {
    auto it = stale_.find(key(b));
    return it == stale_.end() ? nullptr : &it->second;
  }
  void set_stale(const Buffer& b, Stale s) {
    if (b->scope == MemScope::UB) stale_[key(b)] = std::move(s);
  }
  /// `b` written with valid data: all of it (`all`), or a part (a stale tile's part: unknown).
  void written_part(const Buffer& b, bool all) {
    auto it = stale_.find(key(b));
    if (it == stale_.end()) return;
    if (all)
      stale_.erase(it);
    else
      it->second = unknown_from(it->second.from, "a part of it was written since");
  }
  SourceLoc first_stale_from(const TileOpNode& n) const {
    for (const auto& a : n.args)
      if (a.is_region())
        if (const Stale* s = stale_of(a.region.buffer)) return s->from;
    return {};
  }

  /// Runs the rewrite for its effect on the state only (a loop's fixed point): no errors, and
  /// the names it takes are given back.
  void dry_run(const Stmt& body) {
    const bool was = dry_;
    const auto taken = taken_;
    const auto vars = bounds_.vars;
    dry_ = true;
    mutate(body);
    dry_ = was;
    taken_ = taken;
    bounds_.vars = vars;
  }

  template <typename... Args>
  void fail(const SourceLoc& loc, fmt::format_string<Args...> f, Args&&... args) {
    if (!dry_) user_error(loc, f, std::forward<Args>(args)...);
  }

  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int i = 1; taken_.count(name); ++i) name = fmt::format("{}_{}", base, i);
    taken_.insert(name);
    return name;
  }

  static std::string stale_since(const Stale& s) {
    return fmt::format(
        "holds stale data past its valid part (the part past a tensor's end of the tile {})",
        s.from.known() ? fmt::format("the clipped copy at {} filled", s.from.str())
                       : std::string("a clipped copy filled"));
  }
  /// The error for a tile whose stale part is not known where `self` needs it.
  void unknown_part(const Stmt& self, const Buffer& b, const Stale& s, const char* what) {
    fail(self->loc,
         "{} {} '{}', which {}, and which part is not known here ({}). Give the copy a pad_value "
         "(T.copy(..., pad_value=v): the tile then holds v past the tensor), or fill the tile "
         "before this "
         "statement (docs/developer_mode.md, \"Tails\")",
         dev::describe(self), what, b->name, stale_since(s), s.why);
  }

  /// Whether the tile clips on this iteration: some valid extent is below the tile's.
  Expr clipped_now(const Buffer& b, const Stale& s) const {
    Expr any;
    for (size_t d = 0; d < s.valid.size() && d < b->shape.size(); ++d) {
      if (!s.valid[d].defined()) continue;
      Expr c = s.valid[d] < b->shape[d];
      any = any.defined() ? (any || c) : c;
    }
    return any.defined() ? simplify(any) : Expr(false);
  }

  /// `op` guarded by `cond` (dropped when the condition is false, unguarded when it is true).
  static Stmt guarded(const Expr& cond, Stmt op, Stmt otherwise, const SourceLoc& loc) {
    if (auto c = as_const_int(cond)) return *c ? op : otherwise;
    return IfNode::make(cond, std::move(op), std::move(otherwise), loc);
  }

  /// Fills the stale part of `b` with `value`, only on the iterations it clips: a fill of the
  /// stale rows when only the leading dimension clips (rows start on 32-byte boundaries), else
  /// an element loop that keeps the valid part and writes `value` elsewhere (vectorised later).
  Stmt fill_stale(const Buffer& b, const Stale& s, double value, const SourceLoc& loc) {
    const size_t nd = b->shape.size();
    Expr v = dev::constant_of(b->dtype, value);
    bool rows_only = nd >= 2 && s.valid[0].defined();
    for (size_t d = 1; d < nd; ++d) rows_only = rows_only && !s.valid[d].defined();
    if (rows_only) {
      BufferRegion r = BufferRegion::full(b);
      r.ranges[0] = {s.valid[0], simplify(b->shape[0] - s.valid[0])};
      return guarded(clipped_now(b, s), make_tile_op(ops::tile::fill(), {r, v}, {}, loc), Stmt(),
                     loc);
    }
    std::vector<Var> vars;
    std::vector<Expr> idx;
    for (size_t d = 0; d < nd; ++d) {
      vars.emplace_back(fresh(fmt::format("tail{}", d)));
      idx.push_back(vars.back());
    }
    Expr value_at = b.load(idx);
    for (size_t d = nd; d-- > 0;)
      if (s.valid[d].defined()) value_at = select(Expr(vars[d]) < s.valid[d], value_at, v);
    Stmt body = StoreNode::make(b, idx, value_at, loc);
    for (size_t d = nd; d-- > 0;)
      body = ForNode::make(vars[d], 0, b->shape[d], ForKind::Parallel, 0, body, loc);
    return guarded(clipped_now(b, s), body, Stmt(), loc);
  }

  /// Fills the stale part of each stale tile `reads` names with the op's identity, then runs
  /// the op (which now reads valid data only).
  Stmt fill_then(const TileOpNode& n, const Stmt& self, std::vector<const TileArg*> reads) {
    std::vector<Stmt> out;
    for (const TileArg* a : reads) {
      if (!a || !a->is_region()) continue;
      const Buffer& b = a->region.buffer;
      const Stale* s = stale_of(b);
      if (!s) continue;
      if (!s->known) {
        unknown_part(self, b, *s, "reads");
        continue;
      }
      const std::optional<double>& id = n.op->identity;
      if (!id) {
        fail(
            n.loc,
            "{} reads '{}', which {}; the op has no value that leaves its result unchanged, so the "
            "stale part cannot be masked. Give the copy a pad_value (T.copy(..., pad_value=v)) "
            "(docs/developer_mode.md, \"Tails\")",
            dev::describe(self), b->name, stale_since(*s));
        continue;
      }
      if (s->filled == id) continue;  // holds this identity already
      out.push_back(fill_stale(b, *s, *id, n.loc));
      Stale now = *s;
      now.filled = *id;
      set_stale(b, now);  // still stale for what is computed from it, but holding the identity
    }
    if (out.empty()) return self;
    out.push_back(self);
    return SeqNode::make(std::move(out), n.loc);
  }

  // ---- copies ------------------------------------------------------------------------------

  Stmt copy(const TileOpNode& n, const Stmt& self) {
    if (n.args.size() < 2 || !n.args[0].is_region() || !n.args[1].is_region()) return self;
    const BufferRegion& src = n.args[0].region;
    const BufferRegion& dst = n.args[1].region;
    const MemScope ss = src.buffer->scope, ds = dst.buffer->scope;
    if (ss == MemScope::GM && ds == MemScope::UB) {
      auto c = dev::clip_copy(src, dst, bounds_);
      if (c && c->clipped && !n.attr_bool("pad") && dev::whole_region(dst)) {
        Stale s;
        s.valid.resize(dst.ranges.size());
        s.from = n.loc;
        for (size_t d = 0; d < s.valid.size(); ++d)
          if (!c->tile.ranges[d].extent.same_as(dst.ranges[d].extent))
            s.valid[d] = c->tile.ranges[d].extent;
        set_stale(dst.buffer, std::move(s));
      } else if (c && c->clipped && !n.attr_bool("pad")) {
        set_stale(dst.buffer, unknown_from(n.loc, "the clipped copy fills only part of it"));
      } else {
        written_part(dst.buffer, dev::whole_region(dst));
      }
      return self;
    }
    if (ds == MemScope::GM) {
      check_store(self, src, dst);
      return self;
    }
    const Stale* s = stale_of(src.buffer);
    if (ds == MemScope::L1 && s) return fill_then_cube(n, self);
    if (ds != MemScope::UB) return self;
    if (!s) {
      written_part(dst.buffer, dev::whole_region(dst));
    } else if (dev::whole_region(dst) && dev::whole_region(src) &&
               src.ranges.size() == dst.ranges.size()) {
      set_stale(dst.buffer, *s);
    } else {
      set_stale(dst.buffer, unknown_from(s->from, "it was copied in part from a stale tile"));
    }
    return self;
  }

  /// A UB tile crossing into the cube's memory (a gemm operand): a stale element would enter
  /// every product along K, so the stale part is zeroed first.
  Stmt fill_then_cube(const TileOpNode& n, const Stmt& self) {
    const Buffer& b = n.args[0].region.buffer;
    const Stale* s = stale_of(b);
    if (!s->known) {
      unknown_part(self, b, *s, "moves");
      return self;
    }
    if (s->filled && *s->filled == 0.0) return self;
    Stmt fill = fill_stale(b, *s, 0.0, n.loc);
    Stale now = *s;
    now.filled = 0.0;
    set_stale(b, now);
    return SeqNode::make({fill, self}, n.loc);
  }

  /// A copy to GM (or an atomic add) of a stale tile stores only its valid part: the part it
  /// stores, clipped as legalize_copies will clip it, must lie inside the valid extents.
  void check_store(const Stmt& self, const BufferRegion& src, const BufferRegion& gm) {
    const Stale* s = stale_of(src.buffer);
    if (!s || src.buffer->scope != MemScope::UB) return;
    if (!s->known) {
      unknown_part(self, src.buffer, *s, "stores");
      return;
    }
    auto c = dev::clip_copy(gm, src, bounds_);
    const BufferRegion& stored = c ? c->tile : src;
    for (size_t d = 0; d < s->valid.size() && d < stored.ranges.size(); ++d) {
      if (!s->valid[d].defined()) continue;
      const Expr end = simplify(stored.ranges[d].min + stored.ranges[d].extent);
      if (dev::same_extent(end, s->valid[d])) continue;
      if (arith::bound(simplify(s->valid[d] - end), bounds_.vars).lo >= 0) continue;
      fail(self->loc,
           "{} may store elements of '{}' past its valid part: '{}' {}, valid below {} in "
           "dimension {}, and this copy stores up to {}. Copy out the valid part only, or give "
           "that copy "
           "a pad_value (docs/developer_mode.md, \"Tails\")",
           dev::describe(self), src.buffer->name, src.buffer->name, stale_since(*s),
           print(s->valid[d]), d, print(end));
      return;
    }
  }

  // ---- tile ops that combine elements --------------------------------------------------------

  /// A reduction over a stale dimension reads the valid part; one that accumulates into its
  /// destination (clear=False) or cannot be narrowed reads a tile whose stale part holds the
  /// reduction's identity.
  Stmt reduction(const TileOpNode& n, const Stmt& self) {
    const TileArg* src = op_operand(n, "src");
    const TileArg* dst = op_operand(n, "dst");
    if (!src || !dst || !src->is_region() || !dst->is_region()) return self;
    const BufferRegion& r = src->region;
    const Stale* s = stale_of(r.buffer);
    if (!s) {
      if (n.attr_bool("clear")) written_part(dst->region.buffer, dev::whole_region(dst->region));
      return self;
    }
    const int64_t nd = static_cast<int64_t>(r.ranges.size());
    int64_t dim = n.attr_int("dim");
    if (dim < 0) dim += nd;
    const bool narrowable = s->known && n.attr_bool("clear") && dim >= 0 && dim < nd &&
                            static_cast<int64_t>(s->valid.size()) == nd && dev::whole_region(r);
    if (!narrowable) {
      Stmt out = fill_then(n, self, {src});
      if (n.attr_bool("clear")) written_part(dst->region.buffer, dev::whole_region(dst->region));
      return out;
    }
    // The destination keeps the source's other stale dimensions.
    Stale out;
    out.from = s->from;
    bool any = false;
    for (int64_t d = 0; d < nd; ++d)
      if (d != dim) {
        out.valid.push_back(s->valid[d]);
        any = any || s->valid[d].defined();
      }
    if (any && dst->region.ranges.size() == out.valid.size() && dev::whole_region(dst->region))
      set_stale(dst->region.buffer, out);
    else if (any)
      set_stale(dst->region.buffer,
                unknown_from(s->from, fmt::format("{} writes part of it", dev::describe(self))));
    else
      written_part(dst->region.buffer, dev::whole_region(dst->region));
    if (!s->valid[dim].defined()) return self;
    std::vector<TileArg> args = n.args;
    for (auto& a : args)
      if (a.is_region() && a.region.buffer.same_as(r.buffer))
        a.region.ranges[dim].extent = s->valid[dim];
    return TileOpNode::make(n.op, std::move(args), n.attrs, n.loc);
  }

  /// An elementwise op: its result is stale where a source is. One that accumulates into its
  /// destination (the destination is also a source) must not let another source's stale part
  /// into the destination's valid part: that source's stale part holds the op's identity first.
  Stmt elementwise(const TileOpNode& n, const Stmt& self) {
    const BufferRegion* dst = nullptr;
    std::vector<const TileArg*> srcs;
    for (size_t i = 0; i < n.args.size(); ++i) {
      if (!n.args[i].is_region()) continue;
      if (!dst)
        dst = &n.args[i].region;  // the destination comes first
      else
        srcs.push_back(&n.args[i]);
    }
    if (!dst) return self;
    const bool row_expand = n.op->name.rfind("tile.row_expand_", 0) == 0;
    bool accumulates = false;
    for (const TileArg* a : srcs)
      accumulates = accumulates || key(a->region.buffer) == key(dst->buffer);
    const Stale* own = stale_of(dst->buffer);
    std::optional<Stale> result = own && accumulates ? std::optional<Stale>(*own) : std::nullopt;
    if (result) result->filled.reset();  // the op changes what the stale part holds
    std::vector<const TileArg*>
        into_valid;  // sources whose stale part would enter dst's valid part
    for (const TileArg* a : srcs) {
      if (key(a->region.buffer) == key(dst->buffer)) continue;
      const Stale* s = stale_of(a->region.buffer);
      if (!s) continue;
      Stale mapped = *s;
      if (row_expand && a == srcs.back() && s->known) {
        // The per-row operand: its stale rows are the destination's stale rows.
        mapped.valid.assign(dst->ranges.size(), Expr());
        if (!s->valid.empty() && !dst->ranges.empty()) mapped.valid[0] = s->valid[0];
      }
      if (accumulates && !(own && covers(*own, mapped))) {
        into_valid.push_back(a);
        continue;
      }
      result = result ? combine(*result, mapped) : mapped;
    }
    if (!into_valid.empty()) {
      Stmt out = fill_then(n, self, into_valid);
      return out;
    }
    if (!dev::whole_region(*dst)) {
      if (result)
        set_stale(dst->buffer, unknown_from(result->from, fmt::format("{} writes part of it",
                                                                      dev::describe(self))));
      else
        written_part(dst->buffer, false);
    } else if (result) {
      set_stale(dst->buffer, *result);
    } else {
      written_part(dst->buffer, true);
    }
    return self;
  }

  /// Every stale element of `s` is stale in `own` too (the destination's stale part covers it).
  static bool covers(const Stale& own, const Stale& s) {
    if (!own.known || !s.known || own.valid.size() != s.valid.size()) return false;
    for (size_t d = 0; d < s.valid.size(); ++d) {
      if (!s.valid[d].defined()) continue;
      if (!own.valid[d].defined() || !dev::same_extent(own.valid[d], s.valid[d])) return false;
    }
    return true;
  }

  // ---- element loops -----------------------------------------------------------------------

  Stmt element_loop(const ForNode& f, const Stmt& self);

  dev::ViewBases views_;
  std::unordered_set<std::string> taken_;
  dev::Bounds bounds_;
  StaleMap stale_;
  bool dry_ = false;
};

const ForNode* single_parallel_child(const ForNode& f) {
  Stmt b = f.body;
  if (const auto* q = b.as<SeqNode>(); q && q->stmts.size() == 1) b = q->stmts[0];
  const auto* inner = b.as<ForNode>();
  return inner && inner->for_kind == ForKind::Parallel ? inner : nullptr;
}

/// min(a, b), without the outer min when b is already min(x, a) (a clipped tile extent).
Expr at_most(const Expr& a, const Expr& b) {
  if (const auto* m = b.as<BinaryNode>();
      m && m->op == BinOp::Min && (dev::same_extent(m->a, a) || dev::same_extent(m->b, a)))
    return b;
  return simplify(min(a, b));
}

/// `body` with each store in `to` given a new value.
Stmt with_store_values(const Stmt& body, const std::map<const StoreNode*, Expr>& to) {
  struct Rewrite : IRMutator {
    const std::map<const StoreNode*, Expr>& to;
    explicit Rewrite(const std::map<const StoreNode*, Expr>& t) : to(t) {}
    Stmt mutate_(const StoreNode* n, const Stmt& self) override {
      auto it = to.find(n);
      return it == to.end() ? self : StoreNode::make(n->buffer, n->indices, it->second, n->loc);
    }
  } rewrite(to);
  return rewrite.mutate(body);
}

/// An element loop nest (Parallel loops, each the only statement of the one above): its stores
/// take the stale part of the tiles they load; one that accumulates (its buffer is loaded in
/// the nest) keeps its old value wherever a loaded tile is stale, on clipped iterations only.
Stmt TailMasker::element_loop(const ForNode& f, const Stmt& self) {
  std::vector<const ForNode*> nest = {&f};
  while (const ForNode* inner = single_parallel_child(*nest.back())) {
    bounds_.loop(*inner);
    nest.push_back(inner);
  }
  std::vector<const StoreNode*> stores;
  std::vector<const LoadNode*> loads;
  pre_order_visit(
      f.body,
      [&](const Stmt& st) {
        if (const auto* store = st.as<StoreNode>()) stores.push_back(store);
      },
      [&](const Expr& e) {
        if (const auto* ld = e.as<LoadNode>()) loads.push_back(ld);
      });
  auto nest_level = [&](const Expr& e) -> int {
    const auto* v = e.as<VarNode>();
    for (size_t k = 0; v && k < nest.size(); ++k)
      if (nest[k]->var.node() == v) return static_cast<int>(k);
    return -1;
  };
  // Conditions under which every stale tile a store loads is read at a valid element.
  std::map<const StoreNode*, std::vector<Expr>> masks;
  std::vector<Expr> clipped;  // on which iterations the masks matter
  std::map<const StoreNode*, std::vector<Buffer>> stale_srcs;  // the stale tiles each reads
  for (const StoreNode* st : stores) {
    if (st->buffer->scope != MemScope::UB) continue;
    const bool accumulates = std::any_of(loads.begin(), loads.end(), [&](const LoadNode* l) {
      return key(l->buffer) == key(st->buffer);
    });
    bool whole_store =
        st->indices.size() == nest.size() && st->indices.size() == st->buffer->shape.size();
    for (size_t d = 0; whole_store && d < nest.size(); ++d) {
      auto mn = as_const_int(nest[d]->min);
      whole_store = nest_level(st->indices[d]) == static_cast<int>(d) && mn && *mn == 0 &&
                    dev::same_extent(nest[d]->extent, st->buffer->shape[d]);
    }
    const Stale* own = stale_of(st->buffer);
    std::optional<Stale> result = own && accumulates ? std::optional<Stale>(*own) : std::nullopt;
    if (own && accumulates) {
      Stale changed = *own;
      changed.filled.reset();  // the loop changes what the stale part holds
      set_stale(st->buffer, changed);
    }
    for (const LoadNode* l : loads) {
      if (key(l->buffer) == key(st->buffer)) continue;
      const Stale* s = stale_of(l->buffer);
      if (!s) continue;
      if (!s->known) {
        if (accumulates) unknown_part(self, l->buffer, *s, "accumulates");
        result = *s;
        continue;
      }
      // The load's stale dimensions on the store's dimensions (through the nest's variables).
      Stale mapped;
      mapped.valid.resize(st->indices.size());
      mapped.from = s->from;
      bool maps = true;
      for (size_t d = 0; d < s->valid.size() && d < l->indices.size(); ++d) {
        if (!s->valid[d].defined()) continue;
        const int k = nest_level(l->indices[d]);
        int sd = -1;
        for (size_t j = 0; k >= 0 && j < st->indices.size(); ++j)
          if (nest_level(st->indices[j]) == k) sd = static_cast<int>(j);
        if (sd < 0)
          maps = false;
        else
          mapped.valid[sd] = mapped.valid[sd].defined()
                                 ? simplify(min(mapped.valid[sd], s->valid[d]))
                                 : s->valid[d];
      }
      if (accumulates && !(own && maps && covers(*own, mapped))) {
        auto& srcs = stale_srcs[st];
        if (std::none_of(srcs.begin(), srcs.end(),
                         [&](const Buffer& b) { return b.same_as(l->buffer); }))
          srcs.push_back(l->buffer);
        for (size_t d = 0; d < s->valid.size() && d < l->indices.size(); ++d) {
          if (!s->valid[d].defined()) continue;
          Expr c = l->indices[d] < s->valid[d];
          auto& m = masks[st];
          if (std::none_of(m.begin(), m.end(),
                           [&](const Expr& x) { return structural_equal(x, c); }))
            m.push_back(c);
          Expr when = s->valid[d] < l->buffer->shape[d];
          if (std::none_of(clipped.begin(), clipped.end(),
                           [&](const Expr& x) { return structural_equal(x, when); }))
            clipped.push_back(when);
        }
        continue;
      }
      if (!maps) mapped = unknown_from(s->from, "an element loop reads it at other positions");
      result = result ? combine(*result, mapped) : mapped;
    }
    if (accumulates) continue;  // its own stale part is unchanged
    if (!whole_store) {
      // Part written from tiles stale on dimensions the store walks as the loads do (RoPE's two
      // halves, issue 29): stale at most where it was or the sources are, their union.
      const Stale* now = stale_of(st->buffer);
      if (result && result->known && (!now || now->known))
        set_stale(st->buffer, now ? combine(*now, *result) : *result);
      else if (result)
        set_stale(st->buffer, unknown_from(result->from, "an element loop writes part of it"));
      else
        written_part(st->buffer, false);
    } else if (result) {
      set_stale(st->buffer, *result);
    } else {
      written_part(st->buffer, true);
    }
  }
  if (masks.empty()) return self;
  // One store whose every condition is on a leading loop's variable: those loops are narrowed
  // (whole rows, on 32-byte boundaries: no select, nothing extra when not clipped). Otherwise
  // each condition selects the old value (the vectoriser's compares need whole tiles).
  std::vector<Expr> extents;
  for (const ForNode* l : nest) extents.push_back(l->extent);
  auto leading = [&](const Expr& c) {
    const auto* b = c.as<BinaryNode>();
    const int k = b ? nest_level(b->a) : -1;
    return k >= 0 && k + 1 < static_cast<int>(nest.size()) ? k : -1;
  };
  bool narrow = stores.size() == 1;
  for (const auto& [st, conds] : masks)
    for (const Expr& c : conds) narrow = narrow && leading(c) >= 0;
  if (!narrow) {
    // A fill of the stale part that makes every masked update a no-op lets the loop run as
    // written (nothing changes on the iterations that are not clipped); a select is the fallback.
    std::optional<double> fill;
    bool one = true;
    for (const auto& [st, srcs] : stale_srcs) {
      auto is_stale = [&](const BufferNode* b) {
        return std::any_of(srcs.begin(), srcs.end(),
                           [&](const Buffer& x) { return key(x) == views_.base(b); });
      };
      auto v =
          dev::neutral_fill(*st, is_stale, [&](const BufferNode* b) { return views_.base(b); });
      one = one && v && (!fill || *fill == *v);
      fill = v;
    }
    if (one && fill) {
      std::vector<Stmt> out;
      for (const auto& [st, srcs] : stale_srcs)
        for (const Buffer& b : srcs) {
          const Stale* s = stale_of(b);
          if (!s || s->filled == fill) continue;
          out.push_back(fill_stale(b, *s, *fill, f.loc));
          Stale now = *s;
          now.filled = fill;
          set_stale(b, now);
        }
      out.push_back(self);
      return SeqNode::make(std::move(out), f.loc);
    }
  }
  std::map<const StoreNode*, Expr> values;
  for (auto& [st, conds] : masks) {
    Expr value = st->value;
    const Expr old = st->buffer.load(st->indices);
    for (const Expr& c : conds) {
      if (narrow) {
        const int k = leading(c);
        extents[k] = at_most(extents[k], c.as<BinaryNode>()->b);
      } else {
        value = select(c, value, old);
      }
    }
    values[st] = value;
  }
  const bool selects = !narrow;
  Stmt body = with_store_values(nest.back()->body, values);
  for (size_t k = nest.size(); k-- > 0;)
    body = ForNode::make(nest[k]->var, nest[k]->min, extents[k], ForKind::Parallel, 0, body,
                         nest[k]->loc);
  if (!selects) return body;
  Expr any;
  for (const Expr& c : clipped) any = any.defined() ? (any || c) : c;
  return guarded(simplify(any), body, self, f.loc);
}

}  // namespace

PrimFunc mask_tails(const PrimFunc& f, const Target&) {
  if (!dev::is_developer(f)) return f;
  TailMasker masker(dev::ViewBases(f->body), arith::names_in(f));
  Stmt body = masker.mutate(f->body);
  return body.same_as(f->body) ? f : with_body(f, body);
}

}  // namespace tl
