// combine_cv (tl/pass.h): TileLang-Ascend's "hybrid" kernels get their scope. With the pass
// config tl.ascend_auto_cv_combine, a TileLang-Ascend script writes an expert kernel
// (`T.Kernel(n, is_npu=True) as (cid, vid)`, hardware buffers, `vid` used by hand) without any
// T.Scope, and its compiler decides which core runs what. A body whose work is all the vector
// unit's (copies between GM and UB, vector tile ops, scalar work) is a vector kernel: it becomes
// the Vector scope, run by each AIV with its own vid, and its T.alloc_shared / T.alloc_fragment
// tiles are UB tiles (TileLang-Ascend places "shared.dyn" and "local.fragment" buffers of vector
// code in UB). A body with cube work is split into a Cube and a Vector scope (split_hybrid.cpp),
// its GM tensors that cross cores made channels with auto_cv_sync. A kernel that
// already names its scopes is left as written; one that mixes scoped and unscoped work is an
// error naming the unscoped statement (which core should run it is the author's to say).
#include "developer.h"
#include "split_hybrid.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/pass.h"

namespace tl {
namespace {

/// The first statement of `s` outside any Scope that is work for a core: a tile op or an
/// element store (lets, allocations and control flow are the scalar unit's on either core).
Stmt first_unscoped_work(const Stmt& s) {
  if (!s.defined() || s.as<ScopeNode>()) return {};
  if (s.as<TileOpNode>() || s.as<StoreNode>()) return s;
  std::vector<Stmt> children;
  if (auto* q = s.as<SeqNode>()) children = q->stmts;
  if (auto* l = s.as<ForNode>()) children = {l->body};
  if (auto* i = s.as<IfNode>()) children = {i->then_case, i->else_case};
  for (const Stmt& c : children)
    if (Stmt w = first_unscoped_work(c); w.defined()) return w;
  return {};
}

bool has_scope(const Stmt& body) {
  bool found = false;
  pre_order_visit(body, [&](const Stmt& s) { found |= s.as<ScopeNode>() != nullptr; });
  return found;
}

}  // namespace

PrimFunc combine_cv(const PrimFunc& f, const Target& target, bool auto_cv_sync) {
  const KernelNode* k = kernel_of(f);
  if (!k || k->developer()) return f;
  const Stmt work = first_unscoped_work(k->body);
  if (!work.defined()) return f;
  if (has_scope(k->body))
    user_error(work->loc,
               "{} is outside any T.Scope in a kernel that names its scopes elsewhere; "
               "tl.ascend_auto_cv_combine places a kernel's work only when none of it is scoped: "
               "put it in the T.Scope of the core that should run it",
               dev::describe(work));
  Stmt body = dev::Placer().mutate(k->body);  // no placements given: UB
  bool cube = false;
  pre_order_visit(body, [&](const Stmt& s) {
    auto* op = s.as<TileOpNode>();
    auto core = op ? op_core(*op, target) : std::nullopt;
    cube = cube || (core && *core == CoreKind::Cube);
  });
  // Cube work: the body is split into the two scopes (split_hybrid.cpp).
  if (cube) return hybrid::split(f, *k, body, target, auto_cv_sync);
  return dev::with_kernel_body(f, {ScopeNode::make(CoreKind::Vector, body, k->loc)});
}

}  // namespace tl
