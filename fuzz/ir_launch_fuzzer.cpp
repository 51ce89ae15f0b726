// Fuzz target: IR text through the whole toolchain. An input is a kernel in IR text (the
// grammar of tl/printer.h); the harness parses it, checks that what parsed prints and parses
// back to itself, verifies it, and when it verifies and its static work is small, compiles it
// (with every pass checked against its invariant) and launches it on the virtual NPU with
// small deterministic tensors. Besides "no crash, no internal error, no exception other than
// tl::Error", the launches are checked against each other, so the NPU cannot lie quietly:
//   - a timed run whose simulated-time order changed nothing leaves the same bytes as the
//     functional run, and a kernel the hazard checker passes has no simulated-time effects;
//   - a kernel the hazard checker passes (no races) gives the same result with one host
//     thread and two (same success, same bytes, same output).
// Bindings come from the input: a comment line `#fuzz: M=64 eps=0.5 seed=3` sets dynamic
// symbols, scalar parameters and the data seed (anything unset is a small value picked from
// a hash of the input), so every reproducer is self-contained and every run deterministic.
// Built as a libFuzzer target with TL_FUZZ=ON, else with replay_main.cpp (docs/fuzzing.md).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tl/arith.h"
#include "tl/error.h"
#include "tl/ir_equal.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/op.h"
#include "tl/parser.h"
#include "tl/printer.h"
#include "tl/runtime.h"
#include "tl/verifier.h"

#ifdef TL_FUZZ_LIBFUZZER
#include "text_mutator.h"
#endif

