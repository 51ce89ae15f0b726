// Test harness for per-primitive tests of the virtual NPU: builds a kernel that runs a few
// vector ops on one AIV (1 block, Vector scope, vid == 0), with every GM tensor copied into a
// UB buffer of the same shape before the ops and copied back after them, and helpers for
// scalar references (the vector unit's rounding model: compute in fp32, round to the
// destination dtype with RINT) and exact comparisons.
#pragma once

#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/npu/numerics.h"

namespace tl::optest {

inline int test_level() {
  const char* e = std::getenv("TL_TEST_LEVEL");
  return e ? std::atoi(e) : 1;
}

struct BufSpec {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype;
};
struct ScalarSpec {
  std::string name;
  DType dtype;
};
using Body = std::function<void(const std::vector<Buffer>& ub, const std::vector<Var>& scalars)>;

inline std::vector<Expr> exprs(const std::vector<int64_t>& v) {
  std::vector<Expr> e;
  for (int64_t x : v) e.emplace_back(static_cast<int>(x));
  return e;
}

/// One block; AIV 0 copies every GM tensor G_<name> into UB buffer <name> (same shape),
/// runs `body`, and copies every UB buffer back to its GM tensor. Parameters: the tensors in
/// `bufs` order, then the scalars.
inline PrimFunc one_op_func(const std::vector<BufSpec>& bufs,
                            const std::vector<ScalarSpec>& scalars, const Body& body) {
  std::vector<Buffer> gm;
  std::vector<Var> sv;
  std::vector<ParamRef> params;
  for (const auto& b : bufs) {
    gm.push_back(T::Tensor("G_" + b.name, exprs(b.shape), b.dtype));
    params.emplace_back(gm.back());
  }
  for (const auto& s : scalars) {
    sv.push_back(T::Scalar(s.name, s.dtype));
    params.emplace_back(sv.back());
  }
  return T::prim_func("one_op", params, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        std::vector<Buffer> ub;
        for (const auto& b : bufs) ub.push_back(T::alloc_ub(b.name, exprs(b.shape), b.dtype));
        T::If(vid == 0, [&] {
          for (size_t i = 0; i < bufs.size(); ++i) T::copy(gm[i], ub[i]);
          T::set_flag(Pipe::MTE2, Pipe::V, 0);
          T::wait_flag(Pipe::MTE2, Pipe::V, 0);
          body(ub, sv);
          T::set_flag(Pipe::V, Pipe::MTE3, 0);
          T::wait_flag(Pipe::V, Pipe::MTE3, 0);
          for (size_t i = 0; i < bufs.size(); ++i) T::copy(ub[i], gm[i]);
        });
      });
    });
  });
}

/// Compiles and runs a one-op kernel on `dev` (one host thread).
inline void run_one_op(Device& dev, const std::vector<BufSpec>& bufs,
                       const std::vector<ScalarSpec>& scalars, const Body& body,
                       const std::vector<Arg>& args) {
  compile(one_op_func(bufs, scalars, body)).launch(dev, args, {.threads = 1});
}

/// x stored as dtype t (one rounding from the double, RINT; integers saturate) and read back.
inline double q(DType t, double x) {
  uint8_t b[8] = {};
  npu::from_double(t, x, b);
  return npu::to_double(t, b);
}
/// The vector unit's result: an fp32 value rounded to dtype t (RINT).
inline double vr(DType t, float x) {
  return q(t, static_cast<double>(x));
}
/// Integer result wrapped to the width of t.
inline double wrap(DType t, int64_t v) {
  switch (t) {
    case DType::Int8:
      return static_cast<int8_t>(static_cast<uint8_t>(v));
    case DType::UInt8:
      return static_cast<uint8_t>(v);
    case DType::Int16:
      return static_cast<int16_t>(static_cast<uint16_t>(v));
    case DType::UInt16:
      return static_cast<uint16_t>(v);
    case DType::Int32:
      return static_cast<int32_t>(static_cast<uint32_t>(v));
    case DType::UInt32:
      return static_cast<uint32_t>(v);
    default:
      return static_cast<double>(v);
  }
}

/// "" if got and want are identical (bit-exact doubles; any NaN equals any NaN), else the
/// first few mismatches.
inline std::string diff_exact(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return fmt::format("size {} != {}", got.size(), want.size());
  std::string s;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool same = (std::isnan(got[i]) && std::isnan(want[i])) ||
                std::bit_cast<uint64_t>(got[i]) == std::bit_cast<uint64_t>(want[i]);
    if (!same && bad++ < 6) s += fmt::format("[{}] got {} want {}; ", i, got[i], want[i]);
  }
  if (bad) s += fmt::format("({} of {} differ)", bad, got.size());
  return s;
}

/// Within `ulps` units in the last place of dtype t (relative), for transcendental ops.
inline std::string diff_ulps(const std::vector<double>& got, const std::vector<double>& want,
                             DType t, double ulps) {
  const double eps = t == DType::Float32 ? 0x1p-23 : t == DType::Float16 ? 0x1p-10 : 0x1p-7;
  const double tiny = t == DType::Float32 ? 0x1p-126 : t == DType::Float16 ? 0x1p-14 : 0x1p-126;
  std::string s;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(want[i])) continue;
    if (got[i] == want[i]) continue;
    double tol = ulps * eps * std::max(std::fabs(want[i]), tiny);
    if (!(std::fabs(got[i] - want[i]) <= tol) && bad++ < 6)
      s += fmt::format("[{}] got {} want {} (tol {}); ", i, got[i], want[i], tol);
  }
  if (bad) s += fmt::format("({} of {} differ)", bad, got.size());
  return s;
}

/// Raw bytes of a tensor.
inline std::vector<uint8_t> bytes_of(const Tensor& t) {
  return {t.data(), t.data() + t.nbytes()};
}

/// A region of a 1-D or 2-D buffer: starts and extents, and the flat indices it covers.
struct Region {
  std::vector<int64_t> shape, start, extent;
  BufferRegion of(const Buffer& b) const { return b.region(exprs(start), exprs(extent)); }
  std::vector<int64_t> flat() const {
    std::vector<int64_t> f;
    if (shape.size() == 1) {
      for (int64_t i = 0; i < extent[0]; ++i) f.push_back(start[0] + i);
    } else {
      for (int64_t r = 0; r < extent[0]; ++r)
        for (int64_t c = 0; c < extent[1]; ++c)
          f.push_back((start[0] + r) * shape[1] + start[1] + c);
    }
    return f;
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t e : extent) n *= e;
    return n;
  }
  std::string str() const {
    return fmt::format("buf [{}] region start [{}] extent [{}]", fmt::join(shape, ","),
                       fmt::join(start, ","), fmt::join(extent, ","));
  }
};

/// Regions with tails for an element of `bytes` bytes: a whole [5, 96 B] buffer, a strided
/// [3, 64 B] sub-region of an [8, 128 B] buffer, and a 1-D run of 3 repeats + 32 B. None
/// covers a multiple of 256 bytes.
inline std::vector<Region> tail_regions(int64_t bytes) {
  const int64_t e32 = 32 / bytes;
  return {
      Region{{5, 3 * e32}, {0, 0}, {5, 3 * e32}},
      Region{{8, 4 * e32}, {1, e32}, {3, 2 * e32}},
      Region{{25 * e32}, {0}, {25 * e32}},
  };
}

}  // namespace tl::optest
