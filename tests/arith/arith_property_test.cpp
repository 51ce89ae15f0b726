// Property tests of tl/arith.h on random integer expressions: folding equals evaluation (the
// DSL's construction-time folding, simplify and the evaluator on the raw tree agree on value,
// dtype and failure), interval bounds contain every evaluated value, modular sets hold for
// every evaluated value, and the region-overlap test never contradicts sampled points.
// TL_ARITH_ITERS sets the number of random expressions (default 100,000; the overlap test
// runs a fifth as many region pairs). A failure prints the expression and the variable values.
#include <gtest/gtest.h>

#include <random>

#include "tl/arith.h"
#include "tl/ir_ops.h"
#include "tl/pass.h"
#include "tl/printer.h"

namespace tl {
namespace {

using arith::Interval;
using arith::Value;
using i128 = __int128;

int iterations() {
  std::string v = env_value("TL_ARITH_ITERS");
  return v.empty() ? 100'000 : std::stoi(v);
}

constexpr DType kIntTypes[] = {DType::Bool,   DType::Int8,   DType::Int16,
                               DType::Int32,  DType::Int64,  DType::UInt8,
                               DType::UInt16, DType::UInt32, DType::UInt64};
constexpr BinOp kOps[] = {
    BinOp::Add,      BinOp::Sub,      BinOp::Mul,    BinOp::Div, BinOp::FloorDiv, BinOp::FloorMod,
    BinOp::TruncDiv, BinOp::TruncMod, BinOp::Min,    BinOp::Max, BinOp::EQ,       BinOp::NE,
    BinOp::LT,       BinOp::LE,       BinOp::GT,     BinOp::GE,  BinOp::And,      BinOp::Or,
    BinOp::BitAnd,   BinOp::BitOr,    BinOp::BitXor, BinOp::Shl, BinOp::Shr};

/// The DSL operator for `op` (the DSL has no integer `Div`; truncdiv has its value and dtype).
Expr dsl_binary(BinOp op, Expr a, Expr b) {
  switch (op) {
    case BinOp::Add:
      return a + b;
    case BinOp::Sub:
      return a - b;
    case BinOp::Mul:
      return a * b;
    case BinOp::Div:
      return truncdiv(a, b);
    case BinOp::FloorDiv:
      return floordiv(a, b);
    case BinOp::FloorMod:
      return floormod(a, b);
    case BinOp::TruncDiv:
      return truncdiv(a, b);
    case BinOp::TruncMod:
      return truncmod(a, b);
    case BinOp::Min:
      return min(a, b);
    case BinOp::Max:
      return max(a, b);
    case BinOp::EQ:
      return a == b;
    case BinOp::NE:
      return a != b;
    case BinOp::LT:
      return a < b;
    case BinOp::LE:
      return a <= b;
    case BinOp::GT:
      return a > b;
    case BinOp::GE:
      return a >= b;
    case BinOp::And:
      return a && b;
    case BinOp::Or:
      return a || b;
    case BinOp::BitAnd:
      return bitwise_and(a, b);
    case BinOp::BitOr:
      return bitwise_or(a, b);
    case BinOp::BitXor:
      return bitwise_xor(a, b);
    case BinOp::Shl:
      return shift_left(a, b);
    case BinOp::Shr:
      return shift_right(a, b);
  }
  return {};
}

class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  int64_t below(int64_t n) { return static_cast<int64_t>(rng_() % static_cast<uint64_t>(n)); }
  bool chance(int percent) { return below(100) < percent; }
  /// Uniform in [lo, hi].
  int64_t in(int64_t lo, int64_t hi) {
    uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    uint64_t r = span == UINT64_MAX ? rng_() : rng_() % (span + 1);
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + r);
  }
  /// A value of dtype t, biased to the interesting ones: 0, +-1, small values, the extremes.
  int64_t value_of(DType t) {
    int64_t lo = arith::dtype_min(t), hi = arith::dtype_max(t);
    switch (below(6)) {
      case 0:
        return arith::wrap(t, below(3) - 1);
      case 1:
        return arith::wrap(t, below(33) - 16);
      case 2:
        return chance(50) ? lo : hi;
      case 3:
        return chance(50) ? arith::wrap(t, lo + below(4)) : arith::wrap(t, hi - below(4));
      default:
        return in(lo, hi);
    }
  }
  DType int_type() { return kIntTypes[below(std::size(kIntTypes))]; }

