// `tlc ops` lists the ops of cann_ops_tilelang with one-line summaries; `tlc op NAME --set k=v`
// runs one on random data on the virtual NPU and checks it. The references live under tests/
// only (tests/ops/*_ref.h) and the library never calls them; tlc is a test-side tool that links
// them when the tests are built (TL_HAVE_REFERENCES, as `tlc run` does for the examples), so
// `tlc op` checks against the fp64 reference there, and without them says it could only check
// that the results are finite.
#include "ops_cmd.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "cann_ops_tilelang/activation.h"
#include "cann_ops_tilelang/attention.h"
#include "cann_ops_tilelang/gemm.h"
#include "cann_ops_tilelang/moe.h"
#include "cann_ops_tilelang/norm.h"
#include "cann_ops_tilelang/rope.h"
#include "cann_ops_tilelang/softmax.h"
#include "tl/npu/timing.h"
#include "tl/runtime.h"
#ifdef TL_HAVE_REFERENCES
#include "ops/flash_attention_bwd_ref.h"
#include "ops/flash_attention_ref.h"
#include "ops/gemm_ref.h"
#include "ops/layer_norm_ref.h"
#include "ops/ops_testing.h"
#include "ops/rms_norm_ref.h"
#include "ops/rope_ref.h"
#include "ops/softmax_ref.h"
#include "ops/swiglu_ref.h"
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

/// --profile: the op's launches run in timed mode (the data computed in simulated-time order,
/// so the check still applies) and their profile, the roofline of `cost` and the GM peak of
/// the call are printed when it ends.
struct ProfiledCall {
  tl::Device& dev;
  bool on;
  RunOptions ro;
  int64_t held = 0;  // GM in use before the call: its inputs
  ProfiledCall(tl::Device& d, bool profile) : dev(d), on(profile) {
    ro.profile = on;
    held = dev.gm_bytes_in_use();
    dev.reset_peak();
  }
  void print(const OpCost& cost) const {
    if (!on) return;
    fmt::print("  profile   {}\n", format_profile(summarize(ro.profiles, cost, dev.target())));
    // An output that differs between program order and simulated-time order is a missing
    // synchronisation in the kernel (docs/virtual_npu.md): the hardware would give it too.
    for (const auto& p : ro.profiles)
      for (const auto& e : p.time_order_effects)
        fmt::print("  TIME-ORDER EFFECT in {}: {}\n", p.kernel, e);
    fmt::print("  GM peak   {:.2f} MB during the call ({:.2f} MB of inputs held before it)\n",
               static_cast<double>(dev.gm_peak_bytes()) / 1e6, static_cast<double>(held) / 1e6);
  }
};

int run_rms_norm(const Params& p, const tl::Target& target, bool backward, bool profile) {
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
    const bool rstd = p.integer("rstd") != 0;
    ProfiledCall call(dev, profile);
    RmsNormResult out;
    {
      ScopedRun run(call.ro);
      out = rms_norm(x, w, r, {.eps = eps, .return_rstd = rstd});
    }
    fmt::print("rms_norm {}x{} {} on {}: {:.1f} ms host (compile included on first use)\n", M, H,
               tl::dtype_name(dt), target.name, ms());
    call.print(rms_norm_cost(M, H, dt, res, rstd));
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
    ProfiledCall call(dev, profile);
    RmsNormGrads g;
    {
      ScopedRun run(call.ro);
      g = rms_norm_backward(dy, x, w, eps);
    }
    fmt::print("rms_norm_backward {}x{} {} on {}: {:.1f} ms host (compile included on first use)\n",
               M, H, tl::dtype_name(dt), target.name, ms());
    call.print(rms_norm_backward_cost(M, H, dt));
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

/// SwiGLU's a and b halves of x as [T, H] values (columns or rows).
void swiglu_halves(const tl::Tensor& x, bool rows, int64_t T, int64_t H, std::vector<double>& a,
                   std::vector<double>& b) {
  auto v = x.to_vector();
  a.resize(T * H);
  b.resize(T * H);
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < H; ++j) {
      a[i * H + j] = rows ? v[i * H + j] : v[i * 2 * H + j];
      b[i * H + j] = rows ? v[(T + i) * H + j] : v[i * 2 * H + H + j];
    }
}

