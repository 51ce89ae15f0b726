// Element loops over GM tensors (`for i in T.Parallel(n): X[i] = X[i] + 1`; docs/developer_mode.md,
// "Scalar work and GM element stores"): vectorize_parallel asks dev::stage_gm_element_loop
// whether to run the loop on the scalar unit, element by element as written, or to stage it
// through UB: copy each GM tensor the loop reads into a UB tile (MTE2), run the loop on the tiles
// (vectorised as any element loop), copy each tile the loop writes back (MTE3). Both compute the
// same bits: the loop's iterations are independent (T.Parallel), every GM tensor is accessed at
// one index per iteration, and the vector code is bit-identical to the scalar loop
// (vectorize_parallel's contract).
//
// Which is cheaper is decided by cycles, from the target's cost table with the timing model's
// rules (docs/virtual_npu.md, "Timed mode"): the scalar loop costs, per element, each statement's
// issue, store and arithmetic and the loop's increment and test; the staged loop the GM -> UB
// latency (the cost table's K over the copy rate), the fraction of it a GM write waits, and the
// bytes at the copy rates. On A2 an fp32 `X[i] = X[i] + 1` costs 11 cycles per element on the
// scalar unit and about 1,130 cycles staged at any size up to 1,000 elements, so loops of 101
// elements and more are staged (at 101 to 103 the scalar loop would be up to 2 % faster; the
// estimate leaves out the staged loop's vector op and flags). docs/developer_mode.md has the table.
#include <algorithm>
#include <map>

#include "developer.h"
#include "tl/arith.h"
#include "tl/ir_equal.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/printer.h"

