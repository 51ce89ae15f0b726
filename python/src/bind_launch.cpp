// tl_ascend._core: compile and launch on the virtual NPU. Launch arguments come as DLPack tensors
// (numpy, torch) handed over without a copy, or scalars; a launch runs on a worker thread that
// Ctrl-C can cancel; a timed launch returns its profile as a dict (and writes the Chrome trace or
// HTML timeline when asked).

#include "bindings.h"
#include "tl/far_flag_ids.h"
#include "tl/pass.h"

namespace tl::python {
namespace {

// ---- Launch arguments -------------------------------------------------------------------------

DType dlpack_dtype(const nb::dlpack::dtype& d, std::string_view what) {
  using C = nb::dlpack::dtype_code;
  auto code = static_cast<C>(d.code);
  if (d.lanes == 1) {
    if (code == C::Int) switch (d.bits) {
        case 8:
          return DType::Int8;
        case 16:
          return DType::Int16;
        case 32:
          return DType::Int32;
        case 64:
          return DType::Int64;
      }
    if (code == C::UInt) switch (d.bits) {
        case 8:
          return DType::UInt8;
        case 16:
          return DType::UInt16;
        case 32:
          return DType::UInt32;
        case 64:
          return DType::UInt64;
      }
    if (code == C::Float) switch (d.bits) {
        case 16:
          return DType::Float16;
        case 32:
          return DType::Float32;
        case 64:
          return DType::Float64;
      }
    if (code == C::Bfloat && d.bits == 16) return DType::BFloat16;
    if (code == C::Bool && d.bits == 8) return DType::Bool;
  }
  throw Error(fmt::format("{}: DLPack dtype (code {}, {} bits, {} lanes) has no tl-ascend dtype",
                          what, d.code, d.bits, d.lanes));
}

}  // namespace

// Shared with bind_ops.cpp (declared in bindings.h).
Tensor wrap_tensor(Device& dev, nb::handle item) {
  auto t = nb::cast<nb::tuple>(item);
  std::string what = nb::cast<std::string>(t[2]);
  auto arr = nb::cast<nb::ndarray<nb::device::cpu>>(t[0]);
  DType dt = t[1].is_none() ? dlpack_dtype(arr.dtype(), what) : to_dtype(t[1]);
  std::vector<int64_t> shape, strides;
  for (size_t d = 0; d < arr.ndim(); ++d) {
    shape.push_back(static_cast<int64_t>(arr.shape(d)));
    strides.push_back(arr.stride(d));
  }
  return Tensor::wrap(dev, arr.data(), std::move(shape), std::move(strides), dt, what);
}

namespace {

Arg to_arg(Device& dev, nb::handle h) {
  if (nb::isinstance<nb::tuple>(h)) return Arg(wrap_tensor(dev, h));
  if (nb::isinstance<nb::bool_>(h)) return Arg(int64_t{nb::cast<bool>(h)});
  if (nb::isinstance<nb::int_>(h)) return Arg(nb::cast<int64_t>(h));
  if (nb::isinstance<nb::float_>(h)) return Arg(nb::cast<double>(h));
  throw nb::type_error(
      fmt::format("a kernel argument must be a tensor, an int or a float, got {}", py_type_name(h))
          .c_str());
}

nb::dict profile_dict(const npu::Profile& p) {
  nb::dict d;
  d["kernel"] = p.kernel;
  d["target"] = p.target;
  d["clock_ghz"] = p.clock_ghz;
  d["total_cycles"] = p.total_cycles;
  d["total_us"] = p.total_us;
  d["launch_overhead_us"] = p.launch_overhead_us;
  d["task_us"] = p.task_us();
  d["num_blocks"] = p.num_blocks;
  d["physical_blocks"] = p.physical_blocks;
  d["events"] = p.events;
  d["gm_bytes"] = p.gm_bytes;
  d["gm_hbm_bytes"] = p.gm_hbm_bytes;
  nb::dict busy;
  for (auto [kind, name] :
       {std::pair{CoreKind::Cube, "cube"}, std::pair{CoreKind::Vector, "vector"}}) {
    nb::dict per_pipe;
    for (Pipe pipe : {Pipe::S, Pipe::V, Pipe::M, Pipe::MTE1, Pipe::MTE2, Pipe::MTE3, Pipe::FIX})
      per_pipe[std::string(pipe_name(pipe)).c_str()] = p.busy_ratio(pipe, kind);
    busy[name] = per_pipe;
  }
  d["busy"] = busy;
  nb::list cores;
  for (const auto& c : p.cores) {
    nb::dict cd;
    cd["name"] = c.name;
    cd["block"] = c.block;
    cd["start"] = c.start;
    cd["end"] = c.end;
    cd["instructions"] = c.instructions;
    nb::dict cb;
    for (int i = 0; i < kNumPipes; ++i)
      cb[std::string(pipe_name(static_cast<Pipe>(i))).c_str()] = c.busy[i];
    cd["busy_cycles"] = cb;
    cores.append(cd);
  }
  d["cores"] = cores;
  nb::list effects;
  for (const auto& e : p.time_order_effects) effects.append(e);
  d["time_order_effects"] = effects;
  std::ostringstream table;
  npu::print_profile(p, table);
  d["table"] = table.str();
  return d;
}

/// DeveloperOptions from {"pipeline_loops": False, ...}: a user error naming an unknown key.
DeveloperOptions dev_options(const std::map<std::string, bool>& m) {
  DeveloperOptions o;
  for (const auto& [k, v] : m) {
    bool found = false;
    for (const auto& s : switch_registry())
      if (k == s.name) {
        o.*s.field = v;
        found = true;
      }
    if (!found) {
      std::string known;
      for (const auto& s : switch_registry())
        known += (known.empty() ? "" : ", ") + std::string(s.name);
      throw Error(fmt::format("unknown developer option '{}': expected one of {}", k, known));
    }
  }
  o.validate();
  return o;
}

/// The main Python thread (set at import): the only one whose PyErr_CheckSignals runs handlers.
unsigned long g_main_thread = 0;

/// Runs a launch on a worker thread with the GIL released while this thread polls Python's
/// signal handlers every 50 ms: Ctrl-C (SIGINT's handler raising KeyboardInterrupt, or any
/// handler raising) cancels the launch (LaunchOptions::cancel) and the exception propagates
/// once the worker stopped, within about 0.1 s. Before, the launch ran on this thread with the
/// GIL released and Python only saw the signal when it returned: a runaway loop could not be
/// stopped. Off the main thread PyErr_CheckSignals does nothing: the launch runs there directly.
void launch_interruptibly(const CompiledKernel& k, Device& dev, const std::vector<Arg>& args,
                          LaunchOptions o) {
  if (PyThread_get_thread_ident() != g_main_thread) {
    // No signal handler can run on this thread: the worker would cost a thread for nothing.
    nb::gil_scoped_release release;
    k.launch(dev, args, o);
    return;
  }
  std::atomic<bool> cancel{false};
  o.cancel = &cancel;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  bool interrupted = false;
  {
    nb::gil_scoped_release release;
    std::thread worker([&] {
      try {
        k.launch(dev, args, o);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> g(mu);
      done = true;
      cv.notify_all();
    });
    std::unique_lock<std::mutex> lk(mu);
    while (!cv.wait_for(lk, std::chrono::milliseconds(50), [&] { return done; })) {
      if (interrupted) continue;
      lk.unlock();
      {
        nb::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) {
          // The handler's exception stays set on this thread until the launch has stopped.
          interrupted = true;
          cancel.store(true, std::memory_order_relaxed);
        }
      }
      lk.lock();
    }
    lk.unlock();
    worker.join();
  }
  if (interrupted) throw nb::python_error();  // the KeyboardInterrupt, not LaunchCancelled
  if (error) std::rethrow_exception(error);
}

}  // namespace

void bind_launch(nb::module_& m) {
  g_main_thread = nb::cast<unsigned long>(
      nb::module_::import_("threading").attr("main_thread")().attr("ident"));

  // ---- Compile and launch -----------------------------------------------------------------------
  m.def("cache_stats", [] {
    jit::CacheStats c = jit::cache_stats();
    nb::dict d;
    d["memory_hits"] = c.memory_hits;
    d["disk_hits"] = c.disk_hits;
    d["misses"] = c.misses;
    d["disk_writes"] = c.disk_writes;
    d["disk_rejects"] = c.disk_rejects;
    return d;
  });
  // tilelang.cache.clear_cache() empties both levels: the memory map here, the disk files in
  // Python (tl_ascend/cache.py), which needs the directory the C++ cache resolves to.
  m.def("clear_jit_cache", [] { jit::clear_cache(); });
  m.def("jit_cache_dir", [] { return jit::cache_dir(); });
  m.def("dtype_bits", [](nb::handle dtype) { return dtype_bits(to_dtype(dtype)); });
  m.def("target_names", [] { return target_names(); });
  m.def("default_target", [] { return default_target().name; });

  nb::class_<Device>(m, "Device")
      .def(
          "__init__",
          [](Device* d, const std::string& target) { new (d) Device(get_target(target)); },
          "target"_a = "A2")
      .def_prop_ro("target", [](const Device& d) { return d.target().name; });

  nb::class_<CompiledKernel>(m, "CompiledKernel")
      .def_prop_ro("lowered", [](const CompiledKernel& k) { return k.func(); })
      .def_prop_ro("target", [](const CompiledKernel& k) { return k.target().name; });

  m.def(
      "compile",
      [](const PrimFunc& f, const std::string& target, bool verify, bool lower, bool cache,
         const std::map<std::string, bool>& dev) {
        CompileOptions o;
        o.verify = verify;
        o.lower = lower;
        o.cache = cache;
        o.dev = dev_options(dev);
        return compile(f, get_target(target), o);
      },
      "func"_a, "target"_a = "A2", "verify"_a = true, "lower"_a = true, "cache"_a = true,
      "dev"_a = std::map<std::string, bool>{});

  // TileLang-Ascend's targets (tl_ascend.compile): its pto code generator drops flags with event
  // ids past the range, its ascendc one passes them to AscendC unchanged; tl-ascend keeps their
  // ordering on valid ids (src/pass/far_flag_ids.cpp).
  m.def(
      "keep_far_flag_ids",
      [](const PrimFunc& f, const std::string& target, const std::string& codegen) {
        return keep_far_flag_ids(f, get_target(target), {}, codegen);
      },
      "func"_a, "target"_a = "A2", "codegen"_a = "pto");

  m.def(
      "launch",
      [](const CompiledKernel& k, Device& dev, nb::list args, int threads, bool check_hazards,
         bool timed, bool poison, int64_t max_steps, std::string trace_path,
         std::string timeline_path, std::optional<bool> check_stale) -> nb::object {
        std::vector<Arg> a;
        for (nb::handle h : args) a.push_back(to_arg(dev, h));
        LaunchOptions o;
        o.threads = threads;
        o.check_hazards = check_hazards;
        o.poison = poison;
        o.max_steps = max_steps;
        o.check_stale = check_stale;  // None: TL_CHECK_STALE, else with check_hazards
        npu::Profile prof;
        if (timed) o.profile = &prof;
        std::ostringstream out;
        o.out = &out;
        launch_interruptibly(k, dev, a, o);
        if (std::string text = out.str(); !text.empty())
          nb::module_::import_("sys").attr("stdout").attr("write")(text);
        if (!timed) return nb::none();
        if (!trace_path.empty()) {
          std::ofstream f(trace_path);
          if (!f) throw Error(fmt::format("cannot write the trace to '{}'", trace_path));
          npu::write_chrome_trace(prof, f);
        }
        if (!timeline_path.empty()) {
          std::ofstream f(timeline_path);
          if (!f) throw Error(fmt::format("cannot write the timeline to '{}'", timeline_path));
          npu::write_html_timeline(prof, f);
        }
        return profile_dict(prof);
      },
      "kernel"_a, "device"_a, "args"_a, "threads"_a = 0, "check_hazards"_a = false,
      "timed"_a = false, "poison"_a = false, "max_steps"_a = 0, "trace_path"_a = "",
      "timeline_path"_a = "", "check_stale"_a = nb::none());
}

}  // namespace tl::python
