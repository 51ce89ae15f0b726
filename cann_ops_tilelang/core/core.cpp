// The shared layer of cann_ops_tilelang (include/cann_ops_tilelang/core.h): argument checks
// with located messages, launch budgets read from the Target, the compiled-kernel cache keyed
// by generator parameters, and the list of ops.
#include "cann_ops_tilelang/core.h"

#include <fmt/format.h>

#include <map>
#include <mutex>

namespace cann_ops_tilelang {

namespace {
thread_local const tl::SourceLoc* t_caller = nullptr;  // the innermost ScopedCaller's
}  // namespace

tl::SourceLoc caller(const tl::Loc& loc) {
  if (t_caller != nullptr) return *t_caller;
  return tl::SourceLoc(loc.file_name(), static_cast<int>(loc.line()));
}

int ir_size(int64_t v, std::string_view what) {
  if (v < INT32_MIN || v > INT32_MAX)
    throw tl::Error(fmt::format("kernel size '{}' does not fit int32: got {}", what, v));
  return static_cast<int>(v);
}

ScopedCaller::ScopedCaller(tl::SourceLoc loc) : prev_(t_caller), loc_(std::move(loc)) {
  t_caller = &loc_;
}
ScopedCaller::~ScopedCaller() {
  t_caller = prev_;
}

namespace {
std::string shape_str(const std::vector<int64_t>& s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}
std::string dtypes_str(const std::vector<tl::DType>& d) {
  std::vector<std::string> names;
  for (auto t : d) names.emplace_back(tl::dtype_name(t));
  return fmt::format("{}", fmt::join(names, " or "));
}
}  // namespace

void Checker::fail(std::string_view arg, std::string_view what) const {
  throw tl::Error(loc_, fmt::format("{}: argument '{}' {}", op_, arg, what));
}

void Checker::tensor(std::string_view arg, const tl::Tensor& t) const {
  if (!t.defined()) fail(arg, "must be a tensor: expected a defined tensor, got an undefined one");
  if (t.device() == nullptr)
    fail(arg, "must live on a Device: expected a live device, got a destroyed one");
  if (!t.is_contiguous()) {
    fail(arg,
         fmt::format("must be contiguous: expected row-major strides for shape {}, got strides {}",
                     shape_str(t.shape()), shape_str(t.strides())));
  }
}

void Checker::dtype(std::string_view arg, const tl::Tensor& t,
                    const std::vector<tl::DType>& allowed) const {
  for (auto d : allowed)
    if (t.dtype() == d) return;
  fail(arg, fmt::format("has the wrong dtype: expected {}, got {}", dtypes_str(allowed),
                        tl::dtype_name(t.dtype())));
}

void Checker::same_dtype(std::string_view arg, const tl::Tensor& t, std::string_view ref_arg,
                         const tl::Tensor& ref) const {
  if (t.dtype() != ref.dtype()) {
    fail(arg, fmt::format("has the wrong dtype: expected {} (the dtype of '{}'), got {}",
                          tl::dtype_name(ref.dtype()), ref_arg, tl::dtype_name(t.dtype())));
  }
}

void Checker::min_rank(std::string_view arg, const tl::Tensor& t, int rank) const {
  if (t.ndim() < rank)
    fail(arg,
         fmt::format("has the wrong rank: expected at least {} dimension(s), got {} (shape {})",
                     rank, t.ndim(), shape_str(t.shape())));
}

void Checker::shape(std::string_view arg, const tl::Tensor& t,
                    const std::vector<int64_t>& want) const {
  if (t.shape() != want)
    fail(arg, fmt::format("has the wrong shape: expected {}, got {}", shape_str(want),
                          shape_str(t.shape())));
}

void Checker::same_device(std::string_view arg, const tl::Tensor& t, std::string_view ref_arg,
                          const tl::Tensor& ref) const {
  if (t.device() != ref.device())
    fail(arg,
         fmt::format("is on another device: expected the device of '{}', got a different Device",
                     ref_arg));
}

void Checker::row_alignment(std::string_view arg, const tl::Tensor& t) const {
  const int64_t n = t.shape().back(), bytes = n * tl::dtype_bytes(t.dtype());
  if (bytes % 32 != 0) {
    fail(
        arg,
        fmt::format(
            "has a last dimension that breaks the 32-byte row alignment: expected a multiple of {} "
            "{} elements (32 bytes), got {}",
            32 / tl::dtype_bytes(t.dtype()), tl::dtype_name(t.dtype()), n));
  }
}

VectorBudget vector_budget(const tl::Target& target) {
  return {.blocks = target.num_aiv / 2, .ub_bytes = target.cap(tl::MemScope::UB)};
}

int64_t widest_chunk(int64_t n, int64_t quantum, int64_t cap,
                     const std::function<bool(int64_t)>& fits) {
  for (int64_t c = std::min(n, cap) / quantum * quantum; c >= quantum; c -= quantum)
    if (n % c == 0 && fits(c)) return c;
  return 0;
}

namespace {
struct Cache {
  std::mutex mu;
  std::map<std::string, tl::CompiledKernel> kernels;
  KernelCacheStats stats;
};
Cache& cache() {
  static Cache c;
  return c;
}
}  // namespace

tl::CompiledKernel cached_kernel(const std::string& key, const tl::Target& target,
                                 const std::function<tl::PrimFunc()>& build) {
  auto& c = cache();
  const std::string full = target.name + "/" + key;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (auto it = c.kernels.find(full); it != c.kernels.end()) {
      ++c.stats.hits;
      return it->second;
    }
  }
  // Built outside the lock: a compile takes long, and two threads building the same key at
  // once get equal kernels (the first stored wins).
  auto k = tl::compile(build(), target);
  std::lock_guard<std::mutex> lock(c.mu);
  ++c.stats.misses;
  return c.kernels.emplace(full, k).first->second;
}

KernelCacheStats kernel_cache_stats() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().stats;
}

void clear_kernel_cache() {
  std::lock_guard<std::mutex> lock(cache().mu);
  cache().kernels.clear();
  cache().stats = {};
}

const std::vector<OpInfo>& all_ops() {
  static const std::vector<OpInfo> ops{
      {"rms_norm",
       "RMSNorm forward over the last dimension, optional fused residual add and rstd output",
       "norm"},
      {"rms_norm_backward", "RMSNorm backward: dX, and dW reduced across AIVs in a fixed order",
       "norm"},
      {"topk_gate",
       "MoE top-k routing gate: sigmoid/softmax scores, selection bias, exact top-k (ties to the "
       "smaller index), normalised weights",
       "moe"},
      {"gemm", "C = op(A) op(B): fp16/bf16 in, fp32 accumulate, transposes, any M, N, K", "gemm"},
  };
  return ops;
}

}  // namespace cann_ops_tilelang
