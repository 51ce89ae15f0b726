// The timing model (tl/npu/timing.h): copy curves, cube peak, flag chains, overlap, cross-core
// waits, GM bandwidth sharing and determinism.
#include <gtest/gtest.h>

#include <sstream>

#include "tl/kernel_registry.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"

namespace tl {
namespace {

npu::Profile timed(const PrimFunc& f, const std::vector<std::vector<int64_t>>& shapes,
                   DType dt = f16) {
  Device dev;
  auto kern = compile(f);
  std::vector<Arg> args;
  for (const auto& s : shapes) args.emplace_back(Tensor::empty(dev, s, dt));
  npu::Trace trace;
  kern.launch(dev, args, {.trace = &trace, .timing_only = true});
  return npu::simulate_timing(trace, default_target());
}

/// One AIV copies `n` tiles of `elems` fp16 from GM to UB, a pipe_barrier between copies (the
/// way single-copy bandwidth is measured).
PrimFunc copy_kernel(int elems, int n, int blocks = 1) {
  auto X = T::Tensor("X", {blocks * 2 * n, elems}, f16);
  return T::prim_func("copy_curve", {X}, [&] {
    T::Kernel(blocks, [&](Expr cid, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto ub = T::alloc_ub("ub", {1, elems}, f16);
        T::serial(n, [&](Expr i) {
          T::copy(X.at({(cid * 2 + vid) * n + i, 0}), ub);
          T::pipe_barrier(Pipe::MTE2);
        });
      });
    });
  });
}

double copy_gbps(int bytes, int n = 8, int blocks = 1) {
  auto p = timed(copy_kernel(bytes / 2, n, blocks), {{blocks * 2 * n, bytes / 2}});
  return 2.0 * blocks * n * bytes / (p.total_us * 1e-6) / 1e9;  // both AIVs copy
}

TEST(Timing, CopyCurveApproachesPlateau) {
  const auto& c = default_target().costs;
  const double plateau = c.copy_measured_bytes_per_s.at("global->UB") / 1e9;  // 78 GB/s
  const double K = c.copy_latency_bytes.at("global->UB");
  double prev = 0;
  for (int bytes : {1024, 4096, 16384, 65536, 131072, 180224}) {
    double bw = copy_gbps(bytes) / 2;               // per AIV
    double expect = plateau * bytes / (K + bytes);  // docs/hardware.md section 4
    EXPECT_GT(bw, prev) << bytes;
    EXPECT_NEAR(bw, expect, 0.05 * expect) << bytes << " B";  // issue cycles: within 5 %
    prev = bw;
  }
  EXPECT_GT(prev, 0.8 * plateau);
  EXPECT_LT(prev, plateau);
}

TEST(Timing, SharedHbmLimitsManyCores) {
  // 24 blocks x 2 AIVs streaming 128 KB copies want 48 x ~65 GB/s = 3 TB/s: HBM caps them at
  // what it streams (1.456 TB/s on A2, not its 1.8 TB/s peak: docs/calibration.md, "GM side").
  // The first touch of each region misses L2.
  const double hbm = default_target().costs.hbm_stream_bytes_per_s / 1e9;
  double one = copy_gbps(131072, 4, 1);
  double many = copy_gbps(131072, 4, 24);
  EXPECT_LT(many, hbm * 1.001);
  EXPECT_GT(many, 0.9 * hbm * 131072 / (131072 + 30720));  // latency phases do not share
  EXPECT_GT(many, 10 * one);
}

/// Each AIV writes a [32, 128] fp16 tile to GM, then reads back the first 16 of those rows and
/// a [16, 64] column half of them (other shapes than the write: L2 keeps bytes, not regions).
PrimFunc write_back_kernel() {
  auto X = T::Tensor("X", {64, 128}, f16);
  return T::prim_func("write_back", {X}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto a = T::alloc_ub("a", {32, 128}, f16);
        auto b = T::alloc_ub("b", {16, 128}, f16);
        auto c = T::alloc_ub("c", {16, 64}, f16);
        T::clear(a);
        T::set_flag(Pipe::V, Pipe::MTE3, 0);
        T::wait_flag(Pipe::V, Pipe::MTE3, 0);
        T::copy(a, X.at({vid * 32, 0}));
        T::set_flag(Pipe::MTE3, Pipe::MTE2, 0);
        T::wait_flag(Pipe::MTE3, Pipe::MTE2, 0);
        T::copy(X.at({vid * 32, 0}), b);
        T::copy(X.at({vid * 32 + 16, 64}), c);
      });
    });
  });
}

