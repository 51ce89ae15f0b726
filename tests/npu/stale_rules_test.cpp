// The stale-data checker's propagation, op class by op class (docs/virtual_npu.md, "Stale-data
// checker"): one invalid input element (stored from a T.alloc_var never assigned, or left by a
// region a copy did not fill) must make exactly the expected output elements invalid, which
// the finding of the copy to GM lists. Each kernel is expert IR run in program order.
#include <gtest/gtest.h>

#include <numeric>

#include "tl/npu/npu.h"
#include "tl/npu/stale.h"
#include "tl/parser.h"
#include "tl/runtime.h"

namespace tl {
namespace {

using npu::StaleFinding;

/// A one-block kernel whose AIV0 runs `body` (lines at any indentation, one statement each);
/// `v` (float32) and `w` (int32) are T.alloc_var never assigned: storing them invalidates.
std::string vector_kernel(const std::string& params, const std::string& body) {
  std::string out =
      "@T.prim_func\ndef k(" + params +
      "):\n    with T.Kernel(1, is_npu=True) as (cid, vid):\n"
      "        with T.Scope(\"Vector\"):\n            if vid == 0:\n"
      "                v = T.alloc_var(\"float32\")\n                w = T.alloc_var(\"int32\")\n";
  std::vector<std::string> lines;
  size_t at = 0, indent = std::string::npos;
  while (at < body.size()) {
    size_t end = body.find('\n', at);
    lines.push_back(body.substr(at, end == std::string::npos ? std::string::npos : end - at));
    at = end == std::string::npos ? body.size() : end + 1;
    if (lines.back().find_first_not_of(' ') != std::string::npos)
      indent = std::min(indent, lines.back().find_first_not_of(' '));
  }
  for (const auto& line : lines)  // the body's own indentation (under `if`, `for`) is kept
    if (line.find_first_not_of(' ') != std::string::npos)
      out += "                " + line.substr(indent) + "\n";
  return out;
}

std::vector<StaleFinding> run(const std::string& text, Device& dev, const std::vector<Arg>& args) {
  std::vector<StaleFinding> f;
  compile(parse(text)).launch(dev, args, {.threads = 1, .check_stale = true, .stale_findings = &f});
  return f;
}

std::string all(const std::vector<StaleFinding>& f) {
  std::string s;
  for (const auto& x : f) s += x.str() + "\n";
  return s;
}

/// The invalid positions (row-major in the stored region) the store into `buffer` reported.
std::vector<int64_t> stored_invalid(const std::vector<StaleFinding>& f,
                                    const std::string& buffer = "Y") {
  for (const auto& x : f)
    if (x.kind == StaleFinding::Kind::StoreToGM && x.buffer == buffer) return x.invalid_positions;
  return {};
}

std::vector<int64_t> range(int64_t lo, int64_t hi) {
  std::vector<int64_t> r(hi - lo);
  std::iota(r.begin(), r.end(), lo);
  return r;
}

// Elementwise: per position, from each source at that position.
TEST(StaleRules, ElementwiseIsPerPosition) {
  Device dev;
  Tensor Y = Tensor::empty(dev, {4, 16}, f32);
  auto f = run(vector_kernel("Y: T.Tensor((4, 16), \"float32\")", R"(
      a = T.alloc_ub((4, 16), "float32")
      b = T.alloc_ub((4, 16), "float32")
      d = T.alloc_ub((4, 16), "float32")
      T.tile.fill(a, 1.0)
      T.tile.fill(b, 2.0)
      a[1, 3] = v[0]
      b[2, 7] = v[0]
      T.tile.add(d, a, b)
      T.copy(d, Y))"),
               dev, {Y});
  EXPECT_EQ(stored_invalid(f), (std::vector<int64_t>{19, 39})) << all(f);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].origin.find("the T.alloc_var 'v'"), std::string::npos) << f[0].origin;
}

