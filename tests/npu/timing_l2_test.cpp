// The GM side of the timing model (docs/calibration.md, "GM side"): the HBM streaming limit, the
// L2 footprint rule for writes (src/npu/timing_l2.h), and the L2 cache hint of the language
// (T.annotate_l2_cache): bypassing reads do not fill L2, bypassing writes go to HBM, the hint
// survives lowering into the AscendC source, and bad uses are errors.
#include <gtest/gtest.h>

#include <string>

#include "tl/ascendc.h"
#include "tl/ir_equal.h"
#include "tl/ir_functor.h"
#include "tl/kernel_registry.h"
#include "tl/lang.h"
#include "tl/npu/npu.h"
#include "tl/npu/timing.h"
#include "tl/npu/trace.h"
#include "tl/parser.h"
#include "tl/pass.h"
#include "tl/printer.h"
#include "tl/verifier.h"

namespace tl {
namespace {

/// The trace of a timing-only launch of `f` on fresh tensors.
npu::Trace trace_of(const PrimFunc& f, const std::vector<std::vector<int64_t>>& shapes,
                    DType dt = f16) {
  Device dev;
  auto kern = compile(f);
  std::vector<Arg> args;
  for (const auto& s : shapes) args.emplace_back(Tensor::empty(dev, s, dt));
  npu::Trace trace;
  kern.launch(dev, args, {.trace = &trace, .timing_only = true});
  return trace;
}

/// Each AIV reads its 32 rows of X twice (a pipe_barrier between the reads), X in `mode`.
PrimFunc read_twice(L2CacheMode mode) {
  auto X = T::Tensor("X", {64, 128}, f16);
  return T::prim_func("read_twice", {X}, [&] {
    T::annotate_l2_cache({{X, mode}});
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto a = T::alloc_ub("a", {32, 128}, f16);
        T::copy(X.at({vid * 32, 0}), a);
        T::pipe_barrier(Pipe::MTE2);
        T::copy(X.at({vid * 32, 0}), a);
      });
    });
  });
}

TEST(TimingL2, BypassingReadsDoNotFillL2) {
  // Normal: the second read of each AIV's 8 KB hits what the first brought into L2.
  auto normal = npu::simulate_timing(trace_of(read_twice(L2CacheMode::Normal), {{64, 128}}),
                                     default_target());
  EXPECT_DOUBLE_EQ(normal.gm_bytes, 4 * 8192);
  EXPECT_DOUBLE_EQ(normal.gm_hbm_bytes, 2 * 8192);
  // "disable": neither read enters L2, so the second misses too.
  auto bypass = npu::simulate_timing(trace_of(read_twice(L2CacheMode::Disable), {{64, 128}}),
                                     default_target());
  EXPECT_DOUBLE_EQ(bypass.gm_bytes, 4 * 8192);
  EXPECT_DOUBLE_EQ(bypass.gm_hbm_bytes, 4 * 8192);
}

/// Each AIV writes a [32, 128] tile of X, then reads back 16 of those rows (write, then read).
PrimFunc write_then_read(L2CacheMode mode) {
  auto X = T::Tensor("X", {64, 128}, f16);
  return T::prim_func("write_then_read", {X}, [&] {
    T::annotate_l2_cache({{X, mode}});
    T::Kernel(1, [&](Expr, Expr vid) {
      T::Scope(Core::Vector, [&] {
        auto a = T::alloc_ub("a", {32, 128}, f16);
        auto b = T::alloc_ub("b", {16, 128}, f16);
        T::clear(a);
        T::set_flag(Pipe::V, Pipe::MTE3, 0);
        T::wait_flag(Pipe::V, Pipe::MTE3, 0);
        T::copy(a, X.at({vid * 32, 0}));
        T::set_flag(Pipe::MTE3, Pipe::MTE2, 0);
        T::wait_flag(Pipe::MTE3, Pipe::MTE2, 0);
        T::copy(X.at({vid * 32, 0}), b);
      });
    });
  });
}

