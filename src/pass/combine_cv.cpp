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
// One that reads vid beside cube work splits the vector work between the AIVs by hand: it is a
// hybrid kernel whose developer tiles are placed by use (gemm operands L1, accumulator L0C, the
// rest UB), as TileLang-Ascend infers their memory (pipeline/matmul_add_pipeline.py).
// A vector kernel that never reads vid computes the same on both AIVs: TileLang-Ascend launches
// it on both (KERNEL_TYPE_MIX_AIC_1_2) and each stores the same bytes, an unordered write pair
// the hazard checker rightly reports. When both AIVs provably store the same bytes (no atomic
// op, no GM tensor both read and written, no cross-core flag) it runs on AIV 0 alone (`if vid ==
// 0`), which leaves GM as the chip leaves it; otherwise both still run it, so a body whose two
// copies would race (an in-place update, an atomic add counted twice) stays reported.
#include <optional>
#include <unordered_map>

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
/// binding does not choose the mode, the buffers do). nullopt: not this form (vid read: the
/// author splits the AIVs' work, so it is a hybrid kernel).
std::optional<PrimFunc> as_developer_kernel(const PrimFunc& f, const KernelNode& k) {
  bool developer_tile = false, hardware_buffer = false, scoped = false;
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
      },
      // A statement's own expressions are visited before its children: `current` owns `e`.
      [&](const Expr& e) {
        if (auto* v = e.as<VarNode>(); v && v == k.vid.get() && !vid_read.defined())
          vid_read = current;
      });
  if (!developer_tile || hardware_buffer || scoped) return std::nullopt;
  // vid read: the author splits the vector work between the AIVs by hand, so this is a hybrid
  // kernel whose tiles are placed by use (combine_cv below), not a developer kernel.
  if (vid_read.defined()) return std::nullopt;
  Stmt kernel = KernelNode::make(k.num_blocks, k.cid, Var(), k.body, k.loc, /*threads=*/1);
  std::vector<Stmt> out;
  if (auto* q = f->body.as<SeqNode>()) {
    for (const Stmt& s : q->stmts) out.push_back(s.as<KernelNode>() ? kernel : s);
  } else {
    out.push_back(kernel);
  }
  return with_body(f, SeqNode::make(std::move(out), f->body->loc));
}

/// Where a hybrid kernel's developer tiles go by their gemm use (issue 29:
/// pipeline/matmul_add_pipeline.py, `as (cid, vid)` with T.alloc_shared / T.alloc_fragment,
/// T.gemm_v0 and a vector epilogue indexed by vid): A and B of a T.gemm_v0 / T.gemm in L1, its
/// C in L0C. A fragment as an operand or a shared tile as an accumulator is an error naming it,
/// as in place_expert_tiles. Tiles not named here are UB (Placer's default).
std::unordered_map<const BufferNode*, MemScope> gemm_tile_scopes(const Stmt& body) {
  std::unordered_map<const BufferNode*, MemScope> scopes;
  pre_order_visit(body, [&](const Stmt& s) {
    auto* op = s.as<TileOpNode>();
    if (!op || (op->op != &ops::gemm_v0() && op->op != &ops::gemm())) return;
    for (size_t i = 0; i < 3 && i < op->args.size(); ++i) {
      if (!op->args[i].is_region()) continue;
      const Buffer& b = op->args[i].region.buffer;
      if (b->scope != MemScope::Shared && b->scope != MemScope::Fragment) continue;
      const MemScope want = i < 2 ? MemScope::L1 : MemScope::L0C;
      const MemScope made = i < 2 ? MemScope::Shared : MemScope::Fragment;
      if (b->scope != made)
        user_error(
            op->loc,
            "{}: operand {} is {}, made by {}; a gemm's {} lives in {}: make it with {} "
            "(or {})",
            op->op->name,
            i == 0   ? "A"
            : i == 1 ? "B"
                     : "C",
            dev::describe(b), b->scope == MemScope::Shared ? "T.alloc_shared" : "T.alloc_fragment",
            i < 2 ? "operands" : "accumulator", scope_name(want),
            i < 2 ? "T.alloc_shared" : "T.alloc_fragment", i < 2 ? "T.alloc_L1" : "T.alloc_L0C");
      scopes[b.get()] = want;
    }
  });
  return scopes;
}