namespace {

using namespace tl;

// Limits that keep one input to milliseconds and a few MB. The static estimate is the guard
// against large element work; the instruction budget (LaunchOptions::max_steps) is the guard
// against a loop the estimate misjudges: a runaway input ends in a tl::Error, not a timeout.
// Steps count statements a core executes, the same in every mode, so all three launches of
// an input stop (or not) alike.
constexpr double kMaxWork = 1e6;          // estimated element operations, all cores together
constexpr int64_t kMaxSteps = 4'000'000;  // interpreter steps per core and block
// Statement executions (loop iterations and branch tests included), all cores together: an
// element-free loop of 65534 iterations of an if on 4 AIVs took 17 s over its three launches
// under ASan (a libFuzzer timeout) while its element work was far below kMaxWork.
constexpr double kMaxRuns = 150'000;
constexpr int64_t kMaxBlocks = 4;          // logical blocks
constexpr int64_t kMaxTrips = 1 << 16;     // iterations of one loop
constexpr int64_t kMaxElements = 1 << 18;  // elements over all tensor arguments

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "\n==== fuzz_ir_launch: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

/// TL_FUZZ_VERBOSE=1: say what became of each input (to check that seeds get as far as a launch).
void note(const std::string& what) {
  static const bool verbose = [] {
    const char* v = std::getenv("TL_FUZZ_VERBOSE");
    return v && *v && *v != '0';
  }();
  if (verbose) std::fprintf(stderr, "  %s\n", what.c_str());
}

uint64_t fnv1a(std::string_view s, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

/// `#fuzz: name=value ...` lines of the input.
std::map<std::string, std::string> directives(std::string_view text) {
  std::map<std::string, std::string> out;
  size_t p = 0;
  while ((p = text.find("#fuzz:", p)) != std::string_view::npos) {
    p += 6;
    size_t end = text.find('\n', p);
    std::istringstream line(
        std::string(text.substr(p, end == std::string_view::npos ? end : end - p)));
    std::string tok;
    while (line >> tok)
      if (size_t eq = tok.find('='); eq != std::string::npos && eq > 0)
        out[tok.substr(0, eq)] = tok.substr(eq + 1);
  }
  return out;
}

/// The values a launch binds: dynamic symbols and scalar parameters by name, and the data seed.
struct Bindings {
  std::map<std::string, std::string> given;
  uint64_t hash = 0;
  uint64_t pick(const std::string& name, uint64_t n) const { return fnv1a(name, hash) % n; }
  int64_t dynamic(const std::string& name) const {
    static const int64_t kValues[] = {1, 2, 8, 16, 32, 64, 67};
    if (auto it = given.find(name); it != given.end())
      return std::strtoll(it->second.c_str(), nullptr, 0);
    return kValues[pick(name, std::size(kValues))];
  }
  double scalar(const std::string& name, DType t) const {
    static const double kFloats[] = {1.0, 0.5, -2.0, 1e-6};
    static const double kInts[] = {0, 1, 2, 3, 5, 16};
    if (auto it = given.find(name); it != given.end())
      return std::strtod(it->second.c_str(), nullptr);
    if (is_float(t)) return kFloats[pick(name, std::size(kFloats))];
    if (is_bool(t)) return static_cast<double>(pick(name, 2));
    return kInts[pick(name, std::size(kInts))];
  }
  uint64_t seed() const {
    if (auto it = given.find("seed"); it != given.end())
      return std::strtoull(it->second.c_str(), nullptr, 0);
    return hash;
  }
};

/// Upper bound of the work a kernel does, from interval bounds of its loop extents; a
/// non-empty `why` means it is too large or cannot be bounded, and the input is not launched.
class WorkEstimate {
 public:
  arith::VarIntervals vars;
  double work = 0;
  double runs = 0;  // statement executions (kMaxRuns)
  std::string why;

  /// `s` runs `mult` times on each of `cores` cores.
  void stmt(const Stmt& s, double mult, int cores = 1) {
    if (!s.defined() || !why.empty()) return;
    if (s.kind() != StmtKind::Seq) {
      runs += mult * cores;
      if (runs > kMaxRuns) return reject("an estimated {:.3g} statement executions", runs);
    }
    if (auto* n = s.as<SeqNode>()) {
      for (const auto& c : n->stmts) stmt(c, mult, cores);
    } else if (auto* n = s.as<KernelNode>()) {
      arith::Interval nb = arith::bound(n->num_blocks, vars);
      if (nb.hi > kMaxBlocks) return reject("more than {} blocks", kMaxBlocks);
      if (nb.hi <= 0) return;
      vars[n->cid.node()] = {0, nb.hi - 1};
      if (n->vid.defined()) vars[n->vid.node()] = {0, 1};
      stmt(n->body, mult * static_cast<double>(nb.hi), 3);
    } else if (auto* n = s.as<ForNode>()) {
      arith::Interval mn = arith::bound(n->min, vars), ex = arith::bound(n->extent, vars);
      if (ex.hi <= 0) return;
      if (ex.hi > kMaxTrips) return reject("a loop of up to {} iterations", ex.hi);
      int64_t last;
      if (__builtin_add_overflow(mn.hi, ex.hi - 1, &last))
        vars.erase(n->var.node());
      else
        vars[n->var.node()] = {mn.lo, last};
      runs += mult * cores * static_cast<double>(ex.hi);  // the loop's own step per iteration
      stmt(n->body, mult * static_cast<double>(ex.hi), cores);
    } else if (auto* n = s.as<IfNode>()) {
      stmt(n->then_case, mult, cores);
      stmt(n->else_case, mult, cores);
    } else if (auto* n = s.as<LetNode>()) {
      vars[n->var.node()] = arith::bound(n->value, vars);
      add(mult * cores);
    } else if (auto* n = s.as<ScopeNode>()) {
      stmt(n->body, mult, n->core == CoreKind::Cube ? 1 : 2);
    } else if (auto* n = s.as<TileOpNode>()) {
      add(mult * cores * (1 + tile_op_cost(*n)));
    } else {
      add(mult * cores);  // Allocate, Store, Sync
    }
  }

 private:
  template <typename... A>
  void reject(fmt::format_string<A...> f, A&&... a) {
    if (why.empty()) why = fmt::format(f, std::forward<A>(a)...);
  }
  void add(double w) {
    work += w;
    if (work > kMaxWork) reject("an estimated {:.3g} element operations", work);
  }
  double elements(const BufferRegion& r) {
    double n = 1;
    for (size_t d = 0; d < r.buffer->shape.size(); ++d) {
      const Expr& e = d < r.ranges.size() && r.ranges[d].extent.defined() ? r.ranges[d].extent
                                                                          : r.buffer->shape[d];
      n *= static_cast<double>(std::max<int64_t>(0, arith::bound(e, vars).hi));
    }
    return n;
  }
  double tile_op_cost(const TileOpNode& n) {
    std::vector<double> regions;
    for (const auto& a : n.args)
      if (a.is_region()) regions.push_back(elements(a.region));
    double cost = 0;
    // A cube op on A [M, K], B [K, N] and C [M, N] does M * N * K = sqrt(|A| |B| |C|) MACs.
    if (n.op->unit == OpUnit::Cube && regions.size() >= 3)
      cost = std::sqrt(regions[0] * regions[1] * regions[2]);
    else
      for (double r : regions) cost += r;
    return n.op->unit == OpUnit::Debug ? cost + 16 : cost;  // printf lines are kept until the end
  }
};

/// The tensors and scalars of one launch, made fresh on a new device for every run.
struct ArgPlan {
  struct TensorArg {
    std::vector<int64_t> shape, padded;  // padded: the dense tensor `shape` is a slice of
    DType dtype;
  };
  std::vector<std::variant<TensorArg, double>> args;
  uint64_t seed = 0;
};

/// The dense shape whose row-major strides are `strides`, if there is one that holds `shape`.
std::optional<std::vector<int64_t>> padded_shape(const std::vector<int64_t>& shape,
                                                 const std::vector<int64_t>& strides) {
  size_t r = shape.size();
  if (r == 0) return shape;
  std::vector<int64_t> padded(shape);
  if (strides[r - 1] != 1 && shape[r - 1] > 1) return std::nullopt;
  for (size_t d = 0; d + 1 < r; ++d) {
    if (strides[d + 1] <= 0 || strides[d] % strides[d + 1] != 0) return std::nullopt;
    int64_t q = strides[d] / strides[d + 1];
    if (q < shape[d + 1]) return std::nullopt;
    padded[d + 1] = q;
  }
  return padded;
}

/// Evaluates the tensor shapes and scalar values of `f`'s parameters; nullopt when they cannot
/// be evaluated or are too large to launch.
std::optional<ArgPlan> plan_args(const PrimFunc& f, const Bindings& b,
                                 arith::VarIntervals& bound_vars) {
  std::unordered_map<const VarNode*, arith::Value> env;
  for (const auto& d : f->dynamics) {
    int64_t v = b.dynamic(d.name());
    env[d.node()] = arith::Value::of_int(v);
    bound_vars[d.node()] = arith::Interval::point(v);
  }
  ArgPlan plan;
  plan.seed = b.seed();
  for (const auto& p : f->params)
    if (!p.is_tensor()) {
      DType t = p.scalar.dtype();
      double v = b.scalar(p.scalar.name(), t);
      arith::Value val =
          is_float(t) ? arith::Value::of_float(v) : arith::cast_value(t, arith::Value::of_float(v));
      env[p.scalar.node()] = val;
      if (!is_float(t)) bound_vars[p.scalar.node()] = arith::Interval::point(val.i);
    }
  int64_t total = 0;
  try {
    for (const auto& p : f->params) {
      if (!p.is_tensor()) {
        plan.args.emplace_back(b.scalar(p.scalar.name(), p.scalar.dtype()));
        continue;
      }
      ArgPlan::TensorArg t{{}, {}, p.tensor->dtype};
      int64_t n = 1;
      for (const auto& e : p.tensor->shape) {
        int64_t v = arith::evaluate(e, env).as_int();
        if (v < 0 || v > kMaxElements) return std::nullopt;
        t.shape.push_back(v);
        n *= v;  // both at most kMaxElements: no overflow
        if (n > kMaxElements) return std::nullopt;
      }
      t.padded = t.shape;
      if (!p.tensor->strides.empty()) {
        std::vector<int64_t> strides;
        for (const auto& e : p.tensor->strides) strides.push_back(arith::evaluate(e, env).as_int());
        // Strides no dense tensor can be sliced to are launched dense: the launch must say so.
        if (auto padded = padded_shape(t.shape, strides)) t.padded = *padded;
      }
      int64_t pn = 1;
      for (int64_t v : t.padded) {
        if (v > kMaxElements) return std::nullopt;
        pn *= v;
        if (pn > kMaxElements) return std::nullopt;
      }
      total += pn;
      if (total > kMaxElements) return std::nullopt;
      plan.args.emplace_back(std::move(t));
    }
  } catch (const Error&) {
    return std::nullopt;  // a shape that does not evaluate: the launch's own error is tested
                          // elsewhere
  }
  return plan;
}

/// What a launch left behind.
struct Outcome {
  bool ok = false;
  std::string error;
  std::vector<std::vector<uint8_t>> bytes;  // each tensor argument's whole (padded) storage
  std::string printed;
  npu::Profile profile;
};

/// `stale`: the stale-data checker on (it is off otherwise, whatever TL_CHECK_STALE says: the
/// random kernels read memory they never wrote, and the comparisons below are about data).
Outcome run(const CompiledKernel& k, const ArgPlan& plan, int threads, bool hazards, bool timed,
            bool stale = false) {
  Device dev(k.target());
  std::vector<Arg> args;
  std::vector<Tensor> bases;
  for (size_t i = 0; i < plan.args.size(); ++i) {
    if (auto* s = std::get_if<double>(&plan.args[i])) {
      args.emplace_back(*s);
      continue;
    }
    const auto& t = std::get<ArgPlan::TensorArg>(plan.args[i]);
    Tensor base = uniform(dev, t.padded, t.dtype, plan.seed + i, -2.0, 2.0);
    Tensor view = base;
    for (size_t d = 0; d < t.shape.size(); ++d)
      if (t.shape[d] != t.padded[d]) view = view.slice(static_cast<int>(d), 0, t.shape[d]);
    bases.push_back(base);
    args.emplace_back(view);
  }
  Outcome o;
  std::ostringstream out;
  LaunchOptions opt;
  opt.threads = threads;
  opt.out = &out;
  opt.check_hazards = hazards;
  // Every run starts from the poisoned memories timed and hazard-checked launches start from,
  // so a kernel reading on-chip memory it never wrote reads the same bytes in all of them.
  opt.poison = true;
  opt.max_steps = kMaxSteps;
  opt.check_stale = stale;
  if (timed) opt.profile = &o.profile;
  try {
    k.launch(dev, args, opt);
    o.ok = true;
  } catch (const Error& e) {
    o.error = e.what();
  }
  o.printed = out.str();
  for (const Tensor& t : bases) o.bytes.emplace_back(t.data(), t.data() + t.nbytes());
  return o;
}

std::string excerpt(const std::string& s, size_t n = 400) {
  return s.size() > n ? s.substr(0, n) + "[...]" : s;
}

void launch_and_compare(const PrimFunc& f, const Target& target, const Bindings& b) {
  WorkEstimate est;
  auto plan = plan_args(f, b, est.vars);
  if (!plan) return note("not launched: tensor shapes too large or not evaluable");
  est.stmt(f->body, 1);
  if (!est.why.empty()) return note("not launched: " + est.why);

  CompiledKernel k;
  try {
    k = compile(f, target, {.cache = false});
  } catch (const Error& e) {
    return note(std::string("compile error: ") + e.what());  // e.g. plan_memory finds no room
  }
  Outcome one = run(k, *plan, 1, false, false);
  note(fmt::format("launched (estimated work {:.3g}): {}", est.work,
                   one.ok ? "ok" : "error: " + excerpt(one.error)));
  if (!one.ok) return;

  // The stale-data checker changes no data, and fails a launch only with its findings.
  Outcome stale = run(k, *plan, 1, false, false, true);
  if (stale.bytes != one.bytes)
    fail("a launch with the stale-data checker leaves different tensor contents");
  if (!stale.ok && stale.error.rfind("stale-data check of kernel", 0) != 0)
    fail("the launch succeeds, but with the stale-data checker it fails: " + excerpt(stale.error));
  note(fmt::format("stale-data check: {}", stale.ok ? "clean" : "findings"));

  // The hazard checker, and timed mode against the functional result.
  Outcome checked = run(k, *plan, 1, true, false);
  if (checked.bytes != one.bytes)
    fail("a launch with check_hazards leaves different tensor contents");
  Outcome timed = run(k, *plan, 1, false, true);
  if (!timed.ok)
    fail("the functional launch succeeds but the timed one fails: " + excerpt(timed.error));
  const auto& effects = timed.profile.time_order_effects;
  note(fmt::format("hazard check: {}; timed: {} simulated-time effects",
                   checked.ok ? "clean" : "hazards", effects.size()));
  if (effects.empty() && timed.bytes != one.bytes)
    fail(
        "timed mode reports no simulated-time effects, but its tensors differ from the functional "
        "run's");
  if (!checked.ok) return;
  if (!effects.empty())
    fail("the hazard checker passes the kernel, but simulated-time order changes its result: " +
         effects[0]);

  // Thread count: a kernel without races (blocks racing on GM are hazards too) gives
  // bit-identical results for any number of host threads; a racy one may not.
  Outcome two = run(k, *plan, 2, false, false);
  if (!two.ok) fail("the kernel succeeds with 1 host thread, but with 2: " + excerpt(two.error));
  if (one.bytes != two.bytes) fail("1 and 2 host threads leave different tensor contents");
  if (one.printed != two.printed) fail("1 and 2 host threads print different output");
}

void one_input(std::string_view text) {
  PrimFunc f;
  try {
    f = parse(text, "fuzz");
  } catch (const Error& e) {
    return note(std::string("parse error: ") + e.what());
  }

  // What parses prints to text that parses back to the same function. (A function holding a
  // NaN attribute is not structurally equal even to itself.)
  std::string printed = print(f);
  PrimFunc g;
  try {
    g = parse(printed, "reprint");
  } catch (const Error& e) {
    fail(fmt::format("printed text does not parse: {}\nprinted:\n{}", e.what(),
                     excerpt(printed, 2000)));
  }
  if (print(g) != printed || (structural_equal(f, f) && !structural_equal(g, f)))
    fail(fmt::format("reprint differs ({})\nprinted:\n{}", first_difference(g, f),
                     excerpt(printed, 2000)));

  Bindings b{directives(text), fnv1a(text)};
  const Target* target = &default_target();
  if (auto it = b.given.find("target"); it != b.given.end()) {
    try {
      target = &get_target(it->second);
    } catch (const Error&) {
      return;
    }
  }
  if (auto ds = verify(f, *target); !ds.empty()) return note("verifier: " + ds[0].str());
  launch_and_compare(f, *target, b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Every pass's output is checked against its invariant: a pass that breaks it is a bug the
  // fuzzer should report (as a tl::InternalError).
  static const bool verify_each = setenv("TL_VERIFY_EACH", "1", 1) == 0;
  (void)verify_each;
  try {
    one_input(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const tl::InternalError& e) {
    fail(std::string("internal error: ") + e.what());
  } catch (const tl::Error& e) {
    fail(std::string("tl::Error escaped the harness's own handling: ") + e.what());
  } catch (const std::exception& e) {
    fail(std::string("exception that is not a tl::Error: ") + e.what());
  }
  return 0;
}
