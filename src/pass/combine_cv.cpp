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
// A kernel whose on-chip buffers are all developer tiles (T.alloc_shared / T.alloc_fragment)
// and that never reads its vid (`as (cid, _)`) is a developer kernel in TileLang-Ascend, whatever
// its binding: it becomes one here (threads = 1), and every later pass sees a developer kernel.
#include <optional>

#include "developer.h"
#include "split_hybrid.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/ops.h"
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

/// A TileLang-Ascend developer-form kernel written with `as (cid, vid)`: no T.Scope, every on-chip
/// buffer a developer tile (at least one), vid never read. It becomes the developer kernel it is
/// (threads = 1: one AIV per AIC, as `T.Kernel(n) as cid`), so infer_scopes places its tiles and
/// split_cube_vector splits its cube and vector work (TileLang-Ascend's developer mode: the
/// binding does not choose the mode, the buffers do). With vid read and cube work the kernel is
/// an error naming the read: developer mode splits the vector work between the AIVs itself
/// (threads = 2), so a hand-written vid split has no meaning there. nullopt: not this form.
std::optional<PrimFunc> as_developer_kernel(const PrimFunc& f, const KernelNode& k,
                                            const Target& target) {
  bool developer_tile = false, hardware_buffer = false, scoped = false, cube = false;
  Stmt current, vid_read;  // the statement being visited; the first that reads vid
  pre_order_visit(
      k.body,
      [&](const Stmt& s) {
        current = s;
        scoped |= s.as<ScopeNode>() != nullptr;
        if (auto* a = s.as<AllocateNode>()) {
          const MemScope m = a->buffer->scope;
          if (m == MemScope::Shared || m == MemScope::Fragment)
            developer_tile = true;
          else if (m != MemScope::GM)
            hardware_buffer = true;
        }
        if (auto* op = s.as<TileOpNode>()) {
          auto core = op_core(*op, target);
          cube |= op->op == &ops::gemm() || op->op == &ops::gemm_v0() ||
                  (core && *core == CoreKind::Cube);
        }
      },
      // A statement's own expressions are visited before its children: `current` owns `e`.
      [&](const Expr& e) {
        if (auto* v = e.as<VarNode>(); v && v == k.vid.get() && !vid_read.defined())
          vid_read = current;
      });
  if (!developer_tile || hardware_buffer || scoped) return std::nullopt;
  if (vid_read.defined()) {
    if (!cube) return std::nullopt;  // a vector-only body: the vector kernel below, vid by hand
    user_error(vid_read->loc,
               "{} reads vid in a kernel of developer tiles (T.alloc_shared / T.alloc_fragment) "
               "with cube work: such a kernel is a developer kernel, whose compiler splits the "
               "vector work between the AIVs itself; bind `as (cid, _)` (or "
               "`T.Kernel(n, threads=2) as cid`) and index by cid only, or allocate hardware "
               "buffers (T.alloc_L1 / T.alloc_ub / T.alloc_L0C) in T.Scope(\"C\") / "
               "T.Scope(\"V\") (expert mode)",
               dev::describe(vid_read));
  }
  Stmt kernel = KernelNode::make(k.num_blocks, k.cid, Var(), k.body, k.loc, /*threads=*/1);
  std::vector<Stmt> out;
  if (auto* q = f->body.as<SeqNode>()) {
    for (const Stmt& s : q->stmts) out.push_back(s.as<KernelNode>() ? kernel : s);
  } else {
    out.push_back(kernel);
  }
  return with_body(f, SeqNode::make(std::move(out), f->body->loc));
}

}  // namespace

PrimFunc combine_cv(const PrimFunc& f, const Target& target, bool auto_cv_sync) {
  const KernelNode* k = kernel_of(f);
  if (!k || k->developer()) return f;
  if (auto dev_kernel = as_developer_kernel(f, *k, target)) return *dev_kernel;
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
