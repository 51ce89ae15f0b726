// split_aiv (src/pass/split_aiv.cpp), issue 13's must-show 4: with threads = 2 the two AIVs of
// a block take half the rows each (their V pipes within 5 % of each other), the results are
// bit-identical to running the vector work on AIV 0 alone, and the fallbacks (odd rows, a
// reduction over the rows) keep the work on AIV 0 with a remark that says why. Where the rows
// cannot be split but the vector work is a loop of independent tiles, the AIVs take alternate
// iterations instead (the iteration split), with a remark; a loop whose iterations depend on
// each other keeps the fallback and says why.
#include <gtest/gtest.h>

#include <cmath>

#include "pass_test_util.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/op.h"
#include "tl/printer.h"

namespace tl {
namespace {

std::vector<double> wave(int64_t n, double phase) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = std::sin(0.43 * static_cast<double>(i) + phase);
  return v;
}

/// Runs `f` (hazard-checked) on deterministic inputs; returns the last tensor argument.
std::vector<double> run(const PrimFunc& f, bool split) {
  CompileOptions opt;
  opt.dev.split_aiv = split;
  auto kern = compile(f, default_target(), opt);
  Device dev;
  std::vector<Tensor> tensors;
  std::vector<Arg> args;
  int seed = 0;
  for (const Param& p : f->params) {
    std::vector<int64_t> shape;
    int64_t n = 1;
    for (const Expr& e : p.tensor->shape) n *= shape.emplace_back(*as_const_int(e));
    tensors.push_back(from_vector(dev, shape, p.tensor->dtype, wave(n, 0.3 * ++seed)));
  }
  for (const Tensor& t : tensors) args.emplace_back(t);
  kern.launch(dev, args, {.check_hazards = true});
  return tensors.back().to_vector();
}

std::string lowered(const PrimFunc& f, std::vector<std::string>* remarks = nullptr) {
  PassOptions o;
  o.remark = [&](const SourceLoc& loc, const std::string& m) {
    if (remarks) remarks->push_back(loc.str() + ": " + m);
  };
  return print(lower(f, default_target(), o), {.locations = false});
}

/// Per block, the V pipe's busy share on AIV 0 and AIV 1 in a timed run of `f` (empty tensors
/// of the parameters' shapes).
std::map<int64_t, std::array<double, 2>> v_busy_per_aiv(const PrimFunc& f) {
  Device dev;
  std::vector<Arg> args;
  for (const Param& p : f->params) {
    std::vector<int64_t> shape;
    for (const Expr& e : p.tensor->shape) shape.push_back(*as_const_int(e));
    args.emplace_back(Tensor::empty(dev, shape, p.tensor->dtype));
  }
  npu::Profile prof;
  LaunchOptions opt;
  opt.profile = &prof;
  opt.timing_only = true;
  compile(f).launch(dev, args, opt);
  std::map<int64_t, std::array<double, 2>> v_busy;
  for (const auto& c : prof.cores)
    if (c.slot > 0) v_busy[c.block][c.slot - 1] = c.busy[static_cast<size_t>(Pipe::V)];
  return v_busy;
}

enum class Rows { MaxPerRow, MaxPerColumn, Elementwise };

/// bM rows of X per block: minus each row's maximum (a row vector), minus each column's
/// maximum (a reduction over the rows), or times 3.
PrimFunc row_kernel(int M, int N, int bM, Rows kind) {
  auto X = T::Tensor("X", {M, N}, f32), Y = T::Tensor("Y", {M, N}, f32);
  return T::prim_func("rows", {X, Y}, [&] {
    T::Kernel(ceildiv(M, bM),
              [&](Expr cid) {
                auto x = T::alloc_shared("x", {bM, N}, f32);
                T::copy(X.at({cid * bM, 0}), x);
                if (kind == Rows::Elementwise) {
                  T::Parallel({bM, N}, [&](Expr i, Expr j) { x(i, j) = x(i, j) * 3.0f; });
                } else {
                  auto r = T::alloc_fragment("r", {kind == Rows::MaxPerColumn ? N : bM}, f32);
                  T::reduce_max(x, r, kind == Rows::MaxPerColumn ? 0 : -1);
                  if (kind == Rows::MaxPerColumn)
                    T::Parallel({bM, N}, [&](Expr i, Expr j) { x(i, j) = x(i, j) - r(j); });
                  else
                    T::Parallel({bM, N}, [&](Expr i, Expr j) { x(i, j) = x(i, j) - r(i); });
                }
                T::copy(x, Y.at({cid * bM, 0}));
              },
              {.threads = 2});
  });
}

TEST(SplitAiv, EachAivTakesHalfTheRowsOfATileAndItsCopies) {
  std::string ir = lowered(row_kernel(64, 256, 16, Rows::MaxPerRow));
  EXPECT_EQ(ir.find("if vid == 0"), std::string::npos) << ir;
  // Each AIV holds its 8 rows of the 16-row tile and its 8 row maxima.
  EXPECT_NE(ir.find("x = T.alloc_ub((8, 256), \"float32\""), std::string::npos) << ir;
  EXPECT_NE(ir.find("r = T.alloc_ub((8,), \"float32\""), std::string::npos) << ir;
  EXPECT_NE(ir.find("T.copy(X[cid * 16 + vid * 8:cid * 16 + vid * 8 + 8, 0:256], x)"),
            std::string::npos)
      << ir;
  EXPECT_NE(ir.find("T.reduce_max(x, r)"), std::string::npos) << ir;
  EXPECT_EQ(run(row_kernel(64, 256, 16, Rows::MaxPerRow), true),
            run(row_kernel(64, 256, 16, Rows::MaxPerRow), false));
}

TEST(SplitAiv, OddRowsAndAReductionOverTheRowsStayOnAiv0WithARemark) {
  std::vector<std::string> remarks;
  std::string ir = lowered(row_kernel(30, 256, 3, Rows::Elementwise), &remarks);
  EXPECT_NE(ir.find("if vid == 0"), std::string::npos) << ir;
  ASSERT_EQ(remarks.size(), 1u);
  EXPECT_NE(remarks[0].find(
                "threads = 2, but the vector work stays on AIV 0: 'x' has an odd row count (3)"),
            std::string::npos)
      << remarks[0];
  EXPECT_NE(remarks[0].find("split_aiv_test.cpp:"), std::string::npos) << remarks[0];
  remarks.clear();
  ir = lowered(row_kernel(64, 256, 16, Rows::MaxPerColumn), &remarks);
  EXPECT_NE(ir.find("if vid == 0"), std::string::npos) << ir;
  ASSERT_EQ(remarks.size(), 1u);
  EXPECT_NE(remarks[0].find("the rows of 'x' meet a reduction over them"), std::string::npos)
      << remarks[0];
  // Both still give the right answer (the serial AIV 0 schedule).
  EXPECT_EQ(run(row_kernel(30, 256, 3, Rows::Elementwise), true),
            run(row_kernel(30, 256, 3, Rows::Elementwise), false));
  EXPECT_EQ(run(row_kernel(64, 256, 16, Rows::MaxPerColumn), true),
            run(row_kernel(64, 256, 16, Rows::MaxPerColumn), false));
}

/// `tiles` row tiles of bM rows per block in a T.Pipelined loop: times 3, or (carried) added to
/// a running sum that is stored after the loop, or (same_rows) every iteration storing to the
/// block's first tile, or (two_stores) stored twice.
enum class Loop { Independent, Carried, SameRows, TwoStores };
PrimFunc tile_loop(int M, int N, int bM, int tiles, Loop kind) {
  auto X = T::Tensor("X", {M, N}, f32), Y = T::Tensor("Y", {M, N}, f32);
  const int row_tiles = ceildiv(M, bM);
  return T::prim_func("tiles", {X, Y}, [&] {
    T::Kernel(
        ceildiv(row_tiles, tiles),
        [&](Expr cid) {
          auto x = T::alloc_shared("x", {bM, N}, f32), acc = T::alloc_fragment("acc", {bM, N}, f32);
          if (kind == Loop::Carried) T::clear(acc);
          T::Pipelined("t", min(Expr(tiles), row_tiles - cid * tiles), 2, [&](Expr t) {
            T::copy(X.at({(cid * tiles + t) * bM, 0}), x);
            if (kind == Loop::Carried) {
              T::Parallel({bM, N}, [&](Expr i, Expr j) { acc(i, j) = acc(i, j) + x(i, j); });
            } else {
              T::Parallel({bM, N}, [&](Expr i, Expr j) { x(i, j) = x(i, j) * 3.0f; });
              T::copy(x, Y.at({(cid * tiles + (kind == Loop::SameRows ? Expr(0) : t)) * bM, 0}));
              if (kind == Loop::TwoStores) T::copy(x, Y.at({(cid * tiles + t) * bM, 0}));
            }
          });
          if (kind == Loop::Carried) T::copy(acc, Y.at({cid * bM, 0}));
        },
        {.threads = 2});
  });
}

TEST(SplitAiv, OddRowsInALoopOfIndependentTilesSplitTheIterations) {
  std::vector<std::string> remarks;
  std::string ir = lowered(tile_loop(45, 256, 3, 5, Loop::Independent), &remarks);
  EXPECT_EQ(ir.find("if vid == 0"), std::string::npos) << ir;
  ASSERT_EQ(remarks.size(), 1u);
  EXPECT_NE(remarks[0].find(
                "the rows cannot be split ('x' has an odd row count (3)): the AIVs take alternate "
                "iterations of `for t`"),
            std::string::npos)
      << remarks[0];
  // AIV v: iterations 2 k + v of this block's min(5, 15 - 5 cid).
  EXPECT_NE(ir.find("(cid * 5 + (t_aiv_o * 4 + vid)) * 3"), std::string::npos) << ir;
  // Every trip count of the last block (15, 14, 13, 11 row tiles over blocks of 5), odd and even.
  for (int M : {45, 42, 39, 33, 3})
    EXPECT_EQ(run(tile_loop(M, 256, 3, 5, Loop::Independent), true),
              run(tile_loop(M, 256, 3, 5, Loop::Independent), false))
        << M;
}

TEST(SplitAiv, IterationsThatDependOnEachOtherStayOnAiv0WithTheReason) {
  std::vector<std::string> remarks;
  std::string ir = lowered(tile_loop(45, 256, 3, 5, Loop::Carried), &remarks);
  EXPECT_NE(ir.find("if vid == 0"), std::string::npos) << ir;
  ASSERT_EQ(remarks.size(), 1u);
  EXPECT_NE(
      remarks[0].find(
          "nor by iterations: 'acc' carries a value from one iteration of its loop to the next"),
      std::string::npos)
      << remarks[0];
  remarks.clear();
  ir = lowered(tile_loop(45, 256, 3, 5, Loop::SameRows), &remarks);
  EXPECT_NE(ir.find("if vid == 0"), std::string::npos) << ir;
  ASSERT_EQ(remarks.size(), 1u);
  EXPECT_NE(remarks[0].find("may write the same part of 'Y' in two iterations of its loop"),
            std::string::npos)
      << remarks[0];
  EXPECT_EQ(run(tile_loop(45, 256, 3, 5, Loop::SameRows), true),
            run(tile_loop(45, 256, 3, 5, Loop::SameRows), false));
  // Two stores to one tensor could meet across iterations; the split does not try to tell.
  remarks.clear();
  ir = lowered(tile_loop(45, 256, 3, 5, Loop::TwoStores), &remarks);
  EXPECT_NE(ir.find("if vid == 0"), std::string::npos) << ir;
  ASSERT_EQ(remarks.size(), 1u);
  EXPECT_NE(remarks[0].find("may write the same part of 'Y' in two iterations of its loop"),
            std::string::npos)
      << remarks[0];
}

// Must-show 4 for the iteration split: with an even number of tiles per block, the two AIVs'
// V pipes are within 5 % of each other.
TEST(SplitAiv, TheIterationSplitBalancesTheAivs) {
  PrimFunc f = tile_loop(3 * 8 * 4, 1024, 3, 8, Loop::Independent);
  const auto v_busy = v_busy_per_aiv(f);
  ASSERT_EQ(v_busy.size(), 4u);
  for (const auto& [block, busy] : v_busy) {
    SCOPED_TRACE(block);
    ASSERT_GT(busy[0], 0);
    EXPECT_LE(std::abs(busy[0] - busy[1]) / std::max(busy[0], busy[1]), 0.05)
        << busy[0] << " vs " << busy[1];
  }
}

TEST(SplitAiv, TailRowsAreClippedPerAiv) {
  // 37 rows in tiles of 16: the last tile has 5, all on AIV 0; AIV 1's copies are skipped.
  EXPECT_EQ(run(row_kernel(37, 256, 16, Rows::MaxPerRow), true),
            run(row_kernel(37, 256, 16, Rows::MaxPerRow), false));
}

// Must-show 4 on FlashAttention: the same bits with and without the split, tails included, and
// the two AIVs' V pipes within 5 % of each other.
TEST(SplitAiv, FlashAttentionIsBitIdenticalAndBalancedAcrossTheAivs) {
  for (const auto& params : std::vector<std::map<std::string, std::string>>{
           {{"S", "256"}, {"D", "128"}},
           {{"S", "200"}, {"D", "64"}},
           {{"B", "2"}, {"S", "77"}, {"D", "80"}, {"bN", "32"}}}) {
    PrimFunc f = build_kernel(find_kernel("flash_attention_dev"), params);
    SCOPED_TRACE(print(f).substr(0, 120));
    EXPECT_EQ(run(f, true), run(f, false));
  }
  PrimFunc f = build_kernel(find_kernel("flash_attention_dev"), {{"S", "512"}, {"D", "128"}});
  const auto v_busy = v_busy_per_aiv(f);
  ASSERT_FALSE(v_busy.empty());
  for (const auto& [block, busy] : v_busy) {
    SCOPED_TRACE(block);
    ASSERT_GT(busy[0], 0);
    EXPECT_LE(std::abs(busy[0] - busy[1]) / std::max(busy[0], busy[1]), 0.05)
        << busy[0] << " vs " << busy[1];
  }
}

/// A developer kernel whose 16-row tile is filled by a position-dependent op (index generation,
/// a 16 x 16 transpose) and then scaled: split by rows, AIV 1 would generate its positions from
/// 0 again, or transpose its own 8 rows alone.
enum class Positional { Index, Transpose };
PrimFunc positional_kernel(Positional kind) {
  const DType t = kind == Positional::Index ? DType::Int32 : DType::Float16;
  auto X = T::Tensor("X", {16, 16}, t), Y = T::Tensor("Y", {16, 16}, t);
  return T::prim_func("positional", {X, Y}, [&] {
    T::Kernel(1,
              [&](Expr) {
                auto x = T::alloc_shared("x", {16, 16}, t), y = T::alloc_fragment("y", {16, 16}, t);
                T::copy(X.at({0, 0}), x);
                if (kind == Positional::Index)
                  T::tile::createvecindex(y, 0);
                else
                  T::tile::transpose(y, x);
                T::Parallel({16, 16}, [&](Expr i, Expr j) { y(i, j) = y(i, j) + y(i, j); });
                T::copy(y, Y.at({0, 0}));
              },
              {.threads = 2});
  });
}

// Issue 28: split_aiv read a list of position-dependent op names and split every other `tile.*`
// op by rows, so a new position-dependent op missing from the list would have been silently
// wrong. Now each op states how its operands correspond by rows (OpDef::rows, required by the
// registry) and the pass reads that: these stay whole, and give the reference's answer.
TEST(SplitAiv, PositionDependentOpsAreNeverSplitByRows) {
  for (auto kind : {Positional::Index, Positional::Transpose}) {
    SCOPED_TRACE(kind == Positional::Index ? "createvecindex" : "transpose");
    std::vector<std::string> remarks;
    std::string ir = lowered(positional_kernel(kind), &remarks);
    EXPECT_EQ(ir.find("alloc_ub((8, 16)"), std::string::npos) << ir;
    ASSERT_EQ(remarks.size(), 1u);
    EXPECT_NE(
        remarks[0].find(kind == Positional::Index ? "T.tile.createvecindex" : "T.tile.transpose"),
        std::string::npos)
        << remarks[0];
    std::vector<double> x = wave(256, 0.3), y = run(positional_kernel(kind), true);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) {
        // fp16 inputs: the wave rounded to half, doubled exactly.
        double want = kind == Positional::Index
                          ? 2.0 * (i * 16 + j)
                          : 2.0 * static_cast<double>(static_cast<_Float16>(x[j * 16 + i]));
        ASSERT_EQ(y[i * 16 + j], want) << i << ", " << j;
      }
    EXPECT_EQ(y, run(positional_kernel(kind), false));
  }
}

TEST(SplitAiv, EveryOpSaysHowItsOperandsCorrespondByRows) {
  for (const OpDef* op : all_ops()) EXPECT_NE(op->rows, RowMap::Unset) << op->name;
  EXPECT_EQ(find_op("tile.gather")->rows, RowMap::Whole);
  EXPECT_EQ(find_op("topk")->rows, RowMap::Whole);
  EXPECT_EQ(find_op("tile.add")->rows, RowMap::Elementwise);
  EXPECT_TRUE(find_op("tile.compare")->operands[0].bitmask);
}

}  // namespace
}  // namespace tl
