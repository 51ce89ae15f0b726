// Internal to insert_syncs (src/pass/insert_syncs*.cpp), not a public header: the access,
// block-tree and flag types and the Inserter class that the pass's files share. The pass is
// split along its stages: insert_syncs.cpp (the pass entry, the fixpoint driver, pruning, event
// ids and the output), insert_syncs_tree.cpp (the block tree and each statement's accesses) and
// insert_syncs_walk.cpp (the abstract walk that plans barriers and flags). insert_syncs.cpp's
// top comment describes the algorithm.
#pragma once

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <tuple>

#include "developer.h"
#include "tl/access.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/linear.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/storage.h"
#include "tl/sync_rules.h"

namespace tl {
namespace sync_detail {

constexpr uint8_t kAllPipes = 0x7f;  // S V M MTE1 MTE2 MTE3 FIX: known to all means done
inline uint8_t bit(Pipe p) {
  return static_cast<uint8_t>(1u << static_cast<unsigned>(p));
}

/// Bytes of one memory an access may touch: on-chip, a byte interval of the planned
/// addresses; GM, a tensor and a byte interval within it (the whole tensor unless the region
/// is constant).
struct Region {
  MemScope scope = MemScope::GM;
  const BufferNode* tensor = nullptr;
  int64_t lo = 0, hi = INT64_MAX;
  /// GM only: the region as written when its bounds are not constants but use only variables
  /// that hold one value in the whole scope (cid, vid, dynamic sizes, lets outside loops), so
  /// any two accesses compare exactly (arith::regions_overlap, both at the same values): a
  /// workspace slot [cid, 1] against slot [cid, 0], row tiles cid * 64 and cid * 64 + 32.
  std::shared_ptr<const BufferRegion> invariant;
  /// GM only: a dimension that starts at c * v + (something invariant in v's loop), v the
  /// innermost loop's variable, with an extent of at most `extent` (the row tiles of an
  /// unrolled loop: 8 * t + 28 * cid + 2 * vid and 8 * t + 28 * cid + 2 * vid + 4).
  struct Strided {
    const VarNode* var;
    size_t dim;
    int64_t c, extent;
    Expr min;
  };
  std::shared_ptr<const Strided> strided;
};
/// Two strided accesses of one execution of their loop, in any iterations i and j: their starts
/// differ by c (i - j) + delta, delta = the difference of the starts as written; the regions
/// meet only if some c k + delta lies in (-e, e), e the larger extent, which no k allows when
/// delta mod |c| is in [e, |c| - e].
inline bool strided_apart(const Region::Strided& a, const Region::Strided& b, bool same_statement) {
  if (a.var != b.var || a.dim != b.dim || a.c != b.c) return false;
  const int64_t abs_c = a.c < 0 ? -a.c : a.c;
  // One statement meets itself only in another iteration: k != 0.
  if (same_statement && a.min.same_as(b.min)) return std::max(a.extent, b.extent) <= abs_c;
  auto delta = arith::constant_difference(a.min, b.min);
  if (!delta) return false;
  const int64_t c = a.c < 0 ? -a.c : a.c, e = std::max(a.extent, b.extent);
  const int64_t r = ((*delta % c) + c) % c;
  return r >= e && r <= c - e;
}
/// `same_execution`: both accesses belong to one execution of the loops around them (not to an
/// earlier execution of an inner loop, whose variables had other values).
inline bool conflict(const Region& a, const Region& b, bool same_execution, bool same_statement) {
  if (a.scope != b.scope) return false;
  if (a.scope == MemScope::GM && a.tensor && b.tensor && a.tensor != b.tensor) return false;
  if (a.invariant && b.invariant && a.invariant->ranges.size() == b.invariant->ranges.size())
    return arith::regions_overlap(*a.invariant, *b.invariant) != arith::Overlap::No;
  if (same_execution && a.strided && b.strided &&
      strided_apart(*a.strided, *b.strided, same_statement))
    return false;
  return a.lo < b.hi && b.lo < a.hi;
}

struct Acc {
  int node;
  Pipe pipe;
  bool write;
  Region region;
  /// Set when executions in different iterations of the innermost loop around the statement
  /// touch disjoint elements (some dimension starts at c * var + invariant with extent <=
  /// |c|): the instruction of the statement and the region as written. Two accesses of one
  /// statement with the same key never meet across iterations.
  std::string iteration_key;
};

/// One instruction of a statement. Publish is a set_cross_flag: the other core reads what this
/// core wrote to GM (and may overwrite what it read), so every pending GM access of another pipe
/// must be done before it fires; its own pipe is drained by the set itself. PipeBarrier is an
/// author's pipe_barrier: its pipe knows every earlier instruction of that pipe is done.
/// AuthorSet / AuthorWait are an author's set_flag(pipe, dst, id) / wait_flag with a constant
/// id: the set carries what `pipe` knows, the wait teaches it to `dst` (author_key below).
struct Instr {
  enum Kind : uint8_t { Op, BarrierAll, Publish, PipeBarrier, AuthorSet, AuthorWait } kind = Op;
  Pipe pipe = Pipe::S;
  std::vector<int> accs;
  // An Mmad that may accumulate into a tile of fewer than 10 fractals: ordered after the
  // previous Mmad into that tile by pipe_barrier(M) (mmad_needs_m_barrier).
  bool small_mmad = false;
  Pipe dst = Pipe::S;  // AuthorSet / AuthorWait: the waiting pipe
  int key = 0;         // AuthorSet / AuthorWait: author_key(pipe, dst, id)
};

/// Author event ids the walk models (author_key's range); the chips have 8 (tl/target.h).
constexpr int64_t kMaxAuthorEventId = 1024;
/// An author's flag in Rec::carried: negative, so it never meets a planned flag's index (>= 0).
/// One key per (pipe, dst, id): the hardware event an author's set raises and a wait consumes.
inline int author_key(Pipe p, Pipe q, int64_t id) {
  return -1 -
         static_cast<int>((static_cast<int64_t>(p) * 16 + static_cast<int64_t>(q)) * 1024 + id);
}

struct Block {
  std::vector<int> nodes;
  int owner = -1;  // the For/If node whose body or branch this is; -1: the scope body
  bool loop_body = false;
};
struct Node {
  Stmt s;
  int blk = -1, pos = 0;
  std::vector<int> blocks;    // For: body; If: then, else
  std::vector<Instr> instrs;  // issued by the statement itself (a loop's bounds: before its body)
  int start = 0, end = 0;     // pre-order clock, for the live intervals of flags
};

/// A planned set_flag/wait_flag pair. Same: set after statement set_pos, wait before wait_pos,
/// both in `blk`. Carried: the dependence crosses the back edge of the loop whose body is
/// `blk`; pre-set before the loop, set after set_pos, wait before wait_pos, drain after the
/// loop. Adjacent: set and wait right before wait_pos (a set drains its whole pipe).
struct Flag {
  enum Kind : uint8_t { Same, Carried, Adjacent } kind;
  Pipe p, q;
  int blk, set_pos, wait_pos;
  int round;
  bool off = false;  // pruned: implied by the other syncs
  int id = -1;
  int lo = 0, hi = 0;  // live interval on the pre-order clock
  auto key() const { return std::make_tuple(kind, p, q, blk, set_pos, wait_pos); }
};
struct Planned {
  enum Kind : uint8_t { Set, Wait, Barrier } kind;
  int flag = -1;
  Pipe pipe = Pipe::S;
  bool off = false;  // a pruned barrier
};

/// A pending access: the pipes that know it is done, the flags in flight that carry it.
/// Rec::known bit (above the pipes'): an M access a pipe_barrier(M) has since ordered, as the
/// PIPE_M rule of small Mmads needs (the M pipe's in-order guarantee is not enough there).
constexpr uint8_t kMBarriered = 0x80;

struct Rec {
  uint8_t known = 0;
  std::vector<int> carried;  // sorted flag indices
  bool operator==(const Rec&) const = default;
};
using State = std::map<int, Rec>;  // by access index

/// join(out, {{k, r}}) into `out`, without copying it (shadow_loop joins record by record).
inline void join_into(State& out, int k, const Rec& r) {
  auto [it, fresh] = out.emplace(k, r);
  if (fresh) return;
  it->second.known &= r.known;
  std::vector<int> both;
  std::set_intersection(it->second.carried.begin(), it->second.carried.end(), r.carried.begin(),
                        r.carried.end(), std::back_inserter(both));
  it->second.carried = std::move(both);
}
inline State join(const State& a, const State& b) {
  State out = a;
  for (const auto& [k, r] : b) join_into(out, k, r);
  return out;
}

class Inserter {
 public:
  /// `opaque`: pipe pairs on which the scope's author sets or waits flags with ids that are not
  /// constants; the walk cannot follow those flags, so it leaves what they could order to them
  /// (a need on such a pair counts as ordered) and plans barriers and flags for the rest.
  Inserter(const Stmt& body, const Target& t, bool minimise,
           std::set<std::pair<Pipe, Pipe>> opaque = {})
      : t_(t), minimise_(minimise), opaque_(std::move(opaque)) {
    // Variables that change inside the scope: loop variables and what lets inside loops bind.
    std::function<void(const Stmt&, bool)> bound = [&](const Stmt& s, bool in_loop) {
      if (!s.defined()) return;
      if (auto* q = s.as<SeqNode>()) {
        for (const Stmt& x : q->stmts) bound(x, in_loop);
      } else if (auto* f = s.as<ForNode>()) {
        varying_.insert(f->var.node());
        bound(f->body, true);
      } else if (auto* n = s.as<IfNode>()) {
        bound(n->then_case, in_loop);
        bound(n->else_case, in_loop);
      } else if (auto* l = s.as<LetNode>(); l && in_loop) {
        varying_.insert(l->var.node());
      }
    };
    bound(body, false);
    body_ = build_block(body, -1, false);
  }
  Stmt run();

