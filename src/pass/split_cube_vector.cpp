// split_cube_vector: turns a developer kernel whose buffers are placed (infer_scopes) and whose
// ops are the cube's and the vector unit's own (lower_cube_ops, vectorize_parallel) into an
// expert kernel: `T.Kernel(n) as (cid, vid)` with one T.Scope("Cube") and one T.Scope("Vector")
// (docs/developer_mode.md, "The cube/vector split"). Each scope is the kernel body *projected* on
// its core: what the core must run, and nothing it need not.
//
// - Work: tile ops, stores to the core's memory and its buffers run where their memory is.
// - A scalar store to a GM tensor has an effect outside the core, so it runs exactly once: on its
//   tensor's *home* core. That is the core whose memory the stored value (or a condition around
//   the store) reads, else the only core whose tile ops touch the tensor, else the only core with
//   work, else the vector core. Either core's scalar unit can store to GM; the other core may then
//   neither touch the tensor nor read it (developer mode orders GM across cores only through its
//   channels), which is an error naming both statements.
// - Scalar state (lets, T.alloc_var stores, and the loops and ifs around them) is recomputed on
//   every core that needs it: a core keeps the definitions of the symbols its kept statements
//   read, transitively (a fixpoint, flow-insensitive: every definition of a needed symbol). A
//   counter in a GEMM K loop that the vector side reads keeps the K loop on the vector side too,
//   with only the counter in it: a few scalar instructions per iteration, cheaper than a
//   cross-core channel for one scalar, and always exact. A value the other core computes from
//   its own memory (UB) cannot be recomputed: using it is an error naming the use.
// - Loops and ifs stay where something kept is inside them. A condition or loop bound that reads
//   memory (a tile element, a GM element) is read into a let first (`cond = x[0, 0] > 0`, then
//   `if cond:`): the scalar load is then an instruction of its own, which insert_syncs orders
//   after the copy that fills the tile (MTE2 -> S) and the hazard checker and timed mode see at
//   its cycle (docs/virtual_npu.md, "Timed mode").
//
// Until split_aiv exists, the vector work runs on AIV 0 of each block (`if vid == 0`), for
// threads = 1 and 2 alike: two AIVs repeating the same work would race on their GM outputs.
// A T.Pipelined loop is projected on both cores with its num_stages (pipeline_loops lowers it).
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_set>

#include "developer.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/pass.h"

