// infer_scopes: places every developer buffer (T::alloc_shared / T::alloc_fragment) in a
// physical memory from how the kernel uses it (docs/developer_mode.md section 2):
//   - gemm operand A or B: shared -> L1 (the lowering loads L0A/L0B from it); a fragment
//     operand is loaded straight into L0A / L0B;
//   - gemm accumulator C: fragment -> L0C (a shared accumulator is an error: the cube
//     accumulates in L0C only);
//   - anything the vector unit touches (tile ops, reductions, element loads and stores, Parallel
//     loops), and buffers that are only copied: UB.
// A T::fill / T::clear of an accumulator is a cube clear (lower_cube_ops folds it into the
// gemm's init), not a vector use. A gemm accumulator the vector unit reads stays in L0C and
// gets a UB twin `c_ub`; a shared tile the vector unit produces as a gemm's A or B stays in UB
// and gets an L1 twin `p_l1`. A crossing copy fills the twin after each producer write, before
// the consumer's next use, at the kernel's top level or inside a loop (legalize_copies makes it
// a channel through a GM workspace). Other buffers both cores use are errors that name both
// uses, never a silent wrong placement.
// T.gemm_v0 on developer tiles is T.gemm (TileLang-Ascend's developer-mode scripts call it so; the
// arguments are the same): it is renamed first, so placement and lowering see one gemm.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "developer.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/pass.h"

namespace tl {
namespace {

enum Role : unsigned { kCubeA = 1, kCubeB = 2, kCubeC = 4, kVector = 8 };

bool is_developer_scope(MemScope s) {
  return s == MemScope::Shared || s == MemScope::Fragment;
}

struct Uses {
  unsigned roles = 0;
  Stmt first_cube, first_vector;  // the first statement giving each role, for messages
};

/// Collects the roles of every developer buffer.
class RoleCollector : public IRVisitor {
 public:
  std::unordered_map<const BufferNode*, Uses> uses;
  std::unordered_map<const BufferNode*, const BufferNode*> view_base;  // view -> base

  void visit(const Stmt& s) override {
    Stmt saved = current_;
    current_ = s;
    IRVisitor::visit(s);
    current_ = saved;
  }

 protected:
  void visit_(const AllocateNode* n) override {
    if (n->is_view()) view_base[n->buffer.get()] = base_of(n->view_of.get());
    IRVisitor::visit_(n);
  }
  void visit_(const TileOpNode* n) override {
    if (n->op == &ops::gemm()) {
      const unsigned roles[3] = {kCubeA, kCubeB, kCubeC};
      for (int i = 0; i < 3 && i < static_cast<int>(n->args.size()); ++i)
        if (n->args[i].is_region()) add(n->args[i].region.buffer, roles[i]);
    } else if (n->op == &ops::tile::fill()) {
      fills_.push_back(n);  // a vector use unless the buffer turns out to be an accumulator
    } else if (n->op->unit == OpUnit::Vector) {
      for (const auto& a : n->args)
        if (a.is_region()) add(a.region.buffer, kVector);
    }
    // Copies give no role: their path follows from the two sides' placements.
    IRVisitor::visit_(n);
  }
  void visit_(const StoreNode* n) override {
    add(n->buffer, kVector);
    IRVisitor::visit_(n);
  }
  void visit_(const LoadNode* n) override {
    add(n->buffer, kVector);
    IRVisitor::visit_(n);
  }

 public:
  /// Fills of buffers that are not accumulators are vector uses.
  void settle_fills() {
    for (const TileOpNode* n : fills_) {
      const Buffer& b = n->args[0].region.buffer;
      if (!n->args[0].is_region()) continue;
      auto it = uses.find(base_of(b.get()));
      if (it != uses.end() && (it->second.roles & kCubeC)) continue;
      current_ = Stmt(std::shared_ptr<const StmtNode>(std::shared_ptr<const StmtNode>{},
                                                      n));  // the IR outlives it
      add(b, kVector);
    }
  }

