// The AscendC emitter's private interface: one Emitter per kernel holds the output text, the
// C++ names given to the IR's variables and buffers, and the helpers the per-family files use
// (emit_kernel.cpp: skeleton, statements, scalar expressions; emit_move.cpp: T.copy on every
// path; emit_vector.cpp: the vector unit; emit_cube.cpp: the cube unit). docs/ascendc.md
// describes the mapping; /work-independent: every API the emitter writes cites its AscendC
// documentation page where it is emitted.
#pragma once

#include <climits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tl/arith.h"
#include "tl/ascendc.h"
#include "tl/ir.h"
#include "tl/op.h"
#include "tl/target.h"

namespace tl::ascendc {

/// A tile operand seen as what the AscendC calls need: the buffer, the element offset of the
/// region's first element, and the region as rows x cols (rows evenly `pitch` elements apart).
struct Operand {
  Buffer buf;
  std::vector<Expr> starts, extents, strides;  // strides: the buffer's element strides
  Expr offset;                                 // element offset of the region's start
  Expr rows;                                   // product of every extent but the last
  Expr cols;                                   // the last extent
  Expr pitch;                                  // elements between row starts (cols if 1 row)
  bool contiguous = false;                     // the region is one run of rows*cols elements
};

/// A number every value of `e` is a multiple of (1 when nothing is known; 0 counts as 2^30).
int64_t known_multiple(const Expr& e);
inline bool is_const(const Expr& e, int64_t v) {
  auto c = as_const_int(e);
  return c && *c == v;
}
/// An integer immediate of the narrowest of int32/int64 that holds v (offsets stay int32 when
/// they can, so the emitted index arithmetic reads plainly).
inline Expr ci(int64_t v) {
  return v >= INT32_MIN && v <= INT32_MAX ? Expr(static_cast<int>(v)) : Expr(v);
}
inline bool is_const_zero(const Expr& e) {
  return is_const(e, 0);
}

class Emitter {
 public:
  Emitter(const PrimFunc& f, const Target& t, const EmitOptions& o);
  std::string run();

  // ---- used by the per-family files --------------------------------------------------------
  /// Throws tl::Error at `loc`: "<what> has no AscendC form in the emitter (docs/ascendc.md)".
  [[noreturn]] void unsupported(const SourceLoc& loc, const std::string& what) const;
  /// One line of output at the current indentation, with the source location as a comment.
  void line(const std::string& text, const SourceLoc& loc = {});
  void open(const std::string& text, const SourceLoc& loc = {});  // "text {" and indent
  void close();                                                   // "}" and dedent
  std::string expr(const Expr& e, const SourceLoc& loc);
  /// A scalar operand of dtype `t` (an expression without loads of on-chip memory).
  std::string scalar(const Expr& e, DType t, const SourceLoc& loc);
  Operand operand(const TileOpNode& n, int index);
  /// `x` or `x[offset]`: the LocalTensor/GlobalTensor of the operand's start.
  std::string at(const Operand& o, const Expr& extra = Expr());
  /// `name` or `name[offset]` (offset in elements; 0 prints the tensor itself).
  std::string sub(const std::string& name, const Expr& offset, const SourceLoc& loc);
  const std::string& name(const Buffer& b);
  /// A C++ name not used yet; `internal`: the emitter's own (tl_ prefix allowed).
  std::string fresh(const std::string& base, bool internal = false);
  std::map<const VarNode*, std::string>& var_names() { return vars_; }
  /// True when `e` (elements of dtype `t`, plus the buffer's planned address) is provably a
  /// multiple of `bytes` bytes.
  bool aligned(const Operand& o, const Expr& elems, int64_t bytes) const;
  /// A scratch LocalTensor<T> of `bytes` bytes in UB above every planned UB buffer, declared
  /// once per dtype; an error at `loc` when UB has no room left.
  std::string ub_scratch(DType t, int64_t bytes, const SourceLoc& loc);
  static std::string ctype(DType t, const SourceLoc& loc, const Emitter* e);
  std::string ctype(DType t, const SourceLoc& loc) const { return ctype(t, loc, this); }
  const Target& target() const { return target_; }
  /// Binds the emitter's own row-loop variable `v` (C++ name `name`) over [0, rows).
  void bind_row(const Var& v, const std::string& name, const Expr& rows) {
    vars_[v.node()] = name;
    ivs_[v.node()] = {0, std::max<int64_t>(arith::bound(rows, ivs_).hi - 1, 0)};
  }

