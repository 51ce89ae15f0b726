// AccessOrder (reuse_order.h): is every access of one buffer done before a conflicting access of
// another starts, on every path between them? The kernel becomes a tree of statements; each
// access of an on-chip buffer is a leaf instruction with its pipe (tile ops through their
// instruction expansion, scalar loads and stores on S). Between two accesses the statements that
// execute on every path (the rest of each enclosing block after the first, the blocks in
// between, the start of each enclosing block of the second; loop bodies only when the loop
// surely runs; never an if branch) are replayed in order with the hazard checker's rules
// (docs/hardware.md section 3): an in-order pipe (S, M, MTE1, FIX) orders its own instructions; a
// set_flag on a pipe that knows the first access is done, matched by a wait_flag, teaches the
// destination pipe; pipe_barrier(P) teaches P; barrier_all, PIPE_ALL and sync_all (and
// gemm_v0's template barriers) order everything; a wait on S orders everything after it; and a
// cross-core round trip orders everything after it: this core's set_cross_flag on a pipe that
// knows the first access is done, the other core's wait for it and then its set of a second
// flag, this core's wait for that one (each of the four the only one of its flag and kind in
// the kernel, mode 2; outside every loop and if, as TileLang-Ascend's opt_gdn_chunk_o.py orders
// its UB reuses, or all four once per iteration of the same loops and ifs, as a hybrid kernel's
// workspace flags are: bench_sfa's L0B; find_round_trips says when each is sound).
#include "reuse_order.h"

#include <algorithm>
#include <deque>
#include <map>
#include <unordered_map>

#include "tl/access.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/printer.h"
#include "tl/storage.h"
#include "tl/sync_rules.h"

namespace tl {
namespace {

constexpr uint32_t bit(Pipe p) {
  return 1u << static_cast<unsigned>(p);
}
bool in_order(Pipe p) {
  return pipe_in_order(p);
}  // the rule table (tl/sync_rules.h)

/// A node of the statement tree: its statement, parent and position among the parent's
/// children (Seq: its statements; For/Scope/Kernel: the body; If: then, else).
struct Node {
  const StmtNode* stmt = nullptr;
  int parent = -1;
  int pos = 0;
  std::vector<int> kids;
};

/// One access of an on-chip buffer: the statement (a leaf, or an If/For whose condition or
/// bounds load it), the instruction of its op's expansion (-1: a scalar access before it), the
/// pipe, and whether it writes.
struct Acc {
  const BufferNode* buffer;
  int node;
  int instr;
  Pipe pipe;
  bool write;
};

/// What the walk knows about the first access: which pipes have seen it complete, and the flags
/// set since that carry that knowledge.
/// A set_flag / wait_flag's flag: "src dst id" (its id as printed), and whether the id is a
/// constant (the same flag in every loop iteration).
struct FlagKey {
  std::string name;
  bool constant = false;
};

struct Knowledge {
  Pipe pipe;
  uint32_t knows = 0;
  bool all = false;  // everything issued from here on starts after it
  struct Sets {
    bool constant_id = false;
    std::deque<bool> carries;  // oldest first: does the set carry the knowledge
  };
  std::map<std::string, Sets> pending;  // by FlagKey::name
  /// Cross-core round trips: for a wait_cross_flag id on this core, the ids of this core's
  /// set_cross_flags that the other core waits for before it sets that id (Impl::trips).
  const std::map<int64_t, std::vector<int64_t>>* trips = nullptr;
  std::vector<int64_t> cross_sets;  // ids of this core's set_cross_flags that carry the knowledge

