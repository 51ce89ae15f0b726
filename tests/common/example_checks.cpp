// Reference checks of the example kernels (gemm, rms_norm, minicv, flash_attention).
#include "common/example_checks.h"

#include <cmath>

#include "common/references.h"

namespace tl::ref {
namespace {
const Tensor& tensor(const std::vector<Arg>& a, size_t i) { return std::get<Tensor>(a.at(i).value); }
double scalar(const std::vector<Arg>& a, size_t i) { return std::get<double>(a.at(i).value); }
}  // namespace

std::optional<std::string> check_kernel(const std::string& kernel, const KernelArgs& p, const std::vector<Arg>& a) {
  if (kernel == "gemm" || kernel == "gemm_pipelined") {
    int M = p.get("M"), N = p.get("N"), K = p.get("K");
    auto want = matmul(tensor(a, 0).to_vector(), tensor(a, 1).to_vector(), M, N, K);
    return compare(tensor(a, 2).to_vector(), want, N, 1e-3 * std::sqrt(K), 1e-2);
  }
  if (kernel == "rms_norm") {
    int M = p.get("M"), N = p.get("N");
    auto want = rms_norm(tensor(a, 0).to_vector(), tensor(a, 1).to_vector(), M, N, scalar(a, 3));
    return compare(tensor(a, 2).to_vector(), want, N, 1e-2, 1.6e-2);
  }
  if (kernel == "gelu") {  // the sigmoid form x * sigmoid(1.702 x) the example computes
    auto x = tensor(a, 0).to_vector();
    for (auto& v : x) v = v / (1.0 + std::exp(-1.702 * v));
    return compare(tensor(a, 1).to_vector(), x, p.get("N"), 1e-5, 1e-4);
  }
  if (kernel == "elementwise_add") {
    auto x = tensor(a, 0).to_vector(), y = tensor(a, 1).to_vector();
    for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
    return compare(tensor(a, 2).to_vector(), x, p.get("N"), 1e-3, 1e-3);
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
    bool half = p.get_dtype("out_dtype") == DType::Float16;
    return compare(tensor(a, 2).to_vector(), want, N, half ? 1e-3 : 1e-5, half ? 2e-3 : 1e-4);
  }
  if (kernel == "flash_attention" || kernel == "flash_attention_pipelined") {
    int Bt = p.get("B"), H = p.get("H"), S = p.get("S"), D = p.get("D");
    std::vector<double> q = tensor(a, 0).to_vector(), k = tensor(a, 1).to_vector(), v = tensor(a, 2).to_vector();
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
  return std::nullopt;
}

}  // namespace tl::ref
