// compile() and launch(): argument checking and binding, then the launch itself. Logical
// blocks are placed on physical core groups (1 AIC + 2 AIV) in waves; groups are spread over
// host threads by the scheduler (scheduler.cpp); within a thread the cores of its groups run
// as cooperative interpreters (run until blocked, then the next), so a block's three cores
// always share one thread and their cross-core flags need no locks.
#include <algorithm>
#include <iostream>
#include <optional>
#include <thread>

#include "program.h"
#include "replay.h"
#include "scheduler.h"
#include "tl/arith.h"
#include "tl/npu/hazard.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"
#include "tl/printer.h"
#include "tl/verifier.h"

#include <fmt/ranges.h>

namespace tl {

using npu::Core;
using npu::LaunchState;
using npu::Program;
using npu::Scalar;

const PrimFunc& CompiledKernel::func() const { return program_->func; }
const Target& CompiledKernel::target() const { return *program_->target; }


namespace {

std::string shape_str(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

/// Evaluates launch-time expressions (tensor shapes and strides, the block count) with the
/// IR's semantics (tl/arith.h): floor division, wrapping, errors for division by zero. Variables
/// are the dynamic symbols bound so far and the scalar parameters.
class LaunchEvaluator final : public arith::Evaluator {
 public:
  std::unordered_map<const VarNode*, Scalar> env;
  /// `e`, or nullopt with the reason in `why` when it cannot be evaluated.
  std::optional<int64_t> try_int(const Expr& e, std::string* why = nullptr) {
    try {
      return eval_int(e);
    } catch (const Error& err) {
      if (why) *why = err.what();
      return std::nullopt;
    }
  }

 protected:
  Scalar var(const VarNode& v) override {
    auto it = env.find(&v);
    if (it == env.end())
      raise(fmt::format("{} is not bound yet (bind it from a tensor dimension that is exactly {})", v.name, v.name));
    return it->second;
  }
};

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
  // Bind dynamic symbols from dimensions that are exactly a symbol.
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& prm = f->params[i];
    if (!prm.is_tensor() || !std::holds_alternative<Tensor>(args[i].value)) continue;
    const Tensor& t = std::get<Tensor>(args[i].value);
    for (size_t d = 0; d < prm.tensor->shape.size() && d < t.shape().size(); ++d)
      if (auto* v = prm.tensor->shape[d].as<VarNode>(); v && !env.count(v)) env[v] = Scalar::of_int(t.shape()[d]);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& prm = f->params[i];
    const std::string& name = prm.name();
    if (!prm.is_tensor()) {
      if (!std::holds_alternative<double>(args[i].value))
        throw Error(fmt::format("kernel {}: argument {} ('{}') must be a {} scalar, got a tensor", f->name, i,
                                name, dtype_name(prm.scalar.dtype())));
      double v = std::get<double>(args[i].value);
      // Integer scalars convert as a cast does; float scalars keep the caller's double.
      DType st = prm.scalar.dtype();
      ls.scalars[i] = is_float(st) ? Scalar::of_float(v) : arith::cast_value(st, Scalar::of_float(v));
      env[prm.scalar.node()] = ls.scalars[i];
      continue;
    }
    if (!std::holds_alternative<Tensor>(args[i].value))
      throw Error(fmt::format("kernel {}: argument {} ('{}') must be a tensor, got a scalar", f->name, i, name));
    const Tensor& t = std::get<Tensor>(args[i].value);
    const BufferNode& b = *prm.tensor.get();
    if (!t.defined()) throw Error(fmt::format("kernel {}: argument '{}' is an undefined tensor", f->name, name));
    if (t.device() != &dev)
      throw Error(fmt::format("kernel {}: argument '{}' lives on another device than the one launching", f->name,
                              name));
    if (t.dtype() != b.dtype)
      throw Error(fmt::format("kernel {}: argument '{}' must have dtype {}, got {}", f->name, name,
                              dtype_name(b.dtype), dtype_name(t.dtype())));
    std::vector<int64_t> want;
    for (const auto& s : b.shape) {
      std::string why;
      auto v = ev.try_int(s, &why);
      if (!v)
        throw Error(fmt::format("kernel {}: cannot evaluate dimension {} of '{}': {}", f->name, print(s), name, why));
      want.push_back(*v);
    }
    if (t.shape() != want)
      throw Error(fmt::format("kernel {}: argument '{}' must have shape {}, got {}", f->name, name,
                              shape_str(want), shape_str(t.shape())));
    std::vector<int64_t> want_strides;
    if (b.strides.empty()) {
      int64_t s = 1;
      want_strides.assign(want.size(), 0);
      for (size_t d = want.size(); d-- > 0;) {
        want_strides[d] = s;
        s *= want[d];
      }
    } else {
      for (const auto& s : b.strides) want_strides.push_back(ev.try_int(s).value_or(-1));
    }
    for (size_t d = 0; d < want.size(); ++d)
      if (want[d] > 1 && t.strides()[d] != want_strides[d])
        throw Error(fmt::format("kernel {}: argument '{}' must have strides {}, got {}", f->name, name,
                                shape_str(want_strides), shape_str(t.strides())));
    ls.tensors[i] = t;
  }
  for (const auto& d : f->dynamics) {
    auto it = env.find(d.node());
    if (it == env.end())
      throw Error(fmt::format("kernel {}: dynamic symbol {} does not appear as a tensor dimension", f->name,
                              d.name()));
    ls.dynamics.push_back(it->second.i);
  }
  std::string why;
  auto blocks = ev.try_int(p.kernel->num_blocks, &why);
  if (!blocks)
    throw Error(p.kernel->loc, fmt::format("kernel {}: cannot evaluate the block count {}: {}", f->name,
                                           print(p.kernel->num_blocks), why));
  ls.num_blocks = *blocks;
}

}  // namespace