 private:
  const Target& t_;
  const bool minimise_;                           // drop the syncs the others imply (prune)
  const std::set<std::pair<Pipe, Pipe>> opaque_;  // the author's pairs with run-time ids
  std::set<const VarNode*> varying_;              // variables that change inside the scope
  std::vector<Node> nodes_;
  std::vector<Block> blocks_;
  std::vector<Acc> accs_;
  int body_ = 0;
  int clock_ = 0;
  /// While building: the loops around the statement being built, innermost last, each with
  /// the variables bound inside its body so far (they may change from one iteration to the
  /// next).
  struct LoopCtx {
    const VarNode* var;
    std::set<const VarNode*> varying;
  };
  std::vector<LoopCtx> loops_;
  std::vector<Flag> flags_;
  std::map<std::tuple<int, int, bool>, std::vector<Planned>> plan_;  // (block, position, after)
  std::set<std::pair<Pipe, Pipe>> coarse_;
  /// The event ids the scope's author sets and waits per pipe pair: never given to a planned
  /// flag of that pair (insert_syncs_tree.cpp collects them).
  std::map<std::pair<Pipe, Pipe>, std::set<int64_t>> author_ids_;
  int round_ = 0;
  bool changed_ = false;
  bool checking_ = false;  // prune(): only find out whether something is unordered
  bool unordered_ = false;
  /// A pending access by its key: an access index, or (>= accs_.size()) a shadow of one: the
  /// instances of an access from earlier executions of its innermost loop, kept apart from
  /// the current execution's so that "an earlier iteration" means "of this execution".
  const Acc& acc(int key) const { return accs_[static_cast<size_t>(key) % accs_.size()]; }
  bool inside(int node, int loop) const {
    for (int x = node; x >= 0; x = blocks_[nodes_[x].blk].owner)
      if (blocks_[nodes_[x].blk].owner == loop) return true;
    return false;
  }
  void reset() {
    flags_.clear();
    plan_.clear();
  }
  void shadow_loop(int loop, State& st) const;
  bool still_ordered();
  void prune();

