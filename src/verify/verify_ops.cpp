// Generic rules of every tile op, driven by the op registry and the target tables: operand
// arity and kinds, region bounds, memories of vector-op operands, copy paths, the core scope an
// op must sit in, UB 32-byte alignment; and the rules of buffer declarations.
#include "op_rules.h"
#include "tl/ops.h"
#include "tl/storage.h"
#include "verify_util.h"

namespace tl::rules {
namespace {

bool is_developer_scope(MemScope s) {
  return s == MemScope::Shared || s == MemScope::Fragment;
}

std::string region_str(const BufferRegion& r) {
  return fmt_extents(region_extents(r));
}

/// `clipped`: the GM side of a copy in a developer kernel, which legalize_copies clips to the
/// tensor (a tile may reach past a tensor's end; it must start inside it).
void check_bounds(const TileOpNode& n, VerifyContext& ctx, const std::string& name,
                  const BufferRegion& r, bool clipped) {
  const auto& shape = r.buffer->shape;
  for (size_t d = 0; d < r.ranges.size() && d < shape.size(); ++d) {
    auto mn = const_int(r.ranges[d].min), ext = const_int(r.ranges[d].extent);
    auto sz = const_int(shape[d]);
    if (ext && *ext <= 0) {
      ctx.error(n, name, "region-out-of-bounds",
                fmt::format("dimension {} has extent {}; expected a positive extent", d, *ext));
      return;
    }
    if (mn && *mn < 0) {
      ctx.error(n, name, "region-out-of-bounds",
                fmt::format("dimension {} starts at {}; expected a start >= 0", d, *mn));
      return;
    }
    if (clipped) {
      if (mn && sz && *mn >= *sz)
        ctx.error(n, name, "region-out-of-bounds",
                  fmt::format("dimension {} starts at {} but the buffer has {} elements there", d,
                              *mn, *sz));
      continue;
    }
    if (mn && ext && sz) {
      // A start near INT64_MAX must not wrap the end around below the size.
      auto end = checked_add(*mn, *ext);
      if (!end || *end > *sz) {
        ctx.error(
            n, name, "region-out-of-bounds",
            fmt::format("dimension {} covers [{}, {}) but the buffer has {} elements there", d, *mn,
                        end ? fmt::format("{}", *end) : fmt::format("{} + {}", *mn, *ext), *sz));
        return;
      }
    }
  }
}

/// UB operands: rows (the innermost contiguous run) a multiple of the UB block (32 B on A2),
/// rows of multi-row regions on block-aligned pitches, and constant starts block aligned.
/// `any_run`: the instruction takes rows of any length (still block-aligned starts and
/// pitches): DataCopyPad, and the count form of the row reductions.
void check_ub_alignment(const TileOpNode& n, VerifyContext& ctx, const std::string& name,
                        const BufferRegion& r, bool start_only, bool any_run) {
  const int64_t align = ctx.target().align(MemScope::UB);
  if (align <= 1) return;
  const Buffer& b = r.buffer;
  const int64_t bytes = dtype_bytes(b->dtype);
  std::vector<int64_t> shape;
  for (const auto& s : b->shape) {
    auto v = const_int(s);
    if (!v) return;
    shape.push_back(*v);
  }
  if (shape.empty() || r.ranges.size() != shape.size()) return;
  // Start offset of the region (dense row-major unless the buffer has strides).
  // Sizes and offsets that do not fit in int64 leave the alignment unknown: such a buffer or
  // region is reported by the capacity and bounds rules.
  std::vector<int64_t> strides(shape.size(), 1);
  bool strides_known = true;
  if (b->strides.empty()) {
    for (size_t d = shape.size() - 1; d-- > 0 && strides_known;) {
      auto v = checked_mul(strides[d + 1], shape[d + 1]);
      if (!v)
        strides_known = false;
      else
        strides[d] = *v;
    }
  } else {
    for (size_t d = 0; d < shape.size(); ++d) {
      auto v = d < b->strides.size() ? const_int(b->strides[d]) : std::nullopt;
      if (!v)
        strides_known = false;
      else
        strides[d] = *v;
    }
  }
  std::optional<int64_t> offset = 0;
  for (size_t d = 0; d < shape.size() && offset && strides_known; ++d) {
    auto mn = const_int(r.ranges[d].min);
    auto term = mn ? checked_mul(*mn, strides[d]) : std::nullopt;
    offset = term ? checked_add(*offset, *term) : std::nullopt;
  }
  auto offset_bytes = offset && strides_known ? checked_mul(*offset, bytes) : std::nullopt;
  if (offset_bytes && *offset_bytes % align != 0) {
    ctx.error(n, name, "ub-start-alignment",
              fmt::format("region {} starts {} bytes into '{}'; UB regions must start on a "
                          "{}-byte boundary",
                          region_str(r), *offset_bytes, b->name, align));
    return;
  }
  if (start_only) return;
  // Innermost run: the last dimension, skipping trailing dimensions of size 1.
  size_t last = shape.size() - 1;
  while (last > 0 && shape[last] == 1) --last;
  auto ext = const_int(r.ranges[last].extent);
  auto run = ext ? checked_mul(*ext, bytes) : std::nullopt;
  if (!run) return;
  if (*run % align != 0 && !any_run) {
    ctx.error(n, name, "ub-row-alignment",
              fmt::format("the innermost contiguous run is {} x {} = {} bytes; UB rows must be a "
                          "multiple of {} bytes",
                          *ext, dtype_str(b->dtype), *run, align));
    return;
  }
  bool multi_row = false;
  for (size_t d = 0; d < last; ++d)
    if (auto e = const_int(r.ranges[d].extent); !e || *e > 1) multi_row = true;
  auto pitch_bytes =
      strides_known && last > 0 ? checked_mul(strides[last - 1], bytes) : std::optional<int64_t>(0);
  if (!pitch_bytes) return;
  const int64_t pitch = *pitch_bytes;
  if (multi_row && pitch % align != 0)
    ctx.error(n, name, "ub-row-alignment",
              fmt::format("rows of '{}' are {} bytes apart; multi-row UB regions need rows on "
                          "{}-byte boundaries",
                          b->name, pitch, align));
}

/// A copy between GM and a UB region. TileLang-Ascend moves every GM <-> UB copy with
/// DataCopyPad (blockLen in bytes, each UB row padded to 32 B), and the compiler gives such a
/// copy the padded form (clip_expert_copies; legalize_copies in developer mode): 4 int32 of a
/// token's expert ids, or 4 floats into the first lanes of a 64-float row
/// (`T.copy(A_log[0], A_log_ub[0, :4])`), move as written. A read overwrites the UB lanes from
/// the row's end to its 32-byte boundary (on TileLang-Ascend with undefined values: the
/// stale-data checker marks them, `pad_undefined`); a store reads only the row. Row starts and
/// the pitch of several rows keep the 32-byte rules (check_ub_alignment).
bool gm_ub_copy(const TileOpNode& n) {
  if (n.args.size() < 2 || !n.args[0].is_region() || !n.args[1].is_region()) return false;
  const BufferRegion& a = n.args[0].region;
  const BufferRegion& b = n.args[1].region;
  const bool a_gm = a.buffer->scope == MemScope::GM, b_gm = b.buffer->scope == MemScope::GM;
  if (a_gm == b_gm) return false;
  const BufferRegion& ub = a_gm ? b : a;
  return ub.buffer->scope == MemScope::UB && !ub.ranges.empty() &&
         ub.ranges.size() == ub.buffer->shape.size() && ub.buffer->strides.empty();
}

/// Operands whose rows may be any number of elements (docs/hardware.md section 5): the UB side of a
/// padded GM copy (DataCopyPad: blockLen in bytes, each UB block padded to 32 B), and every
/// operand of a vector instruction, which counts its elements (the count form, or a mask on
/// the last repeat of a row: AscendC's vector APIs take `calCount` / `mask`, any number). Their
/// starts and row pitches stay 32-byte aligned. Plain DataCopy moves whole 32-byte blocks.
bool takes_any_row_length(const TileOpNode& n, const std::string& /*name*/) {
  if (n.op == &ops::copy()) return n.attr_bool("pad") || gm_ub_copy(n);
  // AscendC accumulates into GM with SetAtomicAdd around a copy out, and DataCopyPad takes
  // UB rows of any byte length that way (issue 29: a tail of 5 floats per row).
  if (n.op == &ops::atomic_add()) return true;
  return n.op->unit == OpUnit::Vector;
}

bool is_bitmask_operand(const TileOpNode& n, const std::string& name) {
  int i = n.op->operand_index(name);
  return i >= 0 && n.op->operands[i].bitmask;
}

std::string legal_from(const Target& t, MemScope src) {
  std::string s;
  for (const auto& p : t.copy_paths)
    if (p.src == src) s += (s.empty() ? "" : ", ") + scope_str(p.dst);
  return s.empty() ? "nothing" : s;
}

}  // namespace

bool check_operands_wellformed(const TileOpNode& n, VerifyContext& ctx) {
  const auto& specs = n.op->operands;
  size_t required = 0;
  for (const auto& s : specs)
    if (!s.optional && !s.variadic) ++required;
  const bool variadic = !specs.empty() && specs.back().variadic;
  if (n.args.size() < required || (!variadic && n.args.size() > specs.size())) {
    ctx.error(
        n, "", "operand-count",
        fmt::format("expected {}{} operands, got {}", required,
                    variadic ? " or more"
                             : (required == specs.size() ? "" : fmt::format("-{}", specs.size())),
                    n.args.size()));
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < n.args.size(); ++i) {
    const auto& spec = specs[std::min(i, specs.size() - 1)];
    const auto& a = n.args[i];
    if ((!a.is_region() && !a.is_scalar()) || (spec.kind == OperandKind::Tile && !a.is_region()) ||
        (spec.kind == OperandKind::Scalar && !a.is_scalar())) {
      ctx.error(n.loc, op_title(n), spec.name, "operand-kind",
                fmt::format("expected {}, got {}",
                            spec.kind == OperandKind::Tile     ? "a buffer region"
                            : spec.kind == OperandKind::Scalar ? "a scalar expression"
                                                               : "a buffer region or a scalar",
                            a.is_region()   ? "a buffer region"
                            : a.is_scalar() ? "a scalar"
                                            : "nothing"));
      ok = false;
      continue;
    }
    if (a.is_region()) {
      const auto& r = a.region;
      if (r.ranges.size() != r.buffer->ndim()) {
        ctx.error(n, spec.name, "region-rank",
                  fmt::format("expected {} index ranges for '{}', got {}", r.buffer->ndim(),
                              r.buffer->name, r.ranges.size()));
        ok = false;
        continue;
      }
      for (const auto& rg : r.ranges)
        if (!rg.min.defined() || !rg.extent.defined()) {
          ctx.error(n, spec.name, "region-rank",
                    "a dimension of the region has no start or extent; expected a full region");
          ok = false;
          break;
        }
    }
  }
  return ok;
}

void check_tile_op(const TileOpNode& n, VerifyContext& ctx) {
  if (!check_operands_wellformed(n, ctx)) return;
  const Target& t = ctx.target();
  const auto regions = regions_of(n);
  bool developer = false;
  for (const auto& [name, r] : regions) {
    if (is_developer_scope(r->buffer->scope)) developer = true;
    // Both modes clip a GM copy at the tensor's end (legalize_copies, clip_expert_copies: the
    // DataCopyPad lowering of TileLang-Ascend), so only a start past the end is an error here.
    const bool clipped =
        r->buffer->scope == MemScope::GM && (n.op == &ops::copy() || n.op == &ops::atomic_add());
    check_bounds(n, ctx, name, *r, clipped);
  }

  // Operand memories and the core the op runs on.
  std::optional<CoreKind> need;
  switch (n.op->unit) {
    case OpUnit::Vector:
      need = CoreKind::Vector;
      for (const auto& [name, r] : regions)
        if (r->buffer->scope != MemScope::UB && !is_developer_scope(r->buffer->scope))
          ctx.error(
              n, name, "vector-operand-scope",
              fmt::format("vector ops take UB operands only, got {}", scope_str(r->buffer->scope)));
      break;
    case OpUnit::Cube:
      need = CoreKind::Cube;
      break;
    case OpUnit::Debug:
    case OpUnit::Scalar:
      break;
    case OpUnit::Move: {
      const BufferRegion *src = region_of(n, "src"), *dst = region_of(n, "dst");
      if (!src || !dst || developer) break;
      MemScope s = src->buffer->scope, d = dst->buffer->scope;
      if (n.op == &ops::atomic_add() && d != MemScope::GM) {
        ctx.error(n, "dst", "atomic-add-dst",
                  fmt::format("atomic_add accumulates into GM only, got {}", scope_str(d)));
        break;
      }
      if (const CopyPath* p = t.copy_path(s, d)) {
        need = p->core;
      } else {
        ctx.error(n, "dst", "copy-path",
                  fmt::format("no {} -> {} path on {}; from {} the legal destinations are: {}",
                              scope_str(s), scope_str(d), t.name, scope_str(s), legal_from(t, s)));
      }
      break;
    }
  }
  if (need && !ctx.developer()) {
    auto core = ctx.core();
    const bool move = n.op->unit == OpUnit::Move;
    if (!core)
      ctx.error(n, "", "op-outside-scope",
                fmt::format("expert mode needs every {} inside T::Scope(Core::{}); it is outside "
                            "any scope (a kernel of vector work only gets its scope with the "
                            "pass config tl.ascend_auto_cv_combine)",
                            move ? ops::copy().name : "tile op", core_name(*need)));
    else if (*core != *need)
      ctx.error(n, "", move ? "copy-core-scope" : "op-core-scope",
                move ? fmt::format("this copy path is issued by the {} core; expected "
                                   "T::Scope(Core::{}), got T::Scope(Core::{})",
                                   core_name(*need), core_name(*need), core_name(*core))
                     : fmt::format("{} ops run on the {} core; expected T::Scope(Core::{}), got "
                                   "T::Scope(Core::{})",
                                   n.op->unit == OpUnit::Cube ? "cube" : "vector",
                                   *need == CoreKind::Cube ? "AIC" : "AIV", core_name(*need),
                                   core_name(*core)));
  }

  // UB alignment of every UB operand.
  for (const auto& [name, r] : regions) {
    if (r->buffer->scope != MemScope::UB) continue;
    const auto& spec =
        n.op->operands[std::min<size_t>(n.op->operand_index(name), n.op->operands.size() - 1)];
    bool start_only = is_bitmask_operand(n, name) ||
                      (spec.kind == OperandKind::TileOrScalar && region_elems(*r) == 1);
    check_ub_alignment(n, ctx, name, *r, start_only, takes_any_row_length(n, name));
  }

  if (developer) return;  // developer-mode buffers are reported at their allocation
  rules::run_op_rule(n, ctx);
}

namespace {
/// A view reinterprets an on-chip buffer's bytes: same memory, shape and address, a dtype of
/// the same width (AscendC's LocalTensor::ReinterpretCast).
void check_view(const AllocateNode& n, VerifyContext& ctx) {
  const Buffer &v = n.buffer, &b = n.view_of;
  const std::string context = fmt::format("view '{}' of '{}'", v->name, b->name);
  auto error = [&](const char* rule, std::string msg) {
    ctx.error(n.loc, "T.view", "", rule, std::move(msg), context);
  };
  // A developer tile (shared / fragment) may be viewed too: infer_scopes places the view with
  // its base (issue 29: the int32 indices of sort pairs).
  const bool developer = b->scope == MemScope::Shared || b->scope == MemScope::Fragment;
  if (!is_planned_scope(b->scope) && !developer) {
    error("view-scope",
          fmt::format(
              "'{}' is in {}; a view reinterprets an on-chip buffer (L1, L0A, L0B, L0C or UB)",
              b->name, scope_name(b->scope)));
    return;
  }
  if (dtype_bytes(v->dtype) != dtype_bytes(b->dtype))
    error("view-dtype-width",
          fmt::format("{} is {} bytes wide but '{}' holds {} ({} bytes); a view keeps the "
                      "element width",
                      dtype_str(v->dtype), dtype_bytes(v->dtype), b->name, dtype_str(b->dtype),
                      dtype_bytes(b->dtype)));
  bool same_shape = v->shape.size() == b->shape.size();
  for (size_t d = 0; same_shape && d < v->shape.size(); ++d)
    same_shape = v->shape[d].same_as(b->shape[d]) ||
                 (const_int(v->shape[d]) && const_int(v->shape[d]) == const_int(b->shape[d]));
  if (v->scope != b->scope || !same_shape || v->address != b->address)
    error("view-layout",
          fmt::format(
              "'{}' ({} {}, address {}) must have the scope, shape and address of '{}' ({} {}, "
              "address {})",
              v->name, scope_str(v->scope), fmt_extents(v->shape), v->address, b->name,
              scope_str(b->scope), fmt_extents(b->shape), b->address));
}
}  // namespace

void check_tensor_param(const Buffer& b, const SourceLoc& loc, VerifyContext& ctx) {
  const std::string context = fmt::format("buffer '{}' in {}", b->name, scope_name(b->scope));
  bool all_const = true;
  for (size_t d = 0; d < b->shape.size(); ++d) {
    auto v = const_int(b->shape[d]);
    all_const = all_const && v.has_value();
    if (v && *v < 0)
      ctx.error(loc, "T.Tensor", "shape", "buffer-shape",
                fmt::format("dimension {} of '{}' is {}; expected a size >= 0", d, b->name, *v),
                context);
  }
  // No tensor that large can exist, and the launcher's size arithmetic must never wrap.
  if (all_const && !buffer_bytes(b))
    ctx.error(loc, "T.Tensor", "shape", "buffer-shape",
              fmt::format("'{}' of {} x {} has more than 2^63 bytes (its size overflows int64)",
                          b->name, fmt_extents(b->shape), dtype_str(b->dtype)),
              context);
}

/// T.alloc_workspace: GM scratch the launcher allocates. Its shape may use the kernel's dynamic
/// sizes (evaluated at launch); the launcher checks the bytes against the host's memory.
void check_workspace(const AllocateNode& n, VerifyContext& ctx) {
  const Buffer& b = n.buffer;
  const std::string op = alloc_title(b->scope), context = fmt::format("workspace '{}'", b->name);
  if (b->address >= 0)
    ctx.error(
        n.loc, op, "address", "workspace-address",
        fmt::format("workspace '{}' has address {}; the launcher places workspaces, expected none",
                    b->name, b->address),
        context);
  if (!b->strides.empty())
    ctx.error(n.loc, op, "", "workspace-strides",
              fmt::format("workspace '{}' has strides; workspaces are dense row-major", b->name),
              context);
  bool all_const = true;
  for (size_t d = 0; d < b->shape.size(); ++d) {
    auto v = const_int(b->shape[d]);
    all_const = all_const && v.has_value();
    if (v && *v <= 0)
      ctx.error(n.loc, op, "shape", "buffer-shape",
                fmt::format("dimension {} of '{}' is {}; expected a positive size", d, b->name, *v),
                context);
  }
  if (all_const && !buffer_bytes(b))
    ctx.error(n.loc, op, "shape", "buffer-capacity",
              fmt::format(
                  "workspace '{}' of {} x {} needs more than 2^63 bytes (its size overflows int64)",
                  b->name, fmt_extents(b->shape), dtype_str(b->dtype)),
              context);
}

void check_allocate(const AllocateNode& n, VerifyContext& ctx) {
  if (n.is_view()) return check_view(n, ctx);
  const Buffer& b = n.buffer;
  const Target& t = ctx.target();
  const std::string op = alloc_title(b->scope);
  const std::string context = fmt::format("buffer '{}' in {}", b->name, scope_name(b->scope));
  // The L2 cache lies between the cores and GM (AscendC's SetL2CacheHint is a GlobalTensor
  // method): an on-chip buffer's bytes never pass through it.
  if (b->l2_cache != L2CacheMode::Normal && b->scope != MemScope::GM)
    ctx.error(n.loc, op, "l2_cache", "l2-cache-scope",
              fmt::format("'{}' is a {} buffer with L2 cache mode \"{}\"; only GM tensors "
                          "(parameters, workspaces) pass through L2",
                          b->name, scope_name(b->scope), l2_cache_name(b->l2_cache)),
              context);
  // pipeline_loops versions on-chip buffers only (a channel's GM workspace has channel_slots);
  // plan_memory keeps slots of one loop apart by their numbers, which must name a slot.
  if (b->slot.defined() && (b->scope == MemScope::GM || b->scope == MemScope::Var))
    ctx.error(n.loc, op, "slot", "pipeline-slot-scope",
              fmt::format("'{}' is a {} buffer with a pipeline slot; only on-chip tile buffers "
                          "are slots of a T.Pipelined loop",
                          b->name, scope_name(b->scope)),
              context);
  if (b->slot.defined() &&
      (b->slot.count < 2 || b->slot.index < 0 || b->slot.index >= b->slot.count))
    ctx.error(n.loc, op, "slot", "pipeline-slot-range",
              fmt::format("'{}' is slot {} of {} of loop {}; expected 0 <= slot < count and "
                          "count >= 2 (one slot per stage of a T.Pipelined loop)",
                          b->name, b->slot.index, b->slot.count, b->slot.loop),
              context);
  if (ctx.developer() && is_planned_scope(b->scope)) {
    ctx.error(
        n.loc, op, "", "developer-physical-scope",
        fmt::format(
            "'{}' is placed in {} by hand; a developer kernel (T::Kernel without vid) lets "
            "the compiler place its buffers: use T::alloc_shared or T::alloc_fragment, or write "
            "an expert kernel (T::Kernel with cid and vid, T::Scope)",
            b->name, scope_name(b->scope)),
        context);
    return;
  }
  if (is_developer_scope(b->scope) && !ctx.developer()) {
    ctx.error(n.loc, op, "", "developer-scope-in-expert-mode",
              fmt::format("'{}' is a developer-mode {} buffer; expert-mode kernels place every "
                          "buffer explicitly (alloc_L1/L0A/L0B/L0C/ub)",
                          b->name, scope_name(b->scope)),
              context);
    return;
  }
  if (b->scope == MemScope::GM) return check_workspace(n, ctx);
  for (size_t d = 0; d < b->shape.size(); ++d)
    if (auto v = const_int(b->shape[d]); v && *v <= 0)
      ctx.error(n.loc, op, "shape", "buffer-shape",
                fmt::format("dimension {} of '{}' is {}; expected a positive size", d, b->name, *v),
                context);
  if (auto owner = t.memory_core(b->scope); owner && ctx.core() && *ctx.core() != *owner)
    ctx.error(n.loc, op, "", "alloc-core-scope",
              fmt::format("{} belongs to the {} core; allocate '{}' in T::Scope(Core::{}) (or at "
                          "kernel level), not in T::Scope(Core::{})",
                          scope_name(b->scope), core_name(*owner), b->name, core_name(*owner),
                          core_name(*ctx.core())),
              context);
  auto bytes = buffer_bytes(b);
  const int64_t cap = t.cap(b->scope);
  bool all_const = true;
  for (const auto& e : b->shape) all_const = all_const && const_int(e).has_value();
  if (all_const && !bytes)  // a constant shape whose byte size does not even fit in int64
    ctx.error(n.loc, op, "shape", "buffer-capacity",
              fmt::format("'{}' of {} x {} needs more than 2^63 bytes (its size overflows int64), "
                          "but {} holds {} bytes on {}",
                          b->name, fmt_extents(b->shape), dtype_str(b->dtype), scope_name(b->scope),
                          cap, t.name),
              context);
  if (bytes && cap > 0 && *bytes > cap)
    ctx.error(
        n.loc, op, "shape", "buffer-capacity",
        fmt::format("'{}' needs {} bytes ({} x {}), but {} holds {} bytes on {}", b->name, *bytes,
                    fmt_extents(b->shape), dtype_str(b->dtype), scope_name(b->scope), cap, t.name),
        context);
  if (ctx.spec() == Spec::Planned && is_planned_scope(b->scope) && b->address < 0)
    ctx.error(n.loc, op, "address", "buffer-unplanned",
              fmt::format("'{}' has no address; the planned spec expects every {} buffer placed by "
                          "plan_memory (or pinned with an explicit address)",
                          b->name, scope_name(b->scope)),
              context);
  if (b->address >= 0 && b->scope != MemScope::Var) {
    const int64_t al = t.align(b->scope);
    if (al > 1 && b->address % al != 0)
      ctx.error(n.loc, op, "address", "buffer-address-alignment",
                fmt::format("address {} of '{}' is not a multiple of the {}-byte alignment of {}",
                            b->address, b->name, al, scope_name(b->scope)),
                context);
    // The bytes the buffer really occupies: fractal memories pad to whole fractals.
    std::optional<int64_t> footprint;
    std::vector<int64_t> shape;
    for (const auto& e : b->shape)
      if (auto v = const_int(e); v && *v > 0) shape.push_back(*v);
    if (shape.size() == b->shape.size()) footprint = storage_bytes(b->scope, b->dtype, shape);
    // Checked: an address near INT64_MAX must not wrap the end of the buffer below capacity.
    auto end = footprint ? checked_add(b->address, *footprint) : std::nullopt;
    if (footprint && cap > 0 && (!end || *end > cap))
      ctx.error(n.loc, op, "address", "buffer-address-range",
                fmt::format(
                    "'{}' occupies bytes [{}, {}) but {} has {} bytes on {}", b->name, b->address,
                    end ? fmt::format("{}", *end) : fmt::format("{} + {}", b->address, *footprint),
                    scope_name(b->scope), cap, t.name),
                context);
  }
}

}  // namespace tl::rules
