// The arithmetic of the Tile IR in one place (the dtype rules of binary operators and `wrap`,
// which BinaryNode::make and IntImmNode::make apply, are declared in tl/ir.h): constant
// folding, the one evaluator of scalar expressions (the DSL's folding, `simplify`, the
// launcher and the virtual NPU all use it, so they cannot disagree), interval bounds and
// modular sets of integer expressions, a symbolic overlap test for buffer regions, and
// substitution / cloning of IR with fresh binders. The rules implemented are those stated at
// the top of tl/ir.h; this header adds the details ir.h leaves open (marked "Detail").
//
// Integer values are held as int64_t: every integer dtype's values are exact, except uint64
// values of 2^63 and above, which are held as their two's-complement bit pattern (negative).
// Detail: integer operators work on the held values, so on uint64 such values compare, divide,
// shift right and convert to float as the negative numbers they are held as.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "tl/ir.h"

namespace tl::arith {

// ---- Values and the scalar semantics ---------------------------------------------------------

/// A scalar value: integers and bools in `i` (bools are 0/1), floats in `f`. Which one is
/// meant is `is_float`, not the dtype of the expression (an integer operand of a float
/// operator stays an integer value until the operator converts it).
struct Value {
  bool is_float = false;
  int64_t i = 0;
  double f = 0;
  static Value of_int(int64_t v) { return {false, v, 0}; }
  static Value of_float(double v) { return {true, 0, v}; }
  double as_double() const { return is_float ? f : static_cast<double>(i); }
  /// Integer view: a float truncates toward zero (NaN is 0, out-of-range values saturate).
  int64_t as_int() const;
};

/// `v` rounded to float dtype `t` (nearest-even; overflow to inf), as after storing it into a
/// `t` element and reading it back. Non-float dtypes and float64 return v unchanged.
double round_float(DType t, double v);
/// The smallest and largest held value of integer or bool dtype `t` (uint64: all of int64).
int64_t dtype_min(DType t);
int64_t dtype_max(DType t);

/// `x op y` on integer values, the result wrapped to `t` (the node's dtype). Div, TruncDiv and
/// TruncMod round toward zero, FloorDiv and FloorMod toward negative infinity; INT64_MIN / -1
/// wraps to INT64_MIN and any x % -1 is 0. Detail: shift amounts are taken modulo 64, `>>`
/// is arithmetic on the held value. Comparisons and and/or give 0 or 1. Returns nullopt for a
/// division or modulo by zero (the evaluator reports it). Never host UB.
std::optional<int64_t> int_binary(BinOp op, DType t, int64_t x, int64_t y);
/// `x op y` on floats, the result rounded to `t`: Div and TruncDiv are IEEE division, FloorDiv
/// floor(x / y), FloorMod x - floor(x / y) * y, TruncMod fmod; comparisons and and/or give
/// 0 or 1 (in `i`). nullopt for the bitwise operators and shifts, which floats do not have.
std::optional<Value> float_binary(BinOp op, DType t, double x, double y);
/// The cast of `v` to `t`: to a float dtype, rounded once from the double value; to bool,
/// v != 0 (NaN is true); a float to an integer truncates toward zero (NaN is 0, beyond
/// +-9.2e18 saturates), then wraps to `t`; an integer to an integer wraps.
Value cast_value(DType t, const Value& v);
/// The scalar intrinsic `name` (a row of include/tl/intrinsics.def: find_intrinsic in
/// tl/ir_ops.h) computed in double, the result rounded to `t` for a float dtype, otherwise
/// truncated toward zero (NaN is 0, saturating) and wrapped to `t`. nullopt for an unknown name.
std::optional<Value> intrinsic(const std::string& name, DType t, double x, double y = 0);

// ---- The evaluator --------------------------------------------------------------------------

/// Evaluates scalar expressions with the IR's semantics. Variables and buffer loads come from
/// the hooks, which a user overrides (the virtual NPU reads its registers and memories, the
/// launcher its bound sizes); errors go to `fail`, which must not return.
///
/// Semantics, beyond the operator rules above: immediates evaluate to their value wrapped
/// (integers) or rounded (floats) to their dtype; an operator is a float operator when either
/// operand's dtype or value is a float, and then computes in double from the operands' double
/// values and rounds to the node's dtype; both Select branches are evaluated (left to right:
/// cond, t, f) and the chosen value is cast to the Select's dtype when its branch's dtype
/// differs; Not gives 1 for a zero value; a Call evaluates its arguments as doubles. Errors:
/// division by zero ("division by zero in <expr>"), a bitwise operator on floats, a string
/// literal, an unknown intrinsic or a wrong number of intrinsic arguments, and whatever the
/// hooks report.
class Evaluator {
 public:
  virtual ~Evaluator() = default;
  Value eval(const Expr& e);
  int64_t eval_int(const Expr& e) { return eval(e).as_int(); }
  double eval_float(const Expr& e) { return eval(e).as_double(); }
  /// Reports an evaluation error and must not return; the default throws tl::Error(msg).
  [[noreturn]] virtual void fail(const std::string& msg) const;

