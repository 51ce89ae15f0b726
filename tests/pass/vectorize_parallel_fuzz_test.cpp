// vectorize_parallel's numeric contract, by random search: a fuzzer runs random T.Parallel
// expression trees vectorised and as serial scalar loops on the virtual NPU and compares the
// outputs bit for bit (TL_TEST_LEVEL raises the number of trees), and the table of intrinsics the
// pass takes as exact is checked by exhaustive runs over every float16 and bfloat16 input.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "pass/pass_test_util.h"
#include "pass/vectorize_parallel_util.h"
#include "tl/arith.h"
#include "tl/npu/npu.h"
#include "tl/op.h"
#include "tl/runtime.h"
#include "tl/verifier.h"

namespace tl {
namespace {

using namespace vptest;

// ---- the numeric contract: vectorised == serial scalar loop, bit for bit ------------------------

int test_level() {
  const char* e = std::getenv("TL_TEST_LEVEL");
  return e ? std::atoi(e) : 0;
}

/// Random T.Parallel expression trees over three full tiles a, b, c, a row vector r, a column
/// vector q, a float32 scalar x and literals. Float cases (float16 / bfloat16 / float32 mixed)
/// use + - * / min max abs sqrt rsqrt exp log casts and if_then_else on all six comparisons
/// (loop-dependent and loop-invariant conditions); integer cases (int16 or int32) use + - *
/// min max, & | (int16), << >> by a constant, and int -> float casts. Some cases bind a let
/// used twice (a shared temporary), and some store into an offset region of a bigger buffer.
class TreeGen {
 public:
  explicit TreeGen(uint64_t seed) : rng_(seed) {}

  struct Case {
    std::vector<int64_t> ext;
    std::string dtypes[6];  // a b c r q o
    std::string let;        // `t = <let>` before the store ("" for none)
    std::string expr;
    bool in_place = false;  // the store writes a instead of o
    int64_t offset = 0;  // o has `offset` more leading rows (elements in 1-D); stored at + offset
  };

  Case next() {
    static const std::vector<std::vector<int64_t>> shapes = {{128},    {256},   {16, 16},
                                                             {16, 32}, {8, 16}, {2, 16, 16}};
    Case c;
    c.ext = shapes[pick(shapes.size())];
    k_ = c.ext.size();
    int_ = pick(4) == 0;
    if (int_) {
      int_dtype_ = pick(2) ? "int16" : "int32";
      for (auto& d : c.dtypes) d = int_dtype_;
      if (c.ext.size() >= 2 && c.ext[0] == 8)
        c.dtypes[3] = "int32";  // 8-element rows: 32 bytes in int32 only
    } else {
      for (auto& d : c.dtypes) d = dtypes_[pick(3)];
      if (c.ext.size() >= 2 && c.ext[0] == 8)
        c.dtypes[3] = "float32";  // 8-element rows: 32 bytes in float32 only
    }
    has_let_ = pick(4) == 0;
    if (has_let_) {
      has_let_ = false;
      c.let = gen(1 + static_cast<int>(pick(2)));
      has_let_ = true;
    }
    c.expr = gen(1 + static_cast<int>(pick(4)));
    if (has_let_) c.expr = int_ ? "((" + c.expr + " + t) * t)" : "T.max(" + c.expr + " * t, t)";
    if (int_ && pick(3) == 0) {  // int -> float at the root
      c.expr =
          "T.cast(" + c.expr + ", \"" + (int_dtype_ == "int16" ? "float16" : "float32") + "\")";
      c.dtypes[5] = int_dtype_ == "int16" ? (pick(2) ? "float16" : "float32") : "float32";
    }
    c.in_place = !int_ && pick(6) == 0;
    if (!c.in_place && pick(4) == 0) c.offset = c.ext.size() == 1 ? 16 : 2;
    return c;
  }

