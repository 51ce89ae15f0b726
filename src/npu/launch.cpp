// compile() and launch(): argument checking and binding, then the launch itself. Logical
// blocks are placed on physical core groups (1 AIC + 2 AIV) in waves; groups are spread over
// host threads by the scheduler (scheduler.cpp); within a thread the cores of its groups run
// as cooperative interpreters (run until blocked, then the next), so a block's three cores
// always share one thread and their cross-core flags need no locks.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <thread>
#include <tuple>

#include "exec.h"
#include "program.h"
#include "replay.h"
#include "replay_isolation.h"
#include "scheduler.h"
#include "stale.h"
#include "tl/access.h"
#include "tl/arith.h"
#include "tl/env.h"
#include "tl/gm_fill.h"
#include "tl/npu/hazard.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"
#include "tl/printer.h"
#include "tl/verifier.h"
#include "trace_stream.h"

#include <fmt/ranges.h>

namespace tl {

using npu::Core;
using npu::LaunchState;
using npu::Program;
using npu::Scalar;

const PrimFunc& CompiledKernel::func() const {
  return program_->func;
}
const Target& CompiledKernel::target() const {
  return *program_->target;
}

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}

/// Evaluates launch-time expressions (tensor shapes and strides, the block count) with the
/// IR's semantics (tl/arith.h): floor division, wrapping, errors for division by zero. Variables
/// are the dynamic symbols bound so far and the scalar parameters.
class LaunchEvaluator final : public arith::Evaluator {
 public:
  std::unordered_map<const VarNode*, Scalar> env;
  /// `e`, or nullopt with the reason in `why` when it cannot be evaluated.
  std::optional<int64_t> try_int(const Expr& e, std::string* why = nullptr) {
    auto v = try_value(e, why);
    return v ? std::optional<int64_t>(v->as_int()) : std::nullopt;
  }
  std::optional<Scalar> try_value(const Expr& e, std::string* why = nullptr) {
    try {
      return eval(e);
    } catch (const Error& err) {
      if (why) *why = err.what();
      return std::nullopt;
    }
  }

 protected:
  Scalar var(const VarNode& v) override {
    auto it = env.find(&v);
    if (it == env.end())
      raise(fmt::format("{} is not bound yet (bind it from a tensor dimension that is exactly {})",
                        v.name, v.name));
    return it->second;
  }
};

/// "[-128, 127]": the values integer dtype `t` holds.
std::string int_range(DType t) {
  if (t == DType::UInt64) return "[0, 18446744073709551615]";
  return fmt::format("[{}, {}]", arith::dtype_min(t), arith::dtype_max(t));
}

/// The value scalar argument `a` gives a parameter of dtype `t` named `name` of kernel `kernel`:
/// exactly the value passed, or a tl::Error naming the parameter, the dtype's range and the
/// value when the dtype cannot hold it (it used to be wrapped or saturated silently).
Scalar scalar_argument(const std::string& kernel, const std::string& name, DType t, const Arg& a) {
  auto bad = [&](const std::string& value, const std::string& why) {
    return Error(
        fmt::format("kernel {}: scalar argument '{}' is {}, {}", kernel, name, value, why));
  };
  const std::string range =
      is_float(t) ? "" : fmt::format("{}'s range {}", dtype_name(t), int_range(t));
  if (is_float(t)) {
    double v = std::holds_alternative<double>(a.value)
                   ? std::get<double>(a.value)
                   : static_cast<double>(std::get<int64_t>(a.value));
    // Float scalars keep the caller's double; one the dtype would round to inf (or NaN, for
    // fp8 without inf) does not fit.
    if (std::isfinite(v) && !std::isfinite(arith::round_float(t, v)))
      throw bad(
          fmt::format("{}", v),
          fmt::format("beyond {}'s largest finite value (it would round to inf)", dtype_name(t)));
    return Scalar::of_float(v);
  }
  int64_t v;
  if (std::holds_alternative<int64_t>(a.value)) {
    v = std::get<int64_t>(a.value);
    if (t == DType::UInt64 && v < 0) throw bad(std::to_string(v), "outside " + range);
  } else {
    double d = std::get<double>(a.value);
    if (!std::isfinite(d) || d != std::trunc(d))
      throw bad(fmt::format("{}", d), "not an integer in " + range);
    constexpr double k63 = 9223372036854775808.0, k64 = 18446744073709551616.0;
    if (t == DType::UInt64) {
      if (d < 0 || d >= k64) throw bad(fmt::format("{}", d), "outside " + range);
      return Scalar::of_int(static_cast<int64_t>(static_cast<uint64_t>(d)));  // held as its bits
    }
    if (d < -k63 || d >= k63) throw bad(fmt::format("{}", d), "outside " + range);
    v = static_cast<int64_t>(d);
  }
  if (t != DType::UInt64 && (v < arith::dtype_min(t) || v > arith::dtype_max(t)))
    throw bad(std::to_string(v), "outside " + range);
  return Scalar::of_int(v);
}

