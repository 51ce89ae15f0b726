// Host speed of the operator library (issue 30, must-show "host fast-mode throughput per op at
// a mid size beside a plain single-pass -O3 C++ loop in the same benchmark binary; compile time
// cold and cached"; docs/must_show.md has the figures). For each op, in one binary:
//
//   BM_Op/<op>        the library's public function in fast mode (no timing model) on the
//                     virtual NPU, its kernel already compiled (the op's cache is warm);
//   BM_Loop/<op>      a plain single-pass C++ loop computing the same op on the host, over fp32
//                     copies of the same inputs (fp32 is the host's cheapest form, so the loop
//                     is the upper bound a host implementation reaches without SIMD by hand);
//                     this file is compiled with -O3 (bench/CMakeLists.txt);
//   BM_Compile/<op>/cold    a call on a one-row input after clear_kernel_cache() with the JIT
//                           cache off (TL_CACHE=0): the generator, the pass pipeline and the
//                           program build, plus that tiny launch;
//   BM_Compile/<op>/disk    the same after clear_kernel_cache() and tl::jit::clear_cache() with
//                           the JIT disk cache (a private temporary directory) holding the
//                           kernel: what a new process pays;
//   BM_Compile/<op>/cached  the same call with the op's cache warm: the key, a lookup and the
//                           tiny launch.
//
// BM_Op and BM_Loop report the op's OpCost bytes as bytes/s (the same count on both), so their
// ratio is the host speed of the virtual NPU against the loop. Each row is a fixed number of
// iterations. BM_Op launches on one host thread (a ScopedRun with LaunchOptions::threads = 1,
// the benchmark's own), like the loop, so the CPU column is each side's CPU time: on a shared
// machine it is the steadier figure (wall time includes other work).
//
//   cmake --build --preset default --target ops_host_bench
//   ./build/default/bench/ops_host_bench --benchmark_out_format=json
//       --benchmark_out=bench/results/ops_host.json
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cann_ops_tilelang/activation.h"
#include "cann_ops_tilelang/attention.h"
#include "cann_ops_tilelang/core.h"
#include "cann_ops_tilelang/gemm.h"
#include "cann_ops_tilelang/moe.h"
#include "cann_ops_tilelang/norm.h"
#include "cann_ops_tilelang/rope.h"
#include "cann_ops_tilelang/softmax.h"
#include "tl/jit.h"
#include "tl/runtime.h"

namespace {

namespace ops = cann_ops_tilelang;
using tl::DType;
using tl::Tensor;

std::vector<float> f32(const Tensor& t) {
  auto d = t.to_vector();
  return std::vector<float>(d.begin(), d.end());
}

// ---- the ops at their mid sizes: inputs, the library call, the plain loop -------------------

struct OpCase {
  std::string name;
  double bytes = 0;                       // OpCost bytes of the mid-size call
  std::function<void(tl::Device&)> make;  // fills the inputs below
  std::function<void()> op;               // the library call on them
  std::function<void()> loop;             // the plain loop on their fp32 copies
  std::function<void(tl::Device&)> tiny;  // a one-row call (compile figures)
  std::vector<Tensor> in;
  std::vector<std::vector<float>> h;  // fp32 copies
  std::vector<float> out;
};

constexpr int64_t kRows = 4096, kH = 4096;

void rms_norm_loop(const float* x, const float* w, float* y, int64_t M, int64_t H) {
  for (int64_t i = 0; i < M; ++i) {
    const float* r = x + i * H;
    float ss = 0;
    for (int64_t j = 0; j < H; ++j) ss += r[j] * r[j];
    const float s = 1.0f / std::sqrt(ss / H + 1e-6f);
    for (int64_t j = 0; j < H; ++j) y[i * H + j] = r[j] * s * w[j];
  }
}

void layer_norm_loop(const float* x, const float* w, const float* b, float* y, int64_t M,
                     int64_t H) {
  for (int64_t i = 0; i < M; ++i) {
    const float* r = x + i * H;
    float s = 0, s2 = 0;
    for (int64_t j = 0; j < H; ++j) s += r[j], s2 += r[j] * r[j];
    const float mean = s / H, rstd = 1.0f / std::sqrt(s2 / H - mean * mean + 1e-5f);
    for (int64_t j = 0; j < H; ++j) y[i * H + j] = (r[j] - mean) * rstd * w[j] + b[j];
  }
}

void softmax_loop(const float* x, float* y, int64_t M, int64_t N) {
  for (int64_t i = 0; i < M; ++i) {
    const float* r = x + i * N;
    float* o = y + i * N;
    float m = r[0], s = 0;
    for (int64_t j = 1; j < N; ++j) m = std::max(m, r[j]);
    for (int64_t j = 0; j < N; ++j) s += (o[j] = std::exp(r[j] - m));
    const float inv = 1.0f / s;
    for (int64_t j = 0; j < N; ++j) o[j] *= inv;
  }
}

void swiglu_loop(const float* x, float* y, int64_t M, int64_t H) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < H; ++j) {
      const float a = x[i * 2 * H + j], b = x[i * 2 * H + H + j];
      y[i * H + j] = a / (1.0f + std::exp(-a)) * b;
    }
}

