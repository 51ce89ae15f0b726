// What a statement touches: the one access analysis of the compiler (src/analysis/). Sync
// insertion, the reuse order of memory planning, the block replay and the developer passes all
// ask the same question of a tile op -- which instructions does it issue, on which pipe, and
// which operands (or scratch areas) does each read or write -- and answer it here, from the op
// definition alone (OpDef::expansion, its InstrSpec touches and OperandSpec access; never the
// op's name), so a new op is described once, in src/op. What a region means in bytes is the
// client's business (planned on-chip addresses, GM linear forms: tl/linear.h, tl/storage.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "tl/ir.h"
#include "tl/target.h"

namespace tl::analysis {

/// One operand use of one instruction, in the order of the op's expansion: a region operand
/// (TileOpNode::args[arg], a tile or GM region), a scalar operand the instruction reads on its
/// pipe (its loads are the instruction's), or a scratch area of memory `scratch` from offset 0.
struct Use {
  enum Kind : uint8_t { Region, Scalar, Scratch } kind = Region;
  int arg = -1;                     // Region, Scalar: index into TileOpNode::args
  MemScope scratch = MemScope::GM;  // Scratch: its memory
  bool read = false, write = false;
};

/// One instruction of a tile op's expansion: its pipe and what it touches. A barrier_all
/// instruction (gemm_v0's template barriers) has no pipe and no uses.
struct Instr {
  size_t index = 0;  // in OpDef::expansion
  bool barrier_all = false;
  Pipe pipe = Pipe::S;
  std::vector<Use> uses;
};

/// The instructions tile op `n` issues on target `t`, with the operand uses of each (a variadic
/// operand's every argument; an omitted optional operand none).
std::vector<Instr> instructions(const TileOpNode& n, const Target& t);

/// The bytes [lo, hi), from the start of a buffer of memory `s`, dtype `t` and constant
/// `shape`, between the element at index `first` and the one at `last` (each index within the
/// shape): every layout -- row-major UB and GM, the fractal NZ/ZZ/ZN of L1 and L0 -- is
/// non-decreasing in each index (storage_element_offset, tl/storage.h), so the bytes of a
/// region with those corners lie between the two. What insert_syncs and the block replay take
/// as a constant region's bytes.
std::pair<int64_t, int64_t> bytes_between(MemScope s, DType t, const std::vector<int64_t>& shape,
                                          const std::vector<int64_t>& first,
                                          const std::vector<int64_t>& last);

/// One buffer access of a statement: which pipe, read and/or write.
struct Touch {
  const BufferNode* buffer;
  Pipe pipe;
  bool read, write;
};
/// Every buffer access of `s`, nested statements included, at the level of ops (each region
/// operand of a tile op on the op's pipe, as its OperandSpec says; scalar loads and stores on
/// the scalar pipe). An mma whose init is a constant true only writes its accumulator.
std::vector<Touch> touches_of(const Stmt& s, const Target& t);

}  // namespace tl::analysis
