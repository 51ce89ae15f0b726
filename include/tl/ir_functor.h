// Visitors and mutators over the Tile IR. IRVisitor walks every node (override visit_ for the
// kinds you care about and call the base to keep walking); IRMutator rebuilds only what
// changed, sharing untouched subtrees. Buffers pass through mutate_buffer so one override
// can rewrite a buffer everywhere it is used (planning addresses, scope inference).
#pragma once

#include <functional>

#include "tl/ir.h"

namespace tl {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  virtual void visit(const Expr& e);
  virtual void visit(const Stmt& s);
  virtual void visit_region(const BufferRegion& r);
  virtual void visit_buffer(const Buffer& b);  // at each use and declaration; default: shape exprs

 protected:
#define TL_VISIT(K) virtual void visit_(const K##Node* n);
  TL_EXPR_KINDS(TL_VISIT)
  TL_STMT_KINDS(TL_VISIT)
#undef TL_VISIT
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  virtual Expr mutate(const Expr& e);
  virtual Stmt mutate(const Stmt& s);
  virtual BufferRegion mutate_region(const BufferRegion& r);
  /// Called for every buffer occurrence; return the same handle to keep it.
  virtual Buffer mutate_buffer(const Buffer& b) { return b; }

 protected:
#define TL_MUTATE(K) virtual Expr mutate_(const K##Node* n, const Expr& self);
  TL_EXPR_KINDS(TL_MUTATE)
#undef TL_MUTATE
#define TL_MUTATE(K) virtual Stmt mutate_(const K##Node* n, const Stmt& self);
  TL_STMT_KINDS(TL_MUTATE)
#undef TL_MUTATE
};

/// Calls `on_stmt` for every statement and `on_expr` for every expression, parents first.
void pre_order_visit(const Stmt& s, const std::function<void(const Stmt&)>& on_stmt,
                     const std::function<void(const Expr&)>& on_expr = nullptr);

/// Applies `f` to the function's body and returns a new function (same signature).
PrimFunc with_body(const PrimFunc& f, Stmt body);

}  // namespace tl
