// vectorize_parallel: turns developer-mode element loops (`for i, j in T.Parallel(M, N):
// c[i, j] = ...`, nested Parallel Fors whose innermost body is Stores and Lets) into the vector
// tile ops of the AIV (T.tile.*), with UB temporaries for interior nodes. The contract is that
// the vector code computes bit-for-bit what the virtual NPU computes when it runs the same loop
// as serial scalar code (tl/arith.h: every node evaluated in double and rounded to its dtype);
// where the vector ops' numerics (src/npu/exec_vector.cpp: fp32 evaluation, saturating casts,
// NaN-propagating max) would differ, the pass either picks an exact sequence (casts through
// fp32, max as compare + select) or rejects the loop with the reason. docs/compiler.md,
// section "vectorize_parallel", has the mapping table and every such decision.
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "developer.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/pass.h"
#include "tl/printer.h"

namespace tl {
namespace {

/// A loop the vectoriser cannot handle: why, for the tl::Error (or the fallback's remark).
struct Reject {
  std::string reason;
};
[[noreturn]] void reject(std::string reason) { throw Reject{std::move(reason)}; }

struct LoopDim {
  Var var;
  Expr min, extent;
};

bool mentions_any(const Expr& e, const std::unordered_set<const VarNode*>& vars) {
  bool hit = false;
  struct V : IRVisitor {
    const std::unordered_set<const VarNode*>& vars;
    bool& hit;
    V(const std::unordered_set<const VarNode*>& v, bool& h) : vars(v), hit(h) {}
    void visit_(const VarNode* n) override {
      if (vars.count(n)) hit = true;
    }
  } v(vars, hit);
  v.visit(e);
  return hit;
}

/// `e` as coeff * loop_var + offset with a loop-invariant offset (var = -1: no loop variable).
struct Affine {
  int var = -1;
  int64_t coeff = 0;
  Expr offset;
};

std::string dt(DType t) { return std::string(dtype_name(t)); }

/// An integer immediate, int32 when it fits (so messages print `16`, not `T.int64(16)`).
Expr int_imm(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX ? Expr(static_cast<int>(v)) : Expr(v); }

/// A remark to the caller's sink, or to stderr: a fallback is never silent.
void emit_remark(const VectorizeOptions& opt, const SourceLoc& loc, const std::string& msg) {
  dev::remark(opt.remark, "vectorize_parallel", loc, msg);
}

/// True when every value of dtype `from` is exactly a value of dtype `to`.
bool exact_conversion(DType from, DType to) {
  if (from == to) return true;
  if (is_float(from) && is_float(to)) return to == DType::Float32 && from != DType::Float64;
  if (is_int(from) && is_float(to)) {
    int bits = dtype_bits(from);
    if (to == DType::Float32) return bits <= 16;
    if (to == DType::Float16) return bits <= 8;
  }
  return false;
}

class Vectorizer {
 public:
  Vectorizer(const Target& t, const VectorizeOptions& opt, std::unordered_set<std::string>& taken,
             const std::unordered_set<const BufferNode*>& aliased)
      : target_(t), opt_(opt), taken_(taken), aliased_(aliased) {}

