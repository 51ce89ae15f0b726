// place_expert_tiles (tl/pass.h): TileLang-Ascend's expert kernels may allocate with
// T.alloc_shared / T.alloc_fragment and let its compiler infer the memory from the T.Scope that
// uses the tile (examples/simple_fusion/matmul_add_infer_scope.py: hand-written T.Scope("C") /
// T.Scope("V") and flags, `A_L1 = T.alloc_shared(...)`). tl-ascend's verifier requires an expert
// kernel's buffers to be placed, so this pass places them first, by use, as TileLang-Ascend does:
//   - in a Cube scope: a T.gemm_v0 operand A or B -> L1 (a shared tile), its accumulator C ->
//     L0C (a fragment); a tile the Cube scope only copies -> L1 (shared) or L0C (fragment);
//   - in a Vector scope: UB;
//   - used by no scope: UB.
// A tile both scopes use, a fragment as a gemm operand or a shared tile as an accumulator is an
// error naming the tile and its uses: which memory the author meant is theirs to say (alloc_L1
// / alloc_ub / alloc_L0C). Kernels without T.Scope (combine_cv's and developer kernels) and
// kernels whose tiles are all placed are returned unchanged.
#include <unordered_map>

#include "developer.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/pass.h"

namespace tl {
namespace {

bool is_tile(const Buffer& b) {
  return b.defined() && (b->scope == MemScope::Shared || b->scope == MemScope::Fragment);
}

struct Use {
  MemScope scope = MemScope::UB;
  Stmt first;  // the first statement that placed it, for messages
  bool placed = false;
};

class ScopeUses {
 public:
  explicit ScopeUses(const dev::ViewBases& views) : views_(views) {}
  std::unordered_map<const BufferNode*, Use> uses;

  void scope(const ScopeNode& s) {
    pre_order_visit(
        s.body,
        [&](const Stmt& x) {
          current_ = x;  // a statement's expressions are visited before its children
          if (auto* op = x.as<TileOpNode>()) {
            for (size_t i = 0; i < op->args.size(); ++i)
              if (op->args[i].is_region()) tile_arg(*op, i, x, s.core);
          } else if (auto* st = x.as<StoreNode>()) {
            add(st->buffer, MemScope::UB, x, s.core);
          }
        },
        [&](const Expr& e) {
          if (auto* ld = e.as<LoadNode>()) add(ld->buffer, MemScope::UB, current_, s.core);
        });
  }

 private:
  void tile_arg(const TileOpNode& op, size_t i, const Stmt& x, CoreKind core) {
    current_ = x;
    const Buffer& b = op.args[i].region.buffer;
    if (!is_tile(b)) return;
    if (core == CoreKind::Vector) return add(b, MemScope::UB, x, core);
    const bool gemm = op.op == &ops::gemm_v0();
    if (gemm && i < 2) {
      if (b->scope != MemScope::Shared)
        user_error(op.loc,
                   "T.gemm_v0: operand {} is {}, made by T.alloc_fragment; a gemm_v0 "
                   "operand lives in L1: make it with T.alloc_shared (or T.alloc_L1)",
                   i == 0 ? "A" : "B", dev::describe(b));
      return add(b, MemScope::L1, x, core);
    }
    if (gemm && i == 2) {
      if (b->scope != MemScope::Fragment)
        user_error(op.loc,
                   "T.gemm_v0: the accumulator {} was made by T.alloc_shared; the cube "
                   "accumulates in L0C: make it with T.alloc_fragment (or T.alloc_L0C)",
                   dev::describe(b));
      return add(b, MemScope::L0C, x, core);
    }
    // Other cube-scope work (copies in and out): a shared tile is L1, a fragment L0C.
    add(b, b->scope == MemScope::Shared ? MemScope::L1 : MemScope::L0C, x, core);
  }

  void add(const Buffer& buf, MemScope m, const Stmt& where, CoreKind) {
    if (!is_tile(buf)) return;
    const BufferNode* b = views_.base(buf.get());
    Use& u = uses[b];
    if (!u.placed) {
      u = {m, where, true};
      return;
    }
    if (u.scope == m) return;
    const Buffer handle(std::shared_ptr<const BufferNode>(std::shared_ptr<const BufferNode>{}, b));
    user_error(where->loc,
               "tile {} is used as {} by {} and as {} by {}: an expert kernel's "
               "T.alloc_shared / T.alloc_fragment tile is placed by the T.Scope that uses it, "
               "and one tile cannot live in both; use two tiles (T.alloc_L1 / T.alloc_ub / "
               "T.alloc_L0C say where), moving the data through GM",
               dev::describe(handle), scope_name(u.scope), dev::describe(u.first), scope_name(m),
               dev::describe(where));
  }

  const dev::ViewBases& views_;
  Stmt current_;
};

}  // namespace

PrimFunc place_expert_tiles(const PrimFunc& f, const Target&) {
  const KernelNode* k = dev::find_kernel(f);
  if (!k || k->developer() || f->lowered_from_developer > 0) return f;
  bool tiles = false, scoped = false;
  pre_order_visit(k->body, [&](const Stmt& s) {
    scoped |= s.as<ScopeNode>() != nullptr;
    if (auto* a = s.as<AllocateNode>()) tiles |= is_tile(a->buffer);
  });
  if (!tiles || !scoped) return f;
  dev::ViewBases views(k->body);
  ScopeUses uses(views);
  pre_order_visit(k->body, [&](const Stmt& s) {
    if (auto* sc = s.as<ScopeNode>()) uses.scope(*sc);
  });
  std::unordered_map<const BufferNode*, MemScope> scopes;
  for (const auto& [b, u] : uses.uses) scopes[b] = u.scope;
  Stmt body = dev::Placer(std::move(scopes)).mutate(f->body);  // unused tiles: UB
  return body.same_as(f->body) ? f : with_body(f, body);
}

}  // namespace tl
