// Regressions of the virtual NPU's run-time checks on bad input (issue 10, items 1, 4 and 5):
// a region whose start + extent overflows int64 passed the bounds check (a GM read went out
// of bounds silently, a UB -> GM copy wrote before the tensor); a loop whose variable would
// overflow its dtype ran zero iterations or values its dtype cannot hold; launch limits
// (block count, host memory, negative counts) ended in std::bad_alloc / std::length_error;
// scalar arguments out of their parameter's dtype range were silently wrapped. Each is now a
// tl::Error naming the operand, loop, argument or limit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include <unistd.h>

#include "pass/pass_test_util.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"

namespace tl {
namespace {

using testing::error_of;
constexpr DType f32 = DType::Float32, i32 = DType::Int32;
constexpr double kNearMax = 9223372036854774784.0;  // 2^63 - 1024, exact as a double

#define EXPECT_HAS(msg, part) \
  EXPECT_NE((msg).find(part), std::string::npos) << "missing \"" << (part) << "\" in: " << (msg)

/// Compiles `f` as given: these kernels are meant to get past the static checks.
CompiledKernel unchecked(const PrimFunc& f) {
  return compile(f, default_target(), {.verify = false, .lower = false});
}

/// One AIV copies X (or a region of it) into UB and back out to Y (or a region of it).
PrimFunc far_copy(bool far_read) {
  auto X = T::Tensor("X", {4096}, f32), Y = T::Tensor("Y", {4096}, f32);
  auto off = T::Scalar("off", DType::Int64);
  return T::prim_func("far_copy", {X, Y, off}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x", {2048}, f32);
        T::If(vid == 0, [&] {
          T::copy(far_read ? X.region({off}, {2048}) : X.region({0}, {2048}), x);
          T::set_flag(Pipe::MTE2, Pipe::MTE3, 0);
          T::wait_flag(Pipe::MTE2, Pipe::MTE3, 0);
          T::copy(x, far_read ? Y.region({0}, {2048}) : Y.region({off}, {2048}));
        });
      });
    });
  });
}

TEST(RuntimeBounds, GmReadRegionNearInt64MaxIsOutOfBounds) {
  // start 2^63 - 1024 + extent 2048 wrapped negative: the copy read 4 KiB before X.
  auto k = unchecked(far_copy(true));
  Device dev;
  Tensor x = Tensor::empty(dev, {4096}, f32), y = Tensor::empty(dev, {4096}, f32);
  k.launch(dev, {x, y, 2048});  // in bounds: [2048, 4096)
  std::string m = error_of([&] { k.launch(dev, {x, y, kNearMax}); });
  EXPECT_HAS(m, "out-of-bounds");
  EXPECT_HAS(m, "'X'");
  EXPECT_HAS(m, "9223372036854774784");
}

TEST(RuntimeBounds, UbToGmCopyRegionNearInt64MaxIsOutOfBounds) {
  // The same wrap on the destination: the copy wrote 4 KiB before Y (heap corruption).
  auto k = unchecked(far_copy(false));
  Device dev;
  Tensor x = Tensor::empty(dev, {4096}, f32), y = Tensor::empty(dev, {4096}, f32);
  std::string m = error_of([&] { k.launch(dev, {x, y, kNearMax}); });
  EXPECT_HAS(m, "out-of-bounds");
  EXPECT_HAS(m, "'Y'");
  m = error_of([&] { k.launch(dev, {x, y, -kNearMax}); });
  EXPECT_HAS(m, "out-of-bounds");
}

/// One AIV fills UB buffer x (placed at `address`, shaped `shape`) at region [row, 0] x [1, 8].
PrimFunc fill_ub(int64_t address, std::vector<Expr> shape) {
  auto X = T::Tensor("X", {64}, f32);
  auto row = T::Scalar("row", DType::Int64);
  return T::prim_func("fill_ub", {X, row}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x", shape, f32, address);
        T::If(vid == 0, [&] { T::tile::fill(x.region({row, 0}, {1, 8}), 1.0); });
      });
    });
  });
}