// A scalar operand from an invalid value invalidates every element; a cast moves validity per
// element into the narrower dtype.
TEST(StaleRules, ScalarOperandsAndCasts) {
  Device dev;
  Tensor Y = Tensor::empty(dev, {4, 16}, f16), Z = Tensor::empty(dev, {4, 16}, f32);
  auto f =
      run(vector_kernel("Y: T.Tensor((4, 16), \"float16\"), Z: T.Tensor((4, 16), \"float32\")", R"(
      a = T.alloc_ub((4, 16), "float32")
      h = T.alloc_ub((4, 16), "float16")
      z = T.alloc_ub((4, 16), "float32")
      T.tile.fill(a, 1.0)
      a[0, 5] = v[0]
      T.tile.cast(h, a, mode="CAST_RINT")
      T.copy(h, Y)
      T.tile.fill(z, 1.0)
      T.tile.mul(z, z, v[0])
      T.copy(z, Z))"),
          dev, {Y, Z});
  EXPECT_EQ(stored_invalid(f), std::vector<int64_t>{5}) << all(f);
  EXPECT_EQ(stored_invalid(f, "Z"), range(0, 64)) << all(f);
}

// Row-expand ops: dst[r, k] from src0[r, k] and src1[r]; broadcasts by their index map.
TEST(StaleRules, RowExpandAndBroadcastFollowTheirIndexMaps) {
  Device dev;
  Tensor Y = Tensor::empty(dev, {4, 16}, f32), Z = Tensor::empty(dev, {4, 16}, f32);
  auto f =
      run(vector_kernel("Y: T.Tensor((4, 16), \"float32\"), Z: T.Tensor((4, 16), \"float32\")", R"(
      a = T.alloc_ub((4, 16), "float32")
      s = T.alloc_ub((4,), "float32")
      d = T.alloc_ub((4, 16), "float32")
      r = T.alloc_ub((1, 16), "float32")
      e = T.alloc_ub((4, 16), "float32")
      T.tile.fill(a, 1.0)
      T.tile.fill(s, 2.0)
      a[0, 1] = v[0]
      s[2] = v[0]
      T.tile.row_expand_mul(d, a, s)
      T.copy(d, Y)
      T.tile.fill(r, 3.0)
      r[0, 5] = v[0]
      T.tile.broadcast(e, r)
      T.copy(e, Z))"),
          dev, {Y, Z});
  std::vector<int64_t> want = {1};
  for (int64_t k = 32; k < 48; ++k) want.push_back(k);
  EXPECT_EQ(stored_invalid(f), want) << all(f);
  EXPECT_EQ(stored_invalid(f, "Z"), (std::vector<int64_t>{5, 21, 37, 53})) << all(f);
}

// Reductions: an output is invalid when its reduced line holds an invalid element, over the
// last axis or another one, and (clear=False) when it was itself.
TEST(StaleRules, ReductionsArePerReducedLine) {
  Device dev;
  Tensor Y = Tensor::empty(dev, {4}, f32), Z = Tensor::empty(dev, {16}, f32),
         W = Tensor::empty(dev, {4}, f32);
  auto f = run(vector_kernel("Y: T.Tensor((4,), \"float32\"), Z: T.Tensor((16,), \"float32\"), W: "
                             "T.Tensor((4,), \"float32\")",
                             R"(
      a = T.alloc_ub((4, 16), "float32")
      s = T.alloc_ub((4,), "float32")
      t = T.alloc_ub((16,), "float32")
      u = T.alloc_ub((4,), "float32")
      T.tile.fill(a, 1.0)
      a[1, 3] = v[0]
      T.reduce_sum(a, s)
      T.copy(s, Y, pad=True)
      T.reduce_max(a, t, dim=0)
      T.copy(t, Z)
      T.tile.fill(a, 1.0)
      T.tile.fill(u, 0.0)
      u[0] = v[0]
      T.reduce_sum(a, u, clear=False)
      T.copy(u, W, pad=True))"),
               dev, {Y, Z, W});
  EXPECT_EQ(stored_invalid(f), std::vector<int64_t>{1}) << all(f);
  EXPECT_EQ(stored_invalid(f, "Z"), std::vector<int64_t>{3}) << all(f);
  EXPECT_EQ(stored_invalid(f, "W"), std::vector<int64_t>{0}) << all(f);
}