/// Row-major strides of `shape` (element counts), or nullopt when one overflows int64: such a
/// shape matches no tensor (every Tensor's strides fit).
std::optional<std::vector<int64_t>> dense_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size(), 0);
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    st[d] = s;
    if (d > 0 && __builtin_mul_overflow(s, shape[d], &s)) return std::nullopt;
  }
  return st;
}

/// The T.alloc_workspace tensors of this launch, after the parameters in ls.tensors. Their
/// shapes may use dynamic sizes (bound by now). Tensor::empty checks the bytes against the
/// host's memory before allocating. They start as NaN bytes (0xFF): the chip's workspace holds
/// whatever was there, and a kernel must not read what it has not written. They are Unwritten
/// GM (tl/gm_fill.h): a huge block an earlier launch's workspace or library output freed comes
/// back with its pages mapped, so the 0xFF fill below neither faults them in nor waits for the
/// kernel to zero them first (FlashAttention's 28 MB of workspaces at S = 1024, H = 16: the page
/// zeroing was 5.9 % of a call's host time, docs/virtual_npu.md, "Host speed", branch hostfa3).
/// The fill still writes every byte, so what a launch sees does not depend on the pool
/// (`GmFill.RecycledWorkspacesStartAsNaN`).
void allocate_workspaces(const Program& p, Device& dev, LaunchEvaluator& ev, LaunchState& ls) {
  ScopedGmFill unwritten(GmFill::Unwritten);
  for (const BufferNode* w : p.workspaces) {
    std::vector<int64_t> shape;
    for (const auto& e : w->shape) {
      std::string why;
      auto v = ev.try_int(e, &why);
      if (!v)
        throw Error(w->loc,
                    fmt::format("kernel {}: cannot evaluate dimension {} of workspace '{}': {}",
                                p.func->name, print(e), w->name, why));
      if (*v <= 0)
        throw Error(
            w->loc,
            fmt::format("kernel {}: workspace '{}' has dimension {} = {}; expected a positive size",
                        p.func->name, w->name, print(e), *v));
      shape.push_back(*v);
    }
    Tensor t = Tensor::empty(dev, shape, w->dtype);
    std::memset(t.data(), 0xFF, static_cast<size_t>(t.nbytes()));
    ls.tensors.push_back(std::move(t));
  }
}

/// Whether the kernel writes parameter `i` anywhere (an output or a workspace of the caller's).
bool writes_parameter(const Program& p, size_t i) {
  const BufferNode* b = p.func->params[i].tensor.get();
  for (const auto& touch : analysis::touches_of(p.func->body, *p.target))
    if (touch.buffer == b && touch.write) return true;
  return false;
}

