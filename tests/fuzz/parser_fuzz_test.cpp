// Fuzz test of the IR text parser: seeded random mutations of a corpus (the printed registered
// kernels and hand-written snippets). Every input must either parse or throw tl::Error --
// never crash, hang, abort on an internal assert or throw anything else -- and whatever parses
// must print to text that parses again to an equal function.
//
// The default run is TL_FUZZ_ITERS=20000 inputs (a few seconds). The clean run the parser is
// held to is 100,000 inputs under ASan + UBSan:
//
//   cmake --preset asan && cmake --build --preset asan &&
//     TL_FUZZ_ITERS=100000 ./build/asan/tests/tl_tests --gtest_filter='ParserFuzz*'
//
// TL_FUZZ_SEED selects another (deterministic) sequence of inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "tl/ir_equal.h"
#include "tl/kernel_registry.h"
#include "tl/parser.h"
#include "tl/printer.h"

namespace tl {
namespace {

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return std::strtoull(v, nullptr, 10);
}

// Hand-written snippets: every statement kind, every expression form, and some near misses.
const char* const kSnippets[] = {
    R"(M = T.dynamic("M")
L = T.dynamic("L", "int64")

@T.prim_func
def snippet(A: T.Tensor((M, 64), "float16"), B: T.Tensor((L, 8), "float32", strides=(16, 1)), eps: T.float32):  # @s.cpp:3
    with T.Kernel(M // 64, is_npu=True) as (cid, vid):  # @s.cpp:4
        l1 = T.alloc_L1((64, 64), "float16", address=0)
        l0a = T.alloc_L0A((64, 64), "float16")
        l0b = T.alloc_L0B((64, 64), "float16")
        l0c = T.alloc_L0C((64, 64), "float32", address=128)
        ub = T.alloc_ub((16, 16), "float16")
        ubi = T.view(ub, "int16")
        sh = T.alloc_shared((8,), "int32")
        fr = T.alloc_fragment((8, 8), "float32")
        acc = T.alloc_var("float32")
        acc[0] = eps * 2.0 - -1.5
        base = cid * 64 + T.truncmod(vid, 2)
        e = T.if_then_else(cid < 2 and not vid == 1 or False, T.exp(eps), T.pow(eps, 2.0))
        f = T.cast(acc[0], "float16") + T.float16(float("-inf")) + T.int64(-9223372036854775808)
        g = (cid | vid ^ 3 & 1 << 2 >> 1) % 7 // 2 / 1 - (base - (cid - 1))
        s = "str\"ing\n\x01"
        ub[0, base % 16] = T.cast(acc[0], "float16")
        with T.Scope("Cube"):  # @s.cpp:16
            for i in T.serial(4):
                T.copy(A[base:base + 64, i * 16:i * 16 + 16], l1[0:64, 0:16])
                T.set_flag("MTE2", "MTE1", 0)
                T.wait_flag("MTE2", "MTE1", 0)
                T.copy(l1, l0a, transpose=True)
                T.copy(l1, l0b)
                T.mma(l0a, l0b, l0c, i == 0)
                T.gemm_v0(l1, l1, l0c, True, transpose_A=True, transpose_B=False)
            for u in T.unroll(2):
                pass
            T.copy(l0c, A[base:base + 64, 0:64], enable_relu=True)
        with T.Scope("Vector"):
            for p in T.Parallel(16):
                ub[p, 0] = T.float16(0.0)
            for k in T.Pipelined(8, num_stages=2):
                T.tile.add(ub, ub, 1.0)
                T.tile.max(ub[0:8, 0:16], ub[8:16, 0:16], acc[0])
                T.tile.cast(ub, ub, mode="CAST_RINT")
                T.pipe_barrier("V")
            for i in T.serial(8, min=2):
                if vid == 0:
                    T.set_cross_flag("FIX", i, mode=1)
                else:
                    T.wait_cross_flag(i)
                if i > 4 and vid != 1:
                    pass
                else:
                    T.copy(A[0:16, 0:16], ub, pad=True, pad_value=float("nan"))
            T.reduce_sum(ub[0:8, 4:8], sh[0:4], dim=1, clear=False)
            T.printf(cid, acc[0], fmt="cid=%d acc=%f")
            T.dump_tensor(fr, desc=3)
            T.tile.select(ub, ub, ub, 0.5, mode=1)
            T.init_sort_buf(fr, 64, -1.0)
        T.barrier_all()
        T.sync_all()
)",
    R"(@T.prim_func
def tiny():
    with T.Kernel(1, is_npu=True) as (cid, vid):
        pass
)",
    R"(@T.prim_func
def odd_indent(A: T.Tensor((8,), "int32")):
  with T.Kernel(2, is_npu=True) as (cid, vid):
        for i in T.serial(4):
         x = i + 1
         A[x] = x
        x = (cid +
             vid)  # joined lines
        A[x] = 0
)",
    R"(@T.prim_func