TEST(TimingL2, BypassingWritesGoToHbmAndAllocateNothing) {
  auto normal = npu::simulate_timing(trace_of(write_then_read(L2CacheMode::Normal), {{64, 128}}),
                                     default_target());
  EXPECT_DOUBLE_EQ(normal.gm_hbm_bytes, 0);  // the write stays in L2, the read hits it
  auto bypass = npu::simulate_timing(trace_of(write_then_read(L2CacheMode::Disable), {{64, 128}}),
                                     default_target());
  EXPECT_DOUBLE_EQ(bypass.gm_hbm_bytes, 2 * (8192 + 4096));
}

/// elementwise_add (examples/elementwise_add.cpp), M rows of N fp16, one tile a row, 2 blocks.
npu::Trace add_trace(int M, int N, const std::string& l2_cache) {
  PrimFunc f = build_kernel(find_kernel("elementwise_add"), {{"M", std::to_string(M)},
                                                             {"N", std::to_string(N)},
                                                             {"tile", std::to_string(N)},
                                                             {"blocks", "2"},
                                                             {"l2_cache", l2_cache}});
  return trace_of(f, {{M, N}, {M, N}, {M, N}});
}

TEST(TimingL2, AFootprintBeyondL2PaysForEveryWrittenByte) {
  // X, Y, Z of 64 KB each with a 96 KB L2: the reads enter L2, so the footprint (192 KB)
  // exceeds it and every byte of Z costs HBM time (asc-devkit's add example, case 4, and its
  // GELU: all bytes at the streaming rate; docs/calibration.md, "GM side"): the bytes written
  // before the footprint crossed L2 are written back by later allocations.
  Target small = default_target();
  small.costs.l2_bytes = 96 * 1024;
  const double mb = 64 * 1024;  // one tensor
  auto normal = add_trace(32, 1024, "normal");
  EXPECT_DOUBLE_EQ(npu::simulate_timing(normal, small).gm_hbm_bytes, 3 * mb);
  // Within L2 (192 MB) the writes stay: only the reads cost HBM.
  EXPECT_DOUBLE_EQ(npu::simulate_timing(normal, default_target()).gm_hbm_bytes, 2 * mb);
  // Reads bypassing L2 leave it Z's 64 KB: the writes stay (cases 5-6), in the small L2 too.
  auto bypass = add_trace(32, 1024, "disable");
  EXPECT_DOUBLE_EQ(npu::simulate_timing(bypass, small).gm_hbm_bytes, 2 * mb);
}

TEST(TimingL2, FootprintRuleOnTails) {
  // Row lengths that are no whole 32-byte block (padded UB rows, DataCopyPad) or no 512-byte
  // request (the unaligned efficiency scales every tensor alike): with L2 at half the
  // footprint, bypassing reads keep the writes free as a roomy L2 does, and normal reads make
  // them cost HBM.
  for (int n : {1, 7, 33, 1000, 4097}) {
    SCOPED_TRACE(n);
    Target small = default_target();
    small.costs.l2_bytes = 3.0 * 64 * n * 2 / 2;
    auto normal = add_trace(64, n, "normal");
    const double roomy = npu::simulate_timing(normal, default_target()).gm_hbm_bytes;
    const double tight = npu::simulate_timing(normal, small).gm_hbm_bytes;
    const double bypass = npu::simulate_timing(add_trace(64, n, "disable"), small).gm_hbm_bytes;
    EXPECT_DOUBLE_EQ(bypass, roomy);
    // Z is half the bytes of X and Y; which instruction pays back an owed byte depends on
    // where the footprint crossed L2, and the tail rows' unaligned requests weigh their bytes
    // unequally (0.16 % here), hence 1 %.
    EXPECT_NEAR(tight, 1.5 * roomy, 0.01 * roomy);
    EXPECT_GT(tight, 1.4 * roomy);
  }
}

TEST(TimingL2, HbmStreamsBelowItsPeak) {
  // asc-devkit's add example reads at 1.456 TB/s on A2 and 1.454 on the 950 (docs/calibration.md,
  // "GM side"); the peaks stay for the rooflines.
  const Target& a2 = default_target();
  EXPECT_EQ(a2.costs.hbm_bytes_per_s, 1.8e12);
  EXPECT_EQ(a2.costs.hbm_stream_bytes_per_s, 1.456e12);
  EXPECT_EQ(get_target("A3").costs.hbm_stream_bytes_per_s, 1.456e12);
  EXPECT_EQ(get_target("950").costs.hbm_bytes_per_s, 1.6e12);
  EXPECT_EQ(get_target("950").costs.hbm_stream_bytes_per_s, 1.454e12);
}