/// The tensor a kernel sees for an argument whose shape differs from the declared `want`. The
/// chip takes a GM pointer and reads it with the declared row-major shape (TileLang-Ascend's
/// adapter passes data pointers, its shape check is disabled), so scripts pass e.g. [M, 1] for
/// [M], or [8192] for [32, 256]. The rule (docs/python.md, "Argument shapes"):
///  * same element count, contiguous: the row-major view of the declared shape;
///  * more elements, contiguous, and the kernel writes the parameter (an output or a workspace
///    the caller sized generously): the view of its first elements, the rest untouched;
///  * more elements of a parameter the kernel only reads: an error, since the kernel would read
///    the first rows of a larger tensor, rarely what was meant (a half of each row is not the
///    first half of the tensor); with TL_LARGER_INPUTS=prefix (set by `python -m tl_ascend.run`
///    for TileLang-Ascend scripts, whose adapter reads such an input so on the chip) the view of
///    its first elements, with a remark on stderr naming what the kernel reads;
///  * fewer elements (the kernel would leave the tensor), or a non-contiguous tensor: an error.
Tensor argument_view(const Program& p, size_t i, const Tensor& t,
                     const std::vector<int64_t>& want) {
  const auto& f = p.func;
  const std::string& name = f->params[i].name();
  int64_t need = 1;
  for (int64_t d : want) need *= d;  // the declared shape's strides were checked to fit
  const int64_t have = t.numel();
  // No location of its own: like the other argument errors, the caller's line is the one to
  // name (the Python frontend adds it), not the parameter's declaration.
  auto fail = [&](const std::string& why) {
    return Error(fmt::format("kernel {}: argument '{}' must have shape {}, got {}: {}", f->name,
                             name, shape_str(want), shape_str(t.shape()), why));
  };

  if (have < need)
    throw fail(fmt::format("it has {} elements, the kernel addresses {}", have, need));
  if (!t.is_contiguous())
    throw fail(
        "a tensor of another shape is read as a row-major view, and this one is not "
        "contiguous (pass .contiguous())");
  if (!p.func->params[i].tensor->strides.empty())
    throw fail("the parameter declares its own strides, so its shape must match exactly");
  if (have == need) return t.reshape(want);
  if (!writes_parameter(p, i)) {
    const std::string policy = env_value("TL_LARGER_INPUTS");
    if (policy != "" && policy != "prefix")
      throw Error(fmt::format("TL_LARGER_INPUTS must be empty or 'prefix', got '{}'", policy));
    if (policy != "prefix")
      throw fail(fmt::format(
          "it has {} elements, more than the {} the kernel reads; the kernel would read the "
          "first {} in row-major order, so a larger input is refused (slice it to what the "
          "kernel should read; TL_LARGER_INPUTS=prefix reads them, as the chip does)",
          have, need, need));
    // Not silent: the kernel reads other elements than the tensor's shape suggests.
    std::cerr << fmt::format(
        "remark: kernel {}: argument '{}' has shape {}, larger than the declared {}: the kernel "
        "reads its first {} of {} elements in row-major order (TL_LARGER_INPUTS=prefix; "
        "TileLang-Ascend passes only the data pointer)\n",
        f->name, name, shape_str(t.shape()), shape_str(want), need, have);
  }
  return t.reshape({have}).slice(0, 0, need).reshape(want);
}