int run_swiglu(const Params& p, const tl::Target& target, bool backward, bool profile) {
  tl::Device dev(target);
  const int64_t T = p.integer("T"), H = p.integer("H");
  const auto parsed = tl::parse_dtype(p.v.at("dtype"));
  if (!parsed)
    throw tl::Error(fmt::format("--set dtype: expected bfloat16, float16 or float32, got '{}'",
                                p.v.at("dtype")));
  const tl::DType dt = *parsed;
  const uint64_t seed = static_cast<uint64_t>(p.integer("seed"));
  const bool rows = p.integer("rows") != 0, weighted = p.integer("weight") != 0;
  const double L = p.real("clamp");
  SwigluConfig cfg{.split = rows ? SwigluSplit::Rows : SwigluSplit::Columns, .clamp = {}};
  if (L > 0) cfg.clamp = L;
  auto x = tl::randn(dev, rows ? std::vector<int64_t>{2 * T, H} : std::vector<int64_t>{T, 2 * H},
                     dt, seed, L > 0 ? L / 2 : 1.0);
  tl::Tensor w =
      weighted ? tl::uniform(dev, {T}, tl::DType::Float32, seed + 1, 0.1, 1.0) : tl::Tensor();
  auto dy = tl::randn(dev, {T, H}, dt, seed + 2);
  const auto t0 = std::chrono::steady_clock::now();
  auto ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<double> a, b, wv = weighted ? w.to_vector() : std::vector<double>();
  swiglu_halves(x, rows, T, H, a, b);
  bool ok = true;
  tl::Tensor y;
  SwigluGrads g;
  ProfiledCall call(dev, profile);
  {
    ScopedRun run(call.ro);
    if (!backward)
      y = swiglu(x, w, cfg);
    else
      g = swiglu_backward(dy, x, w, cfg);
  }
  fmt::print("{} T={} H={} {}{}{}{} on {}: {:.1f} ms host (compile included on first use)\n",
             backward ? "swiglu_backward" : "swiglu", T, H, tl::dtype_name(dt), rows ? " rows" : "",
             weighted ? " weight" : "", L > 0 ? fmt::format(" clamp {}", L) : std::string(),
             target.name, ms());
  call.print(swiglu_cost(T, H, dt, backward, weighted, L > 0));
#ifdef TL_HAVE_REFERENCES
  const double Lr = L > 0 ? L : 0;
  if (!backward) {
    ok =
        report("y", y, opstest::ref::swiglu_fwd(a, b, weighted ? &wv : nullptr, T, H, Lr), nullptr);
  } else {
    auto want = opstest::ref::swiglu_bwd(dy.to_vector(), a, b, weighted ? &wv : nullptr, T, H, Lr);
    std::vector<double> da, db;
    swiglu_halves(g.dx, rows, T, H, da, db);
    auto as_tensor = [&](const std::vector<double>& v) {
      return tl::from_vector(dev, {T, H}, dt, v);
    };
    ok = report("da", as_tensor(da), want.da, nullptr) && ok;
    ok = report("db", as_tensor(db), want.db, nullptr) && ok;
  }
#else
  ok = report(backward ? "dx" : "y", backward ? g.dx : y, {}, nullptr);
#endif
  return ok ? 0 : 1;
}