namespace tl {
namespace {

CoreKind other(CoreKind c) {
  return c == CoreKind::Cube ? CoreKind::Vector : CoreKind::Cube;
}
int idx(CoreKind c) {
  return c == CoreKind::Cube ? 0 : 1;
}

/// The core a leaf statement runs on; nullopt: none of its own (scalar work, scalar variables,
/// GM stores and GM workspaces, which the splitter places itself).
std::optional<CoreKind> core_of(const Stmt& s, const Target& t) {
  switch (s.kind()) {
    case StmtKind::Allocate:
      return t.memory_core(s.as<AllocateNode>()->buffer->scope);
    case StmtKind::Store:
      return t.memory_core(s.as<StoreNode>()->buffer->scope);
    case StmtKind::TileOp: {
      auto* n = s.as<TileOpNode>();
      // The op's core (op_core, tl/op.h; an illegal copy path: legalize_copies reports it).
      if (auto c = op_core(*n, t)) return c;
      // Any core (debug printing, dcci): placed with the memory of its buffers.
      for (const auto& a : n->args)
        if (a.is_region())
          if (auto c = t.memory_core(a.region.buffer->scope)) return c;
      return CoreKind::Vector;  // a printf without buffers prints once, from AIV 0
    }
    default:
      return std::nullopt;
  }
}

/// A scalar symbol: a let's variable or a T.alloc_var buffer.
using Sym = const void*;

/// What an expression (or the expressions of a statement) reads, in order of first use (so that
/// messages naming the first offending symbol are deterministic).
struct Reads {
  std::vector<Sym> syms;
  std::vector<const BufferNode*> mem;  // buffers loaded other than scalar variables (UB, GM)
  void sym(Sym x) {
    if (std::find(syms.begin(), syms.end(), x) == syms.end()) syms.push_back(x);
  }
  void see(const Expr& x) {
    if (auto* v = x.as<VarNode>()) sym(v);
    if (auto* l = x.as<LoadNode>()) {
      if (l->buffer->scope == MemScope::Var)
        sym(l->buffer.get());
      else
        mem.push_back(l->buffer.get());
    }
  }
  void add(const Expr& e) {
    if (e.defined())
      pre_order_visit(
          LetNode::make(Var("_"), e), [](const Stmt&) {}, [&](const Expr& x) { see(x); });
  }
  void add(const Reads& r) {
    for (Sym x : r.syms) sym(x);
    mem.insert(mem.end(), r.mem.begin(), r.mem.end());
  }
};

/// Every expression a leaf statement evaluates.
Reads leaf_reads(const Stmt& s) {
  Reads r;
  pre_order_visit(
      s, [](const Stmt&) {}, [&](const Expr& e) { r.see(e); });
  return r;
}

/// The expressions a loop or an if evaluates itself (bounds, condition).
Reads control_reads(const StmtNode* s) {
  Reads r;
  if (auto* f = dynamic_cast<const ForNode*>(s)) {
    r.add(f->min);
    r.add(f->extent);
  } else if (auto* n = dynamic_cast<const IfNode*>(s)) {
    r.add(n->cond);
  }
  return r;
}

/// The symbol a scalar definition defines (nullptr: not a definition).
Sym defined_sym(const Stmt& s) {
  if (auto* l = s.as<LetNode>()) return l->var.node();
  if (auto* st = s.as<StoreNode>(); st && st->buffer->scope == MemScope::Var)
    return st->buffer.get();
  return nullptr;
}

/// True if `e` loads memory other than a scalar variable.
bool loads_memory(const Expr& e) {
  Reads r;
  r.add(e);
  return !r.mem.empty();
}

std::string sym_name(Sym s, const std::map<Sym, std::string>& names) {
  auto it = names.find(s);
  return it == names.end() ? "?" : it->second;
}

/// One leaf statement of the kernel body with the loops and ifs around it (outermost first).
struct Leaf {
  Stmt s;
  std::vector<const StmtNode*> ctrl;
  bool in_parallel = false;
  Reads reads;       // what the statement reads
  Reads ctrl_reads;  // what the loops and ifs around it read
};

class Splitter {
 public:
  Splitter(const KernelNode& k, const Target& t, std::unordered_set<std::string>& taken)
      : kernel_(k), target_(t), taken_(taken) {
    collect(k.body);
    find_foreign();
    place_gm_stores();
  }

  /// The kernel body projected on `core` (undefined when nothing is left).
  Stmt project(CoreKind core) {
    core_ = core;
    needed_.clear();
    // The symbols this core needs: read by its work, by the loops and ifs around it, and by the
    // definitions of symbols it needs; to a fixpoint.
    for (bool grew = true; grew;) {
      grew = false;
      for (const Leaf& l : leaves_) {
        if (!kept(l.s)) continue;
        for (const Reads* r : {&l.reads, &l.ctrl_reads})
          for (Sym s : r->syms)
            if (defs_.count(s)) grew |= needed_.insert(s).second;
      }
    }
    bool mine = false;
    Stmt body = rebuild(kernel_.body, mine);
    return mine ? body : Stmt();
  }

