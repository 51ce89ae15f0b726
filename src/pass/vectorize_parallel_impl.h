// Internal to vectorize_parallel (src/pass/vectorize_parallel*.cpp), not a public header: the
// Vectorizer class that maps one T.Parallel element loop onto vector tile ops, and the helpers its
// files share. The pass is split along its stages: vectorize_parallel.cpp (the pass driver: which
// loops are vectorised, GM element loops, the scalar fallback), vectorize_parallel_loop.cpp (the
// analysis of the element loop: its stores, accesses as affine regions and the checks that make
// the vector code exact), vectorize_parallel_values.cpp (temporaries, conversions, the expression
// walk and the stores) and vectorize_parallel_ops.cpp (the mapping of arithmetic, comparisons,
// selects and calls onto vector ops). vectorize_parallel.cpp's top comment states the contract.
#pragma once

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "developer.h"
#include "tl/arith.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/pass.h"
#include "tl/printer.h"

namespace tl {
namespace vectorize_detail {

/// A loop the vectoriser cannot handle: why, for the tl::Error (or the fallback's remark).
struct Reject {
  std::string reason;
};
[[noreturn]] inline void reject(std::string reason) {
  throw Reject{std::move(reason)};
}

struct LoopDim {
  Var var;
  Expr min, extent;
};

inline bool mentions_any(const Expr& e, const std::unordered_set<const VarNode*>& vars) {
  bool hit = false;
  struct V : IRVisitor {
    const std::unordered_set<const VarNode*>& vars;
    bool& hit;
    V(const std::unordered_set<const VarNode*>& v, bool& h) : vars(v), hit(h) {}
    void visit_(const VarNode* n) override {
      if (vars.count(n)) hit = true;
    }
  } v(vars, hit);
  v.visit(e);
  return hit;
}

/// `e` as coeff * loop_var + offset with a loop-invariant offset (var = -1: no loop variable).
struct Affine {
  int var = -1;
  int64_t coeff = 0;
  Expr offset;
};

inline std::string dt(DType t) {
  return std::string(dtype_name(t));
}

/// An integer immediate, int32 when it fits (so messages print `16`, not `T.int64(16)`).
inline Expr int_imm(int64_t v) {
  return v >= INT32_MIN && v <= INT32_MAX ? Expr(static_cast<int>(v)) : Expr(v);
}

/// A remark to the caller's sink, or to stderr: a fallback is never silent.
inline void emit_remark(const VectorizeOptions& opt, const SourceLoc& loc, const std::string& msg) {
  dev::remark(opt.remark, "vectorize_parallel", loc, msg);
}

/// True when every value of dtype `from` is exactly a value of dtype `to`.
inline bool exact_conversion(DType from, DType to) {
  if (from == to) return true;
  if (is_float(from) && is_float(to)) return to == DType::Float32 && from != DType::Float64;
  if (is_int(from) && is_float(to)) {
    int bits = dtype_bits(from);
    if (to == DType::Float32) return bits <= 16;
    if (to == DType::Float16) return bits <= 8;
  }
  return false;
}

class Vectorizer {
 public:
  Vectorizer(const Target& t, const VectorizeOptions& opt, std::unordered_set<std::string>& taken,
             const std::unordered_set<const BufferNode*>& aliased)
      : target_(t), opt_(opt), taken_(taken), aliased_(aliased) {}

  /// The statements replacing the Parallel nest `loop` (dims outermost first, body = the
  /// innermost body). Throws Reject.
  Stmt run(const std::vector<LoopDim>& dims, const Stmt& body, const SourceLoc& loc);

 private:
  // ---- values and accesses (vectorize_parallel_loop.cpp) ----------------------------------------

  enum class Kind { Tile, Scalar, Row, Col, Mask };
  struct Val {
    Kind kind = Kind::Tile;
    BufferRegion region;  // Tile, Row, Col, Mask
    Expr scalar;          // Scalar: a loop-invariant expression
    DType dtype = DType::Float32;
    int temp = -1;  // index into temps_ when the value lives in a temporary
    // Mask only: comparison that produced it (for messages)
  };
  struct Temp {
    Buffer buf;
    bool busy = false;
    int pending = 0;  // reads still to come (a shared subexpression is read once per use)
  };
  static const char* stmt_kind_word(const Stmt& s);
  bool invariant(const Expr& e) const { return !mentions_any(e, loop_vars_); }
  int var_index(const VarNode* v) const {
    for (size_t k = 0; k < dims_.size(); ++k)
      if (dims_[k].var.node() == v) return static_cast<int>(k);
    return -1;
  }
  Affine affine(const Expr& e) const;
  static Expr make_zero(DType t) { return arith::make_int(is_int(t) ? t : DType::Int32, 0); }
  std::vector<Affine> access(const Buffer& b, const std::vector<Expr>& indices,
                             const char* what) const;
  static size_t position_of(const std::vector<Affine>& a, int var);
  static std::string access_str(const Buffer& b, const std::vector<Expr>& indices);
  BufferRegion region_from(const Buffer& b, const std::vector<Affine>& acc) const;
  BufferRegion region_of(const Buffer& b, const std::vector<Expr>& indices, const char* what);