TEST(Timing, GmWritesStayInL2AndReadsHitWhateverTheirShape) {
  // Writes allocate in L2 (AscendC best practices, "Setting a Proper L2 CacheMode"): with the
  // footprint far below L2, neither the write nor the differently shaped read-backs reach HBM.
  auto p = timed(write_back_kernel(), {{64, 128}});
  EXPECT_DOUBLE_EQ(p.gm_bytes, 2 * (8192 + 4096 + 2048));
  EXPECT_DOUBLE_EQ(p.gm_hbm_bytes, 0);
  // A first read misses: the same kernel reading before it writes sends the read to HBM.
  auto X = T::Tensor("X", {64, 128}, f16);
  auto first = T::prim_func("read_first", {X}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto b = T::alloc_ub("b", {16, 128}, f16);
        T::copy(X.at({vid * 32, 0}), b);
      });
    });
  });
  auto q = timed(first, {{64, 128}});
  EXPECT_DOUBLE_EQ(q.gm_hbm_bytes, 2 * 4096);
}

TEST(Timing, L2OverflowSendsWritesAndHitsToHbm) {
  // The same kernel with an 8 KB L2: its 16 KB footprint exceeds L2, so the second 8 KB write
  // costs its bytes and writes back the first's (dirty in L2 until L2 first dropped a block:
  // src/npu/timing_l2.h), and the read-backs (6 KB per AIV, all bytes written before) miss:
  // L2, an LRU, holds only the last 8 KB written, and each read-back's allocation drops the
  // oldest of them, which the next read-back wants (an LRU re-reading in the order it filled).
  // The fluid rule before it (hits scaled by L2 / footprint) had half of them hit.
  Target small = default_target();
  small.costs.l2_bytes = 8192;
  Device dev;
  auto kern = compile(write_back_kernel());
  std::vector<Arg> args{Tensor::empty(dev, {64, 128}, f16)};
  npu::Trace trace;
  kern.launch(dev, args, {.trace = &trace, .timing_only = true});
  auto p = npu::simulate_timing(trace, small);
  // The column half starts 128 B into its rows: it moves its bytes at the 512 B-unaligned
  // efficiency (docs/calibration.md, "GM alignment"), so its HBM bytes are 2048 / 0.7.
  const double eff = default_target().costs.gm_unaligned_efficiency;
  EXPECT_DOUBLE_EQ(p.gm_hbm_bytes, 8192 * 2 + 2 * (4096 + 2048 / eff));
  auto full = npu::simulate_timing(trace, default_target());
  EXPECT_DOUBLE_EQ(full.gm_hbm_bytes, 0);
}

PrimFunc mma_kernel(int reps) {
  auto A = T::Tensor("A", {128, 256}, f16);
  return T::prim_func("mma_peak", {A}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Cube, [&] {
        auto a = T::alloc_L0A("a", {128, 256}, f16);
        auto b = T::alloc_L0B("b", {256, 128}, f16);
        auto c = T::alloc_L0C("c", {128, 128}, f32);
        T::serial(reps, [&](Expr) { T::mma(a, b, c, false); });
      });
    });
  });
}

TEST(Timing, CubeBoundHitsPeak) {
  auto p = timed(mma_kernel(50), {{128, 256}});
  double fractals = 50.0 * 8 * 8 * 16;
  double ratio = fractals / p.total_cycles;  // 1 fractal per cycle at peak
  EXPECT_GT(ratio, 0.97);
  EXPECT_LE(ratio, 1.0);
  EXPECT_GT(p.busy_ratio(Pipe::M, CoreKind::Cube), 0.97);
}

/// GM -> UB, flag, add, flag, UB -> GM: a dependent chain.
PrimFunc chain_kernel(bool flags) {
  auto X = T::Tensor("X", {64, 128}, f16);
  auto Y = T::Tensor("Y", {64, 128}, f16);
  return T::prim_func("chain", {X, Y}, [&] {
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto a = T::alloc_ub("a", {32, 128}, f16);
        auto b = T::alloc_ub("b", {32, 128}, f16);
        T::copy(X.at({vid * 32, 0}), a);
        if (flags) {
          T::set_flag(Pipe::MTE2, Pipe::V, 0);
          T::wait_flag(Pipe::MTE2, Pipe::V, 0);
        }
        T::tile::add(b, a, a);
        if (flags) {
          T::set_flag(Pipe::V, Pipe::MTE3, 0);
          T::wait_flag(Pipe::V, Pipe::MTE3, 0);
        }
        T::copy(b, Y.at({vid * 32, 0}));
      });
    });
  });
}

TEST(Timing, FlagChainIsTheSumOfCosts) {
  auto p = timed(chain_kernel(true), {{64, 128}, {64, 128}});
  double sum = 0;
  int n = 0;
  for (const auto& i : p.instrs)
    if (i.core == 1) {
      sum += i.end - i.start;
      ++n;
    }
  ASSERT_EQ(n, 3);
  // Plus the scalar issue of the 7 events.
  EXPECT_NEAR(p.cores[1].end, sum, 8.0);
  EXPECT_GE(p.cores[1].end, sum);
  // Without flags the three pipes overlap (a hazard the checker reports; the model just runs).
  auto q = timed(chain_kernel(false), {{64, 128}, {64, 128}});
  EXPECT_LT(q.cores[1].end, 0.8 * p.cores[1].end);
}