 private:
  void collect(const Stmt& s) {
    if (!s.defined()) return;
    if (auto* q = s.as<SeqNode>()) {
      for (const Stmt& x : q->stmts) collect(x);
      return;
    }
    if (auto* f = s.as<ForNode>()) {
      ctrl_.push_back(f);
      parallel_ += f->for_kind == ForKind::Parallel;
      collect(f->body);
      parallel_ -= f->for_kind == ForKind::Parallel;
      ctrl_.pop_back();
      return;
    }
    if (auto* n = s.as<IfNode>()) {
      ctrl_.push_back(n);
      collect(n->then_case);
      collect(n->else_case);
      ctrl_.pop_back();
      return;
    }
    Leaf leaf{s, ctrl_, parallel_ > 0, leaf_reads(s), {}};
    for (const StmtNode* c : ctrl_) leaf.ctrl_reads.add(control_reads(c));
    leaves_.push_back(std::move(leaf));
    if (Sym d = defined_sym(s)) {
      defs_[d].push_back(leaves_.size() - 1);
      if (auto* l = s.as<LetNode>())
        names_[d] = l->var.name();
      else
        names_[d] = s.as<StoreNode>()->buffer->name;
    }
    if (auto c = core_of(s, target_)) {
      if (s.kind() != StmtKind::Allocate || s.as<AllocateNode>()->buffer->scope != MemScope::GM)
        work_[idx(*c)] = true;
      if (s.kind() == StmtKind::TileOp)
        for (const dev::Touch& t : dev::touches_of(s, target_))
          if (t.buffer->scope == MemScope::GM) {
            if (t.write) gm_tile_writes_[t.buffer].insert(*c);
            gm_tile_touches_[t.buffer].insert(*c);
            first_tile_use_.try_emplace({t.buffer, idx(*c)}, s);
          }
    }
  }

  /// The symbols computed from the memory of the other core than c, for each c: a definition
  /// that loads it, or reads such a symbol (the scalar unit reaches only UB and GM: UB is the
  /// vector core's).
  void find_foreign() {
    for (CoreKind c : {CoreKind::Cube, CoreKind::Vector}) {
      std::set<Sym>& f = foreign_[idx(c)];
      for (bool grew = true; grew;) {
        grew = false;
        for (const auto& [sym, ls] : defs_) {
          if (f.count(sym)) continue;
          for (size_t i : ls) {
            const Reads& r = leaves_[i].reads;
            bool from_other = false;
            for (const BufferNode* b : r.mem)
              if (auto m = target_.memory_core(b->scope); m && *m != c) from_other = true;
            for (Sym s : r.syms) from_other = from_other || f.count(s);
            if (from_other) {
              grew |= f.insert(sym).second;
              break;
            }
          }
        }
      }
    }
  }

  /// The core whose memory statement `l` (with the conditions around it) reads, if any.
  std::optional<CoreKind> data_core(const Leaf& l) const {
    for (const Reads* r : {&l.reads, &l.ctrl_reads})
      for (const BufferNode* b : r->mem)
        if (auto m = target_.memory_core(b->scope)) return m;
    for (CoreKind c : {CoreKind::Cube, CoreKind::Vector})
      for (const Reads* r : {&l.reads, &l.ctrl_reads})
        for (Sym s : r->syms)
          if (foreign_[idx(other(c))].count(s)) return c;  // computed from c's memory
    return std::nullopt;
  }

