// Helpers shared by the verifier's rule files.
#include "verify_util.h"

#include <algorithm>

#include "tl/arith.h"  // simplify
#include "tl/printer.h"

namespace tl::rules {

std::optional<int64_t> const_int(const Expr& e) {
  if (!e.defined()) return std::nullopt;
  if (auto v = as_const_int(e)) return v;
  if (e.kind() == ExprKind::Var || e.kind() == ExprKind::Load || e.kind() == ExprKind::FloatImm)
    return std::nullopt;
  return as_const_int(simplify(e));
}

std::string op_title(const TileOpNode& n) {
  return "T." + (n.op ? n.op->name : std::string("<op>"));
}

const BufferRegion* region_of(const TileOpNode& n, std::string_view name) {
  if (!n.op || name.empty()) return nullptr;
  const TileArg* a = op_operand(n, name);
  return a && a->is_region() ? &a->region : nullptr;
}

std::vector<std::pair<std::string, const BufferRegion*>> regions_of(const TileOpNode& n) {
  std::vector<std::pair<std::string, const BufferRegion*>> out;
  if (!n.op) return out;
  const auto& specs = n.op->operands;
  for (size_t i = 0; i < n.args.size() && !specs.empty(); ++i)
    if (n.args[i].is_region())
      out.emplace_back(specs[std::min(i, specs.size() - 1)].name, &n.args[i].region);
  return out;
}

std::vector<Expr> squeezed_extents(const BufferRegion& r) {
  std::vector<Expr> e = region_extents(r);
  size_t i = 0;
  while (i + 1 < e.size() && const_int(e[i]) == 1) ++i;
  return {e.begin() + static_cast<std::ptrdiff_t>(i), e.end()};
}

std::vector<Expr> unit_free_extents(const BufferRegion& r) {
  std::vector<Expr> out;
  for (const Expr& e : region_extents(r))
    if (const_int(e) != 1) out.push_back(e);
  if (out.empty()) out.push_back(Expr(1));
  return out;
}

std::string fmt_extents(const std::vector<Expr>& xs) {
  std::string s = "[";
  for (size_t i = 0; i < xs.size(); ++i)
    s += (i ? ", " : "") + (xs[i].defined() ? print(xs[i]) : "?");
  return s + "]";
}

bool extents_may_equal(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto x = const_int(a[i]), y = const_int(b[i]);
    if (x && y && *x != *y) return false;
  }
  return true;
}

std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<int64_t> region_elems(const BufferRegion& r) {
  return const_product(region_extents(r));
}
std::optional<int64_t> region_bytes(const BufferRegion& r) {
  auto n = region_elems(r);
  if (!n) return std::nullopt;
  return checked_mul(*n, dtype_bytes(r.buffer->dtype));
}
std::optional<int64_t> buffer_bytes(const Buffer& b) {
  auto n = const_product(b->shape);
  if (!n) return std::nullopt;
  return checked_mul(*n, dtype_bytes(b->dtype));
}

std::string dtype_str(DType t) {
  return std::string(dtype_name(t));
}
std::string dtype_list(const std::vector<DType>& ts) {
  std::string s;
  for (auto t : ts) s += (s.empty() ? "" : ", ") + dtype_str(t);
  return "{" + s + "}";
}
std::string scope_str(MemScope s) {
  return std::string(scope_name(s));
}

bool check_vector_dtype(const TileOpNode& n, VerifyContext& ctx, std::string_view name) {
  const BufferRegion* r = region_of(n, name);
  if (!r) return true;
  const auto& t = ctx.target();
  DType d = r->buffer->dtype;
  const std::vector<DType>* legal = n.op->dtypes.on(t);
  TL_ASSERT(legal, "{} checks a dtype list it does not have", op_title(n));
  if (std::find(legal->begin(), legal->end(), d) != legal->end()) return true;
  ctx.error(n, std::string(name), "vector-dtype",
            fmt::format("{} on {} takes {}, got {}", op_title(n), t.name, dtype_list(*legal),
                        dtype_str(d)));
  return false;
}

bool check_same_dtype(const TileOpNode& n, VerifyContext& ctx, std::string_view ref,
                      std::string_view name) {
  const BufferRegion *a = region_of(n, ref), *b = region_of(n, name);
  if (!a || !b || a->buffer->dtype == b->buffer->dtype) return true;
  ctx.error(n, std::string(name), "operand-dtype-mismatch",
            fmt::format("expected the dtype of '{}' ({}), got {}", ref, dtype_str(a->buffer->dtype),
                        dtype_str(b->buffer->dtype)));
  return false;
}

bool check_same_shape(const TileOpNode& n, VerifyContext& ctx, std::string_view ref,
                      std::string_view name) {
  const BufferRegion *a = region_of(n, ref), *b = region_of(n, name);
  if (!a || !b) return true;
  auto ea = unit_free_extents(*a), eb = unit_free_extents(*b);
  if (extents_may_equal(ea, eb)) return true;
  ctx.error(n, std::string(name), "shape-mismatch",
            fmt::format("expected the extents of '{}' {} (1s ignored), got {}", ref,
                        fmt_extents(ea), fmt_extents(eb)));
  return false;
}

std::string alloc_title(MemScope s) {
  switch (s) {
    case MemScope::UB:
      return "T.alloc_ub";
    case MemScope::Shared:
      return "T.alloc_shared";
    case MemScope::Fragment:
      return "T.alloc_fragment";
    case MemScope::Var:
      return "T.alloc_var";
    case MemScope::GM:
      return "T.alloc_workspace";
    default:
      return "T.alloc_" + scope_str(s);
  }
}

}  // namespace tl::rules
