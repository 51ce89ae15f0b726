// vectorize_parallel, the analysis of one element loop (the Vectorizer of
// vectorize_parallel_impl.h): Vectorizer::run flattens the loop body into stores, then each index
// is read as an affine function of the loop variables, each access as the region it touches over
// the whole nest, and the checks that make the vector code exact run here (UB operands only, no
// value carried from one iteration to another, aligned regions). vectorize_parallel.cpp's top
// comment states the pass's contract.

#include "vectorize_parallel_impl.h"

namespace tl {
namespace vectorize_detail {

Stmt Vectorizer::run(const std::vector<LoopDim>& dims, const Stmt& body, const SourceLoc& loc) {
  dims_ = dims;
  loc_ = loc;
  for (const auto& d : dims_) loop_vars_.insert(d.var.node());
  for (const auto& d : dims_) {
    if (mentions_any(d.min, loop_vars_) || mentions_any(d.extent, loop_vars_))
      reject(
          fmt::format("the bounds of loop {} depend on another T.Parallel variable", d.var.name()));
  }
  // Flatten the body into stores, inlining Lets (they are pure, and bound for the rest of
  // the body only).
  std::vector<const StoreNode*> stores;
  std::vector<Stmt> rebuilt;
  arith::VarMap lets;
  std::vector<Stmt> list;
  if (auto* s = body.as<SeqNode>())
    list = s->stmts;
  else
    list.push_back(body);
  for (const Stmt& s : list) {
    if (auto* l = s.as<LetNode>()) {
      lets[l->var.node()] = arith::substitute(l->value, lets);
      continue;
    }
    auto* st = s.as<StoreNode>();
    if (!st) {
      if (auto* f = s.as<ForNode>())
        reject(fmt::format(
            "a {} loop inside T.Parallel (only Parallel loops nest directly, and the body may "
            "hold only stores and lets)",
            for_kind_name(f->for_kind)));
      reject(
          fmt::format("{} inside T.Parallel (the body may hold only element stores and lets; "
                      "write a condition as T.if_then_else)",
                      stmt_kind_word(s)));
    }
    std::vector<Expr> idx;
    for (const auto& i : st->indices) idx.push_back(arith::substitute(i, lets));
    rebuilt.push_back(
        StoreNode::make(st->buffer, idx, arith::substitute(st->value, lets), st->loc));
  }
  for (const Stmt& s : rebuilt) stores.push_back(s.as<StoreNode>());
  // Written buffers, and which element each writes (cross-iteration checks).
  for (const StoreNode* st : stores) check_store(*st);
  bounds_.assign(dims_.size(), -1);
  for (size_t k = 0; k < dims_.size(); ++k) {
    if (auto c = as_const_int(dims_[k].extent))
      bounds_[k] = *c;
    else
      for (const StoreNode* st : stores) {
        auto acc = access(st->buffer, st->indices, "store to");
        auto sz = as_const_int(st->buffer->shape[position_of(acc, static_cast<int>(k))]);
        if (sz && (bounds_[k] < 0 || *sz < bounds_[k])) bounds_[k] = *sz;
      }
  }
  for (const StoreNode* st : stores) {
    BufferRegion d = region_of(st->buffer, st->indices, "store to");
    check_no_cross_iteration(st->value, st);
    emit_store(*st, d);
  }
  std::vector<Stmt> out = allocs_;
  out.insert(out.end(), ops_.begin(), ops_.end());
  return SeqNode::make(std::move(out), loc);
}

const char* Vectorizer::stmt_kind_word(const Stmt& s) {
  switch (s.kind()) {
    case StmtKind::If:
      return "an if statement";
    case StmtKind::TileOp:
      return "a tile op";
    case StmtKind::Sync:
      return "a synchronisation";
    case StmtKind::Allocate:
      return "an allocation";
    case StmtKind::Scope:
      return "a scope";
    case StmtKind::Kernel:
      return "a kernel";
    default:
      return "a statement that is neither a store nor a let";
  }
}

Affine Vectorizer::affine(const Expr& e) const {
  if (invariant(e)) return {-1, 0, e};
  if (auto* v = e.as<VarNode>()) return {var_index(v), 1, make_zero(e.dtype())};
  if (auto* b = e.as<BinaryNode>()) {
    bool ia = invariant(b->a), ib = invariant(b->b);
    if (b->op == BinOp::Add && (ia || ib)) {
      Affine x = affine(ia ? b->b : b->a);
      x.offset = x.offset + (ia ? b->a : b->b);
      return x;
    }
    if (b->op == BinOp::Sub && ib) {
      Affine x = affine(b->a);
      x.offset = x.offset - b->b;
      return x;
    }
    if (b->op == BinOp::Sub && ia) {
      Affine x = affine(b->b);
      x.coeff = -x.coeff;
      x.offset = b->a - x.offset;
      return x;
    }
    if (b->op == BinOp::Mul && (ia || ib)) {
      auto c = as_const_int(ia ? b->a : b->b);
      if (c) {
        Affine x = affine(ia ? b->b : b->a);
        x.coeff *= *c;
        x.offset = x.offset * (ia ? b->a : b->b);
        return x;
      }
    }
  }
  reject(fmt::format("index {} is not a loop variable plus a loop-invariant offset", print(e)));
}

/// Per index position of an access: the loop variable it walks (or -1) and its offset.
std::vector<Affine> Vectorizer::access(const Buffer& b, const std::vector<Expr>& indices,
                                       const char* what) const {
  std::vector<Affine> out;
  int last_var = -1;
  for (size_t p = 0; p < indices.size(); ++p) {
    Affine a = affine(indices[p]);
    if (a.var >= 0) {
      if (a.coeff != 1) {
        bool innermost = a.var == static_cast<int>(dims_.size()) - 1;
        reject(fmt::format(
            "non-unit stride{}: {} {} steps {} element(s) of dimension {} per iteration of {}",
            innermost ? " in the innermost dimension" : "", what, access_str(b, indices), a.coeff,
            p, dims_[a.var].var.name()));
      }
      if (a.var <= last_var)
        reject(fmt::format(
            "{} {} uses the loop variables out of order (a transposed or repeated access)", what,
            access_str(b, indices)));
      last_var = a.var;
    }
    out.push_back(a);
  }
  // The innermost variable used must walk the buffer's last dimension: otherwise consecutive
  // iterations are a whole row apart (a strided access the vector unit cannot read).
  if (last_var >= 0 && out.back().var != last_var)
    reject(fmt::format(
        "non-unit stride in the innermost dimension: {} {} walks dimension {} of '{}' with "
        "{}, whose elements are not adjacent",
        what, access_str(b, indices), position_of(out, last_var), b->name,
        dims_[last_var].var.name()));
  return out;
}

size_t Vectorizer::position_of(const std::vector<Affine>& a, int var) {
  for (size_t p = 0; p < a.size(); ++p)
    if (a[p].var == var) return p;
  return 0;
}

std::string Vectorizer::access_str(const Buffer& b, const std::vector<Expr>& indices) {
  return print(LoadNode::make(b, indices));
}

/// The region an access touches over the whole loop nest.
BufferRegion Vectorizer::region_from(const Buffer& b, const std::vector<Affine>& acc) const {
  BufferRegion r{b, {}};
  for (const Affine& a : acc) {
    if (a.var < 0)
      r.ranges.push_back({simplify(a.offset), Expr(1)});
    else
      r.ranges.push_back({simplify(dims_[a.var].min + a.offset), dims_[a.var].extent});
  }
  return r;
}

BufferRegion Vectorizer::region_of(const Buffer& b, const std::vector<Expr>& indices,
                                   const char* what) {
  return region_from(b, access(b, indices, what));
}

void Vectorizer::check_ub(const Buffer& b, const std::vector<Expr>& indices,
                          const char* what) const {
  if (b->scope == MemScope::GM)
    reject(fmt::format(
        "GM operand: {} {} is in global memory; T.Parallel works on UB tiles (T.copy it to a "
        "UB buffer first)",
        what, access_str(b, indices)));
  if (b->scope != MemScope::UB && b->scope != MemScope::Var)
    reject(fmt::format("{} {} is in {}; T.Parallel works on UB tiles (run infer_scopes first)",
                       what, access_str(b, indices), scope_name(b->scope)));
}

void Vectorizer::check_store(const StoreNode& st) {
  check_ub(st.buffer, st.indices, "store to");
  if (st.buffer->scope == MemScope::Var)
    reject(fmt::format(
        "reduction inside T.Parallel: the scalar variable '{}' is written by every iteration "
        "(use T.reduce_sum / reduce_max / reduce_min)",
        st.buffer->name));
  auto acc = access(st.buffer, st.indices, "store to");
  std::vector<bool> used(dims_.size(), false);
  for (const Affine& a : acc)
    if (a.var >= 0) used[a.var] = true;
  for (size_t k = 0; k < dims_.size(); ++k)
    if (!used[k]) {
      bool reads_itself = reads_element(st.value, st.buffer, st.indices);
      reject(
          fmt::format("{}: {} is written by every iteration of {} (use T.reduce_sum / reduce_max / "
                      "reduce_min for a reduction)",
                      reads_itself ? "reduction inside T.Parallel"
                                   : "store does not depend on every loop variable",
                      access_str(st.buffer, st.indices), dims_[k].var.name()));
    }
  for (const auto& w : writes_)
    if (w.first.same_as(st.buffer) && !same_indices(w.second, st.indices) &&
        arith::regions_overlap(region_from(st.buffer, acc),
                               region_of(w.first, w.second, "store to")) != arith::Overlap::No)
      reject(fmt::format("cross-iteration write: '{}' is stored at {} and at {}", st.buffer->name,
                         access_str(st.buffer, w.second), access_str(st.buffer, st.indices)));
  writes_.push_back({st.buffer, st.indices});
}

bool Vectorizer::same_indices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (print(simplify(a[i])) != print(simplify(b[i]))) return false;
  return true;
}

bool Vectorizer::reads_element(const Expr& e, const Buffer& b, const std::vector<Expr>& idx) const {
  bool hit = false;
  struct V : IRVisitor {
    const Buffer& b;
    const std::vector<Expr>& idx;
    bool& hit;
    V(const Buffer& bb, const std::vector<Expr>& i, bool& h) : b(bb), idx(i), hit(h) {}
    void visit_(const LoadNode* n) override {
      if (n->buffer.same_as(b) && same_indices(n->indices, idx)) hit = true;
      IRVisitor::visit_(n);
    }
  } v(b, idx, hit);
  v.visit(e);
  return hit;
}

/// Every load of a buffer the loop writes must read the element its own iteration writes,
/// or a region no iteration writes: otherwise serial order matters (c[i, j + 1] read while
/// c[i, j] is written).
void Vectorizer::check_no_cross_iteration(const Expr& value, const StoreNode* st) {
  std::vector<const LoadNode*> loads;
  pre_order_visit(
      StoreNode::make(st->buffer, st->indices, value), [](const Stmt&) {},
      [&](const Expr& e) {
        if (auto* l = e.as<LoadNode>()) loads.push_back(l);
      });
  for (const LoadNode* l : loads)
    for (const auto& w : writes_) {
      if (!w.first.same_as(l->buffer) || same_indices(w.second, l->indices)) continue;
      if (!invariant_indices(l->indices) || !invariant_indices(w.second)) {
        // Both walk the loop: disjoint regions are independent, anything else is ordered.
        BufferRegion rr = region_of(l->buffer, l->indices, "load of");
        BufferRegion wr = region_of(w.first, w.second, "store to");
        if (arith::regions_overlap(rr, wr) == arith::Overlap::No) continue;
      }
      reject(fmt::format(
          "cross-iteration read: {} is read while {} is written (the result would depend on "
          "the order of iterations)",
          access_str(l->buffer, l->indices), access_str(w.first, w.second)));
    }
}

bool Vectorizer::invariant_indices(const std::vector<Expr>& idx) const {
  for (const auto& i : idx)
    if (!invariant(i)) return false;
  return true;
}

/// UB alignment of a region operand, as the verifier's ub rules demand (32-byte blocks on
/// A2): start on a block, rows on block pitches (a run of any length), and rows evenly spaced (the
/// vector unit walks a region as rows of its last dimension).
void Vectorizer::check_alignment(const BufferRegion& r, const std::string& what) const {
  const Buffer& b = r.buffer;
  const int64_t align = target_.align(MemScope::UB);
  const int64_t bytes = dtype_bytes(b->dtype);
  std::vector<int64_t> shape;
  for (const auto& s : b->shape) {
    auto v = as_const_int(s);
    if (!v) reject(fmt::format("{} '{}' has a symbolic shape", what, b->name));
    shape.push_back(*v);
  }
  if (!b->strides.empty()) reject(fmt::format("{} '{}' has explicit strides", what, b->name));
  const size_t n = shape.size();
  std::vector<int64_t> stride(n, 1);
  for (size_t d = n - 1; d-- > 0;) stride[d] = stride[d + 1] * shape[d + 1];
  Expr start = int_imm(0);
  for (size_t d = 0; d < n; ++d) start = start + r.ranges[d].min * int_imm(stride[d] * bytes);
  start = simplify(start);
  arith::ModularSet m = arith::modular_set(start);
  if (align > 1 && !(m.coeff % align == 0 && m.base % align == 0)) {
    // The vector unit cannot start mid-block, and no UB -> UB copy can either, so the user
    // has to move the chunk (issue 29: say how, not just what).
    const std::string remedy = fmt::format(
        "start the chunk at a multiple of {} {} elements, or run the loop on the scalar unit "
        "with pass config tl.dev.scalar_fallback",
        std::max<int64_t>(1, align / bytes), dt(b->dtype));
    if (auto c = as_const_int(start))
      reject(
          fmt::format("unaligned start: {} (region {}) starts {} bytes into '{}'; UB operands "
                      "must start on a {}-byte boundary ({}; a run of any length is fine)",
                      what, print(r), *c, b->name, align, remedy));
    reject(
        fmt::format("unaligned start: {} (region {}) starts {} bytes into '{}', which is not "
                    "provably a multiple of {} ({}; a run of any length is fine)",
                    what, print(r), print(start), b->name, align, remedy));
  }
  // The innermost run may be any number of elements: vector instructions count their
  // elements (calCount, or a mask on a row's last repeat), as the verifier's ub rules say
  // (takes_any_row_length). Only starts and row pitches must sit on blocks; a per-row
  // statistic of 2 floats (8 bytes) is a legal row_expand operand.
  size_t last = n - 1;
  while (last > 0 && shape[last] == 1) --last;
  // Rows evenly spaced: between two consecutive non-unit leading dimensions p < q, the stride
  // of p must be the extent of q times the stride of q.
  int prev = -1;
  bool multi_row = false;
  for (size_t d = 0; d < last; ++d) {
    auto e = as_const_int(r.ranges[d].extent);
    if (e && *e == 1) continue;
    multi_row = true;
    if (prev >= 0) {
      auto ep = as_const_int(r.ranges[d].extent);
      if (!ep || stride[prev] != *ep * stride[d])
        reject(fmt::format("{} (region {}) is not a set of evenly spaced rows of '{}'", what,
                           print(r), b->name));
    }
    prev = static_cast<int>(d);
  }
  if (multi_row && last > 0 && (stride[last - 1] * bytes) % align != 0)
    reject(fmt::format("unaligned rows: rows of '{}' are {} bytes apart, not a multiple of {}",
                       b->name, stride[last - 1] * bytes, align));
}

}  // namespace vectorize_detail
}  // namespace tl