  /// Each GM tensor the scalar unit stores to gets one home core (see the file comment).
  void place_gm_stores() {
    // In program order of the tensors' first stores, so that the first error is deterministic.
    std::vector<const BufferNode*> order;
    std::map<const BufferNode*, std::vector<const Leaf*>> stores;
    for (const Leaf& l : leaves_)
      if (auto* st = l.s.as<StoreNode>(); st && st->buffer->scope == MemScope::GM) {
        auto& v = stores[st->buffer.get()];
        if (v.empty()) order.push_back(st->buffer.get());
        v.push_back(&l);
      }
    for (const BufferNode* g : order) {
      const std::vector<const Leaf*>& ls = stores.at(g);
      std::optional<CoreKind> home;
      const Leaf* why = nullptr;
      for (const Leaf* l : ls) {
        // An element loop runs on the vector core (vectorize_parallel lowers it there).
        std::optional<CoreKind> c =
            l->in_parallel ? std::optional<CoreKind>(CoreKind::Vector) : data_core(*l);
        if (!c) continue;
        if (home && *home != *c)
          user_error(l->s->loc,
                     "{} stores to the GM tensor '{}' from the {} core's data, and {} from the {} "
                     "core's; the scalar "
                     "unit of one core stores to a tensor (developer mode orders GM across cores "
                     "only through its "
                     "channels): store the two parts to different tensors",
                     dev::describe(l->s), g->name, core_name(*c), dev::describe(why->s),
                     core_name(*home));
        home = c;
        why = l;
      }
      if (!home) {
        auto it = gm_tile_touches_.find(g);
        if (it != gm_tile_touches_.end() && it->second.size() == 1)
          home = *it->second.begin();
        else if (work_[0] != work_[1])
          home = work_[0] ? CoreKind::Cube : CoreKind::Vector;
        else
          home = CoreKind::Vector;
      }
      home_[g] = *home;
      // The other core may not touch the tensor with tile ops: nothing would order the two.
      auto it = first_tile_use_.find({g, idx(other(*home))});
      if (it != first_tile_use_.end())
        user_error(
            ls[0]->s->loc,
            "{} stores to the GM tensor '{}' from the scalar unit of the {} core, and {} on the "
            "{} core touches it too; developer mode orders GM across cores only through its "
            "channels: store to '{}' from one core, or copy through a tile",
            dev::describe(ls[0]->s), g->name, core_name(*home), dev::describe(it->second),
            core_name(other(*home)), g->name);
    }
  }

  /// Whether leaf `s` runs on the current core.
  bool kept(const Stmt& s) const {
    if (auto* a = s.as<AllocateNode>()) {
      if (a->buffer->scope == MemScope::GM) return false;  // declared at kernel level
      // A register: declared where the variable is needed (or everywhere, if nothing stores it).
      if (a->buffer->scope == MemScope::Var)
        return needed_.count(a->buffer.get()) || !defs_.count(a->buffer.get());
    }
    if (auto* st = s.as<StoreNode>(); st && st->buffer->scope == MemScope::GM)
      return home_.at(st->buffer.get()) == core_;
    // A definition computed from the other core's memory is that core's; a use of it here is
    // reported where it happens (check_uses).
    if (Sym d = defined_sym(s)) return needed_.count(d) > 0 && !foreign_[idx(core_)].count(d);
    auto c = core_of(s, target_);
    return c && *c == core_;
  }
  /// Whether leaf `s` is a reason to keep the loops and ifs around it (a variable's declaration
  /// is not).
  bool counts(const Stmt& s) const {
    if (auto* a = s.as<AllocateNode>(); a && a->buffer->scope == MemScope::Var) return false;
    return kept(s);
  }

  /// `s` with only what the current core runs (undefined when nothing is left); `mine` is set
  /// when something that counts is left.
  Stmt rebuild(const Stmt& s, bool& mine) {
    if (!s.defined()) return s;
    switch (s.kind()) {
      case StmtKind::Seq: {
        std::vector<Stmt> out;
        for (const auto& c : s.as<SeqNode>()->stmts)
          if (Stmt p = rebuild(c, mine); p.defined()) out.push_back(p);
        return out.empty() ? Stmt() : SeqNode::make(std::move(out), s->loc);
      }
      case StmtKind::For: {
        auto* f = s.as<ForNode>();
        bool inside = false;
        Stmt body = rebuild(f->body, inside);
        if (!inside) return Stmt();
        mine = true;
        check_local(f->min, s, "loop start");
        check_local(f->extent, s, "loop extent");
        std::vector<Stmt> out;
        Expr lo = read_first(f->min, s, "start", out), n = read_first(f->extent, s, "extent", out);
        out.push_back(
            ForNode::make(f->var, lo, n, f->for_kind, f->num_stages, f->skew, body, f->loc));
        return SeqNode::make(std::move(out), s->loc);
      }
      case StmtKind::If: {
        auto* n = s.as<IfNode>();
        bool inside = false;
        Stmt t = rebuild(n->then_case, inside), e = rebuild(n->else_case, inside);
        if (!inside) return Stmt();
        mine = true;
        check_local(n->cond, s, "condition");
        std::vector<Stmt> out;
        Expr cond = read_first(n->cond, s, "cond", out);
        out.push_back(IfNode::make(cond, t.defined() ? t : SeqNode::make({}, n->loc), e, n->loc));
        return SeqNode::make(std::move(out), s->loc);
      }
      default: {
        if (!kept(s)) return Stmt();
        mine = mine || counts(s);
        check_uses(s);
        return s;
      }
    }
  }

