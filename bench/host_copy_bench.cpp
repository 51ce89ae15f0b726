// The host's rates for the data passes under the virtual NPU's FlashAttention (issue 31;
// docs/virtual_npu.md, "The floor under FlashAttention's host time"): ND -> NZ of the K tiles one
// developer FlashAttention call B1 H16 S1024 D128 converts (every q-tile block of a head converts
// each of its 16 K tiles again), the same tiles copied whole from already-converted copies (what
// a converted-tile cache would do on a hit), and 16 KB copies within working sets of 256 KB to
// 8 MB (one core group's simulated memories are about 0.5 MB). Stand-alone rates: in a launch
// the same passes run several times slower (the profile in the note).
//
//   ./build/default/bench/host_copy_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "tl/npu/layout.h"

namespace {

constexpr int kS = 1024, kD = 128, kH = 16, kTile = 64, kQTiles = kS / kTile;

// One call's K conversions: per head, every q-tile block converts the head's 16 K tiles.
void BM_NdToNzOfOneCallsKTiles(benchmark::State& st) {
  std::vector<uint16_t> k(size_t(kH) * kS * kD, 0x3C00), l1(size_t(kTile) * kD);
  for (auto _ : st) {
    for (int h = 0; h < kH; ++h)
      for (int q = 0; q < kQTiles; ++q)
        for (int j = 0; j < kS / kTile; ++j)
          tl::npu::nd_to_nz(k.data() + (size_t(h) * kS + size_t(j) * kTile) * kD, kTile, kD, kD,
                            tl::DType::Float16, l1.data());
    benchmark::DoNotOptimize(l1.data());
  }
  st.SetBytesProcessed(st.iterations() * int64_t{kH} * kQTiles * kS * kD * 2);
}
BENCHMARK(BM_NdToNzOfOneCallsKTiles)->Unit(benchmark::kMillisecond);

// The same tiles copied whole from converted copies (a converted-tile cache's hits).
void BM_ConvertedKTileCopies(benchmark::State& st) {
  std::vector<uint16_t> cache(size_t(kH) * kS * kD, 0x3C00), l1(size_t(kTile) * kD);
  for (auto _ : st) {
    for (int h = 0; h < kH; ++h)
      for (int q = 0; q < kQTiles; ++q)
        for (int j = 0; j < kS / kTile; ++j)
          std::memcpy(l1.data(), cache.data() + (size_t(h) * kS + size_t(j) * kTile) * kD,
                      size_t(kTile) * kD * 2);
    benchmark::DoNotOptimize(l1.data());
  }
  st.SetBytesProcessed(st.iterations() * int64_t{kH} * kQTiles * kS * kD * 2);
}
BENCHMARK(BM_ConvertedKTileCopies)->Unit(benchmark::kMillisecond);

// 16 KB copies between blocks spread over a working set of `range(0)` KB.
void BM_Copy16KWithin(benchmark::State& st) {
  const size_t ws = size_t(st.range(0)) << 10, blk = 16384, nb = ws / blk;
  std::vector<char> m(ws, 1);
  size_t it = 0;
  for (auto _ : st) {
    size_t a = (it * 7) % nb, b = (it * 13 + 5) % nb;
    if (a == b) b = (b + 1) % nb;
    std::memcpy(m.data() + b * blk, m.data() + a * blk, blk);
    benchmark::ClobberMemory();
    ++it;
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * blk));
}
BENCHMARK(BM_Copy16KWithin)->Arg(256)->Arg(1024)->Arg(2048)->Arg(8192);

}  // namespace

BENCHMARK_MAIN();