TEST(RuntimeBounds, OnChipBufferOutsideItsMemoryIsAnError) {
  // Unverified kernels: a UB buffer pinned at 2^63 - 32, or shaped (2^61, 8) fp32 (its byte
  // count wraps to 0), reached the interpreter, which wrote wherever that pointed. Compiling
  // may reject them already (the compile step's own checks); launching must.
  Device dev;
  Tensor x = Tensor::empty(dev, {64}, f32);
  for (auto [address, rows] :
       {std::pair<int64_t, int64_t>{std::numeric_limits<int64_t>::max() - 31, 2},
        {-1, int64_t{1} << 61},
        {196608 - 32, 2}}) {
    SCOPED_TRACE(fmt::format("address {} rows {}", address, rows));
    error_of([&] { unchecked(fill_ub(address, {Expr(rows), Expr(8)})).launch(dev, {x, 1}); });
  }
  unchecked(fill_ub(-1, {Expr(2), Expr(8)})).launch(dev, {x, 1});  // in its memory: runs
}

/// One AIV runs `body` on UB buffers d {64}, s {32} (int32), m {8} (uint8) and f {64} (fp32).
PrimFunc ub_op(const std::function<void(Buffer d, Buffer s, Buffer m, Buffer f)>& body) {
  auto X = T::Tensor("X", {64}, i32);
  return T::prim_func("ub_op", {X}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto d = T::alloc_ub("d", {64}, i32), s = T::alloc_ub("s", {32}, i32);
        auto m = T::alloc_ub("m", {8}, DType::UInt8);
        auto fl = T::alloc_ub("f", {64}, f32);
        T::If(vid == 0, [&] { body(d, s, m, fl); });
      });
    });
  });
}

TEST(RuntimeBounds, VectorOpsCheckOperandSizes) {
  // Unverified kernels whose operands differ in size: the integer paths of relu, bnot and the
  // shifts, compare's second operand and select's operands were staged in vectors sized by
  // one operand and read for as many elements as another has (heap over-reads).
  Device dev;
  Tensor x = Tensor::empty(dev, {64}, i32);
  std::vector<std::pair<const char*, std::function<void(Buffer, Buffer, Buffer, Buffer)>>> cases = {
      {"relu", [](Buffer d, Buffer s, Buffer, Buffer) { T::tile::relu(d, s); }},
      {"bitwise_not", [](Buffer d, Buffer s, Buffer, Buffer) { T::tile::bitwise_not(d, s); }},
      {"shift_left", [](Buffer d, Buffer s, Buffer, Buffer) { T::tile::shift_left(d, s, 1); }},
      {"compare", [](Buffer d, Buffer s, Buffer m, Buffer) { T::tile::compare(m, d, s, "LT"); }},
      {"select", [](Buffer d, Buffer s, Buffer m,
                    Buffer f) { T::tile::select(f, m, d.region({0}, {32}), s); }},
  };
  for (auto& [name, body] : cases) {
    SCOPED_TRACE(name);
    std::string m = error_of([&] { unchecked(ub_op(body)).launch(dev, {x}); });
    EXPECT_HAS(m, "elements");
  }
}

TEST(RuntimeBounds, CubeOpsRejectTilesThatAreNotMatrices) {
  // A rank-1 L0A/L0B/L0C operand made T.mma index dimension size() - 2 of a one-entry index
  // vector: a write before the vector (heap corruption).
  auto X = T::Tensor("X", {64}, f32);
  auto f = T::prim_func("mma_1d", {X}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Cube, [&] {
        auto a = T::alloc_L0A("a", {256}, DType::Float16),
             b = T::alloc_L0B("b", {256}, DType::Float16);
        auto c = T::alloc_L0C("c", {256}, f32);
        T::mma(a, b, c, true);
      });
    });
  });
  Device dev;
  Tensor x = Tensor::empty(dev, {64}, f32);
  std::string m = error_of([&] { unchecked(f).launch(dev, {x}); });
  EXPECT_HAS(m, "2-D tile");
  EXPECT_HAS(m, "'A'");
}