  /// `e`, or a fresh let's variable bound to it (appended to `lets`) when `e` loads memory: the
  /// load becomes an instruction of its own (see the file comment). One variable per statement
  /// and role, shared by both cores' copies, as the lets both cores run are.
  Expr read_first(const Expr& e, const Stmt& s, const char* role, std::vector<Stmt>& lets) {
    if (!loads_memory(e)) return e;
    auto key = std::make_pair(s.get(), std::string(role));
    auto it = hoisted_.find(key);
    if (it == hoisted_.end()) {
      std::string name = role;
      for (int i = 1; taken_.count(name); ++i) name = fmt::format("{}_{}", role, i);
      taken_.insert(name);
      it = hoisted_.emplace(key, Var(name, e.dtype())).first;
    }
    lets.push_back(LetNode::make(it->second, e, s->loc));
    return it->second;
  }

  /// A kept statement may read neither a symbol computed from the other core's memory nor a GM
  /// tensor the other core writes.
  void check_uses(const Stmt& s) const {
    Reads r = leaf_reads(s);
    for (Sym x : r.syms)
      if (foreign_[idx(core_)].count(x))
        user_error(
            s->loc,
            "{} uses '{}', which is computed from the other core's memory; a value crosses cores "
            "only through a channel (a GM workspace copy), which developer mode does not lower for "
            "scalars: compute it on both sides from GM data",
            dev::describe(s), sym_name(x, names_));
    for (const BufferNode* b : r.mem)
      if (auto m = target_.memory_core(b->scope); m && *m != core_)
        user_error(s->loc,
                   "{} reads '{}' ({}), which lives on the {} core, but runs on the {} core; a "
                   "value crosses "
                   "cores only through a channel (a GM workspace copy), which developer mode does "
                   "not lower "
                   "for scalars",
                   dev::describe(s), b->name, scope_name(b->scope), core_name(*m),
                   core_name(core_));
    check_gm_reads(r, s);
  }
  void check_gm_reads(const Reads& r, const Stmt& s) const {
    for (const BufferNode* b : r.mem) {
      if (b->scope != MemScope::GM) continue;
      auto h = home_.find(b);
      auto w = gm_tile_writes_.find(b);
      const bool other_writes = (h != home_.end() && h->second != core_) ||
                                (w != gm_tile_writes_.end() && w->second.count(other(core_)));
      if (other_writes)
        user_error(
            s->loc,
            "{} reads the GM tensor '{}' on the {} core, but the {} core writes it; developer mode "
            "orders GM across cores only through its channels: read it on the core that writes it",
            dev::describe(s), b->name, core_name(core_), core_name(other(core_)));
    }
  }
  void check_local(const Expr& e, const Stmt& s, const char* what) const {
    Reads r;
    r.add(e);
    for (Sym x : r.syms)
      if (foreign_[idx(core_)].count(x))
        user_error(s->loc,
                   "{}: its {} is computed from the other core's memory, but it also controls work "
                   "of the {} "
                   "core; a value crosses cores only through a channel (a GM workspace copy), "
                   "which developer "
                   "mode does not lower for scalars: compute it on both sides from GM data",
                   dev::describe(s), what, core_name(core_));
    for (const BufferNode* b : r.mem)
      if (auto m = target_.memory_core(b->scope); m && *m != core_)
        user_error(
            s->loc,
            "{}: its {} reads '{}' ({}), which lives on the {} core, but it also controls work of "
            "the "
            "{} core; a value crosses cores only through a channel (a GM workspace copy), which "
            "developer mode does not lower for scalars: compute it on both sides from GM data",
            dev::describe(s), what, b->name, scope_name(b->scope), core_name(*m), core_name(core_));
    check_gm_reads(r, s);
  }

