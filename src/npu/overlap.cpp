// The vector instructions' overlap rule on the virtual NPU: a destination may share bytes with a
// source only as exactly the same region (an in-place op), and the reductions and MrgSort take no
// overlap at all (docs/hardware.md section 5, "General constraints"). Core::check_overlap applies
// it on every execution of a vector op; overlap_free decides once per program which ops can never
// break it, so that the interpreter skips their check (issue 31: the check's operand lookups were
// 3 % of a log-softmax call's host samples, docs/virtual_npu.md "Host speed").
#include "program.h"
#include "tl/printer.h"
#include "trace_record.h"

namespace tl::npu {

namespace {
bool same_bound(const Expr& a, const Expr& b) {
  if (a.get() == b.get()) return true;
  return a.kind() == ExprKind::IntImm && b.kind() == ExprKind::IntImm &&
         static_cast<const IntImmNode*>(a.get())->value ==
             static_cast<const IntImmNode*>(b.get())->value;
}
bool same_region(const BufferRegion& a, const BufferRegion& b) {
  if (a.buffer.get() != b.buffer.get() || a.ranges.size() != b.ranges.size()) return false;
  for (size_t d = 0; d < a.ranges.size(); ++d)
    if (!same_bound(a.ranges[d].min, b.ranges[d].min) ||
        !same_bound(a.ranges[d].extent, b.ranges[d].extent))
      return false;
  return true;
}

/// The UB region operands of `n` (at most 8, the first ones), each with its planned placement
/// and whether the op writes it.
struct UbOperand {
  size_t arg;
  const BufferInfo* info;
  bool write;
};
size_t ub_operands(const Program& p, const TileOpNode& n, UbOperand (&ops)[8]) {
  const OpDef& op = *n.op;
  size_t k = 0;
  for (size_t i = 0; i < n.args.size() && k < 8; ++i) {
    if (!n.args[i].is_region()) continue;
    const BufferInfo& info = p.buffer(n.args[i].region.buffer.get());
    if (info.scope != MemScope::UB) continue;
    ops[k++] = {i, &info,
                op.operands[std::min(i, op.operands.size() - 1)].access != tl::Access::Read};
  }
  return k;
}
bool disjoint(const BufferInfo& a, const BufferInfo& b) {
  return a.offset >= b.offset + b.bytes || b.offset >= a.offset + a.bytes;
}
}  // namespace

/// Operands of buffers whose planned bytes are disjoint cannot overlap: only buffers sharing
/// bytes (the same buffer, or reuse) are compared exactly, run by run.
void Core::check_overlap(const TileOpNode& n) {
  const OpDef& op = *n.op;
  if (op.operands.empty()) return;
  // One probe instead of a placement lookup per operand (build_program, overlap_free).
  if (program.overlap_free_ops.find(&n) >= 0) return;
  UbOperand ops[8];
  const size_t k = ub_operands(program, n, ops);
  const bool none_allowed = op.overlap == Overlap::None;
  for (size_t w = 0; w < k; ++w) {
    if (!ops[w].write) continue;
    for (size_t r = 0; r < k; ++r) {
      if (r == w) continue;
      const BufferInfo &a = *ops[w].info, &b = *ops[r].info;
      if (disjoint(a, b)) continue;
      const auto& wa = n.args[ops[w].arg];
      const auto& ra = n.args[ops[r].arg];
      const auto& wname = op.operands[std::min(ops[w].arg, op.operands.size() - 1)].name;
      const auto& rname = op.operands[std::min(ops[r].arg, op.operands.size() - 1)].name;
      // The same region written twice (an in-place op: the same buffer, each bound the same
      // expression node or the same literal) is the same region whatever the variables hold:
      // no need to resolve both (the op resolves, and bounds-checks, its operands itself).
      if (!none_allowed && same_region(wa.region, ra.region)) continue;
      TileRef wt = resolve(wa.region, op.name, wname), rt = resolve(ra.region, op.name, rname);
      // The common case, an in-place op on one region: identical without walking the runs.
      bool same =
          wt.buffer == rt.buffer && wt.dtype == rt.dtype && wt.start.size() == rt.start.size();
      for (size_t d = 0; same && d < wt.start.size(); ++d)
        same = wt.start[d] == rt.start[d] && wt.extent[d] == rt.extent[d];
      if (!same) {
        auto wx = accesses_of(*this, wt, true, nullptr),
             rx = accesses_of(*this, rt, false, nullptr);
        bool overlap = false;
        for (const auto& x : wx)
          for (const auto& y : rx) overlap = overlap || overlaps(x, y);
        if (!overlap) continue;
        same = wx.size() == rx.size() && wt.dtype == rt.dtype;
        for (size_t i = 0; same && i < wx.size(); ++i)
          same = wx[i].start == rx[i].start && wx[i].len == rx[i].len &&
                 wx[i].pitch == rx[i].pitch && wx[i].count == rx[i].count;
      }
      if (same && !none_allowed) continue;
      fail(fmt::format(
          "T.{}: '{}' ({}) and '{}' ({}) {}; {}", op.name, wname, print(wa.region), rname,
          print(ra.region), same ? "are the same region" : "overlap partly",
          none_allowed
              ? fmt::format("T.{} takes no overlap between its destination and its sources",
                            op.name)
              : "a vector instruction's destination may only be exactly one of its sources "
                "(the chip computes garbage otherwise)"));
    }
  }
}

/// The pairs check_overlap compares are those whose buffers share planned bytes and are not
/// the same region by their expressions; both are properties of the IR and the plan, not of
/// the variables (a region moves only inside its buffer), so an op with no such pair never
/// fails the check.
bool overlap_free(const Program& p, const TileOpNode& n) {
  const OpDef& op = *n.op;
  if (op.operands.empty()) return true;
  UbOperand ops[8];
  const size_t k = ub_operands(p, n, ops);
  const bool none_allowed = op.overlap == Overlap::None;
  for (size_t w = 0; w < k; ++w) {
    if (!ops[w].write) continue;
    for (size_t r = 0; r < k; ++r) {
      if (r == w || disjoint(*ops[w].info, *ops[r].info)) continue;
      if (!none_allowed && same_region(n.args[ops[w].arg].region, n.args[ops[r].arg].region))
        continue;
      return false;
    }
  }
  return true;
}

}  // namespace tl::npu
