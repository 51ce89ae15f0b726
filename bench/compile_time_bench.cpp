// Compile time over every registered kernel and the developer shapes whose unrolled tile counts
// grow (issue 31, "Compile time independent of unrolled tile counts"; docs/compiler.md,
// "Compile latency"). Each benchmark is tl::compile of a prebuilt PrimFunc with the JIT cache
// off: verify, lower (every pass) and the virtual NPU's program build. Goals: a developer kernel
// under 50 ms whatever its tiling, an expert kernel under 1 ms.
//
//   BM_Registered/<kernel>   every kernel of tl::kernel_registry at its registered defaults
//                            (expert and developer; counter `developer` says which).
//   BM_Shape/<name>          developer kernels at the shapes a user runs, where the passes that
//                            replay one block's instruction streams (elide_implied_syncs,
//                            merge_flags, guard_loop_credits) see many unrolled tiles:
//     rope_dev_171           a developer RoPE written as a new user writes it
//                            (python/tests/test_natural_forms.py, test_rope_broadcasts_cos_...):
//                            a 3-D element loop broadcasting cos[t, j] across heads, 4096 tokens
//                            in 24 blocks of 171 rows, each a row tile of the serial loop
//                            vectorize_parallel makes around the column broadcast.
//     gemm_dev_2048, gemm_dev_4096        gemm_dev at 2048^3 / 4096^3 (persistent tiles x K panels)
//     flash_attention_dev_s4096           B=1 H=16 S=4096 D=128 (the shape)
//     flash_attention_dev_s32768          B=1 H=12 S=32768 D=128 (the timed-mode shape,
//                                         calibration row C7: 512 kv tiles per q tile)
//     flash_attention_dev_s65536, _s131072  the same at 1,024 and 2,048 kv tiles per q tile:
//                                         flat with the trip count (the unroll's folded runs)
//     gemm_dev_k65536                     512 x 512 x 65536: a K loop of 512 panels
//     softmax_dev_4096                    4096 x 4096 fp32, 22 pipelined row tiles per block
//     gelu_dev_171, rms_norm_dev_8192     171 and 128 row tiles per block
//
// Each iteration compiles anew; iterations are fixed (compile times span 0.2 ms to seconds).
//
//   cmake --build --preset default --target compile_time_bench
//   ./build/default/bench/compile_time_bench --benchmark_out_format=json
//       --benchmark_out=bench/results/compile_time.json
#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

#include "tl/ir_functor.h"
#include "tl/jit.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"

namespace {

using tl::Expr;
namespace T = tl::T;

/// The new user's developer RoPE (rows of S tokens x H heads x D, the rotation of the two halves
/// of each head, cos/sin rows per token), bS tokens per block.
tl::PrimFunc rope_dev(int S, int H, int D, int bS) {
  const int half = D / 2;
  const tl::DType f32 = tl::DType::Float32;
  auto X = T::Tensor("X", {S, H, D}, f32);
  auto C = T::Tensor("C", {S, D}, f32);
  auto Sn = T::Tensor("Sn", {S, D}, f32);
  auto Y = T::Tensor("Y", {S, H, D}, f32);
  return T::prim_func("rope_dev", {X, C, Sn, Y}, [&] {
    T::Kernel(ceildiv(Expr(S), bS), [&](Expr cid) {
      auto x = T::alloc_shared("x", {bS, H, D}, f32);
      auto c = T::alloc_shared("c", {bS, D}, f32);
      auto s = T::alloc_shared("s", {bS, D}, f32);
      auto y = T::alloc_shared("y", {bS, H, D}, f32);
      T::copy(X.at({cid * bS, 0, 0}), x);
      T::copy(C.at({cid * bS, 0}), c);
      T::copy(Sn.at({cid * bS, 0}), s);
      T::Parallel({bS, H, half}, [&](Expr t, Expr h, Expr j) {
        y(t, h, j) = x(t, h, j) * c(t, j) - x(t, h, j + half) * s(t, j);
      });
      T::Parallel({bS, H, half}, [&](Expr t, Expr h, Expr j) {
        y(t, h, j + half) = x(t, h, j + half) * c(t, j + half) + x(t, h, j) * s(t, j + half);
      });
      T::copy(y, Y.at({cid * bS, 0, 0}));
    });
  });
}

tl::CompileOptions no_cache() {
  tl::CompileOptions o;
  o.cache = false;
  return o;
}

void compile_loop(benchmark::State& state, const tl::PrimFunc& f) {
  for (auto _ : state) {
    auto k = tl::compile(f, tl::default_target(), no_cache());
    benchmark::DoNotOptimize(&k.program());
  }
}

void BM_Registered(benchmark::State& state, const tl::KernelEntry* e) {
  tl::PrimFunc f = tl::build_kernel(*e);
  compile_loop(state, f);
  bool developer = false;
  tl::pre_order_visit(f->body, [&](const tl::Stmt& s) {
    if (auto* k = s.as<tl::KernelNode>()) developer |= !k->vid.defined();
  });
  state.counters["developer"] = developer;
}

struct Shape {
  std::string name, kernel;
  std::map<std::string, std::string> sets;
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {
      {"gemm_dev_2048", "gemm_dev", {{"M", "2048"}, {"N", "2048"}, {"K", "2048"}}},
      {"gemm_dev_4096", "gemm_dev", {{"M", "4096"}, {"N", "4096"}, {"K", "4096"}}},
      {"flash_attention_dev_s4096", "flash_attention_dev", {{"H", "16"}, {"S", "4096"}}},
      {"flash_attention_dev_s32768", "flash_attention_dev", {{"H", "12"}, {"S", "32768"}}},
      {"flash_attention_dev_s65536", "flash_attention_dev", {{"H", "12"}, {"S", "65536"}}},
      {"flash_attention_dev_s131072", "flash_attention_dev", {{"H", "12"}, {"S", "131072"}}},
      {"gemm_dev_k65536", "gemm_dev", {{"M", "512"}, {"N", "512"}, {"K", "65536"}}},
      {"softmax_dev_4096", "softmax_dev", {{"M", "4096"}, {"N", "4096"}, {"tiles", "22"}}},
      {"gelu_dev_171", "gelu_dev", {{"M", "16416"}, {"tiles", "171"}}},
      {"rms_norm_dev_8192", "rms_norm_dev", {{"M", "8192"}, {"N", "4096"}, {"tiles", "128"}}},
  };
  return s;
}

void BM_Shape(benchmark::State& state, const Shape* s) {
  compile_loop(state, tl::build_kernel(tl::find_kernel(s->kernel), s->sets));
}

void BM_RopeDev171(benchmark::State& state) {
  compile_loop(state, rope_dev(4096, 1, 64, 171));
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  for (const tl::KernelEntry* e : tl::registered_kernels())
    benchmark::RegisterBenchmark(("BM_Registered/" + e->name).c_str(), BM_Registered, e)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(5);
  benchmark::RegisterBenchmark("BM_Shape/rope_dev_171", BM_RopeDev171)
      ->Unit(benchmark::kMillisecond)
      ->Iterations(3);
  for (const Shape& s : shapes())
    benchmark::RegisterBenchmark(("BM_Shape/" + s.name).c_str(), BM_Shape, &s)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
