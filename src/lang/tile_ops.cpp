// The DSL's tile-primitive calls: each is one T::emit of a registered op. Start-point regions
// (`A.at({i, j})`) get their extents from the op's other tile operand here.
#include "builder.h"
#include "tl/lang.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/printer.h"

namespace tl::T {
namespace {

/// Gives every start-point region in `args` the extents of the first full tile operand.
void resolve_start_point_regions(std::vector<TileArg>& args, std::string_view op,
                                 const SourceLoc& loc) {
  BufferRegion* full = nullptr;
  for (auto& a : args)
    if (a.is_region() && !a.region.partial()) {
      full = &a.region;
      break;
    }
  for (auto& a : args) {
    if (!a.is_region() || !a.region.partial()) continue;
    if (!full)
      user_error(loc,
                 "T.{}: cannot infer the extents of the start-point region of '{}': no other "
                 "operand is a full region",
                 op, a.region.buffer->name);
    size_t n = a.region.ranges.size(), m = full->ranges.size();
    if (n < m && op == "copy" && a.region.buffer->scope == MemScope::GM &&
        (full->buffer->scope == MemScope::L1 || full->buffer->scope == MemScope::L0C)) {
      // A GM start point against a cube-side tile of more dimensions (`T.copy(x[k], x_L1)`,
      // x of one dimension, x_L1 [16, K]; `T.copy(c_L0C, y[n])`): TileLang-Ascend's copy gives
      // the GM side the tile's trailing extents and moves the tile's first row (a [1, K] row
      // still takes a whole 16-row fractal in L1; the other rows are left as they were). The
      // tile side becomes that row, so both sides name the elements the copy moves.
      for (size_t i = 0; i < m - n; ++i) full->ranges[i].extent = Expr(1);
    }
    if (n < m) {
      // Fewer indices than the full region's rank: the start point takes the full region's
      // trailing n extents, as TileLang-Ascend's copy does (`A[r, c]` against `a_ub[0, :, :]`
      // is the [rows, cols] of the tile); the leading ones it leaves out must be 1, or the two
      // sides would move different element counts.
      for (size_t i = 0; i < m - n; ++i) {
        auto one = as_const_int(full->ranges[i].extent);
        if (!one || *one != 1)
          user_error(loc,
                     "T.{}: start-point region of '{}' has {} indices but the extents come from "
                     "'{}' with {} dimensions, and its leading extent {} (dimension {}) is not 1: "
                     "the start point takes the trailing {} extents; slice '{}' fully instead",
                     op, a.region.buffer->name, n, full->buffer->name, m,
                     print(full->ranges[i].extent), i, n, a.region.buffer->name);
      }
      for (size_t i = 0; i < n; ++i) a.region.ranges[i].extent = full->ranges[i + (m - n)].extent;
      continue;
    }
    for (size_t i = 0; i < n; ++i)
      a.region.ranges[i].extent = i < n - m ? Expr(1) : full->ranges[i - (n - m)].extent;
  }
}

/// TileLang-Ascend's rounding mode for a UB -> UB copy between dtypes (its copy_ub_to_ub,
/// src/tl_templates/ascend/common.h): CAST_NONE for the exact widenings it lists (half, bfloat16,
/// int16 -> float; int8 -> half; int32 -> int16), CAST_RINT for every other pair. Pairs whose only
/// legal mode on the chip is CAST_NONE (uint8 -> half, int32 <-> int64) get CAST_NONE too:
/// they are exact, so round-to-nearest gives the same values there.
const char* ub_copy_cast_mode(DType from, DType to) {
  using D = DType;
  const std::pair<D, D> none[] = {
      {D::Float16, D::Float32}, {D::BFloat16, D::Float32}, {D::Int16, D::Float32},
      {D::Int8, D::Float16},    {D::Int32, D::Int16},      {D::UInt8, D::Float16},
      {D::Int32, D::Int64},     {D::Int64, D::Int32},
  };
  for (auto [f, t] : none)
    if (f == from && t == to) return "CAST_NONE";
  return "CAST_RINT";
}

/// Scopes whose dtype-changing copy can only be a vector Cast: UB, and a shared tile (which
/// the compiler places in UB or L1; L1 has no converting path, so a converting copy is UB's).
/// A fragment may become the L0C accumulator, whose copy out converts through the fixpipe, so a
/// fragment's copy stays a copy.
bool cast_scope(MemScope s) {
  return s == MemScope::UB || s == MemScope::Shared;
}

/// A T.copy between two UB (or shared) regions of different dtypes is a cast in
/// TileLang-Ascend (it lowers to AscendC::Cast); the T.tile.cast operands it becomes here, or
/// nothing when the copy is a move. The copy's own options do not apply to a cast: any of them
/// is an error.
std::optional<std::vector<TileArg>> ub_cast_operands(const std::vector<TileArg>& args,
                                                     const std::vector<Attr>& attrs,
                                                     const SourceLoc& loc) {
  if (args.size() != 2 || !args[0].is_region() || !args[1].is_region()) return std::nullopt;
  const Buffer &s = args[0].region.buffer, &d = args[1].region.buffer;
  if (!cast_scope(s->scope) || !cast_scope(d->scope) || s->dtype == d->dtype) return std::nullopt;
  for (const Attr& a : attrs)
    user_error(loc,
               "T.copy from '{}' ({}) to '{}' ({}) on chip converts dtypes (a T.tile.cast); option "
               "'{}' does not apply to it",
               s->name, dtype_name(s->dtype), d->name, dtype_name(d->dtype), a.key);
  return std::vector<TileArg>{args[1], args[0]};
}

Attr battr(const char* k, bool v) {
  return {k, v};
}
Attr iattr(const char* k, int64_t v) {
  return {k, v};
}
Attr sattr(const char* k, std::string v) {
  return {k, std::move(v)};
}

}  // namespace

void emit(std::string_view op, std::vector<TileArg> args, std::vector<Attr> attrs, const Loc& l) {
  const OpDef* def = find_op(op);
  if (!def) user_error(source_loc(l), "unknown tile primitive T.{}", op);
  emit(*def, std::move(args), std::move(attrs), l);
}

void emit(const OpDef& op, std::vector<TileArg> args, std::vector<Attr> attrs, const Loc& l) {
  SourceLoc loc = source_loc(l);
  resolve_start_point_regions(args, op.name, loc);
  if (&op == &ops::copy())
    if (auto cast_args = ub_cast_operands(args, attrs, loc)) {
      DType from = args[0].region.buffer->dtype, to = args[1].region.buffer->dtype;
      std::vector<Attr> mode{sattr("mode", ub_copy_cast_mode(from, to))};
      lang::emit(make_tile_op(ops::tile::cast(), std::move(*cast_args), std::move(mode), loc), loc);
      return;
    }
  lang::emit(make_tile_op(op, std::move(args), std::move(attrs), loc), loc);
}

void copy(TileArg src, TileArg dst, CopyOptions opt, const Loc& l) {
  std::vector<Attr> attrs;
  if (opt.enable_relu) attrs.push_back(battr("enable_relu", true));
  if (opt.transpose) attrs.push_back(battr("transpose", true));
  if (opt.pad_value) {
    attrs.push_back(battr("pad", true));
    attrs.push_back({"pad_value", *opt.pad_value});
  }
  if (!opt.nd2nz) attrs.push_back(battr("nd2nz", false));
  emit(ops::copy(), {std::move(src), std::move(dst)}, std::move(attrs), l);
}
void atomic_add(TileArg dst, TileArg src, const Loc& l) {
  emit(ops::atomic_add(), {std::move(dst), std::move(src)}, {}, l);
}
void dcci(TileArg dst, bool entire, const Loc& l) {
  std::vector<Attr> attrs;
  if (entire) attrs.push_back(battr("entire", true));
  emit(ops::dcci(), {std::move(dst)}, std::move(attrs), l);
}
void gemm_v0(TileArg A, TileArg B, TileArg C, GemmOptions opt, const Loc& l) {
  std::vector<Attr> attrs;
  if (opt.transpose_A) attrs.push_back(battr("transpose_A", true));
  if (opt.transpose_B) attrs.push_back(battr("transpose_B", true));
  emit(ops::gemm_v0(), {std::move(A), std::move(B), std::move(C), opt.init}, std::move(attrs), l);
}
void gemm(TileArg A, TileArg B, TileArg C, GemmOptions opt, const Loc& l) {
  std::vector<Attr> attrs;
  if (opt.transpose_A) attrs.push_back(battr("transpose_A", true));
  if (opt.transpose_B) attrs.push_back(battr("transpose_B", true));
  emit(ops::gemm(), {std::move(A), std::move(B), std::move(C), opt.init}, std::move(attrs), l);
}
void fill(TileArg dst, Expr value, const Loc& l) {
  emit(ops::tile::fill(), {std::move(dst), std::move(value)}, {}, l);
}
void clear(TileArg dst, const Loc& l) {
  DType t = dst.is_region() ? dst.region.buffer->dtype : DType::Float32;
  emit(ops::tile::fill(), {std::move(dst), imm(t, 0)}, {}, l);
}
void init_const(TileArg dst, Expr value, const Loc& l) {
  emit(ops::init_const(), {std::move(dst), std::move(value)}, {}, l);
}

void mma(TileArg A, TileArg B, TileArg C, Expr init, const Loc& l) {
  emit(ops::mma(), {std::move(A), std::move(B), std::move(C), std::move(init)}, {}, l);
}

void reduce_sum(TileArg src, TileArg dst, int dim, bool clear, const Loc& l) {
  emit(ops::reduce_sum(), {std::move(src), std::move(dst)},
       {iattr("dim", dim), battr("clear", clear)}, l);
}
void reduce_max(TileArg src, TileArg dst, int dim, bool clear, const Loc& l) {
  emit(ops::reduce_max(), {std::move(src), std::move(dst)},
       {iattr("dim", dim), battr("clear", clear)}, l);
}
void reduce_min(TileArg src, TileArg dst, int dim, bool clear, const Loc& l) {
  emit(ops::reduce_min(), {std::move(src), std::move(dst)},
       {iattr("dim", dim), battr("clear", clear)}, l);
}
void sort(TileArg dst, TileArg src, Expr actual_num, const Loc& l) {
  emit(ops::sort(), {std::move(dst), std::move(src), std::move(actual_num)}, {}, l);
}
void merge_sort(TileArg dst, std::vector<TileArg> srcs, const Loc& l) {
  if (srcs.size() < 2 || srcs.size() > 4)
    user_error(source_loc(l), "T.merge_sort merges 2 to 4 queues, got {}", srcs.size());
  srcs.insert(srcs.begin(), std::move(dst));
  emit(ops::merge_sort(), std::move(srcs), {}, l);
}
void topk(TileArg dst, TileArg src, Expr k, Expr actual_num, const Loc& l) {
  emit(ops::topk(), {std::move(dst), std::move(src), std::move(k), std::move(actual_num)}, {}, l);
}
void init_sort_buf(TileArg dst, Expr num, std::optional<Expr> value, const Loc& l) {
  std::vector<TileArg> args = {std::move(dst), std::move(num)};
  if (value) args.push_back(*value);
  emit(ops::init_sort_buf(), std::move(args), {}, l);
}

namespace {
void sync(SyncKind k, Pipe src, Pipe dst, Expr id, int mode, const Loc& l) {
  SourceLoc loc = source_loc(l);
  lang::emit(SyncNode::make(k, src, dst, std::move(id), mode, loc), loc);
}
}  // namespace
void set_flag(Pipe src, Pipe dst, Expr id, const Loc& l) {
  sync(SyncKind::SetFlag, src, dst, std::move(id), 0, l);
}
void wait_flag(Pipe src, Pipe dst, Expr id, const Loc& l) {
  sync(SyncKind::WaitFlag, src, dst, std::move(id), 0, l);
}
void pipe_barrier(Pipe pipe, const Loc& l) {
  sync(SyncKind::PipeBarrier, pipe, Pipe::S, Expr(), 0, l);
}
void barrier_all(const Loc& l) {
  sync(SyncKind::BarrierAll, Pipe::ALL, Pipe::S, Expr(), 0, l);
}
void set_cross_flag(Pipe pipe, Expr id, int mode, const Loc& l) {
  sync(SyncKind::SetCrossFlag, pipe, Pipe::S, std::move(id), mode, l);
}
void wait_cross_flag(Expr id, const Loc& l) {
  sync(SyncKind::WaitCrossFlag, Pipe::S, Pipe::S, std::move(id), 0, l);
}
void sync_all(const Loc& l) {
  sync(SyncKind::SyncAll, Pipe::ALL, Pipe::S, Expr(), 0, l);
}

void printf(std::string fmt, std::vector<Expr> args, const Loc& l) {
  std::vector<TileArg> a(args.begin(), args.end());
  emit(ops::printf(), std::move(a), {sattr("fmt", std::move(fmt))}, l);
}
void dump_tensor(TileArg src, int64_t desc, const Loc& l) {
  emit(ops::dump_tensor(), {std::move(src)}, {iattr("desc", desc)}, l);
}

namespace tile {
#define TL_BINARY(NAME, OP)                                         \
  void NAME(TileArg d, TileArg a, TileArg b, const Loc& l) {        \
    T::emit(OP, {std::move(d), std::move(a), std::move(b)}, {}, l); \
  }
#define TL_UNARY(NAME, OP)                            \
  void NAME(TileArg d, TileArg s, const Loc& l) {     \
    T::emit(OP, {std::move(d), std::move(s)}, {}, l); \
  }
#define TL_VECTOR_BINARY(NAME, ...) TL_BINARY(NAME, ops::tile::NAME())
#define TL_VECTOR_UNARY(NAME, ...) TL_UNARY(NAME, ops::tile::NAME())
#define TL_VECTOR_ROW_EXPAND(NAME, ...) TL_BINARY(row_expand_##NAME, ops::tile::row_expand_##NAME())
#include "tl/vector_ops.def"
// clang-format off (macro definitions without a trailing semicolon read as one statement)
TL_BINARY(bitwise_and, ops::tile::bitwise_and())
TL_BINARY(bitwise_or, ops::tile::bitwise_or())
TL_BINARY(bitwise_xor, ops::tile::bitwise_xor())
TL_UNARY(bitwise_not, ops::tile::bitwise_not())
TL_UNARY(relu, ops::tile::relu())
TL_UNARY(broadcast, ops::tile::broadcast())
TL_UNARY(transpose, ops::tile::transpose())
// clang-format on
#undef TL_BINARY
#undef TL_UNARY

void shift_left(TileArg d, TileArg s, Expr bits, const Loc& l) {
  T::emit(ops::tile::shift_left(), {std::move(d), std::move(s), std::move(bits)}, {}, l);
}
void shift_right(TileArg d, TileArg s, Expr bits, const Loc& l) {
  T::emit(ops::tile::shift_right(), {std::move(d), std::move(s), std::move(bits)}, {}, l);
}
void axpy(TileArg d, TileArg s, Expr alpha, const Loc& l) {
  T::emit(ops::tile::axpy(), {std::move(d), std::move(s), std::move(alpha)}, {}, l);
}
void leaky_relu(TileArg d, TileArg s, Expr alpha, const Loc& l) {
  T::emit(ops::tile::leaky_relu(), {std::move(d), std::move(s), std::move(alpha)}, {}, l);
}
void clamp(TileArg d, TileArg s, Expr lo, Expr hi, const Loc& l) {
  T::emit(ops::tile::clamp(), {std::move(d), std::move(s), std::move(lo), std::move(hi)}, {}, l);
}
void cast(TileArg d, TileArg s, std::string mode, const Loc& l) {
  T::emit(ops::tile::cast(), {std::move(d), std::move(s)}, {sattr("mode", std::move(mode))}, l);
}
void compare(TileArg d, TileArg a, TileArg b, std::string mode, const Loc& l) {
  T::emit(ops::tile::compare(), {std::move(d), std::move(a), std::move(b)},
          {sattr("mode", std::move(mode))}, l);
}
void select(TileArg d, TileArg mask, TileArg a, TileArg b, int mode, const Loc& l) {
  T::emit(ops::tile::select(), {std::move(d), std::move(mask), std::move(a), std::move(b)},
          {iattr("mode", mode)}, l);
}
void fill(TileArg d, Expr v, const Loc& l) {
  T::emit(ops::tile::fill(), {std::move(d), std::move(v)}, {}, l);
}
void createvecindex(TileArg d, Expr first, const Loc& l) {
  T::emit(ops::tile::createvecindex(), {std::move(d), std::move(first)}, {}, l);
}
void arith_progression(TileArg d, Expr first, Expr diff, std::optional<Expr> count, const Loc& l) {
  std::vector<TileArg> args = {std::move(d), std::move(first), std::move(diff)};
  if (count) args.push_back(*count);
  T::emit(ops::tile::arith_progression(), std::move(args), {}, l);
}
void gather(TileArg d, TileArg s, TileArg offsets, Expr base, const Loc& l) {
  T::emit(ops::tile::gather(), {std::move(d), std::move(s), std::move(offsets), std::move(base)},
          {}, l);
}
void gather_mask(TileArg d, TileArg s, std::string pattern, const Loc& l) {
  T::emit(ops::tile::gather_mask(), {std::move(d), std::move(s)},
          {sattr("pattern", std::move(pattern))}, l);
}
void gather_mask(TileArg d, TileArg s, TileArg mask, const Loc& l) {
  T::emit(ops::tile::gather_mask(), {std::move(d), std::move(s), std::move(mask)}, {}, l);
}
}  // namespace tile
}  // namespace tl::T