 private:
  const BufferNode* base_of(const BufferNode* b) const {
    auto it = view_base.find(b);
    return it == view_base.end() ? b : it->second;
  }
  void add(const Buffer& b, unsigned role) {
    if (!b.defined() || !is_developer_scope(b->scope)) return;
    Uses& u = uses[base_of(b.get())];
    const Stmt& where = current_;
    if ((role & kVector) && !u.first_vector.defined()) u.first_vector = where;
    if ((role & ~kVector) && !u.first_cube.defined()) u.first_cube = where;
    u.roles |= role;
  }

  Stmt current_;
  std::vector<const TileOpNode*> fills_;
};

/// A fragment the cube accumulates and the vector unit then reads (C = A x B, then element work
/// on C): it stays in L0C and gets a UB twin, filled by a crossing copy (legalize_copies turns
/// it into a channel through a GM workspace).
bool is_cube_to_vector(const BufferNode* b, const Uses& u) {
  return u.roles == (kCubeC | kVector) && b->scope == MemScope::Fragment;
}
/// A shared tile the vector unit produces and the cube multiplies (P of attention, then P x V):
/// it lives in UB and gets an L1 twin, filled by a crossing copy.
bool is_vector_to_cube(const BufferNode* b, const Uses& u) {
  return (u.roles == (kCubeA | kVector) || u.roles == (kCubeB | kVector)) &&
         b->scope == MemScope::Shared;
}

/// The physical scope of a developer buffer with `roles`; a user error when there is none.
MemScope place(const BufferNode* b, const Uses& u) {
  const bool cube = u.roles & (kCubeA | kCubeB | kCubeC);
  const Buffer handle(std::shared_ptr<const BufferNode>(std::shared_ptr<const BufferNode>{}, b));
  if (is_cube_to_vector(b, u)) return MemScope::L0C;
  if (is_vector_to_cube(b, u)) return MemScope::UB;
  if (cube && (u.roles & kVector))
    user_error(
        b->loc,
        "buffer {} is used by the cube core ({}) and by the vector cores ({}); data crosses cores "
        "through a GM workspace channel, which developer mode lowers for a gemm accumulator (a "
        "fragment) "
        "the vector unit reads and for a shared tile the vector unit produces as a gemm's A or B: "
        "use two "
        "buffers and copy through a T::alloc_workspace tensor, or write this part in expert mode",
        dev::describe(handle), dev::describe(u.first_cube), dev::describe(u.first_vector));
  if (!cube) return MemScope::UB;
  const unsigned cube_roles = u.roles & (kCubeA | kCubeB | kCubeC);
  // One L1 tile may feed both operands (A x A^T); L0A, L0B and L0C are separate memories.
  const bool shared_operand = cube_roles == (kCubeA | kCubeB) && b->scope == MemScope::Shared;
  if (cube_roles != kCubeA && cube_roles != kCubeB && cube_roles != kCubeC && !shared_operand)
    user_error(
        b->loc,
        "buffer {} is used in two gemm operand positions (first at {}); A, B and the accumulator C "
        "live in different memories (a shared tile may feed A and B from L1; a fragment is L0A, "
        "L0B or L0C)",
        dev::describe(handle), dev::describe(u.first_cube));
  if (cube_roles == kCubeC) {
    if (b->scope != MemScope::Fragment)
      user_error(b->loc,
                 "buffer {} is the accumulator of {} but was made by T::alloc_shared; the cube "
                 "accumulates in L0C: make it with T::alloc_fragment",
                 dev::describe(handle), dev::describe(u.first_cube));
    return MemScope::L0C;
  }
  if (b->scope == MemScope::Shared) return MemScope::L1;  // the lowering loads L0A / L0B from it
  return cube_roles == kCubeA ? MemScope::L0A : MemScope::L0B;
}

/// A buffer both cores use: its home (on the producer's core), the author's buffer (for names
/// and messages), and its twin on the other core.
struct Crossing {
  Buffer home, orig, twin;
  CoreKind producer;
};

/// Gives each crossing buffer its twin on the consumer's core: statements that use the buffer
/// from the consumer's side use the twin, and a `T.copy(home, twin)` goes right before the first
/// of them after each producer statement, in the block where both happen (the kernel's top
/// level, or a loop body: one crossing per iteration). The twin is declared right after its
/// home. What this cannot order is an error naming the statement: a consumer use before any
/// producer one, a loop whose body reads the twin before writing the home (a crossing carried
/// across iterations), both sides inside one statement that is neither a loop nor an if.
class Twinner {
 public:
  explicit Twinner(const KernelNode& k) : kernel_(k) {
    // Lets whose value reads memory (directly or through such a let): a core cannot recompute
    // them from the other core's memory (split_cube_vector), so a branch on one stays one core's.
    pre_order_visit(k.body, [&](const Stmt& s) {
      if (auto* l = s.as<LetNode>(); l && !both_cores_know(l->value))
        from_memory_.insert(l->var.node());
    });
  }