void bind_arguments(const Program& p, Device& dev, const std::vector<Arg>& args, LaunchState& ls) {
  const auto& f = p.func;
  std::vector<std::string> names;
  for (const auto& prm : f->params) names.push_back(prm.name());
  if (args.size() != f->params.size())
    throw Error(fmt::format("kernel {} takes {} arguments ({}), got {}", f->name, f->params.size(),
                            fmt::join(names, ", "), args.size()));
  LaunchEvaluator ev;
  auto& env = ev.env;
  ls.tensors.resize(args.size());
  ls.scalars.resize(args.size());
  // Bind dynamic symbols from dimensions that are exactly a symbol: first from tensors of the
  // declared rank, whose dimensions line up with the declaration; then from the others (a
  // tensor passed as a row-major view of another shape, see bind_tensor).
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < args.size(); ++i) {
      const auto& prm = f->params[i];
      if (!prm.is_tensor() || !std::holds_alternative<Tensor>(args[i].value)) continue;
      const Tensor& t = std::get<Tensor>(args[i].value);
      if ((t.shape().size() == prm.tensor->shape.size()) != (pass == 0)) continue;
      for (size_t d = 0; d < prm.tensor->shape.size() && d < t.shape().size(); ++d)
        if (auto* v = prm.tensor->shape[d].as<VarNode>(); v && !env.count(v)) {
          // A size its symbol's dtype cannot hold would be bound wrapped: the kernel would see
          // another size than the tensor has.
          int64_t n = t.shape()[d];
          if (is_int(v->dtype) && v->dtype != DType::UInt64 && n > arith::dtype_max(v->dtype))
            throw Error(fmt::format(
                "kernel {}: dimension {} of argument '{}' is {}, but it binds the dynamic symbol "
                "'{}' of dtype {}, range {}",
                f->name, d, prm.name(), n, v->name, dtype_name(v->dtype), int_range(v->dtype)));
          env[v] = Scalar::of_int(n);
        }
    }
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& prm = f->params[i];
    const std::string& name = prm.name();
    if (!prm.is_tensor()) {
      if (std::holds_alternative<Tensor>(args[i].value))
        throw Error(fmt::format("kernel {}: argument {} ('{}') must be a {} scalar, got a tensor",
                                f->name, i, name, dtype_name(prm.scalar.dtype())));
      ls.scalars[i] = scalar_argument(f->name, name, prm.scalar.dtype(), args[i]);
      env[prm.scalar.node()] = ls.scalars[i];
      continue;
    }
    if (!std::holds_alternative<Tensor>(args[i].value))
      throw Error(fmt::format("kernel {}: argument {} ('{}') must be a tensor, got a scalar",
                              f->name, i, name));
    const Tensor& t = std::get<Tensor>(args[i].value);
    const BufferNode& b = *prm.tensor.get();
    if (!t.defined())
      throw Error(fmt::format("kernel {}: argument '{}' is an undefined tensor", f->name, name));
    if (t.device() != &dev)
      throw Error(
          fmt::format("kernel {}: argument '{}' lives on another device than the one launching",
                      f->name, name));
    if (t.dtype() != b.dtype)
      throw Error(fmt::format("kernel {}: argument '{}' must have dtype {}, got {}", f->name, name,
                              dtype_name(b.dtype), dtype_name(t.dtype())));
    std::vector<int64_t> want;
    for (const auto& s : b.shape) {
      std::string why;
      auto v = ev.try_int(s, &why);
      if (!v)
        throw Error(fmt::format("kernel {}: cannot evaluate dimension {} of '{}': {}", f->name,
                                print(s), name, why));
      want.push_back(*v);
    }
    if (t.shape() != want) {
      ls.tensors[i] = argument_view(p, i, t, want);
      continue;
    }
    std::vector<int64_t> want_strides;
    if (b.strides.empty()) {
      // The shapes are equal, and a Tensor's own strides fit: so do these.
      auto st = dense_strides(want);
      TL_ASSERT(st, "strides of the tensor shape {} overflow", shape_str(want));
      want_strides = *st;
    } else {
      for (const auto& s : b.strides) want_strides.push_back(ev.try_int(s).value_or(-1));
    }
    for (size_t d = 0; d < want.size(); ++d)
      if (want[d] > 1 && t.strides()[d] != want_strides[d])
        throw Error(fmt::format("kernel {}: argument '{}' must have strides {}, got {}", f->name,
                                name, shape_str(want_strides), shape_str(t.strides())));
    ls.tensors[i] = t;
  }
  for (const auto& d : f->dynamics) {
    auto it = env.find(d.node());
    if (it == env.end())
      throw Error(fmt::format("kernel {}: dynamic symbol {} does not appear as a tensor dimension",
                              f->name, d.name()));
    ls.dynamics.push_back(it->second.i);
  }
  // The lets before `with T.Kernel` (every core computes them first): the block count and the
  // workspace shapes may use them. One that reads memory is not known here (the error of the
  // block count or shape that needs it says so).
  if (auto* top = f->body.as<SeqNode>())
    for (const Stmt& s : top->stmts) {
      if (s.as<KernelNode>()) break;
      if (auto* l = s.as<LetNode>())
        if (auto v = ev.try_value(l->value)) env[l->var.node()] = *v;
    }
  allocate_workspaces(p, dev, ev, ls);
  std::string why;
  auto blocks = ev.try_int(p.kernel->num_blocks, &why);
  if (!blocks)
    throw Error(p.kernel->loc, fmt::format("kernel {}: cannot evaluate the block count {}: {}",
                                           f->name, print(p.kernel->num_blocks), why));
  ls.num_blocks = *blocks;
}