  const KernelNode& kernel_;
  const Target& target_;
  std::unordered_set<std::string>& taken_;
  std::vector<Leaf> leaves_;
  std::vector<const StmtNode*> ctrl_;
  int parallel_ = 0;
  std::map<Sym, std::vector<size_t>> defs_;  // symbol -> its definitions (indices into leaves_)
  std::map<Sym, std::string> names_;
  std::set<Sym> foreign_[2];  // per core: symbols computed from the other core's memory
  bool work_[2] = {false, false};
  std::map<const BufferNode*, std::set<CoreKind>> gm_tile_touches_, gm_tile_writes_;
  std::map<std::pair<const BufferNode*, int>, Stmt> first_tile_use_;
  std::map<const BufferNode*, CoreKind> home_;  // GM tensors the scalar unit stores to
  std::map<std::pair<const StmtNode*, std::string>, Var> hoisted_;
  CoreKind core_ = CoreKind::Cube;
  std::set<Sym> needed_;
};

}  // namespace

PrimFunc split_cube_vector(const PrimFunc& f, const Target& target) {
  if (!dev::is_developer(f)) return f;
  const KernelNode* k = dev::find_kernel(f);
  // Fresh names: the printed kernel must parse back with one binding per name.
  std::unordered_set<std::string> taken = arith::names_in(f);
  Splitter splitter(*k, target, taken);
  Stmt cube = splitter.project(CoreKind::Cube);
  Stmt vec = splitter.project(CoreKind::Vector);
  std::string vid_name = "vid";
  for (int i = 1; taken.count(vid_name); ++i) vid_name = fmt::format("vid_{}", i);
  Var vid(vid_name);
  std::vector<Stmt> scopes;
  // GM workspaces (T.alloc_workspace, legalize_copies' channels) are shared by both cores:
  // declared at kernel level, before the scopes.
  pre_order_visit(k->body, [&](const Stmt& s) {
    if (auto* a = s.as<AllocateNode>(); a && a->buffer->scope == MemScope::GM) scopes.push_back(s);
  });
  if (cube.defined()) scopes.push_back(ScopeNode::make(CoreKind::Cube, cube, k->loc));
  if (vec.defined())
    scopes.push_back(
        ScopeNode::make(CoreKind::Vector, IfNode::make(vid == 0, vec, Stmt(), k->loc), k->loc));
  Stmt kernel = KernelNode::make(k->num_blocks, k->cid, vid,
                                 SeqNode::make(std::move(scopes), k->loc), k->loc);
  // The kernel statement replaced inside the function body.
  std::vector<Stmt> top;
  if (auto* seq = f->body.as<SeqNode>()) {
    for (const auto& s : seq->stmts) top.push_back(s.as<KernelNode>() ? kernel : s);
  } else {
    top.push_back(kernel);
  }
  // The expert kernel says what it was lowered from (the later passes' gates read it).
  auto g =
      std::make_shared<PrimFuncNode>(*with_body(f, SeqNode::make(std::move(top), f->body->loc)));
  g->lowered_from_developer = k->threads;
  return g;
}

}  // namespace tl