// softmax, log_softmax and their backwards: M x N logits (randn * 4). --profile also prints the
// key the public function chose (one pass, or chunks whose inputs are read twice).
int run_softmax(const std::string& name, const Params& p, const tl::Target& target, bool profile) {
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
  // The backward's y comes from the forward outside the profiled call.
  tl::Tensor y = backward ? (log ? log_softmax(x) : softmax(x)) : tl::Tensor();
  tl::Tensor dy = backward ? tl::randn(dev, {M, N}, dt, seed + 1) : tl::Tensor(), out;
  const auto t0 = std::chrono::steady_clock::now();
  ProfiledCall call(dev, profile);
  {
    ScopedRun run(call.ro);
    if (!backward)
      out = log ? log_softmax(x) : softmax(x);
    else
      out = log ? log_softmax_backward(dy, y) : softmax_backward(dy, y);
  }
  fmt::print(
      "{} {}x{} {} on {}: {:.1f} ms host (compile included on first use)\n", name, M, N,
      tl::dtype_name(dt), target.name,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  if (profile && M > 0) {
    const auto key = softmax_key(dt, N, log, backward, target);
    fmt::print("  key       {} ({})\n", key.str(),
               key.resident   ? "resident: inputs read once, two tile slots"
               : key.streamed ? "streamed: two passes over chunks in three slots"
               : key.split    ? "split: a row's halves on a block's two AIVs, one input resident"
               : key.chunks() == 1 ? "one pass"
                                   : "two passes over chunks: inputs read twice");
  }
  call.print(softmax_cost(M, N, dt, backward));
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
  return ok ? 0 : 1;
}

// layer_norm: M x H inputs (randn * 2 + 3), weight and bias each on request.
int run_layer_norm(const Params& p, const tl::Target& target, bool profile) {
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
  ProfiledCall call(dev, profile);
  LayerNormResult out;
  {
    ScopedRun run(call.ro);
    out = layer_norm(x, w, b, {.eps = p.real("eps")});
  }
  fmt::print(
      "layer_norm {}x{} {} on {}: {:.1f} ms host\n", M, H, tl::dtype_name(dt), target.name,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  call.print(layer_norm_cost(M, H, dt, hw, hb, false));
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

// layer_norm_backward: M x H x (randn * 2 + 3), dy randn, weight uniform in [0.5, 1.5].
int run_layer_norm_backward(const Params& p, const tl::Target& target, bool profile) {
  tl::Device dev(target);
  const int64_t M = p.integer("M"), H = p.integer("H");
  const auto parsed = tl::parse_dtype(p.v.at("dtype"));
  if (!parsed)
    throw tl::Error(fmt::format("--set dtype: expected bfloat16, float16 or float32, got '{}'",
                                p.v.at("dtype")));
  const tl::DType dt = *parsed;
  const double eps = p.real("eps");
  const uint64_t seed = static_cast<uint64_t>(p.integer("seed"));
  auto xv = tl::randn(dev, {M, H}, tl::DType::Float32, seed).to_vector();
  for (auto& e : xv) e = 3 + 2 * e;
  auto x = tl::from_vector(dev, {M, H}, dt, xv);
  auto w = tl::uniform(dev, {H}, dt, seed + 1, 0.5, 1.5);
  auto dy = tl::randn(dev, {M, H}, dt, seed + 3);
  const auto t0 = std::chrono::steady_clock::now();
  ProfiledCall call(dev, profile);
  LayerNormGrads g;
  {
    ScopedRun run(call.ro);
    g = layer_norm_backward(dy, x, w, eps);
  }
  fmt::print(
      "layer_norm_backward {}x{} {} on {}: {:.1f} ms host (compile included on first use)\n", M, H,
      tl::dtype_name(dt), target.name,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  call.print(layer_norm_backward_cost(M, H, dt));
#ifdef TL_HAVE_REFERENCES
  auto want = opstest::ref::layer_norm_bwd(dy.to_vector(), x.to_vector(), w.to_vector(), M, H, eps);
  for (auto* v : {&want.dw_abs, &want.db_abs})
    for (auto& e : *v) e *= opstest::tolerance(dt).rtol / opstest::kApprox;
#else
  struct {
    std::vector<double> dx, dw, db, dx_abs, dw_abs, db_abs;
  } want;
#endif
  bool ok = report("dx", g.dx, want.dx, &want.dx_abs);
  ok = report("dw", g.dw, want.dw, &want.dw_abs) && ok;
  ok = report("db", g.db, want.db, &want.db_abs) && ok;
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

int run_topk_gate(const Params& p, const tl::Target& target, bool profile) {
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
  ProfiledCall call(dev, profile);
  TopkGateResult out;
  {
    ScopedRun run(call.ro);
    out = topk_gate(z, bias,
                    {.k = k,
                     .scoring = static_cast<GateScoring>(scoring),
                     .normalize = normalize,
                     .route_scale = p.real("route_scale")});
  }
  fmt::print("topk_gate T={} E={} k={} {} on {}: {:.1f} ms host (compile included on first use)\n",
             T, E, k, tl::dtype_name(dt), target.name, host_ms(t0));
  call.print(topk_gate_cost(T, E, k, dt, has_bias));
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

// topk_gate_backward: the indices the forward chooses on the same logits (and bias), dW randn.
int run_topk_gate_backward(const Params& p, const tl::Target& target, bool profile) {
  tl::Device dev(target);
  const int64_t T = p.integer("T"), E = p.integer("E"), k = p.integer("k");
  const tl::DType dt = dtype_param(p, "dtype");
  const int scoring = static_cast<int>(p.integer("scoring"));
  const bool normalize = p.integer("normalize") != 0;
  const uint64_t seed = static_cast<uint64_t>(p.integer("seed"));
  const TopkGateConfig cfg{.k = k,
                           .scoring = static_cast<GateScoring>(scoring),
                           .normalize = normalize,
                           .route_scale = p.real("route_scale")};
  auto z = tl::randn(dev, {T, E}, dt, seed);
  auto fwd = topk_gate(z, {}, cfg);
  auto dw = tl::randn(dev, {T, k}, tl::DType::Float32, seed + 1);
  const auto t0 = std::chrono::steady_clock::now();
  ProfiledCall call(dev, profile);
  tl::Tensor dz;
  {
    ScopedRun run(call.ro);
    dz = topk_gate_backward(dw, z, fwd.indices, cfg);
  }
  fmt::print(
      "topk_gate_backward T={} E={} k={} {} on {}: {:.1f} ms host (compile included on first "
      "use)\n",
      T, E, k, tl::dtype_name(dt), target.name, host_ms(t0));
  call.print(topk_gate_backward_cost(T, E, k, dt));
  std::vector<double> want, scale;
#ifdef TL_HAVE_REFERENCES
  auto iv = fwd.indices.to_vector();
  std::vector<int64_t> idx(iv.begin(), iv.end());
  want = opstest::ref::gate_backward(dw.to_vector(), idx,
                                     opstest::ref::gate_scores(z.to_vector(), T, E, scoring), T, E,
                                     k, scoring, normalize, p.real("route_scale"), &scale);
  for (auto& s : scale) s *= 10;  // the chip's approximate sigmoid / exp in every term
#endif
  return report("dlogits", dz, want, &scale) ? 0 : 1;
}

int run_gemm(const Params& p, const tl::Target& target, bool profile) {
  tl::Device dev(target);
  const int64_t M = p.integer("M"), N = p.integer("N"), K = p.integer("K");
  const tl::DType dt = dtype_param(p, "dtype");
  const tl::DType out_dt = p.v.at("out_dtype").empty() ? dt : dtype_param(p, "out_dtype");
  const bool ta = p.integer("trans_a") != 0, tb = p.integer("trans_b") != 0;
  const uint64_t seed = static_cast<uint64_t>(p.integer("seed"));
  auto a = ta ? tl::randn(dev, {K, M}, dt, seed) : tl::randn(dev, {M, K}, dt, seed);
  auto b = tb ? tl::randn(dev, {N, K}, dt, seed + 1) : tl::randn(dev, {K, N}, dt, seed + 1);
  const auto t0 = std::chrono::steady_clock::now();
  ProfiledCall call(dev, profile);
  tl::Tensor c;
  {
    ScopedRun run(call.ro);
    c = gemm(a, b, {.trans_a = ta, .trans_b = tb, .out_dtype = out_dt});
  }
  fmt::print("gemm {}x{}x{} {} -> {} on {}: {:.1f} ms host (compile included on first use)\n", M, N,
             K, tl::dtype_name(dt), tl::dtype_name(out_dt), target.name, host_ms(t0));
  call.print(gemm_cost(M, N, K, dt, out_dt));
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

// backward: the forward runs unprofiled for o and lse, then flash_attention_backward is the call.
int run_flash_attention(const Params& p, const tl::Target& target, bool backward, bool profile) {
  tl::Device dev(target);
  const int64_t B = p.integer("B"), S = p.integer("S"), H = p.integer("H"), D = p.integer("D");
  const tl::DType dt = dtype_param(p, "dtype");
  const std::string layout = p.v.at("layout");
  if (layout != "BSHD" && layout != "BHSD")
    throw tl::Error(fmt::format("--set layout: expected BSHD or BHSD, got '{}'", layout));
  const bool bshd = layout == "BSHD", causal = p.integer("causal") != 0;
  const uint64_t seed = static_cast<uint64_t>(p.integer("seed"));
  const std::vector<int64_t> shape =
      bshd ? std::vector<int64_t>{B, S, H, D} : std::vector<int64_t>{B, H, S, D};
  auto q = tl::randn(dev, shape, dt, seed), k = tl::randn(dev, shape, dt, seed + 1),
       v = tl::randn(dev, shape, dt, seed + 2), dout = tl::randn(dev, shape, dt, seed + 3);
  const FlashAttentionConfig cfg{.causal = causal,
                                 .layout = bshd ? AttentionLayout::BSHD : AttentionLayout::BHSD};
  FlashAttentionResult r;
  FlashAttentionGrads g;
  if (backward) r = flash_attention(q, k, v, cfg);
  const auto t0 = std::chrono::steady_clock::now();
  ProfiledCall call(dev, profile);
  {
    ScopedRun run(call.ro);
    if (backward) {
      g = flash_attention_backward(dout, q, k, v, r.o, r.lse, cfg);
    } else {
      r = flash_attention(q, k, v, cfg);
    }
  }
  fmt::print(
      "{} B={} S={} H={} D={} {} {}{} on {}: {:.1f} ms host (compile included on first use)\n",
      backward ? "flash_attention_backward" : "flash_attention", B, S, H, D, tl::dtype_name(dt),
      layout, causal ? " causal" : "", target.name, host_ms(t0));
  call.print(backward ? flash_attention_backward_cost(B, S, H, D, dt, causal)
                      : flash_attention_cost(B, S, H, D, dt, causal));
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  if (backward) {
#ifdef TL_HAVE_REFERENCES
    auto w = opstest::ref::flash_attention_backward(dout.to_vector(), q.to_vector(), k.to_vector(),
                                                    v.to_vector(), B, S, H, D, bshd, causal, scale);
    // As tests/ops/flash_attention_bwd_test.cpp: sums of terms with P and dS rounded to the
    // dtype, bounded relative to the tensor's largest value (report's `scale` widens the bound
    // by kApprox * scale).
    auto wide = [&](const std::vector<double>& x) {
      double mx = 0.1;
      for (double e : x) mx = std::max(mx, std::abs(e));
      const double t = dt == tl::DType::BFloat16 ? 3e-2 : 6e-3;
      return std::vector<double>(x.size(), t * mx / opstest::kApprox);
    };
    const auto sq = wide(w.dq), sk = wide(w.dk), sv = wide(w.dv);
#else
    struct {
      std::vector<double> dq, dk, dv;
    } w;
    std::vector<double> sq, sk, sv;
#endif
    bool ok = report("dq", g.dq, w.dq, &sq);
    ok = report("dk", g.dk, w.dk, &sk) && ok;
    return report("dv", g.dv, w.dv, &sv) && ok ? 0 : 1;
  }
#ifdef TL_HAVE_REFERENCES
  auto want = opstest::ref::flash_attention(q.to_vector(), k.to_vector(), v.to_vector(), B, S, H, D,
                                            bshd, causal, scale);
#else
  struct {
    std::vector<double> o, lse;
  } want;
#endif
  // P is rounded to the I/O dtype before P V: o's error is a few of the dtype's roundings.
  const bool ok = report("o", r.o, want.o, nullptr);
  return report("lse", r.lse, want.lse, nullptr) && ok ? 0 : 1;
}

}  // namespace

int run_rope(const Params& p, const tl::Target& target, bool backward, bool profile) {
  tl::Device dev(target);
  const int64_t T = p.integer("T"), H = p.integer("H"), D = p.integer("D"), R = p.integer("R");
  const auto parsed = tl::parse_dtype(p.v.at("dtype"));
  if (!parsed)
    throw tl::Error(fmt::format("--set dtype: expected bfloat16, float16 or float32, got '{}'",
                                p.v.at("dtype")));
  const tl::DType dt = *parsed;
  const bool inter = p.integer("interleaved") != 0, pos = p.integer("positions") != 0,
             last = p.integer("last") != 0;
  const uint64_t seed = static_cast<uint64_t>(p.integer("seed"));
  const int64_t rows = T + 3;
  auto x = tl::randn(dev, {T, H, D}, dt, seed);
  auto cos = tl::uniform(dev, {rows, R}, tl::DType::Float32, seed + 1, -1.0, 1.0);
  auto sin = tl::uniform(dev, {rows, R}, tl::DType::Float32, seed + 2, -1.0, 1.0);
  std::vector<int64_t> posv;
  tl::Tensor pt;
  if (pos) {
    std::vector<double> pd(T);
    for (int64_t t = 0; t < T; ++t) posv.push_back((t * 7 + 3) % rows), pd[t] = posv.back();
    pt = tl::from_vector(dev, {T}, tl::DType::Int32, pd);
  }
  const RopeConfig cfg{.style = inter ? RopeStyle::Interleaved : RopeStyle::Half,
                       .rotate_last = last};
  const auto t0 = std::chrono::steady_clock::now();
  ProfiledCall call(dev, profile);
  tl::Tensor y;
  {
    ScopedRun run(call.ro);
    y = backward ? rope_backward(x, cos, sin, pt, cfg) : rope(x, cos, sin, pt, cfg);
  }
  fmt::print(
      "{} {}x{}x{} rot {} {} {}{} on {}: {:.1f} ms host (compile included on first use)\n",
      backward ? "rope_backward" : "rope", T, H, D, R, tl::dtype_name(dt),
      inter ? "interleaved" : "half", pos ? " positions" : "", target.name,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  call.print(rope_cost(T, H, D, R, dt, pos));
#ifdef TL_HAVE_REFERENCES
  auto want = opstest::ref::rope(x.to_vector(), cos.to_vector(), sin.to_vector(), posv,
                                 {T, H, D, R, inter, last}, backward);
#else
  std::vector<double> want;
#endif
  return report(backward ? "dx" : "y", y.reshape({T * H, D}), want, nullptr) ? 0 : 1;
}

OpsCommands add_ops_commands(CLI::App& app) {
  OpsCommands c;
  c.ops = app.add_subcommand("ops", "list the ops of the cann_ops_tilelang library");
  c.op = app.add_subcommand("op", "run a cann_ops_tilelang op on random data and check it");
  c.op->add_option("name", c.name, "op name (see tlc ops)")->required();
  c.op->add_option("--set", c.sets,
                   "an op parameter: NAME=VALUE (rms_norm: M H dtype residual rstd eps seed; "
                   "swiglu: T H dtype rows weight clamp seed; softmax: M N dtype seed; "
                   "layer_norm: M H dtype eps weight bias seed; topk_gate: T E k dtype "
                   "scoring bias normalize route_scale seed; gemm: M N K dtype out_dtype trans_a "
                   "trans_b seed; rope: T H D R dtype interleaved positions last seed; "
                   "layer_norm_backward: M H dtype eps seed; flash_attention(_backward): B S H D "
                   "dtype layout causal seed; topk_gate_backward: T E k dtype scoring normalize "
                   "route_scale seed)");
  c.op->add_flag("--profile", c.profile,
                 "run in timed mode and print the simulated time, the roofline fraction, the "
                 "pipes' busy fractions and the call's GM peak");
  return c;
}

int run_ops_commands(const OpsCommands& c, const tl::Target& target) {
  if (*c.ops) {
    size_t nw = 0, dw = 0;  // columns as wide as the longest name and domain
    for (const auto& o : all_ops())
      nw = std::max(nw, o.name.size()), dw = std::max(dw, o.domain.size());
    for (const auto& o : all_ops())
      fmt::print("{:<{}} {:<{}} {}\n", o.name, nw, o.domain, dw, o.summary);
    return 0;
  }
  if (!*c.op) return -1;
  std::map<std::string, std::string> common{
      {"M", "256"}, {"H", "7168"}, {"dtype", "bfloat16"}, {"eps", "1e-6"}, {"seed", "0"}};
  if (c.name == "rms_norm") {
    auto d = common;
    d["residual"] = "0";
    d["rstd"] = "0";
    return run_rms_norm(parse(c.name, d, c.sets), target, false, c.profile);
  }
  if (c.name == "rms_norm_backward")
    return run_rms_norm(parse(c.name, common, c.sets), target, true, c.profile);
  if (c.name == "swiglu" || c.name == "swiglu_backward") {
    std::map<std::string, std::string> d{{"T", "256"},  {"H", "9216"},   {"dtype", "bfloat16"},
                                         {"rows", "0"}, {"weight", "0"}, {"clamp", "0"},
                                         {"seed", "0"}};
    return run_swiglu(parse(c.name, d, c.sets), target, c.name == "swiglu_backward", c.profile);
  }
  if (c.name == "softmax" || c.name == "log_softmax" || c.name == "softmax_backward" ||
      c.name == "log_softmax_backward") {
    return run_softmax(
        c.name,
        parse(c.name, {{"M", "256"}, {"N", "7168"}, {"dtype", "bfloat16"}, {"seed", "0"}}, c.sets),
        target, c.profile);
  }
  if (c.name == "layer_norm") {
    auto d = common;
    d["eps"] = "1e-5";
    d["weight"] = "1";
    d["bias"] = "1";
    return run_layer_norm(parse(c.name, d, c.sets), target, c.profile);
  }
  if (c.name == "layer_norm_backward") {
    auto d = common;
    d["eps"] = "1e-5";
    return run_layer_norm_backward(parse(c.name, d, c.sets), target, c.profile);
  }
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
                         target, c.profile);
  }
  if (c.name == "topk_gate_backward") {
    return run_topk_gate_backward(parse(c.name,
                                        {{"T", "4001"},
                                         {"E", "256"},
                                         {"k", "8"},
                                         {"dtype", "bfloat16"},
                                         {"scoring", "1"},
                                         {"normalize", "1"},
                                         {"route_scale", "2.5"},
                                         {"seed", "0"}},
                                        c.sets),
                                  target, c.profile);
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
                    target, c.profile);
  }
  if (c.name == "rope" || c.name == "rope_backward") {
    return run_rope(parse(c.name,
                          {{"T", "2001"},
                           {"H", "32"},
                           {"D", "128"},
                           {"R", "64"},
                           {"dtype", "float16"},
                           {"interleaved", "0"},
                           {"positions", "1"},
                           {"last", "1"},
                           {"seed", "0"}},
                          c.sets),
                    target, c.name == "rope_backward", c.profile);
  }
  if (c.name == "flash_attention" || c.name == "flash_attention_backward") {
    return run_flash_attention(parse(c.name,
                                     {{"B", "1"},
                                      {"S", "273"},
                                      {"H", "2"},
                                      {"D", "128"},
                                      {"dtype", "float16"},
                                      {"layout", "BSHD"},
                                      {"causal", "0"},
                                      {"seed", "0"}},
                                     c.sets),
                               target, c.name == "flash_attention_backward", c.profile);
  }
  std::string names;
  for (const auto& o : all_ops()) names += " " + o.name;
  throw tl::Error(fmt::format("tlc op: no op named '{}' (tlc ops lists them:{})", c.name, names));
}