  explicit Knowledge(Pipe p) : pipe(p), knows(in_order(p) ? bit(p) : 0), all(p == Pipe::S) {}
  bool has(Pipe p) const { return all || (knows & bit(p)); }
  /// `flag`: the flag of a set_flag / wait_flag (unused for other syncs).
  void sync(const SyncNode& s, const FlagKey& flag) {
    if (all) return;
    switch (s.sync_kind) {
      case SyncKind::BarrierAll:
      case SyncKind::SyncAll:
        all = true;
        return;
      case SyncKind::PipeBarrier:
        if (s.src == Pipe::ALL)
          all = true;
        else if (s.src == pipe)
          knows |= bit(pipe);
        return;
      case SyncKind::SetFlag: {
        Sets& sets = pending[flag.name];
        sets.constant_id = flag.constant;
        sets.carries.push_back(s.src == pipe || has(s.src));
        return;
      }
      case SyncKind::WaitFlag: {
        auto& q = pending[flag.name].carries;
        if (q.empty()) return;  // matches a set from before the first access: teaches nothing
        bool carries = q.front();
        q.pop_front();
        if (carries && s.dst == Pipe::S) all = true;  // the scalar unit issues everything later
        if (carries) knows |= bit(s.dst);
        return;
      }
      case SyncKind::SetCrossFlag: {
        // It fires after this core's earlier work of its pipe (docs/virtual_npu.md).
        auto id = as_const_int(s.event_id);
        if (id && (s.src == pipe || has(s.src))) cross_sets.push_back(*id);
        return;
      }
      case SyncKind::WaitCrossFlag: {
        // The wait blocks every pipe until the other core's set, which follows that core's
        // wait for one of our carrying sets: everything later starts after the first access.
        auto id = as_const_int(s.event_id);
        if (!id || !trips) return;
        auto it = trips->find(*id);
        if (it == trips->end()) return;
        for (int64_t set : it->second)
          if (std::find(cross_sets.begin(), cross_sets.end(), set) != cross_sets.end()) all = true;
        return;
      }
      default:
        return;
    }
  }
  /// Around a loop's back edge a flag id that is not a constant names another flag. The cross
  /// sets stay: a round trip's wait met after the back edge runs in a later iteration than the
  /// carrying set, which find_round_trips allows for every trip (the wait's k-th execution
  /// follows the other core's k-th set, after its wait for our k-1-th or earlier set).
  void cross_back_edge() {
    std::erase_if(pending, [](const auto& kv) { return !kv.second.constant_id; });
  }
};

}  // namespace

struct AccessOrder::Impl {
  const Target& target;
  std::vector<Node> nodes;
  std::vector<std::optional<CoreKind>> core;  // per node: the Scope it sits in (nullopt: all)
  std::unordered_map<const BufferNode*, const BufferNode*> base;  // view -> viewed buffer
  std::unordered_map<const BufferNode*, std::vector<Acc>> accesses;
  std::unordered_map<const StmtNode*, FlagKey> flag_key;  // of every set_flag / wait_flag
  /// Every set_cross_flag / wait_cross_flag: its node, core, kind, constant id (or none), mode,
  /// and the loops and ifs around it.
  struct Cross {
    int node;
    std::optional<CoreKind> core;
    SyncKind kind;
    std::optional<int64_t> id;
    int mode;
    /// The For and If nodes around it, outermost first, with the branch taken at an If (0 then,
    /// 1 else): two flags with equal chains run once per iteration of the same loops.
    std::vector<std::pair<int, int>> chain;
  };
  std::vector<Cross> crosses;
  /// Per core, the round trips a wait_cross_flag of that core closes (Knowledge::trips).
  std::map<CoreKind, std::map<int64_t, std::vector<int64_t>>> trips;

  bool loop_trips = true;  // round trips inside loops too (AccessOrder's constructor)

  explicit Impl(const Target& t) : target(t) {}

  const BufferNode* resolve(const BufferNode* b) const {
    auto it = base.find(b);
    return it == base.end() ? b : it->second;
  }

  // ---- building -------------------------------------------------------------------------

