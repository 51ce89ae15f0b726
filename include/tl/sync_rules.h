// The synchronisation rules of one Ascend core, in one place: which pipes complete their
// instructions in order, what a program must add to order an access on one pipe before a later
// access on another, and the pipe each instruction of a tile op issues to. The hazard checker
// (src/npu/hazard.cpp), the tracer that feeds it, plan_memory's ordering test
// (src/pass/reuse_order.cpp) and insert_syncs (src/pass/insert_syncs.cpp) all read these
// functions, so the checker and the passes that reason about order cannot disagree.
#pragma once

#include <cstdint>

#include "tl/ir.h"
#include "tl/target.h"

namespace tl {

struct InstrSpec;

/// S, M, MTE1 and FIX finish their instructions in issue order: each instruction of the pipe
/// happens before the next one on it. V, MTE2 and MTE3 may overlap consecutive instructions.
bool pipe_in_order(Pipe p);

/// The scalar unit issues every instruction of its core: an instruction on S happens before
/// every later instruction on every pipe of the core (and what S was taught by a wait_flag
/// reaches every pipe at S's next instruction).
bool pipe_orders_later_issue(Pipe p);

/// What orders an access on pipe `first` before a later conflicting access on pipe `second`
/// when nothing else in the program does.
enum class Ordering : uint8_t {
  Nothing,      // the same in-order pipe, or `first` is S
  PipeBarrier,  // the same pipe that may overlap itself: pipe_barrier(first)
  Flag,         // different pipes: set_flag(first, second, id) ... wait_flag(first, second, id)
};
Ordering ordering_needed(Pipe first, Pipe second);

/// An Mmad that accumulates into an L0C tile of m x n needs PipeBarrier<PIPE_M> after the
/// previous Mmad into that tile when the tile has fewer than 10 fractals, (m/16)(n/16) < 10
/// (AscendC Mmad, sync notes): the M pipe's in-order guarantee does not cover a read of the
/// accumulator that small. The hazard checker reports it; insert_syncs inserts the barrier.
bool mmad_needs_m_barrier(int64_t m, int64_t n);

/// The pipe instruction `spec` of tile op `n`'s expansion issues to on `target` (its own pipe
/// when it names one, otherwise the op's pipe: a copy's depends on its path).
Pipe instr_pipe(const TileOpNode& n, const InstrSpec& spec, const Target& target);

}  // namespace tl