/// Bytes the layout of an on-chip buffer of `shape` spans in `scope` (fractal scopes pad their
/// last two dimensions, as tl::storage_bytes does), or nullopt when that overflows int64.
std::optional<int64_t> layout_span(MemScope scope, DType dtype, const std::vector<int64_t>& shape) {
  const int64_t es = dtype_bytes(dtype), c0 = std::max<int64_t>(1, 32 / es);
  auto up = [](int64_t v, int64_t a, int64_t* out) {
    if (__builtin_add_overflow(v, a - 1, out)) return false;
    *out = *out / a * a;
    return true;
  };
  const size_t n = shape.size();
  int64_t lead = 1, R = n >= 2 ? shape[n - 2] : 1, C = n >= 1 ? shape[n - 1] : 1;
  for (size_t d = 0; d + 2 < n; ++d)
    if (__builtin_mul_overflow(lead, shape[d], &lead)) return std::nullopt;
  int64_t ra = 1, ca = 1;  // row and column padding
  switch (scope) {
    case MemScope::L1:
    case MemScope::L0A:
      ra = 16, ca = c0;
      break;
    case MemScope::L0B:
      ra = c0, ca = 16;
      break;
    case MemScope::L0C:
      ra = 16, ca = 16;
      break;
    default:
      break;  // UB: row-major, unpadded
  }
  int64_t rp, cp, out;
  if (!up(R, ra, &rp) || !up(C, ca, &cp) || __builtin_mul_overflow(lead, rp, &out) ||
      __builtin_mul_overflow(out, cp, &out) || __builtin_mul_overflow(out, es, &out))
    return std::nullopt;
  return out;
}

/// Every on-chip buffer lies inside the memory its core will have (the planned bytes of its
/// scope, at most the target's capacity). With that, and regions checked against buffer
/// shapes, no address the op semantics compute leaves a core's memory. The verifier checks
/// placements too, but a kernel compiled with verify = false (or a planned size that
/// overflowed) reached the interpreter with a buffer at 2^63 - 32 and crashed it.
void check_buffer_placement(const Program& p) {
  for (const auto& info : p.buffers) {
    if (info.scope == MemScope::GM || info.scope == MemScope::Var || !info.node) continue;
    const BufferNode& b = *info.node;
    int64_t mem =
        std::min(p.scope_bytes[static_cast<size_t>(info.scope)], p.target->cap(info.scope));
    auto span = layout_span(info.scope, b.dtype, info.shape);
    if (info.offset < 0 || !span || mem < 0 || info.offset > mem || *span > mem - info.offset)
      throw Error(
          b.loc, fmt::format(
                     "kernel {}: buffer '{}' ({} {}[{}]) at byte {}, {}, lies outside the {} bytes "
                     "of {} its core has",
                     p.func->name, b.name, scope_name(info.scope), dtype_name(b.dtype),
                     fmt::join(info.shape, ", "), info.offset,
                     span ? fmt::format("{} bytes long", *span) : "its size overflowing int64",
                     std::max<int64_t>(mem, 0), scope_name(info.scope)));
  }
}

/// Limits checked before anything is sized by them: the block count (per-block tables and
/// traces), and the host memory the launch itself allocates on top of the tensors (timed mode
/// with data keeps copies of them). Each was a std::bad_alloc, a length_error or the OOM killer.
void check_launch_limits(const Program& p, const LaunchState& ls, const LaunchOptions& opt) {
  if (ls.num_blocks < 0)
    throw Error(p.kernel->loc, fmt::format("kernel {}: T::Kernel launches {} blocks", p.func->name,
                                           ls.num_blocks));
  if (ls.num_blocks > kMaxLaunchBlocks)
    throw Error(p.kernel->loc,
                fmt::format("kernel {}: T::Kernel launches {} blocks; at most {} are allowed (the "
                            "blockDim limit)",
                            p.func->name, ls.num_blocks, kMaxLaunchBlocks));
  // Both factors are bounded (blocks above, tensor bytes by the host memory they occupy).
  int64_t bytes =
      ls.num_blocks * LaunchState::kCrossSlots * static_cast<int64_t>(sizeof(ls.cross[0]));
  if (opt.trace || opt.check_hazards || opt.profile)
    bytes += ls.num_blocks * 3 * static_cast<int64_t>(sizeof(npu::CoreTrace));
  if (opt.profile && !opt.timing_only) {
    // At most: the bytes the functional run writes kept, and one tensor's image if the
    // time-ordered result differs (replay_snapshot.cpp).
    int64_t tensors = 0, largest = 0;
    for (const auto& t : ls.tensors) {
      tensors += t.nbytes();
      largest = std::max(largest, t.nbytes());
    }
    bytes += tensors + largest;
  }
  check_host_memory(
      bytes,
      fmt::format(
          "launching kernel {} ({} blocks{})", p.func->name, ls.num_blocks,
          opt.profile && !opt.timing_only ? ", timed mode keeping copies of the tensors" : ""));
}

