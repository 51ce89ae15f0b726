// vectorize_parallel: turns developer-mode element loops (`for i, j in T.Parallel(M, N):
// c[i, j] = ...`, nested Parallel Fors whose innermost body is Stores and Lets) into the vector
// tile ops of the AIV (T.tile.*), with UB temporaries for interior nodes. The contract is that
// the vector code computes bit-for-bit what the virtual NPU computes when it runs the same loop
// as serial scalar code (tl/arith.h: every node evaluated in double and rounded to its dtype);
// where the vector ops' numerics (src/npu/exec_vector.cpp: fp32 evaluation, saturating casts,
// NaN-propagating max) would differ, the pass either picks an exact sequence (casts through
// fp32, max as compare + select) or rejects the loop with the reason. docs/compiler.md,
// section "vectorize_parallel", has the mapping table and every such decision.
//
// This file is the pass driver; the Vectorizer that maps one loop is in vectorize_parallel_impl.h
// and vectorize_parallel_{loop,values,ops}.cpp.

#include <map>
#include <optional>

#include "vectorize_parallel_impl.h"

namespace tl {
namespace {

using namespace vectorize_detail;

class ParallelRewriter : public IRMutator {
 public:
  ParallelRewriter(const Target& t, const VectorizeOptions& o,
                   std::unordered_set<std::string>& taken,
                   std::unordered_set<const BufferNode*> aliased)
      : target_(t), opt_(o), taken_(taken), aliased_(std::move(aliased)) {}

 protected:
  Stmt mutate_(const ScopeNode* n, const Stmt& self) override {
    std::optional<CoreKind> saved = core_;
    core_ = n->core;
    Stmt s = IRMutator::mutate_(n, self);
    core_ = saved;
    return s;
  }

  Stmt mutate_(const ForNode* n, const Stmt& self) override {
    if (n->for_kind != ForKind::Parallel) return IRMutator::mutate_(n, self);
    try {
      if (core_ == CoreKind::Vector && dev::touches_gm_elements(self)) {
        reject_reductions(self);
        return gm_element_loop(self);
      }
      return vectorize_nest(self);
    } catch (const Reject& r) {
      if (!opt_.scalar_fallback)
        throw Error(n->loc, fmt::format("T.Parallel: cannot vectorise: {}", r.reason));
      emit_remark(
          opt_, n->loc,
          fmt::format("T.Parallel runs as a serial scalar loop (scalar_fallback): {}", r.reason));
      return to_serial(self);
    }
  }

 private:
  /// An element loop over GM tensors (docs/developer_mode.md, "Scalar work and GM element stores"):
  /// staged through UB tiles and vectorised where that is cheaper by the cost table and exact;
  /// otherwise the scalar loop as written (its iterations in order are one order T.Parallel
  /// allows), with a remark when staging would have been cheaper but cannot be done.
  Stmt gm_element_loop(const Stmt& self) {
    std::string why;
    if (std::optional<Stmt> staged = dev::stage_gm_element_loop(self, target_, taken_, why)) {
      try {
        std::map<const StmtNode*, Stmt> to;
        for (const Stmt& x : dev::stmts_of(*staged))
          if (auto* f = x.as<ForNode>(); f && f->for_kind == ForKind::Parallel)
            to[x.get()] = vectorize_nest(x);
        return dev::replaced(*staged, to);
      } catch (const Reject& r) {
        why = r.reason;
      }
    }
    if (!why.empty())
      emit_remark(
          opt_, self->loc,
          fmt::format("T.Parallel over GM runs element by element on the scalar unit: {}", why));
    return to_serial(self);
  }

  /// A scalar variable written by every iteration is a reduction, over GM as over UB tiles: the
  /// scalar loop would fix one order of the additions T.Parallel leaves open. Throws Reject.
  static void reject_reductions(const Stmt& self) {
    pre_order_visit(self, [&](const Stmt& x) {
      if (auto* st = x.as<StoreNode>(); st && st->buffer->scope == MemScope::Var)
        reject(fmt::format(
            "reduction inside T.Parallel: the scalar variable '{}' is written by every iteration "
            "(use T.reduce_sum / reduce_max / reduce_min)",
            st->buffer->name));
    });
  }

