// Op rules of data movement (copy, atomic_add), the cube (gemm_v0, mma) and dump_tensor. Path
// legality and core scopes are generic (verify_ops.cpp); here: dtypes, shapes and options.
#include <algorithm>
#include <tuple>

#include "op_rules.h"
#include "tl/printer.h"
#include "verify_util.h"

namespace tl::rules {
namespace {

std::string fixpipe_targets(const Target& t, MemScope dst, DType from) {
  std::vector<DType> to;
  for (const auto& r : t.fixpipe)
    if (r.dst == dst && r.from == from) to.push_back(r.to);
  return to.empty() ? "nothing" : dtype_list(to);
}

/// src -> dst dtype rule shared by copy and atomic_add: fixpipe conversions out of L0C, equal
/// dtypes otherwise.
void check_move_dtypes(const TileOpNode& n, VerifyContext& ctx, const BufferRegion& src,
                       const BufferRegion& dst) {
  const Target& t = ctx.target();
  DType from = src.buffer->dtype, to = dst.buffer->dtype;
  if (src.buffer->scope == MemScope::L0C) {
    MemScope d = dst.buffer->scope;
    bool ok = std::any_of(t.fixpipe.begin(), t.fixpipe.end(), [&](const FixpipeRule& r) {
      return r.dst == d && r.from == from && r.to == to;
    });
    if (!ok)
      ctx.error(
          n, "dst", "fixpipe-dtype",
          fmt::format("the fixpipe on {} converts {} in L0C to {} in {}, got {}", t.name,
                      dtype_str(from), fixpipe_targets(t, d, from), scope_str(d), dtype_str(to)));
    return;
  }
  if (from != to)
    ctx.error(n, "dst", "copy-dtype",
              fmt::format("only the fixpipe (out of L0C) converts dtypes; expected {} like 'src', "
                          "got {} (use T::tile::cast on UB)",
                          dtype_str(from), dtype_str(to)));
}

void check_move_shapes(const TileOpNode& n, VerifyContext& ctx, const BufferRegion& src,
                       const BufferRegion& dst, bool transpose) {
  // Unit dimensions anywhere are ignored (the copy moves elements in row-major order); a
  // transposing copy keeps its matrices' own ranks.
  auto es = transpose ? squeezed_extents(src) : unit_free_extents(src);
  auto ed = transpose ? squeezed_extents(dst) : unit_free_extents(dst);
  if (extents_may_equal(es, ed)) return;
  if (transpose && es.size() >= 2) {
    std::swap(es[es.size() - 1], es[es.size() - 2]);
    if (extents_may_equal(es, ed)) return;
    std::swap(es[es.size() - 1], es[es.size() - 2]);
  }
  ctx.error(n, "dst", "copy-shape-mismatch",
            fmt::format("expected the extents of 'src' {}{} ({}1s ignored), got {}",
                        fmt_extents(es), transpose ? " or their transpose" : "",
                        transpose ? "leading " : "", fmt_extents(ed)));
}

struct CubeDims {
  Expr m, n, k;  // as seen by each operand
};

void check_cube(const TileOpNode& n, VerifyContext& ctx, MemScope a_scope, MemScope b_scope,
                bool ta, bool tb) {
  const Target& t = ctx.target();
  const BufferRegion *A = region_of(n, "A"), *B = region_of(n, "B"), *C = region_of(n, "C");
  if (!A || !B || !C) return;
  bool scopes_ok = true;
  for (auto [name, r, want] : {std::tuple{"A", A, a_scope}, std::tuple{"B", B, b_scope},
                               std::tuple{"C", C, MemScope::L0C}})
    if (r->buffer->scope != want) {
      ctx.error(n, name, "cube-operand-scope",
                fmt::format("{} takes {} in {}, got {}", op_title(n), name, scope_str(want),
                            scope_str(r->buffer->scope)));
      scopes_ok = false;
    }
  // Dtypes from the target's Mmad table.
  DType da = A->buffer->dtype, db = B->buffer->dtype, dc = C->buffer->dtype;
  const auto& combos = t.mma_dtypes;
  bool ok = std::any_of(combos.begin(), combos.end(),
                        [&](const MmaDTypes& m) { return m.a == da && m.b == db && m.c == dc; });
  if (!ok) {
    std::string list;
    for (const auto& m : combos)
      list += fmt::format("{}{} x {} -> {}", list.empty() ? "" : ", ", dtype_str(m.a),
                          dtype_str(m.b), dtype_str(m.c));
    bool ab_ok = std::any_of(combos.begin(), combos.end(),
                             [&](const MmaDTypes& m) { return m.a == da && m.b == db; });
    bool a_ok =
        std::any_of(combos.begin(), combos.end(), [&](const MmaDTypes& m) { return m.a == da; });
    std::string operand = !a_ok ? "A" : !ab_ok ? "B" : "C";
    ctx.error(
        n, operand, "mma-dtype",
        fmt::format("{} x {} -> {} is not a cube dtype combination on {}; expected one of: {}",
                    dtype_str(da), dtype_str(db), dtype_str(dc), t.name, list));
  }
  // Shapes: A [M, K] (or [K, M] transposed), B [K, N] (or [N, K]), C [M, N].
  auto ea = squeezed_extents(*A), eb = squeezed_extents(*B), ec = squeezed_extents(*C);
  for (auto [name, e] : {std::pair{"A", &ea}, std::pair{"B", &eb}, std::pair{"C", &ec}})
    if (e->size() != 2) {
      ctx.error(n, name, "gemm-shape",
                fmt::format("expected a 2-D matrix (leading 1s ignored), got extents {}",
                            fmt_extents(*e)));
      return;
    }
  Expr M = ta ? ea[1] : ea[0], Ka = ta ? ea[0] : ea[1];
  Expr Kb = tb ? eb[1] : eb[0], N = tb ? eb[0] : eb[1];
  auto differ = [](const Expr& x, const Expr& y) {
    auto a = const_int(x), b = const_int(y);
    return a && b && *a != *b;
  };
  if (differ(Ka, Kb))
    ctx.error(n, "B", "gemm-shape",
              fmt::format("K of B ({}) differs from K of A ({}); A is {}{}, B is {}{}", print(Kb),
                          print(Ka), fmt_extents(ea), ta ? " transposed" : "", fmt_extents(eb),
                          tb ? " transposed" : ""));
  if (differ(M, ec[0]))
    ctx.error(n, "C", "gemm-shape",
              fmt::format("expected C with M = {} rows (from A), got {}", print(M), print(ec[0])));
  if (differ(N, ec[1]))
    ctx.error(
        n, "C", "gemm-shape",
        fmt::format("expected C with N = {} columns (from B), got {}", print(N), print(ec[1])));
  if (!scopes_ok) return;
  // Fractals: M and N multiples of the fractal rows, K of fractal_row_bytes / sizeof (per
  // operand dtype). M == 1 is the GEMV form.
  auto check_mult = [&](const char* operand, const char* dim, const Expr& e, int64_t mult) {
    auto v = const_int(e);
    if (!v || mult <= 1 || *v % mult == 0) return;
    if (std::string(dim) == "M" && *v == 1) return;
    ctx.error(n, operand, "cube-fractal-shape",
              fmt::format("{} = {} is not a multiple of {}; cube operands are stored in {} x {} B "
                          "fractals",
                          dim, *v, mult, t.fractal_rows, t.fractal_row_bytes));
  };
  const int64_t rows = t.fractal_rows;
  check_mult("A", "M", M, rows);
  check_mult("A", "K", Ka, t.fractal_row_bytes / dtype_bytes(da));
  check_mult("B", "K", Kb, t.fractal_row_bytes / dtype_bytes(db));
  check_mult("B", "N", N, rows);
  check_mult("C", "M", ec[0], rows);
  check_mult("C", "N", ec[1], rows);
}

}  // namespace

void rule_copy(const TileOpNode& n, VerifyContext& ctx) {
  const Target& t = ctx.target();
  const BufferRegion *src = region_of(n, "src"), *dst = region_of(n, "dst");
  if (!src || !dst) return;
  MemScope s = src->buffer->scope, d = dst->buffer->scope;
  check_move_dtypes(n, ctx, *src, *dst);
  const bool transpose = n.attr_bool("transpose");
  check_move_shapes(n, ctx, *src, *dst, transpose);
  if (transpose) {
    if (s != MemScope::L1 || (d != MemScope::L0A && d != MemScope::L0B))
      ctx.error(n, "src", "copy-option",
                fmt::format("transpose applies to L1 -> L0A/L0B loads only, got {} -> {}",
                            scope_str(s), scope_str(d)));
    else if (t.l1_transpose_16bit_only && dtype_bits(src->buffer->dtype) != 16)
      ctx.error(n, "src", "transpose-16bit",
                fmt::format("transposed loads take 16-bit dtypes only on {}, got {}", t.name,
                            dtype_str(src->buffer->dtype)));
  }
  if (n.attr_bool("enable_relu") && s != MemScope::L0C)
    ctx.error(n, "src", "copy-option",
              fmt::format("enable_relu is a fixpipe option (copies out of L0C), got {} -> {}",
                          scope_str(s), scope_str(d)));
  // DataCopyPad moves rows of any byte length both ways (GM -> UB pads each UB row to 32 B).
  if (n.attr_bool("pad") &&
      !((s == MemScope::GM && d == MemScope::UB) || (s == MemScope::UB && d == MemScope::GM)))
    ctx.error(n, "src", "copy-option",
              fmt::format("the padded copy (pad) moves GM <-> UB only, got {} -> {}", scope_str(s),
                          scope_str(d)));
}

void rule_atomic_add(const TileOpNode& n, VerifyContext& ctx) {
  const Target& t = ctx.target();
  const BufferRegion *src = region_of(n, "src"), *dst = region_of(n, "dst");
  if (!src || !dst) return;
  DType d = dst->buffer->dtype;
  if (std::find(t.atomic_dtypes.begin(), t.atomic_dtypes.end(), d) == t.atomic_dtypes.end())
    ctx.error(n, "dst", "atomic-add-dtype",
              fmt::format("atomic add into GM takes {} on {}, got {}", dtype_list(t.atomic_dtypes),
                          t.name, dtype_str(d)));
  check_move_dtypes(n, ctx, *src, *dst);
  check_move_shapes(n, ctx, *src, *dst, false);
}

void rule_dcci(const TileOpNode& n, VerifyContext& ctx) {
  const BufferRegion* dst = region_of(n, "dst");
  if (dst && dst->buffer->scope != MemScope::GM)
    ctx.error(
        n, "dst", "dcci-scope",
        fmt::format(
            "dcci (DataCacheCleanAndInvalid) works on GM, which the scalar unit caches; got {}",
            scope_str(dst->buffer->scope)));
}

void rule_gemm_v0(const TileOpNode& n, VerifyContext& ctx) {
  check_cube(n, ctx, MemScope::L1, MemScope::L1, n.attr_bool("transpose_A"),
             n.attr_bool("transpose_B"));
}

void rule_mma(const TileOpNode& n, VerifyContext& ctx) {
  check_cube(n, ctx, MemScope::L0A, MemScope::L0B, false, false);
}

void rule_init_const(const TileOpNode& n, VerifyContext& ctx) {
  const BufferRegion* dst = region_of(n, "dst");
  if (!dst) return;
  const MemScope s = dst->buffer->scope;
  if (s != MemScope::L1 && s != MemScope::L0A && s != MemScope::L0B) {
    ctx.error(n, "dst", "init-const-scope",
              fmt::format("init_const fills L1, L0A or L0B tiles (InitConstValue), got {}",
                          scope_str(s)));
    return;
  }
  for (size_t d = 0; d < dst->ranges.size() && d < dst->buffer->shape.size(); ++d) {
    auto mn = const_int(dst->ranges[d].min), ext = const_int(dst->ranges[d].extent);
    auto dim = const_int(dst->buffer->shape[d]);
    if (!mn || *mn != 0 || !ext || !dim || *ext != *dim) {
      ctx.error(n, "dst", "init-const-region",
                fmt::format("init_const fills a whole tile; expected all of '{}' {}, got {}",
                            dst->buffer->name, fmt_extents(dst->buffer->shape),
                            fmt_extents(region_extents(*dst))));
      return;
    }
  }
}

void rule_dump_tensor(const TileOpNode& n, VerifyContext& ctx) {
  const BufferRegion* src = region_of(n, "src");
  if (!src) return;
  const auto& ok = ctx.target().dump_scopes;
  if (std::find(ok.begin(), ok.end(), src->buffer->scope) == ok.end()) {
    std::string list;
    for (auto s : ok) list += (list.empty() ? "" : ", ") + scope_str(s);
    ctx.error(
        n, "src", "dump-tensor-scope",
        fmt::format("dump_tensor prints {} buffers, got {}", list, scope_str(src->buffer->scope)));
  }
}

}  // namespace tl::rules