TEST(RuntimeBounds, GmToL1CopyOfAThreeDimensionalRegion) {
  // X[0:2, 0:16, 0:16] of a [2, 32, 16] tensor into a whole [32, 16] L1 buffer: the fast ND ->
  // NZ path read row r at r * 16, i.e. X[0, 16:32] for the second half instead of X[1, 0:16].
  // Checked through C = A x I (A the L1 tile, I the identity).
  auto X = T::Tensor("X", {2, 32, 16}, DType::Float16),
       I = T::Tensor("I", {16, 16}, DType::Float16);
  auto Y = T::Tensor("Y", {32, 16}, f32);
  auto f = T::prim_func("copy3d", {X, I, Y}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Cube, [&] {
        auto a = T::alloc_L1("a", {32, 16}, DType::Float16),
             id = T::alloc_L1("id", {16, 16}, DType::Float16);
        auto c = T::alloc_L0C("c", {32, 16}, f32);
        T::copy(X.region({0, 0, 0}, {2, 16, 16}), a);
        T::copy(I, id);
        T::set_flag(Pipe::MTE2, Pipe::MTE1, 0);
        T::wait_flag(Pipe::MTE2, Pipe::MTE1, 0);
        T::gemm_v0(a, id, c, {.init = true});
        T::set_flag(Pipe::M, Pipe::FIX, 0);
        T::wait_flag(Pipe::M, Pipe::FIX, 0);
        T::copy(c, Y);
      });
    });
  });
  Device dev;
  Tensor x = arange(dev, {2, 32, 16}, DType::Float16, 0, 1),
         id = Tensor::empty(dev, {16, 16}, DType::Float16);
  for (int i = 0; i < 16; ++i) id.set(i * 16 + i, 1.0);
  Tensor y = Tensor::empty(dev, {32, 16}, f32);
  unchecked(f).launch(dev, {x, id, y});
  for (int r = 0; r < 32; ++r)
    for (int col = 0; col < 16; ++col) {
      int64_t want = (r < 16 ? r : 32 + r - 16) * 16 + col;  // X[r / 16, r % 16, col]
      ASSERT_EQ(y.get(r * 16 + col), static_cast<double>(want)) << "row " << r << " col " << col;
    }
}

/// Counts the iterations of `serial(min, extent)` into O[0] and the last value of i into O[1].
PrimFunc count_loop(Expr min, Expr extent) {
  auto O = T::Tensor("O", {8}, i32);
  return T::prim_func("count_loop", {O}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        T::If(vid == 0, [&] {
          auto n = T::alloc_var("n", i32, Expr(0));
          auto last = T::alloc_var("last", i32, Expr(-1));
          T::serial(min, extent, [&](Expr i) {
            T::assign(n, n() + 1);
            T::assign(last, i);
          });
          T::store(O, {0}, n());
          T::store(O, {1}, last());
        });
      });
    });
  });
}

TEST(RuntimeBounds, LoopVariableOverflowingItsDtypeIsAnError) {
  Device dev;
  Tensor o = Tensor::empty(dev, {8}, i32);
  // min = INT64_MAX - 5, extent 10: ran 0 iterations (min + extent wrapped negative).
  std::string m = error_of([&] {
    unchecked(count_loop(Expr(std::numeric_limits<int64_t>::max() - 5), Expr(10))).launch(dev, {o});
  });
  EXPECT_HAS(m, "loop 'i'");
  EXPECT_HAS(m, "int32");
  EXPECT_HAS(m, "9223372036854775802");
  // An int32 loop running past 2^31 - 1: i took values an int32 cannot hold.
  m = error_of([&] { unchecked(count_loop(Expr(2147483643), Expr(10))).launch(dev, {o}); });
  EXPECT_HAS(m, "loop 'i'");
  EXPECT_HAS(m, "2147483652");
  EXPECT_HAS(m, "[-2147483648, 2147483647]");
  // The last value exactly at the top of the range runs every iteration.
  unchecked(count_loop(Expr(2147483638), Expr(10))).launch(dev, {o});
  EXPECT_EQ(o.get(0), 10);
  EXPECT_EQ(o.get(1), 2147483647);
  // An empty loop never overflows, wherever it starts.
  unchecked(count_loop(Expr(std::numeric_limits<int64_t>::max()), Expr(-3))).launch(dev, {o});
  EXPECT_EQ(o.get(0), 0);
}

// ---- launch-time limits ----------------------------------------------------------------------