/// TL_TRACE_WINDOW: a core's window of a streamed launch, in events (tests use tiny ones to
/// exercise the holds).
uint64_t trace_window() {
  uint64_t window = npu::TraceStream::kWindow;
  if (const std::string w = env_value("TL_TRACE_WINDOW"); !w.empty()) {
    char* end = nullptr;
    const long long v = std::strtoll(w.c_str(), &end, 10);
    if (*end != '\0' || v <= 0)
      throw Error(fmt::format(
          "TL_TRACE_WINDOW must be a positive number of trace events per core, got '{}'", w));
    window = static_cast<uint64_t>(v);
  }
  return window;
}

/// A streamed timing-only launch: the functional run on its own threads hands each core's
/// events to the timing model here as it records them. The functional run's error, or its
/// cancellation, comes first (as when the model ran after it); then the model's.
void run_streamed(LaunchState& ls, std::vector<npu::Group>& groups, int threads, npu::Trace& trace,
                  const std::map<int64_t, int>& cross_modes, uint64_t window,
                  const LaunchOptions& opt) {
  npu::TraceStream ts(trace.cores.size(), window);
  for (auto& ct : trace.cores) ct.stream = &ts;
  npu::StreamReader reader(ts, trace.cores.size());
  npu::StreamedLaunch in{&reader,
                         ls.program.func->name,
                         ls.num_blocks,
                         ls.physical_blocks,
                         static_cast<int>(ls.barrier_participants),
                         cross_modes};
  std::exception_ptr functional, model;
  std::thread producer([&] {
    try {
      npu::run_groups(ls, groups, threads);
    } catch (...) {
      functional = std::current_exception();
    }
    ts.producer_ended();
  });
  bool aborted = false;
  try {
    *opt.profile = npu::simulate_timing_streamed(
        in, *ls.program.target, {.progress_percent = 0, .instructions = opt.profile_instructions});
  } catch (const npu::StreamAborted&) {
    aborted = true;
    ts.discard();
  } catch (...) {
    model = std::current_exception();
    ts.discard();
  }
  producer.join();
  if (functional) {
    ls.output.finish();
    std::rethrow_exception(functional);
  }
  if (model) {
    ls.output.finish();
    std::rethrow_exception(model);
  }
  TL_ASSERT(!aborted || ls.cancelled(), "the functional run of {} ended before its trace did",
            ls.program.func->name);
}

}  // namespace

