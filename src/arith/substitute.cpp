// Substitution of variables and copying of IR with fresh binders, on IRMutator so that every
// expression the mutator reaches (loop bounds, region starts and extents, event ids, tile-op
// scalars, ...) is rewritten. One mutator serves both: substitution maps free variables;
// cloning additionally gives every binder (For, Let, Kernel cid/vid, Allocate) a new node
// and a name not taken yet.
#include <algorithm>
#include <cctype>

#include "tl/arith.h"
#include "tl/ir_functor.h"

namespace tl::arith {

namespace {

/// `base` if free, else `base_1`, `base_2`, ... (a trailing `_<n>` of base is replaced).
std::string fresh_name(const std::string& base, std::unordered_set<std::string>& taken) {
  std::string stem = base;
  size_t us = stem.rfind('_');
  if (us != std::string::npos && us > 0 && us + 1 < stem.size() &&
      std::all_of(stem.begin() + us + 1, stem.end(),
                  [](unsigned char c) { return std::isdigit(c); }))
    stem.resize(us);
  std::string name = base;
  for (int i = 1; taken.count(name); ++i) name = stem + "_" + std::to_string(i);
  taken.insert(name);
  return name;
}

class Rebinder : public IRMutator {
 public:
  /// taken == nullptr: substitute only (binders are kept and must not be keys of vmap).
  Rebinder(VarMap vmap, std::unordered_set<std::string>* taken)
      : vmap_(std::move(vmap)), taken_(taken) {}

  Buffer mutate_buffer(const Buffer& b) override {
    auto it = bufs_.find(b.get());
    return it == bufs_.end() ? b : it->second;
  }

 protected:
  Expr mutate_(const VarNode* n, const Expr& self) override {
    auto it = vmap_.find(n);
    return it == vmap_.end() ? self : it->second;
  }

  Stmt mutate_(const ForNode* n, const Stmt& self) override {
    Expr mn = mutate(n->min), ext = mutate(n->extent);  // outside the loop variable's scope
    Var v = bind(n->var);
    Stmt body = mutate(n->body);
    if (v.same_as(n->var) && mn.same_as(n->min) && ext.same_as(n->extent) && body.same_as(n->body))
      return self;
    return ForNode::make(v, mn, ext, n->for_kind, n->num_stages, n->skew, body, n->loc);
  }
  Stmt mutate_(const LetNode* n, const Stmt& self) override {
    Expr value = mutate(n->value);
    Var v = bind(n->var);
    if (v.same_as(n->var) && value.same_as(n->value)) return self;
    return LetNode::make(v, value, n->loc);
  }
  Stmt mutate_(const KernelNode* n, const Stmt& self) override {
    Expr nb = mutate(n->num_blocks);
    Var cid = bind(n->cid),
        vid = n->vid.defined() ? bind(n->vid) : n->vid;  // developer kernels bind no vid
    Stmt body = mutate(n->body);
    if (cid.same_as(n->cid) && vid.same_as(n->vid) && nb.same_as(n->num_blocks) &&
        body.same_as(n->body))
      return self;
    return KernelNode::make(nb, cid, vid, body, n->loc, n->threads);
  }
  Stmt mutate_(const AllocateNode* n, const Stmt& self) override {
    const BufferNode& b = *n->buffer;
    std::vector<Expr> shape, strides;
    bool changed = taken_ != nullptr;
    for (const auto& s : b.shape) changed |= !shape.emplace_back(mutate(s)).same_as(s);
    for (const auto& s : b.strides) changed |= !strides.emplace_back(mutate(s)).same_as(s);
    Buffer base = n->is_view() ? mutate_buffer(n->view_of) : Buffer();  // a view follows its base
    changed |= !base.same_as(n->view_of);
    if (!changed) return self;
    std::string name = taken_ ? fresh_name(b.name, *taken_) : b.name;
    Buffer nb = BufferNode::make(name, b.dtype, shape, b.scope, strides, b.address, b.loc, b.origin,
                                 b.channel_slots, b.l2_cache, b.slot);
    bufs_[n->buffer.get()] = nb;
    return base.defined() ? AllocateNode::make_view(nb, base, n->loc)
                          : AllocateNode::make(nb, n->loc);
  }

 private:
  /// The variable a binder binds in the result: a fresh one when cloning.
  Var bind(const Var& v) {
    if (!taken_) {
      TL_ASSERT(!vmap_.count(v.node()), "substitute: {} is bound inside the statement", v.name());
      return v;
    }
    Var fresh(fresh_name(v.name(), *taken_), v.dtype());
    vmap_[v.node()] = fresh;
    return fresh;
  }

  VarMap vmap_;
  std::unordered_set<std::string>* taken_;
  std::unordered_map<const BufferNode*, Buffer> bufs_;
};

}  // namespace

Expr substitute(const Expr& e, const VarMap& vmap) {
  if (vmap.empty()) return e;
  return Rebinder(vmap, nullptr).mutate(e);
}

Stmt substitute(const Stmt& s, const VarMap& vmap) {
  if (vmap.empty()) return s;
  return Rebinder(vmap, nullptr).mutate(s);
}

std::unordered_set<std::string> names_in(const PrimFunc& f) {
  std::unordered_set<std::string> names;
  for (const auto& d : f->dynamics) names.insert(d.name());
  for (const auto& p : f->params) names.insert(p.name());
  pre_order_visit(f->body, [&](const Stmt& s) {
    switch (s.kind()) {
      case StmtKind::For:
        names.insert(s.as<ForNode>()->var.name());
        break;
      case StmtKind::Let:
        names.insert(s.as<LetNode>()->var.name());
        break;
      case StmtKind::Allocate:
        names.insert(s.as<AllocateNode>()->buffer->name);
        break;
      case StmtKind::Kernel:
        names.insert(s.as<KernelNode>()->cid.name());
        if (s.as<KernelNode>()->vid.defined()) names.insert(s.as<KernelNode>()->vid.name());
        break;
      default:
        break;
    }
  });
  return names;
}

Stmt clone_fresh(const Stmt& s, std::unordered_set<std::string>& taken) {
  return Rebinder({}, &taken).mutate(s);
}

PrimFunc clone_fresh(const PrimFunc& f) {
  std::unordered_set<std::string> taken;
  for (const auto& d : f->dynamics) taken.insert(d.name());
  for (const auto& p : f->params) taken.insert(p.name());
  return with_body(f, clone_fresh(f->body, taken));
}

}  // namespace tl::arith