  /// The vector ops of the Parallel nest `self`; throws Reject.
  Stmt vectorize_nest(const Stmt& self) {
    auto* n = self.as<ForNode>();
    std::vector<LoopDim> dims;
    Stmt body = self;
    for (;;) {
      if (auto* q = body.as<SeqNode>(); q && q->stmts.size() == 1) body = q->stmts[0];
      auto* f = body.as<ForNode>();
      if (!f || f->for_kind != ForKind::Parallel) break;
      dims.push_back({f->var, f->min, f->extent});
      body = f->body;
    }
    if (dims.size() > 3)
      throw Reject{fmt::format(
          "a {}-deep T.Parallel nest (the vector unit takes 1 to 3 dimensions)", dims.size())};
    if (core_ != CoreKind::Vector)
      throw Reject{
          "T.Parallel outside T.Scope(\"Vector\") (element loops run on the AIV; run infer_scopes "
          "first)"};
    Vectorizer v(target_, opt_, taken_, aliased_);
    try {
      return v.run(dims, body, n->loc);
    } catch (const Reject& r) {
      // An operand that skips a middle variable (RoPE's cos[t, j] over (t, h, j)) is no
      // vector broadcast, but it is a column broadcast for each value of the outer variable:
      // the outer loop runs serially around the vectorised rest (issue 29).
      if (dims.size() < 2 || r.reason.rfind("unsupported broadcast", 0) != 0) throw;
      Stmt inner = body;
      for (size_t k = dims.size(); k-- > 1;)
        inner = ForNode::make(dims[k].var, dims[k].min, dims[k].extent, ForKind::Parallel, 0, inner,
                              n->loc);
      Stmt vec;
      try {
        vec = vectorize_nest(inner);
      } catch (const Reject&) {
        throw r;
      }
      return ForNode::make(dims[0].var, dims[0].min, dims[0].extent, ForKind::Serial, 0, vec,
                           n->loc);
    }
  }

  /// Every Parallel loop of the nest becomes serial, the inner ones too (a nest's levels are
  /// separated by one-statement blocks in DSL-built IR).
  static Stmt to_serial(const Stmt& s) {
    struct Serialiser : IRMutator {
      Stmt mutate_(const ForNode* f, const Stmt& self) override {
        Stmt body = mutate(f->body);
        if (f->for_kind != ForKind::Parallel)
          return body.same_as(f->body) ? self
                                       : ForNode::make(f->var, f->min, f->extent, f->for_kind,
                                                       f->num_stages, f->skew, body, f->loc);
        return ForNode::make(f->var, f->min, f->extent, ForKind::Serial, 0, body, f->loc);
      }
    } serialiser;
    return serialiser.mutate(s);
  }

  const Target& target_;
  const VectorizeOptions& opt_;
  std::unordered_set<std::string>& taken_;
  std::unordered_set<const BufferNode*> aliased_;
  std::optional<CoreKind> core_;
};

}  // namespace

PrimFunc vectorize_parallel(const PrimFunc& f, const Target& target, const VectorizeOptions& opt) {
  bool any = false;
  pre_order_visit(f->body, [&](const Stmt& s) {
    if (auto* l = s.as<ForNode>(); l && l->for_kind == ForKind::Parallel) any = true;
  });
  if (!any) return f;
  std::unordered_set<std::string> taken = arith::names_in(f);
  // Buffers whose bytes another buffer may share (a view and its base; a pinned address).
  std::unordered_set<const BufferNode*> aliased;
  pre_order_visit(f->body, [&](const Stmt& s) {
    auto* a = s.as<AllocateNode>();
    if (!a) return;
    if (a->view_of.defined()) {
      aliased.insert(a->buffer.get());
      aliased.insert(a->view_of.get());
    }
    if (a->buffer->address >= 0) aliased.insert(a->buffer.get());
  });
  ParallelRewriter rw(target, opt, taken, std::move(aliased));
  Stmt body = rw.mutate(f->body);
  if (body.same_as(f->body)) return f;
  return with_body(f, body);
}

PrimFunc vectorize_parallel(const PrimFunc& f, const Target& target, bool scalar_fallback) {
  VectorizeOptions o;
  o.scalar_fallback = scalar_fallback;
  return vectorize_parallel(f, target, o);
}

}  // namespace tl