 protected:
  /// fail(msg), for callers that need the compiler to see that it does not return.
  [[noreturn]] void raise(const std::string& msg) const;
  /// The value of a variable; the default fails with "unbound variable <name>".
  virtual Value var(const VarNode& v);
  /// The value a load reads; the default fails with "cannot read <buffer> here".
  virtual Value load(const LoadNode& n);
};

/// Evaluates `e` with variables taken from `vars` (others are an error). Throws tl::Error.
Value evaluate(const Expr& e, const std::unordered_map<const VarNode*, Value>& vars = {});

// ---- Constant folding -----------------------------------------------------------------------
// The folders fold integer and bool immediates only (float arithmetic is left to run time:
// its rounding is per dtype and per operation) and return an undefined Expr when they do not
// fold. A folded result is exactly what the evaluator gives for the unfolded node, with the
// unfolded node's dtype.

/// An immediate of integer or bool dtype `t` with value wrap(t, v).
Expr make_int(DType t, int64_t v);
/// An immediate of dtype `t` holding `v` (integers wrapped, floats as given).
Expr make_const(DType t, const Value& v);
/// `a op b` for two integer/bool immediates, in binary_dtype(op, ...). Undefined when either
/// side is not one, or for a division or modulo by zero (a run-time error stays in the IR).
Expr fold_binary(BinOp op, const Expr& a, const Expr& b);
/// `cast(t, v)` for an integer/bool immediate v and an integer/bool dtype t; else undefined.
Expr fold_cast(DType t, const Expr& v);
/// `not a` for an integer/bool immediate a; else undefined.
Expr fold_not(const Expr& a);
/// True when evaluating `e` can fail at run time: it contains a load (bounds), a call, a
/// string, or an integer division or modulo whose divisor is not a non-zero immediate. Only
/// expressions that cannot fail may be dropped by a rewrite (`x * 0` -> 0).
bool can_fail(const Expr& e);

// ---- Interval bounds ------------------------------------------------------------------------

/// A closed interval of held integer values, lo <= hi.
struct Interval {
  int64_t lo, hi;
  static Interval point(int64_t v) { return {v, v}; }
  /// [dtype_min(t), dtype_max(t)]; the whole int64 range for float dtypes.
  static Interval of_dtype(DType t);
  bool contains(int64_t v) const { return lo <= v && v <= hi; }
  bool is_point() const { return lo == hi; }
};
/// Known intervals of variables. A variable that is not listed ranges over its dtype.
using VarIntervals = std::unordered_map<const VarNode*, Interval>;

/// An interval containing every value `e` can evaluate to when each variable lies in its
/// interval (intersected with its dtype's range) and the evaluation does not fail. Sound
/// under wrap-around: an operation whose exact result may leave the node's dtype gives the
/// dtype's full range. Loads, calls and float-typed expressions give their dtype's range.
/// Not necessarily tight (correlations between operands are ignored).
Interval bound(const Expr& e, const VarIntervals& vars = {});

// ---- Modular sets ---------------------------------------------------------------------------

/// Every value v of an expression satisfies v = coeff * k + base for some integer k:
/// coeff 0 means the value is exactly `base`; coeff 1 says nothing. Normalised so that
/// 0 <= base < coeff when coeff > 0. Example: `8 * i + 4` -> {8, 4}.
struct ModularSet {
  int64_t coeff = 1, base = 0;
  bool contains(int64_t v) const;
};
using VarModular = std::unordered_map<const VarNode*, ModularSet>;

/// The modular set of integer expression `e`, given what is known of variables (others:
/// {1, 0}) and their intervals (used to prove that an operation does not wrap; an operation
/// that may wrap keeps only the power-of-two part of its coefficient, which wrapping
/// preserves). Sound for every evaluation that does not fail.
ModularSet modular_set(const Expr& e, const VarModular& mods = {}, const VarIntervals& vars = {});

// ---- Region overlap ---------------------------------------------------------------------------

enum class Overlap { No, Yes, Maybe };

/// Whether two regions of the same buffer share an element, both evaluated with the same
/// variable values (each variable in its interval, see bound()). No: for no such values;
/// Yes: for all of them; Maybe: it depends, or the analysis cannot tell. A region is the
/// product of its dimensions' [min, min + extent) (an extent <= 0 makes it empty). Exact when
/// in every dimension the difference of the two mins is a constant once both are written as
/// sums of coeff * atom + const (atoms: variables, and subexpressions that are not affine or
/// may wrap) and both extents are constants; interval-based otherwise. Both regions must have
/// the same buffer, the same rank and defined extents (internal error otherwise).
Overlap regions_overlap(const BufferRegion& a, const BufferRegion& b,
                        const VarIntervals& vars = {});

/// a - b when it is the same constant for every value of the variables (both written as sums
/// of coeff * atom + const, as regions_overlap does, and every atom cancels); nullopt otherwise.
/// Integer + - * are taken as exact (no wrap): meant for index expressions of valid kernels.
std::optional<int64_t> constant_difference(const Expr& a, const Expr& b,
                                           const VarIntervals& vars = {});

// ---- Substitution and cloning ---------------------------------------------------------------

using VarMap = std::unordered_map<const VarNode*, Expr>;

/// `e` with every occurrence of a variable in `vmap` replaced by its expression. Rebuilt nodes
/// are not folded (run simplify for that); untouched subtrees are shared.
Expr substitute(const Expr& e, const VarMap& vmap);
/// The same on a statement (IRMutator-based: every expression the mutator visits). A buffer
/// declared by an Allocate inside `s` whose shape or strides change gets a new Buffer node,
/// and its uses in `s` follow; other buffers keep their identity and shapes. Variables bound
/// inside `s` must not be keys of `vmap` (internal error).
Stmt substitute(const Stmt& s, const VarMap& vmap);

/// Every name `f` uses: parameters, dynamic symbols, variables and buffers bound in its body.
std::unordered_set<std::string> names_in(const PrimFunc& f);
/// A copy of `s` with fresh binders: new Var nodes for every For, Let and Kernel cid/vid and a
/// new Buffer node for every Allocate, with every use inside the copy rewritten. Each new
/// binder's name differs from every name in `taken` (a taken `x` becomes `x_1`, `x_2`, ...;
/// a trailing `_<n>` is replaced rather than extended) and is added to `taken`, so the copy
/// can sit next to the original in one function. Free variables and buffers are shared.
Stmt clone_fresh(const Stmt& s, std::unordered_set<std::string>& taken);
/// A copy of `f` with fresh binders in its body (parameters and dynamic symbols are kept).
/// Binders keep their names unless a name is already used by a parameter, a dynamic symbol or
/// an earlier binder, so the printed copy never shows two binders with one name. The copy is
/// structurally equal to `f`.
PrimFunc clone_fresh(const PrimFunc& f);

}  // namespace tl::arith

namespace tl {

// ---- simplify (a pass of the pipeline, tl/pass.h; the verifier uses it on expressions) ----

/// simplify: folds integer constants (4 * 128 -> 512, wrapping to the node's dtype exactly as
/// the IR semantics say; floordiv/floormod round toward -inf; division by a constant zero is
/// left for run time) and removes trivial identities on integer expressions: x + 0, x - 0,
/// x * 1, x // 1, x * 0 and x % 1 (the last two only when x cannot fail at run time), nested
/// constant adds and multiplies ((x + 3) + 4 -> x + 7), constants moved right (4 + x -> x + 4),
/// constant comparisons, logic and selects, casts of integer constants. Only rewrites that
/// keep the dtype of the node. Float arithmetic is never touched. Returns `f` itself when
/// nothing changed. Output invariant: the expert spec.
PrimFunc simplify(const PrimFunc& f);
Expr simplify(const Expr& e);

}  // namespace tl