  int add(const Stmt& s, int parent, int pos, std::optional<CoreKind> c) {
    int id = static_cast<int>(nodes.size());
    nodes.push_back({s.get(), parent, pos, {}});
    core.push_back(c);
    auto child = [&](const Stmt& k, std::optional<CoreKind> kc) {
      if (!k.defined()) return;
      int kid = add(k, id, static_cast<int>(nodes[id].kids.size()), kc);
      nodes[id].kids.push_back(kid);
    };
    switch (s.kind()) {
      case StmtKind::Seq:
        for (const auto& k : s.as<SeqNode>()->stmts) child(k, c);
        break;
      case StmtKind::For: {
        auto* n = s.as<ForNode>();
        for (const Expr* e : {&n->min, &n->extent}) scalar_loads(*e, id);
        child(n->body, c);
        break;
      }
      case StmtKind::If: {
        auto* n = s.as<IfNode>();
        scalar_loads(n->cond, id);
        for (const Stmt* k : {&n->then_case, &n->else_case}) child(*k, c);
        break;
      }
      case StmtKind::Scope:
        child(s.as<ScopeNode>()->body, s.as<ScopeNode>()->core);
        break;
      case StmtKind::Kernel:
        child(s.as<KernelNode>()->body, c);
        break;
      case StmtKind::Allocate: {
        auto* n = s.as<AllocateNode>();
        if (n->is_view()) base[n->buffer.get()] = resolve(n->view_of.get());
        break;
      }
      case StmtKind::Let:
        scalar_loads(s.as<LetNode>()->value, id);
        break;
      case StmtKind::Store: {
        auto* n = s.as<StoreNode>();
        for (const auto& i : n->indices) scalar_loads(i, id);
        scalar_loads(n->value, id);
        record(n->buffer.get(), id, -1, Pipe::S, true);
        break;
      }
      case StmtKind::TileOp:
        tile_op(*s.as<TileOpNode>(), id);
        break;
      case StmtKind::Sync: {
        auto* n = s.as<SyncNode>();
        scalar_loads(n->event_id, id);
        if (n->sync_kind == SyncKind::SetFlag || n->sync_kind == SyncKind::WaitFlag)
          flag_key[s.get()] = {
              fmt::format("{} {} {}", pipe_name(n->src), pipe_name(n->dst), print(n->event_id)),
              as_const_int(n->event_id).has_value()};
        if (n->sync_kind == SyncKind::SetCrossFlag || n->sync_kind == SyncKind::WaitCrossFlag) {
          std::vector<std::pair<int, int>> chain;
          for (int kid = id, x = parent; x >= 0; kid = x, x = nodes[x].parent) {
            const StmtNode* up = nodes[x].stmt;
            if (up->kind != StmtKind::For && up->kind != StmtKind::If) continue;
            int branch = 0;
            if (up->kind == StmtKind::If)
              branch = static_cast<const IfNode*>(up)->then_case.get() == nodes[kid].stmt ? 0 : 1;
            chain.insert(chain.begin(), {x, branch});
          }
          crosses.push_back(
              {id, c, n->sync_kind, as_const_int(n->event_id), n->mode, std::move(chain)});
        }
        break;
      }
    }
    return id;
  }

  void record(const BufferNode* b, int node, int instr, Pipe p, bool write) {
    if (!b || !is_planned_scope(b->scope)) return;
    const BufferNode* r = resolve(b);
    accesses[r].push_back({r, node, instr, p, write});
  }
  void scalar_loads(const Expr& e, int node) {
    if (!e.defined()) return;
    struct V : IRVisitor {
      Impl& impl;
      int node;
      V(Impl& i, int n) : impl(i), node(n) {}
      void visit_(const LoadNode* n) override {
        impl.record(n->buffer.get(), node, -1, Pipe::S, false);
        IRVisitor::visit_(n);
      }
    } v(*this, node);
    v.visit(e);
  }
  void tile_op(const TileOpNode& n, int node) {
    for (const analysis::Instr& in : analysis::instructions(n, target)) {
      if (in.barrier_all) continue;
      const int i = static_cast<int>(in.index);
      for (const analysis::Use& u : in.uses) {
        if (u.kind == analysis::Use::Scratch) continue;  // gemm_v0's L0A/L0B: not planned
        const TileArg& arg = n.args[static_cast<size_t>(u.arg)];
        if (u.kind == analysis::Use::Scalar) {
          scalar_loads(arg.scalar, node);
          continue;
        }
        for (const auto& r : arg.region.ranges) {
          scalar_loads(r.min, node);
          scalar_loads(r.extent, node);
        }
        const BufferNode* b = arg.region.buffer.get();
        if (u.read) record(b, node, i, in.pipe, false);
        if (u.write) record(b, node, i, in.pipe, true);
      }
    }
  }