  // ---- the block tree (insert_syncs_tree.cpp) -----------------------------------------
  int build_block(const Stmt& s, int owner, bool loop);
  int build_node(const Stmt& s, int blk, int pos);
  void add_acc(std::vector<int>& out, int node, Pipe p, bool write, Region r, std::string key = {});
  std::string iteration_key(const BufferRegion& region, const std::string& instr) const;
  static bool invariant(const Expr& e, const VarNode* v, const std::set<const VarNode*>& varying);
  static std::optional<int64_t> coefficient(const Expr& e, const VarNode* v,
                                            const std::set<const VarNode*>& varying);
  bool iterations_disjoint(const std::vector<Range>& ranges) const;
  bool scope_invariant(const Expr& e) const;
  Region region_of(const Buffer& b, const std::vector<Range>& ranges) const;
  static Region constant_region_of(const Buffer& b, const std::vector<Range>& ranges);
  void loads(const Expr& e, int node, Pipe p, std::vector<int>& out);
  void scalar(std::vector<Instr>& instrs, int node, std::initializer_list<const Expr*> es);
  void tile_op(const TileOpNode& n, int node, std::vector<Instr>& instrs);

  // ---- the abstract walk (insert_syncs_walk.cpp) ---------------------------------------
  void run_block(int b, State& st);
  void run_node(int n, State& st);
  void apply(int b, int pos, bool after, State& st);
  void effect(const Planned& p, State& st);
  void exec(int n, const Instr& in, State& st);
  void author_flag(const Instr& in, State& st);
  void order(int n, Pipe p, Pipe q, const std::vector<int>& recs, State& st);
  int pos_in(int node, int blk) const;
  void adjacent(int n, Pipe p, Pipe q, const std::vector<int>& recs, State& st);
  void add_flag(Flag f, int n, const std::vector<int>& recs, State& st, bool is_fallback = false);

  // ---- event ids and output (insert_syncs.cpp) -----------------------------------------
  bool colour();
  std::string describe(const Flag& f) const;
  std::string authors_note(std::pair<Pipe, Pipe> pair) const;
  Stmt sync_stmt(const Planned& p, const SourceLoc& loc) const;
  Stmt rebuild_block(int b) const;
  Stmt rebuild_node(int n) const;
};

}  // namespace sync_detail
}  // namespace tl
