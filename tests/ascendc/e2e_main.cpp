// End to end through AscendC (docs/ascendc.md, "CPU model"): for a registered kernel, emit its
// AscendC file (tl::ascendc_source), compile it with the host compiler against the CPU model
// (include/ascendc_cpu/kernel_operator.h) into a shared object, run it on the model, run the
// same lowered kernel on the virtual NPU, both on the same random inputs and both under the
// hazard checker, and require every GM tensor to hold the same bytes afterwards.
//
// Usage: ascendc_e2e KERNEL [NAME=VALUE ...] [--drop-wait | --drop-sync-all | --drop-barrier-all]
//        (parameters as tlc's --set)
//        ascendc_e2e --ir FILE   (a kernel as Tile IR text: a Python kernel's get_tile_ir(False))
//        ascendc_e2e --op OP [NAME=VALUE ...]   (a cann_ops_tilelang op as `tlc op` runs it)
// Exit 0: bit-identical and hazard-free; 1: a mismatch or an error (printed). TL_E2E_KEEP=1
// keeps the emitted file.
// --drop-wait: the mutation check. The first WaitFlag line of the emitted file is deleted; exit
// 0 only if the model's run then fails naming it at lines of the emitted file: the hazard
// checker's unordered pair and the SetFlag left without its wait, or (the SetFlag in a loop)
// the VM's "flag already set" at the next SetFlag. --drop-sync-all: the first SyncAll line
// deleted; the hazard checker must name a pair of blocks' accesses it ordered.
// --drop-barrier-all: the same with the first PipeBarrier<PIPE_ALL> (the one before a scalar
// read from UB): the unordered pair named.
//
// The shared object gets a small entry appended to the emitted text, `tl_e2e_entry(void**)`,
// which unpacks the arguments into the kernel's own signature (tensors and workspaces as GM
// addresses, scalar parameters and dynamic sizes by value: the emitter's argument order). The
// model's functions resolve against this executable (linked with its symbols exported).
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "ascendc_cpu/model.h"
#include "cann_ops_tilelang/core.h"
#include "common/example_checks.h"
#include "tl/arith.h"
#include "tl/ascendc.h"
#include "tl/ir_functor.h"
#include "tl/kernel_registry.h"
#include "tl/npu/npu.h"
#include "tl/npu/numerics.h"
#include "tl/op.h"
#include "tl/parser.h"
#include "tlc/ops_cmd.h"