  /// Do two chains (Cross::chain) run their flags once per iteration of the same loops? On one
  /// core: the same nodes. On the two cores: loops of constant and equal bounds, or of the same
  /// variable and bounds (combine_cv's split copies the loops and ifs of a hybrid kernel into
  /// both scopes, the expressions themselves, which no core-specific value such as vid enters),
  /// and ifs of the same condition expression and branch.
  bool same_iterations(const std::vector<std::pair<int, int>>& a,
                       const std::vector<std::pair<int, int>>& b) const {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] == b[i]) continue;
      const StmtNode* x = nodes[a[i].first].stmt;
      const StmtNode* y = nodes[b[i].first].stmt;
      if (x->kind != y->kind || a[i].second != b[i].second) return false;
      if (x->kind == StmtKind::For) {
        auto* f = static_cast<const ForNode*>(x);
        auto* g = static_cast<const ForNode*>(y);
        auto fm = as_const_int(f->min), fe = as_const_int(f->extent);
        const bool constant =
            fm && fe && fm == as_const_int(g->min) && fe == as_const_int(g->extent);
        const bool copied =
            f->var.get() == g->var.get() && f->min.same_as(g->min) && f->extent.same_as(g->extent);
        if (!constant && !copied) return false;
      } else if (!static_cast<const IfNode*>(x)->cond.same_as(
                     static_cast<const IfNode*>(y)->cond)) {
        return false;
      }
    }
    return true;
  }

  /// Round trips between the AIC and the AIVs of a block (mode 2 both ways): core c sets flag
  /// `out`, the other core waits for it and then sets `back`, c waits for `back`. Each of the
  /// four is the only one of its flag and kind in the kernel, so the k-th-set matching of cross
  /// flags pairs their k-th executions (docs/virtual_npu.md): c's k-th wait for `back` is after
  /// the other core's k-th set of it. Outside every loop and if, each runs once and the other
  /// core waits for `out` before it sets `back`: c's wait for `back` is after c's set of `out`.
  /// Inside loops (a hybrid kernel's workspace flags, once per iteration): all four must run
  /// once per iteration of the same loops and ifs (same_iterations; the cores see the same
  /// bounds and conditions), so their k-th executions are those of the k-th iteration. The walk
  /// meets c's wait for `back` after the carrying set of `out` in iteration k either in a later
  /// iteration (always ordered: the other core's set of `back` in iteration j > k follows its
  /// wait for `out` in iteration k) or, when c's wait follows its set in the loop body, in
  /// iteration k itself, which is ordered only when the other core too waits for `out` before
  /// it sets `back` in the body.
  void find_round_trips() {
    auto only = [&](SyncKind kind, int64_t id) -> const Cross* {
      const Cross* found = nullptr;
      for (const Cross& x : crosses) {
        if (x.kind != kind || (x.id && *x.id != id)) continue;
        if (!x.id || found) return nullptr;  // a non-constant id may be any flag
        found = &x;
      }
      return found && found->core ? found : nullptr;
    };
    for (const Cross& set_out : crosses) {
      if (set_out.kind != SyncKind::SetCrossFlag || !set_out.id || set_out.mode != 2) continue;
      const Cross* mine = only(SyncKind::SetCrossFlag, *set_out.id);
      const Cross* wait_out = only(SyncKind::WaitCrossFlag, *set_out.id);
      if (mine != &set_out || !wait_out || wait_out->core == set_out.core) continue;
      for (const Cross& set_back : crosses) {
        if (set_back.kind != SyncKind::SetCrossFlag || !set_back.id || set_back.mode != 2 ||
            set_back.core != wait_out->core)
          continue;
        const Cross* theirs = only(SyncKind::SetCrossFlag, *set_back.id);
        const Cross* wait_back = only(SyncKind::WaitCrossFlag, *set_back.id);
        if (theirs != &set_back || !wait_back || wait_back->core != set_out.core) continue;
        if (!loop_trips && !(set_out.chain.empty() && wait_back->chain.empty() &&
                             wait_out->chain.empty() && set_back.chain.empty()))
          continue;
        if (set_out.chain != wait_back->chain || wait_out->chain != set_back.chain ||
            !same_iterations(set_out.chain, wait_out->chain))
          continue;
        const bool later_iteration = !set_out.chain.empty() && wait_back->node < set_out.node;
        if (!later_iteration && set_back.node < wait_out->node) continue;
        trips[*set_out.core][*set_back.id].push_back(*set_out.id);
      }
    }
  }

  // ---- the walk ---------------------------------------------------------------------------

  /// Does tile op `n` run on `c` (the core whose memory the buffers are)?
  bool runs_on(const TileOpNode& n, CoreKind c) const {
    auto core = op_core(n, target);  // tl/op.h; nullopt: wherever it is placed
    return !core || *core == c;
  }

  /// Feeds the barrier instructions of `n`'s expansion in [from, to) to `k`.
  static void expansion_barriers(const TileOpNode& n, size_t from, size_t to, Knowledge& k) {
    for (size_t i = from; i < to && i < n.op->expansion.size(); ++i)
      if (n.op->expansion[i].kind == InstrSpec::Kind::BarrierAll) k.all = true;
  }

  /// Feeds what statement `id` surely does on core `c` to `k`.
  void run(int id, CoreKind c, Knowledge& k) const {
    if (k.all) return;
    const Node& nd = nodes[id];
    const StmtNode* s = nd.stmt;
    if (core[id] && *core[id] != c) return;
    switch (s->kind) {
      case StmtKind::Sync: {
        static const FlagKey kNone;
        auto it = flag_key.find(s);
        k.sync(*static_cast<const SyncNode*>(s), it == flag_key.end() ? kNone : it->second);
        return;
      }
      case StmtKind::TileOp: {
        auto* n = static_cast<const TileOpNode*>(s);
        if (runs_on(*n, c)) expansion_barriers(*n, 0, n->op->expansion.size(), k);
        return;
      }
      case StmtKind::For: {
        // Only a loop that surely runs contributes (its first iteration's body).
        auto ext = as_const_int(static_cast<const ForNode*>(s)->extent);
        if (ext && *ext >= 1)
          for (int kid : nd.kids) run(kid, c, k);
        return;
      }
      case StmtKind::If:
        return;  // a branch does not surely run
      default:
        for (int kid : nd.kids) run(kid, c, k);
        return;
    }
  }

  std::vector<int> ancestors(int id) const {
    std::vector<int> chain;
    for (int x = id; x >= 0; x = nodes[x].parent) chain.push_back(x);
    return chain;  // id first, root last
  }

  /// Feeds to `k` what surely runs after `id` until control leaves the subtree of `stop`
  /// (the rest of every enclosing Seq below it).
  void after(int id, int stop, CoreKind c, Knowledge& k) const {
    for (int x = id; x != stop && nodes[x].parent >= 0; x = nodes[x].parent) {
      const Node& p = nodes[nodes[x].parent];
      if (p.stmt->kind != StmtKind::Seq || nodes[x].parent == stop) continue;
      for (size_t j = nodes[x].pos + 1; j < p.kids.size(); ++j) run(p.kids[j], c, k);
    }
  }
  /// Feeds to `k` what surely runs from entering the subtree of `start` until `id` (the start
  /// of every enclosing Seq below it).
  void before(int id, int start, CoreKind c, Knowledge& k) const {
    std::vector<int> chain;
    for (int x = id; x != start && nodes[x].parent >= 0; x = nodes[x].parent) chain.push_back(x);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      int parent = nodes[*it].parent;
      if (parent == start || nodes[parent].stmt->kind != StmtKind::Seq) continue;
      for (int j = 0; j < nodes[*it].pos; ++j) run(nodes[parent].kids[j], c, k);
    }
  }
  /// The child of `ancestor` on the way down to `id`.
  int child_towards(int ancestor, int id) const {
    int x = id;
    while (nodes[x].parent != ancestor) x = nodes[x].parent;
    return x;
  }

  /// Is access `a` done before access `b` starts (b after a in program order)? `loop`: the For
  /// node whose back edge lies between them (b in the next iteration), or -1.
  bool ordered(const Acc& a, const Acc& b, CoreKind c, int loop) const {
    Knowledge k(a.pipe);
    if (auto it = trips.find(c); it != trips.end()) k.trips = &it->second;
    // The rest of a's op (gemm_v0's trailing barrier), then the statements after it.
    if (a.instr >= 0) {
      auto* n = static_cast<const TileOpNode*>(nodes[a.node].stmt);
      expansion_barriers(*n, a.instr + 1, n->op->expansion.size(), k);
    }
    if (loop >= 0) {
      int body = nodes[loop].kids.empty() ? -1 : nodes[loop].kids[0];
      if (body < 0) return true;
      after(a.node, body, c, k);
      if (nodes[body].stmt->kind == StmtKind::Seq && a.node != body) {
        for (size_t j = nodes[child_towards(body, a.node)].pos + 1; j < nodes[body].kids.size();
             ++j)
          run(nodes[body].kids[j], c, k);
      }
      k.cross_back_edge();
      if (nodes[body].stmt->kind == StmtKind::Seq && b.node != body) {
        for (int j = 0; j < nodes[child_towards(body, b.node)].pos; ++j)
          run(nodes[body].kids[j], c, k);
      }
      before(b.node, body, c, k);
    } else {
      auto up = ancestors(a.node), down = ancestors(b.node);
      int lca = -1;
      for (int x : up)
        if (std::find(down.begin(), down.end(), x) != down.end()) {
          lca = x;
          break;
        }
      if (lca < 0 || lca == a.node || lca == b.node) return k.has(b.pipe) || a.node == b.node;
      // Two branches of one If never both run in one pass (a loop around them is the back-edge
      // case of that loop).
      if (nodes[lca].stmt->kind != StmtKind::Seq) return true;
      after(a.node, lca, c, k);
      int ca = child_towards(lca, a.node), cb = child_towards(lca, b.node);
      for (int j = nodes[ca].pos + 1; j < nodes[cb].pos; ++j) run(nodes[lca].kids[j], c, k);
      before(b.node, lca, c, k);
    }
    if (b.instr >= 0) {
      auto* n = static_cast<const TileOpNode*>(nodes[b.node].stmt);
      expansion_barriers(*n, 0, b.instr, k);
    }
    return k.has(b.pipe);
  }

  /// The loops whose bodies hold accesses of both `xs` and `ys`, innermost first along each
  /// access's chain (a loop once).
  std::vector<int> shared_loops(const std::vector<Acc>& xs, const std::vector<Acc>& ys) const {
    auto loops_of = [&](const std::vector<Acc>& list) {
      std::vector<int> out;
      for (const Acc& a : list)
        for (int x : ancestors(a.node))
          if (x != a.node && nodes[x].stmt->kind == StmtKind::For &&
              std::find(out.begin(), out.end(), x) == out.end())
            out.push_back(x);
      return out;
    };
    std::vector<int> both;
    const std::vector<int> in_y = loops_of(ys);
    for (int l : loops_of(xs))
      if (std::find(in_y.begin(), in_y.end(), l) != in_y.end()) both.push_back(l);
    return both;
  }
  /// The accesses in `list` inside loop `loop`'s body.
  std::vector<Acc> inside(const std::vector<Acc>& list, int loop) const {
    std::vector<Acc> out;
    for (const Acc& a : list) {
      auto up = ancestors(a.node);
      if (a.node != loop && std::find(up.begin(), up.end(), loop) != up.end()) out.push_back(a);
    }
    return out;
  }

  std::string describe(const Acc& a) const {
    const StmtNode* s = nodes[a.node].stmt;
    std::string what = "a scalar access";
    if (a.instr >= 0) {
      auto* n = static_cast<const TileOpNode*>(s);
      const auto& spec = n->op->expansion[a.instr];
      what = "T." + (spec.name.empty() ? n->op->name : spec.name);
    } else if (s->kind == StmtKind::Store) {
      what = "a scalar store";
    }
    return fmt::format("{} ({}) at {} {} '{}'", what, pipe_name(a.pipe), s->loc.str(),
                       a.write ? "writes" : "reads", a.buffer->name);
  }
};

