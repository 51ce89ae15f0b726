// The data-cache maintenance of a developer kernel's scalar GM accesses (dev::with_dcci, called
// by insert_syncs on each scope it synchronises; docs/developer_mode.md, "Scalar work and GM
// element stores").
//
// The scalar unit reaches GM through its core's data cache, which DMA and the other cores do not
// see (AscendC DataCacheCleanAndInvalid,
// https://www.hiascend.com/document/detail/en/canncommercial/850/API/ascendcopapi/atlasascendc_api_07_0177.html):
// a scalar store stays in the cache until a dcci writes it back, and a scalar load may return a
// line cached before DMA wrote the bytes unless a dcci dropped it after the write. The hazard
// checker enforces both (docs/virtual_npu.md, "Hazard checker"). So, per block:
//   - after a statement that stores to a GM tensor from the scalar unit and issues no tile op (a
//     store, or a loop or branch of scalar work: `for i in T.serial(n): X[i] = X[i] + 1`), a
//     `T.dcci(X)`: the stores are written back once, after the whole loop, before any later DMA
//     (or the host) reads them; a dcci is a scalar instruction, so everything issued after it is
//     ordered after it;
//   - before a statement of scalar work that loads a GM tensor some tile op of the scope writes,
//     a `T.dcci(X)`: insert_syncs then orders the DMA write before it (a flag to S), as it orders
//     any access of the scalar pipe after a DMA write.
// A branch, and a loop that issues tile ops, are entered, and each of their blocks is treated the
// same way (a store inside a tile loop is written back in each iteration; a branch not taken
// writes nothing back). The dcci covers the whole
// tensor: one instruction per statement, not one per element.
#include <set>

#include "developer.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/ops.h"

namespace tl::dev {
namespace {

bool issues_tile_ops(const Stmt& s) {
  bool any = false;
  pre_order_visit(s, [&](const Stmt& x) {
    any = any || x.kind() == StmtKind::TileOp || x.kind() == StmtKind::Sync;
  });
  return any;
}

/// GM tensors `s` stores to (`stores`) and loads (`loads`) from the scalar unit, in first-use
/// order.
void scalar_gm(const Stmt& s, std::vector<Buffer>& stores, std::vector<Buffer>& loads) {
  auto add = [](std::vector<Buffer>& v, const Buffer& b) {
    for (const Buffer& x : v)
      if (x.same_as(b)) return;
    v.push_back(b);
  };
  pre_order_visit(
      s,
      [&](const Stmt& x) {
        if (auto* st = x.as<StoreNode>(); st && st->buffer->scope == MemScope::GM)
          add(stores, st->buffer);
      },
      [&](const Expr& e) {
        if (auto* l = e.as<LoadNode>(); l && l->buffer->scope == MemScope::GM)
          add(loads, l->buffer);
      });
}

class Dcci {
 public:
  explicit Dcci(const Stmt& body, const Target& t) {
    // The GM tensors a tile op of the scope writes (DMA, the fixpipe).
    pre_order_visit(body, [&](const Stmt& s) {
      if (s.kind() == StmtKind::TileOp && s.as<TileOpNode>()->op != &ops::dcci())
        for (const Touch& x : touches_of(s, t))
          if (x.write && x.buffer->scope == MemScope::GM) dma_written_.insert(x.buffer);
    });
  }

  Stmt block(const Stmt& s) {
    if (!s.defined()) return s;
    std::vector<Stmt> out;
    for (const Stmt& x : stmts_of(s)) emit(x, out);
    return SeqNode::make(std::move(out), s->loc);
  }

 private:
  static Stmt dcci(const Buffer& b, const SourceLoc& loc) {
    return make_tile_op(ops::dcci(), {BufferRegion::full(b)}, {}, loc);
  }
  static bool is_dcci_of(const Stmt& s, const Buffer& b) {
    auto* op = s.as<TileOpNode>();
    return op && op->op == &ops::dcci() && op->args[0].is_region() &&
           op->args[0].region.buffer.same_as(b);
  }

  void emit(const Stmt& s, std::vector<Stmt>& out) {
    if (auto* f = s.as<ForNode>(); f && issues_tile_ops(s)) {
      before_control(s, {f->min, f->extent}, out);
      out.push_back(ForNode::make(f->var, f->min, f->extent, f->for_kind, f->num_stages, f->skew,
                                  block(f->body), f->loc));
      return;
    }
    if (auto* n = s.as<IfNode>()) {  // entered: a branch not taken needs no write-back
      before_control(s, {n->cond}, out);
      out.push_back(IfNode::make(n->cond, block(n->then_case),
                                 n->else_case.defined() ? block(n->else_case) : Stmt(), n->loc));
      return;
    }
    if (issues_tile_ops(s)) {
      out.push_back(s);
      return;
    }
    std::vector<Buffer> stores, loads;
    scalar_gm(s, stores, loads);
    for (const Buffer& b : loads)
      if (dma_written_.count(b.get()) && !(!out.empty() && is_dcci_of(out.back(), b)))
        out.push_back(dcci(b, s->loc));
    out.push_back(s);
    for (const Buffer& b : stores) out.push_back(dcci(b, s->loc));
  }

  /// A loop bound or condition that loads DMA-written GM (split_cube_vector reads such values
  /// into lets first, so this is for conditions other passes made).
  void before_control(const Stmt& s, std::initializer_list<Expr> es, std::vector<Stmt>& out) {
    std::vector<Buffer> stores, loads;
    for (const Expr& e : es) scalar_gm(LetNode::make(Var("_"), e, s->loc), stores, loads);
    for (const Buffer& b : loads)
      if (dma_written_.count(b.get())) out.push_back(dcci(b, s->loc));
  }

  std::set<const BufferNode*> dma_written_;
};

}  // namespace

Stmt with_dcci(const Stmt& body, const Target& t) {
  bool scalar_gm_access = false;
  pre_order_visit(
      body,
      [&](const Stmt& x) {
        if (auto* st = x.as<StoreNode>(); st && st->buffer->scope == MemScope::GM)
          scalar_gm_access = true;
      },
      [&](const Expr& e) {
        if (auto* l = e.as<LoadNode>(); l && l->buffer->scope == MemScope::GM)
          scalar_gm_access = true;
      });
  if (!scalar_gm_access) return body;
  return Dcci(body, t).block(body);
}

}  // namespace tl::dev
