// The hazard checker's duplicate-store rule (docs/virtual_npu.md, "Duplicate stores"): two
// cores' unordered stores of identical bytes to one GM range are a remark naming both stores,
// not a hazard; different bytes (a mutation of one row of one store), or a read ordered before
// the first store but not before the second, stay a WAW hazard and fail the launch. Shapes
// include tails (rows 1, 7, 33, 1000, 4097), and the stored result is checked against an fp64
// reference.
#include <gtest/gtest.h>

#include <cmath>

#include "tl/lang.h"
#include "tl/npu/hazard.h"
#include "tl/npu/npu.h"
#include "tl/npu/trace.h"

namespace tl {
namespace {

enum class Mutation {
  None,     // both AIVs store exp(X): the same bytes
  AllRows,  // AIV1 stores exp(X) + 1
  LastRow,  // AIV1 adds 1 to its last row only
};

/// Both AIVs of `blocks` blocks load X [rows, cols], take exp and store the result to Y, the
/// same range for every core, with no order between the cores. `store_line` gets the store's
/// DSL line.
PrimFunc every_core_stores_y(int rows, int cols, int blocks, Mutation m, int* store_line) {
  auto X = T::Tensor("X", {rows, cols}, f32);
  auto Y = T::Tensor("Y", {rows, cols}, f32);
  return T::prim_func("dup_store", {X, Y}, [&] {
    T::Kernel(blocks, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x_ub", {rows, cols}, f32);
        T::copy(X, x);
        T::set_flag(Pipe::MTE2, Pipe::V, 0);
        T::wait_flag(Pipe::MTE2, Pipe::V, 0);
        T::tile::exp(x, x);
        if (m == Mutation::AllRows) {
          T::pipe_barrier(Pipe::V);
          T::tile::add(x, x, cast(f32, vid));
        } else if (m == Mutation::LastRow) {
          T::If(vid == 1, [&] {
            T::pipe_barrier(Pipe::V);
            auto last = x.region({rows - 1, 0}, {1, cols});
            T::tile::add(last, last, Expr(1.0));
          });
        }
        T::set_flag(Pipe::V, Pipe::MTE3, 0);
        T::wait_flag(Pipe::V, Pipe::MTE3, 0);
        *store_line = __LINE__ + 1;
        T::copy(x, Y);
      });
    });
  });
}

struct Outcome {
  std::string error;                 // the launch's tl::Error, or empty
  std::vector<std::string> remarks;  // LaunchOptions::hazard_remarks
  std::vector<double> x, y;
};