  Stmt run(const std::vector<Crossing>& crossings) {
    std::vector<Stmt> body = stmts_of(kernel_.body);
    for (const Crossing& c : crossings) {
      State st;
      body = declare_twin(twin_block(body, c, st), c);
    }
    return KernelNode::make(kernel_.num_blocks, kernel_.cid, kernel_.vid,
                            SeqNode::make(std::move(body), kernel_.loc), kernel_.loc,
                            kernel_.threads);
  }

 private:
  struct State {
    bool dirty = false;    // the producer wrote the home since the last crossing
    bool crossed = false;  // some crossing precedes (the twin holds data)
  };

  static std::vector<Stmt> stmts_of(const Stmt& s) {
    if (auto* q = s.as<SeqNode>()) return q->stmts;
    return {s};
  }

  static unsigned bit(CoreKind c) { return c == CoreKind::Cube ? 1u : 2u; }

  /// Which cores' work in `s` touches `b`: bit 1 the cube's (gemm, mma, cube ops, a fill of an
  /// L0C home), bit 2 the vector's (vector ops, element loads and stores); a copy of the home is
  /// its home core's.
  static unsigned sides(const Stmt& s, const BufferNode* b) {
    const bool home_l0c = b->scope == MemScope::L0C;
    unsigned out = 0;
    pre_order_visit(
        s,
        [&](const Stmt& x) {
          if (auto* op = x.as<TileOpNode>()) {
            bool touches = false;
            for (const auto& a : op->args)
              if (a.is_region() && a.region.buffer.get() == b) touches = true;
            if (!touches) return;
            bool cube;
            if (op->op == &ops::gemm() || op->op == &ops::mma() || op->op->unit == OpUnit::Cube)
              cube = true;
            else if (op->op->unit == OpUnit::Move || op->op == &ops::tile::fill())
              cube = home_l0c;
            else
              cube = false;
            out |= cube ? 1u : 2u;
          } else if (auto* st = x.as<StoreNode>(); st && st->buffer.get() == b) {
            out |= 2u;
          }
        },
        [&](const Expr& e) {
          if (auto* ld = e.as<LoadNode>(); ld && ld->buffer.get() == b) out |= 2u;
        });
    return out;
  }