PrimFunc adds_kernel(bool barrier) {
  auto X = T::Tensor("X", {64, 128}, f16);
  return T::prim_func("adds", {X}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Vector, [&] {
        auto a = T::alloc_ub("a", {64, 128}, f16);
        auto b = T::alloc_ub("b", {64, 128}, f16);
        auto c = T::alloc_ub("c", {64, 128}, f16);
        T::tile::add(b, a, a);
        if (barrier) T::pipe_barrier(Pipe::V);
        T::tile::add(c, a, a);
      });
    });
  });
}

TEST(Timing, VectorOverlapWithoutBarrier) {
  auto p = timed(adds_kernel(false), {{64, 128}});
  auto q = timed(adds_kernel(true), {{64, 128}});
  // 64 x 128 fp16 = 64 repeats: 10 + 1 x 64 + 14 = 88 cycles each (docs/hardware.md section 4).
  std::vector<const npu::TimedInstr*> v;
  for (const auto& i : p.instrs)
    if (i.core == 1) v.push_back(&i);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_DOUBLE_EQ(v[0]->end - v[0]->start, 88);
  EXPECT_DOUBLE_EQ(v[1]->start - v[0]->start, 64);         // issue interval = 1 x 64 repeats
  EXPECT_NEAR(q.cores[1].end - p.cores[1].end, 24, 1e-9);  // the barrier exposes head + tail
}

PrimFunc cross_kernel() {
  auto A = T::Tensor("A", {128, 256}, f16);
  return T::prim_func("cross", {A}, [&] {
    T::Kernel(1, [&](Expr, Expr) {
      T::Scope(Core::Cube, [&] {
        auto a = T::alloc_L0A("a", {128, 256}, f16);
        auto b = T::alloc_L0B("b", {256, 128}, f16);
        auto c = T::alloc_L0C("c", {128, 128}, f32);
        T::mma(a, b, c, true);
        T::set_cross_flag(Pipe::M, 3, 2);
      });
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x", {8, 128}, f16);
        T::wait_cross_flag(3);
        T::tile::add(x, x, x);
      });
    });
  });
}

TEST(Timing, CrossCoreWaitDelays) {
  auto p = timed(cross_kernel(), {{128, 256}});
  double mma_end = -1, add_start[2] = {-1, -1};
  for (const auto& i : p.instrs) {
    if (i.core == 0 && i.pipe == Pipe::M) mma_end = i.end;
    if (i.core >= 1 && i.pipe == Pipe::V) add_start[i.core - 1] = i.start;
  }
  ASSERT_GT(mma_end, 1000);  // 8 x 8 x 16 fractals + head
  const double lat = default_target().costs.cross_flag_latency_cycles;
  // After the wait: the add's three operand addresses (scalar ALU operations), then its issue.
  const double setup = 3 * default_target().costs.scalar_alu_cycles;
  for (double s : add_start) {
    EXPECT_GE(s, mma_end + lat);
    EXPECT_LE(s, mma_end + lat + setup + 4);
  }
}

TEST(Timing, DeterministicAndOutputs) {
  Device dev;
  auto kern =
      compile(build_kernel(find_kernel("gemm"), {{"M", "512"}, {"N", "512"}, {"K", "256"}}));
  Tensor A = Tensor::empty(dev, {512, 256}, f16), B = Tensor::empty(dev, {256, 512}, f16),
         C = Tensor::empty(dev, {512, 512}, f16);
  npu::Trace t1, t2;
  kern.launch(dev, {A, B, C}, {.threads = 1, .trace = &t1});
  kern.launch(dev, {A, B, C}, {.threads = 4, .trace = &t2});
  auto p1 = npu::simulate_timing(t1, default_target());
  auto p2 = npu::simulate_timing(t2, default_target());
  auto p3 = npu::simulate_timing(t1, default_target());
  EXPECT_EQ(p1.total_cycles, p2.total_cycles);
  EXPECT_EQ(p1.total_cycles, p3.total_cycles);
  ASSERT_EQ(p1.instrs.size(), p2.instrs.size());
  for (size_t i = 0; i < p1.instrs.size(); ++i) EXPECT_EQ(p1.instrs[i].end, p2.instrs[i].end);
  EXPECT_GT(p1.busy_ratio(Pipe::M, CoreKind::Cube), 0.05);
  std::ostringstream js, html, table;
  npu::write_chrome_trace(p1, js);
  npu::write_html_timeline(p1, html, 2);
  npu::print_profile(p1, table);
  EXPECT_NE(js.str().find("\"ph\":\"X\""), std::string::npos);
  EXPECT_NE(js.str().find("gemm.cpp:"), std::string::npos);
  EXPECT_NE(html.str().find("<svg"), std::string::npos);
  EXPECT_NE(html.str().find("<title>gemm_v0.mmad"), std::string::npos);
  EXPECT_NE(table.str().find("AIC.M"), std::string::npos);
}

}  // namespace
}  // namespace tl
