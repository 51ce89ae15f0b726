// Reference checks of the example kernels (gemm, rms_norm, minicv, flash_attention, ...).
// Every kernel is checked with the tolerance of the dtype it actually ran in: a kernel that
// accepts several dtypes (ParamRule::one_of) gets a tolerance scaled to the unit roundoff of
// its output or compute dtype, so a correct fp16 run is never reported as a MISMATCH.
#include "common/example_checks.h"

#include <cmath>

#include "common/references.h"
#include "tl/arith.h"

namespace tl::ref {
namespace {
const Tensor& tensor(const std::vector<Arg>& a, size_t i) {
  return std::get<Tensor>(a.at(i).value);
}
double scalar(const std::vector<Arg>& a, size_t i) {
  return std::get<double>(a.at(i).value);
}

/// Half an ulp at 1 of float dtype `t`: the relative error of one rounding to `t`. Integer
/// results are exact (0).
double unit_roundoff(DType t) {
  switch (t) {
    case DType::Float16:
      return 0x1p-11;
    case DType::BFloat16:
      return 0x1p-8;
    case DType::Float32:
      return 0x1p-24;
    case DType::Float64:
      return 0x1p-53;
    default:
      return 0;
  }
}

/// compare() of an output of dtype `t` against `want` stored to `t` (rounded as the kernel's
/// store rounds it): a result beyond t's range is an infinity on both sides, and equal
/// infinities match. `atol` and `rtol` bound the kernel's own error.
std::string compare_stored(DType t, std::vector<double> got, std::vector<double> want, int64_t cols,
                           double atol, double rtol) {
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    want[i] = arith::round_float(t, want[i]);
    if (std::isinf(want[i]) && got[i] == want[i]) got[i] = want[i] = 0;
  }
  return compare(got, want, cols, atol, rtol);
}
}  // namespace

/// Random inputs as `tlc run` makes them (uniform in [-1, 1]; dynamic sizes 13; eps 1e-6).
std::vector<Arg> random_args(Device& dev, const PrimFunc& f) {
  std::vector<Arg> args;
  for (size_t i = 0; i < f->params.size(); ++i) {
    const auto& p = f->params[i];
    if (!p.is_tensor()) {
      args.emplace_back(is_float(p.scalar.dtype()) ? 1e-6 : 0.0);
      continue;
    }
    std::vector<int64_t> shape;
    for (const auto& s : p.tensor->shape) shape.push_back(as_const_int(s).value_or(13));
    args.emplace_back(uniform(dev, shape, p.tensor->dtype, 1 + i, -1.0, 1.0));
  }
  return args;
}