  std::vector<Stmt> twin_block(const std::vector<Stmt>& body, const Crossing& c, State& st) {
    const unsigned prod = bit(c.producer), cons = 3u - prod;
    const char* producer = c.producer == CoreKind::Cube ? "cube" : "vector unit";
    const char* consumer = c.producer == CoreKind::Cube ? "vector unit" : "cube";
    std::vector<Stmt> out;
    for (const Stmt& s : body) {
      const unsigned used = sides(s, c.home.get());
      if (used == 3u) {
        if (auto* branch = s.as<IfNode>()) {
          out.push_back(twin_if(*branch, c, st));
          continue;
        }
        auto* loop = s.as<ForNode>();
        if (!loop)
          user_error(s->loc,
                     "buffer {} is used by the cube and by the vector unit inside one statement "
                     "({}) that is neither a loop nor an if; developer mode lowers crossings "
                     "between the statements of a block",
                     dev::describe(c.orig), dev::describe(s));
        // Inside the loop the producer must come first in every iteration, or the crossing is
        // carried from one iteration to the next (not lowered yet).
        for (const Stmt& x : stmts_of(loop->body)) {
          const unsigned u = sides(x, c.home.get());
          if (u & prod) break;
          if (u & cons)
            user_error(x->loc,
                       "buffer {}: {} reads it from the {} before the {} writes it in the same "
                       "iteration of {}; a "
                       "crossing carried from one iteration to the next is not lowered yet",
                       dev::describe(c.orig), dev::describe(x), consumer, producer,
                       dev::describe(s));
        }
        std::vector<Stmt> inner = twin_block(stmts_of(loop->body), c, st);
        out.push_back(ForNode::make(loop->var, loop->min, loop->extent, loop->for_kind,
                                    loop->num_stages, loop->skew,
                                    SeqNode::make(std::move(inner), loop->body->loc), loop->loc));
        continue;
      }
      if (used & cons) {
        // Only the consumer uses it, inside an if both cores can evaluate: the crossing goes
        // into the branches that use it, so a tile read only on some iterations (a q tile's
        // last kv step) crosses only there instead of after every write (docs/developer_mode.md
        // "Data that crosses cores").
        if (auto* branch = s.as<IfNode>(); branch && st.dirty && both_cores_know(branch->cond)) {
          out.push_back(twin_if(*branch, c, st));
          continue;
        }
        if (st.dirty) {
          out.push_back(make_tile_op(
              ops::copy(), {BufferRegion::full(c.home), BufferRegion::full(c.twin)}, {}, s->loc));
          st.dirty = false;
          st.crossed = true;
        } else if (!st.crossed) {
          user_error(s->loc,
                     "buffer {}: {} uses it on the {} before the {} wrote it; nothing to move "
                     "across cores",
                     dev::describe(c.orig), dev::describe(s), consumer, producer);
        }
        out.push_back(Retarget(c.home.get(), c.twin).mutate(s));
        continue;
      }
      if (used & prod) st.dirty = true;
      out.push_back(s);
    }
    return out;
  }

  /// An if with both sides in it (T.Persistent's tile guard around a GEMM and its epilogue,
  /// issue 29): each branch is a block of its own, crossing where its statements do, from the
  /// state before the if. Both cores evaluate the same scalar condition, so a channel inside a
  /// branch runs on both or on neither. After the if the home is dirty if either branch left
  /// it dirty, and the twin holds data only if both branches leave it so.
  Stmt twin_if(const IfNode& n, const Crossing& c, State& st) {
    State then_st = st, else_st = st;
    std::vector<Stmt> then_body = twin_block(stmts_of(n.then_case), c, then_st);
    Stmt else_case;
    if (n.else_case.defined()) {
      std::vector<Stmt> else_body = twin_block(stmts_of(n.else_case), c, else_st);
      else_case = SeqNode::make(std::move(else_body), n.else_case->loc);
    }
    st.dirty = then_st.dirty || else_st.dirty;
    st.crossed = then_st.crossed && else_st.crossed;
    return IfNode::make(n.cond, SeqNode::make(std::move(then_body), n.then_case->loc), else_case,
                        n.loc);
  }

  /// The twin's declaration right after its home's (the kernel's top level), else first.
  static std::vector<Stmt> declare_twin(std::vector<Stmt> body, const Crossing& c) {
    Stmt decl = AllocateNode::make(c.twin, c.orig->loc);
    for (size_t i = 0; i < body.size(); ++i)
      if (auto* a = body[i].as<AllocateNode>(); a && a->buffer.get() == c.home.get()) {
        body.insert(body.begin() + static_cast<std::ptrdiff_t>(i) + 1, decl);
        return body;
      }
    body.insert(body.begin(), decl);
    return body;
  }

  /// Replaces one buffer by another everywhere in a statement.
  struct Retarget : IRMutator {
    Retarget(const BufferNode* from, Buffer to) : from_(from), to_(std::move(to)) {}
    Buffer mutate_buffer(const Buffer& b) override { return b.get() == from_ ? to_ : b; }
    const BufferNode* from_;
    Buffer to_;
  };

