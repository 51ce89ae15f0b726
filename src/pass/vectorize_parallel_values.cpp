// vectorize_parallel, the values of one element loop (the Vectorizer of vectorize_parallel_impl.h):
// the UB temporaries interior nodes live in and their reuse, the dtype conversions that are
// bit-identical to the scalar cast, the walk over the expression tree (loads, loop variables,
// shared subexpressions) and the stores that write each result to its destination.
// vectorize_parallel.cpp's top comment states the pass's contract.

#include "vectorize_parallel_impl.h"

namespace tl {
namespace vectorize_detail {

/// The loop extents, which must be constants (a comparison's element count).
std::vector<int64_t> Vectorizer::const_extents(size_t count) const {
  std::vector<int64_t> out;
  for (size_t k = 0; k < count; ++k) {
    auto v = as_const_int(dims_[k].extent);
    if (!v)
      reject(
          fmt::format("a comparison over a symbolic number of elements (extent {} of loop {}): "
                      "tile.compare's count must be a known multiple of 256 bytes",
                      print(dims_[k].extent), dims_[k].var.name()));
    out.push_back(*v);
  }
  return out;
}

/// Constant upper bounds of the first `count` loop extents, the shape of a temporary: the
/// extent itself, or for a symbolic one the size of the destination dimension the loop walks
/// (a larger extent would store out of bounds).
std::vector<int64_t> Vectorizer::extent_bounds(size_t count) const {
  std::vector<int64_t> out;
  for (size_t k = 0; k < count; ++k) {
    if (bounds_[k] < 0)
      reject(fmt::format(
          "this expression needs a UB temporary, but the extent {} of loop {} is symbolic and "
          "has no constant bound",
          print(dims_[k].extent), dims_[k].var.name()));
    out.push_back(bounds_[k]);
  }
  return out;
}

std::string Vectorizer::fresh_name() {
  for (;;) {
    std::string n = fmt::format("vec_t{}", name_counter_++);
    if (taken_.insert(n).second) return n;
  }
}

/// A free temporary of `dtype` and `shape` (reused when one is dead), as a Val.
Vectorizer::Val Vectorizer::temp(DType dtype, const std::vector<int64_t>& shape_in, Kind kind) {
  std::vector<int64_t> shape = shape_in;
  if (kind != Kind::Mask && shape.size() >= 2) {
    // A multi-row temporary's rows are padded to whole UB blocks: its pitch must be aligned
    // (a 2 x 7 float32 chunk lives in a 2 x 8 tile), while the loop's region keeps the
    // extent (temp_region), since vector ops take runs of any length.
    const int64_t per = std::max<int64_t>(1, target_.align(MemScope::UB) / dtype_bytes(dtype));
    shape.back() = (shape.back() + per - 1) / per * per;
  }
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
  Buffer b = BufferNode::make(fresh_name(), dtype, sh, MemScope::UB, {}, -1, loc_,
                              "temporary of an element loop");
  allocs_.push_back(AllocateNode::make(b, loc_));
  temps_.push_back({b, true, 1});
  Val v{kind, temp_region(b, kind), {}, dtype, static_cast<int>(temps_.size() - 1)};
  if (kind != Kind::Mask) check_alignment(v.region, fmt::format("the {} temporary", dt(dtype)));
  return v;
}

/// The part of temporary `b` a value of the loop's shape occupies (all of it unless an
/// extent is symbolic or its rows were padded to whole blocks).
BufferRegion Vectorizer::temp_region(const Buffer& b, Kind kind) const {
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

Vectorizer::Val Vectorizer::mask_temp() {
  auto e = const_extents(dims_.size());
  int64_t n = 1;
  for (int64_t x : e) n *= x;
  int64_t bytes = (n + 7) / 8;
  bytes = (bytes + 31) / 32 * 32;
  return temp(DType::UInt8, {bytes}, Kind::Mask);
}

void Vectorizer::release(const Val& v) {
  if (v.temp < 0) return;
  Temp& t = temps_[v.temp];
  if (--t.pending <= 0) t.busy = false;
}

/// Where a node's result of dtype `t` goes: the store's destination when it is the root and
/// the dtypes agree, else a new temporary.
Vectorizer::Val Vectorizer::dest(DType t, const BufferRegion* into) {
  if (into && into->buffer->dtype == t) return {Kind::Tile, *into, {}, t, -1};
  return tile_temp(t);
}

void Vectorizer::emit(const OpDef& op, std::vector<TileArg> args, std::vector<Attr> attrs) {
  ops_.push_back(make_tile_op(op, std::move(args), std::move(attrs), loc_));
}

/// The vector op computing scalar operator `op` (OpDef::binop), element by element or with
/// a row-broadcast second operand.
const OpDef& Vectorizer::binop_op(BinOp op, RowMap rows) {
  const OpDef* d = op_for_binop(op, rows);
  TL_ASSERT(d, "vectorize_parallel: no vector op computes {}", static_cast<int>(op));
  return *d;
}

/// The tile.cast steps of a conversion that is bit-identical to the scalar cast, or a reason.
std::vector<std::pair<DType, std::string>> Vectorizer::cast_steps(DType from, DType to) const {
  using D = DType;
  auto f = [&](D a, D b) -> std::string {  // the mode of a direct pair
    for (const auto& c : target_.casts)
      if (c.from == a && c.to == b) {
        for (const char* m : {"CAST_RINT", "CAST_NONE"})
          if (std::find(c.modes.begin(), c.modes.end(), m) != c.modes.end()) return m;
      }
    reject(
        fmt::format("unsupported cast: no {} -> {} tile.cast on {}", dt(a), dt(b), target_.name));
  };
  if (from == to) return {};
  if (is_float(from) && is_int(to))
    reject(fmt::format(
        "unsupported cast {} -> {}: the scalar cast truncates and wraps out-of-range values "
        "(and infinities), tile.cast saturates them; the results would differ",
        dt(from), dt(to)));
  if (is_int(from) && is_int(to))
    reject(fmt::format(
        "unsupported cast {} -> {}: the scalar cast wraps, tile.cast saturates (or has no such "
        "pair)",
        dt(from), dt(to)));
  if (is_bool(from) || is_bool(to))
    reject(fmt::format("unsupported cast {} -> {}", dt(from), dt(to)));
  if (from == D::Int32 && to == D::BFloat16)
    reject("unsupported cast int32 -> bfloat16: through float32 it would round twice");
  // One rounding at most: every step but the last is exact.
  if (from == D::Float16 && to == D::BFloat16)
    return {{D::Float32, f(from, D::Float32)}, {to, f(D::Float32, to)}};
  if (from == D::BFloat16 && to == D::Float16)
    return {{D::Float32, f(from, D::Float32)}, {to, f(D::Float32, to)}};
  if (from == D::Int32 &&
      to == D::Float16)  // int32 -> fp32 -> fp16: exact below 2^24, inf above 65520
    return {{D::Float32, f(from, D::Float32)}, {to, f(D::Float32, to)}};
  if ((from == D::Int8 || from == D::UInt8) && to != D::Float16)
    return concat({{D::Float16, f(from, D::Float16)}}, cast_steps(D::Float16, to));
  if (from == D::Int16 && to == D::BFloat16)
    return {{D::Float32, f(from, D::Float32)}, {to, f(D::Float32, to)}};
  return {{to, f(from, to)}};
}

std::vector<std::pair<DType, std::string>> Vectorizer::concat(
    std::vector<std::pair<DType, std::string>> a,
    const std::vector<std::pair<DType, std::string>>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// A full tile of `v` (materialising scalars, rows and columns) in its own dtype.
Vectorizer::Val Vectorizer::to_tile(Val v) {
  switch (v.kind) {
    case Kind::Tile:
      return v;
    case Kind::Mask:
      reject("a comparison used as a value (comparisons may only be T.if_then_else conditions)");
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
      if (v.dtype ==
          DType::BFloat16) {  // no bfloat16 arithmetic: through float32, both casts exact
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

void Vectorizer::check_fill_dtype(DType t) const {
  if (dtype_bytes(t) < 2 || t == DType::Float64 || dtype_bytes(t) > 4 || is_bool(t))
    reject(fmt::format("unsupported dtype: tile.fill of {}", dt(t)));
}

/// `v` as dtype `to`, bit-identical to the scalar conversion (exact conversions only unless
/// `rounding` says the node is a Cast, which rounds once).
Vectorizer::Val Vectorizer::convert(Val v, DType to, bool rounding, const BufferRegion* into) {
  if (v.dtype == to) return v;
  if (v.kind == Kind::Mask)
    reject("a comparison used as a value (comparisons may only be T.if_then_else conditions)");
  if (!rounding && !exact_conversion(v.dtype, to))
    reject(fmt::format(
        "an operand of dtype {} in an operation on {}: the conversion rounds or has no vector "
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
    Val out = cur.kind == Kind::Row ? row_temp(steps[i].first)
                                    : dest(steps[i].first, last ? into : nullptr);
    emit(ops::tile::cast(), {out.region, cur.region}, {{"mode", steps[i].second}});
    cur = out;
  }
  return cur;
}

/// Scalar operand of a vector op of dtype `t`: the op rounds it to `t`, so its value must
/// already be one of `t` (its dtype converts exactly, or it is an exactly representable
/// literal).
Vectorizer::Val Vectorizer::scalar_operand(const Val& v, DType t) {
  if (v.dtype == t || exact_conversion(v.dtype, t)) return {Kind::Scalar, {}, v.scalar, t, -1};
  if (auto* f = v.scalar.as<FloatImmNode>();
      f && is_float(t) && arith::round_float(t, f->value) == f->value)
    return {Kind::Scalar, {}, v.scalar, t, -1};
  if (auto c = as_const_int(v.scalar)) {
    if (is_float(t) && arith::round_float(t, static_cast<double>(*c)) == static_cast<double>(*c))
      return {Kind::Scalar, {}, v.scalar, t, -1};
    if (is_int(t) && arith::wrap(t, *c) == *c) return {Kind::Scalar, {}, v.scalar, t, -1};
  }
  reject(fmt::format(
      "the loop-invariant operand {} ({}) would be rounded to {} before a {} vector op, while "
      "the scalar loop uses its exact value (write an explicit cast)",
      print(v.scalar), dt(v.dtype), dt(t), dt(t)));
}

Vectorizer::Val Vectorizer::gen_load(const LoadNode& n) {
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
    if (acc[p].var >= 0)
      seen = 1;
    else if (seen)
      col = false;
  }
  if (col) {
    check_alignment(r, what);
    return {Kind::Col, r, {}, n.dtype, -1};
  }
  reject(fmt::format(
      "unsupported broadcast: {} uses loop variables {}; supported are all of them, all but the "
      "innermost (a row broadcast) or the innermost ones (a column broadcast)",
      access_str(n.buffer, n.indices), used_names(used)));
}

std::string Vectorizer::used_names(const std::vector<bool>& used) const {
  std::string s;
  for (size_t k = 0; k < used.size(); ++k)
    if (used[k]) s += (s.empty() ? "" : ", ") + dims_[k].var.name();
  return "(" + s + ")";
}

/// gen() computing a subexpression that occurs several times (a let used twice) once: its
/// temporary stays live until its last use has read it.
Vectorizer::Val Vectorizer::gen(const Expr& e, const BufferRegion* into) {
  auto uses = uses_.find(e.get());
  if (uses == uses_.end() || uses->second < 2) return gen_node(e, into);
  if (auto m = memo_.find(e.get()); m != memo_.end()) return m->second;
  Val v = gen_node(e, nullptr);
  if (v.temp >= 0) temps_[v.temp].pending = uses->second;
  memo_[e.get()] = v;
  return v;
}

/// How often each subexpression node of `e` occurs in it (lets inline one node many times).
void Vectorizer::count_uses(const Expr& e) {
  pre_order_visit(
      StoreNode::make(Buffer(), {}, e), [](const Stmt&) {},
      [&](const Expr& x) { ++uses_[x.get()]; });
}

Vectorizer::Val Vectorizer::gen_node(const Expr& e, const BufferRegion* into) {
  if (invariant(e)) {
    if (e.dtype() == DType::Bool)
      reject(fmt::format("unsupported: a loop-invariant condition {}", print(e)));
    // Loads of buffers the loop writes were checked by check_no_cross_iteration.
    return {Kind::Scalar, {}, e, e.dtype(), -1};
  }
  switch (e.kind()) {
    case ExprKind::Var:
      return gen_loop_var(*e.as<VarNode>());
    case ExprKind::Load:
      return gen_load(*e.as<LoadNode>());
    case ExprKind::Cast: {
      auto* c = e.as<CastNode>();
      Val v = gen(c->value);
      if (v.kind == Kind::Mask) reject("a comparison used as a value (cast of a bool)");
      return convert(v, c->dtype, true, into);
    }
    case ExprKind::Binary:
      return gen_binary(*e.as<BinaryNode>(), e, into);
    case ExprKind::Select:
      return gen_select(*e.as<SelectNode>(), into);
    case ExprKind::Call:
      return gen_call(*e.as<CallNode>(), into);
    case ExprKind::Not:
      reject("unsupported operation: logical not inside T.Parallel");
    default:
      break;
  }
  reject(fmt::format("unsupported expression {}", print(e)));
}

/// A loop variable used as a value (a mask `j * bN + c < S`, a causal `i >= c`): its values
/// min, min + 1, ... made once by tile.arith_progression into an int32 temporary, which the
/// rest of the loop reads as a broadcast over the other variables (ArithProgression: A2 takes
/// int32; exact, since the progression computes first + i * diff in integers here).
Vectorizer::Val Vectorizer::gen_loop_var(const VarNode& v) {
  size_t d = 0, k = dims_.size();
  while (d < k && dims_[d].var.get() != &v) ++d;
  TL_ASSERT(d < k, "gen_loop_var: {} is not a loop variable of this loop yet not invariant",
            v.name);
  if (v.dtype != DType::Int32)
    reject(
        fmt::format("the loop variable {} ({}) is used as a value; only int32 loop variables are",
                    v.name, dt(v.dtype)));
  Kind kind = k == 1             ? Kind::Tile
              : d + 1 == k       ? Kind::Col
              : d == 0 && k == 2 ? Kind::Row
                                 : Kind::Tile;
  if (k > 1 && kind == Kind::Tile)
    reject(fmt::format(
        "the loop variable {} is used as a value in a {}-dimensional loop; as values, loop "
        "variables may be the innermost one, or either one of two",
        v.name, k));
  Val t = temp(DType::Int32, {extent_bounds(k)[d]}, kind);
  emit(ops::tile::arith_progression(), {t.region, dims_[d].min, Expr(1)});
  return t;
}

/// Whether `e` may read the bytes of `b`: it loads `b`, or a buffer that may share bytes.
bool Vectorizer::may_read(const Expr& e, const Buffer& b) const {
  bool hit = false;
  pre_order_visit(
      StoreNode::make(Buffer(), {}, e), [](const Stmt&) {},
      [&](const Expr& x) {
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
DType Vectorizer::compute_dtype(DType t, std::initializer_list<const Val*> operands) {
  if (t == DType::BFloat16 || (t == DType::Float16 && mixed(t, operands))) return DType::Float32;
  return t;
}

bool Vectorizer::mixed(DType t, std::initializer_list<const Val*> operands) {
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

Vectorizer::Val Vectorizer::finish(Val r, DType node_dtype, const BufferRegion* into) {
  if (r.dtype == node_dtype) return r;
  return convert(r, node_dtype, true, into);
}

void Vectorizer::emit_store(const StoreNode& st, const BufferRegion& d) {
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
Expr Vectorizer::share_common_subexpressions(const Expr& e) {
  std::unordered_map<std::string, const VarNode*> names;
  bool ambiguous = false;
  pre_order_visit(
      StoreNode::make(Buffer(), {}, e), [](const Stmt&) {},
      [&](const Expr& x) {
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
      if (y.kind() == ExprKind::Var || y.kind() == ExprKind::IntImm ||
          y.kind() == ExprKind::FloatImm)
        return y;
      auto [it, fresh] = seen.emplace(fmt::format("{}:{}", dtype_name(y.dtype()), print(y)), y);
      return fresh ? y : it->second;
    }
  } cse;
  return cse.mutate(e);
}

/// Ops computing `value` into region `d` (of the loop's shape).
void Vectorizer::write_to(const Expr& e, const BufferRegion& d) {
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
    case Kind::Mask:
      reject("a comparison stored as a value (use T.if_then_else(cond, 1, 0))");
    default: {
      v = to_tile(v);
      TL_ASSERT(v.dtype == B, "vectorize_parallel: value of {} for a {} destination", dt(v.dtype),
                dt(B));
      emit(ops::copy(), {v.region, d});
      release(v);
    }
  }
}

}  // namespace vectorize_detail
}  // namespace tl