namespace {

using namespace tl;

/// The C++ type the emitter gives a scalar parameter of dtype `t`.
std::string ctype(DType t) {
  switch (t) {
    case DType::Float16:
      return "half";
    case DType::BFloat16:
      return "bfloat16_t";
    case DType::Float32:
      return "float";
    case DType::Int8:
      return "int8_t";
    case DType::UInt8:
      return "uint8_t";
    case DType::Int16:
      return "int16_t";
    case DType::UInt16:
      return "uint16_t";
    case DType::Int32:
      return "int32_t";
    case DType::UInt32:
      return "uint32_t";
    case DType::Int64:
      return "int64_t";
    case DType::UInt64:
      return "uint64_t";
    case DType::Bool:
      return "bool";
    default:
      throw Error(fmt::format("a scalar parameter of {}", dtype_name(t)));
  }
}

/// The lowered kernel's GM workspaces, in the order the emitter lists them (first allocation
/// first).
std::vector<Buffer> workspaces_of(const PrimFunc& f) {
  struct V : IRVisitor {
    std::vector<Buffer> out;
    void visit_(const AllocateNode* n) override {
      if (n->buffer->scope == MemScope::GM) out.push_back(n->buffer);
      IRVisitor::visit_(n);
    }
  } v;
  v.visit(f->body);
  return v.out;
}

/// Whether `f` adds to GM atomically: the order of the adds of different blocks then decides a
/// float sum, and the VM fixes it only on one host thread (the CPU model runs the blocks in
/// order, docs/ascendc.md "Cores, blocks and flags").
bool has_atomic_add(const PrimFunc& f) {
  struct V : IRVisitor {
    bool found = false;
    void visit_(const TileOpNode* n) override {
      found = found || n->op->atomic;
      IRVisitor::visit_(n);
    }
  } v;
  v.visit(f->body);
  return v.found;
}

/// Inputs copied before the VM's launch writes its outputs.
std::vector<Arg> copy_args(Device& dev, const std::vector<Arg>& args) {
  std::vector<Arg> out;
  for (const Arg& a : args) {
    if (auto* t = std::get_if<Tensor>(&a.value)) {
      if (!t->is_contiguous())
        throw Error(fmt::format("a non-contiguous kernel argument {}", t->describe()));
      Tensor c = Tensor::empty(dev, t->shape(), t->dtype());
      std::memcpy(c.data(), t->data(), static_cast<size_t>(t->nbytes()));  // NaN payloads too
      out.emplace_back(c);
    } else {
      out.push_back(a);
    }
  }
  return out;
}

/// Emits `lowered`, compiles it against the CPU model, runs it on `model_args` (the inputs as
/// the VM got them) and compares every GM tensor with `vm_args` (after the VM's run). 0: the
/// same bytes and no hazard (with `drop`: the deleted line's missing order named). `drop`: the
/// text that starts the line to delete ("AscendC::WaitFlag<", "AscendC::SyncAll<" or
/// "AscendC::PipeBarrier<PIPE_ALL>"), empty: none.
int check_on_model(const std::string& kernel, const PrimFunc& lowered, const Target& target,
                   Device& dev, const std::vector<Arg>& model_args, const std::vector<Arg>& vm_args,
                   const std::string& drop) {
  // The AscendC file, with the entry the driver calls.
  std::string src = ascendc::emit(lowered, target);
  int dropped_line = 0;
  if (!drop.empty()) {
    const size_t at = src.find(drop);
    if (at == std::string::npos) throw Error(fmt::format("{} has no {} to delete", kernel, drop));
    const size_t begin = src.rfind('\n', at) + 1, end = src.find('\n', at);
    dropped_line = static_cast<int>(std::count(src.begin(), src.begin() + begin, '\n')) + 1;
    std::cout << "deleted line " << dropped_line << ": " << src.substr(begin, end - begin) << "\n";
    src.replace(begin, end - begin, "  // (deleted by the mutation check)");
  }
  std::vector<Buffer> ws = workspaces_of(lowered);
  std::string call;
  int slot = 0;
  auto arg = [&](const std::string& type) {
    call += fmt::format("{}{}", call.empty() ? "" : ", ",
                        type == "uint8_t*" ? fmt::format("static_cast<uint8_t*>(a[{}])", slot)
                                           : fmt::format("*static_cast<{}*>(a[{}])", type, slot));
    ++slot;
  };
  for (const auto& p : lowered->params)
    if (p.is_tensor()) arg("uint8_t*");
  for (size_t i = 0; i < ws.size(); ++i) arg("uint8_t*");
  for (const auto& p : lowered->params)
    if (!p.is_tensor()) arg(ctype(p.scalar.dtype()));
  for (size_t i = 0; i < lowered->dynamics.size(); ++i) arg("int32_t");
  src += fmt::format("\nextern \"C\" void tl_e2e_entry(void** a) {{ {}({}); }}\n", lowered->name,
                     call);

  const auto dir = std::filesystem::temp_directory_path() /
                   fmt::format("tl_ascendc_e2e_{}_{}", kernel, ::getpid());
  std::filesystem::create_directories(dir);
  const auto cpp = dir / (kernel + ".cpp"), so = dir / (kernel + ".so");
  std::ofstream(cpp) << src;
  const std::string cmd = fmt::format(
      "{} -std=c++20 -O1 -fPIC -shared -Wall -Wextra -Werror -Wno-unused-variable "
      "-Wno-unused-but-set-variable -DTL_ASCENDC_NO_HOST_STUB -I{}/ascendc_cpu -I{} {} -o {} 2>&1",
      TL_E2E_CXX, TL_E2E_INCLUDE, TL_E2E_INCLUDE, cpp.string(), so.string());
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    if (pclose(p) != 0) {
      std::cerr << "the emitted file " << cpp.string()
                << " does not compile against the CPU model:\n"
                << out;
      return 1;
    }
  }
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw Error(fmt::format("dlopen {}: {}", so.string(), dlerror()));
  auto entry_fn = reinterpret_cast<void (*)(void**)>(dlsym(h, "tl_e2e_entry"));
  if (!entry_fn) throw Error("the shared object has no tl_e2e_entry");