  /// True when `e` reads no memory, directly or through a let that does (scalar state both
  /// cores compute, docs/developer_mode.md "Scalar work and GM element stores").
  bool both_cores_know(const Expr& e) const {
    struct Reads : IRVisitor {
      explicit Reads(const std::unordered_set<const VarNode*>& m) : lets(m) {}
      void visit_(const LoadNode*) override { found = true; }
      void visit_(const VarNode* v) override { found = found || lets.count(v) > 0; }
      const std::unordered_set<const VarNode*>& lets;
      bool found = false;
    } reads(from_memory_);
    reads.visit(e);
    return !reads.found;
  }

  const KernelNode& kernel_;
  std::unordered_set<const VarNode*> from_memory_;
};

/// Every T.gemm_v0 whose operands include a developer tile becomes T.gemm (same arguments and
/// attributes): in a developer kernel gemm_v0 is TileLang-Ascend's spelling of the developer gemm.
struct GemmV0AsGemm : IRMutator {
  Stmt mutate_(const TileOpNode* n, const Stmt& self) override {
    if (n->op != &ops::gemm_v0()) return self;
    bool developer_tile = false;
    for (const auto& a : n->args)
      developer_tile |= a.is_region() && is_developer_scope(a.region.buffer->scope);
    return developer_tile ? TileOpNode::make(&ops::gemm(), n->args, n->attrs, n->loc) : self;
  }
};

}  // namespace

PrimFunc infer_scopes(const PrimFunc& input, const Target&) {
  if (!dev::is_developer(input)) return input;
  const Stmt renamed = GemmV0AsGemm().mutate(input->body);
  const PrimFunc f = renamed.same_as(input->body) ? input : with_body(input, renamed);
  RoleCollector roles;
  roles.visit(f->body);
  roles.settle_fills();
  std::unordered_map<const BufferNode*, MemScope> scopes;
  std::unordered_map<const BufferNode*, CoreKind> crossing;  // author's buffer -> producer core
  for (const auto& [b, u] : roles.uses) {
    scopes[b] = place(b, u);
    if (is_cube_to_vector(b, u)) crossing.emplace(b, CoreKind::Cube);
    if (is_vector_to_cube(b, u)) crossing.emplace(b, CoreKind::Vector);
  }
  dev::Placer placer(std::move(scopes));
  // TileLang-Ascend pairs a crossing copy's write with the other core's read per iteration,
  // whatever their order in the text: order such blocks by that data flow first.
  Stmt body = dev::order_crossings(placer.mutate(f->body));
  if (!crossing.empty()) {
    PrimFunc placed = with_body(f, body);
    std::unordered_set<std::string> taken = arith::names_in(placed);
    // Declaration order, so twins are named and placed deterministically.
    std::vector<Crossing> crossings;
    pre_order_visit(f->body, [&](const Stmt& s) {
      auto* a = s.as<AllocateNode>();
      if (!a || a->is_view()) return;
      auto it = crossing.find(a->buffer.get());
      if (it == crossing.end()) return;
      const Buffer& orig = a->buffer;
      const bool to_vector = it->second == CoreKind::Cube;
      const char* suffix = to_vector ? "_ub" : "_l1";
      std::string name = orig->name + suffix;
      for (int i = 1; taken.count(name); ++i) name = fmt::format("{}{}{}", orig->name, suffix, i);
      taken.insert(name);
      Buffer twin = BufferNode::make(
          name, orig->dtype, orig->shape, to_vector ? MemScope::UB : MemScope::L1, {}, -1,
          orig->loc, fmt::format("{} twin of '{}'", to_vector ? "UB" : "L1", orig->name));
      crossings.push_back({placer.mutate_buffer(orig), orig, twin, it->second});
    });
    Stmt kernel = Twinner(*dev::find_kernel(placed)).run(crossings);
    std::vector<Stmt> top;
    if (auto* seq = body.as<SeqNode>()) {
      for (const auto& s : seq->stmts) top.push_back(s.as<KernelNode>() ? kernel : s);
    } else {
      top.push_back(kernel);
    }
    body = SeqNode::make(std::move(top), body->loc);
  }
  return body.same_as(f->body) ? f : with_body(f, body);
}

}  // namespace tl