// Half style, rot_dim = head_dim: element j of the first half pairs with j + D / 2.
void rope_loop(const float* x, const float* c, const float* s, float* y, int64_t T, int64_t H,
               int64_t D) {
  const int64_t h2 = D / 2;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t k = 0; k < H; ++k) {
      const float* r = x + (t * H + k) * D;
      float* o = y + (t * H + k) * D;
      const float *ct = c + t * D, *st = s + t * D;
      for (int64_t j = 0; j < h2; ++j) {
        o[j] = r[j] * ct[j] - r[j + h2] * st[j];
        o[j + h2] = r[j + h2] * ct[j + h2] + r[j] * st[j + h2];
      }
    }
}

// Sigmoid scores, the bias added for the choice only, top k by partial sort (ties to the
// smaller expert), the chosen scores normalised.
void topk_gate_loop(const float* z, const float* bias, float* w, int64_t T, int64_t E, int k) {
  std::vector<float> sc(E), key(E);
  std::vector<int> idx(E);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t e = 0; e < E; ++e) {
      sc[e] = 1.0f / (1.0f + std::exp(-z[t * E + e]));
      key[e] = sc[e] + bias[e];
      idx[e] = static_cast<int>(e);
    }
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                      [&](int a, int b) { return key[a] > key[b] || (key[a] == key[b] && a < b); });
    float sum = 1e-20f;
    for (int j = 0; j < k; ++j) sum += sc[idx[j]];
    for (int j = 0; j < k; ++j) w[t * k + j] = sc[idx[j]] / sum;
  }
}

void gemm_loop(const float* a, const float* b, float* c, int64_t M, int64_t N, int64_t K) {
  std::fill(c, c + M * N, 0.0f);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t p = 0; p < K; ++p) {
      const float av = a[i * K + p];
      for (int64_t j = 0; j < N; ++j) c[i * N + j] += av * b[p * N + j];
    }
}

// BSHD, one (b, h) at a time, a whole score row per query (no tiling: single pass per query).
void attention_loop(const float* q, const float* k, const float* v, float* o, int64_t S, int64_t H,
                    int64_t D) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  std::vector<float> p(S), acc(D);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < S; ++i) {
      const float* qi = q + (i * H + h) * D;
      float m = -INFINITY, s = 0;
      for (int64_t j = 0; j < S; ++j) {
        const float* kj = k + (j * H + h) * D;
        float d = 0;
        for (int64_t x = 0; x < D; ++x) d += qi[x] * kj[x];
        p[j] = d * scale;
        m = std::max(m, p[j]);
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < S; ++j) {
        const float e = std::exp(p[j] - m);
        s += e;
        const float* vj = v + (j * H + h) * D;
        for (int64_t x = 0; x < D; ++x) acc[x] += e * vj[x];
      }
      for (int64_t x = 0; x < D; ++x) o[(i * H + h) * D + x] = acc[x] / s;
    }
}

