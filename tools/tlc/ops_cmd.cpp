// `tlc ops` lists the ops of cann_ops_tilelang with one-line summaries; `tlc op NAME --set k=v`
// runs one on random data on the virtual NPU and checks it. The references live under tests/
// only (tests/ops/*_ref.h) and the library never calls them; tlc is a test-side tool that links
// them when the tests are built (TL_HAVE_REFERENCES, as `tlc run` does for the examples), so
// `tlc op` checks against the fp64 reference there, and without them says it could only check
// that the results are finite.
#include "ops_cmd.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <map>

#include "cann_ops_tilelang/norm.h"
#include "cann_ops_tilelang/softmax.h"
#include "tl/npu/timing.h"
#include "tl/runtime.h"
#ifdef TL_HAVE_REFERENCES
#include "ops/layer_norm_ref.h"
#include "ops/ops_testing.h"
#include "ops/rms_norm_ref.h"
#include "ops/softmax_ref.h"
#endif

namespace {

using namespace cann_ops_tilelang;

/// --set values over defaults; an unknown name or a malformed value is an error naming it.
struct Params {
  std::map<std::string, std::string> v;
  int64_t integer(const std::string& k) const {
    const std::string& s = v.at(k);
    size_t pos = 0;
    int64_t n = -1;
    try {
      n = std::stoll(s, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    if (pos != s.size() || n < 0)
      throw tl::Error(fmt::format("--set {}: expected an integer >= 0, got '{}'", k, s));
    return n;
  }
  double real(const std::string& k) const {
    try {
      return std::stod(v.at(k));
    } catch (const std::exception&) {
      throw tl::Error(fmt::format("--set {}: expected a number, got '{}'", k, v.at(k)));
    }
  }
};

Params parse(const std::string& op, std::map<std::string, std::string> defaults,
             const std::vector<std::string>& sets) {
  for (const auto& s : sets) {
    auto eq = s.find('=');
    if (eq == std::string::npos) throw tl::Error(fmt::format("--set '{}': expected NAME=VALUE", s));
    auto k = s.substr(0, eq);
    if (!defaults.count(k)) {
      std::string names;
      for (const auto& [n, _] : defaults) names += " " + n;
      throw tl::Error(
          fmt::format("--set {}: op {} has no parameter '{}' (it has:{})", k, op, k, names));
    }
    defaults[k] = s.substr(eq + 1);
  }
  return {defaults};
}

/// Prints how `got` compares; returns whether it passed.
bool report(const char* what, const tl::Tensor& got,
            [[maybe_unused]] const std::vector<double>& want,
            [[maybe_unused]] const std::vector<double>* scale) {
#ifdef TL_HAVE_REFERENCES
  auto msg = opstest::allclose(got.to_vector(), want, got.shape().back(),
                               opstest::tolerance(got.dtype()), what, scale);
  fmt::print("  {:<9} {} against the fp64 reference (calc_diff {:.2e}): {}\n", what, got.describe(),
             opstest::calc_diff(got.to_vector(), want), msg.empty() ? "ok" : msg);
  return msg.empty();
#else
  bool finite = true;
  for (double d : got.to_vector()) finite = finite && std::isfinite(d);
  fmt::print("  {:<9} {}: {} (no reference in this build: tests off; only finiteness checked)\n",
             what, got.describe(), finite ? "finite" : "NOT finite");
  return finite;
#endif
}

int run_rms_norm(const Params& p, const tl::Target& target, bool backward) {
  tl::Device dev(target);
  const int64_t M = p.integer("M"), H = p.integer("H");
  const auto parsed = tl::parse_dtype(p.v.at("dtype"));
  if (!parsed)
    throw tl::Error(fmt::format("--set dtype: expected bfloat16, float16 or float32, got '{}'",
                                p.v.at("dtype")));
  const tl::DType dt = *parsed;
  const double eps = p.real("eps");
  const uint64_t seed = static_cast<uint64_t>(p.integer("seed"));
  auto x = tl::randn(dev, {M, H}, dt, seed);
  auto w = tl::uniform(dev, {H}, dt, seed + 1, 0.5, 1.5);
  const auto t0 = std::chrono::steady_clock::now();
  auto ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  bool ok = true;
  if (!backward) {
    const bool res = p.integer("residual") != 0;
    tl::Tensor r = res ? tl::randn(dev, {M, H}, dt, seed + 2) : tl::Tensor();
    auto out = rms_norm(x, w, r, {.eps = eps, .return_rstd = p.integer("rstd") != 0});
    fmt::print("rms_norm {}x{} {} on {}: {:.1f} ms host (compile included on first use)\n", M, H,
               tl::dtype_name(dt), target.name, ms());
    std::vector<double> rv = res ? r.to_vector() : std::vector<double>();
#ifdef TL_HAVE_REFERENCES
    auto want =
        opstest::ref::rms_norm_fwd(x.to_vector(), res ? &rv : nullptr, w.to_vector(), M, H, eps);
#else
    struct {
      std::vector<double> y, h, rstd;
    } want;
#endif
    ok = report("y", out.y, want.y, nullptr) && ok;
    if (res) ok = report("residual", out.residual, want.h, nullptr) && ok;
    if (out.rstd.defined()) ok = report("rstd", out.rstd.reshape({M, 1}), want.rstd, nullptr) && ok;
  } else {
    auto dy = tl::randn(dev, {M, H}, dt, seed + 3);
    auto g = rms_norm_backward(dy, x, w, eps);
    fmt::print("rms_norm_backward {}x{} {} on {}: {:.1f} ms host (compile included on first use)\n",
               M, H, tl::dtype_name(dt), target.name, ms());
#ifdef TL_HAVE_REFERENCES
    auto want = opstest::ref::rms_norm_bwd(dy.to_vector(), x.to_vector(), w.to_vector(), M, H, eps);
    auto dw_scale = want.dw_abs;
    for (auto& v : dw_scale) v *= opstest::tolerance(dt).rtol / opstest::kApprox;
#else
    struct {
      std::vector<double> dx, dw, dx_abs;
    } want;
    std::vector<double> dw_scale;
#endif
    ok = report("dx", g.dx, want.dx, &want.dx_abs) && ok;
    ok = report("dw", g.dw, want.dw, &dw_scale) && ok;
  }
  return ok ? 0 : 1;
}

// softmax, log_softmax and their backwards: M x N logits (randn * 4). profile=1 also runs the
// kernel once in timed mode (the key the public function chose) and prints the simulated time
// against the HBM roofline of its bytes (forward: one read and one write; the chunked schedule
// reads twice).
int run_softmax(const std::string& name, const Params& p, const tl::Target& target) {
  tl::Device dev(target);
  const bool log = name.rfind("log_", 0) == 0;
  const bool backward = name.find("_backward") != std::string::npos;
  const int64_t M = p.integer("M"), N = p.integer("N");
  const auto parsed = tl::parse_dtype(p.v.at("dtype"));
  if (!parsed)
    throw tl::Error(fmt::format("--set dtype: expected bfloat16, float16 or float32, got '{}'",
                                p.v.at("dtype")));
  const tl::DType dt = *parsed;
  const uint64_t seed = static_cast<uint64_t>(p.integer("seed"));
  auto xv = tl::randn(dev, {M, N}, tl::DType::Float32, seed).to_vector();
  for (auto& e : xv) e *= 4;
  auto x = tl::from_vector(dev, {M, N}, dt, xv);
  auto y = log ? log_softmax(x) : softmax(x);
  tl::Tensor dy, out = y;
  const auto t0 = std::chrono::steady_clock::now();
  if (backward) {
    dy = tl::randn(dev, {M, N}, dt, seed + 1);
    out = log ? log_softmax_backward(dy, y) : softmax_backward(dy, y);
  }
  fmt::print(
      "{} {}x{} {} on {}: {:.1f} ms host\n", name, M, N, tl::dtype_name(dt), target.name,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
#ifdef TL_HAVE_REFERENCES
  std::vector<double> want, scale;
  if (!backward) {
    want = opstest::ref::softmax_fwd(x.to_vector(), M, N, log);
  } else {
    auto r = opstest::ref::softmax_bwd(dy.to_vector(), y.to_vector(), M, N, log);
    want = r.dx;
    scale = r.dx_abs;
    for (auto& s : scale) s *= opstest::tolerance(dt).rtol / opstest::kApprox;
  }
#else
  std::vector<double> want, scale;
#endif
  const bool ok = report(backward ? "dx" : "y", out, want, backward ? &scale : nullptr);
  if (p.integer("profile") != 0 && M > 0) {
    auto key = softmax_key(dt, N, log, backward, target);
    auto kernel = tl::compile(softmax_kernel(key), target);
    tl::npu::Profile prof;
    std::vector<tl::Arg> args{backward ? y : x};
    if (backward) args.emplace_back(dy);
    args.emplace_back(tl::Tensor::empty(dev, {M, N}, dt));
    kernel.launch(dev, args, {.timing_only = true, .profile = &prof});
    // Rooflines at the HBM bandwidth: the ideal (each input read once, one write) and the
    // schedule's own traffic (the chunked schedule reads its inputs twice: the issue's "two
    // reads and a write" bound for the forward).
    const double io = static_cast<double>(M * N * tl::dtype_bytes(dt));
    const double inputs = backward ? 2 : 1, passes = key.chunks() == 1 ? 1 : 2;
    const double ideal_us = (inputs + 1) * io / target.costs.hbm_bytes_per_s * 1e6;
    const double sched_us = (inputs * passes + 1) * io / target.costs.hbm_bytes_per_s * 1e6;
    fmt::print("  key {} ({})\n", key.str(),
               key.chunks() == 1 ? "one pass" : "two passes over chunks");
    fmt::print(
        "  simulated {:.1f} us (task {:.1f} us); HBM roofline ideal {:.1f} us = {:.0f} %, "
        "of this schedule's reads and write {:.1f} us = {:.0f} %; GM bytes {:.3g}\n",
        prof.total_us, prof.task_us(), ideal_us, 100 * ideal_us / prof.total_us, sched_us,
        100 * sched_us / prof.total_us, prof.gm_bytes);
    tl::npu::print_profile(prof, std::cout);
  }
  return ok ? 0 : 1;
}

// layer_norm: M x H inputs (randn * 2 + 3), weight and bias each on request.
int run_layer_norm(const Params& p, const tl::Target& target) {
  tl::Device dev(target);
  const int64_t M = p.integer("M"), H = p.integer("H");
  const auto parsed = tl::parse_dtype(p.v.at("dtype"));
  if (!parsed)
    throw tl::Error(fmt::format("--set dtype: expected bfloat16, float16 or float32, got '{}'",
                                p.v.at("dtype")));
  const tl::DType dt = *parsed;
  const uint64_t seed = static_cast<uint64_t>(p.integer("seed"));
  auto xv = tl::randn(dev, {M, H}, tl::DType::Float32, seed).to_vector();
  for (auto& e : xv) e = 3 + 2 * e;
  auto x = tl::from_vector(dev, {M, H}, dt, xv);
  const bool hw = p.integer("weight") != 0, hb = p.integer("bias") != 0;
  tl::Tensor w = hw ? tl::uniform(dev, {H}, dt, seed + 1, 0.5, 1.5) : tl::Tensor();
  tl::Tensor b = hb ? tl::randn(dev, {H}, dt, seed + 2) : tl::Tensor();
  const auto t0 = std::chrono::steady_clock::now();
  auto out = layer_norm(x, w, b, {.eps = p.real("eps")});
  fmt::print(
      "layer_norm {}x{} {} on {}: {:.1f} ms host\n", M, H, tl::dtype_name(dt), target.name,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  std::vector<double> want, scale;
#ifdef TL_HAVE_REFERENCES
  auto wv = hw ? w.to_vector() : std::vector<double>();
  auto bv = hb ? b.to_vector() : std::vector<double>();
  want = opstest::ref::layer_norm_fwd(x.to_vector(), hw ? &wv : nullptr, hb ? &bv : nullptr, M, H,
                                      p.real("eps"))
             .y;
  scale.resize(want.size());
  for (size_t i = 0; i < want.size(); ++i)
    scale[i] = std::abs(want[i]) + (hb ? 2 * std::abs(bv[i % H]) : 0);
#endif
  return report("y", out.y, want, &scale) ? 0 : 1;
}

}  // namespace

OpsCommands add_ops_commands(CLI::App& app) {
  OpsCommands c;
  c.ops = app.add_subcommand("ops", "list the ops of the cann_ops_tilelang library");
  c.op = app.add_subcommand("op", "run a cann_ops_tilelang op on random data and check it");
  c.op->add_option("name", c.name, "op name (see tlc ops)")->required();
  c.op->add_option(
      "--set", c.sets,
      "an op parameter: NAME=VALUE (rms_norm: M H dtype residual rstd eps seed; softmax: "
      "M N dtype seed profile)");
  return c;
}

int run_ops_commands(const OpsCommands& c, const tl::Target& target) {
  if (*c.ops) {
    for (const auto& o : all_ops()) fmt::print("{:<20} {:<8} {}\n", o.name, o.domain, o.summary);
    return 0;
  }
  if (!*c.op) return -1;
  std::map<std::string, std::string> common{
      {"M", "256"}, {"H", "7168"}, {"dtype", "bfloat16"}, {"eps", "1e-6"}, {"seed", "0"}};
  if (c.name == "rms_norm") {
    auto d = common;
    d["residual"] = "0";
    d["rstd"] = "0";
    return run_rms_norm(parse(c.name, d, c.sets), target, false);
  }
  if (c.name == "rms_norm_backward")
    return run_rms_norm(parse(c.name, common, c.sets), target, true);
  if (c.name == "softmax" || c.name == "log_softmax" || c.name == "softmax_backward" ||
      c.name == "log_softmax_backward") {
    return run_softmax(
        c.name,
        parse(c.name,
              {{"M", "256"}, {"N", "7168"}, {"dtype", "bfloat16"}, {"seed", "0"}, {"profile", "0"}},
              c.sets),
        target);
  }
  if (c.name == "layer_norm") {
    auto d = common;
    d["eps"] = "1e-5";
    d["weight"] = "1";
    d["bias"] = "1";
    return run_layer_norm(parse(c.name, d, c.sets), target);
  }
  std::string names;
  for (const auto& o : all_ops()) names += " " + o.name;
  throw tl::Error(fmt::format("tlc op: no op named '{}' (tlc ops lists them:{})", c.name, names));
}