  /// The statements replacing the Parallel nest `loop` (dims outermost first, body = the
  /// innermost body). Throws Reject.
  Stmt run(const std::vector<LoopDim>& dims, const Stmt& body, const SourceLoc& loc) {
    dims_ = dims;
    loc_ = loc;
    for (const auto& d : dims_) loop_vars_.insert(d.var.node());
    for (const auto& d : dims_) {
      if (mentions_any(d.min, loop_vars_) || mentions_any(d.extent, loop_vars_))
        reject(fmt::format("the bounds of loop {} depend on another T.Parallel variable", d.var.name()));
    }
    // Flatten the body into stores, inlining Lets (they are pure, and bound for the rest of
    // the body only).
    std::vector<const StoreNode*> stores;
    std::vector<Stmt> rebuilt;
    arith::VarMap lets;
    std::vector<Stmt> list;
    if (auto* s = body.as<SeqNode>()) list = s->stmts;
    else list.push_back(body);
    for (const Stmt& s : list) {
      if (auto* l = s.as<LetNode>()) {
        lets[l->var.node()] = arith::substitute(l->value, lets);
        continue;
      }
      auto* st = s.as<StoreNode>();
      if (!st) {
        if (auto* f = s.as<ForNode>())
          reject(fmt::format("a {} loop inside T.Parallel (only Parallel loops nest directly, and the body may "
                             "hold only stores and lets)",
                             for_kind_name(f->for_kind)));
        reject(fmt::format("{} inside T.Parallel (the body may hold only element stores and lets; "
                           "write a condition as T.if_then_else)",
                           stmt_kind_word(s)));
      }
      std::vector<Expr> idx;
      for (const auto& i : st->indices) idx.push_back(arith::substitute(i, lets));
      rebuilt.push_back(StoreNode::make(st->buffer, idx, arith::substitute(st->value, lets), st->loc));
    }
    for (const Stmt& s : rebuilt) stores.push_back(s.as<StoreNode>());
    // Written buffers, and which element each writes (cross-iteration checks).
    for (const StoreNode* st : stores) check_store(*st);
    bounds_.assign(dims_.size(), -1);
    for (size_t k = 0; k < dims_.size(); ++k) {
      if (auto c = as_const_int(dims_[k].extent)) bounds_[k] = *c;
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

 private:
  // ---- values ---------------------------------------------------------------------------------

  enum class Kind { Tile, Scalar, Row, Col, Mask };
  struct Val {
    Kind kind = Kind::Tile;
    BufferRegion region;  // Tile, Row, Col, Mask
    Expr scalar;          // Scalar: a loop-invariant expression
    DType dtype = DType::Float32;
    int temp = -1;        // index into temps_ when the value lives in a temporary
    // Mask only: comparison that produced it (for messages)
  };
  struct Temp {
    Buffer buf;
    bool busy = false;
    int pending = 0;  // reads still to come (a shared subexpression is read once per use)
  };

  static const char* stmt_kind_word(const Stmt& s) {
    switch (s.kind()) {
      case StmtKind::If: return "an if statement";
      case StmtKind::TileOp: return "a tile op";
      case StmtKind::Sync: return "a synchronisation";
      case StmtKind::Allocate: return "an allocation";
      case StmtKind::Scope: return "a scope";
      case StmtKind::Kernel: return "a kernel";
      default: return "a statement that is neither a store nor a let";
    }
  }

  bool invariant(const Expr& e) const { return !mentions_any(e, loop_vars_); }

  int var_index(const VarNode* v) const {
    for (size_t k = 0; k < dims_.size(); ++k)
      if (dims_[k].var.node() == v) return static_cast<int>(k);
    return -1;
  }

  Affine affine(const Expr& e) const {
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
  static Expr make_zero(DType t) { return arith::make_int(is_int(t) ? t : DType::Int32, 0); }

  /// Per index position of an access: the loop variable it walks (or -1) and its offset.
  std::vector<Affine> access(const Buffer& b, const std::vector<Expr>& indices, const char* what) const {
    std::vector<Affine> out;
    int last_var = -1;
    for (size_t p = 0; p < indices.size(); ++p) {
      Affine a = affine(indices[p]);
      if (a.var >= 0) {
        if (a.coeff != 1) {
          bool innermost = a.var == static_cast<int>(dims_.size()) - 1;
          reject(fmt::format("non-unit stride{}: {} {} steps {} element(s) of dimension {} per iteration of {}",
                             innermost ? " in the innermost dimension" : "", what, access_str(b, indices), a.coeff,
                             p, dims_[a.var].var.name()));
        }
        if (a.var <= last_var)
          reject(fmt::format("{} {} uses the loop variables out of order (a transposed or repeated access)", what,
                             access_str(b, indices)));
        last_var = a.var;
      }
      out.push_back(a);
    }
    // The innermost variable used must walk the buffer's last dimension: otherwise consecutive
    // iterations are a whole row apart (a strided access the vector unit cannot read).
    if (last_var >= 0 && out.back().var != last_var)
      reject(fmt::format("non-unit stride in the innermost dimension: {} {} walks dimension {} of '{}' with "
                         "{}, whose elements are not adjacent",
                         what, access_str(b, indices), position_of(out, last_var), b->name,
                         dims_[last_var].var.name()));
    return out;
  }
  static size_t position_of(const std::vector<Affine>& a, int var) {
    for (size_t p = 0; p < a.size(); ++p)
      if (a[p].var == var) return p;
    return 0;
  }
  static std::string access_str(const Buffer& b, const std::vector<Expr>& indices) {
    return print(LoadNode::make(b, indices));
  }

  /// The region an access touches over the whole loop nest.
  BufferRegion region_from(const Buffer& b, const std::vector<Affine>& acc) const {
    BufferRegion r{b, {}};
    for (const Affine& a : acc) {
      if (a.var < 0) r.ranges.push_back({simplify(a.offset), Expr(1)});
      else r.ranges.push_back({simplify(dims_[a.var].min + a.offset), dims_[a.var].extent});
    }
    return r;
  }

  BufferRegion region_of(const Buffer& b, const std::vector<Expr>& indices, const char* what) {
    return region_from(b, access(b, indices, what));
  }

  // ---- checks -----------------------------------------------------------------------------

  void check_ub(const Buffer& b, const std::vector<Expr>& indices, const char* what) const {
    if (b->scope == MemScope::GM)
      reject(fmt::format("GM operand: {} {} is in global memory; T.Parallel works on UB tiles (T.copy it to a "
                         "UB buffer first)",
                         what, access_str(b, indices)));
    if (b->scope != MemScope::UB && b->scope != MemScope::Var)
      reject(fmt::format("{} {} is in {}; T.Parallel works on UB tiles (run infer_scopes first)", what,
                         access_str(b, indices), scope_name(b->scope)));
  }

  void check_store(const StoreNode& st) {
    check_ub(st.buffer, st.indices, "store to");
    if (st.buffer->scope == MemScope::Var)
      reject(fmt::format("reduction inside T.Parallel: the scalar variable '{}' is written by every iteration "
                         "(use T.reduce_sum / reduce_max / reduce_min)",
                         st.buffer->name));
    auto acc = access(st.buffer, st.indices, "store to");
    std::vector<bool> used(dims_.size(), false);
    for (const Affine& a : acc)
      if (a.var >= 0) used[a.var] = true;
    for (size_t k = 0; k < dims_.size(); ++k)
      if (!used[k]) {
        bool reads_itself = reads_element(st.value, st.buffer, st.indices);
        reject(fmt::format("{}: {} is written by every iteration of {} (use T.reduce_sum / reduce_max / "
                           "reduce_min for a reduction)",
                           reads_itself ? "reduction inside T.Parallel" : "store does not depend on every loop variable",
                           access_str(st.buffer, st.indices), dims_[k].var.name()));
      }
    for (const auto& w : writes_)
      if (w.first.same_as(st.buffer) && !same_indices(w.second, st.indices) &&
          arith::regions_overlap(region_from(st.buffer, acc), region_of(w.first, w.second, "store to")) !=
              arith::Overlap::No)
        reject(fmt::format("cross-iteration write: '{}' is stored at {} and at {}", st.buffer->name,
                           access_str(st.buffer, w.second), access_str(st.buffer, st.indices)));
    writes_.push_back({st.buffer, st.indices});
  }

  static bool same_indices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (print(simplify(a[i])) != print(simplify(b[i]))) return false;
    return true;
  }
  bool reads_element(const Expr& e, const Buffer& b, const std::vector<Expr>& idx) const {
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
  void check_no_cross_iteration(const Expr& value, const StoreNode* st) {
    std::vector<const LoadNode*> loads;
    pre_order_visit(StoreNode::make(st->buffer, st->indices, value), [](const Stmt&) {},
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
        reject(fmt::format("cross-iteration read: {} is read while {} is written (the result would depend on "
                           "the order of iterations)",
                           access_str(l->buffer, l->indices), access_str(w.first, w.second)));
      }
  }
  bool invariant_indices(const std::vector<Expr>& idx) const {
    for (const auto& i : idx)
      if (!invariant(i)) return false;
    return true;
  }

  /// UB alignment of a region operand, as the verifier's ub rules demand (32-byte blocks on
  /// A2): start on a block, innermost run a whole number of blocks, rows on block pitches,
  /// and rows evenly spaced (the vector unit walks a region as rows of its last dimension).
  void check_alignment(const BufferRegion& r, const std::string& what) const {
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
    for (size_t d = 0; d < n; ++d)
      start = start + r.ranges[d].min * int_imm(stride[d] * bytes);
    start = simplify(start);
    arith::ModularSet m = arith::modular_set(start);
    if (align > 1 && !(m.coeff % align == 0 && m.base % align == 0)) {
      if (auto c = as_const_int(start))
        reject(fmt::format("unaligned start: {} (region {}) starts {} bytes into '{}'; UB operands must start on a {}-byte "
                           "boundary",
                           what, print(r), *c, b->name, align));
      reject(fmt::format("unaligned start: {} (region {}) starts {} bytes into '{}', which is not provably a multiple of {}",
                         what, print(r), print(start), b->name, align));
    }
    size_t last = n - 1;
    while (last > 0 && shape[last] == 1) --last;
    Expr run = simplify(r.ranges[last].extent * int_imm(bytes));
    arith::ModularSet mr = arith::modular_set(run);
    if (align > 1 && !(mr.coeff % align == 0 && mr.base % align == 0))
      reject(fmt::format("unaligned innermost run: {} (region {}) has rows of {} x {} = {} bytes, not {}a multiple of the "
                         "{}-byte UB block",
                         what, print(r), print(r.ranges[last].extent), dt(b->dtype), print(run),
                         as_const_int(run) ? "" : "provably ", align));
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
          reject(fmt::format("{} (region {}) is not a set of evenly spaced rows of '{}'", what, print(r), b->name));
      }
      prev = static_cast<int>(d);
    }
    if (multi_row && last > 0 && (stride[last - 1] * bytes) % align != 0)
      reject(fmt::format("unaligned rows: rows of '{}' are {} bytes apart, not a multiple of {}", b->name,
                         stride[last - 1] * bytes, align));
  }

  // ---- temporaries --------------------------------------------------------------------------

  /// The loop extents, which must be constants (a comparison's element count).
  std::vector<int64_t> const_extents(size_t count) const {
    std::vector<int64_t> out;
    for (size_t k = 0; k < count; ++k) {
      auto v = as_const_int(dims_[k].extent);
      if (!v)
        reject(fmt::format("a comparison over a symbolic number of elements (extent {} of loop {}): "
                           "tile.compare's count must be a known multiple of 256 bytes",
                           print(dims_[k].extent), dims_[k].var.name()));
      out.push_back(*v);
    }
    return out;
  }
  /// Constant upper bounds of the first `count` loop extents, the shape of a temporary: the
  /// extent itself, or for a symbolic one the size of the destination dimension the loop walks
  /// (a larger extent would store out of bounds).
  std::vector<int64_t> extent_bounds(size_t count) const {
    std::vector<int64_t> out;
    for (size_t k = 0; k < count; ++k) {
      if (bounds_[k] < 0)
        reject(fmt::format("this expression needs a UB temporary, but the extent {} of loop {} is symbolic and "
                           "has no constant bound",
                           print(dims_[k].extent), dims_[k].var.name()));
      out.push_back(bounds_[k]);
    }
    return out;
  }

  std::string fresh_name() {
    for (;;) {
      std::string n = fmt::format("vec_t{}", name_counter_++);
      if (taken_.insert(n).second) return n;
    }
  }

  /// A free temporary of `dtype` and `shape` (reused when one is dead), as a Val.
  Val temp(DType dtype, const std::vector<int64_t>& shape, Kind kind) {
    for (size_t i = 0; i < temps_.size(); ++i) {
      Temp& t = temps_[i];
      if (t.busy || t.buf->dtype != dtype || t.buf->shape.size() != shape.size()) continue;
      bool same = true;
      for (size_t d = 0; d < shape.size(); ++d)
        if (as_const_int(t.buf->shape[d]) != shape[d]) same = false;
      if (!same) continue;
      t.busy = true;
      t.pending = 1;
      return {kind, temp_region(t.buf, kind), {}, dtype, static_cast<int>(i)};
    }
    std::vector<Expr> sh;
    for (int64_t s : shape) sh.push_back(s <= INT32_MAX ? Expr(static_cast<int>(s)) : Expr(s));
    Buffer b = BufferNode::make(fresh_name(), dtype, sh, MemScope::UB, {}, -1, loc_, "temporary of an element loop");
    allocs_.push_back(AllocateNode::make(b, loc_));
    temps_.push_back({b, true, 1});
    Val v{kind, temp_region(b, kind), {}, dtype, static_cast<int>(temps_.size() - 1)};
    if (kind != Kind::Mask) check_alignment(v.region, fmt::format("the {} temporary", dt(dtype)));
    return v;
  }
  /// The part of temporary `b` a value of the loop's shape occupies (all of it unless an
  /// extent is symbolic).
  BufferRegion temp_region(const Buffer& b, Kind kind) const {
    if (kind == Kind::Mask) return BufferRegion::full(b);
    BufferRegion r{b, {}};
    // A column's dimensions are the innermost loops' (broadcasts align to the right).
    const size_t first = kind == Kind::Col ? dims_.size() - b->ndim() : 0;
    for (size_t k = 0; k < b->ndim(); ++k) {
      const LoopDim& d = dims_[first + k];
      bool whole = as_const_int(d.extent) == as_const_int(b->shape[k]);
      r.ranges.push_back({Expr(0), whole ? b->shape[k] : d.extent});
    }
    return r;
  }
  Val tile_temp(DType t) { return temp(t, extent_bounds(dims_.size()), Kind::Tile); }
  Val row_temp(DType t) { return temp(t, extent_bounds(dims_.size() - 1), Kind::Row); }
  Val mask_temp() {
    auto e = const_extents(dims_.size());
    int64_t n = 1;
    for (int64_t x : e) n *= x;
    int64_t bytes = (n + 7) / 8;
    bytes = (bytes + 31) / 32 * 32;
    return temp(DType::UInt8, {bytes}, Kind::Mask);
  }
  void release(const Val& v) {
    if (v.temp < 0) return;
    Temp& t = temps_[v.temp];
    if (--t.pending <= 0) t.busy = false;
  }

  /// Where a node's result of dtype `t` goes: the store's destination when it is the root and
  /// the dtypes agree, else a new temporary.
  Val dest(DType t, const BufferRegion* into) {
    if (into && into->buffer->dtype == t) return {Kind::Tile, *into, {}, t, -1};
    return tile_temp(t);
  }

  void emit(const OpDef& op, std::vector<TileArg> args, std::vector<Attr> attrs = {}) {
    ops_.push_back(make_tile_op(op, std::move(args), std::move(attrs), loc_));
  }
  /// The vector op computing scalar operator `op` (OpDef::binop), element by element or with
  /// a row-broadcast second operand.
  static const OpDef& binop_op(BinOp op, RowMap rows = RowMap::Elementwise) {
    const OpDef* d = op_for_binop(op, rows);
    TL_ASSERT(d, "vectorize_parallel: no vector op computes {}", static_cast<int>(op));
    return *d;
  }

  // ---- conversions ----------------------------------------------------------------------------

  /// The tile.cast steps of a conversion that is bit-identical to the scalar cast, or a reason.
  std::vector<std::pair<DType, std::string>> cast_steps(DType from, DType to) const {
    using D = DType;
    auto f = [&](D a, D b) -> std::string {  // the mode of a direct pair
      for (const auto& c : target_.casts)
        if (c.from == a && c.to == b) {
          for (const char* m : {"CAST_RINT", "CAST_NONE"})
            if (std::find(c.modes.begin(), c.modes.end(), m) != c.modes.end()) return m;
        }
      reject(fmt::format("unsupported cast: no {} -> {} tile.cast on {}", dt(a), dt(b), target_.name));
    };
    if (from == to) return {};
    if (is_float(from) && is_int(to))
      reject(fmt::format("unsupported cast {} -> {}: the scalar cast truncates and wraps out-of-range values "
                         "(and infinities), tile.cast saturates them; the results would differ",
                         dt(from), dt(to)));
    if (is_int(from) && is_int(to))
      reject(fmt::format("unsupported cast {} -> {}: the scalar cast wraps, tile.cast saturates (or has no such "
                         "pair)",
                         dt(from), dt(to)));
    if (is_bool(from) || is_bool(to)) reject(fmt::format("unsupported cast {} -> {}", dt(from), dt(to)));
    if (from == D::Int32 && to == D::BFloat16)
      reject("unsupported cast int32 -> bfloat16: through float32 it would round twice");
    // One rounding at most: every step but the last is exact.
    if (from == D::Float16 && to == D::BFloat16) return {{D::Float32, f(from, D::Float32)}, {to, f(D::Float32, to)}};
    if (from == D::BFloat16 && to == D::Float16) return {{D::Float32, f(from, D::Float32)}, {to, f(D::Float32, to)}};
    if (from == D::Int32 && to == D::Float16)  // int32 -> fp32 -> fp16: exact below 2^24, inf above 65520
      return {{D::Float32, f(from, D::Float32)}, {to, f(D::Float32, to)}};
    if ((from == D::Int8 || from == D::UInt8) && to != D::Float16)
      return concat({{D::Float16, f(from, D::Float16)}}, cast_steps(D::Float16, to));
    if (from == D::Int16 && to == D::BFloat16) return {{D::Float32, f(from, D::Float32)}, {to, f(D::Float32, to)}};
    return {{to, f(from, to)}};
  }
  static std::vector<std::pair<DType, std::string>> concat(std::vector<std::pair<DType, std::string>> a,
                                                           const std::vector<std::pair<DType, std::string>>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  /// A full tile of `v` (materialising scalars, rows and columns) in its own dtype.
  Val to_tile(Val v) {
    switch (v.kind) {
      case Kind::Tile: return v;
      case Kind::Mask: reject("a comparison used as a value (comparisons may only be T.if_then_else conditions)");
      case Kind::Scalar: {
        check_fill_dtype(v.dtype);
        Val t = tile_temp(v.dtype);
        emit(ops::tile::fill(), {t.region, v.scalar});
        return t;
      }
      case Kind::Col: {
        release(v);
        Val t = tile_temp(v.dtype);
        emit(ops::tile::broadcast(), {t.region, v.region});
        return t;
      }
      case Kind::Row: {
        // x + (-0.0) is x for every x (-0.0 included): a row broadcast through row_expand_add.
        if (v.dtype == DType::BFloat16) {  // no bfloat16 arithmetic: through float32, both casts exact
          Val wide = to_tile(convert(v, DType::Float32, false));
          return convert(wide, DType::BFloat16, true);
        }
        if (v.dtype != DType::Float16 && v.dtype != DType::Float32 && v.dtype != DType::Int16 &&
            v.dtype != DType::Int32)
          reject(fmt::format("unsupported dtype: a row broadcast of {}", dt(v.dtype)));
        Val t = tile_temp(v.dtype);
        emit(ops::tile::fill(),
             {t.region, is_float(v.dtype) ? imm(v.dtype, -0.0) : arith::make_int(v.dtype, 0)});
        emit(ops::tile::row_expand_add(), {t.region, t.region, v.region});
        release(v);
        return t;
      }
    }
    return v;
  }
  void check_fill_dtype(DType t) const {
    if (dtype_bytes(t) < 2 || t == DType::Float64 || dtype_bytes(t) > 4 || is_bool(t))
      reject(fmt::format("unsupported dtype: tile.fill of {}", dt(t)));
  }

  /// `v` as dtype `to`, bit-identical to the scalar conversion (exact conversions only unless
  /// `rounding` says the node is a Cast, which rounds once).
  Val convert(Val v, DType to, bool rounding, const BufferRegion* into = nullptr) {
    if (v.dtype == to) return v;
    if (v.kind == Kind::Mask) reject("a comparison used as a value (comparisons may only be T.if_then_else conditions)");
    if (!rounding && !exact_conversion(v.dtype, to))
      reject(fmt::format("an operand of dtype {} in an operation on {}: the conversion rounds or has no vector "
                         "cast, and the scalar loop computes with the exact value (write an explicit cast)",
                         dt(v.dtype), dt(to)));
    // A vector op rounds a scalar operand to its own dtype: exact conversions only (a Cast of
    // a loop-invariant value is itself loop-invariant, so it never gets here).
    if (v.kind == Kind::Scalar) return scalar_operand(v, to);
    if (v.kind == Kind::Col) v = to_tile(v);
    auto steps = cast_steps(v.dtype, to);
    Val cur = v;
    for (size_t i = 0; i < steps.size(); ++i) {
      release(cur);
      bool last = i + 1 == steps.size();
      Val out = cur.kind == Kind::Row ? row_temp(steps[i].first) : dest(steps[i].first, last ? into : nullptr);
      emit(ops::tile::cast(), {out.region, cur.region}, {{"mode", steps[i].second}});
      cur = out;
    }
    return cur;
  }

  /// Scalar operand of a vector op of dtype `t`: the op rounds it to `t`, so its value must
  /// already be one of `t` (its dtype converts exactly, or it is an exactly representable
  /// literal).
  Val scalar_operand(const Val& v, DType t) {
    if (v.dtype == t || exact_conversion(v.dtype, t)) return {Kind::Scalar, {}, v.scalar, t, -1};
    if (auto* f = v.scalar.as<FloatImmNode>(); f && is_float(t) && arith::round_float(t, f->value) == f->value)
      return {Kind::Scalar, {}, v.scalar, t, -1};
    if (auto c = as_const_int(v.scalar)) {
      if (is_float(t) && arith::round_float(t, static_cast<double>(*c)) == static_cast<double>(*c))
        return {Kind::Scalar, {}, v.scalar, t, -1};
      if (is_int(t) && arith::wrap(t, *c) == *c) return {Kind::Scalar, {}, v.scalar, t, -1};
    }
    reject(fmt::format("the loop-invariant operand {} ({}) would be rounded to {} before a {} vector op, while "
                       "the scalar loop uses its exact value (write an explicit cast)",
                       print(v.scalar), dt(v.dtype), dt(t), dt(t)));
  }

  // ---- expressions ----------------------------------------------------------------------------

  Val gen_load(const LoadNode& n) {
    check_ub(n.buffer, n.indices, "operand");
    auto acc = access(n.buffer, n.indices, "operand");
    std::vector<bool> used(dims_.size(), false);
    for (const Affine& a : acc)
      if (a.var >= 0) used[a.var] = true;
    size_t k = dims_.size();
    BufferRegion r = region_from(n.buffer, acc);
    std::string what = fmt::format("operand {}", access_str(n.buffer, n.indices));
    bool all = std::all_of(used.begin(), used.end(), [](bool b) { return b; });
    if (all) {
      check_alignment(r, what);
      return {Kind::Tile, r, {}, n.dtype, -1};
    }
    // Row broadcast: every variable but the innermost (b[i] in a loop over (i, j)).
    bool row = !used[k - 1];
    for (size_t d = 0; d + 1 < k; ++d) row = row && used[d];
    if (row) {
      check_alignment(r, what);
      return {Kind::Row, r, {}, n.dtype, -1};
    }
    // Column broadcast: the innermost variables, leading ones missing (b[j] over (i, j)).
    size_t first = 0;
    while (first < k && !used[first]) ++first;
    bool col = first > 0;
    for (size_t d = first; d < k; ++d) col = col && used[d];
    // The broadcast aligns the source's dimensions to the right: no invariant index after the
    // first variable.
    for (size_t p = 0, seen = 0; p < acc.size(); ++p) {
      if (acc[p].var >= 0) seen = 1;
      else if (seen) col = false;
    }
    if (col) {
      check_alignment(r, what);
      return {Kind::Col, r, {}, n.dtype, -1};
    }
    reject(fmt::format("unsupported broadcast: {} uses loop variables {}; supported are all of them, all but the "
                       "innermost (a row broadcast) or the innermost ones (a column broadcast)",
                       access_str(n.buffer, n.indices), used_names(used)));
  }
  std::string used_names(const std::vector<bool>& used) const {
    std::string s;
    for (size_t k = 0; k < used.size(); ++k)
      if (used[k]) s += (s.empty() ? "" : ", ") + dims_[k].var.name();
    return "(" + s + ")";
  }

  /// gen() computing a subexpression that occurs several times (a let used twice) once: its
  /// temporary stays live until its last use has read it.
  Val gen(const Expr& e, const BufferRegion* into = nullptr) {
    auto uses = uses_.find(e.get());
    if (uses == uses_.end() || uses->second < 2) return gen_node(e, into);
    if (auto m = memo_.find(e.get()); m != memo_.end()) return m->second;
    Val v = gen_node(e, nullptr);
    if (v.temp >= 0) temps_[v.temp].pending = uses->second;
    memo_[e.get()] = v;
    return v;
  }

  /// How often each subexpression node of `e` occurs in it (lets inline one node many times).
  void count_uses(const Expr& e) {
    pre_order_visit(StoreNode::make(Buffer(), {}, e), [](const Stmt&) {},
                    [&](const Expr& x) { ++uses_[x.get()]; });
  }

  Val gen_node(const Expr& e, const BufferRegion* into) {
    if (invariant(e)) {
      if (e.dtype() == DType::Bool) reject(fmt::format("unsupported: a loop-invariant condition {}", print(e)));
      // Loads of buffers the loop writes were checked by check_no_cross_iteration.
      return {Kind::Scalar, {}, e, e.dtype(), -1};
    }
    switch (e.kind()) {
      case ExprKind::Var: return gen_loop_var(*e.as<VarNode>());
      case ExprKind::Load: return gen_load(*e.as<LoadNode>());
      case ExprKind::Cast: {
        auto* c = e.as<CastNode>();
        Val v = gen(c->value);
        if (v.kind == Kind::Mask) reject("a comparison used as a value (cast of a bool)");
        return convert(v, c->dtype, true, into);
      }
      case ExprKind::Binary: return gen_binary(*e.as<BinaryNode>(), e, into);
      case ExprKind::Select: return gen_select(*e.as<SelectNode>(), into);
      case ExprKind::Call: return gen_call(*e.as<CallNode>(), into);
      case ExprKind::Not: reject("unsupported operation: logical not inside T.Parallel");
      default: break;
    }
    reject(fmt::format("unsupported expression {}", print(e)));
  }

  /// A loop variable used as a value (a mask `j * bN + c < S`, a causal `i >= c`): its values
  /// min, min + 1, ... made once by tile.arith_progression into an int32 temporary, which the
  /// rest of the loop reads as a broadcast over the other variables (ArithProgression: A2 takes
  /// int32; exact, since the progression computes first + i * diff in integers here).
  Val gen_loop_var(const VarNode& v) {
    size_t d = 0, k = dims_.size();
    while (d < k && dims_[d].var.get() != &v) ++d;
    TL_ASSERT(d < k, "gen_loop_var: {} is not a loop variable of this loop yet not invariant", v.name);
    if (v.dtype != DType::Int32)
      reject(fmt::format("the loop variable {} ({}) is used as a value; only int32 loop variables are", v.name,
                         dt(v.dtype)));
    Kind kind = k == 1 ? Kind::Tile : d + 1 == k ? Kind::Col : d == 0 && k == 2 ? Kind::Row : Kind::Tile;
    if (k > 1 && kind == Kind::Tile)
      reject(fmt::format("the loop variable {} is used as a value in a {}-dimensional loop; as values, loop "
                         "variables may be the innermost one, or either one of two",
                         v.name, k));
    Val t = temp(DType::Int32, {extent_bounds(k)[d]}, kind);
    emit(ops::tile::arith_progression(), {t.region, dims_[d].min, Expr(1)});
    return t;
  }

  static std::string op_word(BinOp op) { return std::string(binop_name(op)); }

  /// Whether `e` may read the bytes of `b`: it loads `b`, or a buffer that may share bytes.
  bool may_read(const Expr& e, const Buffer& b) const {
    bool hit = false;
    pre_order_visit(StoreNode::make(Buffer(), {}, e), [](const Stmt&) {}, [&](const Expr& x) {
      if (auto* l = x.as<LoadNode>())
        hit = hit || l->buffer.same_as(b) || aliased_.count(l->buffer.get()) ||
              (aliased_.count(b.get()) && l->buffer->scope == b->scope);
    });
    return hit;
  }

  /// The dtype a float node computes in on the vector unit: bfloat16 has no vector arithmetic,
  /// so it computes in float32 and rounds once at the end (for + - * / the double rounding
  /// through float32 is innocuous: 24 >= 2 * 8 + 2 bits).
  ///
  /// That argument needs every operand to be a value of the node's dtype. An operand that is
  /// not (a bfloat16 value in a float16 node or the reverse, an int16 in a float16 node) makes
  /// the node "mixed": operations that only pick a value (min, max, select) still compute in
  /// float32 and round once, but + - * / are rejected, since their float32 result could round
  /// twice.
  static DType compute_dtype(DType t, std::initializer_list<const Val*> operands = {}) {
    if (t == DType::BFloat16 || (t == DType::Float16 && mixed(t, operands))) return DType::Float32;
    return t;
  }
  static bool mixed(DType t, std::initializer_list<const Val*> operands) {
    if (t == DType::Float32) return false;
    for (const Val* v : operands) {
      if (auto* f = v->kind == Kind::Scalar ? v->scalar.as<FloatImmNode>() : nullptr) {
        if (arith::round_float(t, f->value) != f->value) return true;
        continue;
      }
      if (auto c = v->kind == Kind::Scalar ? as_const_int(v->scalar) : std::nullopt) {
        if (arith::round_float(t, static_cast<double>(*c)) != static_cast<double>(*c)) return true;
        continue;
      }
      if (!exact_conversion(v->dtype, t)) return true;
    }
    return false;
  }

  Val finish(Val r, DType node_dtype, const BufferRegion* into) {
    if (r.dtype == node_dtype) return r;
    return convert(r, node_dtype, true, into);
  }

  Val gen_binary(const BinaryNode& n, const Expr& self, const BufferRegion* into) {
    if (is_comparison(n.op)) return gen_compare(n);
    if (is_logical(n.op))
      reject(fmt::format("unsupported operation: {} of conditions inside T.Parallel (nest T.if_then_else instead)",
                         op_word(n.op)));
    const DType T = self.dtype();
    const bool flt = is_float(T);
    if (flt && T != DType::Float16 && T != DType::Float32 && T != DType::BFloat16)
      reject(fmt::format("unsupported dtype: {} on {}", op_word(n.op), dt(T)));
    // The first operand may be computed in the destination when nothing computed after it
    // reads the destination's old values (element-wise ops may then read and write it).
    Val a = gen(n.a, into && !may_read(n.b, into->buffer) ? into : nullptr), b = gen(n.b);
    const DType C = flt ? compute_dtype(T, {&a, &b}) : T;
    const BufferRegion* out = C == T ? into : nullptr;
    switch (n.op) {
      case BinOp::Add:
      case BinOp::Sub:
      case BinOp::Mul:
      case BinOp::Div: {
        if (!flt && n.op == BinOp::Div) break;
        if (!flt && C != DType::Int16 && C != DType::Int32)
          reject(fmt::format(
              "unsupported dtype: {} on {} (the vector unit has int16 and int32 arithmetic)",
              op_word(n.op), dt(T)));
        if (flt && mixed(T, {&a, &b}))
          reject(fmt::format("mixed precision: {} of {} and {} in a {} node would round twice (in float32, then to "
                             "{}), while the scalar loop rounds the exact result once (cast the operands to one "
                             "dtype)",
                             op_word(n.op), dt(a.dtype), dt(b.dtype), dt(T), dt(T)));
        if (flt && n.op == BinOp::Div) accept_subnormal_flush(ops::tile::div(), "/", T);
        // x + y and x * y are commutative bit for bit, so a row or scalar on the left moves
        // right, where the op takes it directly.
        bool commutative = n.op == BinOp::Add || n.op == BinOp::Mul;
        if ((a.kind == Kind::Scalar || a.kind == Kind::Row) && commutative && b.kind != Kind::Scalar) std::swap(a, b);
        a = to_tile(convert(a, C, false));
        if (b.kind == Kind::Row) {
          if (C == DType::Float16 || C == DType::Float32 || C == DType::Int16 || C == DType::Int32) {
            b = convert(b, C, false);
            release(a);
            release(b);
            Val r = dest(C, out);
            emit(binop_op(n.op, RowMap::RowExpand), {r.region, a.region, b.region});
            return finish(r, T, into);
          }
          b = to_tile(b);
        }
        if (b.kind == Kind::Scalar) {
          b = scalar_operand(b, C);
          release(a);
          Val r = dest(C, out);
          emit(binop_op(n.op), {r.region, a.region, b.scalar});
          return finish(r, T, into);
        }
        b = to_tile(convert(b, C, false));
        release(a);
        release(b);
        Val r = dest(C, out);
        emit(binop_op(n.op), {r.region, a.region, b.region});
        return finish(r, T, into);
      }
      case BinOp::Min:
      case BinOp::Max: {
        const char* name = n.op == BinOp::Min ? "min" : "max";
        if (!flt) {
          if (C != DType::Int16 && C != DType::Int32)
            reject(fmt::format("unsupported dtype: T.{} on {}", name, dt(T)));
          if (a.kind != Kind::Tile && b.kind == Kind::Tile) std::swap(a, b);  // exact for integers
          a = to_tile(convert(a, C, false));
          if (b.kind == Kind::Scalar) {
            b = scalar_operand(b, C);
            release(a);
            Val r = dest(C, out);
            emit(binop_op(n.op), {r.region, a.region, b.scalar});
            return r;
          }
          b = to_tile(convert(b, C, false));
          release(a);
          release(b);
          Val r = dest(C, out);
          emit(binop_op(n.op), {r.region, a.region, b.region});
          return r;
        }
        // Floats: the scalar loop's max(x, y) is (x < y ? y : x) and min(x, y) is (y < x ? y :
        // x), which keep x when y is NaN; tile.max/min give NaN. compare + select is exact.
        a = to_tile(convert(a, C, false));
        if (b.kind == Kind::Scalar) b = scalar_operand(b, C);
        else b = to_tile(convert(b, C, false));
        if (auto padded = padded_compare_count(C)) return padded_min_max(n.op, a, b, C, *padded, T, out, into);
        check_compare_count(C);
        Val m = mask_temp();
        // max: mask = x < y, pick y where set. min: mask = x > y (y < x), pick y where set.
        emit(ops::tile::compare(),
             {m.region, a.region, b.kind == Kind::Scalar ? TileArg(b.scalar) : TileArg(b.region)},
             {{"mode", std::string(n.op == BinOp::Max ? "LT" : "GT")}});
        return select_min_max(a, b, m, C, T, out, into);
      }
      case BinOp::BitAnd:
      case BinOp::BitOr: {
        if (T != DType::Int16 && T != DType::UInt16)
          reject(fmt::format("unsupported dtype: {} on {} (tile.bitwise_and/or take int16 and uint16)", op_word(n.op),
                             dt(T)));
        a = to_tile(convert(a, T, false));
        b = to_tile(convert(b, T, false));
        release(a);
        release(b);
        Val r = dest(T, into);
        emit(binop_op(n.op), {r.region, a.region, b.region});
        return r;
      }
      case BinOp::Shl:
      case BinOp::Shr: {
        if (T != DType::Int16 && T != DType::UInt16 && T != DType::Int32 && T != DType::UInt32)
          reject(fmt::format("unsupported dtype: {} on {} (vector shifts take 16- and 32-bit integers)", op_word(n.op),
                             dt(T)));
        a = to_tile(convert(a, T, false));
        if (b.kind != Kind::Scalar)
          reject(fmt::format("unsupported operation: {} by a per-element amount (vector shifts take one "
                             "loop-invariant shift count)",
                             op_word(n.op)));
        release(a);
        Val r = dest(T, into);
        emit(binop_op(n.op), {r.region, a.region, b.scalar});
        return r;
      }
      default: break;
    }
    reject(fmt::format("unsupported operation: {} on {}", op_word(n.op), dt(T)));
  }

  /// A 1-D loop whose element count is not a whole number of tile.compare's 256-byte granules
  /// (the row statistics of a 32-row tile): the count padded up to the granule, else nullopt.
  std::optional<int64_t> padded_compare_count(DType c) const {
    if (dims_.size() != 1 || target_.compare_align_bytes <= 0) return std::nullopt;
    auto n = as_const_int(dims_[0].extent);
    if (!n || (*n * dtype_bytes(c)) % target_.compare_align_bytes == 0) return std::nullopt;
    const int64_t granule = std::max<int64_t>(1, target_.compare_align_bytes / dtype_bytes(c));
    return (*n + granule - 1) / granule * granule;
  }

  /// Float max/min over a padded count: the operands are copied into granule-sized UB
  /// temporaries, compared there (the lanes past the loop's count compare whatever the
  /// temporaries hold and their mask bits are never selected), and the select takes the loop's
  /// count, so the result is the scalar loop's bit for bit.
  Val padded_min_max(BinOp op, Val a, Val b, DType c, int64_t padded, DType node_dtype, const BufferRegion* out,
                     const BufferRegion* into) {
    auto padded_copy = [&](const Val& v) {
      Val t = temp(c, {padded}, Kind::Tile);
      t.region = BufferRegion::full(t.region.buffer);
      BufferRegion head = t.region;
      head.ranges[0].extent = dims_[0].extent;
      emit(ops::copy(), {v.region, head});
      return t;
    };
    Val pa = padded_copy(a);
    Val pb = b.kind == Kind::Scalar ? b : padded_copy(b);
    Val m = temp(DType::UInt8, {((padded + 7) / 8 + 31) / 32 * 32}, Kind::Mask);
    const std::string mode = op == BinOp::Max ? "LT" : "GT";
    emit(ops::tile::compare(),
         {m.region, pa.region, pb.kind == Kind::Scalar ? TileArg(pb.scalar) : TileArg(pb.region)},
         {{"mode", mode}});
    release(pa);
    release(pb);
    return select_min_max(a, b, m, c, node_dtype, out, into);
  }

  /// The select that finishes a float max/min: y where the mask (x < y for max, x > y for min)
  /// is set, else x.
  Val select_min_max(Val a, Val b, const Val& m, DType c, DType node_dtype, const BufferRegion* out,
                     const BufferRegion* into) {
    if (b.kind == Kind::Scalar) b = to_tile(b);
    release(a);
    release(b);
    release(m);
    Val r = dest(c, out);
    emit(ops::tile::select(), {r.region, m.region, b.region, a.region}, {{"mode", int64_t{2}}});
    return finish(r, node_dtype, into);
  }

  void check_compare_count(DType c) const {
    auto e = const_extents(dims_.size());
    int64_t n = 1;
    for (int64_t x : e) n *= x;
    if (target_.compare_align_bytes > 0 && (n * dtype_bytes(c)) % target_.compare_align_bytes != 0)
      reject(fmt::format("unaligned comparison: tile.compare needs count x sizeof a multiple of {} bytes; this loop "
                         "compares {} x {} = {} bytes",
                         target_.compare_align_bytes, n, dt(c), n * dtype_bytes(c)));
  }

  static std::string mirrored(const std::string& mode) {
    if (mode == "LT") return "GT";
    if (mode == "GT") return "LT";
    if (mode == "LE") return "GE";
    if (mode == "GE") return "LE";
    return mode;
  }

  Val gen_compare(const BinaryNode& n) {
    static const std::map<BinOp, std::string> modes = {{BinOp::LT, "LT"}, {BinOp::LE, "LE"}, {BinOp::GT, "GT"},
                                                       {BinOp::GE, "GE"}, {BinOp::EQ, "EQ"}, {BinOp::NE, "NE"}};
    std::string mode = modes.at(n.op);
    if (auto m = loop_var_against_invariant(n, mode)) return *m;
    Val a = gen(n.a), b = gen(n.b);
    DType C = arith::promote(a.dtype, b.dtype);
    if (C == DType::BFloat16) C = DType::Float32;
    if (C == DType::Float16 && (a.dtype == DType::BFloat16 || b.dtype == DType::BFloat16)) C = DType::Float32;
    if (C != DType::Float16 && C != DType::Float32 && C != DType::Int32)
      reject(fmt::format("unsupported dtype: comparison on {} (tile.compare takes float16, float32, int32)", dt(C)));
    if (auto it = target_.compare_modes.find(C); it != target_.compare_modes.end() &&
                                                  std::find(it->second.begin(), it->second.end(), mode) == it->second.end()) {
      if (C == DType::Int32 && (a.kind != Kind::Scalar || b.kind != Kind::Scalar)) return int32_ordering(a, b, mode);
      reject(fmt::format("unsupported comparison: {} on {} (tile.compare takes {} there on {})", mode, dt(C),
                         fmt::join(it->second, ", "), target_.name));
    }
    if (a.kind == Kind::Scalar && b.kind != Kind::Scalar) {
      std::swap(a, b);
      mode = mirrored(mode);
    }
    a = to_tile(convert(a, C, false));
    check_compare_count(C);
    Val m = mask_temp();
    if (b.kind == Kind::Scalar) {
      b = scalar_operand(b, C);
      release(a);
      emit(ops::tile::compare(), {m.region, a.region, b.scalar}, {{"mode", mode}});
      return m;
    }
    b = to_tile(convert(b, C, false));
    release(a);
    release(b);
    emit(ops::tile::compare(), {m.region, a.region, b.region}, {{"mode", mode}});
    return m;
  }

  /// `i < t` (any comparison) of a loop variable and a loop-invariant int32 t, the form of
  /// masks (`c < S - j * bN`): the variable's values in float32 (exact: its range is known and
  /// small) against t clamped to one past that range (exact too, and it changes no outcome):
  /// two ops instead of the general int32 sequence. nullopt where the form does not apply.
  std::optional<Val> loop_var_against_invariant(const BinaryNode& n, std::string mode) {
    const VarNode* v = n.a.as<VarNode>();
    Expr t = n.b;
    if (!v || !loop_vars_.count(v)) {
      v = n.b.as<VarNode>();
      t = n.a;
      mode = mirrored(mode);
    }
    if (!v || !loop_vars_.count(v) || !invariant(t) || v->dtype != DType::Int32 || t.dtype() != DType::Int32)
      return std::nullopt;
    size_t d = 0, k = dims_.size();
    while (dims_[d].var.get() != v) ++d;
    auto lo = as_const_int(dims_[d].min);
    if (!lo || (k > 1 && d + 1 != k && !(d == 0 && k == 2))) return std::nullopt;
    const int64_t hi = *lo + extent_bounds(k)[d] - 1;  // the variable's largest value
    constexpr int64_t kExact = int64_t{1} << 24;        // integers float32 holds exactly
    if (*lo - 1 <= -kExact || hi + 1 >= kExact) return std::nullopt;
    const DType F = DType::Float32;
    Val x;
    if (k == 1) {
      // A 1-D loop compares its own temporary: pad it to the compare's 256-byte granule (the
      // extra lanes' bits are never selected), so a 32-key mask needs no 64-wide loop.
      const int64_t granule = std::max<int64_t>(1, target_.compare_align_bytes / dtype_bytes(F));
      x = temp(F, {(extent_bounds(1)[0] + granule - 1) / granule * granule}, Kind::Tile);
      x.region = BufferRegion::full(x.region.buffer);
    } else {
      x = temp(F, {extent_bounds(k)[d]}, d + 1 == k ? Kind::Col : Kind::Row);
    }
    emit(ops::tile::arith_progression(), {x.region, imm(F, static_cast<double>(*lo)), imm(F, 1.0)});
    x = to_tile(x);
    if (k > 1) check_compare_count(F);
    Expr clamped = max(min(t, int_imm(hi + 1)), int_imm(*lo - 1));
    Val m = mask_temp();
    release(x);
    emit(ops::tile::compare(), {m.region, x.region, cast(F, clamped)}, {{"mode", mode}});
    return m;
  }

  /// An int32 ordering (a < b, ...) where the target compares int32 for equality only (A2's
  /// Compare): the sign of d = fa - fb where fa, fb are a, b rounded to float32, or, where they
  /// round to the same float, the sign of the int32 a - b converted to float32. Exact for every
  /// pair: rounding is monotonic, so fa < fb implies a < b (and > likewise), and fa == fb puts a
  /// and b within two float32 ulps (at most 512 apart), where a - b cannot wrap; fa - fb of
  /// two distinct floats has their order's sign.
  Val int32_ordering(Val a, Val b, const std::string& mode) {
    const DType F = DType::Float32;
    std::string m = mode;
    if (a.kind == Kind::Scalar) {
      std::swap(a, b);
      m = mirrored(m);
    }
    for (const Val* v : {&a, &b})
      if (v->kind != Kind::Scalar && v->dtype != DType::Int32)
        reject(fmt::format("unsupported comparison: {} of {} with int32 (convert the operand to int32)", m, dt(v->dtype)));
    if (b.kind == Kind::Scalar) b = scalar_operand(b, DType::Int32);
    a = to_tile(a);
    check_compare_count(F);
    // a and b are read twice each (a - b, then their conversion): keep their temporaries.
    if (a.temp >= 0) temps_[a.temp].pending += 1;
    if (b.kind != Kind::Scalar) {
      b = to_tile(b);
      if (b.temp >= 0) temps_[b.temp].pending += 1;
    }
    Val diff_i = tile_temp(DType::Int32);
    emit(ops::tile::sub(),
         {diff_i.region, a.region, b.kind == Kind::Scalar ? TileArg(b.scalar) : TileArg(b.region)});
    release(a);
    if (b.kind != Kind::Scalar) release(b);
    Val fa = convert(a, F, true);
    Val fb = b.kind == Kind::Scalar ? Val{Kind::Scalar, {}, cast(F, b.scalar), F, -1} : convert(b, F, true);
    if (fa.temp >= 0) temps_[fa.temp].pending += 1;
    if (fb.temp >= 0) temps_[fb.temp].pending += 1;
    TileArg fb_arg = fb.kind == Kind::Scalar ? TileArg(fb.scalar) : TileArg(fb.region);
    Val same = mask_temp();
    emit(ops::tile::compare(), {same.region, fa.region, fb_arg}, {{"mode", std::string("EQ")}});
    Val diff_f = tile_temp(F);
    emit(ops::tile::sub(), {diff_f.region, fa.region, fb_arg});
    release(fa);
    release(fb);
    release(fa);
    release(fb);
    Val near = convert(diff_i, F, true);
    Val d = tile_temp(F);
    emit(ops::tile::select(), {d.region, same.region, near.region, diff_f.region},
         {{"mode", int64_t{2}}});
    release(same);
    release(near);
    release(diff_f);
    Val r = mask_temp();
    emit(ops::tile::compare(), {r.region, d.region, imm(F, 0.0)}, {{"mode", m}});
    release(d);
    return r;
  }

  /// T.if_then_else(cond, t, f) with a loop-invariant cond: the scalar unit branches, each
  /// branch computing its value into one tile (no vector select; any dtype). Only the chosen
  /// branch runs; the scalar loop evaluates both, but float arithmetic cannot fail, so the
  /// results agree.
  Val gen_invariant_select(const SelectNode& n, const BufferRegion* into) {
    Val r = dest(n.dtype, into);
    if (r.temp >= 0) temps_[r.temp].pending = 1 << 20;  // held through both branches
    auto branch = [&](const Expr& e) {
      size_t mark = ops_.size();
      auto memo = memo_;
      std::vector<Temp> before = temps_;
      write_to(e, r.region);
      memo_ = memo;  // values computed on one path only are not available after the if
      // A value computed before the if stays where it is: a branch may read it but not free
      // its temporary (the other path, or code after the if, may still read it).
      for (size_t i = 0; i < before.size(); ++i)
        if (before[i].busy) temps_[i] = before[i];
      std::vector<Stmt> body(ops_.begin() + static_cast<std::ptrdiff_t>(mark), ops_.end());
      ops_.resize(mark);
      return SeqNode::make(std::move(body), loc_);
    };
    Stmt then_case = branch(n.t), else_case = branch(n.f);
    ops_.push_back(IfNode::make(n.cond, then_case, else_case, loc_));
    if (r.temp >= 0) temps_[r.temp].pending = 1;
    return r;
  }

  Val gen_select(const SelectNode& n, const BufferRegion* into) {
    if (invariant(n.cond)) return gen_invariant_select(n, into);
    const DType T = n.dtype;
    if (T != DType::Float16 && T != DType::Float32 && T != DType::BFloat16)
      reject(fmt::format("unsupported dtype: T.if_then_else of {} (tile.select takes float16 and float32)", dt(T)));
    Val m = gen(n.cond);
    if (m.kind != Kind::Mask)
      reject(fmt::format("unsupported condition {} (a T.if_then_else condition must be one comparison)",
                         print(n.cond)));
    Val t = gen(n.t), f = gen(n.f);
    const DType C = compute_dtype(T, {&t, &f});
    t = to_tile(convert(t, C, false));
    if (f.kind == Kind::Scalar) {
      f = scalar_operand(f, C);
      release(m);
      release(t);
      Val r = dest(C, C == T ? into : nullptr);
      emit(ops::tile::select(), {r.region, m.region, t.region, f.scalar}, {{"mode", int64_t{1}}});
      return finish(r, T, into);
    }
    f = to_tile(convert(f, C, false));
    release(m);
    release(t);
    release(f);
    Val r = dest(C, C == T ? into : nullptr);
    emit(ops::tile::select(), {r.region, m.region, t.region, f.region}, {{"mode", int64_t{2}}});
    return finish(r, T, into);
  }

  /// A vector op that flushes subnormals on this target (OpDef::flushes_subnormals on a
  /// Target::vector_flushes_subnormals chip, 950) where the scalar loop keeps them (the scalar
  /// unit's FPU: no flush is documented, and the model computes IEEE): the vector code is not
  /// bit-identical for subnormal operands or results, so it is rejected, or accepted with a
  /// remark under allow_inexact_math. On A2/A3 the vector unit keeps subnormals too: nothing
  /// to do. (tile.row_expand_div flushes exactly when tile.div does.)
  void accept_subnormal_flush(const OpDef& def, const std::string& what, DType t) {
    const std::string& op = def.name;
    if (!def.flushes_subnormals || !target_.vector_flushes_subnormals) return;
    if (!opt_.allow_inexact_math)
      reject(fmt::format("unsupported operation: {} on {}: {} on {} flushes subnormal operands and results to zero, "
                         "while the scalar loop keeps them (VectorizeOptions::allow_inexact_math accepts the "
                         "difference)",
                         what, dt(t), op, target_.name));
    remark(fmt::format("{} on {} vectorised as {}, which flushes subnormals on {} (the scalar loop keeps them)", what,
                       dt(t), op, target_.name));
  }

  /// Whether tile.<name> on dtype `t` gives the scalar intrinsic's result bit for bit. The
  /// vector op computes in fp32 and rounds; the scalar loop computes in double and rounds once.
  /// Checked exhaustively over every float16 and bfloat16 input by the test
  /// VectorizeParallel.IntrinsicExactnessTableMatchesExhaustiveRuns (on A2: a target that
  /// flushes subnormals adds accept_subnormal_flush's check).
  static bool exact_intrinsic(const std::string& name, DType t) {
    if (name == "abs" || name == "sqrt") return true;  // exact, or correctly rounded in both
    // bfloat16 log and exp: fp32's 24 bits make the rounding through fp32 innocuous for 8-bit
    // results, subnormal ones included now that A2 keeps them (exp on bfloat16 differed on
    // every input whose result is subnormal while the model flushed them). float16 exp and log,
    // and every float32 one, round twice; rsqrt is an approximation on the chip; sigmoid's fp32
    // formula rounds three times.
    if (name == "log" || name == "exp") return t == DType::BFloat16;
    return false;
  }

  Val gen_call(const CallNode& n, const BufferRegion* into) {
    static const std::map<std::string, const OpDef* (*)()> kVectorOf = {{"exp", [] { return &ops::tile::exp(); }},
                                                                        {"log", [] { return &ops::tile::ln(); }},
                                                                        {"sqrt", [] { return &ops::tile::sqrt(); }},
                                                                        {"rsqrt", [] { return &ops::tile::rsqrt(); }},
                                                                        {"abs", [] { return &ops::tile::abs(); }},
                                                                        {"sigmoid", [] { return &ops::tile::sigmoid(); }}};
    auto it = kVectorOf.find(n.name);
    if (it == kVectorOf.end() || n.args.size() != 1)
      reject(fmt::format("unsupported operation: T.{} has no vector op", n.name));
    const DType T = n.dtype;
    if (T != DType::Float16 && T != DType::Float32 && T != DType::BFloat16)
      reject(fmt::format("unsupported dtype: T.{} on {}", n.name, dt(T)));
    if (!exact_intrinsic(n.name, T)) {
      if (!opt_.allow_inexact_math)
        reject(fmt::format(
            "unsupported operation: T.{} on {}: {} computes in float32 and differs from the "
            "scalar loop's correctly rounded result for some inputs (VectorizeOptions::"
            "allow_inexact_math accepts the difference)",
            n.name, dt(T), it->second()->name));
      remark(fmt::format(
          "T.{} on {} vectorised as {}, which may differ from the scalar loop in the last bit",
          n.name, dt(T), it->second()->name));
    } else {
      accept_subnormal_flush(*it->second(), "T." + n.name, T);
    }
    const DType C = compute_dtype(T);
    Val a = to_tile(convert(gen(n.args[0]), C, false));
    release(a);
    Val r = dest(C, C == T ? into : nullptr);
    emit(*it->second(), {r.region, a.region});
    return finish(r, T, into);
  }

  // ---- stores ---------------------------------------------------------------------------------

  void emit_store(const StoreNode& st, const BufferRegion& d) {
    for (auto& t : temps_) t.busy = false;  // the values of earlier stores are dead
    uses_.clear();
    memo_.clear();
    check_alignment(d, fmt::format("destination {}", access_str(st.buffer, st.indices)));
    Expr value = share_common_subexpressions(st.value);
    count_uses(value);
    write_to(value, d);
  }

  /// `e` with structurally identical subexpressions made one node, so gen() computes each once
  /// (a[i] * a[i] casts a bfloat16 a once). Identity is the printed form, which is exact unless
  /// two different variables share a name; then nothing is shared.
  static Expr share_common_subexpressions(const Expr& e) {
    std::unordered_map<std::string, const VarNode*> names;
    bool ambiguous = false;
    pre_order_visit(StoreNode::make(Buffer(), {}, e), [](const Stmt&) {}, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>()) {
        auto [it, fresh] = names.emplace(v->name, v);
        if (!fresh && it->second != v) ambiguous = true;
      }
    });
    if (ambiguous) return e;
    struct Cse : IRMutator {
      std::unordered_map<std::string, Expr> seen;
      Expr mutate(const Expr& x) override {
        Expr y = IRMutator::mutate(x);
        if (y.kind() == ExprKind::Var || y.kind() == ExprKind::IntImm || y.kind() == ExprKind::FloatImm) return y;
        auto [it, fresh] = seen.emplace(fmt::format("{}:{}", dtype_name(y.dtype()), print(y)), y);
        return fresh ? y : it->second;
      }
    } cse;
    return cse.mutate(e);
  }

