// The virtual NPU's side of the primitives of src/prims (tl/npu/semantics.h): the semantics they
// register during static initialisation, the view of a core they run against (PrimCall), and
// the entries that exec.cpp adds to its per-op tables of semantics and stale-data rules, so that
// a primitive is checked by the same registration checks as the ops of src/op.
#include <unordered_map>

#include "exec.h"
#include "stale.h"
#include "tl/npu/semantics.h"

namespace tl::npu {
namespace {

struct Registered {
  std::unordered_map<std::string, PrimSemantics> by_name;
  bool closed = false;  // the tables are built: a later registration would be lost
};
/// A function-local static: the registrars of src/prims may run before this file's statics.
Registered& registered() {
  static Registered r;
  return r;
}

/// The registered semantics by OpDef::id, built on first use and checked against the registry.
const std::vector<const PrimSemantics*>& by_id() {
  static const std::vector<const PrimSemantics*> table = [] {
    std::vector<const PrimSemantics*> t(all_ops().size(), nullptr);
    registered().closed = true;
    for (const auto& [name, s] : registered().by_name) {
      const OpDef* op = find_op(name);
      TL_ASSERT(op, "virtual-NPU semantics are registered for T.{}, which is not a registered op",
                name);
      t[op->id] = &s;
    }
    return t;
  }();
  return table;
}

const PrimSemantics& semantics(const OpDef* op) {
  const PrimSemantics* s = by_id()[op->id];
  TL_ASSERT(s, "T.{} has no primitive semantics", op->name);
  return *s;
}

void run_exec(const TileOpNode& n, Core& c) {
  PrimCall call(n, c, false);
  semantics(n.op).exec(call);
}

void run_stale_rule(const TileOpNode& n, Core& c) {
  const PrimSemantics& s = semantics(n.op);
  PrimCall call(n, c, true);
  if (s.stale_kind == PrimSemantics::Stale::Custom) return s.stale(call);
  // MovesBytes: the semantics on the shadows move validity as they move the data.
  s.exec(call);
  if (const uint8_t st = scalar_taints(n, c))
    for (size_t i = 0; i < n.args.size() && i < n.op->operands.size(); ++i) {
      const OperandSpec& spec = n.op->operands[i];
      if (n.args[i].is_region() && spec.access != Access::Read)
        region_fill(shadow_for_write(c, c.operand(n, spec.name)), st);
    }
}

}  // namespace

void register_prim_semantics(std::string op_name, PrimSemantics s) {
  TL_ASSERT(!registered().closed,
            "the semantics of T.{} are registered after the first kernel was built (static "
            "initialisation only)",
            op_name);
  TL_ASSERT(s.exec, "T.{}: primitive semantics without an exec function", op_name);
  TL_ASSERT(s.stale_kind != PrimSemantics::Stale::Unset,
            "T.{}: primitive semantics do not say how the stale-data checker follows them",
            op_name);
  TL_ASSERT(s.stale_kind != PrimSemantics::Stale::Custom || s.stale,
            "T.{}: a Custom stale-data rule without a function", op_name);
  auto [it, fresh] = registered().by_name.emplace(std::move(op_name), s);
  TL_ASSERT(fresh, "T.{} has two primitive semantics", it->first);
}

std::vector<ExecEntry> prim_execs() {
  std::vector<ExecEntry> out;
  for (const OpDef* op : all_ops())
    if (by_id()[op->id]) out.push_back({op, run_exec});
  return out;
}
std::vector<StaleEntry> prim_stale_rules() {
  std::vector<StaleEntry> out;
  for (const OpDef* op : all_ops())
    if (by_id()[op->id]) out.push_back({op, run_stale_rule});
  return out;
}

// ---------------------------------------------------------------------------------------------
// PrimCall

int64_t PrimTile::numel() const {
  int64_t n = 1;
  for (int64_t e : extent) n *= e;
  return n;
}

uint8_t* PrimTile::at(int64_t flat) const {
  int64_t off = 0;
  for (size_t d = extent.size(); d-- > 0;) {
    off += (start[d] + flat % extent[d]) * strides[d];
    flat /= extent[d];
  }
  return base + off * dtype_bytes(dtype);
}

bool PrimTile::contiguous() const {
  bool partial = false;  // a dimension after this one is not whole
  for (size_t d = extent.size(); d-- > 0;) {
    if (partial && extent[d] > 1) return false;
    if (extent[d] != shape[d]) partial = true;
  }
  return strides.empty() || strides.back() == 1;
}

PrimTile PrimCall::tile(std::string_view name) {
  TileRef t = c_.operand(n_, name);
  if (stale_) {
    const int i = n_.op->operand_index(name);
    const bool writes = i >= 0 && n_.op->operands[i].access != Access::Read;
    t = writes ? shadow_for_write(c_, t) : shadow_of(c_, t);
  }
  PrimTile p;
  p.dtype = t.dtype;
  p.scope = t.scope;
  p.buffer = t.buffer->name;
  p.extent.assign(t.extent.begin(), t.extent.end());
  p.base = t.base;
  p.start.assign(t.start.begin(), t.start.end());
  p.shape.assign(t.shape.begin(), t.shape.end());
  p.strides.assign(t.strides.begin(), t.strides.end());
  return p;
}

bool PrimCall::has(std::string_view name) const {
  return c_.has_operand(n_, name);
}

int64_t PrimCall::scalar(std::string_view name) {
  const TileArg* a = op_operand(n_, name);
  TL_ASSERT(a && a->is_scalar(), "T.{}: operand {} is not a scalar", n_.op->name, name);
  return c_.eval_int(a->scalar);
}

void PrimCall::fail(const std::string& msg) const {
  c_.fail(msg);
}

}  // namespace tl::npu