/// Whether the vector kernel `body` of `k` computes and stores the same on both AIVs, so that
/// AIV 0 alone leaves GM as both would (the file comment): vid never read, no atomic op (both
/// AIVs' adds would count), no GM tensor both read and written (each AIV would read what the
/// other may have written), no cross-core flag or sync_all (AIV 1 must take part in those).
bool same_on_both_aivs(const Stmt& body, const KernelNode& k) {
  if (!k.vid.defined()) return false;
  bool blocked = false;
  std::unordered_map<const BufferNode*, int> gm;  // bit 1: read, bit 2: written
  pre_order_visit(
      body,
      [&](const Stmt& s) {
        if (auto* y = s.as<SyncNode>())
          blocked |= y->sync_kind == SyncKind::SetCrossFlag ||
                     y->sync_kind == SyncKind::WaitCrossFlag || y->sync_kind == SyncKind::SyncAll;
        if (auto* st = s.as<StoreNode>(); st && st->buffer->scope == MemScope::GM)
          gm[st->buffer.get()] |= 2;
        auto* op = s.as<TileOpNode>();
        if (!op) return;
        blocked |= op->op->atomic.get();
        const auto& specs = op->op->operands;
        for (size_t i = 0; i < op->args.size() && !specs.empty(); ++i) {
          if (!op->args[i].is_region() || op->args[i].region.buffer->scope != MemScope::GM)
            continue;
          const Access a = specs[std::min(i, specs.size() - 1)].access;
          gm[op->args[i].region.buffer.get()] |= a == Access::Read ? 1 : a == Access::Write ? 2 : 3;
        }
      },
      [&](const Expr& e) {
        if (auto* v = e.as<VarNode>(); v && v == k.vid.get()) blocked = true;
        if (auto* l = e.as<LoadNode>(); l && l->buffer->scope == MemScope::GM)
          gm[l->buffer.get()] |= 1;
      });
  for (const auto& [b, use] : gm) blocked |= use == 3;
  return !blocked;
}

}  // namespace

PrimFunc combine_cv(const PrimFunc& f, const Target& target, bool auto_cv_sync) {
  const KernelNode* k = kernel_of(f);
  if (!k || k->developer()) return f;
  if (auto dev_kernel = as_developer_kernel(f, *k)) return *dev_kernel;
  const Stmt work = first_unscoped_work(k->body);
  if (!work.defined()) return f;
  if (has_scope(k->body))
    user_error(work->loc,
               "{} is outside any T.Scope in a kernel that names its scopes elsewhere; "
               "tl.ascend_auto_cv_combine places a kernel's work only when none of it is scoped: "
               "put it in the T.Scope of the core that should run it",
               dev::describe(work));
  // Developer tiles are placed by use as TileLang-Ascend's memory inference does: a gemm's A and
  // B in L1, its accumulator in L0C, the rest (vector work, copies) in UB.
  Stmt body = dev::Placer(gemm_tile_scopes(k->body)).mutate(k->body);
  bool cube = false;
  pre_order_visit(body, [&](const Stmt& s) {
    auto* op = s.as<TileOpNode>();
    auto core = op ? op_core(*op, target) : std::nullopt;
    cube = cube || (core && *core == CoreKind::Cube);
  });
  // Cube work: the body is split into the two scopes (split_hybrid.cpp).
  if (cube) return hybrid::split(f, *k, body, target, auto_cv_sync);
  if (same_on_both_aivs(body, *k))
    body = IfNode::make(Expr(k->vid) == Expr(0), body, Stmt(), k->loc);
  return dev::with_kernel_body(f, {ScopeNode::make(CoreKind::Vector, body, k->loc)});
}

}  // namespace tl