  /// Ops computing `value` into region `d` (of the loop's shape).
  void write_to(const Expr& e, const BufferRegion& d) {
    const DType B = d.buffer->dtype;
    Expr value = e;
    if (value.dtype() != B) value = CastNode::make(B, value);  // a store converts as a cast does
    Val v = gen(value, &d);
    if (v.kind == Kind::Tile && v.region.buffer.same_as(d.buffer) && print(v.region) == print(d)) {
      release(v);
      return;  // the root wrote the destination
    }
    switch (v.kind) {
      case Kind::Scalar:
        check_fill_dtype(B);
        emit(ops::tile::fill(), {d, v.scalar});
        break;
      case Kind::Mask: reject("a comparison stored as a value (use T.if_then_else(cond, 1, 0))");
      default: {
        v = to_tile(v);
        TL_ASSERT(v.dtype == B, "vectorize_parallel: value of {} for a {} destination", dt(v.dtype), dt(B));
        emit(ops::copy(), {v.region, d});
        release(v);
      }
    }
  }

  void remark(const std::string& msg) const { emit_remark(opt_, loc_, msg); }

  const Target& target_;
  const VectorizeOptions& opt_;
  std::unordered_set<std::string>& taken_;
  const std::unordered_set<const BufferNode*>& aliased_;  // views and their bases, pinned buffers
  std::vector<LoopDim> dims_;
  std::unordered_set<const VarNode*> loop_vars_;
  SourceLoc loc_;
  std::vector<Stmt> allocs_, ops_;
  std::vector<Temp> temps_;
  std::vector<std::pair<Buffer, std::vector<Expr>>> writes_;
  std::vector<int64_t> bounds_;  // extent_bounds()
  std::unordered_map<const ExprNode*, int> uses_;
  std::unordered_map<const ExprNode*, Val> memo_;
  int name_counter_ = 0;
};

class ParallelRewriter : public IRMutator {
 public:
  ParallelRewriter(const Target& t, const VectorizeOptions& o, std::unordered_set<std::string>& taken,
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
      if (!opt_.scalar_fallback) throw Error(n->loc, fmt::format("T.Parallel: cannot vectorise: {}", r.reason));
      emit_remark(opt_, n->loc, fmt::format("T.Parallel runs as a serial scalar loop (scalar_fallback): {}", r.reason));
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
          if (auto* f = x.as<ForNode>(); f && f->for_kind == ForKind::Parallel) to[x.get()] = vectorize_nest(x);
        return dev::replaced(*staged, to);
      } catch (const Reject& r) {
        why = r.reason;
      }
    }
    if (!why.empty())
      emit_remark(opt_, self->loc, fmt::format("T.Parallel over GM runs element by element on the scalar unit: {}", why));
    return to_serial(self);
  }

