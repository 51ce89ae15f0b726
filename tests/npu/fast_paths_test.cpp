// The virtual NPU's fast paths against its plain ones, bit for bit (issue 31; docs/virtual_npu.md,
// "Host implementation notes"). Every op semantics that has a batched or SIMD path keeps its
// plain element-by-element path behind TL_NPU_PLAIN_PATHS=1; each case here launches one example
// kernel twice on the same inputs, plain then fast, and requires every tensor's bytes to be
// identical. Inputs are random values of the tensor's dtype with NaN (several payloads), +-inf,
// -0, +0 and subnormals mixed in, and the shapes have tails (1, 7, 33, 100 rows or columns, not
// multiples of the tiles), so masks and partial repeats take both paths too. Where both results
// are NaN the payloads must agree too: a NaN keeps its sign and top payload bits on every path
// (include/tl/npu/numerics.h, "NaN in"). The plain cube gather used to widen through to_double,
// which returned the canonical NaN, so FlashAttention and matmul_add_dev gave 0xFE00 / 0xFFC0
// on the plain paths where the batched ones kept the input's payload (0xFF47 / 0xFFC7).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "tl/env.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"
#include "tl/runtime.h"

namespace tl {
namespace {

/// Random bits of dtype t into `n` elements at p: 7 of 8 are values in about [-2, 2], the rest
/// NaNs (payloads), infinities, signed zeros and subnormals of t.
void fill_special(uint8_t* p, int64_t n, DType t, uint64_t seed, bool specials) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> val(-2.0f, 2.0f);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = rng();
    const int kind = specials && (r & 7) == 0 ? static_cast<int>((r >> 3) % 6) : -1;
    float v = val(rng);
    uint32_t f32;
    std::memcpy(&f32, &v, 4);
    const uint32_t sign = (r >> 8) & 1;
    if (t == DType::Float32) {
      const uint32_t special[6] = {
          0x7FC00000u | (static_cast<uint32_t>(r >> 16) & 0x3FFFFF), 0x7F800000u, 0x00000000u,
          1u + (static_cast<uint32_t>(r >> 16) & 0x7FFFFE),          0x00000001u, 0x00800000u};
      uint32_t b = kind < 0 ? f32 : (special[kind] | (sign << 31));
      std::memcpy(p + 4 * i, &b, 4);
    } else if (t == DType::Float16 || t == DType::BFloat16) {
      uint16_t b;
      if (kind < 0) {
        b = t == DType::BFloat16 ? static_cast<uint16_t>(f32 >> 16)
                                 : static_cast<uint16_t>(0x3C00 + (r >> 20) % 0x0A00 - 0x0500);
        b = static_cast<uint16_t>(b | (sign << 15));
      } else {
        const bool bf = t == DType::BFloat16;
        const uint16_t payload = static_cast<uint16_t>((r >> 16) & (bf ? 0x3F : 0x1FF));
        const uint16_t special[6] = {static_cast<uint16_t>((bf ? 0x7FC0 : 0x7E00) | payload),
                                     static_cast<uint16_t>(bf ? 0x7F80 : 0x7C00),
                                     0x0000,
                                     static_cast<uint16_t>(1 + payload),
                                     0x0001,
                                     static_cast<uint16_t>(bf ? 0x0080 : 0x0400)};
        b = static_cast<uint16_t>(special[kind] | (sign << 15));
      }
      std::memcpy(p + 2 * i, &b, 2);
    } else {
      for (int64_t k = 0; k < dtype_bytes(t); ++k)
        p[i * dtype_bytes(t) + k] = static_cast<uint8_t>(rng());
    }
  }
}

/// Every tensor's bytes after one launch of `f` on fresh inputs (seeded), with the plain or the
/// fast paths.
std::vector<std::vector<uint8_t>> run(const PrimFunc& f, bool plain, bool specials) {
  ::setenv("TL_NPU_PLAIN_PATHS", plain ? "1" : "0", 1);
  Device dev;
  std::vector<Arg> args;
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < f->params.size(); ++i) {
    const auto& p = f->params[i];
    if (!p.is_tensor()) {
      args.emplace_back(is_float(p.scalar.dtype()) ? 1e-6 : 0.0);
      continue;
    }
    std::vector<int64_t> shape;
    for (const auto& s : p.tensor->shape) shape.push_back(*as_const_int(s));
    Tensor t = Tensor::empty(dev, shape, p.tensor->dtype);
    fill_special(t.data(), t.numel(), t.dtype(), 1000 + i, specials);
    tensors.push_back(t);
    args.emplace_back(t);
  }
  // The fast run without the stale-data checker (ctest sets TL_CHECK_STALE=1): a checked launch
  // keeps the plain sweep of the cores (scheduler.cpp, run_thread), so only an unchecked one
  // compares the group-local order's bytes with the plain run's.
  std::optional<bool> stale;
  if (!plain) stale = false;
  compile(f, default_target(), {.cache = false})
      .launch(dev, args, {.threads = 2, .check_stale = stale});
  ::unsetenv("TL_NPU_PLAIN_PATHS");
  std::vector<std::vector<uint8_t>> out;
  for (const auto& t : tensors) out.emplace_back(t.data(), t.data() + t.nbytes());
  return out;
}

struct Case {
  std::string kernel;
  std::map<std::string, std::string> sizes;
  bool specials = true;               // false where a special value would make every output NaN
  const char* nan_outputs = nullptr;  // a tensor the NaN inputs reach (its NaN bits compared)
};

void PrintTo(const Case& c, std::ostream* os);

std::string describe(const Case& c) {
  std::string s = c.kernel;
  for (const auto& [k, v] : c.sizes) s += "_" + k + v;
  return s;
}