void CompiledKernel::launch(Device& dev, const std::vector<Arg>& args,
                            const LaunchOptions& opt) const {
  const Program& p = *program_;
  if (&dev.target() != p.target)
    throw Error(fmt::format("kernel {} was compiled for {} but the device is a {}", p.func->name,
                            p.target->name, dev.target().name));
  npu::refresh_plain_paths();
  LaunchState ls(p);
  bind_arguments(p, dev, args, ls);  // also evaluates the block count
  check_launch_limits(p, ls, opt);
  check_buffer_placement(p);
  if (ls.num_blocks == 0) return;
  ls.physical_blocks = static_cast<int>(std::min<int64_t>(p.target->num_aic, ls.num_blocks));
  ls.cross.assign(ls.num_blocks * LaunchState::kCrossSlots, {});
  ls.timing_only = opt.timing_only;
  ls.digest_gm_stores = (opt.check_hazards || opt.trace) && !opt.timing_only;
  ls.check_block_flags = !opt.check_hazards;
  npu::Trace own_trace;  // check_hazards or timed mode without a caller trace
  npu::Trace* trace = opt.trace                            ? opt.trace
                      : (opt.check_hazards || opt.profile) ? &own_trace
                                                           : nullptr;
  if (trace) {
    *trace = npu::Trace{};
    trace->kernel = p.func->name;
    trace->num_blocks = ls.num_blocks;
    trace->physical_blocks = ls.physical_blocks;
    trace->cores.resize(ls.num_blocks * 3);
    ls.trace = trace;
  }
  // A hazard-checked launch whose trace nobody else reads is checked while it runs, block by
  // block, and each block's events are freed once checked: the checker's memory no longer grows
  // with the launch's instructions, only by what a block leaves in GM that a later block may
  // meet (docs/virtual_npu.md, "Checking while the launch runs").
  std::optional<npu::HazardStream> hazard_stream;
  if (opt.check_hazards && !opt.trace && !opt.profile &&
      npu::HazardStream::applies(p.uses_sync_all)) {
    hazard_stream.emplace(*trace, *p.target);
  }
  if (p.uses_sync_all && ls.num_blocks > p.target->num_aic)
    throw Error(p.kernel->loc,
                fmt::format("kernel {} uses T.sync_all but launches {} blocks; all blocks must be "
                            "resident at once ({} on {})",
                            p.func->name, ls.num_blocks, p.target->num_aic, p.target->name));
  ls.barrier_participants = ((p.sync_all_kinds & 1) ? ls.num_blocks : 0) +
                            ((p.sync_all_kinds & 2) ? 2 * ls.num_blocks : 0);

  // The device's core memories: created on the first launch, kept across launches, used by
  // one launch at a time.
  auto& state = dev.npu_state();
  if (!state) state = std::make_shared<npu::DeviceMemories>();
  auto& memories = *static_cast<npu::DeviceMemories*>(state.get());
  std::lock_guard<std::mutex> device_lock(memories.in_use);
  if (memories.cores.size() < static_cast<size_t>(ls.physical_blocks) * 3)
    memories.cores.resize(ls.physical_blocks * 3);
  if (memories.shadows.size() < memories.cores.size())
    memories.shadows.resize(memories.cores.size());
  npu::configure_budget(ls, opt);
  // The stale-data checker's shadows of the tensors (and, in each Core, of its memories).
  std::optional<npu::StaleLaunch> stale;
  if (npu::stale_check_enabled(opt)) ls.stale = &stale.emplace(p, ls);
  std::vector<npu::Group> groups(ls.physical_blocks);
  for (int g = 0; g < ls.physical_blocks; ++g) {
    groups[g].next_block = g;
    for (int k = 0; k < 3; ++k)
      groups[g].cores.push_back(std::make_unique<Core>(
          p, ls, k == 0 ? CoreKind::Cube : CoreKind::Vector, k == 0 ? 0 : k - 1, g,
          memories.cores[g * 3 + k], &memories.shadows[g * 3 + k]));
  }
  // Timed and hazard-checked launches start from poisoned on-chip memories (0xFF bytes: NaN
  // in every float dtype, -1 in the integers), not from what the previous launch left: data
  // that is stale but happens to be right must not hide a missing sync or clear. Fast
  // launches keep the contents, as the chip does.
  if (opt.check_hazards || opt.profile || opt.poison)
    for (auto& g : groups)
      for (auto& c : g.cores)
        for (auto& m : c->mem) std::fill(m.begin(), m.end(), uint8_t{0xFF});
  // Timed mode with data runs the launch twice (functional, then in simulated-time order)
  // from the same memory.
  const bool replay = opt.profile && !opt.timing_only;
  std::optional<npu::LaunchSnapshot> before;
  std::vector<std::vector<npu::OpTicks>> op_ticks;
  if (replay) {
    std::vector<std::array<size_t, kNumMemScopes>> poisoned;  // (group, slot) order
    for (const auto& g : groups)
      for (const auto& c : g.cores) {
        poisoned.emplace_back();
        for (size_t m = 0; m < kNumMemScopes; ++m) poisoned.back()[m] = c->mem[m].size();
      }
    before.emplace(ls, memories, std::move(poisoned));
    ls.gm_keep = &*before;
    op_ticks.resize(ls.num_blocks * 3);
    ls.op_ticks = &op_ticks;
  }
  int n = opt.threads > 0 ? opt.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n = std::min(n, ls.physical_blocks);

  // A timing-only launch whose trace nobody else reads streams it into the timing model
  // (trace_stream.h): the interpreter runs on its own threads while this one times the events.
  std::map<int64_t, int> cross_modes;
  const bool streamed = opt.profile && opt.timing_only && !opt.trace && !opt.check_hazards &&
                        npu::cross_flag_modes(p.func->body, cross_modes);
  const uint64_t window = streamed ? trace_window() : 0;

  // The printed lines of a timed launch with data are those of its second, time-ordered run;
  // the first run's only count if it fails.
  ls.output.open(opt.out ? opt.out : &std::cout, /*hold=*/replay);
  if (streamed) {
    run_streamed(ls, groups, n, *trace, cross_modes, window, opt);
  } else {
    try {
      npu::run_groups(ls, groups, n, hazard_stream ? &*hazard_stream : nullptr);
    } catch (...) {
      ls.output.finish();
      throw;
    }
  }
  // The phases after the functional run (timing model, replay, checkers) do not start once
  // the launch was cancelled.
  if (ls.cancelled()) {
    ls.output.finish();
    ls.throw_cancelled();
  }
  std::vector<npu::StaleFinding> findings;
  if (ls.stale) {
    std::vector<const npu::CoreShadow*> shadows;  // (group, AIC / AIV0 / AIV1) order
    for (const auto& g : groups)
      for (const auto& c : g.cores) shadows.push_back(c->shadow());
    findings = npu::merge_findings(shadows);
    ls.stale = nullptr;  // the time-ordered replay's cores run without it
  }
  if (opt.profile && !streamed) {
    size_t events = 0;
    for (const auto& c : trace->cores) events += c.events.size();
    const int progress = events > 2'000'000 ? opt.progress_percent : 0;
    *opt.profile = npu::simulate_timing(
        *trace, *p.target,
        {.progress_percent = progress, .instructions = opt.profile_instructions || replay});
    if (ls.cancelled()) {
      ls.output.finish();
      ls.throw_cancelled();
    }
    if (replay) {
      ls.gm_keep = nullptr;
      ls.op_ticks = nullptr;
      npu::IsolatedOps isolated(p, *trace, *opt.profile, npu::replay_shortcuts_enabled());
      if (isolated.same_as_functional_run(p, op_ticks)) {
        // The replay would compute what the functional run did (replay_order.cpp): keep its
        // memory. Nothing printed (a printing kernel never gets here).
        opt.profile->replay_skipped = true;
        for (const auto& t : op_ticks) opt.profile->replay_ops += static_cast<int64_t>(t.size());
        opt.profile->replay_in_place = opt.profile->replay_ops;
      } else {
        before->restore();
        ls.output.discard();
        // The replay executes printf at its simulated time, after the core's interpreter has
        // moved on (even finished): hold every line, write them in order at the end.
        ls.output.open(opt.out ? opt.out : &std::cout, /*hold=*/true);
        ls.progress_percent = 0;  // the replay reports its own progress
        try {
          std::tie(opt.profile->replay_ops, opt.profile->replay_in_place) =
              npu::replay_in_time_order(ls, memories, *trace, *opt.profile, isolated, progress);
        } catch (...) {
          ls.output.finish();
          throw;
        }
        opt.profile->time_order_effects = before->diff(ls);
      }
    }
  }
  ls.output.finish();
  std::vector<std::string> remarks;
  std::string msg = !opt.check_hazards ? ""
                    : hazard_stream    ? hazard_stream->report(&remarks)
                                       : npu::hazard_report(*trace, *p.target, &remarks);
  if (opt.hazard_remarks)
    opt.hazard_remarks->insert(opt.hazard_remarks->end(), remarks.begin(), remarks.end());
  else
    for (const auto& r : remarks) std::cerr << r << "\n";
  if (opt.stale_findings)
    *opt.stale_findings = std::move(findings);
  else if (std::string s = npu::stale_report(p.func->name, findings); !s.empty())
    msg += (msg.empty() ? "" : "\n") + s;
  if (!msg.empty()) throw Error(msg);
}

}  // namespace tl
