// The tile-primitive registry: building and checking the definitions (every piece present,
// the default one-instruction expansion filled in), lookup by name and construction of checked
// TileOp statements.
#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "op_families.h"
#include "tl/op.h"

#include <fmt/ranges.h>

namespace tl {
namespace {

struct Registry {
  std::vector<OpDef> defs;
  std::vector<const OpDef*> ptrs;
  std::unordered_map<std::string, const OpDef*> by_name;
  std::vector<const OpDef*> prims;  // those of src/prims, sorted by name
};

/// The primitives of src/prims, registered during static initialisation, before the registry
/// is built. A function-local static: the registrars of other translation units may run before
/// any namespace-scope object of this one is constructed.
struct PendingPrims {
  std::vector<OpDef> defs;
  bool closed = false;  // the registry is built: a later registration would be lost
};
PendingPrims& pending_prims() {
  static PendingPrims p;
  return p;
}

/// One instruction on the op's pipe that touches every operand as its spec says.
std::vector<InstrSpec> default_expansion(const OpDef& d) {
  InstrSpec i{.cost = *d.cost};
  for (size_t k = 0; k < d.operands.size(); ++k)
    i.touches.push_back({.operand = static_cast<int>(k), .access = d.operands[k].access});
  return {i};
}

}  // namespace

/// A definition with a piece missing is a bug of the registration, found here, the first time
/// anything asks for an op, rather than a silent default later.
void check_op_definition(const OpDef& d) {
  TL_ASSERT(!d.name.empty(), "an op without a name is registered");
  TL_ASSERT(d.pipe != nullptr, "op {} has no pipe function", d.name);
  TL_ASSERT(d.verify != OpRule::None || d.unit == OpUnit::Debug, "op {} has no verifier rule",
            d.name);
  TL_ASSERT(!d.summary.empty(), "op {} has no summary", d.name);
  TL_ASSERT(d.cost.has_value(), "op {} has no cost class", d.name);
  TL_ASSERT(d.rows != RowMap::Unset,
            "op {} does not say how its operands correspond by rows (OpDef::rows)", d.name);
  TL_ASSERT(d.unit != OpUnit::Vector || d.overlap != Overlap::Unset,
            "op {} does not say whether its destination may overlap a source (OpDef::overlap)",
            d.name);
  // The traits with no default (OpDef's Trait fields): each states a value, "none" included.
  auto stated = [&](bool set, std::string_view trait) {
    TL_ASSERT(set, "op {} does not state its trait OpDef::{} (every op states it; no default)",
              d.name, trait);
  };
  stated(d.identity.is_set(), "identity");
  stated(d.binop.is_set(), "binop");
  stated(d.granular_count.is_set(), "granular_count");
  stated(d.flushes_subnormals.is_set(), "flushes_subnormals");
  stated(d.atomic.is_set(), "atomic");
  stated(d.developer_only.is_set(), "developer_only");
  TL_ASSERT(d.dtypes.kind != OpDTypes::Kind::Unset, "op {} does not say which dtypes it accepts",
            d.name);
  if (d.dtypes.kind == OpDTypes::Kind::List)
    for (int a = 0; a < kNumArches; ++a) {
      const auto* list = d.dtypes.on(static_cast<Arch>(a));
      TL_ASSERT(list && !list->empty(), "op {} has no dtype list for arch {}", d.name,
                arch_name(static_cast<Arch>(a)));
    }
  if (d.dtypes.kind == OpDTypes::Kind::TargetTable)
    TL_ASSERT(!d.dtypes.table.empty(), "op {} takes its dtypes from an unnamed target table",
              d.name);
  TL_ASSERT(!d.expansion.empty(), "op {} has no instructions", d.name);
  for (const auto& i : d.expansion)
    for (const auto& t : i.touches) {
      TL_ASSERT(t.operand < static_cast<int>(d.operands.size()),
                "op {}: instruction {} touches operand {} of {}", d.name, i.name, t.operand,
                d.operands.size());
      TL_ASSERT(t.operand >= 0 || (t.bytes != nullptr && t.scratch != MemScope::GM),
                "op {}: instruction {} touches a scratch area without a memory or a size", d.name,
                i.name);
    }
}

namespace {

const Registry& registry() {
  static const Registry reg = [] {
    Registry r;
    ops::register_move_ops(r.defs);
    ops::register_cube_ops(r.defs);
    ops::register_vector_ops(r.defs);
    ops::register_reduce_sort_ops(r.defs);
    ops::register_debug_ops(r.defs);
    // The primitives after the tables, sorted by name: static initialisation runs their files'
    // registrars in an unspecified order, and all_ops() order must not depend on it.
    PendingPrims& pending = pending_prims();
    pending.closed = true;
    std::sort(pending.defs.begin(), pending.defs.end(),
              [](const OpDef& a, const OpDef& b) { return a.name < b.name; });
    const size_t first_prim = r.defs.size();
    for (auto& d : pending.defs) r.defs.push_back(std::move(d));
    pending.defs.clear();
    for (auto& d : r.defs) {
      TL_ASSERT(!r.by_name.count(d.name), "op {} registered twice", d.name);
      if (d.expansion.empty() && d.cost) d.expansion = default_expansion(d);
      check_op_definition(d);
      d.id = static_cast<int>(r.ptrs.size());
      r.ptrs.push_back(&d);
      r.by_name.emplace(d.name, &d);
    }
    for (size_t i = first_prim; i < r.defs.size(); ++i) r.prims.push_back(&r.defs[i]);
    return r;
  }();
  return reg;
}

std::string_view attr_type_name(const AttrValue& v) {
  switch (v.index()) {
    case 0:
      return "bool";
    case 1:
      return "int";
    case 2:
      return "float";
    default:
      return "string";
  }
}

}  // namespace

const std::vector<DType>* OpDTypes::on(Arch a) const {
  if (kind != Kind::List) return nullptr;
  for (const auto& [arch, list] : per_arch)
    if (arch == a) return &list;
  return &dtypes;
}
OpDTypes only_dtypes(std::vector<DType> dtypes) {
  return OpDTypes{
      .kind = OpDTypes::Kind::List, .dtypes = std::move(dtypes), .per_arch = {}, .table = {}};
}
OpDTypes dtypes_from_target(std::string table) {
  return OpDTypes{
      .kind = OpDTypes::Kind::TargetTable, .dtypes = {}, .per_arch = {}, .table = std::move(table)};
}
OpDTypes any_dtype() {
  return OpDTypes{.kind = OpDTypes::Kind::Any, .dtypes = {}, .per_arch = {}, .table = {}};
}

// The op semantics look their operands up by name on every execution ("dst", "src0", ...):
// std::string == std::string_view called memcmp for each candidate of the right length, about
// 2 % of a log-softmax call's host samples with op_operand around it (issue 31, branch hostsm).
// The names are a few characters, so they are compared here inline.
int OpDef::operand_index(std::string_view n) const {
  for (size_t i = 0; i < operands.size(); ++i) {
    const std::string& s = operands[i].name;
    if (s.size() != n.size()) continue;
    size_t k = 0;
    while (k < n.size() && s[k] == n[k]) ++k;
    if (k == n.size()) return static_cast<int>(i);
  }
  return -1;
}
const AttrSpec* OpDef::attr_spec(std::string_view n) const {
  for (const auto& a : attrs)
    if (a.name == n) return &a;
  return nullptr;
}

bool OpDef::elementwise() const {
  if (unit != OpUnit::Vector || rows != RowMap::Elementwise) return false;
  return std::none_of(operands.begin(), operands.end(),
                      [](const OperandSpec& s) { return s.bitmask; });
}

std::optional<CoreKind> op_core(const TileOpNode& n, const Target& t) {
  switch (n.op->unit) {
    case OpUnit::Cube:
      return CoreKind::Cube;
    case OpUnit::Vector:
      return CoreKind::Vector;
    case OpUnit::Debug:
      // A dump of an on-chip tile runs on the core that has that memory (a UB tile on the
      // AIVs: TileLang-Ascend's kernel-level T.dump_tensor(c_ub, ...) outside any scope);
      // a printf or a GM dump wherever it is placed.
      for (const auto& a : n.args)
        if (a.is_region())
          if (auto c = t.memory_core(a.region.buffer->scope)) return c;
      return std::nullopt;
    case OpUnit::Scalar:
      return std::nullopt;
    case OpUnit::Move: {
      const TileArg* src = op_operand(n, "src");
      const TileArg* dst = op_operand(n, "dst");
      if (src && dst && src->is_region() && dst->is_region())
        if (const CopyPath* p = t.copy_path(src->region.buffer->scope, dst->region.buffer->scope))
          return p->core;
      // An illegal path (the verifier names it): the core owning an on-chip operand.
      for (const auto& a : n.args)
        if (a.is_region())
          if (auto c = t.memory_core(a.region.buffer->scope)) return c;
      return CoreKind::Vector;
    }
  }
  return std::nullopt;
}

const OpDef* op_for_binop(BinOp op, RowMap rows) {
  for (const OpDef* d : all_ops())
    if (*d->binop == op && d->rows == rows) return d;
  return nullptr;
}

const OpDef* find_op(std::string_view name) {
  const auto& r = registry();
  auto it = r.by_name.find(std::string(name));
  return it == r.by_name.end() ? nullptr : it->second;
}
const std::vector<const OpDef*>& all_ops() {
  return registry().ptrs;
}
const std::vector<const OpDef*>& prim_ops() {
  return registry().prims;
}

void register_prim(OpDef def) {
  PendingPrims& pending = pending_prims();
  TL_ASSERT(!pending.closed,
            "primitive {} registered after the op registry was built (register_prim runs during "
            "static initialisation only)",
            def.name);
  pending.defs.push_back(std::move(def));
}

const TileArg* op_operand(const TileOpNode& n, std::string_view name) {
  int i = n.op->operand_index(name);
  if (i < 0 || static_cast<size_t>(i) >= n.args.size()) return nullptr;
  return &n.args[i];
}

Stmt make_tile_op(std::string_view op_name, std::vector<TileArg> args, std::vector<Attr> attrs,
                  const SourceLoc& loc) {
  const OpDef* op = find_op(op_name);
  if (!op) user_error(loc, "unknown tile primitive T.{}", op_name);
  return make_tile_op(*op, std::move(args), std::move(attrs), loc);
}

Stmt make_tile_op(const OpDef& def, std::vector<TileArg> args, std::vector<Attr> attrs,
                  const SourceLoc& loc) {
  const OpDef* op = &def;
  const auto& specs = op->operands;
  size_t required = 0;
  for (const auto& s : specs)
    if (!s.optional && !s.variadic) ++required;
  bool variadic = !specs.empty() && specs.back().variadic;
  if (args.size() < required || (!variadic && args.size() > specs.size()))
    user_error(
        loc, "T.{} takes {}{} operands, got {}", op->name, required,
        variadic ? " or more" : (required == specs.size() ? "" : fmt::format("-{}", specs.size())),
        args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& spec = specs[std::min(i, specs.size() - 1)];
    const auto& a = args[i];
    if (!a.is_region() && !a.is_scalar())
      user_error(loc, "T.{}: operand {} ('{}') is empty", op->name, i, spec.name);
    if (spec.kind == OperandKind::Tile && !a.is_region())
      user_error(loc,
                 "T.{}: operand '{}' must be a buffer or buffer region, got a scalar expression",
                 op->name, spec.name);
    if (spec.kind == OperandKind::Scalar && !a.is_scalar())
      user_error(loc, "T.{}: operand '{}' must be a scalar expression, got buffer region of '{}'",
                 op->name, spec.name, a.region.buffer->name);
    if (a.is_region()) {
      const auto& r = a.region;
      if (r.ranges.size() != r.buffer->ndim())
        user_error(loc, "T.{}: operand '{}' indexes buffer '{}' with {} dimensions, buffer has {}",
                   op->name, spec.name, r.buffer->name, r.ranges.size(), r.buffer->ndim());
      for (const auto& rg : r.ranges)
        if (!rg.min.defined() || !rg.extent.defined())
          user_error(loc,
                     "T.{}: operand '{}' region of '{}' has no extent (a start-point region "
                     "needs a full-region operand to take its extent from)",
                     op->name, spec.name, r.buffer->name);
    }
  }
  // Attributes: known names, matching types; defaults filled in, in OpDef order.
  for (const auto& a : attrs) {
    const AttrSpec* s = op->attr_spec(a.key);
    if (!s) user_error(loc, "T.{} has no attribute '{}'", op->name, a.key);
  }
  std::vector<Attr> full;
  for (const auto& s : op->attrs) {
    Attr v{s.name, s.default_value};
    for (const auto& a : attrs)
      if (a.key == s.name) v.value = a.value;
    // Integers are accepted where a float is expected.
    if (std::holds_alternative<double>(s.default_value) && std::holds_alternative<int64_t>(v.value))
      v.value = static_cast<double>(std::get<int64_t>(v.value));
    if (v.value.index() != s.default_value.index())
      user_error(loc, "T.{}: attribute '{}' expects a {}, got a {}", op->name, s.name,
                 attr_type_name(s.default_value), attr_type_name(v.value));
    if (!s.choices.empty()) {
      const auto& str = std::get<std::string>(v.value);
      if (std::find(s.choices.begin(), s.choices.end(), str) == s.choices.end())
        user_error(loc, "T.{}: attribute '{}' must be one of {}, got \"{}\"", op->name, s.name,
                   fmt::join(s.choices, ", "), str);
    }
    full.push_back(std::move(v));
  }
  return TileOpNode::make(op, std::move(args), std::move(full), loc);
}

}  // namespace tl