AccessOrder::AccessOrder(const Stmt& body, const Target& target, bool loop_trips)
    : impl_(std::make_unique<Impl>(target)) {
  impl_->loop_trips = loop_trips;
  if (body.defined()) impl_->add(body, -1, 0, std::nullopt);
  impl_->find_round_trips();
}
AccessOrder::~AccessOrder() = default;

std::optional<std::string> AccessOrder::reuse_hazard(const BufferNode* earlier,
                                                     const BufferNode* later) const {
  const Impl& m = *impl_;
  auto find = [&](const BufferNode* b) -> const std::vector<Acc>& {
    static const std::vector<Acc> none;
    auto it = m.accesses.find(m.resolve(b));
    return it == m.accesses.end() ? none : it->second;
  };
  const auto& xs = find(earlier);
  const auto& ys = find(later);
  auto owner = m.target.memory_core(earlier->scope);
  CoreKind c = owner ? *owner : CoreKind::Vector;
  auto unordered = [&](const Acc& a, const Acc& b, int loop) -> std::optional<std::string> {
    if (!a.write && !b.write) return std::nullopt;
    if (m.ordered(a, b, c, loop)) return std::nullopt;
    std::string fix =
        a.pipe == b.pipe
            ? fmt::format(
                  "{0} may overlap consecutive instructions and nothing orders these two (a "
                  "pipe_barrier({0}) or a flag chain would",
                  pipe_name(a.pipe))
            : fmt::format(
                  "nothing orders {0} before {1} (set_flag({0}, {1}) / wait_flag or a barrier "
                  "would",
                  pipe_name(a.pipe), pipe_name(b.pipe));
    fix += fmt::format(
        ", or a cross-core round trip between them: this core's set_cross_flag once {} is "
        "done, the other core's wait for it and then its set of another flag, this core's wait "
        "for that one, each flag the only one of its id and all four once per iteration of the "
        "same loops)",
        pipe_name(a.pipe));
    return fmt::format("{}, then {}{}: {}", m.describe(a), m.describe(b),
                       loop >= 0 ? " in the next iteration" : "", fix);
  };
  for (const Acc& a : xs)
    for (const Acc& b : ys)
      if (auto why = unordered(a, b, -1)) return why;
  // Both touched within one iteration of a loop: iteration i's accesses of either buffer also
  // meet iteration i+1's accesses of the other around the back edge. (Where the two are in one
  // block, that path contains the in-iteration one, but two branches of an if have no
  // in-iteration path at all.) Every loop holding accesses of both counts, also when one of
  // them is touched outside it too: with per-iteration live ranges (liveness.h) a buffer
  // written whole at the top of each iteration may be read after the loop (opt_gdn_chunk_h.py's
  // s_ub_half), and its reads in iteration i still meet the other's writes in iteration i+1.
  for (int loop : m.shared_loops(xs, ys)) {
    const std::vector<Acc> xin = m.inside(xs, loop), yin = m.inside(ys, loop);
    for (const Acc& b : yin)
      for (const Acc& a : xin)
        if (auto why = unordered(b, a, loop)) return why;
    for (const Acc& a : xin)
      for (const Acc& b : yin)
        if (auto why = unordered(a, b, loop)) return why;
  }
  return std::nullopt;
}

}  // namespace tl