  // ---- checks (vectorize_parallel_loop.cpp) -----------------------------------------------------

  void check_ub(const Buffer& b, const std::vector<Expr>& indices, const char* what) const;
  void check_store(const StoreNode& st);
  static bool same_indices(const std::vector<Expr>& a, const std::vector<Expr>& b);
  bool reads_element(const Expr& e, const Buffer& b, const std::vector<Expr>& idx) const;
  void check_no_cross_iteration(const Expr& value, const StoreNode* st);
  bool invariant_indices(const std::vector<Expr>& idx) const;
  void check_alignment(const BufferRegion& r, const std::string& what) const;

  // ---- temporaries (vectorize_parallel_values.cpp) ----------------------------------------------

  std::vector<int64_t> const_extents(size_t count) const;
  std::vector<int64_t> extent_bounds(size_t count) const;
  std::string fresh_name();
  Val temp(DType dtype, const std::vector<int64_t>& shape, Kind kind);
  BufferRegion temp_region(const Buffer& b, Kind kind) const;
  Val tile_temp(DType t) { return temp(t, extent_bounds(dims_.size()), Kind::Tile); }
  Val row_temp(DType t) { return temp(t, extent_bounds(dims_.size() - 1), Kind::Row); }
  Val mask_temp();
  void release(const Val& v);
  Val dest(DType t, const BufferRegion* into);
  void emit(const OpDef& op, std::vector<TileArg> args, std::vector<Attr> attrs = {});
  static const OpDef& binop_op(BinOp op, RowMap rows = RowMap::Elementwise);

  // ---- conversions (vectorize_parallel_values.cpp) ----------------------------------------------

  std::vector<std::pair<DType, std::string>> cast_steps(DType from, DType to) const;
  static std::vector<std::pair<DType, std::string>> concat(
      std::vector<std::pair<DType, std::string>> a,
      const std::vector<std::pair<DType, std::string>>& b);
  Val to_tile(Val v);
  void check_fill_dtype(DType t) const;
  Val convert(Val v, DType to, bool rounding, const BufferRegion* into = nullptr);
  Val scalar_operand(const Val& v, DType t);

  // ---- expressions (vectorize_parallel_values.cpp) ----------------------------------------------

  Val gen_load(const LoadNode& n);
  std::string used_names(const std::vector<bool>& used) const;
  Val gen(const Expr& e, const BufferRegion* into = nullptr);
  void count_uses(const Expr& e);
  Val gen_node(const Expr& e, const BufferRegion* into);
  Val gen_loop_var(const VarNode& v);
  static std::string op_word(BinOp op) { return std::string(binop_name(op)); }
  bool may_read(const Expr& e, const Buffer& b) const;
  static DType compute_dtype(DType t, std::initializer_list<const Val*> operands = {});
  static bool mixed(DType t, std::initializer_list<const Val*> operands);
  Val finish(Val r, DType node_dtype, const BufferRegion* into);

  // ---- operators onto vector ops (vectorize_parallel_ops.cpp) -----------------------------------

  Val gen_binary(const BinaryNode& n, const Expr& self, const BufferRegion* into);
  std::optional<int64_t> padded_compare_count(DType c) const;
  Val padded_min_max(BinOp op, Val a, Val b, DType c, int64_t padded, DType node_dtype,
                     const BufferRegion* out, const BufferRegion* into);
  Val select_min_max(Val a, Val b, const Val& m, DType c, DType node_dtype, const BufferRegion* out,
                     const BufferRegion* into);
  void check_compare_count(DType c) const;
  static std::string mirrored(const std::string& mode);
  Val gen_compare(const BinaryNode& n);
  std::optional<Val> loop_var_against_invariant(const BinaryNode& n, std::string mode);
  Val int32_ordering(Val a, Val b, const std::string& mode);
  Val gen_invariant_select(const SelectNode& n, const BufferRegion* into);
  Val gen_select(const SelectNode& n, const BufferRegion* into);
  void accept_subnormal_flush(const OpDef& def, const std::string& what, DType t);
  Val gen_call(const CallNode& n, const BufferRegion* into);

  // ---- stores (vectorize_parallel_values.cpp) ---------------------------------------------------

  void emit_store(const StoreNode& st, const BufferRegion& d);
  static Expr share_common_subexpressions(const Expr& e);
  void write_to(const Expr& e, const BufferRegion& d);
  void remark(const std::string& msg) const { emit_remark(opt_, loc_, msg); }

  const Target& target_;
  const VectorizeOptions& opt_;
  std::unordered_set<std::string>& taken_;
  const std::unordered_set<const BufferNode*>& aliased_;  // views and their bases, pinned buffers
  std::vector<LoopDim> dims_;
  std::unordered_set<const VarNode*> loop_vars_;
  SourceLoc loc_;
  std::vector<Stmt> allocs_, ops_;
  std::vector<Temp> temps_;
  std::vector<std::pair<Buffer, std::vector<Expr>>> writes_;
  std::vector<int64_t> bounds_;  // extent_bounds()
  std::unordered_map<const ExprNode*, int> uses_;
  std::unordered_map<const ExprNode*, Val> memo_;
  int name_counter_ = 0;
};

}  // namespace vectorize_detail
}  // namespace tl