  // The model's run: arguments in the emitter's order.
  ascendc_cpu::LaunchConfig cfg;
  cfg.kernel = lowered->name;
  std::vector<void*> ptrs;
  std::vector<std::vector<uint8_t>> scalars;  // each scalar's bytes, kept alive
  std::unordered_map<const VarNode*, arith::Value> dyn;
  for (size_t i = 0; i < lowered->params.size(); ++i) {
    const auto& p = lowered->params[i];
    if (!p.is_tensor()) continue;
    const Tensor& t = std::get<Tensor>(model_args[i].value);
    cfg.tensors.push_back({p.tensor->name, t});
    ptrs.push_back(t.data());
    for (size_t d = 0; d < p.tensor->shape.size(); ++d)
      if (auto* v = p.tensor->shape[d].as<VarNode>())
        dyn.try_emplace(v, arith::Value::of_int(t.shape()[d]));
  }
  for (const Buffer& w : ws) {
    std::vector<int64_t> shape;
    for (const auto& s : w->shape) shape.push_back(arith::evaluate(s, dyn).as_int());
    Tensor t = Tensor::empty(dev, shape, w->dtype);
    cfg.tensors.push_back({w->name, t});
    ptrs.push_back(t.data());
  }
  for (size_t i = 0; i < lowered->params.size(); ++i) {
    const auto& p = lowered->params[i];
    if (p.is_tensor()) continue;
    const DType t = p.scalar.dtype();
    std::vector<uint8_t> bytes(static_cast<size_t>(dtype_bytes(t)));
    const Arg& a = model_args[i];
    double v = std::holds_alternative<double>(a.value)
                   ? std::get<double>(a.value)
                   : static_cast<double>(std::get<int64_t>(a.value));
    npu::from_double(t, v, bytes.data());
    scalars.push_back(std::move(bytes));
  }
  std::vector<int32_t> dyn_values;
  for (const auto& d : lowered->dynamics) {
    auto it = dyn.find(d.node());
    if (it == dyn.end())
      throw Error(fmt::format("dynamic size {} is no tensor's dimension", d.name()));
    dyn_values.push_back(static_cast<int32_t>(it->second.as_int()));
  }
  for (auto& s : scalars) ptrs.push_back(s.data());
  for (auto& d : dyn_values) ptrs.push_back(&d);
  const KernelNode* k = kernel_of(lowered);
  cfg.num_blocks = arith::evaluate(k->num_blocks, dyn).as_int();
  if (!drop.empty()) {
    const bool sync_all = drop == "AscendC::SyncAll<";
    try {
      ascendc_cpu::launch(cfg, [&] { entry_fn(ptrs.data()); });
    } catch (const Error& e) {
      const std::string msg = e.what(), file = cpp.filename().string() + ":";
      std::cout << msg.substr(0, 2000) << "\n";
      const bool pair = msg.find(" hazard on ") != std::string::npos &&
                        msg.find("is not ordered after") != std::string::npos;
      const bool left = msg.find("flag left set") != std::string::npos;
      // In a loop the next SetFlag on the same id meets the flag still set: the VM's own
      // functional check names that SetFlag (no wait consumed the previous set) first.
      const bool again = msg.find("SetFlag: ") != std::string::npos &&
                         msg.find("no wait_flag consumed the previous set") != std::string::npos;
      // A deleted SyncAll or PipeBarrier leaves no flag behind: the unordered pair is the whole
      // report (a block reading another's data, a scalar read against an earlier load).
      const bool barrier = drop.find("PipeBarrier") != std::string::npos;
      const char* what = sync_all ? "SyncAll" : barrier ? "PipeBarrier<PIPE_ALL>" : "WaitFlag";
      if ((sync_all || barrier ? pair : (pair && left) || again) &&
          msg.find(file) != std::string::npos) {
        std::cout << fmt::format("{}: the deleted {} (line {}) is named: {}\n", kernel, what,
                                 dropped_line,
                                 again ? "the next SetFlag finds its flag still set"
                                       : "the hazard checker reports the pair it ordered");
        return 0;
      }
      std::cerr << "the report does not name the unordered pair\n";
      return 1;
    }
    std::cerr << kernel << ": the deleted line went unnoticed\n";
    return 1;
  }
  ascendc_cpu::launch(cfg, [&] { entry_fn(ptrs.data()); });

  // Every GM tensor the same bytes.
  int bad = 0;
  for (size_t i = 0; i < lowered->params.size(); ++i) {
    const auto& p = lowered->params[i];
    if (!p.is_tensor()) continue;
    const Tensor& a = std::get<Tensor>(vm_args[i].value);
    const Tensor& b = std::get<Tensor>(model_args[i].value);
    const int64_t es = dtype_bytes(a.dtype());
    int64_t diff = 0, first = -1;
    for (int64_t e = 0; e < a.numel(); ++e)
      if (std::memcmp(a.data() + e * es, b.data() + e * es, static_cast<size_t>(es)) != 0) {
        if (first < 0) first = e;
        ++diff;
      }
    if (diff) {
      ++bad;
      std::cerr << fmt::format("{}: {} of {} elements differ (first: element {}: VM {} model {})\n",
                               p.tensor->name, diff, a.numel(), first, a.get(first), b.get(first));
    }
  }
  dlclose(h);
  // TL_E2E_KEEP=1 keeps the emitted file (and its shared object) for a reader.
  if (std::getenv("TL_E2E_KEEP"))
    std::cout << "kept " << cpp.string() << "\n";
  else
    std::filesystem::remove_all(dir);
  if (bad) return 1;
  std::cout << fmt::format(
      "{}: {} blocks; the AscendC file ({} bytes, {} lines) compiled against "
      "the CPU model gives the VM's bytes; hazard checker quiet\n",
      kernel, cfg.num_blocks, src.size(), std::count(src.begin(), src.end(), '\n'));
  return 0;
}

