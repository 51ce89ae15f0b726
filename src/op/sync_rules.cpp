// The synchronisation rules of one core (tl/sync_rules.h): the single definition the hazard
// checker, plan_memory's ordering test and insert_syncs share.
#include "tl/sync_rules.h"

#include "tl/op.h"

namespace tl {

bool pipe_in_order(Pipe p) {
  return p == Pipe::S || p == Pipe::M || p == Pipe::MTE1 || p == Pipe::FIX;
}

bool pipe_orders_later_issue(Pipe p) {
  return p == Pipe::S;
}

Ordering ordering_needed(Pipe first, Pipe second) {
  if (pipe_orders_later_issue(first)) return Ordering::Nothing;
  if (first == second) return pipe_in_order(first) ? Ordering::Nothing : Ordering::PipeBarrier;
  return Ordering::Flag;
}

bool mmad_needs_m_barrier(int64_t m, int64_t n) {
  return ((m + 15) / 16) * ((n + 15) / 16) < 10;
}

Pipe instr_pipe(const TileOpNode& n, const InstrSpec& spec, const Target& target) {
  return spec.pipe ? *spec.pipe : n.op->pipe(n, target);
}

}  // namespace tl
