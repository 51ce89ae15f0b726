// infer_scopes: places every developer buffer (T::alloc_shared / T::alloc_fragment) in a
// physical memory from how the kernel uses it (docs/developer_mode.md, DEVMODE.md section 3):
//   - gemm operand A or B: shared -> L1 (the lowering loads L0A/L0B from it); a fragment
//     operand is loaded straight into L0A / L0B;
//   - gemm accumulator C: fragment -> L0C (a shared accumulator is an error: the cube
//     accumulates in L0C only);
//   - anything the vector unit touches (tile ops, reductions, element loads and stores, Parallel
//     loops), and buffers that are only copied: UB.
// A T::fill / T::clear of an accumulator is a cube clear (lower_cube_ops folds it into the
// gemm's init), not a vector use. A gemm accumulator the vector unit reads afterwards stays in
// L0C and gets a UB twin `c_ub`, filled by one crossing copy before the first vector use
// (legalize_copies makes it a channel through a GM workspace). Other buffers both cores use
// (a tile the vector unit produces for the cube, a crossing inside a loop) are errors that name
// both uses, never a silent wrong placement.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "developer.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/op.h"
#include "tl/pass.h"

namespace tl {
namespace {

enum Role : unsigned { kCubeA = 1, kCubeB = 2, kCubeC = 4, kVector = 8 };

bool is_developer_scope(MemScope s) { return s == MemScope::Shared || s == MemScope::Fragment; }

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
    if (n->op->name == "gemm") {
      const unsigned roles[3] = {kCubeA, kCubeB, kCubeC};
      for (int i = 0; i < 3 && i < static_cast<int>(n->args.size()); ++i)
        if (n->args[i].is_region()) add(n->args[i].region.buffer, roles[i]);
    } else if (n->op->name == "tile.fill") {
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
      current_ = Stmt(std::shared_ptr<const StmtNode>(std::shared_ptr<const StmtNode>{}, n));  // the IR outlives it
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
/// on C): it stays in L0C and gets a UB twin, filled by one crossing copy (legalize_copies
/// turns it into a channel through a GM workspace).
bool is_cube_to_vector(const BufferNode* b, const Uses& u) {
  return u.roles == (kCubeC | kVector) && b->scope == MemScope::Fragment;
}

/// The physical scope of a developer buffer with `roles`; a user error when there is none.
MemScope place(const BufferNode* b, const Uses& u) {
  const bool cube = u.roles & (kCubeA | kCubeB | kCubeC);
  const Buffer handle(std::shared_ptr<const BufferNode>(std::shared_ptr<const BufferNode>{}, b));
  if (is_cube_to_vector(b, u)) return MemScope::L0C;
  if (cube && (u.roles & kVector))
    user_error(b->loc,
               "buffer {} is used by the cube core ({}) and by the vector cores ({}); data crosses cores "
               "through a GM workspace channel, which developer mode lowers for a gemm accumulator the vector "
               "unit reads afterwards, not yet for a tile the vector unit produces for the cube: use two buffers "
               "and copy through a T::alloc_workspace tensor, or write this part in expert mode",
               dev::describe(handle), dev::describe(u.first_cube), dev::describe(u.first_vector));
  if (!cube) return MemScope::UB;
  const unsigned cube_roles = u.roles & (kCubeA | kCubeB | kCubeC);
  // One L1 tile may feed both operands (A x A^T); L0A, L0B and L0C are separate memories.
  const bool shared_operand = cube_roles == (kCubeA | kCubeB) && b->scope == MemScope::Shared;
  if (cube_roles != kCubeA && cube_roles != kCubeB && cube_roles != kCubeC && !shared_operand)
    user_error(b->loc, "buffer {} is used in two gemm operand positions (first at {}); A, B and the accumulator C "
                       "live in different memories (a shared tile may feed A and B from L1; a fragment is L0A, L0B or L0C)",
               dev::describe(handle), dev::describe(u.first_cube));
  if (cube_roles == kCubeC) {
    if (b->scope != MemScope::Fragment)
      user_error(b->loc, "buffer {} is the accumulator of {} but was made by T::alloc_shared; the cube "
                         "accumulates in L0C: make it with T::alloc_fragment",
                 dev::describe(handle), dev::describe(u.first_cube));
    return MemScope::L0C;
  }
  if (b->scope == MemScope::Shared) return MemScope::L1;  // the lowering loads L0A / L0B from it
  return cube_roles == kCubeA ? MemScope::L0A : MemScope::L0B;
}

class Placer : public IRMutator {
 public:
  explicit Placer(std::unordered_map<const BufferNode*, MemScope> scopes) : scopes_(std::move(scopes)) {}

  Buffer mutate_buffer(const Buffer& b) override {
    if (!b.defined() || !is_developer_scope(b->scope)) return b;
    auto done = placed_.find(b.get());
    if (done != placed_.end()) return done->second;
    auto it = scopes_.find(b.get());
    MemScope s = it == scopes_.end() ? MemScope::UB : it->second;
    Buffer p = BufferNode::make(b->name, b->dtype, b->shape, s, b->strides, b->address, b->loc, b->origin);
    placed_.emplace(b.get(), p);
    return p;
  }

 protected:
  Stmt mutate_(const AllocateNode* n, const Stmt& self) override {
    if (n->is_view()) {
      // A view lives where its base does.
      Buffer base = mutate_buffer(n->view_of);
      auto it = scopes_.find(n->view_of.get());
      if (it != scopes_.end()) scopes_[n->buffer.get()] = it->second;
      Buffer v = mutate_buffer(n->buffer);
      return v.same_as(n->buffer) && base.same_as(n->view_of) ? self : AllocateNode::make_view(v, base, n->loc);
    }
    return IRMutator::mutate_(n, self);
  }

 private:
  std::unordered_map<const BufferNode*, MemScope> scopes_;
  std::unordered_map<const BufferNode*, Buffer> placed_;
};

/// Gives each cube -> vector buffer its UB twin: in the kernel body, every statement that uses
/// the buffer from the vector side uses the twin instead, and one `T.copy(home, twin)` (with
/// the twin's declaration) goes right before the first of them. The cube's statements must all
/// come before the vector's at the kernel's top level; a buffer both cores use inside one loop
/// needs a channel per iteration (with credits), which is not lowered yet: an error.
class Twinner {
 public:
  Twinner(const KernelNode& k, std::unordered_set<std::string>& taken) : kernel_(k), taken_(taken) {}

  Stmt run(const std::vector<std::pair<Buffer, Buffer>>& homes) {
    std::vector<Stmt> body = top_level(kernel_.body);
    for (const auto& [home, orig] : homes) body = twin(body, home, orig);
    return KernelNode::make(kernel_.num_blocks, kernel_.cid, kernel_.vid, SeqNode::make(std::move(body), kernel_.loc),
                            kernel_.loc, kernel_.threads);
  }

 private:
  static std::vector<Stmt> top_level(const Stmt& s) {
    if (auto* q = s.as<SeqNode>()) return q->stmts;
    return {s};
  }

  /// Which cores' work in `s` touches `b`: bit 1 the cube's (gemm, mma, fills of it), bit 2
  /// the vector's (everything else but copies of it, which are the cube's when b is L0C).
  static unsigned sides(const Stmt& s, const BufferNode* b) {
    unsigned out = 0;
    pre_order_visit(
        s,
        [&](const Stmt& x) {
          if (auto* op = x.as<TileOpNode>()) {
            bool touches = false;
            for (const auto& a : op->args)
              if (a.is_region() && a.region.buffer.get() == b) touches = true;
            if (!touches) return;
            const bool cube = op->op->name == "gemm" || op->op->name == "mma" || op->op->unit == OpUnit::Cube ||
                              (op->op->name == "tile.fill" && op->args[0].is_region() &&
                               op->args[0].region.buffer.get() == b) ||
                              op->op->unit == OpUnit::Move;
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

  std::vector<Stmt> twin(const std::vector<Stmt>& body, const Buffer& home, const Buffer& orig) {
    std::string name = orig->name + "_ub";
    for (int i = 1; taken_.count(name); ++i) name = fmt::format("{}_ub{}", orig->name, i);
    taken_.insert(name);
    Buffer twin = BufferNode::make(name, home->dtype, home->shape, MemScope::UB, {}, -1, orig->loc,
                                    fmt::format("UB twin of '{}'", orig->name));
    std::vector<Stmt> out;
    bool crossed = false;
    Stmt first_vector;
    for (const Stmt& s : body) {
      const unsigned used = sides(s, home.get());
      if (used == 3u)
        user_error(s->loc,
                   "buffer {} is written by the cube and read by the vector unit inside one statement ({}); data "
                   "crosses cores through a GM workspace channel, which developer mode lowers between top-level "
                   "statements of the kernel, not yet inside a loop (that needs one channel per iteration)",
                   dev::describe(orig), dev::describe(s));
      if ((used & 1u) && crossed)
        user_error(s->loc,
                   "buffer {} is used by the cube again ({}) after the vector unit read it ({}); developer mode "
                   "lowers one crossing from the cube to the vector unit per buffer",
                   dev::describe(orig), dev::describe(s), dev::describe(first_vector));
      if ((used & 2u) && !crossed) {
        out.push_back(AllocateNode::make(twin, s->loc));
        out.push_back(make_tile_op("copy", {BufferRegion::full(home), BufferRegion::full(twin)}, {}, s->loc));
        crossed = true;
        first_vector = s;
      }
      out.push_back(used & 2u ? Retarget(home.get(), twin).mutate(s) : s);
    }
    return out;
  }

  /// Replaces one buffer by another everywhere in a statement.
  struct Retarget : IRMutator {
    Retarget(const BufferNode* from, Buffer to) : from_(from), to_(std::move(to)) {}
    Buffer mutate_buffer(const Buffer& b) override { return b.get() == from_ ? to_ : b; }
    const BufferNode* from_;
    Buffer to_;
  };

  const KernelNode& kernel_;
  std::unordered_set<std::string>& taken_;
};

}  // namespace

PrimFunc infer_scopes(const PrimFunc& f, const Target&) {
  if (!dev::is_developer(f)) return f;
  RoleCollector roles;
  roles.visit(f->body);
  roles.settle_fills();
  std::unordered_map<const BufferNode*, MemScope> scopes;
  std::vector<const BufferNode*> crossing;
  for (const auto& [b, u] : roles.uses) {
    scopes[b] = place(b, u);
    if (is_cube_to_vector(b, u)) crossing.push_back(b);
  }
  Placer placer(std::move(scopes));
  Stmt body = placer.mutate(f->body);
  if (!crossing.empty()) {
    // Declaration order, so twins are named and placed deterministically.
    std::vector<std::pair<Buffer, Buffer>> homes;
    pre_order_visit(f->body, [&](const Stmt& s) {
      if (auto* a = s.as<AllocateNode>(); a && !a->is_view())
        if (std::find(crossing.begin(), crossing.end(), a->buffer.get()) != crossing.end())
          homes.push_back({placer.mutate_buffer(a->buffer), a->buffer});
    });
    PrimFunc placed = with_body(f, body);
    std::unordered_set<std::string> taken = arith::names_in(placed);
    const KernelNode* k = dev::find_kernel(placed);
    Stmt kernel = Twinner(*k, taken).run(homes);
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