TEST(LaunchLimits, BlockCountBeyondTheBoundIsAnError) {
  auto nb = T::Scalar("nb", DType::Int64);
  auto X = T::Tensor("X", {64}, f32);
  auto f = T::prim_func("many_blocks", {X, nb}, [&] {
    T::Kernel(nb, [&](Expr, Expr) { T::Scope(Core::Vector, [&] { T::pipe_barrier(Pipe::V); }); });
  });
  auto k = unchecked(f);
  Device dev;
  Tensor x = Tensor::empty(dev, {64}, f32);
  // 2^40 blocks: the per-block tables were sized first (std::bad_alloc / length_error).
  std::string m = error_of([&] { k.launch(dev, {x, 1099511627776.0}); });
  EXPECT_HAS(m, "1099511627776 blocks");
  EXPECT_HAS(m, "65535");
  m = error_of([&] { k.launch(dev, {x, 65536}); });
  EXPECT_HAS(m, "65536 blocks");
  k.launch(dev, {x, 3});
}

TEST(LaunchLimits, InitSortBufNegativeCountIsAnError) {
  auto X = T::Tensor("X", {64}, f32);
  auto num = T::Scalar("num", i32);
  auto f = T::prim_func("init_neg", {X, num}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto d = T::alloc_ub("d", {64}, f32);
        T::If(vid == 0, [&] { T::init_sort_buf(d, num); });
      });
    });
  });
  auto k = unchecked(f);
  Device dev;
  Tensor x = Tensor::empty(dev, {64}, f32);
  std::string m = error_of([&] { k.launch(dev, {x, -1}); });  // was std::length_error
  EXPECT_HAS(m, "T.init_sort_buf");
  EXPECT_HAS(m, "-1");
  k.launch(dev, {x, 0});
  k.launch(dev, {x, 32});
}

/// Sets TL_HOST_MEMORY for the scope of one test.
struct HostMemoryOverride {
  explicit HostMemoryOverride(const char* v) { setenv("TL_HOST_MEMORY", v, 1); }
  ~HostMemoryOverride() { unsetenv("TL_HOST_MEMORY"); }
};

TEST(LaunchLimits, HostMemoryIsCheckedBeforeAllocating) {
  Device dev;
  {
    HostMemoryOverride o("1048576");  // 1 MiB of host memory for GM
    Tensor small = Tensor::empty(dev, {1024}, f32);
    std::string m = error_of([&] { Tensor::empty(dev, {1 << 20}, f32); });
    EXPECT_HAS(m, "host memory");
    EXPECT_HAS(m, "4194304 bytes");
    EXPECT_HAS(m, "TL_HOST_MEMORY");
  }
  {
    HostMemoryOverride o("lots");
    EXPECT_HAS(error_of([&] { Tensor::empty(dev, {4}, f32); }), "TL_HOST_MEMORY");
  }
  // Without the override the limit is the machine's physical memory: a tensor within the
  // virtual GM's capacity (64 GiB) but beyond this machine was std::bad_alloc or the OOM killer.
  const int64_t phys = int64_t{sysconf(_SC_PHYS_PAGES)} * sysconf(_SC_PAGESIZE);
  ASSERT_GT(phys, 0);
  if (phys < dev.target().gm_bytes) {
    std::string m = error_of([&] { Tensor::empty(dev, {phys / 4 + 1024}, f32); });
    EXPECT_HAS(m, "host memory");
  }
  EXPECT_EQ(dev.gm_bytes_in_use(), 0);
}

TEST(LaunchLimits, TimedLaunchChecksTheHostMemoryOfItsSnapshots) {
  // Timed mode with data keeps copies of every tensor; they are counted before the launch.
  auto X = T::Tensor("X", {1 << 18}, f32);
  auto f = T::prim_func("big_io", {X}, [&] {
    T::Kernel(1, [&](Expr, Expr) { T::Scope(Core::Vector, [&] { T::pipe_barrier(Pipe::V); }); });
  });
  auto k = unchecked(f);
  Device dev;
  Tensor x = Tensor::empty(dev, {1 << 18}, f32);  // 1 MiB
  HostMemoryOverride o("2097152");
  npu::Profile prof;
  std::string m = error_of([&] { k.launch(dev, {x}, {.profile = &prof}); });
  EXPECT_HAS(m, "host memory");
  k.launch(dev, {x});  // fast mode needs no copies
}

// ---- scalar arguments fit their dtype -----------------------------------------------------------