 private:
  std::mt19937_64 rng_;
};

/// Random variables with intervals (and sometimes modular facts) and valuations inside them.
struct Vars {
  std::vector<Var> vars;
  arith::VarIntervals intervals;
  arith::VarModular mods;

  void reset(Random& r) {
    vars.clear();
    intervals.clear();
    mods.clear();
    int n = 1 + static_cast<int>(r.below(4));
    for (int i = 0; i < n; ++i) {
      DType t = r.int_type();
      Var v("v" + std::to_string(i), t);
      int64_t a = r.value_of(t), b = r.value_of(t);
      if (r.chance(40))
        b = arith::wrap(t, static_cast<int64_t>(static_cast<uint64_t>(a) + r.below(40)));  // narrow
      Interval iv{std::min(a, b), std::max(a, b)};
      if (r.chance(15)) iv = Interval::of_dtype(t);
      intervals[v.node()] = iv;
      int64_t coeff = 2 + r.below(15);
      if (!is_bool(t) && r.chance(30) && static_cast<i128>(iv.hi) - iv.lo >= coeff)
        mods[v.node()] = {coeff, r.below(coeff)};
      vars.push_back(v);
    }
  }

  /// Values inside every variable's interval and modular set.
  std::unordered_map<const VarNode*, Value> sample(Random& r) const {
    std::unordered_map<const VarNode*, Value> env;
    for (const auto& v : vars) {
      Interval iv = intervals.at(v.node());
      int64_t x = r.chance(20) ? (r.chance(50) ? iv.lo : iv.hi) : r.in(iv.lo, iv.hi);
      if (auto it = mods.find(v.node()); it != mods.end()) {
        i128 c = it->second.coeff, off = ((i128(x) - it->second.base) % c + c) % c;
        i128 y = i128(x) - off;
        if (y < iv.lo) y += c;
        x = static_cast<int64_t>(y);
      }
      env[v.node()] = Value::of_int(x);
    }
    return env;
  }

  std::string show(const std::unordered_map<const VarNode*, Value>& env) const {
    std::string s;
    for (const auto& v : vars) {
      Interval iv = intervals.at(v.node());
      s += fmt::format("{}: {} = {} in [{}, {}]", v.name(), dtype_name(v.dtype()),
                       env.at(v.node()).i, iv.lo, iv.hi);
      if (auto it = mods.find(v.node()); it != mods.end())
        s += fmt::format(" = {}k + {}", it->second.coeff, it->second.base);
      s += "; ";
    }
    return s;
  }
};

/// The same random expression built raw (BinaryNode::make etc., no folding) and with the DSL
/// operators (folded at construction).
struct Built {
  Expr raw, dsl;
};

Built random_expr(Random& r, const Vars& vs, int depth) {
  if (depth == 0 || r.chance(25)) {
    if (r.chance(55)) {
      const Var& v = vs.vars[r.below(vs.vars.size())];
      return {v, v};
    }
    DType t = r.chance(50) ? DType::Int32 : r.int_type();
    Expr k = arith::make_int(t, r.value_of(t));
    return {k, k};
  }
  switch (r.below(10)) {
    case 0: {
      Built a = random_expr(r, vs, depth - 1);
      return {NotNode::make(a.raw), !a.dsl};
    }
    case 1: {
      Built c = random_expr(r, vs, depth - 1), t = random_expr(r, vs, depth - 1),
            f = random_expr(r, vs, depth - 1);
      return {SelectNode::make(c.raw, t.raw, f.raw), select(c.dsl, t.dsl, f.dsl)};
    }
    case 2: {
      DType t = r.int_type();
      Built a = random_expr(r, vs, depth - 1);
      return {CastNode::make(t, a.raw), cast(t, a.dsl)};
    }
    default: {
      BinOp op = kOps[r.below(std::size(kOps))];
      Built a = random_expr(r, vs, depth - 1), b = random_expr(r, vs, depth - 1);
      return {BinaryNode::make(op, a.raw, b.raw), dsl_binary(op, a.dsl, b.dsl)};
    }
  }
}