 private:
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  std::string idx(size_t from, size_t to) const {
    static const char* v[] = {"i", "j", "k"};
    std::string s;
    for (size_t d = from; d < to; ++d) s += (s.empty() ? "" : ", ") + std::string(v[d]);
    return s;
  }
  std::string lit() {
    if (int_) {
      static const char* lits[] = {"3", "-2", "0", "1", "-7"};
      std::string v = lits[pick(5)];
      return int_dtype_ == "int16" ? "T.int16(" + v + ")" : v;
    }
    static const char* lits[] = {"0.5", "-1.25", "2.0", "T.float16(0.75)", "T.bfloat16(3.0)",
                                 "0.0", "-0.0"};
    return lits[pick(7)];
  }
  /// A loop variable used as a value: the innermost one, or either of two.
  std::string loop_var() {
    static const char* v[] = {"i", "j", "k"};
    return v[k_ == 2 && pick(2) ? 0 : k_ - 1];
  }
  /// An int32 index expression of the loop variables (masks: `j * 3 - i`, `k + 5`).
  std::string index_expr() {
    std::string a = loop_var();
    switch (pick(4)) {
      case 0:
        return a;
      case 1:
        return "(" + a + " * 3 - " + loop_var() + ")";
      case 2:
        return "(" + a + " + " + lit_int() + ")";
      default:
        return "(" + lit_int() + " - " + a + ")";
    }
  }
  std::string lit_int() {
    static const char* lits[] = {"3", "-2", "0", "17", "-7"};
    return lits[pick(5)];
  }
  std::string leaf() {
    if (int_ && int_dtype_ == "int32" && pick(8) == 0) return index_expr();
    switch (pick(k_ >= 2 ? 10 : 8)) {
      case 0:
      case 1:
      case 6:
        return "a[" + idx(0, k_) + "]";
      case 2:
        return "b[" + idx(0, k_) + "]";
      case 3:
        return "c[" + idx(0, k_) + "]";
      case 4:
        return int_ ? lit() : "x";
      case 5:
        return lit();
      case 7:
        return has_let_ ? "t" : "a[" + idx(0, k_) + "]";
      case 8:
        return "r[" + idx(0, k_ - 1) + "]";
      default:
        return "q[" + idx(1, k_) + "]";
    }
  }
  std::string gen(int depth) {
    if (depth <= 0) return leaf();
    std::string a = gen(depth - 1 - static_cast<int>(pick(2))),
                b = gen(depth - 1 - static_cast<int>(pick(2)));
    if (int_) {
      switch (pick(int_dtype_ == "int16" ? 9 : 7)) {
        case 0:
          return "(" + a + " + " + b + ")";
        case 1:
          return "(" + a + " - " + b + ")";
        case 2:
          return "(" + a + " * " + b + ")";
        case 3:
          return "T.min(" + a + ", " + b + ")";
        case 4:
          return "T.max(" + a + ", " + b + ")";
        case 5:
          return "(" + a + " << " + (int_dtype_ == "int16" ? "T.int16(" : "T.int32(") +
                 std::to_string(pick(4)) + "))";
        case 6:
          return "(" + a + " >> " + (int_dtype_ == "int16" ? "T.int16(" : "T.int32(") +
                 std::to_string(pick(4)) + "))";
        case 7:
          return "(" + a + " & " + b + ")";
        default:
          return "(" + a + " | " + b + ")";
      }
    }
    switch (pick(16)) {
      case 15: {  // a mask on positions: an int32 ordering of index expressions
        static const char* cmp[] = {"<", "<=", ">", ">=", "==", "!="};
        std::string rhs = pick(2) ? index_expr() : lit_int();
        return "T.if_then_else(" + index_expr() + " " + cmp[pick(6)] + " " + rhs + ", " + a + ", " +
               b + ")";
      }
      case 0:
        return "(" + a + " + " + b + ")";
      case 1:
        return "(" + a + " - " + b + ")";
      case 2:
        return "(" + a + " * " + b + ")";
      case 3:
        return "(" + a + " / " + b + ")";
      case 4:
        return "T.min(" + a + ", " + b + ")";
      case 5:
        return "T.max(" + a + ", " + b + ")";
      case 6:
        return "T.abs(" + a + ")";
      case 7:
        return "T.sqrt(" + a + ")";
      case 8:
        return pick(2) ? "T.rsqrt(T.cast(" + a + ", \"float16\"))"
                       : "T.rsqrt(T.cast(" + a + ", \"bfloat16\"))";
      case 9:
        return pick(2) ? "T.exp(T.cast(" + a + ", \"bfloat16\"))"
                       : "T.log(T.cast(" + a + ", \"bfloat16\"))";
      case 10:
      case 11:
        return "T.cast(" + a + ", \"" + dtypes_[pick(3)] + "\")";
      case 12:
        return "T.if_then_else(x " + std::string(pick(2) ? "<" : ">=") + " 0.5, " + a + ", " + b +
               ")";
      default: {
        static const char* cmp[] = {"<", "<=", ">", ">=", "==", "!="};
        std::string c = gen(depth - 1);
        return "T.if_then_else(" + a + " " + cmp[pick(6)] + " " + b + ", " + c + ", " +
               gen(depth - 1) + ")";
      }
    }
  }