// ---- The language ------------------------------------------------------------------------------

TEST(TimingL2, TheHintPrintsParsesAndReachesTheAscendCSource) {
  PrimFunc f = build_kernel(find_kernel("elementwise_add"),
                            {{"M", "4"}, {"N", "1024"}, {"tile", "256"}, {"l2_cache", "disable"}});
  const std::string text = print(f);
  EXPECT_NE(text.find("X: T.Tensor((4, 1024), \"float16\", l2_cache=\"disable\")"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Z: T.Tensor((4, 1024), \"float16\"))"), std::string::npos) << text;
  EXPECT_TRUE(structural_equal(parse(text), f));
  PrimFunc g =
      build_kernel(find_kernel("elementwise_add"), {{"M", "4"}, {"N", "1024"}, {"tile", "256"}});
  EXPECT_FALSE(structural_equal(f, g));
  EXPECT_NE(structural_hash(f), structural_hash(g));
  // AscendC: SetL2CacheHint on X's and Y's GlobalTensor, after SetGlobalBuffer.
  const std::string src = ascendc::emit(lower(f, default_target()), default_target());
  size_t hints = 0;
  for (size_t at = src.find("SetL2CacheHint"); at != std::string::npos;
       at = src.find("SetL2CacheHint", at + 1))
    ++hints;
  EXPECT_EQ(hints, 2u) << src;
  EXPECT_NE(src.find(".SetL2CacheHint(AscendC::CacheMode::CACHE_MODE_DISABLE);"),
            std::string::npos);
  EXPECT_EQ(ascendc::emit(lower(g, default_target()), default_target()).find("SetL2CacheHint"),
            std::string::npos);
}

std::string build_error(const std::function<void()>& body) {
  auto X = T::Tensor("X", {64}, f32);
  try {
    T::prim_func("bad", {X}, [&] {
      T::Kernel(1, [&](Expr, Expr) { T::Scope(Core::Vector, [&] { body(); }); });
    });
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TimingL2, BadUsesAreErrors) {
  auto on_chip = build_error([] {
    auto a = T::alloc_ub("a", {64}, f32);
    T::annotate_l2_cache({{a, L2CacheMode::Disable}});
  });
  EXPECT_NE(on_chip.find("T::annotate_l2_cache: 'a' is a UB buffer; only GM tensors"),
            std::string::npos)
      << on_chip;
  auto twice = [&] {
    auto X = T::Tensor("X", {64}, f32);
    try {
      T::prim_func("twice", {X}, [&] {
        T::annotate_l2_cache({{X, L2CacheMode::Disable}});
        T::annotate_l2_cache({{X, L2CacheMode::Normal}});
        T::Kernel(1, [&](Expr, Expr) {});
      });
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  EXPECT_NE(twice.find("'X' already has L2 cache mode \"disable\", this annotation gives "
                       "\"normal\""),
            std::string::npos)
      << twice;
  // The verifier's rule for IR made otherwise (a pass, hand-built IR): a mode on a UB buffer.
  struct OnChip : IRMutator {
    Buffer mutate_buffer(const Buffer& b) override {
      if (b->scope != MemScope::UB) return b;
      if (!made.defined())
        made = BufferNode::make(b->name, b->dtype, b->shape, b->scope, b->strides, b->address,
                                b->loc, b->origin, b->channel_slots, L2CacheMode::Disable);
      return made;
    }
    Buffer made;
  };
  PrimFunc f = read_twice(L2CacheMode::Normal);
  OnChip m;
  PrimFunc bad = make_prim_func(f->name, f->dynamics, f->params, m.mutate(f->body), f->loc);
  const auto ds = verify(bad);
  ASSERT_EQ(ds.size(), 1u) << format_diagnostics(ds);
  EXPECT_EQ(ds[0].rule, "l2-cache-scope");
  EXPECT_NE(ds[0].message.find("'a' is a UB buffer with L2 cache mode \"disable\""),
            std::string::npos)
      << ds[0].message;
}

}  // namespace
}  // namespace tl