/// The value of `e`, or nullopt when evaluation fails (division by zero).
std::optional<int64_t> eval_or_fail(const Expr& e,
                                    const std::unordered_map<const VarNode*, Value>& env) {
  try {
    Value v = arith::evaluate(e, env);
    EXPECT_FALSE(v.is_float) << print(e);
    return v.i;
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("division by zero"), std::string::npos) << err.what();
    return std::nullopt;
  }
}

std::string show(const std::optional<int64_t>& v) {
  return v ? std::to_string(*v) : "error";
}

TEST(ArithProperty, FoldingBoundsAndModularSetsAgreeWithEvaluation) {
  Random r(20240611);
  Vars vs;
  const int n = iterations();
  int failures = 0, evaluated = 0, errors = 0, tight = 0;
  for (int it = 0; it < n && failures < 10; ++it) {
    if (it % 16 == 0) vs.reset(r);
    Built e = random_expr(r, vs, 1 + static_cast<int>(r.below(4)));
    Expr simp = simplify(e.raw), simp_dsl = simplify(e.dsl);
    Interval iv = arith::bound(e.raw, vs.intervals);
    arith::ModularSet m = arith::modular_set(e.raw, vs.mods, vs.intervals);
    tight += iv.lo != Interval::of_dtype(e.raw.dtype()).lo ||
             iv.hi != Interval::of_dtype(e.raw.dtype()).hi;
    auto report = [&](const std::string& what,
                      const std::unordered_map<const VarNode*, Value>& env) {
      ++failures;
      ADD_FAILURE() << what << "\n  raw:        " << print(e.raw) << "  ("
                    << dtype_name(e.raw.dtype()) << ")"
                    << "\n  dsl:        " << print(e.dsl) << "  (" << dtype_name(e.dsl.dtype())
                    << ")"
                    << "\n  simplified: " << print(simp) << "  (" << dtype_name(simp.dtype()) << ")"
                    << "\n  bound [" << iv.lo << ", " << iv.hi << "], modular " << m.coeff << "k + "
                    << m.base << "\n  " << vs.show(env);
    };
    std::unordered_map<const VarNode*, Value> none;
    if (e.dsl.dtype() != e.raw.dtype() || simp.dtype() != e.raw.dtype() ||
        simp_dsl.dtype() != e.raw.dtype()) {
      report("dtypes differ", vs.sample(r));
      continue;
    }
    for (int s = 0; s < 2; ++s) {
      auto env = vs.sample(r);
      auto want = eval_or_fail(e.raw, env);
      auto got_dsl = eval_or_fail(e.dsl, env), got_simp = eval_or_fail(simp, env),
           got_simp_dsl = eval_or_fail(simp_dsl, env);
      if (got_dsl != want || got_simp != want || got_simp_dsl != want) {
        report(fmt::format("values differ: raw {}, dsl {}, simplified {}, simplified dsl {}",
                           show(want), show(got_dsl), show(got_simp), show(got_simp_dsl)),
               env);
        break;
      }
      if (!want) {
        ++errors;
        continue;
      }
      ++evaluated;
      if (!iv.contains(*want)) {
        report(fmt::format("value {} outside the bound", *want), env);
        break;
      }
      if (!m.contains(*want)) {
        report(fmt::format("value {} outside the modular set", *want), env);
        break;
      }
    }
  }
  EXPECT_EQ(failures, 0);
  // The generator must exercise both outcomes and give the analyses something to say.
  EXPECT_GT(evaluated, n / 2);
  EXPECT_GT(errors, n / 200);
  EXPECT_GT(tight, n / 4);
}

// ---- Region overlap ---------------------------------------------------------------------------

/// A random region start: an affine form over the variables, sometimes with opaque terms
/// (floordiv, min) or an operation that may wrap.
Expr random_start(Random& r, const std::vector<Var>& vars, const std::vector<Expr>& opaque) {
  Expr e = Expr(static_cast<int>(r.below(41)) - 20);
  for (const auto& v : vars) {
    Expr coeff = Expr(static_cast<int>(r.below(9)) - 4);
    if (r.chance(60)) e = BinaryNode::make(BinOp::Add, e, BinaryNode::make(BinOp::Mul, coeff, v));
  }
  for (const auto& o : opaque)
    if (r.chance(30)) e = BinaryNode::make(BinOp::Add, e, o);
  return e;
}