  std::mt19937_64 rng_;
  size_t k_ = 1;
  bool int_ = false, has_let_ = false;
  std::string int_dtype_ = "int32";
  const std::vector<std::string> dtypes_ = {"float16", "bfloat16", "float32"};
};

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

std::vector<int64_t> buffer_shape(const TreeGen::Case& c, int b) {
  if (b == 3)
    return c.ext.size() > 1 ? std::vector<int64_t>(c.ext.begin(), c.ext.end() - 1)
                            : std::vector<int64_t>{32};
  if (b == 4)
    return c.ext.size() > 1 ? std::vector<int64_t>(c.ext.begin() + 1, c.ext.end())
                            : std::vector<int64_t>{32};
  std::vector<int64_t> s = c.ext;
  if (b == 5) s[0] += c.offset;
  return s;
}

/// A kernel running `cases` (one T.Parallel loop each) on AIV 0: every buffer copied in from
/// GM, the destinations copied out; `loop` is "Parallel" or "serial".
std::string fuzz_kernel(const std::vector<TreeGen::Case>& cases, std::string_view loop) {
  std::string params, decls, in, body, out;
  static const char* names[] = {"a", "b", "c", "r", "q", "o"};
  static const char* vars[] = {"i", "j", "k"};
  auto rename = [](const std::string& e, size_t n) {  // the operands of case n: a -> a<n>
    std::string renamed;
    for (size_t p = 0; p < e.size(); ++p) {
      char ch = e[p];
      bool ident_start = p == 0 || !(std::isalnum(static_cast<unsigned char>(e[p - 1])) ||
                                     e[p - 1] == '_' || e[p - 1] == '.');
      bool ident_end = p + 1 == e.size() ||
                       !(std::isalnum(static_cast<unsigned char>(e[p + 1])) || e[p + 1] == '_');
      if (ident_start && ((p + 1 < e.size() && e[p + 1] == '[' && std::strchr("abcrq", ch)) ||
                          (ch == 't' && ident_end))) {
        renamed += fmt::format("{}{}", ch, n);
        continue;
      }
      renamed += ch;
    }
    return renamed;
  };
  for (size_t n = 0; n < cases.size(); ++n) {
    const auto& c = cases[n];
    for (int b = 0; b < 6; ++b) {
      std::string nm = fmt::format("{}{}", names[b], n);
      std::string shape = shape_str(buffer_shape(c, b));
      params += fmt::format(", G{}: T.Tensor({}, \"{}\")", nm, shape, c.dtypes[b]);
      decls += fmt::format("            {} = T.alloc_ub({}, \"{}\")\n", nm, shape, c.dtypes[b]);
      in += fmt::format("                T.copy(G{}, {})\n", nm, nm);
    }
    std::string ind = "                ";
    for (size_t d = 0; d < c.ext.size(); ++d) {
      body += fmt::format("{}for {} in T.{}({}):\n", ind, vars[d], loop, c.ext[d]);
      ind += "    ";
    }
    std::string idx;
    for (size_t d = 0; d < c.ext.size(); ++d)
      idx += (d ? ", " : "") + std::string(vars[d]) +
             (d == 0 && c.offset ? fmt::format(" + {}", c.offset) : "");
    std::string dst = fmt::format("{}{}", c.in_place ? "a" : "o", n);
    if (!c.let.empty()) body += fmt::format("{}t{} = {}\n", ind, n, rename(c.let, n));
    body += fmt::format("{}{}[{}] = {}\n", ind, dst, idx, rename(c.expr, n));
    out += fmt::format("                T.copy({}, G{})\n", dst, dst);
  }
  return fmt::format(R"(@T.prim_func
def fz(x: T.float32{}):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
{}            if vid == 0:
{}                T.barrier_all()
{}                T.barrier_all()
{})",
                     params, decls, in, body, out);
}

TEST(VectorizeParallel, FuzzBitIdenticalToTheSerialScalarLoop) {
  const int trees = test_level() >= 1 ? 20000 : 2000;
  const int per_kernel = 10;
  TreeGen gen(20261201);
  std::mt19937_64 rng(7);
  Device dev(default_target());
  int accepted = 0, rejected = 0, launches = 0;
  std::map<std::string, int> reasons;
  std::map<std::string, int> ops_seen;  // which vector ops the accepted trees exercised
  std::vector<TreeGen::Case> batch;
  auto run_batch = [&] {
    std::string par = fuzz_kernel(batch, "Parallel"), ser = fuzz_kernel(batch, "serial");
    PrimFunc vec = vectorize_parallel(parse(par), default_target());
    CompiledKernel kv = compile(vec), ks = compile(parse(ser));
    std::vector<Arg> args_v = {Arg(0.375)}, args_s = {Arg(0.375)};
    std::vector<Tensor> outs_v, outs_s;
    for (const auto& c : batch)
      for (int b = 0; b < 6; ++b) {
        std::vector<int64_t> shape = buffer_shape(c, b);
        DType t = *parse_dtype(c.dtypes[b]);
        int64_t n = 1;
        for (int64_t x : shape) n *= x;
        Tensor tv = from_vector(dev, shape, t, fuzz_values(rng, n, t));
        Tensor ts = Tensor::empty(dev, shape, t);
        std::memcpy(ts.data(), tv.data(), static_cast<size_t>(tv.nbytes()));
        args_v.push_back(tv);
        args_s.push_back(ts);
        if (b == (c.in_place ? 0 : 5)) {
          outs_v.push_back(tv);
          outs_s.push_back(ts);
        }
      }
    kv.launch(dev, args_v, {.threads = 1});
    ks.launch(dev, args_s, {.threads = 1});
    ++launches;
    for (size_t n = 0; n < batch.size(); ++n) {
      std::string first;
      int64_t bad = count_mismatches(outs_s[n], outs_v[n], &first);
      EXPECT_EQ(bad, 0) << first << "\nexpression: " << batch[n].expr << "\n"
                        << fuzz_kernel({batch[n]}, "Parallel")
                        << print(vectorize_parallel(parse(fuzz_kernel({batch[n]}, "Parallel")),
                                                    default_target()),
                                 {.locations = false});
    }
    batch.clear();
  };
  for (int t = 0; t < trees; ++t) {
    TreeGen::Case c = gen.next();
    try {  // vectorisable on its own? (rejections are legitimate: they name a reason)
      PrimFunc g = vectorize_parallel(parse(fuzz_kernel({c}, "Parallel")), default_target());
      auto diags = verify(g, default_target());
      for (const auto& d : diags)
        ADD_FAILURE() << d.message << "\nexpression: " << c.expr << "\n" << print(g);
      if (!diags.empty()) break;
      pre_order_visit(g->body, [&](const Stmt& s) {
        if (auto* op = s.as<TileOpNode>())  // (the harness's own GM copies do not count)
          if (op->op->name != "copy" || (op->args[0].region.buffer->scope == MemScope::UB &&
                                         op->args[1].region.buffer->scope == MemScope::UB))
            ++ops_seen[op->op->name];
        if (s.as<IfNode>() && s.as<IfNode>()->else_case.defined())
          ++ops_seen["(if on an invariant condition)"];
      });
    } catch (const Error& e) {
      ++rejected;
      std::string m = e.what();
      auto at = m.find("cannot vectorise: ");
      std::string reason = at == std::string::npos ? m : m.substr(at + 18, 40);
      ++reasons[reason];
      continue;
    }
    ++accepted;
    batch.push_back(c);
    if (static_cast<int>(batch.size()) == per_kernel) run_batch();
    if (::testing::Test::HasFailure()) break;
  }
  if (!batch.empty()) run_batch();
  std::string why, ops;
  for (const auto& [r, n] : reasons) why += fmt::format("  {:5} {}\n", n, r);
  for (const auto& [o, n] : ops_seen) ops += fmt::format(" {}:{}", o, n);
  std::printf(
      "vectorize_parallel fuzz: %d trees, %d vectorised and bit-identical (%d launches), %d "
      "rejected:\n%s"
      "ops:%s\n",
      trees, accepted, launches, rejected, why.c_str(), ops.c_str());
  EXPECT_GE(accepted, trees / 2) << why;
  // Every mapped op family is exercised.
  // (tile.exp and tile.rsqrt are not among them: the chip's exp flushes subnormal results and
  // its rsqrt is an approximation, so neither is bit-identical to the scalar loop.)
  for (const char* op : {"tile.add",
                         "tile.sub",
                         "tile.mul",
                         "tile.div",
                         "tile.compare",
                         "tile.select",
                         "tile.cast",
                         "tile.abs",
                         "tile.sqrt",
                         "tile.ln",
                         "tile.max",
                         "tile.min",
                         "tile.bitwise_and",
                         "tile.bitwise_or",
                         "tile.shift_left",
                         "tile.shift_right",
                         "tile.fill",
                         "tile.broadcast",
                         "tile.row_expand_add",
                         "tile.row_expand_sub",
                         "tile.row_expand_mul",
                         "tile.row_expand_div",
                         "tile.arith_progression",
                         "copy",
                         "(if on an invariant condition)"})
    EXPECT_GT(ops_seen[op], 0) << op << " never exercised";
}

TEST(VectorizeParallel, IntrinsicExactnessTableMatchesExhaustiveRuns) {
  // For every float16 and bfloat16 input (all 65,536 bit patterns), the pass accepts a math
  // intrinsic exactly when the vector op matches the scalar loop on every input; the ones it
  // rejects do differ somewhere (so the rejection is not over-cautious on this domain).
  constexpr int64_t kChunk = 16384;
  Device dev(default_target());
  for (const char* dtype : {"float16", "bfloat16"})
    for (const IntrinsicDef& def : intrinsics()) {
      // Every intrinsic of the table with a vector op (include/tl/intrinsics.def).
      if (!op_for_intrinsic(def.id)) continue;
      const std::string fn(def.name);
      std::string par = fmt::format(R"(@T.prim_func
def ex(GI: T.Tensor(({0},), "{1}"), GO: T.Tensor(({0},), "{1}")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            i_ub = T.alloc_ub(({0},), "{1}")
            o_ub = T.alloc_ub(({0},), "{1}")
            if vid == 0:
                T.copy(GI, i_ub)
                T.barrier_all()
                for p in T.Parallel({0}):
                    o_ub[p] = T.{2}(i_ub[p])
                T.barrier_all()
                T.copy(o_ub, GO)
)",
                                    kChunk, dtype, fn);
      std::string ser = par;
      ser.replace(ser.find("T.Parallel"), 10, "T.serial");
      bool accepted = true;
      try {
        vectorize_parallel(parse(par), default_target());
      } catch (const Error&) {
        accepted = false;
      }
      VectorizeOptions o;
      o.allow_inexact_math = true;
      o.remark = [](const SourceLoc&, const std::string&) {};
      CompiledKernel kv = compile(vectorize_parallel(parse(par), default_target(), o)),
                     ks = compile(parse(ser));
      DType t = *parse_dtype(dtype);
      int64_t bad = 0;
      std::string first;
      for (int64_t chunk = 0; chunk < 65536 / kChunk; ++chunk) {
        Tensor in = Tensor::empty(dev, {kChunk}, t);
        for (int64_t e = 0; e < kChunk; ++e) {
          uint16_t bits = static_cast<uint16_t>(chunk * kChunk + e);
          std::memcpy(in.data() + 2 * e, &bits, 2);
        }
        Tensor ov = Tensor::empty(dev, {kChunk}, t), os = Tensor::empty(dev, {kChunk}, t);
        kv.launch(dev, {in, ov}, {.threads = 1});
        ks.launch(dev, {in, os}, {.threads = 1});
        bad += count_mismatches(os, ov, first.empty() ? &first : nullptr);
      }
      if (accepted)
        EXPECT_EQ(bad, 0) << "T." << fn << " on " << dtype << ": " << first;
      else
        EXPECT_GT(bad, 0) << "T." << fn << " on " << dtype
                          << " is rejected but matches on every input";
      std::printf("T.%s on %s: %s, %lld of 65536 inputs differ as tile ops\n", fn.c_str(), dtype,
                  accepted ? "vectorised" : "rejected", static_cast<long long>(bad));
    }
}

}  // namespace
}  // namespace tl