void PrintTo(const Case& c, std::ostream* os) {
  *os << describe(c);
}

class FastPaths : public ::testing::TestWithParam<Case> {};

/// Element i of a float tensor is NaN (dtype t, es bytes at p).
bool is_nan_at(const uint8_t* p, DType t) {
  if (t == DType::Float32) {
    uint32_t b;
    std::memcpy(&b, p, 4);
    return (b & 0x7FFFFFFFu) > 0x7F800000u;
  }
  uint16_t b;
  std::memcpy(&b, p, 2);
  if (t == DType::Float16) return (b & 0x7FFF) > 0x7C00;
  return (b & 0x7FFF) > 0x7F80;  // bfloat16
}

TEST_P(FastPaths, SameBytesAsThePlainPaths) {
  const Case& c = GetParam();
  const PrimFunc f = build_kernel(find_kernel(c.kernel), c.sizes);
  const auto plain = run(f, true, c.specials), fast = run(f, false, c.specials);
  ASSERT_EQ(plain.size(), fast.size());
  size_t t = 0;
  for (size_t i = 0; i < f->params.size(); ++i) {
    if (!f->params[i].is_tensor()) continue;
    const DType dt = f->params[i].tensor->dtype;
    const int64_t es = dtype_bytes(dt);
    const bool floats = dt == DType::Float32 || dt == DType::Float16 || dt == DType::BFloat16;
    const auto& p = plain[t];
    const auto& q = fast[t];
    ASSERT_EQ(p.size(), q.size());
    int64_t bad = 0, first = -1;
    int64_t nans = 0;
    for (size_t e = 0; e + es <= p.size(); e += es) {
      nans += floats && is_nan_at(p.data() + e, dt);
      if (std::memcmp(p.data() + e, q.data() + e, es) == 0) continue;
      if (first < 0) first = static_cast<int64_t>(e / es);
      ++bad;
    }
    uint32_t pb = 0, qb = 0;  // the first differing element's bits on each path
    if (first >= 0) {
      std::memcpy(&pb, p.data() + first * es, std::min<int64_t>(es, 4));
      std::memcpy(&qb, q.data() + first * es, std::min<int64_t>(es, 4));
    }
    EXPECT_EQ(bad, 0) << describe(c) << ": tensor " << f->params[i].name() << " differs in " << bad
                      << " elements, the first at element " << first
                      << fmt::format(" (plain {:#x}, fast {:#x}); {} NaNs", pb, qb, nans);
    if (c.nan_outputs && floats && f->params[i].name() == c.nan_outputs) {
      EXPECT_GT(nans, 0) << describe(c) << ": the NaN inputs must reach " << c.nan_outputs;
    }
    ++t;
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  // FlashAttention: the transposing L1 -> L0B load of K, the batched L1 -> L0 loads, the fixpipe
  // and the cross-core workspaces; S tails 1, 33, 100 (keys masked in the last tile).
  for (const char* dtype : {"float16", "bfloat16"})
    for (const char* S : {"1", "33", "100"})
      v.push_back({"flash_attention_dev",
                   {{"H", "2"}, {"S", S}, {"D", "64"}, {"dtype", dtype}},
                   true,
                   std::string(S) == "1" ? nullptr : "O"});
  v.push_back({"flash_attention_dev", {{"S", "128"}, {"D", "128"}}, false});
  // A long kv loop (16 tiles, the last one masked), the shape of the host-speed runs' many
  // iterations of one statement.
  v.push_back({"flash_attention_dev", {{"H", "2"}, {"S", "1000"}, {"D", "64"}}, true, "O"});
  // The expert FlashAttention (its K^T load is an explicit transposing copy).
  v.push_back({"flash_attention", {}});
  for (const char* dtype : {"float16", "bfloat16"})
    for (const auto& mnk : std::vector<std::array<const char*, 3>>{
             {"1", "7", "33"}, {"33", "100", "7"}, {"130", "33", "300"}, {"1000", "7", "1000"}})
      v.push_back(
          {"gemm_dev",
           {{"M", mnk[0]}, {"N", mnk[1]}, {"K", mnk[2]}, {"dtype", dtype}, {"blocks", "2"}}});
  // Whole-fractal tiles: every L1 -> L0A / L0B load is whole fractals (exec_move.cpp,
  // whole_fractals_load; the library GEMM's slot bands: tests/ops/gemm_test.cpp, GemmFastPaths).
  for (const char* dtype : {"float16", "bfloat16"})
    v.push_back({"gemm_dev",
                 {{"M", "256"}, {"N", "256"}, {"K", "512"}, {"dtype", dtype}, {"blocks", "2"}}});
  v.push_back({"gemm", {}});
  v.push_back({"matmul_add_dev", {}, true, "C"});
  v.push_back({"minicv", {}});
  for (const char* M : {"1", "7", "33"}) {
    v.push_back({"softmax_dev", {{"M", M}, {"N", "1000"}}});
    v.push_back({"gelu_dev", {{"M", M}, {"N", "1000"}}});
    v.push_back({"rms_norm_dev", {{"M", M}, {"N", "1024"}}});
  }
  v.push_back({"softmax_dev", {{"M", "33"}, {"N", "4097"}}});
  v.push_back({"gelu_dev", {{"M", "100"}, {"N", "33"}}});
  v.push_back({"gelu", {}});
  v.push_back({"rms_norm", {}});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Examples, FastPaths, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return describe(info.param); });

// The switch is a registered variable (tl/env.h; env_value refuses unregistered names).
TEST(FastPathsSwitch, ThePlainSwitchIsRegistered) {
  bool found = false;
  for (const auto& v : env_registry()) found |= v.name == "TL_NPU_PLAIN_PATHS";
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace tl
