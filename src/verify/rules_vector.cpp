// Op rules of the vector unit: elementwise dtypes and shapes, cast pairs and modes, compare's
// bitmask, select, gathers, broadcasts, the 16x16 transpose, reductions and the sort family.
// UB operand memories and alignment are generic (verify_ops.cpp). Dtype lists come from each
// op's definition (OpDef::dtypes), pair tables from the target (casts, compare_modes, ...).
#include <algorithm>

#include "op_rules.h"
#include "tl/ops.h"
#include "tl/printer.h"
#include "verify_util.h"

namespace tl::rules {
namespace {

bool is_single_element(const BufferRegion& r) {
  return region_elems(r) == 1;
}

/// Bytes of a bitmask of `count` >= 0 bits, without overflow near INT64_MAX.
int64_t mask_bytes(int64_t count) {
  return count / 8 + (count % 8 != 0);
}

std::vector<Expr> squeeze(std::vector<Expr> e) {
  size_t i = 0;
  while (i + 1 < e.size() && const_int(e[i]) == 1) ++i;
  return {e.begin() + static_cast<std::ptrdiff_t>(i), e.end()};
}

/// Every region operand has dst's dtype and (unless a 1-element UB scalar) dst's extents;
/// dst's dtype is one the target allows for the op.
void same_as_dst(const TileOpNode& n, VerifyContext& ctx, std::initializer_list<const char*> skip) {
  check_vector_dtype(n, ctx, "dst");
  for (const auto& [name, r] : regions_of(n)) {
    if (name == "dst" || std::find_if(skip.begin(), skip.end(), [&, &nm = name](const char* s) {
                           return nm == s;
                         }) != skip.end())
      continue;
    check_same_dtype(n, ctx, "dst", name);
    if (!is_single_element(*r)) check_same_shape(n, ctx, "dst", name);
  }
}

std::string str_list(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return "{" + s + "}";
}

/// Bytes of one (score, index) entry of the sort family: two lanes of the op's dtype
/// (TileLang-Ascend's pairs; src/npu/exec_reduce_sort.cpp).
int64_t sort_entry_bytes(const BufferRegion& r) {
  return 2 * dtype_bytes(r.buffer->dtype);
}

void check_sort_capacity(const TileOpNode& n, VerifyContext& ctx, const char* operand,
                         std::optional<int64_t> entries, const char* what) {
  const BufferRegion* dst = region_of(n, operand);
  if (!dst || !entries) return;
  if (*entries < 0) {
    ctx.error(n, operand, "sort-count",
              fmt::format("{} {} (score, index) entries; expected a count >= 0", what, *entries));
    return;
  }
  auto bytes = region_bytes(*dst);
  const int64_t pair = sort_entry_bytes(*dst);
  auto need = checked_mul(*entries, pair);  // nullopt: beyond any buffer
  if (bytes && (!need || *bytes < *need))
    ctx.error(
        n, operand, "sort-buffer-size",
        fmt::format(
            "{} {} (score, index) entries of {} bytes (two {} lanes) need {} bytes, '{}' has {}",
            what, *entries, pair, dtype_str(dst->buffer->dtype),
            need ? fmt::format("{}", *need) : std::string("more than 2^63"), dst->buffer->name,
            *bytes));
}

}  // namespace

/// T.tile.bitwise_and / bitwise_or of 8-bit tiles (issue 29: sparse_flash_attn_mask_pa.py's and
/// HISA block_sparse_mqa's uint8 compare masks). The chip's And / Or work on int16 / uint16 lanes
/// ("And", "Or" API pages); a bitwise op does not care how bytes pair into lanes, so tl-ascend
/// runs n bytes as the tiles reinterpreted as int16, ceil(n / 2) lanes (src/ascendc/
/// emit_vector.cpp), and the VM computes byte by byte: the same bytes. An even n is exact on any
/// 32-byte aligned region. An odd n makes the last lane cover one byte past the region: exact
/// only where that byte is the buffer's own padding (the region ends at the buffer's end; every
/// UB buffer is a whole number of 32-byte granules); elsewhere it would overwrite the next
/// element, so it is an error naming the reason.
void check_byte_bitwise(const TileOpNode& n, VerifyContext& ctx) {
  const BufferRegion* dst = region_of(n, "dst");
  if (!dst || dtype_bytes(dst->buffer->dtype) != 1) return;
  for (const auto& [name, r] : regions_of(n)) {
    auto elems = region_elems(*r);
    auto whole = buffer_bytes(r->buffer);
    if (!elems || !whole || *elems % 2 == 0) continue;
    // The region's last byte, in the buffer's dense row-major order (buffers with explicit
    // strides are not 8-bit vector tiles).
    std::optional<int64_t> last = 0;
    int64_t stride = 1;
    for (size_t d = r->ranges.size(); d-- > 0 && last;) {
      auto mn = const_int(r->ranges[d].min), ext = const_int(r->ranges[d].extent);
      auto sz = d < r->buffer->shape.size() ? const_int(r->buffer->shape[d]) : std::nullopt;
      if (!mn || !ext || !sz)
        last = std::nullopt;
      else {
        *last += (*mn + *ext - 1) * stride;
        stride *= *sz;
      }
    }
    if (last && *last + 1 == *whole) continue;
    ctx.error(n, name, "byte-bitwise",
              fmt::format("{} of {} tiles over an odd number of bytes ({}) in a region that {} "
                          "end at the end of '{}': the chip's {} works on int16 lanes, so the "
                          "last lane would also write the byte after the region. Give an even "
                          "element count, or a region ending at its buffer's end (whose padding "
                          "takes the extra byte)",
                          op_title(n), dtype_str(dst->buffer->dtype), *elems,
                          last ? "does not" : "may not", r->buffer->name,
                          n.op == &ops::tile::bitwise_and() ? "And" : "Or"));
    return;
  }
}

void rule_elementwise(const TileOpNode& n, VerifyContext& ctx) {
  same_as_dst(n, ctx, {});
  if (n.op == &ops::tile::bitwise_and() || n.op == &ops::tile::bitwise_or())
    check_byte_bitwise(n, ctx);
}

void rule_fill_like(const TileOpNode& n, VerifyContext& ctx) {
  check_vector_dtype(n, ctx, "dst");
  if (n.op == &ops::init_sort_buf())
    if (const TileArg* num = op_operand(n, "num"))
      check_sort_capacity(n, ctx, "dst", const_int(num->scalar), "init_sort_buf of");
}

void rule_axpy(const TileOpNode& n, VerifyContext& ctx) {
  const BufferRegion *dst = region_of(n, "dst"), *src = region_of(n, "src");
  if (!dst || !src) return;
  check_vector_dtype(n, ctx, "dst");
  check_vector_dtype(n, ctx, "src");
  DType s = src->buffer->dtype, d = dst->buffer->dtype;
  const auto& mixed = ctx.target().axpy_mixed;
  if (s != d && std::find(mixed.begin(), mixed.end(), std::pair{s, d}) == mixed.end())
    ctx.error(n, "src", "operand-dtype-mismatch",
              fmt::format("axpy accumulates src into dst of the same dtype (or a listed widening "
                          "such as float16 -> float32); got {} into {}",
                          dtype_str(s), dtype_str(d)));
  check_same_shape(n, ctx, "dst", "src");
}

void rule_cast(const TileOpNode& n, VerifyContext& ctx) {
  const Target& t = ctx.target();
  const BufferRegion *dst = region_of(n, "dst"), *src = region_of(n, "src");
  if (!dst || !src) return;
  DType from = src->buffer->dtype, to = dst->buffer->dtype;
  const std::string& mode = n.attr_str("mode");
  auto it = std::find_if(t.casts.begin(), t.casts.end(),
                         [&](const CastRule& c) { return c.from == from && c.to == to; });
  if (it == t.casts.end()) {
    std::vector<DType> tos;
    for (const auto& c : t.casts)
      if (c.from == from) tos.push_back(c.to);
    ctx.error(n, "dst", "cast-pair",
              fmt::format("no {} -> {} cast on {}; {} casts to {}", dtype_str(from), dtype_str(to),
                          t.name, dtype_str(from), tos.empty() ? "nothing" : dtype_list(tos)));
  } else if (std::find(it->modes.begin(), it->modes.end(), mode) == it->modes.end()) {
    ctx.error(n, "dst", "cast-mode",
              fmt::format("{} -> {} takes rounding modes {} on {}, got {}", dtype_str(from),
                          dtype_str(to), str_list(it->modes), t.name, mode));
  }
  check_same_shape(n, ctx, "dst", "src");
}

void rule_compare(const TileOpNode& n, VerifyContext& ctx) {
  const Target& t = ctx.target();
  const BufferRegion *dst = region_of(n, "dst"), *src0 = region_of(n, "src0");
  if (!dst || !src0) return;
  if (dst->buffer->dtype != DType::UInt8)
    ctx.error(
        n, "dst", "compare-dst-dtype",
        fmt::format("compare writes a bitmask (1 bit per element) into a uint8 buffer, got {}",
                    dtype_str(dst->buffer->dtype)));
  check_vector_dtype(n, ctx, "src0");
  if (const BufferRegion* src1 = region_of(n, "src1"); src1 && !is_single_element(*src1)) {
    check_same_dtype(n, ctx, "src0", "src1");
    check_same_shape(n, ctx, "src0", "src1");
  }
  DType d = src0->buffer->dtype;
  if (auto it = t.compare_modes.find(d); it != t.compare_modes.end()) {
    const std::string& mode = n.attr_str("mode");
    if (std::find(it->second.begin(), it->second.end(), mode) == it->second.end())
      ctx.error(n, "src0", "compare-mode",
                fmt::format("compare on {} takes modes {} on {}, got {}", dtype_str(d),
                            str_list(it->second), t.name, mode));
  }
  if (auto count = region_elems(*src0)) {
    auto bytes = checked_mul(*count, dtype_bytes(d));
    if (bytes && t.compare_align_bytes > 0 && *bytes % t.compare_align_bytes != 0)
      ctx.error(n, "src0", "compare-count-alignment",
                fmt::format("compare needs count x sizeof a multiple of {} bytes, got {} x {} = {} "
                            "bytes",
                            t.compare_align_bytes, *count, dtype_bytes(d), *bytes));
    if (auto mask = region_bytes(*dst); mask && *mask < mask_bytes(*count))
      ctx.error(n, "dst", "compare-dst-size",
                fmt::format("the bitmask of {} elements needs {} bytes, '{}' has {}", *count,
                            mask_bytes(*count), dst->buffer->name, *mask));
  }
}

void rule_select(const TileOpNode& n, VerifyContext& ctx) {
  const BufferRegion *dst = region_of(n, "dst"), *mask = region_of(n, "mask");
  if (!dst || !mask) return;
  same_as_dst(n, ctx, {"mask"});
  if (mask->buffer->dtype != DType::UInt8)
    ctx.error(
        n, "mask", "select-mask-dtype",
        fmt::format("select reads a bitmask (as written by compare) from a uint8 buffer, got {}",
                    dtype_str(mask->buffer->dtype)));
  const int64_t mode = n.attr_int("mode");
  const TileArg* src1 = op_operand(n, "src1");
  if (mode < 0 || mode > 2) {
    ctx.error(n, "", "select-mode",
              fmt::format("expected mode 0, 1 (tensor-scalar) or 2 (tensor-tensor), got {}", mode));
  } else if (src1) {
    const bool scalar = src1->is_scalar() || is_single_element(src1->region);
    if (mode == 1 && !scalar)
      ctx.error(n, "src1", "select-mode",
                "mode 1 selects between a tensor and a scalar; expected "
                "a scalar src1, got a tile");
    if (mode != 1 && scalar)
      ctx.error(n, "src1", "select-mode",
                fmt::format("mode {} selects between two tensors; expected a tile src1, got a "
                            "scalar (use mode 1)",
                            mode));
  }
  if (mode >= 1) {
    auto count = region_elems(*dst);
    auto bytes = region_bytes(*mask);
    if (count && bytes && *bytes < mask_bytes(*count))
      ctx.error(n, "mask", "select-mask-size",
                fmt::format("mode {} consumes one mask bit per element: {} elements need {} bytes, "
                            "'{}' has {}",
                            mode, *count, mask_bytes(*count), mask->buffer->name, *bytes));
  }
}

void rule_gather(const TileOpNode& n, VerifyContext& ctx) {
  const BufferRegion *dst = region_of(n, "dst"), *src = region_of(n, "src"),
                     *off = region_of(n, "offsets");
  if (!dst || !src || !off) return;
  check_vector_dtype(n, ctx, "dst");
  check_same_dtype(n, ctx, "dst", "src");
  if (off->buffer->dtype != DType::UInt32)
    ctx.error(n, "offsets", "gather-offset-dtype",
              fmt::format("gather offsets are byte offsets in uint32, got {}",
                          dtype_str(off->buffer->dtype)));
  auto nd = region_elems(*dst), no = region_elems(*off);
  if (nd && no && *nd != *no)
    ctx.error(
        n, "offsets", "shape-mismatch",
        fmt::format("one offset per destination element: expected {} offsets, got {}", *nd, *no));
  if (dst->buffer.same_as(src->buffer))
    ctx.error(n, "src", "gather-alias",
              fmt::format("gather's src and dst must not alias, both are '{}'", dst->buffer->name));
}

void rule_gather_mask(const TileOpNode& n, VerifyContext& ctx) {
  const BufferRegion* mask = region_of(n, "mask");
  check_vector_dtype(n, ctx, "dst");
  check_same_dtype(n, ctx, "dst", "src");
  const std::string& pattern = n.attr_str("pattern");
  if (pattern.empty() == (mask == nullptr))
    ctx.error(
        n, mask ? "mask" : "", "gather-mask-source",
        mask ? fmt::format("both a fixed pattern ({}) and a mask tensor; expected one", pattern)
             : std::string("expected a fixed pattern (P0101 ... P1111) or a mask tensor, got "
                           "neither"));
  if (mask && !is_unsigned_int(mask->buffer->dtype))
    ctx.error(n, "mask", "gather-mask-dtype",
              fmt::format("the mask is a bit pattern in an unsigned integer buffer, got {}",
                          dtype_str(mask->buffer->dtype)));
}

void rule_broadcast(const TileOpNode& n, VerifyContext& ctx) {
  const BufferRegion *dst = region_of(n, "dst"), *src = region_of(n, "src");
  if (!dst || !src) return;
  check_vector_dtype(n, ctx, "dst");
  check_same_dtype(n, ctx, "dst", "src");
  auto ed = region_extents(*dst), es = squeeze(region_extents(*src));
  // axis (tl/shape_rules.h, broadcast_source_extents): 1 reads a one-dimensional source as a
  // column, one value per destination row; 0 is the right-aligned row.
  const int64_t axis = n.attr_int("axis");
  if (axis < -1 || axis > 1) {
    ctx.error(n, "axis", "broadcast-axis",
              fmt::format("axis must be 0 (a row), 1 (a column) or -1 (inferred), got {}", axis));
    return;
  }
  // A source of two or more dimensions states its own orientation, which axis must agree with
  // (TileLang-Ascend: src[axis] is the unit dimension); a one-dimensional one takes axis's.
  const auto raw = region_extents(*src);
  const bool row_src = raw.size() < 2 || const_int(raw[raw.size() - 2]) == 1;
  const bool col_src = raw.size() < 2 || const_int(raw.back()) == 1;
  if ((axis == 0 && !row_src) || (axis == 1 && !col_src)) {
    ctx.error(n, "axis", "broadcast-axis",
              fmt::format("axis={} broadcasts a {}, but the source is {}", axis,
                          axis == 0 ? "row ([n] or [1, n])" : "column ([n] or [n, 1])",
                          fmt_extents(raw)));
    return;
  }
  if (axis == 1 && es.size() == 1) es.push_back(Expr(1));
  bool ok = es.size() <= ed.size();
  for (size_t i = 0; ok && i < es.size(); ++i) {
    auto s = const_int(es[es.size() - 1 - i]), d = const_int(ed[ed.size() - 1 - i]);
    if (s && d && *s != 1 && *s != *d) ok = false;
  }
  if (!ok)
    ctx.error(n, "src", "broadcast-shape",
              fmt::format("cannot broadcast {} to {}: each source dimension (aligned to the right) "
                          "must be 1 or equal the destination's",
                          fmt_extents(es), fmt_extents(ed)));
}

void rule_row_expand(const TileOpNode& n, VerifyContext& ctx) {
  const BufferRegion *dst = region_of(n, "dst"), *src1 = region_of(n, "src1");
  if (!dst || !src1) return;
  check_vector_dtype(n, ctx, "dst");
  check_same_dtype(n, ctx, "dst", "src0");
  check_same_dtype(n, ctx, "dst", "src1");
  check_same_shape(n, ctx, "dst", "src0");
  auto ed = squeeze(region_extents(*dst));
  // One row ([1, cols], each AIV's half of a 2-row tile) is a [rows, cols] tile too.
  if (ed.size() == 1 && region_extents(*dst).size() >= 2) ed.insert(ed.begin(), Expr(1));
  if (ed.size() < 2) {
    ctx.error(n, "dst", "row-expand-shape",
              fmt::format("expected a [rows, cols] tile, got {}", fmt_extents(ed)));
    return;
  }
  std::vector<Expr> rows(ed.begin(), ed.end() - 1);
  auto want = const_product(rows), got = region_elems(*src1);
  if (want && got && *want != *got)
    ctx.error(n, "src1", "row-expand-shape",
              fmt::format("expected one value per row of dst {}: {} elements, got {} ({})",
                          fmt_extents(ed), *want, *got, fmt_extents(region_extents(*src1))));
}

void rule_transpose(const TileOpNode& n, VerifyContext& ctx) {
  check_vector_dtype(n, ctx, "dst");
  check_same_dtype(n, ctx, "dst", "src");
  for (const char* name : {"dst", "src"})
    if (const BufferRegion* r = region_of(n, name)) {
      auto e = squeeze(region_extents(*r));
      bool ok = e.size() == 2 && const_int(e[0]) == 16 && const_int(e[1]) == 16;
      if (!ok)
        ctx.error(n, name, "transpose-shape",
                  fmt::format("tile.transpose works on one 16 x 16 block, got {}", fmt_extents(e)));
    }
}

void rule_reduce(const TileOpNode& n, VerifyContext& ctx) {
  const BufferRegion *src = region_of(n, "src"), *dst = region_of(n, "dst");
  if (!src || !dst) return;
  check_vector_dtype(n, ctx, "src");
  check_same_dtype(n, ctx, "src", "dst");
  auto es = region_extents(*src);
  const int64_t nd = static_cast<int64_t>(es.size());
  int64_t dim = n.attr_int("dim");
  if (dim < -nd || dim >= nd) {
    ctx.error(n, "src", "reduce-dim",
              fmt::format("dim {} is out of range for the {}-D source {}; expected [{}, {})", dim,
                          nd, fmt_extents(es), -nd, nd));
    return;
  }
  if (dim < 0) dim += nd;
  std::vector<Expr> dropped, kept = es;
  for (int64_t i = 0; i < nd; ++i)
    if (i != dim) dropped.push_back(es[i]);
  kept[dim] = Expr(1);
  if (dropped.empty()) dropped.push_back(Expr(1));
  auto ed = squeeze(region_extents(*dst));
  if (!extents_may_equal(squeeze(dropped), ed) && !extents_may_equal(squeeze(kept), ed))
    ctx.error(n, "dst", "reduce-shape",
              fmt::format("reducing {} over dim {} gives {} (or {} keeping the dim), got {}",
                          fmt_extents(es), dim, fmt_extents(dropped), fmt_extents(kept),
                          fmt_extents(ed)));
}

void rule_sort(const TileOpNode& n, VerifyContext& ctx) {
  const BufferRegion* src = region_of(n, "src");
  if (!src) return;
  check_vector_dtype(n, ctx, "src");
  check_same_dtype(n, ctx, "src", "dst");
  auto elems = region_elems(*src);
  check_sort_capacity(n, ctx, "dst", elems, "sorting");
  if (const TileArg* a = op_operand(n, "actual_num"))
    if (auto v = const_int(a->scalar); v && elems && (*v < 0 || *v > *elems))
      ctx.error(
          n, "actual_num", "sort-count",
          fmt::format("expected actual_num in [0, {}] (the elements of src), got {}", *elems, *v));
}

void rule_topk(const TileOpNode& n, VerifyContext& ctx) {
  const BufferRegion* src = region_of(n, "src");
  if (!src) return;
  check_vector_dtype(n, ctx, "src");
  check_same_dtype(n, ctx, "src", "dst");
  auto elems = region_elems(*src);
  const TileArg* k = op_operand(n, "k");
  auto kv = k ? const_int(k->scalar) : std::nullopt;
  if (kv && elems && (*kv <= 0 || *kv > *elems))
    ctx.error(n, "k", "sort-count",
              fmt::format("expected k in [1, {}] (the elements of src), got {}", *elems, *kv));
  check_sort_capacity(n, ctx, "dst", kv, "top-k of");
}

void rule_merge_sort(const TileOpNode& n, VerifyContext& ctx) {
  check_vector_dtype(n, ctx, "dst");
  int64_t total = 0;
  bool known = true;
  const BufferRegion* d = region_of(n, "dst");
  const int64_t pair = d ? sort_entry_bytes(*d) : 0;
  for (const char* name : {"src0", "src1", "src2", "src3"}) {
    const BufferRegion* r = region_of(n, name);
    if (!r) continue;
    check_same_dtype(n, ctx, "dst", name);
    auto b = region_bytes(*r);
    if (!b) {
      known = false;
      continue;
    }
    if (pair > 0 && *b % pair != 0)
      ctx.error(
          n, name, "sort-buffer-size",
          fmt::format("a sorted queue holds whole {}-byte (score, index) entries, '{}' has {} "
                      "bytes",
                      pair, r->buffer->name, *b));
    auto sum = checked_add(total, *b);
    if (!sum) {  // more queue bytes than int64 holds: no destination can take them
      known = false;
      ctx.error(n, name, "sort-buffer-size",
                "the queues' byte sizes add up beyond int64; expected "
                "queues that fit in UB");
      break;
    }
    total = *sum;
  }
  if (const BufferRegion* dst = region_of(n, "dst"); dst && known && pair > 0) {
    auto b = region_bytes(*dst);
    if (b && *b < total)
      ctx.error(n, "dst", "sort-buffer-size",
                fmt::format("merging {} bytes of queues needs {} bytes, '{}' has {}", total, total,
                            dst->buffer->name, *b));
  }
}

}  // namespace tl::rules