void CompiledKernel::launch(Device& dev, const std::vector<Arg>& args, const LaunchOptions& opt) const {
  const Program& p = *program_;
  if (&dev.target() != p.target)
    throw Error(fmt::format("kernel {} was compiled for {} but the device is a {}", p.func->name, p.target->name,
                            dev.target().name));
  LaunchState ls(p);
  bind_arguments(p, dev, args, ls);  // also evaluates the block count
  if (ls.num_blocks < 0)
    throw Error(p.kernel->loc, fmt::format("kernel {}: T::Kernel launches {} blocks", p.func->name, ls.num_blocks));
  if (ls.num_blocks == 0) return;
  ls.physical_blocks = static_cast<int>(std::min<int64_t>(p.target->num_aic, ls.num_blocks));
  ls.cross.assign(ls.num_blocks * LaunchState::kCrossSlots, {});
  ls.timing_only = opt.timing_only;
  npu::Trace own_trace;  // check_hazards or timed mode without a caller trace
  npu::Trace* trace = opt.trace ? opt.trace : (opt.check_hazards || opt.profile) ? &own_trace : nullptr;
  if (trace) {
    *trace = npu::Trace{};
    trace->kernel = p.func->name;
    trace->num_blocks = ls.num_blocks;
    trace->physical_blocks = ls.physical_blocks;
    trace->cores.resize(ls.num_blocks * 3);
    ls.trace = trace;
  }
  if (p.uses_sync_all && ls.num_blocks > p.target->num_aic)
    throw Error(p.kernel->loc, fmt::format("kernel {} uses T.sync_all but launches {} blocks; all blocks must be "
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
  if (memories.cores.size() < static_cast<size_t>(ls.physical_blocks) * 3) memories.cores.resize(ls.physical_blocks * 3);
  npu::configure_budget(ls, opt);
  std::vector<npu::Group> groups(ls.physical_blocks);
  for (int g = 0; g < ls.physical_blocks; ++g) {
    groups[g].next_block = g;
    groups[g].cores.push_back(std::make_unique<Core>(p, ls, CoreKind::Cube, 0, g, memories.cores[g * 3]));
    groups[g].cores.push_back(std::make_unique<Core>(p, ls, CoreKind::Vector, 0, g, memories.cores[g * 3 + 1]));
    groups[g].cores.push_back(std::make_unique<Core>(p, ls, CoreKind::Vector, 1, g, memories.cores[g * 3 + 2]));
  }
  // Timed mode with data runs the launch twice (functional, then in simulated-time order)
  // from the same memory.
  const bool replay = opt.profile && !opt.timing_only;
  std::optional<npu::LaunchSnapshot> before;
  if (replay) before.emplace(ls, memories, ls.physical_blocks);
  int n = opt.threads > 0 ? opt.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n = std::min(n, ls.physical_blocks);

  // The printed lines of a timed launch with data are those of its second, time-ordered run;
  // the first run's only count if it fails.
  ls.output.open(opt.out ? opt.out : &std::cout, /*hold=*/replay);
  try {
    npu::run_groups(ls, groups, n);
  } catch (...) {
    ls.output.finish();
    throw;
  }
  if (opt.profile) {
    size_t events = 0;
    for (const auto& c : trace->cores) events += c.events.size();
    const int progress = events > 2'000'000 ? opt.progress_percent : 0;
    *opt.profile = npu::simulate_timing(*trace, *p.target, {.progress_percent = progress});
    if (replay) {
      auto program_order = npu::capture_tensors(ls);
      before->restore();
      ls.output.discard();
      // The replay executes printf at its simulated time, after the core's interpreter has
      // moved on (even finished): hold every line, write them in order at the end.
      ls.output.open(opt.out ? opt.out : &std::cout, /*hold=*/true);
      ls.progress_percent = 0;  // the replay reports its own progress
      try {
        npu::replay_in_time_order(ls, memories, *trace, *opt.profile, progress);
      } catch (...) {
        ls.output.finish();
        throw;
      }
      opt.profile->time_order_effects = npu::diff_tensors(ls, program_order);
    }
  }
  ls.output.finish();
  if (opt.check_hazards) npu::throw_on_hazards(*trace, *p.target);
}

}  // namespace tl
