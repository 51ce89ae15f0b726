// Shared by the developer-mode passes (docs/developer_mode.md): how to recognise a developer
// kernel, and the small queries every one of them needs. Every developer pass returns an expert
// kernel unchanged, so each starts with `if (!is_developer(f)) return f;`.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tl/access.h"
#include "tl/ir.h"
#include "tl/ir_functor.h"
#include "tl/pass.h"
#include "tl/target.h"

namespace tl::dev {

/// The function's T::Kernel (nullptr if it has none).
const KernelNode* find_kernel(const PrimFunc& f);
/// True if `f` launches a developer kernel (T::Kernel without vid, not yet lowered).
bool is_developer(const PrimFunc& f);
/// The `threads` of the developer kernel `f` is or was lowered from: the kernel's own while it
/// is one, its PrimFuncNode::lowered_from_developer annotation once split_cube_vector made it
/// an expert kernel; 0 for a kernel written as expert. What the pipeline's gates read.
int developer_threads(const PrimFunc& f);
/// "'name' (file:line)" for messages about a buffer.
std::string describe(const Buffer& b);
/// "T.op at file:line" for messages about a statement.
std::string describe(const Stmt& s);
/// The `if vid == 0: work` that holds a Vector scope's work when it runs on AIV 0 alone
/// (split_cube_vector's form; split_aiv removes it), or nullptr.
const IfNode* aiv0_branch(const ScopeNode& scope, const KernelNode& kernel);
/// The statements of a block, nested Seqs flattened (passes leave Seqs inside Seqs; they print
/// as one block).
std::vector<Stmt> stmts_of(const Stmt& s);
/// `body` without the statements of its blocks for which `drop` holds (nested ones included);
/// nodes nothing was dropped from are kept as they are.
Stmt without(const Stmt& body, const std::function<bool(const Stmt&)>& drop);
/// `body` with each statement of its blocks that is a key of `to` replaced by its value (an
/// undefined value drops it), nested blocks included; nodes nothing changed in are kept.
Stmt replaced(const Stmt& body, const std::map<const StmtNode*, Stmt>& to);
/// `body` with each sync a node of its own (a pass may put one node in several places; the
/// passes that replay a kernel tell statements apart by node).
Stmt with_distinct_syncs(const Stmt& body);
/// The Cube (0) and Vector (1) scope bodies of a lowered kernel (undefined where it has no such
/// scope), each sync a node of its own: what the passes that replay a kernel rewrite.
std::array<Stmt, 2> scope_bodies(const KernelNode& k);
/// `f` with its Cube and Vector scopes' bodies replaced by `bodies` (scope_bodies' order).
PrimFunc with_scope_bodies(const PrimFunc& f, const std::array<Stmt, 2>& bodies);
/// One set or wait of an intra-core flag: the block that holds it, where, and the loops and
/// branches around it (outermost first, each with the block that holds it and where).
struct FlagSite {
  struct Step {
    const SeqNode* block;  // nullptr: the only statement of a loop or branch body
    size_t index;
    const StmtNode* node;  // a For or an If
  };
  const SeqNode* block = nullptr;  // nullptr: the only statement of a loop or branch body
  size_t index = 0;
  Stmt stmt;
  std::vector<Step> path;
  const SyncNode* sync() const { return static_cast<const SyncNode*>(stmt.get()); }
};
/// A flag: scope (0: the Cube scope body, 1: the Vector one), source and destination pipe, id.
using FlagKey = std::tuple<int, Pipe, Pipe, int64_t>;
/// Every set and wait of the compiler's intra-core flags with a constant id in the Cube and
/// Vector scope bodies `bodies`, per flag in program order; a flag with an author's statement
/// or a computed id is left out.
std::map<FlagKey, std::vector<FlagSite>> flag_sites(const Stmt bodies[2]);
/// `body` (a scope's) with the data-cache maintenance its scalar GM accesses need: a T.dcci of
/// each GM tensor after a statement of scalar work that stores to it, and before one that loads
/// it when a tile op of the scope writes it (src/pass/insert_dcci.cpp). `body` itself when it
/// has no scalar GM access.
Stmt with_dcci(const Stmt& body, const Target& t);
/// True if `s` is work a block does once, whichever of its AIVs runs it: a scalar store to GM or a
/// debug print, or a loop or branch whose only effects are such (no tile op, no store to a
/// variable or an on-chip buffer). split_aiv gives it to AIV 0: both AIVs running it would store
/// twice (`X[i] = X[i] + 1` twice is + 2) or print twice.
bool once_per_block(const Stmt& s);
/// True if `s` loads or stores an element of a GM tensor (a scalar access).
bool touches_gm_elements(const Stmt& s);
/// An element loop (a T.Parallel nest) over GM tensors staged through UB: a UB tile per tensor,
/// copies in before the loop, the loop on the tiles, copies back after it
/// (src/pass/gm_element_loops.cpp). nullopt when the scalar loop is cheaper by the cost table
/// (`why` empty) or when the loop cannot be staged (`why` says why).
std::optional<Stmt> stage_gm_element_loop(const Stmt& nest, const Target& t,
                                          std::unordered_set<std::string>& taken, std::string& why);
/// Sends a remark of `pass` to `sink`, or to stderr: a fallback is never silent.
void remark(const RemarkSink& sink, std::string_view pass, const SourceLoc& loc,
            const std::string& msg);
/// `f` with its T::Kernel's body replaced by `body` (the kernel's other fields kept).
PrimFunc with_kernel_body(const PrimFunc& f, std::vector<Stmt> body);
/// `f` with each T::Scope of its kernel (a statement of the kernel's body) replaced by
/// `fn(scope, statement)`; `f` itself when no scope changed.
PrimFunc map_scopes(const PrimFunc& f,
                    const std::function<Stmt(const ScopeNode&, const Stmt&)>& fn);

/// The buffer each view declared in a body views (a view of a view: the first buffer), so that
/// passes comparing buffers before plan_memory see a view's accesses as its base's.
class ViewBases {
 public:
  explicit ViewBases(const Stmt& body);
  const BufferNode* base(const BufferNode* b) const;