// compare packs eight positions per mask byte; select takes the mask bit and the source it picks.
TEST(StaleRules, CompareAndSelect) {
  Device dev;
  Tensor Y = Tensor::empty(dev, {4, 16}, f32);
  auto f = run(vector_kernel("Y: T.Tensor((4, 16), \"float32\")", R"(
      a = T.alloc_ub((4, 16), "float32")
      b = T.alloc_ub((4, 16), "float32")
      d = T.alloc_ub((4, 16), "float32")
      m = T.alloc_ub((32,), "uint8")
      T.tile.fill(a, 1.0)
      T.tile.fill(b, 2.0)
      a[0, 5] = v[0]
      b[3, 0] = v[0]
      T.tile.compare(m[0:8], a, 1.5, mode="LT")
      T.tile.select(d, m, a, b)
      T.copy(d, Y))"),
               dev, {Y});
  // Byte 0 of the mask (positions 0..7) is partly invalid: only bit 5 (from a[0, 5]) is, the
  // others pick valid elements (CoreShadow::mask_bits; before it, positions 0..7 were reported);
  // elsewhere a < 1.5 picks a, so the invalid b[3, 0] (position 48) is not picked.
  EXPECT_EQ(stored_invalid(f), std::vector<int64_t>{5}) << all(f);
}

// gather: from the offset and the element it addresses; an invalid offset is also an address
// finding. Sorts: every entry from every score.
TEST(StaleRules, GatherAndSort) {
  Device dev;
  Tensor Y = Tensor::empty(dev, {16}, f32), Z = Tensor::empty(dev, {64}, f32);
  auto f = run(vector_kernel("Y: T.Tensor((16,), \"float32\"), Z: T.Tensor((64,), \"float32\")", R"(
      s = T.alloc_ub((16,), "float32")
      o = T.alloc_ub((16,), "uint32")
      oi = T.view(o, "int32")
      d = T.alloc_ub((16,), "float32")
      x = T.alloc_ub((32,), "float32")
      y = T.alloc_ub((64,), "float32")
      T.tile.fill(s, 1.0)
      T.tile.arith_progression(oi, 0, 4)
      o[3] = w[0]
      s[7] = v[0]
      T.tile.gather(d, s, o)
      T.copy(d, Y)
      T.tile.fill(x, 1.0)
      x[4] = v[0]
      T.sort(y, x, 32)
      T.copy(y, Z))"),
               dev, {Y, Z});
  EXPECT_EQ(stored_invalid(f), (std::vector<int64_t>{3, 7})) << all(f);
  EXPECT_EQ(stored_invalid(f, "Z"), range(0, 64)) << all(f);
  bool address = false;
  for (const auto& x : f)
    address |=
        x.kind == StaleFinding::Kind::Address && x.op == "tile.gather" && x.operand == "offsets";
  EXPECT_TRUE(address) << all(f);
}

// A clipped copy (legalize_copies' attribute) leaves its destination's elements outside the
// copied region and its pad lanes stale, even where they held valid data.
TEST(StaleRules, AClippedCopyLeavesTheRestOfItsDestinationStale) {
  Device dev;
  Tensor X = uniform(dev, {2, 10}, f32, 1), Y = Tensor::empty(dev, {4, 16}, f32);
  auto f =
      run(vector_kernel("X: T.Tensor((2, 10), \"float32\"), Y: T.Tensor((4, 16), \"float32\")", R"(
      x = T.alloc_ub((4, 16), "float32")
      T.tile.fill(x, 0.0)
      T.copy(X, x[0:2, 0:10], pad=True, clipped=True)  # @k.py:7
      T.copy(x, Y))"),
          dev, {X, Y});
  EXPECT_EQ(stored_invalid(f), range(32, 64)) << all(f);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].origin,
            "stale since the clipped copy at k.py:7 (its destination's elements outside the copied "
            "region)");
}

