// vectorize_parallel, the mapping of the loop's operators onto vector ops (the Vectorizer of
// vectorize_parallel_impl.h): binary arithmetic (with its compute dtype and row broadcasts), max
// and min as compare + select, comparisons (int32 orderings on targets that compare int32 for
// equality only), T.if_then_else and the intrinsic calls, each with the reason it is bit-identical
// to the scalar loop or the rejection. docs/compiler.md, section "vectorize_parallel", has the
// mapping table.

#include "vectorize_parallel_impl.h"

namespace tl {
namespace vectorize_detail {

Vectorizer::Val Vectorizer::gen_binary(const BinaryNode& n, const Expr& self,
                                       const BufferRegion* into) {
  if (is_comparison(n.op)) return gen_compare(n);
  if (is_logical(n.op))
    reject(fmt::format(
        "unsupported operation: {} of conditions inside T.Parallel (nest T.if_then_else instead)",
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
        reject(fmt::format(
            "mixed precision: {} of {} and {} in a {} node would round twice (in float32, then "
            "to "
            "{}), while the scalar loop rounds the exact result once (cast the operands to one "
            "dtype)",
            op_word(n.op), dt(a.dtype), dt(b.dtype), dt(T), dt(T)));
      if (flt && n.op == BinOp::Div) accept_subnormal_flush(ops::tile::div(), "/", T);
      // x + y and x * y are commutative bit for bit, so a row or scalar on the left moves
      // right, where the op takes it directly.
      bool commutative = n.op == BinOp::Add || n.op == BinOp::Mul;
      if ((a.kind == Kind::Scalar || a.kind == Kind::Row) && commutative && b.kind != Kind::Scalar)
        std::swap(a, b);
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
      if (b.kind == Kind::Scalar)
        b = scalar_operand(b, C);
      else
        b = to_tile(convert(b, C, false));
      if (auto padded = padded_compare_count(C))
        return padded_min_max(n.op, a, b, C, *padded, T, out, into);
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
        reject(
            fmt::format("unsupported dtype: {} on {} (tile.bitwise_and/or take int16 and uint16)",
                        op_word(n.op), dt(T)));
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
        reject(
            fmt::format("unsupported dtype: {} on {} (vector shifts take 16- and 32-bit integers)",
                        op_word(n.op), dt(T)));
      a = to_tile(convert(a, T, false));
      if (b.kind != Kind::Scalar)
        reject(
            fmt::format("unsupported operation: {} by a per-element amount (vector shifts take one "
                        "loop-invariant shift count)",
                        op_word(n.op)));
      release(a);
      Val r = dest(T, into);
      emit(binop_op(n.op), {r.region, a.region, b.scalar});
      return r;
    }
    default:
      break;
  }
  reject(fmt::format("unsupported operation: {} on {}", op_word(n.op), dt(T)));
}

/// A 1-D loop whose element count is not a whole number of tile.compare's 256-byte granules
/// (the row statistics of a 32-row tile): the count padded up to the granule, else nullopt.
std::optional<int64_t> Vectorizer::padded_compare_count(DType c) const {
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
Vectorizer::Val Vectorizer::padded_min_max(BinOp op, Val a, Val b, DType c, int64_t padded,
                                           DType node_dtype, const BufferRegion* out,
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
Vectorizer::Val Vectorizer::select_min_max(Val a, Val b, const Val& m, DType c, DType node_dtype,
                                           const BufferRegion* out, const BufferRegion* into) {
  if (b.kind == Kind::Scalar) b = to_tile(b);
  release(a);
  release(b);
  release(m);
  Val r = dest(c, out);
  emit(ops::tile::select(), {r.region, m.region, b.region, a.region}, {{"mode", int64_t{2}}});
  return finish(r, node_dtype, into);
}

void Vectorizer::check_compare_count(DType c) const {
  auto e = const_extents(dims_.size());
  int64_t n = 1;
  for (int64_t x : e) n *= x;
  if (target_.compare_align_bytes > 0 && (n * dtype_bytes(c)) % target_.compare_align_bytes != 0)
    reject(
        fmt::format("unaligned comparison: tile.compare needs count x sizeof a multiple of {} "
                    "bytes; this loop "
                    "compares {} x {} = {} bytes",
                    target_.compare_align_bytes, n, dt(c), n * dtype_bytes(c)));
}

std::string Vectorizer::mirrored(const std::string& mode) {
  if (mode == "LT") return "GT";
  if (mode == "GT") return "LT";
  if (mode == "LE") return "GE";
  if (mode == "GE") return "LE";
  return mode;
}

Vectorizer::Val Vectorizer::gen_compare(const BinaryNode& n) {
  static const std::map<BinOp, std::string> modes = {{BinOp::LT, "LT"}, {BinOp::LE, "LE"},
                                                     {BinOp::GT, "GT"}, {BinOp::GE, "GE"},
                                                     {BinOp::EQ, "EQ"}, {BinOp::NE, "NE"}};
  std::string mode = modes.at(n.op);
  if (auto m = loop_var_against_invariant(n, mode)) return *m;
  Val a = gen(n.a), b = gen(n.b);
  DType C = arith::promote(a.dtype, b.dtype);
  if (C == DType::BFloat16) C = DType::Float32;
  if (C == DType::Float16 && (a.dtype == DType::BFloat16 || b.dtype == DType::BFloat16))
    C = DType::Float32;
  if (C != DType::Float16 && C != DType::Float32 && C != DType::Int32)
    reject(fmt::format(
        "unsupported dtype: comparison on {} (tile.compare takes float16, float32, int32)", dt(C)));
  if (auto it = target_.compare_modes.find(C);
      it != target_.compare_modes.end() &&
      std::find(it->second.begin(), it->second.end(), mode) == it->second.end()) {
    if (C == DType::Int32 && (a.kind != Kind::Scalar || b.kind != Kind::Scalar))
      return int32_ordering(a, b, mode);
    reject(fmt::format("unsupported comparison: {} on {} (tile.compare takes {} there on {})", mode,
                       dt(C), fmt::join(it->second, ", "), target_.name));
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
std::optional<Vectorizer::Val> Vectorizer::loop_var_against_invariant(const BinaryNode& n,
                                                                      std::string mode) {
  const VarNode* v = n.a.as<VarNode>();
  Expr t = n.b;
  if (!v || !loop_vars_.count(v)) {
    v = n.b.as<VarNode>();
    t = n.a;
    mode = mirrored(mode);
  }
  if (!v || !loop_vars_.count(v) || !invariant(t) || v->dtype != DType::Int32 ||
      t.dtype() != DType::Int32)
    return std::nullopt;
  size_t d = 0, k = dims_.size();
  while (dims_[d].var.get() != v) ++d;
  auto lo = as_const_int(dims_[d].min);
  if (!lo || (k > 1 && d + 1 != k && !(d == 0 && k == 2))) return std::nullopt;
  const int64_t hi = *lo + extent_bounds(k)[d] - 1;  // the variable's largest value
  constexpr int64_t kExact = int64_t{1} << 24;       // integers float32 holds exactly
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
Vectorizer::Val Vectorizer::int32_ordering(Val a, Val b, const std::string& mode) {
  const DType F = DType::Float32;
  std::string m = mode;
  if (a.kind == Kind::Scalar) {
    std::swap(a, b);
    m = mirrored(m);
  }
  for (const Val* v : {&a, &b})
    if (v->kind != Kind::Scalar && v->dtype != DType::Int32)
      reject(
          fmt::format("unsupported comparison: {} of {} with int32 (convert the operand to int32)",
                      m, dt(v->dtype)));
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
  Val fb = b.kind == Kind::Scalar ? Val{Kind::Scalar, {}, cast(F, b.scalar), F, -1}
                                  : convert(b, F, true);
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
Vectorizer::Val Vectorizer::gen_invariant_select(const SelectNode& n, const BufferRegion* into) {
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

Vectorizer::Val Vectorizer::gen_select(const SelectNode& n, const BufferRegion* into) {
  if (invariant(n.cond)) return gen_invariant_select(n, into);
  const DType T = n.dtype;
  if (T != DType::Float16 && T != DType::Float32 && T != DType::BFloat16)
    reject(fmt::format(
        "unsupported dtype: T.if_then_else of {} (tile.select takes float16 and float32)", dt(T)));
  Val m = gen(n.cond);
  if (m.kind != Kind::Mask)
    reject(
        fmt::format("unsupported condition {} (a T.if_then_else condition must be one comparison)",
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
void Vectorizer::accept_subnormal_flush(const OpDef& def, const std::string& what, DType t) {
  const std::string& op = def.name;
  if (!def.flushes_subnormals || !target_.vector_flushes_subnormals) return;
  if (!opt_.allow_inexact_math)
    reject(fmt::format(
        "unsupported operation: {} on {}: {} on {} flushes subnormal operands and results to "
        "zero, "
        "while the scalar loop keeps them (VectorizeOptions::allow_inexact_math accepts the "
        "difference)",
        what, dt(t), op, target_.name));
  remark(fmt::format(
      "{} on {} vectorised as {}, which flushes subnormals on {} (the scalar loop keeps them)",
      what, dt(t), op, target_.name));
}

/// T.exp, T.sqrt, ... mapped onto the vector op of their row in include/tl/intrinsics.def;
/// whether that op gives the scalar result bit for bit on a dtype is the row's exactness column
/// (IntrinsicDef::exact_on, checked exhaustively over every float16 and bfloat16 input by
/// VectorizeParallel.IntrinsicExactnessTableMatchesExhaustiveRuns; on a target that flushes
/// subnormals accept_subnormal_flush's check comes on top).
Vectorizer::Val Vectorizer::gen_call(const CallNode& n, const BufferRegion* into) {
  const IntrinsicDef* def = find_intrinsic(n.name);
  const OpDef* vop = def ? op_for_intrinsic(def->id) : nullptr;
  if (!vop || n.args.size() != 1)
    reject(fmt::format("unsupported operation: T.{} has no vector op", n.name));
  const DType T = n.dtype;
  if (T != DType::Float16 && T != DType::Float32 && T != DType::BFloat16)
    reject(fmt::format("unsupported dtype: T.{} on {}", n.name, dt(T)));
  if (!def->exact_on(T)) {
    if (!opt_.allow_inexact_math)
      reject(fmt::format(
          "unsupported operation: T.{} on {}: {} computes in float32 and differs from the "
          "scalar loop's correctly rounded result for some inputs (VectorizeOptions::"
          "allow_inexact_math accepts the difference)",
          n.name, dt(T), vop->name));
    remark(fmt::format(
        "T.{} on {} vectorised as {}, which may differ from the scalar loop in the last bit",
        n.name, dt(T), vop->name));
  } else {
    accept_subnormal_flush(*vop, "T." + n.name, T);
  }
  const DType C = compute_dtype(T);
  Val a = to_tile(convert(gen(n.args[0]), C, false));
  release(a);
  Val r = dest(C, C == T ? into : nullptr);
  emit(*vop, {r.region, a.region});
  return finish(r, T, into);
}

}  // namespace vectorize_detail
}  // namespace tl
