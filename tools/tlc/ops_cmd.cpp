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
#include "tl/runtime.h"
#ifdef TL_HAVE_REFERENCES
#include "ops/ops_testing.h"
#include "ops/rms_norm_ref.h"
#endif
#include "cann_ops_tilelang/gemm.h"
#include "cann_ops_tilelang/moe.h"
#ifdef TL_HAVE_REFERENCES
#include "ops/gemm_ref.h"
#include "ops/topk_gate_ref.h"
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

tl::DType dtype_param(const Params& p, const std::string& k) {
  const auto d = tl::parse_dtype(p.v.at(k));
  if (!d) throw tl::Error(fmt::format("--set {}: expected a dtype name, got '{}'", k, p.v.at(k)));
  return *d;
}

double host_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int run_topk_gate(const Params& p, const tl::Target& target) {
  tl::Device dev(target);
  const int64_t T = p.integer("T"), E = p.integer("E"), k = p.integer("k");
  const tl::DType dt = dtype_param(p, "dtype");
  const int scoring = static_cast<int>(p.integer("scoring"));
  const bool has_bias = p.integer("bias") != 0, normalize = p.integer("normalize") != 0;
  const uint64_t seed = static_cast<uint64_t>(p.integer("seed"));
  auto z = tl::randn(dev, {T, E}, dt, seed);
  tl::Tensor bias =
      has_bias ? tl::uniform(dev, {E}, tl::DType::Float32, seed + 1, -0.1, 0.1) : tl::Tensor();
  const auto t0 = std::chrono::steady_clock::now();
  auto out = topk_gate(z, bias,
                       {.k = k,
                        .scoring = static_cast<GateScoring>(scoring),
                        .normalize = normalize,
                        .route_scale = p.real("route_scale")});
  fmt::print("topk_gate T={} E={} k={} {} on {}: {:.1f} ms host (compile included on first use)\n",
             T, E, k, tl::dtype_name(dt), target.name, host_ms(t0));
#ifdef TL_HAVE_REFERENCES
  auto bv = has_bias ? bias.to_vector() : std::vector<double>();
  auto s = opstest::ref::gate_scores(z.to_vector(), T, E, scoring);
  auto key = opstest::ref::gate_keys(s, has_bias ? &bv : nullptr, T, E);
  auto want = opstest::ref::gate_topk(key, T, E, k);
  auto gv = out.indices.to_vector();
  int64_t differ = 0;
  for (size_t i = 0; i < gv.size(); ++i) differ += static_cast<int64_t>(gv[i]) != want[i];
  fmt::print(
      "  indices  {}: {} of {} differ from the fp64 reference's choice (near-ties of the "
      "chip's sigmoid/exp may swap)\n",
      out.indices.describe(), differ, gv.size());
  std::vector<int64_t> got(gv.begin(), gv.end());
  auto ww = opstest::ref::gate_weights(s, got, T, E, k, normalize, p.real("route_scale"));
#else
  std::vector<double> ww;
#endif
  return report("weights", out.weights, ww, nullptr) ? 0 : 1;
}

int run_gemm(const Params& p, const tl::Target& target) {
  tl::Device dev(target);
  const int64_t M = p.integer("M"), N = p.integer("N"), K = p.integer("K");
  const tl::DType dt = dtype_param(p, "dtype");
  const tl::DType out_dt = p.v.at("out_dtype").empty() ? dt : dtype_param(p, "out_dtype");
  const bool ta = p.integer("trans_a") != 0, tb = p.integer("trans_b") != 0;
  const uint64_t seed = static_cast<uint64_t>(p.integer("seed"));
  auto a = ta ? tl::randn(dev, {K, M}, dt, seed) : tl::randn(dev, {M, K}, dt, seed);
  auto b = tb ? tl::randn(dev, {N, K}, dt, seed + 1) : tl::randn(dev, {K, N}, dt, seed + 1);
  const auto t0 = std::chrono::steady_clock::now();
  auto c = gemm(a, b, {.trans_a = ta, .trans_b = tb, .out_dtype = out_dt});
  fmt::print("gemm {}x{}x{} {} -> {} on {}: {:.1f} ms host (compile included on first use)\n", M, N,
             K, tl::dtype_name(dt), tl::dtype_name(out_dt), target.name, host_ms(t0));
#ifdef TL_HAVE_REFERENCES
  auto av = a.to_vector(), bv = b.to_vector();
  auto want = opstest::ref::gemm(av, bv, M, N, K, ta, tb);
  auto scale = opstest::ref::gemm_abs(av, bv, M, N, K, ta, tb);
  for (auto& s : scale) s *= 1e-6 / opstest::kApprox;
#else
  std::vector<double> want, scale;
#endif
  return report("C", c, want, &scale) ? 0 : 1;
}

}  // namespace

OpsCommands add_ops_commands(CLI::App& app) {
  OpsCommands c;
  c.ops = app.add_subcommand("ops", "list the ops of the cann_ops_tilelang library");
  c.op = app.add_subcommand("op", "run a cann_ops_tilelang op on random data and check it");
  c.op->add_option("name", c.name, "op name (see tlc ops)")->required();
  c.op->add_option(
      "--set", c.sets,
      "an op parameter: NAME=VALUE (rms_norm: M H dtype residual rstd eps seed; topk_gate: T E "
      "k dtype scoring bias normalize route_scale seed; gemm: M N K dtype out_dtype "
      "trans_a trans_b seed)");
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
  if (c.name == "topk_gate") {
    return run_topk_gate(parse(c.name,
                               {{"T", "4001"},
                                {"E", "256"},
                                {"k", "8"},
                                {"dtype", "float32"},
                                {"scoring", "1"},
                                {"bias", "1"},
                                {"normalize", "1"},
                                {"route_scale", "2.5"},
                                {"seed", "0"}},
                               c.sets),
                         target);
  }
  if (c.name == "gemm") {
    return run_gemm(parse(c.name,
                          {{"M", "1142"},
                           {"N", "1230"},
                           {"K", "1079"},
                           {"dtype", "float16"},
                           {"out_dtype", ""},
                           {"trans_a", "0"},
                           {"trans_b", "0"},
                           {"seed", "0"}},
                          c.sets),
                    target);
  }
  std::string names;
  for (const auto& o : all_ops()) names += " " + o.name;
  throw tl::Error(fmt::format("tlc op: no op named '{}' (tlc ops lists them:{})", c.name, names));
}