std::vector<OpCase> make_cases() {
  std::vector<OpCase> v;
  v.reserve(16);  // the lambdas below hold references into v: it must never reallocate
  const DType bf = DType::BFloat16, h = DType::Float16;
  auto add = [&](OpCase c) { v.push_back(std::move(c)); };
  OpCase c;

  c = {};
  c.name = "rms_norm 4096x4096 bf16";
  c.bytes = ops::rms_norm_cost(kRows, kH, bf, false, false).bytes;
  add(c);
  v.back().make = [&c = v.back()](tl::Device& d) {
    c.in = {tl::randn(d, {kRows, kH}, DType::BFloat16, 1),
            tl::uniform(d, {kH}, DType::BFloat16, 2, 0.5, 1.5)};
  };
  v.back().op = [&c = v.back()] { ops::rms_norm(c.in[0], c.in[1]); };
  v.back().loop = [&c = v.back()] {
    rms_norm_loop(c.h[0].data(), c.h[1].data(), c.out.data(), kRows, kH);
  };
  v.back().tiny = [](tl::Device& d) {
    ops::rms_norm(tl::Tensor::empty(d, {1, kH}, DType::BFloat16),
                  tl::Tensor::empty(d, {kH}, DType::BFloat16));
  };

  c = {};
  c.name = "layer_norm 4096x4096 bf16";
  c.bytes = ops::layer_norm_cost(kRows, kH, bf, true, true, false).bytes;
  add(c);
  v.back().make = [&c = v.back()](tl::Device& d) {
    c.in = {tl::randn(d, {kRows, kH}, DType::BFloat16, 1),
            tl::uniform(d, {kH}, DType::BFloat16, 2, 0.5, 1.5),
            tl::randn(d, {kH}, DType::BFloat16, 3)};
  };
  v.back().op = [&c = v.back()] { ops::layer_norm(c.in[0], c.in[1], c.in[2]); };
  v.back().loop = [&c = v.back()] {
    layer_norm_loop(c.h[0].data(), c.h[1].data(), c.h[2].data(), c.out.data(), kRows, kH);
  };
  v.back().tiny = [](tl::Device& d) {
    ops::layer_norm(tl::Tensor::empty(d, {1, kH}, DType::BFloat16),
                    tl::Tensor::empty(d, {kH}, DType::BFloat16),
                    tl::Tensor::empty(d, {kH}, DType::BFloat16));
  };

  c = {};
  c.name = "softmax 4096x4096 bf16";
  c.bytes = ops::softmax_cost(kRows, kH, bf, false).bytes;
  add(c);
  v.back().make = [&c = v.back()](tl::Device& d) {
    c.in = {tl::randn(d, {kRows, kH}, DType::BFloat16, 1)};
  };
  v.back().op = [&c = v.back()] { ops::softmax(c.in[0]); };
  v.back().loop = [&c = v.back()] { softmax_loop(c.h[0].data(), c.out.data(), kRows, kH); };
  v.back().tiny = [](tl::Device& d) {
    ops::softmax(tl::Tensor::empty(d, {1, kH}, DType::BFloat16));
  };

  c = {};
  c.name = "swiglu 4096x(2x4096) bf16";
  c.bytes = ops::swiglu_cost(kRows, kH, bf, false, false, false).bytes;
  add(c);
  v.back().make = [&c = v.back()](tl::Device& d) {
    c.in = {tl::randn(d, {kRows, 2 * kH}, DType::BFloat16, 1)};
  };
  v.back().op = [&c = v.back()] { ops::swiglu(c.in[0]); };
  v.back().loop = [&c = v.back()] { swiglu_loop(c.h[0].data(), c.out.data(), kRows, kH); };
  v.back().tiny = [](tl::Device& d) {
    ops::swiglu(tl::Tensor::empty(d, {1, 2 * kH}, DType::BFloat16));
  };

  constexpr int64_t kT = 4096, kHeads = 8, kD = 128;
  c = {};
  c.name = "rope 4096x8x128 fp16 half";
  c.bytes = ops::rope_cost(kT, kHeads, kD, kD, h, false).bytes;
  add(c);
  v.back().make = [&c = v.back()](tl::Device& d) {
    c.in = {tl::randn(d, {kT, kHeads, kD}, DType::Float16, 1),
            tl::uniform(d, {kT, kD}, DType::Float32, 2, -1, 1),
            tl::uniform(d, {kT, kD}, DType::Float32, 3, -1, 1)};
  };
  v.back().op = [&c = v.back()] { ops::rope(c.in[0], c.in[1], c.in[2]); };
  v.back().loop = [&c = v.back()] {
    rope_loop(c.h[0].data(), c.h[1].data(), c.h[2].data(), c.out.data(), kT, kHeads, kD);
  };
  v.back().tiny = [](tl::Device& d) {
    ops::rope(tl::Tensor::empty(d, {1, kHeads, kD}, DType::Float16),
              tl::Tensor::empty(d, {1, kD}, DType::Float32),
              tl::Tensor::empty(d, {1, kD}, DType::Float32));
  };

  constexpr int64_t kE = 256;
  c = {};
  c.name = "topk_gate 4096x256 fp32 k8";
  c.bytes = ops::topk_gate_cost(kT, kE, 8, DType::Float32, true).bytes;
  add(c);
  v.back().make = [&c = v.back()](tl::Device& d) {
    c.in = {tl::randn(d, {kT, kE}, DType::Float32, 1), tl::randn(d, {kE}, DType::Float32, 2)};
  };
  v.back().op = [&c = v.back()] { ops::topk_gate(c.in[0], c.in[1]); };
  v.back().loop = [&c = v.back()] {
    topk_gate_loop(c.h[0].data(), c.h[1].data(), c.out.data(), kT, kE, 8);
  };
  v.back().tiny = [](tl::Device& d) {
    ops::topk_gate(tl::Tensor::empty(d, {1, kE}, DType::Float32),
                   tl::Tensor::empty(d, {kE}, DType::Float32));
  };

  constexpr int64_t kG = 1024;
  c = {};
  c.name = "gemm 1024^3 fp16";
  c.bytes = ops::gemm_cost(kG, kG, kG, h, h).bytes;
  add(c);
  v.back().make = [&c = v.back()](tl::Device& d) {
    c.in = {tl::randn(d, {kG, kG}, DType::Float16, 1), tl::randn(d, {kG, kG}, DType::Float16, 2)};
  };
  v.back().op = [&c = v.back()] { ops::gemm(c.in[0], c.in[1]); };
  v.back().loop = [&c = v.back()] {
    gemm_loop(c.h[0].data(), c.h[1].data(), c.out.data(), kG, kG, kG);
  };
  v.back().tiny = [](tl::Device& d) {
    ops::gemm(tl::Tensor::empty(d, {1, kG}, DType::Float16),
              tl::Tensor::empty(d, {kG, kG}, DType::Float16));
  };

  constexpr int64_t kS = 1024, kAH = 4;
  c = {};
  c.name = "flash_attention B1 S1024 H4 D128 fp16";
  c.bytes = ops::flash_attention_cost(1, kS, kAH, kD, h, false).bytes;
  add(c);
  v.back().make = [&c = v.back()](tl::Device& d) {
    for (uint64_t s = 1; s <= 3; ++s)
      c.in.push_back(tl::randn(d, {1, kS, kAH, kD}, DType::Float16, s));
  };
  v.back().op = [&c = v.back()] { ops::flash_attention(c.in[0], c.in[1], c.in[2]); };
  v.back().loop = [&c = v.back()] {
    attention_loop(c.h[0].data(), c.h[1].data(), c.h[2].data(), c.out.data(), kS, kAH, kD);
  };
  v.back().tiny = [](tl::Device& d) {
    auto t = tl::Tensor::empty(d, {1, 1, kAH, kD}, DType::Float16);
    ops::flash_attention(t, t, t);
  };
  return v;
}