  void emit_copy(const TileOpNode& n);  // emit_move.cpp
  void emit_dcci(const TileOpNode& n);  // emit_move.cpp: T.dcci (DataCacheCleanAndInvalid)
  void emit_copy_dynamic_width(const TileOpNode& n, const Operand& src, const Operand& dst,
                               bool in);     // emit_move.cpp: GM <-> UB rows of run-time length
  bool emit_vector(const TileOpNode& n);     // emit_vector.cpp; false: not a vector op
  bool emit_cube(const TileOpNode& n);       // emit_cube.cpp; false: not a cube op
  bool emit_sort(const TileOpNode& n);       // emit_sort.cpp: gather, sorts, indices, atomic add
  void emit_full_sort(const TileOpNode& n);  // emit_sort.cpp: topk / sort (Sort32 + MrgSort)
  void emit_mrgsort(const SourceLoc& loc, const std::string& dst,
                    const std::vector<std::string>& queues, const std::vector<int64_t>& lens);

  bool emit_reduce(const TileOpNode& n);       // emit_reduce.cpp; false: not a reduction
  bool emit_progression(const TileOpNode& n);  // emit_progression.cpp
  /// One GM <-> UB row of a clipped (dynamic) length; false: not that form (emit_clipped.cpp).
  bool emit_clipped_row(const TileOpNode& n, const Operand& gm, const Operand& ub, bool in);
  /// emit_activation.cpp: activations, bitwise ops, shifts, transpose; false: none of those.
  bool emit_activation(const TileOpNode& n);
  /// A scalar operand that reads UB/GM (emit_activation.cpp): a barrier over every pipe, then
  /// the value read into a local by GetValue; returns the local's name (as dtype `t`).
  std::string memory_scalar(const Expr& e, DType t, const SourceLoc& loc);
  /// Bytes of UB above the highest planned buffer (what a scratch can take).
  int64_t ub_free() const { return target_.cap(MemScope::UB) - (ub_end_ + 31) / 32 * 32; }

 private:
  void stmt(const Stmt& s);
  void tile_op(const TileOpNode& n);
  void sync(const SyncNode& n);
  void kernel(const KernelNode& k);
  void declare_buffers_and_params();
  void host_stub();
  std::string var(const Var& v);
  /// Names a variable at its binding site (a loop or a Let) in the innermost C++ block; the name
  /// is free again when that block closes (see frames_).
  std::string bind(const Var& v);
  void pop_frame();
  bool fits(const BinaryNode& b) const;

  const PrimFunc& f_;
  const Target& target_;
  EmitOptions opt_;
  std::string out_;
  int indent_ = 0;
  std::set<std::string> used_;
  std::map<const VarNode*, std::string> vars_;
  /// The names bound in each open C++ block (outermost first). A name is released when its block
  /// closes, so a variable's C++ name depends only on the names bound around it, not on whether
  /// two binding sites share one Var object: a kernel compiled fresh (where splitting into cube
  /// and vector code binds one Var in both scopes) and the same kernel reloaded from the JIT disk
  /// cache (where the parser makes a Var per binding site) emit the same text.
  struct Bound {
    const VarNode* var = nullptr;  // null: a name only (a loop's end)
    std::string name;
    std::optional<std::string> previous;  // the var's name before this binding
  };
  std::vector<std::vector<Bound>> frames_{1};
  std::map<const BufferNode*, std::string> bufs_;
  std::vector<Buffer> workspaces_;  // GM buffers the kernel allocates: kernel arguments
  std::set<MemScope> scopes_;       // on-chip memories the kernel uses (a TBuf each)
  int64_t ub_end_ = 0;              // end of the highest planned UB buffer
  std::map<DType, std::string> scratch_;
  int64_t scratch_bytes_ = 0;
  std::string scratch_decls_;
  size_t scratch_pos_ = 0;  // where in out_ the scratch declarations go
  bool in_scope_ = false;
  arith::VarIntervals ivs_;  // what each bound variable ranges over (exact C++ ints)
};

}  // namespace tl::ascendc