  /// A scalar variable written by every iteration is a reduction, over GM as over UB tiles: the
  /// scalar loop would fix one order of the additions T.Parallel leaves open. Throws Reject.
  static void reject_reductions(const Stmt& self) {
    pre_order_visit(self, [&](const Stmt& x) {
      if (auto* st = x.as<StoreNode>(); st && st->buffer->scope == MemScope::Var)
        reject(fmt::format("reduction inside T.Parallel: the scalar variable '{}' is written by every iteration "
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
      throw Reject{fmt::format("a {}-deep T.Parallel nest (the vector unit takes 1 to 3 dimensions)", dims.size())};
    if (core_ != CoreKind::Vector)
      throw Reject{"T.Parallel outside T.Scope(\"Vector\") (element loops run on the AIV; run infer_scopes "
                   "first)"};
    Vectorizer v(target_, opt_, taken_, aliased_);
    return v.run(dims, body, n->loc);
  }

  /// Every Parallel loop of the nest becomes serial, the inner ones too (a nest's levels are
  /// separated by one-statement blocks in DSL-built IR).
  static Stmt to_serial(const Stmt& s) {
    struct Serialiser : IRMutator {
      Stmt mutate_(const ForNode* f, const Stmt& self) override {
        Stmt body = mutate(f->body);
        if (f->for_kind != ForKind::Parallel) return body.same_as(f->body) ? self : ForNode::make(f->var, f->min, f->extent, f->for_kind, f->num_stages, body, f->loc);
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
