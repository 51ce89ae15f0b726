// Expression operators for building IR by hand and from the DSL. Integer immediates fold
// (`4 * 128` becomes 512, with the value and dtype the unfolded node evaluates to: tl/arith.h)
// and trivial identities simplify (x + 0, x * 1), so printed kernels stay readable. Note the
// TileLang semantics: `/` and `%` on integers are floordiv/floormod.
// `==`, `<`, ... build comparison nodes; use Expr::same_as or structural_equal to compare IR.
#pragma once

#include <string_view>
#include <vector>

#include "tl/ir.h"

namespace tl {

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);  // floordiv on integers, IEEE division on floats
Expr operator%(Expr a, Expr b);  // floormod on integers
/// Negation. A float is negated exactly (its sign flipped: -(+0.0) is -0.0), as `a * -1` in
/// a's dtype, which prints as `-a`; an integer as `0 - a` (wrapping: -INT_MIN is INT_MIN).
Expr operator-(Expr a);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);

Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr truncdiv(Expr a, Expr b);
Expr truncmod(Expr a, Expr b);
Expr ceildiv(Expr a, Expr b);  // floordiv(a + b - 1, b)
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr select(Expr cond, Expr t, Expr f);
Expr cast(DType t, Expr v);  // an integer constant cast to an integer dtype folds (wrapped)
Expr bitwise_and(Expr a, Expr b);
Expr bitwise_or(Expr a, Expr b);
Expr bitwise_xor(Expr a, Expr b);
Expr shift_left(Expr a, Expr b);
Expr shift_right(Expr a, Expr b);

/// A typed immediate: `imm(f16, 1.5)`, `imm(i64, 7)`.
Expr imm(DType t, double v);
/// +inf / -inf / nan of a float dtype.
Expr inf(DType t);
Expr neg_inf(DType t);

// ---- Scalar intrinsics: the rows of include/tl/intrinsics.def -------------------------------

/// A scalar intrinsic a Call node may name (T.exp, T.pow, ...): one per row of the table.
enum class Intrinsic : uint8_t {
#define TL_INTRINSIC(Id, ...) Id,
#include "tl/intrinsics.def"
};
/// The argument dtypes an intrinsic takes: float only, or any numeric dtype.
enum class IntrinsicDTypes : uint8_t { Float, Numeric };
/// On which dtypes the intrinsic's vector op gives the scalar result bit for bit.
enum class IntrinsicExact : uint8_t { Always, BFloat16, Never };

/// One row of include/tl/intrinsics.def (its vector-op column is the op module's:
/// op_for_intrinsic in tl/op.h).
struct IntrinsicDef {
  Intrinsic id;
  std::string_view name;  // as written after "T."
  int arity;              // 1 or 2
  IntrinsicDTypes dtypes;
  /// The value in double (y unused for arity 1), before the rounding to the call's dtype.
  double (*eval)(double x, double y);
  IntrinsicExact exact;
  /// Whether the vector op gives this result bit for bit on dtype `t`.
  bool exact_on(DType t) const {
    return exact == IntrinsicExact::Always ||
           (exact == IntrinsicExact::BFloat16 && t == DType::BFloat16);
  }
};
/// Every intrinsic, in table order.
const std::vector<IntrinsicDef>& intrinsics();
/// The intrinsic called `name`; nullptr if none is.
const IntrinsicDef* find_intrinsic(std::string_view name);
const IntrinsicDef& intrinsic_def(Intrinsic id);
/// A Call of `id` on `args` (as many as its arity), of the first argument's dtype.
Expr call(Intrinsic id, std::vector<Expr> args);

// Builders of the intrinsic calls, dtype of the argument.
Expr exp(Expr x);
Expr log(Expr x);
Expr sqrt(Expr x);
Expr rsqrt(Expr x);
Expr abs(Expr x);
Expr sigmoid(Expr x);
Expr pow(Expr x, Expr y);

/// Compile-time ceildiv for C++ ints (tiling arithmetic in kernel generators). Not
/// (a + b - 1) / b, which overflows for a near INT_MAX (a generator's M = 2^31 - 1).
constexpr int ceildiv(int a, int b) {
  return a / b + (a % b != 0 && (a < 0) == (b < 0));
}

}  // namespace tl
