// The shared layer of cann_ops_tilelang (include/cann_ops_tilelang/core.h): argument checks
// with located messages, launch budgets read from the Target, the compiled-kernel cache keyed
// by generator parameters, and the list of ops.
#include "cann_ops_tilelang/core.h"
#include "tl/gm_fill.h"

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
      // activation (SwiGLU)
      {"swiglu",
       "SwiGLU forward y = silu(a) * b, split on columns or rows, optional clamp and per-token "
       "weight",
       "activation"},
      {"swiglu_backward", "SwiGLU backward: da | db (zero where clamped) and the weight's gradient",
       "activation"},
      {"softmax", "softmax over the last dimension (rows of any length: chunked beyond UB)",
       "softmax"},
      {"log_softmax", "log-softmax over the last dimension (rows of any length)", "softmax"},
      {"softmax_backward", "softmax backward: dx = y (dy - sum(dy y))", "softmax"},
      {"log_softmax_backward", "log-softmax backward: dx = dy - exp(y) sum(dy)", "softmax"},
      {"layer_norm", "LayerNorm forward, weight and bias optional, mean / rstd on request", "norm"},
      {"topk_gate",
       "MoE top-k routing gate: sigmoid/softmax scores, selection bias, exact top-k (ties to the "
       "smaller index), normalised weights",
       "moe"},
      {"gemm", "C = op(A) op(B): fp16/bf16 in, fp32 accumulate, transposes, any M, N, K", "gemm"},
      {"rope",
       "RoPE forward: interleaved or half rotation of each head's rotated part, partial rotation, "
       "optional positions",
       "rope"},
      {"rope_backward", "RoPE backward: the adjoint rotation (by -theta for standard tables)",
       "rope"},
      {"layer_norm_backward",
       "LayerNorm backward: dX, and dW and dB reduced across AIVs in a fixed order", "norm"},
      {"flash_attention",
       "FlashAttention forward: o and lse (fp32), BSHD/BHSD, causal or not, any B and S",
       "attention"},
      {"topk_gate_backward",
       "MoE gate backward: the logits' gradient of the normalised top-k weights (indices given)",
       "moe"},
      {"flash_attention_backward",
       "FlashAttention backward: dq, dk, dv from o and lse (dq pass, dk/dv pass, cast pass)",
       "attention"},
  };
  return ops;
}

// ---- run options, profiles and rooflines -------------------------------------------------------

namespace {
thread_local RunOptions* t_run = nullptr;  // the innermost ScopedRun's
}  // namespace

ScopedRun::ScopedRun(RunOptions& opts) : prev_(t_run) {
  t_run = &opts;
}
ScopedRun::~ScopedRun() {
  t_run = prev_;
}

namespace {
LaunchHook& launch_hook() {
  static LaunchHook hook;
  return hook;
}
}  // namespace

// Declared where it is used (softmax.cpp, layer_norm.cpp, swiglu.cpp): the fill of an output
// whose kernel writes it whole (tl/gm_fill.h). A timing-only launch computes no data, so its
// outputs stay zero-filled rather than showing a recycled block's old bytes.
tl::GmFill output_fill();
tl::GmFill output_fill() {
  return t_run && t_run->launch.timing_only ? tl::GmFill::Zero : tl::GmFill::Unwritten;
}

void set_launch_hook(LaunchHook hook) {
  launch_hook() = std::move(hook);
}

void launch(const tl::CompiledKernel& kernel, tl::Device& dev, const std::vector<tl::Arg>& args) {
  const LaunchHook& hook = launch_hook();
  if (t_run == nullptr) {
    if (hook)
      hook(kernel, dev, args, {});
    else
      kernel.launch(dev, args);
    return;
  }
  tl::LaunchOptions opt = t_run->launch;
  tl::npu::Profile prof;
  if (t_run->profile) opt.profile = &prof;
  if (hook)
    hook(kernel, dev, args, opt);
  else
    kernel.launch(dev, args, opt);
  if (t_run->profile) t_run->profiles.push_back(std::move(prof));
}

Peaks target_peaks(const tl::Target& t) {
  const auto& c = t.costs;
  const double hz = t.clock_ghz * 1e9;
  const double fractal_flops = 2.0 * 16 * 16 * 16;  // one 16x16x16 multiply-add
  const double vec_ops_per_cycle =
      c.vector_bytes_per_repeat / 4 / c.vector_cost(tl::CostClass::VecSimple).per_repeat;
  return {.hbm_bytes_per_s = c.hbm_bytes_per_s,
          .cube_flops_per_s = t.num_aic * c.cube_fractals_per_cycle * fractal_flops * hz,
          .vector_ops_per_s = t.num_aiv * vec_ops_per_cycle * hz};
}

OpProfile summarize(const std::vector<tl::npu::Profile>& launches, const OpCost& cost,
                    const tl::Target& target) {
  OpProfile p;
  p.launches = static_cast<int>(launches.size());
  for (const auto& l : launches) {
    p.us += l.total_us;
    p.task_us += l.task_us();
    p.gm_bytes += l.gm_bytes;
  }
  const Peaks pk = target_peaks(target);
  const std::pair<double, const char*> bounds[] = {
      {cost.bytes / pk.hbm_bytes_per_s * 1e6, "hbm"},
      {cost.cube_flops / pk.cube_flops_per_s * 1e6, "cube"},
      {cost.vector_ops / pk.vector_ops_per_s * 1e6, "vector"}};
  for (const auto& [us, name] : bounds) {
    if (us > p.roofline_us || p.bound.empty()) {
      p.roofline_us = us;
      p.bound = name;
    }
  }
  const std::pair<tl::CoreKind, const char*> kinds[] = {{tl::CoreKind::Vector, "aiv"},
                                                        {tl::CoreKind::Cube, "aic"}};
  for (const auto& [kind, kname] : kinds) {
    for (int i = 0; i < tl::kNumPipes; ++i) {
      const auto pipe = static_cast<tl::Pipe>(i);
      if (pipe == tl::Pipe::ALL) continue;
      double busy_us = 0;
      for (const auto& l : launches) busy_us += l.busy_ratio(pipe, kind) * l.total_us;
      if (busy_us > 0 && p.us > 0)
        p.busy.emplace_back(fmt::format("{}.{}", kname, tl::pipe_name(pipe)), busy_us / p.us);
    }
  }
  return p;
}

std::string format_profile(const OpProfile& p) {
  std::string busy;
  for (const auto& [name, f] : p.busy) busy += fmt::format(" {} {:.0f}%", name, 100 * f);
  return fmt::format(
      "{:.1f} us simulated (task {:.1f} us, {} launch{}), {:.0f}% of the {} roofline ({:.1f} us); "
      "GM moved {:.1f} MB ({:.0f} GB/s); busy:{}",
      p.us, p.task_us, p.launches, p.launches == 1 ? "" : "es", 100 * p.roofline_fraction(),
      p.bound, p.roofline_us, p.gm_bytes / 1e6, p.us > 0 ? p.gm_bytes / p.us / 1e3 : 0.0, busy);
}

}  // namespace cann_ops_tilelang