PrimFunc scalar_sink() {
  auto O = T::Tensor("O", {8}, f32);
  auto a = T::Scalar("a", i32), b = T::Scalar("b", DType::Int8), u = T::Scalar("u", DType::UInt8);
  auto h = T::Scalar("h", DType::Float16), q = T::Scalar("q", DType::UInt64);
  return T::prim_func("scalar_sink", {O, a, b, u, h, q}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        T::If(vid == 0, [&] {
          T::store(O, {0}, CastNode::make(f32, a));
          T::store(O, {1}, CastNode::make(f32, b));
          T::store(O, {2}, CastNode::make(f32, u));
          T::store(O, {3}, CastNode::make(f32, h));
        });
      });
    });
  });
}

TEST(LaunchArguments, ScalarOutOfItsDtypeRangeIsAnError) {
  auto k = unchecked(scalar_sink());
  Device dev;
  Tensor o = Tensor::empty(dev, {8}, f32);
  k.launch(dev, {o, -2147483648.0, -128, 255, 65504.0, 18446744073709549568.0});
  EXPECT_EQ(o.get(0), -2147483648.0);
  EXPECT_EQ(o.get(1), -128);
  EXPECT_EQ(o.get(2), 255);

  std::string m = error_of([&] {
    k.launch(dev, {o, 3e9, 0, 0, 0, 0});
  });  // was wrapped to -1294967296
  EXPECT_HAS(m, "'a'");
  EXPECT_HAS(m, "int32");
  EXPECT_HAS(m, "[-2147483648, 2147483647]");
  EXPECT_HAS(m, "3000000000");
  m = error_of([&] { k.launch(dev, {o, 0, 300, 0, 0, 0}); });
  EXPECT_HAS(m, "'b'");
  EXPECT_HAS(m, "int8");
  EXPECT_HAS(m, "[-128, 127]");
  EXPECT_HAS(m, "300");
  m = error_of([&] { k.launch(dev, {o, 0, 0, -1, 0, 0}); });
  EXPECT_HAS(m, "'u'");
  EXPECT_HAS(m, "[0, 255]");
  m = error_of([&] { k.launch(dev, {o, std::nan(""), 0, 0, 0, 0}); });
  EXPECT_HAS(m, "'a'");
  EXPECT_HAS(m, "nan");
  m = error_of([&] { k.launch(dev, {o, 0, -INFINITY, 0, 0, 0}); });
  EXPECT_HAS(m, "'b'");
  EXPECT_HAS(m, "-inf");
  m = error_of([&] { k.launch(dev, {o, 2.5, 0, 0, 0, 0}); });
  EXPECT_HAS(m, "'a'");
  EXPECT_HAS(m, "2.5");
  m = error_of([&] { k.launch(dev, {o, 0, 0, 0, 1e6, 0}); });  // beyond float16's 65504
  EXPECT_HAS(m, "'h'");
  EXPECT_HAS(m, "float16");
  m = error_of([&] { k.launch(dev, {o, 0, 0, 0, 0, -1}); });
  EXPECT_HAS(m, "'q'");
  EXPECT_HAS(m, "uint64");
  m = error_of([&] { k.launch(dev, {o, 0, 0, 0, 0, 18446744073709551616.0}); });  // 2^64
  EXPECT_HAS(m, "'q'");
  // Infinities and NaN are values of a float dtype.
  k.launch(dev, {o, 0, 0, 0, INFINITY, 0});
  EXPECT_EQ(o.get(3), INFINITY);
}

TEST(LaunchArguments, DynamicSymbolOutOfItsDtypeRangeIsAnError) {
  auto M = T::dynamic("M"), N = T::dynamic("N");  // int32
  auto X = T::Tensor("X", {M, N}, f32);
  auto f = T::prim_func("dyn", {X}, [&] {
    T::Kernel(1, [&](Expr, Expr) { T::Scope(Core::Vector, [&] { T::pipe_barrier(Pipe::V); }); });
  });
  auto k = unchecked(f);
  Device dev;
  // No elements, but M = 2^31 + 1 cannot be an int32: it was bound as given.
  std::string m = error_of([&] { k.launch(dev, {Tensor::empty(dev, {2147483649, 0}, f32)}); });
  EXPECT_HAS(m, "'M'");
  EXPECT_HAS(m, "int32");
  EXPECT_HAS(m, "2147483649");
  k.launch(dev, {Tensor::empty(dev, {2147483647, 0}, f32)});
}

}  // namespace
}  // namespace tl