def deep(x: T.int32):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        y = ((((((((((x + 1) * 2) - 3) // 4) % 5) << 1) >> 1) & 7) | 8) ^ 9)
        z = - - - - - - x
        w = not not not not (x == 1)
        if x:
            if y:
                if z:
                    if w:
                        pass
)",
    R"(@T.prim_func
def bad(A: T.Tensor((4,) "int32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        x = 1 < 2 < 3
        T.copy(A[0:4, 0:4], A)
        T.frob(A)
)",
};

const char* const kDictionary[] = {
    "for",
    "in",
    "if",
    "else",
    "with",
    "as",
    "def",
    "pass",
    "T",
    ".",
    "(",
    ")",
    "[",
    "]",
    ":",
    ",",
    "=",
    "==",
    "<",
    "<=",
    "-",
    "+",
    "*",
    "/",
    "//",
    "%",
    "<<",
    "&",
    "not",
    "and",
    "or",
    "True",
    "False",
    "0",
    "1",
    "-1",
    "2147483648",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "1e308",
    "1e309",
    "5e-324",
    "0.0",
    "-0.0",
    "1.",
    ".5",
    "1e",
    "float(\"nan\")",
    "float(\"inf\")",
    "float(\"x\")",
    "\"float16\"",
    "\"int64\"",
    "\"bool\"",
    "\"MTE2\"",
    "\"Cube\"",
    "\"Vector\"",
    "T.int64(",
    "T.float16(",
    "T.bool(",
    "T.cast(",
    "T.if_then_else(",
    "T.exp(",
    "T.pow(",
    "T.min(",
    "T.serial(",
    "T.Pipelined(",
    "T.Kernel(",
    "T.Scope(",
    "num_stages=",
    "min=",
    "address=",
    "strides=",
    "mode=",
    "is_npu=True",
    "T.alloc_var(",
    "T.alloc_ub(",
    "T.alloc_global(",
    "T.copy(",
    "T.tile.add(",
    "T.gemm_v0(",
    "T.printf(",
    "T.set_flag(",
    "T.barrier_all()",
    "T.dynamic(",
    "@T.prim_func",
    "\n",
    "\n    ",
    "    ",
    "\t",
    "#",
    "# @f.cpp:",
    "# @f.cpp:0",
    "@",
    "'",
    "\"",
    "\\",
    "\\x",
    "\\xZ",
    "A",
    "cid",
    "vid",
    "i",
    "k",
    "acc",
    "ub",
    "\xff",
    "\r",
    "" /* a NUL byte */,
    "{",
    "}",
    "~",
    "!=",
    "$",
};

class Mutator {
 public:
  Mutator(uint64_t seed, const std::vector<std::string>& corpus) : rng_(seed), corpus_(corpus) {}

  std::string next_input() {
    std::string s = corpus_[below(corpus_.size())];
    if (below(50) == 0) return s;
    int n = 1 + static_cast<int>(below(4));
    for (int i = 0; i < n; ++i) mutate(s);
    return s;
  }

 private:
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng_() % n); }
  size_t pos(const std::string& s) { return below(s.size() + 1); }
  const std::string& other() { return corpus_[below(corpus_.size())]; }
  std::string chunk(const std::string& s, size_t max_len) {
    size_t p = below(s.size() + 1);
    return s.substr(p, below(max_len + 1));
  }
  std::string word() {
    std::string_view w = kDictionary[below(std::size(kDictionary))];
    return w.empty() ? std::string(1, '\0') : std::string(w);
  }

  void mutate(std::string& s) {
    switch (below(9)) {
      case 0:
        flip_byte(s);
        break;
      case 1:
        s.insert(pos(s), chunk(other(), 64));
        break;
      case 2:
        s.erase(pos(s), below(48));
        break;
      case 3:
        s.insert(pos(s), chunk(s, 96));
        break;
      case 4:
        splice_line(s);
        break;
      case 5:
      case 6:
        replace_token(s);
        break;
      case 7:
        reindent(s);
        break;
      default:
        nest(s);
        break;
    }
  }

  void flip_byte(std::string& s) {
    if (s.empty()) return;
    size_t p = below(s.size());
    if (below(2))
      s[p] = static_cast<char>(s[p] ^ (1 << below(8)));
    else
      s[p] = static_cast<char>(below(256));
  }

  /// Replaces (or inserts before) a line with a line of another input.
  void splice_line(std::string& s) {
    const std::string& o = other();
    size_t b = o.rfind('\n', below(o.size() + 1));
    b = b == std::string::npos ? 0 : b + 1;
    size_t e = o.find('\n', b);
    std::string line = o.substr(b, e == std::string::npos ? std::string::npos : e - b + 1);
    size_t at = s.rfind('\n', pos(s));
    at = at == std::string::npos ? 0 : at + 1;
    if (below(2)) {
      size_t end = s.find('\n', at);
      s.erase(at, end == std::string::npos ? std::string::npos : end - at + 1);
    }
    s.insert(at, line);
  }

  /// Replaces the token around a random position with a dictionary word or a name/number
  /// taken from elsewhere in the input.
  void replace_token(std::string& s) {
    if (s.empty()) return;
    size_t p = below(s.size());
    auto word_char = [&](size_t i) {
      char c = s[i];
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    };
    size_t b = p, e = p + 1;
    if (word_char(p)) {
      while (b > 0 && word_char(b - 1)) --b;
      while (e < s.size() && word_char(e)) ++e;
    }
    std::string repl;
    if (below(3) == 0) {  // a word from this input
      size_t q = below(s.size());
      size_t qb = q, qe = q;
      while (qb > 0 && word_char(qb - 1)) --qb;
      while (qe < s.size() && word_char(qe)) ++qe;
      repl = s.substr(qb, qe - qb);
    } else {
      repl = word();
    }
    s.replace(b, e - b, repl);
  }

  void reindent(std::string& s) {
    size_t at = s.rfind('\n', pos(s));
    at = at == std::string::npos ? 0 : at + 1;
    switch (below(3)) {
      case 0:
        s.insert(at, std::string(1 + below(4), ' '));
        break;
      case 1:
        s.erase(at, std::min<size_t>(1 + below(4), s.find_first_not_of(' ', at) - at));
        break;
      default:
        s.insert(at, "\t");
        break;
    }
  }

  /// Deep or long constructs: parentheses, unary chains, operator chains, nested blocks.
  void nest(std::string& s) {
    size_t n = below(4) == 0 ? 190 + below(300) : 1 + below(40);
    static const char* const kRuns[] = {"(", "-", "not ", "+ 1 ", "[", "T.exp(", "- -1"};
    std::string run;
    const char* r = kRuns[below(std::size(kRuns))];
    for (size_t i = 0; i < n; ++i) run += r;
    if (below(3) == 0) {  // nested blocks
      run.clear();
      for (size_t i = 0; i < n; ++i) run += std::string(8 + 4 * i, ' ') + "if True:\n";
    }
    s.insert(pos(s), run);
  }

  std::mt19937_64 rng_;
  const std::vector<std::string>& corpus_;
};

std::vector<std::string> make_corpus() {
  std::vector<std::string> c;
  for (const KernelEntry* k : registered_kernels()) {
    PrimFunc f = build_kernel(*k);
    c.push_back(print(f));
    c.push_back(print(f, {.locations = false}));
  }
  for (const char* s : kSnippets) c.push_back(s);
  return c;
}

std::string excerpt(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 600)) out += (c == '\n' || (c >= 0x20 && c < 0x7f)) ? c : '?';
  return out + (s.size() > 600 ? "\n[...]" : "");
}

struct Stats {
  uint64_t parsed = 0, rejected = 0, failures = 0;
};

/// One input: parse or tl::Error; a parsed function must reprint and reparse to itself.
void check(const std::string& input, Stats& st) {
  PrimFunc f;
  try {
    f = parse(input, "fuzz");
  } catch (const Error&) {
    ++st.rejected;
    return;
  } catch (const std::exception& e) {
    if (++st.failures <= 5)
      ADD_FAILURE() << "non-tl::Error exception " << e.what() << " for:\n" << excerpt(input);
    return;
  }
  ++st.parsed;
  std::string text = print(f);
  try {
    PrimFunc g = parse(text, "reprint");
    // (A function holding a NaN attribute is not structurally equal even to itself: the
    // comparison is only meaningful when f == f.)
    if (print(g) != text || (structural_equal(f, f) && !structural_equal(g, f))) {
      if (++st.failures <= 5)
        ADD_FAILURE() << "reprint differs (" << first_difference(g, f) << ") for:\n"
                      << excerpt(input) << "\nprinted:\n"
                      << excerpt(text);
    }
  } catch (const std::exception& e) {
    if (++st.failures <= 5)
      ADD_FAILURE() << "printed text does not parse: " << e.what() << "\ninput:\n"
                    << excerpt(input) << "\nprinted:\n"
                    << excerpt(text);
  }
}

TEST(ParserFuzz, RandomMutationsParseOrThrowTlError) {
  const uint64_t iters = env_u64("TL_FUZZ_ITERS", 20000);
  const uint64_t seed = env_u64("TL_FUZZ_SEED", 0x7115eed);
  std::vector<std::string> corpus = make_corpus();
  Mutator m(seed, corpus);
  Stats st;
  auto t0 = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < iters; ++i) check(m.next_input(), st);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ fuzz     ] " << iters << " inputs (seed " << seed << ", corpus " << corpus.size()
            << "): " << st.parsed << " parsed, " << st.rejected << " rejected with tl::Error, "
            << st.failures << " failures, " << secs << " s\n";
  EXPECT_EQ(st.failures, 0u);
  EXPECT_GT(st.parsed, 0u);
  EXPECT_GT(st.rejected, 0u);
}

TEST(ParserFuzz, EveryPrefixOfEveryCorpusInput) {
  Stats st;
  for (const std::string& s : make_corpus()) {
    size_t step = std::max<size_t>(1, s.size() / 400);
    for (size_t n = 0; n <= s.size(); n += step) check(s.substr(0, n), st);
  }
  EXPECT_EQ(st.failures, 0u);
}

}  // namespace
}  // namespace tl