// The cube: C[i, j] from row i of A and column j of B over K, through GM -> L1 (ND -> NZ),
// LoadData and the fixpipe.
std::string gemm_kernel(int am, int ak, int bk, int bn, int tk, bool clear) {
  return fmt::format(R"(@T.prim_func
def g(A: T.Tensor(({0}, {1}), "float16"), B: T.Tensor(({2}, {3}), "float16"), C: T.Tensor((32, 32), "float32")):
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Cube"):
            a = T.alloc_L1((32, {4}), "float16")
            b = T.alloc_L1(({4}, 32), "float16")
            c = T.alloc_L0C((32, 32), "float32")
{5}            T.copy(A, a[0:{0}, 0:{1}])
            T.copy(B, b[0:{2}, 0:{3}])
            T.gemm_v0(a, b, c, True)
            T.copy(c, C)
)",
                     am, ak, bk, bn, tk,
                     clear ? "            T.init_const(a, T.float16(0.0))\n            "
                             "T.init_const(b, T.float16(0.0))\n"
                           : "");
}

TEST(StaleRules, CubeOutputsFollowRowsOfAAndColumnsOfB) {
  Device dev;
  Tensor A = uniform(dev, {16, 32}, f16, 1), B = uniform(dev, {32, 16}, f16, 2),
         C = Tensor::empty(dev, {32, 32}, f32);
  auto f = run(gemm_kernel(16, 32, 32, 16, 32, false), dev, {A, B, C});
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 32; ++i)
    for (int64_t j = 0; j < 32; ++j)
      if (i >= 16 || j >= 16) want.push_back(i * 32 + j);
  EXPECT_EQ(stored_invalid(f, "C"), want) << all(f);
}

// The K-tail GEMM of docs/virtual_npu.md: a GM -> L1 copy of K = 40 columns zero-fills only to
// the 32-byte block (48); the tile's columns 48..63 meet B's never-written rows 48..63 in every
// output. Clearing both tiles first (InitConstValue) makes it right, and quiet.
TEST(StaleRules, AKTailGemmThatDoesNotClearItsTilesIsReported) {
  Device dev;
  Tensor A = uniform(dev, {32, 40}, f16, 1), B = uniform(dev, {40, 32}, f16, 2),
         C = Tensor::empty(dev, {32, 32}, f32);
  EXPECT_EQ(stored_invalid(run(gemm_kernel(32, 40, 40, 32, 64, false), dev, {A, B, C}), "C"),
            range(0, 1024));
  EXPECT_EQ(all(run(gemm_kernel(32, 40, 40, 32, 64, true), dev, {A, B, C})), "");
}