std::optional<std::string> check_kernel(const std::string& kernel, const KernelArgs& p,
                                        const std::vector<Arg>& a) {
  if (kernel == "gemm" || kernel == "gemm_pipelined" || kernel == "gemm_dev") {
    int M = p.get("M"), N = p.get("N"), K = p.get("K");
    auto want = matmul(tensor(a, 0).to_vector(), tensor(a, 1).to_vector(), M, N, K);
    return compare(tensor(a, 2).to_vector(), want, N, 1e-3 * std::sqrt(K), 1e-2);
  }
  if (kernel == "matmul_add_dev") {  // fp32 accumulation, rounded to the dtype, plus D in the dtype
    int M = p.get("M"), N = p.get("N"), K = p.get("K");
    auto want = matmul(tensor(a, 0).to_vector(), tensor(a, 1).to_vector(), M, N, K);
    auto d = tensor(a, 2).to_vector();
    for (size_t i = 0; i < want.size(); ++i) want[i] += d[i];
    return compare(tensor(a, 3).to_vector(), want, N, 1e-3 * std::sqrt(K), 1e-2);
  }
  if (kernel == "rms_norm" || kernel == "rms_norm_dev") {
    int M = p.get("M"), N = p.get("N");
    auto want = rms_norm(tensor(a, 0).to_vector(), tensor(a, 1).to_vector(), M, N, scalar(a, 3));
    return compare(tensor(a, 2).to_vector(), want, N, 1e-2, 1.6e-2);
  }
  if (kernel == "gelu" ||
      kernel == "gelu_dev") {  // the sigmoid form x * sigmoid(1.702 x) the example computes
    // Four vector ops in the dtype (mul, exp, add, div), each rounding once, plus the store.
    const DType t = p.get_dtype("dtype");
    auto x = tensor(a, 0).to_vector();
    for (auto& v : x) v = v / (1.0 + std::exp(-1.702 * v));
    return compare_stored(t, tensor(a, 1).to_vector(), x, p.get("N"), 1e-5,
                          std::max(1e-4, 8 * unit_roundoff(t)));
  }
  if (kernel == "elementwise_add" ||
      kernel == "add_dev") {  // one rounding of the exact sum (none for integers)
    const DType t = p.get_dtype("dtype");
    auto x = tensor(a, 0).to_vector(), y = tensor(a, 1).to_vector();
    for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
    return compare_stored(t, tensor(a, 2).to_vector(), x, p.get("N"), 1e-6, 2 * unit_roundoff(t));
  }
  if (kernel == "softmax_dev") {  // fp32 row softmax; the chip's exp is within ~1e-6 relative
    const int N = p.get("N");
    auto x = tensor(a, 0).to_vector();
    for (size_t r = 0; r < x.size() / N; ++r) {
      double mx = -INFINITY, sum = 0;
      for (int j = 0; j < N; ++j) mx = std::max(mx, x[r * N + j]);
      for (int j = 0; j < N; ++j) sum += x[r * N + j] = std::exp(x[r * N + j] - mx);
      for (int j = 0; j < N; ++j) x[r * N + j] /= sum;
    }
    return compare(tensor(a, 1).to_vector(), x, N, 1e-7, 1e-5);
  }
  if (kernel == "rms_norm_dynamic") {
    const Tensor& x = tensor(a, 0);
    int M = static_cast<int>(x.dim(0)), N = p.get("N");
    auto want = rms_norm(x.to_vector(), tensor(a, 1).to_vector(), M, N, scalar(a, 3));
    return compare(tensor(a, 2).to_vector(), want, N, 1e-2, 1.6e-2);
  }
  if (kernel == "minicv") {
    int M = p.get("M"), N = p.get("N"), K = p.get("K");
    auto want = matmul(tensor(a, 0).to_vector(), tensor(a, 1).to_vector(), M, N, K);
    for (auto& x : want) x = std::exp(x);
    // fp16 output: exp of a sum of K products overflows fp16 (65504) for some inputs; the
    // kernel stores inf there, as the rounded reference does.
    const DType out = p.get_dtype("out_dtype");
    bool half = out == DType::Float16;
    return compare_stored(out, tensor(a, 2).to_vector(), want, N, half ? 1e-3 : 1e-5,
                          half ? 2e-3 : 1e-4);
  }
  if (kernel == "flash_attention" || kernel == "flash_attention_pipelined" ||
      kernel == "flash_attention_dev") {
    int Bt = p.get("B"), H = p.get("H"), S = p.get("S"), D = p.get("D");
    std::vector<double> q = tensor(a, 0).to_vector(), k = tensor(a, 1).to_vector(),
                        v = tensor(a, 2).to_vector();
    std::vector<double> o = tensor(a, 3).to_vector(), want;
    size_t head = static_cast<size_t>(S) * D;
    for (int bh = 0; bh < Bt * H; ++bh) {
      auto slice = [&](const std::vector<double>& x) {
        return std::vector<double>(x.begin() + bh * head, x.begin() + (bh + 1) * head);
      };
      auto r = attention(slice(q), slice(k), slice(v), S, D, 1.0 / std::sqrt(D));
      want.insert(want.end(), r.begin(), r.end());
    }
    return compare(o, want, D, 2e-3, 2e-3);
  }
  if (kernel == "ring_sum") {  // Y[r] = X[r] / 2 + X[(r + 1) % M] / 2: halving is exact, one
                               // rounding of the sum
    const DType t = p.get_dtype("dtype");
    const int M = p.get("M"), N = p.get("N");
    auto x = tensor(a, 0).to_vector();
    std::vector<double> want(x.size());
    for (int r = 0; r < M; ++r)
      for (int j = 0; j < N; ++j)
        want[static_cast<size_t>(r) * N + j] =
            x[static_cast<size_t>(r) * N + j] / 2 + x[static_cast<size_t>((r + 1) % M) * N + j] / 2;
    return compare_stored(t, tensor(a, 1).to_vector(), want, N, 1e-6, 2 * unit_roundoff(t));
  }
  return std::nullopt;
}

}  // namespace tl::ref