std::vector<OpCase>& cases() {
  static std::vector<OpCase> v = make_cases();  // moved: the elements keep their addresses
  return v;
}

tl::Device& device() {
  static tl::Device dev;
  return dev;
}

void ensure_inputs(OpCase& c) {
  if (!c.in.empty()) return;
  c.make(device());
  for (const auto& t : c.in) c.h.push_back(f32(t));
  c.out.assign(c.h[0].size() * 2, 0.0f);
}

void BM_Op(benchmark::State& st, size_t i) {
  auto& c = cases()[i];
  ensure_inputs(c);
  ops::RunOptions run;
  run.launch.threads = 1;
  ops::ScopedRun scoped(run);
  c.op();  // compile and first launch, untimed
  for (auto _ : st) c.op();
  st.SetBytesProcessed(static_cast<int64_t>(c.bytes * static_cast<double>(st.iterations())));
}

void BM_Loop(benchmark::State& st, size_t i) {
  auto& c = cases()[i];
  ensure_inputs(c);
  for (auto _ : st) {
    c.loop();
    benchmark::DoNotOptimize(c.out.data());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(c.bytes * static_cast<double>(st.iterations())));
}

std::string cache_dir() {
  static std::string d = [] {
    auto p =
        std::filesystem::temp_directory_path() / ("ops_host_bench." + std::to_string(getpid()));
    std::filesystem::create_directories(p);
    return p.string();
  }();
  return d;
}