TEST(ArithProperty, OverlapNeverContradictsSampledPoints) {
  Random r(977);
  const int n = std::max(1, iterations() / 5);
  Buffer buf = BufferNode::make("A", DType::Float32, {Expr(64), Expr(64), Expr(64)}, MemScope::UB);
  int failures = 0, counts[3] = {0, 0, 0};
  for (int it = 0; it < n && failures < 10; ++it) {
    std::vector<Var> vars;
    arith::VarIntervals ivs;
    for (int i = 0; i < 3; ++i) {
      DType t = r.chance(85) ? DType::Int32 : DType::Int8;
      Var v("i" + std::to_string(i), t);
      int64_t lo = r.below(30) - 10, hi = lo + r.below(30);
      ivs[v.node()] = {lo, hi};
      vars.push_back(v);
    }
    std::vector<Expr> opaque = {
        floordiv(vars[0], 3), min(vars[1], vars[2]),
        BinaryNode::make(BinOp::Mul, vars[2], IntImmNode::make(DType::Int8, 60))};
    size_t rank = 1 + r.below(3);
    BufferRegion a{buf, {}}, b{buf, {}};
    for (size_t d = 0; d < rank; ++d) {
      Expr sa = random_start(r, vars, opaque);
      Expr sb = r.chance(60)
                    ? BinaryNode::make(BinOp::Add, sa, Expr(static_cast<int>(r.below(17)) - 8))
                    : random_start(r, vars, opaque);
      auto extent = [&]() -> Expr {
        if (r.chance(75)) return Expr(static_cast<int>(r.below(10)) - 1);
        return vars[r.below(vars.size())];
      };
      a.ranges.push_back({sa, extent()});
      b.ranges.push_back({sb, extent()});
    }
    arith::Overlap answer = arith::regions_overlap(a, b, ivs);
    ++counts[static_cast<int>(answer)];
    for (int s = 0; s < 8; ++s) {
      std::unordered_map<const VarNode*, Value> env;
      for (const auto& v : vars)
        env[v.node()] = Value::of_int(r.in(ivs[v.node()].lo, ivs[v.node()].hi));
      bool meet = true;
      for (size_t d = 0; d < rank; ++d) {
        i128 amin = arith::evaluate(a.ranges[d].min, env).i,
             bmin = arith::evaluate(b.ranges[d].min, env).i;
        i128 ea = arith::evaluate(a.ranges[d].extent, env).i,
             eb = arith::evaluate(b.ranges[d].extent, env).i;
        meet &= ea > 0 && eb > 0 && bmin < amin + ea && amin < bmin + eb;
      }
      if ((answer == arith::Overlap::No && meet) || (answer == arith::Overlap::Yes && !meet)) {
        ++failures;
        std::string regions, values;
        for (size_t d = 0; d < rank; ++d)
          regions += fmt::format("\n  dim {}: a [{}, +{}), b [{}, +{})", d, print(a.ranges[d].min),
                                 print(a.ranges[d].extent), print(b.ranges[d].min),
                                 print(b.ranges[d].extent));
        for (const auto& v : vars) values += fmt::format("{} = {}; ", v.name(), env[v.node()].i);
        ADD_FAILURE() << "answer " << static_cast<int>(answer) << " but the sampled regions "
                      << (meet ? "meet" : "do not meet") << regions << "\n  " << values;
        break;
      }
    }
  }
  EXPECT_EQ(failures, 0);
  // Every answer occurs, and the exact cases are common.
  EXPECT_GT(counts[static_cast<int>(arith::Overlap::No)], n / 10);
  EXPECT_GT(counts[static_cast<int>(arith::Overlap::Yes)], n / 20);
  EXPECT_GT(counts[static_cast<int>(arith::Overlap::Maybe)], n / 20);
}

}  // namespace
}  // namespace tl