namespace tl::dev {
namespace {

/// One GM tensor of the loop: the UB tile it is staged in, and how the loop's index maps to it.
struct Staged {
  Buffer gm, tile;
  std::vector<Expr> indices;  // the loop's index expressions (the same at every access)
  std::vector<Expr> start;    // per dimension: the GM region's start
  std::vector<Expr> local;  // per dimension: the tile index (a loop variable minus its start, or 0)
  std::vector<int64_t> extent;
  bool read = false, written = false;
};

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

bool loads_gm_or_ub(const Expr& e) {
  bool any = false;
  pre_order_visit(
      LetNode::make(Var("_"), e), [](const Stmt&) {},
      [&](const Expr& x) {
        if (auto* l = x.as<LoadNode>(); l && l->buffer->scope != MemScope::Var) any = true;
      });
  return any;
}

/// The loop variable `e` is, plus an offset free of loop variables: {dim, offset}; {-1, e} when
/// `e` uses no loop variable; nullopt otherwise.
std::optional<std::pair<int, Expr>> affine(const Expr& e, const std::vector<const ForNode*>& dims) {
  int found = -1;
  for (size_t d = 0; d < dims.size(); ++d) {
    bool uses = false;
    pre_order_visit(
        LetNode::make(Var("_"), e), [](const Stmt&) {},
        [&](const Expr& x) { uses = uses || x.as<VarNode>() == dims[d]->var.node(); });
    if (!uses) continue;
    if (found >= 0) return std::nullopt;
    found = static_cast<int>(d);
  }
  if (found < 0) return std::make_pair(-1, e);
  const Var& v = dims[static_cast<size_t>(found)]->var;
  Expr offset = simplify(arith::substitute(e, {{v.node(), arith::make_int(v.dtype(), 0)}}));
  auto diff = arith::constant_difference(e, Expr(v) + offset);
  if (!diff || *diff != 0) return std::nullopt;
  return std::make_pair(found, offset);
}

/// The scalar unit's operations in `e`, as the timing model counts them (one per operator, cast
/// or call; a load is an instruction of its own, and counts its index arithmetic).
int64_t scalar_ops(const Expr& e) {
  int64_t n = 0;
  pre_order_visit(
      LetNode::make(Var("_"), e), [](const Stmt&) {},
      [&](const Expr& x) {
        switch (x.kind()) {
          case ExprKind::Binary:
          case ExprKind::Not:
          case ExprKind::Select:
          case ExprKind::Cast:
          case ExprKind::Call:
            ++n;
            break;
          default:
            break;
        }
      });
  return n;
}

/// The scalar loop's cycles as the timing model charges them (docs/virtual_npu.md, "Timed
/// mode"): per iteration the loop's increment and test, and per statement its issue, its
/// memory instruction (a store; a let's load) and its arithmetic.
double scalar_cycles(const Stmt& body, int64_t iterations, const CostTable& c) {
  double per = 2 * c.scalar_alu_cycles;
  for (const Stmt& s : stmts_of(body)) {
    if (auto* st = s.as<StoreNode>()) {
      int64_t ops = scalar_ops(st->value);
      for (const Expr& i : st->indices) ops += scalar_ops(i);
      per += c.issue_cycles + (st->buffer->scope == MemScope::Var ? 0 : c.scalar_store_cycles) +
             static_cast<double>(std::max<int64_t>(ops, 1)) * c.scalar_alu_cycles;
    } else if (auto* l = s.as<LetNode>()) {
      per += static_cast<double>(std::max<int64_t>(scalar_ops(l->value), 1)) * c.scalar_alu_cycles;
      if (loads_gm_or_ub(l->value)) per += c.issue_cycles + c.scalar_load_cycles;
    }
  }
  return per * static_cast<double>(iterations);
}

/// A copy path's rate in bytes per cycle, as the timing model takes it from the cost table: the
/// theoretical rate, capped by the measured single-core plateau.
double rate(const Target& t, const std::string& key) {
  const CostTable& c = t.costs;
  double r = 1;
  if (auto it = c.copy_bytes_per_cycle.find(key); it != c.copy_bytes_per_cycle.end())
    r = it->second;
  if (auto it = c.copy_measured_bytes_per_s.find(key);
      it != c.copy_measured_bytes_per_s.end() && t.clock_ghz > 0)
    r = std::min(r, it->second / (t.clock_ghz * 1e9));
  return r;
}

/// The staged loop's copies: GM -> UB latency (the cost table's K over the rate) before the
/// first tile is in, the fraction of it a GM write waits after the last is out, and the bytes.
double staged_cycles(const std::vector<Staged>& tiles, const Target& t) {
  const CostTable& c = t.costs;
  auto k = c.copy_latency_bytes.find("global->UB");
  const double latency = k == c.copy_latency_bytes.end() ? 0 : k->second / rate(t, "global->UB");
  double in = 0, out = 0;
  for (const Staged& s : tiles) {
    const double bytes = static_cast<double>(product(s.extent) * dtype_bytes(s.gm->dtype));
    if (s.read) in = std::max(in, latency) + bytes / rate(t, "global->UB");
    if (s.written)
      out = std::max(out, latency * c.gm_write_latency_fraction) + bytes / rate(t, "UB->global");
  }
  return in + out;
}

/// Replaces each GM access of the staged tensors by the same element of its tile; the innermost
/// loop `widen` (if any) runs to `padded`.
struct ToTiles : IRMutator {
  const std::map<const BufferNode*, Staged>& staged;
  const ForNode* widen;
  int64_t padded;
  ToTiles(const std::map<const BufferNode*, Staged>& s, const ForNode* w, int64_t p)
      : staged(s), widen(w), padded(p) {}
  Stmt mutate_(const ForNode* n, const Stmt& self) override {
    if (n != widen) return IRMutator::mutate_(n, self);
    return ForNode::make(n->var, n->min, Expr(static_cast<int>(padded)), n->for_kind, n->num_stages,
                         n->skew, mutate(n->body), n->loc);
  }
  Expr mutate_(const LoadNode* n, const Expr& self) override {
    auto it = staged.find(n->buffer.get());
    return it == staged.end() ? IRMutator::mutate_(n, self)
                              : LoadNode::make(it->second.tile, it->second.local);
  }
  Stmt mutate_(const StoreNode* n, const Stmt& self) override {
    auto it = staged.find(n->buffer.get());
    if (it == staged.end()) return IRMutator::mutate_(n, self);
    return StoreNode::make(it->second.tile, it->second.local, mutate(n->value), n->loc);
  }
};

}  // namespace

bool touches_gm_elements(const Stmt& s) {
  bool any = false;
  pre_order_visit(
      s,
      [&](const Stmt& x) {
        if (auto* st = x.as<StoreNode>(); st && st->buffer->scope == MemScope::GM) any = true;
      },
      [&](const Expr& e) {
        if (auto* l = e.as<LoadNode>(); l && l->buffer->scope == MemScope::GM) any = true;
      });
  return any;
}

std::optional<Stmt> stage_gm_element_loop(const Stmt& nest, const Target& t,
                                          std::unordered_set<std::string>& taken,
                                          std::string& why) {
  why.clear();
  std::vector<const ForNode*> dims;
  Stmt body = nest;
  for (;;) {
    if (auto* q = body.as<SeqNode>(); q && q->stmts.size() == 1) body = q->stmts[0];
    auto* f = body.as<ForNode>();
    if (!f || f->for_kind != ForKind::Parallel) break;
    dims.push_back(f);
    body = f->body;
  }
  std::vector<int64_t> extents;
  for (const ForNode* d : dims) {
    auto e = as_const_int(d->extent);
    if (!e || *e <= 0) {
      why = fmt::format("the extent of `{}` is not a constant", d->var.name());
      return std::nullopt;
    }
    extents.push_back(*e);
  }
  // Every GM tensor at one index per iteration, each index a loop variable plus an offset.
  std::map<const BufferNode*, Staged> staged;
  std::vector<const BufferNode*> order;
  auto access = [&](const Buffer& b, const std::vector<Expr>& indices, bool write) {
    auto [it, fresh] = staged.try_emplace(b.get());
    Staged& s = it->second;
    if (fresh) {
      order.push_back(b.get());
      s.gm = b;
      s.indices = indices;
    } else if (s.indices.size() != indices.size() ||
               !std::equal(indices.begin(), indices.end(), s.indices.begin(),
                           [](const Expr& x, const Expr& y) { return structural_equal(x, y); })) {
      if (why.empty()) why = fmt::format("'{}' is accessed at two different indices", b->name);
    }
    (write ? s.written : s.read) = true;
  };
  pre_order_visit(
      body,
      [&](const Stmt& x) {
        if (auto* st = x.as<StoreNode>(); st && st->buffer->scope == MemScope::GM)
          access(st->buffer, st->indices, true);
        else if (x.kind() != StmtKind::Store && x.kind() != StmtKind::Let &&
                 x.kind() != StmtKind::Seq && why.empty())
          why = "the loop body holds more than element stores and lets";
      },
      [&](const Expr& e) {
        if (auto* l = e.as<LoadNode>(); l && l->buffer->scope == MemScope::GM)
          access(l->buffer, l->indices, false);
      });
  if (!why.empty()) return std::nullopt;
  int64_t bytes = 0;
  for (const BufferNode* g : order) {
    Staged& s = staged.at(g);
    for (const Expr& i : s.indices) {
      auto a = affine(i, dims);
      if (!a) {
        why = fmt::format("the index `{}` of '{}' is not a loop variable plus an offset", print(i),
                          g->name);
        return std::nullopt;
      }
      if (a->first < 0) {
        s.start.push_back(a->second);
        s.local.push_back(Expr(0));
        s.extent.push_back(1);
      } else {
        const ForNode* d = dims[static_cast<size_t>(a->first)];
        s.start.push_back(simplify(d->min + a->second));
        s.local.push_back(simplify(Expr(d->var) - d->min));
        s.extent.push_back(extents[static_cast<size_t>(a->first)]);
      }
    }
    // UB rows are whole 32-byte blocks: the tile's last dimension is padded, and its copies move
    // the logical columns with DataCopyPad (docs/developer_mode.md, "Tails").
    const int64_t es = dtype_bytes(g->dtype), per_block = std::max<int64_t>(1, 32 / es);
    std::vector<Expr> shape;
    std::vector<int64_t> padded = s.extent;
    padded.back() = (padded.back() + per_block - 1) / per_block * per_block;
    for (int64_t x : padded) shape.push_back(Expr(static_cast<int>(x)));
    bytes += product(padded) * es;
    std::string name = g->name + "_ub";
    for (int i = 1; taken.count(name); ++i) name = fmt::format("{}_ub{}", g->name, i);
    taken.insert(name);
    s.tile = BufferNode::make(
        name, g->dtype, shape, MemScope::UB, {}, -1, nest->loc,
        fmt::format("UB staging of '{}' for the element loop at {}", g->name, nest->loc.str()));
  }
  // The rest of the kernel's tiles and the vectoriser's temporaries share UB with the staged
  // tiles: a loop whose tiles would take more than a quarter of it stays on the scalar unit.
  if (bytes > t.cap(MemScope::UB) / 4) {
    why = fmt::format("its UB tiles would take {} bytes, over a quarter of UB ({} bytes)", bytes,
                      t.cap(MemScope::UB));
    return std::nullopt;
  }
  std::vector<Staged> list;
  for (const BufferNode* g : order) list.push_back(staged.at(g));
  // Rows that are not whole 32-byte blocks: the vector unit works on whole blocks, so the loop
  // runs over the padded width when every access walks the tiles' last dimension with the
  // innermost loop variable (the pad lanes compute values nobody stores, as legalize_copies'
  // padded rows do). Otherwise vectorize_parallel rejects the loop and it stays scalar, with a
  // remark.
  const ForNode* widen = nullptr;
  int64_t padded = extents.back();
  bool ragged = false, walks = true;
  for (const Staged& x : list) {
    const int64_t per_block = std::max<int64_t>(1, 32 / dtype_bytes(x.gm->dtype));
    ragged = ragged || (x.extent.back() * dtype_bytes(x.gm->dtype)) % 32 != 0;
    padded = std::max(padded, (extents.back() + per_block - 1) / per_block * per_block);
    walks = walks &&
            structural_equal(x.local.back(), simplify(Expr(dims.back()->var) - dims.back()->min));
  }
  // A tile of the kernel's own may be read over the padded width too when its rows are that
  // long (legalize_copies pads them the same way); it is never written past the loop's extent.
  bool widenable = true;
  pre_order_visit(
      body,
      [&](const Stmt& x) {
        if (auto* st = x.as<StoreNode>(); st && st->buffer->scope != MemScope::GM)
          widenable = false;
      },
      [&](const Expr& e) {
        auto* l = e.as<LoadNode>();
        if (!l || l->buffer->scope == MemScope::GM || l->buffer->scope == MemScope::Var) return;
        auto row = as_const_int(l->buffer->shape.back());
        widenable = widenable && !l->indices.empty() &&
                    l->indices.back().as<VarNode>() == dims.back()->var.node() &&
                    as_const_int(dims.back()->min) == 0 && row && *row >= padded;
      });
  if (ragged && walks && widenable) {
    widen = dims.back();
    for (Staged& x : list) {
      std::vector<Expr> shape = x.tile->shape;
      shape.back() = Expr(static_cast<int>(padded));
      x.tile = BufferNode::make(x.tile->name, x.tile->dtype, shape, MemScope::UB, {}, -1,
                                x.tile->loc, x.tile->origin);
      staged.at(x.gm.get()).tile = x.tile;
    }
  }
  if (staged_cycles(list, t) >= scalar_cycles(body, product(extents), t.costs))
    return std::nullopt;  // why empty

  std::vector<Stmt> out;
  for (const Staged& s : list) out.push_back(AllocateNode::make(s.tile, nest->loc));
  auto regions = [](const Staged& s) {
    BufferRegion gm{s.gm, {}}, tile{s.tile, {}};
    for (size_t d = 0; d < s.extent.size(); ++d) {
      gm.ranges.push_back({s.start[d], Expr(static_cast<int>(s.extent[d]))});
      tile.ranges.push_back({Expr(0), Expr(static_cast<int>(s.extent[d]))});
    }
    return std::make_pair(gm, tile);
  };
  auto pad = [](const Staged& s) -> std::vector<Attr> {
    if ((s.extent.back() * dtype_bytes(s.gm->dtype)) % 32 == 0) return {};
    return {{"pad", true}};
  };
  for (const Staged& s : list)
    if (s.read) {
      auto [gm, tile] = regions(s);
      out.push_back(make_tile_op(ops::copy(), {gm, tile}, pad(s), nest->loc));
    }
  out.push_back(ToTiles(staged, widen, padded).mutate(nest));
  for (const Staged& s : list)
    if (s.written) {
      auto [gm, tile] = regions(s);
      out.push_back(make_tile_op(ops::copy(), {tile, gm}, pad(s), nest->loc));
    }
  return SeqNode::make(std::move(out), nest->loc);
}

}  // namespace tl::dev