// The scalar side: a branch, a loop bound and a region address from invalid values, a scalar
// store of one to GM; a T.if_then_else counts only the branch it takes.
TEST(StaleRules, ScalarUsesOfInvalidValues) {
  Device dev;
  Tensor X = uniform(dev, {4, 16}, f32, 1), Y = full(dev, {4, 16}, f32, 0.0);
  auto f =
      run(vector_kernel("X: T.Tensor((4, 16), \"float32\"), Y: T.Tensor((4, 16), \"float32\")", R"(
      x = T.alloc_ub((4, 16), "float32")
      n = T.alloc_var("int32")
      if x[0, 0] > 0.0:  # @s.py:3
          n[0] = 1
      for i in T.serial(w[0]):  # @s.py:5
          n[0] = 2
      T.copy(X[0:4, w[0]:w[0] + 8], x[0:4, 0:8])  # @s.py:7
      Y[0, 0] = v[0]  # @s.py:8
      Y[0, 1] = T.if_then_else(vid == 0, 2.0, v[0])  # @s.py:9)"),
          dev, {X, Y});
  // The copy at s.py:7 may pass X's end (w is unknown), so clip_expert_copies clips both sides
  // (issue 29): the tile side's extent reads w too, a second address finding.
  ASSERT_EQ(f.size(), 5u) << all(f);
  EXPECT_EQ(f[0].kind, StaleFinding::Kind::Branch);
  EXPECT_EQ(f[0].loc.str(), "s.py:3");
  EXPECT_EQ(f[0].origin, "never written in this launch");
  EXPECT_EQ(f[1].kind, StaleFinding::Kind::LoopBound);
  EXPECT_EQ(f[1].loc.str(), "s.py:5");
  EXPECT_NE(f[1].origin.find("the T.alloc_var 'w'"), std::string::npos);
  EXPECT_EQ(f[2].kind, StaleFinding::Kind::Address);
  EXPECT_EQ(f[2].operand, "src");
  EXPECT_EQ(f[2].buffer, "X");
  EXPECT_EQ(f[2].loc.str(), "s.py:7");
  EXPECT_EQ(f[3].kind, StaleFinding::Kind::Address);
  EXPECT_EQ(f[3].operand, "dst");
  EXPECT_EQ(f[3].buffer, "x");
  EXPECT_EQ(f[4].kind, StaleFinding::Kind::StoreToGM);
  EXPECT_EQ(f[4].op, "store");
  EXPECT_EQ(f[4].element, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(f[4].loc.str(), "s.py:8");
}

// On-chip memory persists across the blocks a core runs, but what block 0 left is not block
// 24's data (on A2, block 24 runs on block 0's cores).
TEST(StaleRules, WhatAnEarlierBlockLeftIsStale) {
  Device dev;
  Tensor Y = Tensor::empty(dev, {16}, f32);
  const std::string text = R"(@T.prim_func
def k(Y: T.Tensor((16,), "float32")):
    with T.Kernel(25, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            if vid == 0:
                x = T.alloc_ub((16,), "float32")
                if cid == 0:
                    T.tile.fill(x, 1.0)
                if cid == 24:
                    T.copy(x, Y)
)";
  auto f = run(text, dev, {Y});
  ASSERT_EQ(f.size(), 1u) << all(f);
  EXPECT_EQ(f[0].origin,
            "left in the core's memory by an earlier block (this block never wrote it)");
  EXPECT_EQ(f[0].core, "block 24 AIV0");
}

// atomic_add: each GM element as valid as both addends, and read back so; workspaces are
// invalid until written.
TEST(StaleRules, AtomicAddAndWorkspaces) {
  Device dev;
  Tensor Y = full(dev, {16}, f32, 0.0), Z = Tensor::empty(dev, {16}, f32),
         R = Tensor::empty(dev, {16}, f32);
  const std::string text = R"(@T.prim_func
def k(Y: T.Tensor((16,), "float32"), Z: T.Tensor((16,), "float32"), R: T.Tensor((16,), "float32")):
    ws = T.alloc_workspace((16,), "float32")
    with T.Kernel(1, is_npu=True) as (cid, vid):
        with T.Scope("Vector"):
            if vid == 0:
                v = T.alloc_var("float32")
                x = T.alloc_ub((16,), "float32")
                T.tile.fill(x, 1.0)
                x[9] = v[0]
                T.atomic_add(Y, x)
                T.copy(Y, x)
                T.copy(x, R)
                T.tile.fill(x, 1.0)
                T.copy(x[0:8], ws[0:8])
                T.copy(ws, x)
                T.copy(x, Z)
)";
  auto f = run(text, dev, {Y, Z, R});
  EXPECT_EQ(stored_invalid(f), std::vector<int64_t>{9}) << all(f);
  EXPECT_EQ(stored_invalid(f, "R"), std::vector<int64_t>{9}) << all(f);
  EXPECT_EQ(stored_invalid(f, "Z"), range(8, 16)) << all(f);
}

}  // namespace
}  // namespace tl