/// mode 0: cold (JIT cache off), 1: JIT disk hit (memory levels cleared), 2: op cache warm.
void BM_Compile(benchmark::State& st, size_t i, int mode) {
  auto& c = cases()[i];
  setenv("TL_CACHE_DIR", cache_dir().c_str(), 1);
  setenv("TL_CACHE", "1", 1);
  ops::clear_kernel_cache();  // a kernel another row compiled with the JIT cache off never
  tl::jit::clear_cache();     // reached the disk: compile it here, with this directory
  c.tiny(device());           // fills the disk cache and the op's cache
  const auto before = tl::jit::cache_stats();
  for (auto _ : st) {
    st.PauseTiming();
    if (mode == 0) setenv("TL_CACHE", "0", 1);
    if (mode != 2) {
      ops::clear_kernel_cache();
      tl::jit::clear_cache();
    }
    st.ResumeTiming();
    c.tiny(device());
  }
  setenv("TL_CACHE", "1", 1);
  // What the JIT did per call: a disk hit, a full compile (miss) or nothing (the op's cache).
  const auto after = tl::jit::cache_stats();
  const double n = static_cast<double>(st.iterations());
  st.counters["jit_disk_hits"] = static_cast<double>(after.disk_hits - before.disk_hits) / n;
  st.counters["jit_misses"] = static_cast<double>(after.misses - before.misses) / n;
  st.counters["jit_disk_rejects"] =
      static_cast<double>(after.disk_rejects - before.disk_rejects) / n;
  st.counters["jit_disk_writes"] = static_cast<double>(after.disk_writes - before.disk_writes) / n;
}

const int kRegistered = [] {
  const auto& v = cases();
  for (size_t i = 0; i < v.size(); ++i) {
    const bool slow = v[i].name.rfind("flash", 0) == 0 || v[i].name.rfind("gemm", 0) == 0;
    benchmark::RegisterBenchmark(("BM_Op/" + v[i].name).c_str(), BM_Op, i)
        ->Iterations(slow ? 2 : 3)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_Loop/" + v[i].name).c_str(), BM_Loop, i)
        ->Iterations(slow ? 2 : 3)
        ->Unit(benchmark::kMillisecond);
    const char* modes[] = {"cold", "disk", "cached"};
    for (int m = 0; m < 3; ++m)
      benchmark::RegisterBenchmark(("BM_Compile/" + v[i].name + "/" + modes[m]).c_str(), BM_Compile,
                                   i, m)
          ->Iterations(m == 2 ? 20 : 3)
          ->Unit(benchmark::kMillisecond);
  }
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