/// --op NAME [k=v ...]: runs the library op as `tlc op NAME` does (random inputs, checked
/// against its reference), and every kernel it launches on the CPU model too.
int run_op(int argc, char** argv) {
  if (argc < 3) throw Error("--op needs an op name (tlc ops lists them)");
  const std::string op = argv[2];
  std::vector<std::string> words = {"ascendc_e2e", "op", op};
  for (int i = 3; i < argc; ++i) {
    words.push_back("--set");
    words.push_back(argv[i]);
  }
  std::vector<char*> cargv;
  for (auto& w : words) cargv.push_back(w.data());
  CLI::App app;
  OpsCommands cmds = add_ops_commands(app);
  app.parse(static_cast<int>(cargv.size()), cargv.data());
  int launches = 0, failures = 0;
  cann_ops_tilelang::set_launch_hook([&](const CompiledKernel& k, Device& dev,
                                         const std::vector<Arg>& args, const LaunchOptions& o) {
    std::vector<Arg> before = copy_args(dev, args);
    LaunchOptions opt = o;
    opt.check_hazards = true;
    if (has_atomic_add(k.func())) opt.threads = 1;
    k.launch(dev, args, opt);
    ++launches;
    failures += check_on_model(fmt::format("{}_{}", op, launches), k.func(), k.target(), dev,
                               before, args, "") != 0;
  });
  const int rc = run_ops_commands(cmds, default_target());
  cann_ops_tilelang::set_launch_hook(nullptr);
  if (rc != 0) return 1;
  if (launches == 0) throw Error(fmt::format("op {} launched no kernel", op));
  std::cout << fmt::format("op {}: {} of {} kernel launches bit-identical on the CPU model\n", op,
                           launches - failures, launches);
  return failures ? 1 : 0;
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ascendc_e2e KERNEL [NAME=VALUE ...]\n");
    return 2;
  }
  if (std::string(argv[1]) == "--op") return run_op(argc, argv);
  if (std::string(argv[1]) == "--ir") {
    // --ir FILE: a kernel as Tile IR text, e.g. a Python kernel's get_tile_ir(lowered=False)
    // (one that needs no pass configuration: its scopes and syncs written out).
    if (argc < 3) throw Error("--ir needs a Tile IR file");
    std::ifstream in(argv[2]);
    if (!in) throw Error(fmt::format("--ir: cannot read '{}'", argv[2]));
    std::stringstream text;
    text << in.rdbuf();
    PrimFunc f = parse(text.str(), argv[2]);
    Device dev;
    std::vector<Arg> vm_args = ref::random_args(dev, f);
    CompiledKernel ck = tl::compile(f, default_target());
    std::vector<Arg> model_args = copy_args(dev, vm_args);
    LaunchOptions opt;
    opt.check_hazards = true;
    if (has_atomic_add(ck.func())) opt.threads = 1;
    ck.launch(dev, vm_args, opt);
    return check_on_model(f->name, ck.func(), default_target(), dev, model_args, vm_args, "");
  }
  const std::string kernel = argv[1];
  const KernelEntry& entry = find_kernel(kernel);
  std::map<std::string, std::string> sets;
  std::string drop;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--drop-wait") {
      drop = "AscendC::WaitFlag<";
      continue;
    }
    if (a == "--drop-sync-all" || a == "--drop-barrier-all") {
      drop = a == "--drop-sync-all" ? "AscendC::SyncAll<" : "AscendC::PipeBarrier<PIPE_ALL>";
      continue;
    }
    auto eq = a.find('=');
    if (eq == std::string::npos) throw Error(fmt::format("'{}' is not NAME=VALUE", a));
    sets[a.substr(0, eq)] = a.substr(eq + 1);
  }
  KernelArgs params = resolve_kernel_args(entry, sets);
  PrimFunc f = entry.build(params);
  const Target& target = default_target();

  // The virtual NPU's run: the lowered kernel, under the hazard checker.
  Device dev;
  std::vector<Arg> vm_args = ref::random_args(dev, f);
  CompiledKernel ck = tl::compile(f, target);
  const PrimFunc& lowered = ck.func();
  std::vector<Arg> model_args = copy_args(dev, vm_args);
  LaunchOptions opt;
  opt.check_hazards = true;
  if (has_atomic_add(lowered)) opt.threads = 1;
  ck.launch(dev, vm_args, opt);
  return check_on_model(kernel, lowered, target, dev, model_args, vm_args, drop);
}
}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