Outcome launch(const PrimFunc& f, int rows, int cols, int threads = 1) {
  Device dev;
  auto kern = compile(f, default_target(), {.cache = false});
  Tensor X = uniform(dev, {rows, cols}, f32, 7), Y = full(dev, {rows, cols}, f32, 0);
  Outcome r;
  try {
    kern.launch(dev, {X, Y},
                {.threads = threads, .check_hazards = true, .hazard_remarks = &r.remarks});
  } catch (const Error& e) {
    r.error = e.what();
  }
  r.x = X.to_vector();
  r.y = Y.to_vector();
  return r;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

struct Shape {
  int rows, cols;
};
class DuplicateStore : public ::testing::TestWithParam<Shape> {};

TEST_P(DuplicateStore, IdenticalBytesFromTwoCoresAreARemarkNamingBothStores) {
  const auto [rows, cols] = GetParam();
  int line = 0;
  Outcome r = launch(every_core_stores_y(rows, cols, 1, Mutation::None, &line), rows, cols);
  EXPECT_EQ(r.error, "");
  ASSERT_EQ(r.remarks.size(), 1u) << joined(r.remarks);
  const std::string& s = r.remarks[0];
  EXPECT_TRUE(contains(s, fmt::format(":{}: remark: hazard checker: duplicate store on GM", line)))
      << s;
  EXPECT_TRUE(contains(s, "copy (MTE3, block 0 AIV1) writes Y elements [0, 0] to")) << s;
  EXPECT_TRUE(contains(s, "stores the same bytes as copy (MTE3, block 0 AIV0) writes Y")) << s;
  for (size_t i = 0; i < r.x.size(); ++i)
    ASSERT_NEAR(r.y[i], std::exp(r.x[i]), 1e-6 * std::exp(r.x[i])) << i;
}

TEST_P(DuplicateStore, DifferentBytesStayAWawHazard) {
  const auto [rows, cols] = GetParam();
  int line = 0;
  for (Mutation m : {Mutation::AllRows, Mutation::LastRow}) {
    Outcome r = launch(every_core_stores_y(rows, cols, 1, m, &line), rows, cols);
    EXPECT_TRUE(contains(r.error, "WAW hazard on GM: copy (MTE3, block 0 AIV1) writes Y"))
        << r.error;
    EXPECT_TRUE(contains(r.error, "is not ordered after copy (MTE3, block 0 AIV0) writes Y"))
        << r.error;
    EXPECT_TRUE(contains(r.error, fmt::format(":{}", line))) << r.error;
    EXPECT_TRUE(r.remarks.empty()) << joined(r.remarks);
  }
}

INSTANTIATE_TEST_SUITE_P(Tails, DuplicateStore,
                         ::testing::Values(Shape{1, 64}, Shape{7, 64}, Shape{33, 64},
                                           Shape{1000, 16}, Shape{4097, 8}),
                         [](const auto& i) {
                           return fmt::format("r{}x{}", i.param.rows, i.param.cols);
                         });

TEST(DuplicateStoreAcrossBlocks, TwoBlocksOnTwoThreadsStoringTheSameBytesAreARemark) {
  // Blocks on different host threads: each store's digest is taken under the launch's GM
  // store lock, so neither sees the other's bytes half written.
  int line = 0;
  Outcome r = launch(every_core_stores_y(33, 64, 2, Mutation::None, &line), 33, 64, 2);
  EXPECT_EQ(r.error, "");
  ASSERT_EQ(r.remarks.size(), 1u) << joined(r.remarks);
  EXPECT_TRUE(contains(r.remarks[0], "(6 occurrences)")) << r.remarks[0];  // 4 stores, every pair
  Outcome bad = launch(every_core_stores_y(33, 64, 2, Mutation::LastRow, &line), 33, 64, 2);
  EXPECT_TRUE(contains(bad.error, "WAW hazard on GM")) << bad.error;
}

/// AIV0 reads Y, then (ordered after that read) stores exp(X) to it; AIV1 stores the same bytes
/// with no order against either. On the chip AIV0's read may see AIV1's store.
PrimFunc read_then_duplicate_store(int rows, int cols, int* read_line) {
  auto X = T::Tensor("X", {rows, cols}, f32);
  auto Y = T::Tensor("Y", {rows, cols}, f32);
  auto Z = T::Tensor("Z", {rows, cols}, f32);
  return T::prim_func("read_dup_store", {X, Y, Z}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x_ub", {rows, cols}, f32);
        auto z = T::alloc_ub("z_ub", {rows, cols}, f32);
        T::If(vid == 0, [&] {
          *read_line = __LINE__ + 1;
          T::copy(Y, z);
          T::set_flag(Pipe::MTE2, Pipe::MTE3, 1);
          T::wait_flag(Pipe::MTE2, Pipe::MTE3, 1);
          T::copy(z, Z);
        });
        T::copy(X, x);
        T::set_flag(Pipe::MTE2, Pipe::V, 0);
        T::wait_flag(Pipe::MTE2, Pipe::V, 0);
        T::tile::exp(x, x);
        T::set_flag(Pipe::V, Pipe::MTE3, 0);
        T::wait_flag(Pipe::V, Pipe::MTE3, 0);
        T::copy(x, Y);
      });
    });
  });
}

TEST(DuplicateStoreWithAReadBetween, IsAHazardSayingWhy) {
  int line = 0;
  Device dev;
  auto kern = compile(read_then_duplicate_store(8, 64, &line), default_target(), {.cache = false});
  Tensor X = uniform(dev, {8, 64}, f32, 3), Y = uniform(dev, {8, 64}, f32, 4),
         Z = full(dev, {8, 64}, f32, 0);
  std::vector<std::string> remarks;
  try {
    kern.launch(dev, {X, Y, Z}, {.threads = 1, .check_hazards = true, .hazard_remarks = &remarks});
    FAIL() << "expected a hazard error";
  } catch (const Error& e) {
    const std::string m = e.what();
    // The core-by-core replay runs AIV0 first: its store replaces its read in the shadow, and
    // AIV1's identical store meets only that store.
    EXPECT_TRUE(contains(m, "WAW hazard on GM: copy (MTE3, block 0 AIV1) writes Y")) << m;
    EXPECT_TRUE(contains(m,
                         "a read of them ordered before the first store is not ordered before "
                         "the second"))
        << m;
  }
  EXPECT_TRUE(remarks.empty()) << joined(remarks);
}

TEST(DuplicateStoreDigest, EqualBytesOnlyAndTheShapeCounts) {
  std::vector<uint8_t> a(1024), b(1024);
  for (size_t i = 0; i < a.size(); ++i) a[i] = b[i] = static_cast<uint8_t>(i * 7 + 3);
  auto acc = [](const std::vector<uint8_t>& v, uint64_t len, uint64_t count, uint64_t pitch) {
    npu::Access x;
    x.start = reinterpret_cast<uintptr_t>(v.data());
    x.len = len;
    x.count = count;
    x.pitch = pitch;
    return npu::digest_bytes(x);
  };
  EXPECT_EQ(acc(a, 100, 3, 300), acc(b, 100, 3, 300));
  b[2 * 300 + 99] ^= 1;  // the last byte of the last run
  EXPECT_NE(acc(a, 100, 3, 300), acc(b, 100, 3, 300));
  EXPECT_EQ(acc(a, 100, 2, 300), acc(b, 100, 2, 300));  // outside the runs: not read
  EXPECT_NE(acc(a, 300, 1, 0), acc(a, 100, 3, 100));    // the same bytes in another shape
}

}  // namespace
}  // namespace tl