 private:
  std::map<const BufferNode*, const BufferNode*> base_;
};

/// What a statement touches (tl/access.h; the developer passes ask it under these names).
using analysis::Touch;
using analysis::touches_of;
/// Whether each iteration of a loop with body `body` (its top-level statements) writes `b`
/// before it reads it: the first statement that touches `b` only writes it, and is an op (not
/// a statement that may skip the write). A partial write, a clipped tail tile, counts: its
/// other rows hold values nobody stores. So does split_aiv's `if rows > 0: copy(rows of the
/// tile)`, a clipped copy that skips an AIV with no rows left: it moves nothing either way.
/// pipeline_loops gives such buffers slots; split_aiv lets the two AIVs take turns at them.
bool privatisable(const BufferNode* b, const std::vector<Stmt>& body, const Target& t);

/// Places developer tiles (T::alloc_shared / T::alloc_fragment buffers) in physical memories:
/// each in its scope from `scopes`, UB when it has none there; a view goes where its base goes.
/// infer_scopes places by use; combine_cv puts a vector-only body's tiles in UB. mutate_buffer
/// answers the placed buffer of an author's one after the walk, too.
class Placer : public IRMutator {
 public:
  explicit Placer(std::unordered_map<const BufferNode*, MemScope> scopes = {})
      : scopes_(std::move(scopes)) {}
  Buffer mutate_buffer(const Buffer& b) override;

 protected:
  Stmt mutate_(const AllocateNode* n, const Stmt& self) override;

 private:
  std::unordered_map<const BufferNode*, MemScope> scopes_;
  std::unordered_map<const BufferNode*, Buffer> placed_;
};

}  // namespace tl::dev

namespace tl::dev {
/// `kernel_body` (placed tiles) with each block whose cube or vector side reads a tile that a
/// crossing copy later in the block writes first reordered as TileLang-Ascend's per-iteration
/// cross-core pairing runs it (src/pass/order_crossings.cpp); an error where no order exists.
Stmt order_crossings(const Stmt& kernel_body);
}  // namespace tl::dev
