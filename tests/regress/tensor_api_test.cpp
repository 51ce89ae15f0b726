// Regressions of the host Tensor API on bad input (issue 10, item 2): sizes, strides and ranges
// that overflow int64 or are negative, operations on an undefined (default-constructed)
// Tensor, a Tensor that outlives its Device, and out-of-range indices. Each was a heap
// corruption, a null dereference, a use after free or a std exception before; each must be a
// tl::Error naming what was wrong, or (for the lifetime case) simply work.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "pass/pass_test_util.h"
#include "tl/runtime.h"

namespace tl {
namespace {

using testing::error_of;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

#define EXPECT_HAS(msg, part) \
  EXPECT_NE((msg).find(part), std::string::npos) << "missing \"" << (part) << "\" in: " << (msg)

TEST(TensorApi, EmptyRejectsOverflowingShape) {
  Device dev;
  // 2^61 + 1 rows of 8 fp32: the element count wraps to 8 and 32 bytes were allocated.
  std::string m = error_of([&] {
    Tensor::empty(dev, {(int64_t{1} << 61) + 1, 8}, DType::Float32);
  });
  EXPECT_HAS(m, "Tensor::empty");
  EXPECT_HAS(m, "2305843009213693953, 8");
  // The element count fits but the byte count does not.
  m = error_of([&] { Tensor::empty(dev, {int64_t{1} << 62}, DType::Float32); });
  EXPECT_HAS(m, "bytes");
  // No elements, but a stride that overflows: rejected rather than stored wrapped.
  m = error_of([&] {
    Tensor::empty(dev, {0, int64_t{1} << 40, int64_t{1} << 40}, DType::Float32);
  });
  EXPECT_HAS(m, "Tensor::empty");
  m = error_of([&] { Tensor::empty(dev, {4, -1}, DType::Float32); });
  EXPECT_HAS(m, "dimension 1 is -1");
  EXPECT_EQ(dev.gm_bytes_in_use(), 0);
}

TEST(TensorApi, ZeroDimensionAfterHugeDimensionsIsEmpty) {
  Device dev;
  // Found by fuzz_tensor_api: every stride is 0 or 1, but numel() multiplied the dimensions
  // left to right and overflowed before it reached the 0 (UBSan).
  Tensor t = Tensor::empty(dev, {std::numeric_limits<int64_t>::max(), int64_t{1} << 62, 0},
                           DType::Float32);
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.nbytes(), 0);
  EXPECT_TRUE(t.is_contiguous());
}

TEST(TensorApi, SliceRejectsOverflowingRange) {
  Device dev;
  Tensor t = Tensor::empty(dev, {8}, DType::Float32);
  // start + length wrapped negative and passed the bounds check; set() then wrote far outside.
  std::string m = error_of([&] { t.slice(0, kMax - 1, 2); });
  EXPECT_HAS(m, "Tensor::slice");
  EXPECT_HAS(m, "9223372036854775806");
  m = error_of([&] { t.slice(0, kMax, kMax); });
  EXPECT_HAS(m, "Tensor::slice");
  m = error_of([&] { t.slice(0, -1, 2); });
  EXPECT_HAS(m, "Tensor::slice");
  m = error_of([&] { t.slice(1, 0, 1); });
  EXPECT_HAS(m, "dim 1");
  Tensor s = t.slice(0, 6, 2);  // in range: still fine
  s.set(1, 5.0);
  EXPECT_EQ(t.get(7), 5.0);
}

TEST(TensorApi, ReshapeRejectsNegativeAndOverflowingShapes) {
  Device dev;
  Tensor t = Tensor::empty(dev, {256}, DType::Float32);
  // (-2) * (-128) == 256 was accepted.
  std::string m = error_of([&] { t.reshape({-2, -128}); });
  EXPECT_HAS(m, "Tensor::reshape");
  EXPECT_HAS(m, "-2");
  // (2^56 + 1) * 256 == 2^64 + 256 wraps to 256.
  m = error_of([&] { t.reshape({(int64_t{1} << 56) + 1, 256}); });
  EXPECT_HAS(m, "Tensor::reshape");
  Tensor z = Tensor::empty(dev, {0}, DType::Float32);
  m = error_of([&] { z.reshape({0, int64_t{1} << 40, int64_t{1} << 40}); });  // strides overflow
  EXPECT_HAS(m, "Tensor::reshape");
  EXPECT_EQ(t.reshape({16, 16}).dim(1), 16);
}

TEST(TensorApi, UndefinedTensorOperationsAreErrors) {
  Tensor u;
  EXPECT_FALSE(u.defined());
  EXPECT_EQ(u.numel(), 0);
  EXPECT_EQ(u.nbytes(), 0);
  EXPECT_EQ(u.device(), nullptr);
  for (auto* what : {"data", "get", "set", "slice", "reshape", "to_vector", "dlpack"}) {
    std::string m = error_of([&] {
      std::string w = what;
      if (w == "data") (void)u.data();
      if (w == "get") (void)u.get(0);
      if (w == "set") u.set(0, 1.0);
      if (w == "slice") (void)u.slice(0, 0, 0);
      if (w == "reshape") (void)u.reshape({});
      if (w == "to_vector") (void)u.to_vector();
      if (w == "dlpack") (void)u.dlpack();
    });
    EXPECT_HAS(m, "undefined");
  }
  EXPECT_HAS(u.describe(), "undefined");
}

TEST(TensorApi, TensorOutlivesItsDevice) {
  Tensor t;
  {
    Device dev;
    t = Tensor::empty(dev, {4}, DType::Float32);
    EXPECT_EQ(t.device(), &dev);
  }
  // The storage and its accounting stay valid; the tensor no longer claims a device.
  EXPECT_EQ(t.device(), nullptr);
  t.set(3, 2.5);
  EXPECT_EQ(t.get(3), 2.5);
  t = Tensor();  // releases the storage after the device: was a heap use after free
  EXPECT_FALSE(t.defined());
}

TEST(TensorApi, OutOfRangeIndicesAreErrors) {
  Device dev;
  Tensor t = Tensor::empty(dev, {2, 3}, DType::Float32);
  EXPECT_HAS(error_of([&] { t.get(6); }), "element 6 is outside the 6 elements");
  EXPECT_HAS(error_of([&] { t.set(-1, 0.0); }), "element -1");
  EXPECT_HAS(error_of([&] { t.dim(2); }), "dim 2");  // was std::out_of_range
  EXPECT_HAS(error_of([&] { t.dim(-1); }), "dim -1");
  EXPECT_EQ(t.dim(1), 3);
  std::string m = error_of([&] { from_vector(dev, {2, 2}, DType::Float32, {1.0, 2.0, 3.0}); });
  EXPECT_HAS(m, "3 values");
  EXPECT_HAS(m, "4 elements");
  // The count is checked before anything is allocated.
  m = error_of([&] { from_vector(dev, {int64_t{1} << 40}, DType::Float32, {1.0}); });
  EXPECT_HAS(m, "1 values");
  EXPECT_EQ(dev.gm_bytes_in_use(), 6 * 4);
}

TEST(TensorApi, DeviceAllocateRejectsHugeAndOverflowingSizes) {
  Device dev;
  Tensor keep = Tensor::empty(dev, {1024}, DType::Float32);
  // in_use + bytes wrapped negative and passed the capacity check.
  std::string m = error_of([&] { dev.allocate(kMax - 100); });
  EXPECT_HAS(m, "GM exhausted");
  m = error_of([&] { dev.allocate(-1); });
  EXPECT_HAS(m, "negative");
  EXPECT_EQ(dev.gm_bytes_in_use(), 4096);
}

// Tensor::wrap (the Python front end's zero-copy DLPack import): the caller's memory, checked
// like every other constructor, and never counted as device GM.
TEST(TensorApi, WrapViewsCallerMemoryWithoutCopying) {
  Device dev;
  std::vector<float> host(6);
  for (int i = 0; i < 6; ++i) host[i] = static_cast<float>(i);
  Tensor t = Tensor::wrap(dev, host.data(), {2, 3}, {3, 1}, DType::Float32);
  EXPECT_EQ(t.data(), reinterpret_cast<uint8_t*>(host.data()));
  EXPECT_EQ(t.get(4), 4.0);
  t.set(5, 50.0);
  EXPECT_EQ(host[5], 50.0f);  // the write landed in the caller's memory
  EXPECT_EQ(dev.gm_bytes_in_use(), 0);
  EXPECT_EQ(t.device(), &dev);
  // A transposed view (column-major strides) spans the same six elements.
  Tensor tt = Tensor::wrap(dev, host.data(), {3, 2}, {1, 3}, DType::Float32);
  EXPECT_EQ(tt.get(1), 3.0);
  EXPECT_FALSE(tt.is_contiguous());
}

TEST(TensorApi, WrapRejectsBadStridesShapesAndPointers) {
  Device dev;
  float x = 0;
  std::string m = error_of([&] {
    Tensor::wrap(dev, &x, {2, 2}, {2, -1}, DType::Float32, "argument 'X'");
  });
  EXPECT_HAS(m, "argument 'X'");
  EXPECT_HAS(m, "negative");
  m = error_of([&] { Tensor::wrap(dev, &x, {2, 2}, {1}, DType::Float32); });
  EXPECT_HAS(m, "1 strides for 2 dimensions");
  m = error_of([&] { Tensor::wrap(dev, &x, {kMax, 2}, {2, 1}, DType::Float32); });
  EXPECT_HAS(m, "overflow");
  m = error_of([&] { Tensor::wrap(dev, nullptr, {2}, {1}, DType::Float32); });
  EXPECT_HAS(m, "null");
  // No elements: no bytes to address, a null pointer is fine.
  Tensor e = Tensor::wrap(dev, nullptr, {0, 4}, {4, 1}, DType::Float32);
  EXPECT_EQ(e.numel(), 0);
}

// to_vector's contiguous fast path (issue 31) reads the same values as get(i), bit for bit, in
// every dtype, on a whole tensor, a contiguous row slice (a byte offset into the storage) and a
// strided column slice (the per-element path); sizes 1, 7, 33 as tails.
TEST(TensorApi, ToVectorEqualsGetOnContiguousAndStridedViews) {
  Device dev;
  for (DType t : {DType::Bool, DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::UInt8,
                  DType::UInt16, DType::UInt32, DType::UInt64, DType::Float16, DType::BFloat16,
                  DType::Float32, DType::Float8E4M3, DType::Float8E5M2}) {
    for (int64_t n : {1, 7, 33}) {
      Tensor x = uniform(dev, {n + 2, n}, t, 7, -100.0, 100.0);
      for (const Tensor& v : {x, x.slice(0, 1, n), x.slice(1, n / 2, n - n / 2)}) {
        auto got = v.to_vector();
        ASSERT_EQ(static_cast<int64_t>(got.size()), v.numel());
        for (int64_t i = 0; i < v.numel(); ++i) {
          const double want = v.get(i);
          EXPECT_EQ(std::memcmp(&got[i], &want, sizeof want), 0)
              << dtype_name(t) << " n " << n << " element " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tl
