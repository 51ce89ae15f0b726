// Verifier: clean kernels report nothing, every error is reported, formatting, verify_or_throw,
// and the target tables.
#include <set>

#include "verify_test_util.h"

#include "tl/ir_ops.h"
#include "tl/kernel_registry.h"
#include "tl/op.h"

namespace tl {
namespace {
using testing::Clean;
using testing::HasDiag;

// The mixed cube/vector kernel "minicv" (examples/minicv.cpp): GEMM on the cube, exp on the
// two AIVs, handoff through a GM workspace.
PrimFunc minicv(int M, int N, int K, int bM, int bN) {
  auto A = T::Tensor("A", {M, K}, f16), B = T::Tensor("B", {K, N}, f16);
  auto W = T::Tensor("W", {ceildiv(M, bM) * ceildiv(N, bN), bM, bN}, f32);
  auto D = T::Tensor("D", {M, N}, f32);
  return T::prim_func("minicv", {A, B, W, D}, [&] {
    T::Kernel(ceildiv(M, bM) * ceildiv(N, bN), [&](Expr cid, Expr vid) {
      Expr bx = cid / ceildiv(N, bN) * bM, by = cid % ceildiv(N, bN) * bN;
      T::Scope(Core::Cube, [&] {
        auto a = T::alloc_L1("a", {bM, K}, f16), b = T::alloc_L1("b", {K, bN}, f16);
        auto c = T::alloc_L0C("c", {bM, bN}, f32);
        T::copy(A.region({bx, 0}, {bM, K}), a);
        T::copy(B.region({0, by}, {K, bN}), b);
        T::set_flag(Pipe::MTE2, Pipe::MTE1, 0);
        T::wait_flag(Pipe::MTE2, Pipe::MTE1, 0);
        T::gemm_v0(a, b, c, {.init = true});
        T::set_flag(Pipe::M, Pipe::FIX, 0);
        T::wait_flag(Pipe::M, Pipe::FIX, 0);
        T::copy(c, W.region({cid, 0, 0}, {1, bM, bN}));
        T::set_cross_flag(Pipe::FIX, 0, 2);
      });
      T::Scope(Core::Vector, [&] {
        auto x = T::alloc_ub("x", {bM / 2, bN}, f32);
        T::wait_cross_flag(0);
        T::copy(W.region({cid, vid * (bM / 2), 0}, {1, bM / 2, bN}), x);
        T::set_flag(Pipe::MTE2, Pipe::V, 0);
        T::wait_flag(Pipe::MTE2, Pipe::V, 0);
        T::tile::exp(x, x);
        T::set_flag(Pipe::V, Pipe::MTE3, 0);
        T::wait_flag(Pipe::V, Pipe::MTE3, 0);
        T::copy(x, D.region({bx + vid * (bM / 2), by}, {bM / 2, bN}));
      });
    });
  });
}

TEST(Verifier, CleanKernelsReportNothing) {
  EXPECT_TRUE(Clean(build_kernel(find_kernel("gemm"))));
  EXPECT_TRUE(Clean(build_kernel(find_kernel("gemm"), {{"dtype", "bfloat16"}})));
  EXPECT_TRUE(Clean(minicv(256, 256, 128, 64, 64)));
  for (const auto& t : target_names()) EXPECT_TRUE(Clean(minicv(256, 256, 128, 64, 64), t)) << t;
}

TEST(Verifier, CleanVectorKernelWithEveryFamily) {
  auto X = T::Tensor("X", {64, 128}, f32);
  auto Y = T::Tensor("Y", {64, 128}, f16);
  auto f = testing::vector_kernel({X, Y}, [&] {
    auto x = T::alloc_ub("x", {16, 128}, f32), y = T::alloc_ub("y", {16, 128}, f32);
    auto h = T::alloc_ub("h", {16, 128}, f16), m = T::alloc_ub("m", {256}, u8);
    auto r = T::alloc_ub("r", {16}, f32), s = T::alloc_ub("s", {4096}, f32);
    auto idx = T::alloc_ub("idx", {128}, u32), g = T::alloc_ub("g", {128}, f32);
    T::serial(4, [&](Expr i) {
      T::copy(X.region({i * 16, 0}, {16, 128}), x);
      T::pipe_barrier(Pipe::MTE2);
      T::set_flag(Pipe::MTE2, Pipe::V, 0);
      T::wait_flag(Pipe::MTE2, Pipe::V, 0);
      T::tile::mul(y, x, x);
      T::tile::add(y, y, 1.0);
      T::reduce_sum(y, r, -1);
      T::tile::row_expand_div(y, x, r);
      T::tile::compare(m, x, y, "GT");
      T::tile::select(y, m, x, y);
      T::tile::cast(h, y, "CAST_RINT");
      T::sort(s, x.region({0, 0}, {1, 128}), 128);
      T::tile::gather(g, x.region({1, 0}, {1, 128}), idx);
      T::tile::axpy(y, h, 0.5);
      T::set_flag(Pipe::V, Pipe::MTE3, 0);
      T::wait_flag(Pipe::V, Pipe::MTE3, 0);
      T::copy(h, Y.region({i * 16, 0}, {16, 128}));
    });
  });
  EXPECT_TRUE(Clean(f));
}

TEST(Verifier, EveryErrorIsReported) {
  int l1 = 0, l2 = 0, l3 = 0, l4 = 0;
  auto X = T::Tensor("X", {16, 7}, f32);
  auto f = testing::kernel({X}, [&] {
    auto a = T::alloc_L1("a", {16, 64}, f16);
    T::Scope(Core::Vector, [&] {
      auto x = T::alloc_ub("x", {16, 7}, f32);
      l1 = __LINE__ + 1;
      T::copy(X, x);
      l2 = __LINE__ + 1;
      T::tile::exp(a, a);
      l3 = __LINE__ + 1;
      T::set_flag(Pipe::MTE2, Pipe::V, 9);
      l4 = __LINE__ + 1;
      T::copy(x, a);
    });
  });
  auto ds = verify(f);
  EXPECT_TRUE(HasDiag(ds, "ub-row-alignment", "T.copy", "dst", l1));
  EXPECT_TRUE(HasDiag(ds, "vector-operand-scope", "T.tile.exp", "dst", l2));
  EXPECT_TRUE(HasDiag(ds, "vector-operand-scope", "T.tile.exp", "src", l2));
  EXPECT_TRUE(HasDiag(ds, "event-id-range", "T.set_flag", "event_id", l3));
  EXPECT_TRUE(HasDiag(ds, "copy-path", "T.copy", "dst", l4));
  EXPECT_GE(ds.size(), 5u);
  try {
    verify_or_throw(f);
    FAIL() << "verify_or_throw did not throw";
  } catch (const Error& e) {
    std::string msg = e.what();
    for (const auto& d : ds) EXPECT_NE(msg.find(d.str()), std::string::npos) << msg;
    EXPECT_NE(msg.find(fmt::format("({} errors)", ds.size())), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(verify_or_throw(build_kernel(find_kernel("gemm"))));
}

TEST(Verifier, DiagnosticFormat) {
  Diagnostic d{"T.tile.add",           "dst",
               "vector-operand-scope", "vector ops take UB operands only",
               {"examples/x.cpp", 12}, "buffer 'x_l1' in L1"};
  EXPECT_EQ(d.str(),
            "examples/x.cpp:12: T.tile.add: operand 'dst' (buffer 'x_l1' in L1): vector "
            "ops take UB operands only [rule: vector-operand-scope]");
  Diagnostic k{"T.Kernel", "", "kernel-count", "expected exactly one T::Kernel", {"k.cpp", 3}, ""};
  EXPECT_EQ(k.str(), "k.cpp:3: T.Kernel: expected exactly one T::Kernel [rule: kernel-count]");
}

TEST(Verifier, MalformedHandBuiltIrDoesNotCrash) {
  // Wrong operand count and a region with the wrong rank, built without make_tile_op's checks.
  Buffer x = BufferNode::make("x", f32, {64}, MemScope::UB);
  BufferRegion bad_rank{x, {{0, 8}, {0, 8}}};
  Stmt op1 = TileOpNode::make(find_op("tile.add"), {TileArg(x)}, {}, {"t.cpp", 1});
  Stmt op2 =
      TileOpNode::make(find_op("tile.exp"), {TileArg(x), TileArg(bad_rank)}, {}, {"t.cpp", 2});
  Stmt body = SeqNode::make({AllocateNode::make(x), op1, op2});
  Stmt k = KernelNode::make(1, Var("cid"), Var("vid"),
                            SeqNode::make({ScopeNode::make(CoreKind::Vector, body)}));
  auto ds = verify(make_prim_func("k", {}, {}, SeqNode::make({k})));
  EXPECT_TRUE(HasDiag(ds, "operand-count", "T.tile.add", "", 0));
  EXPECT_TRUE(HasDiag(ds, "region-rank", "T.tile.exp", "src", 0));
}

TEST(VerifierTargets, TablesPerChip) {
  std::set<std::string> names;
  for (const auto& n : target_names()) names.insert(n);
  EXPECT_EQ(names, (std::set<std::string>{"A2", "910B3", "910B4", "A3", "950"}));
  EXPECT_EQ(default_target().name, "A2");
  EXPECT_EQ(&get_target("Ascend910B2"), &default_target());
  const Target& b4 = get_target("910B4");
  EXPECT_EQ(b4.num_aic, 20);
  EXPECT_EQ(b4.num_aiv, 40);
  const Target& t950 = get_target("950");
  EXPECT_EQ(t950.num_aic, 32);
  EXPECT_EQ(t950.num_aiv, 64);
  EXPECT_DOUBLE_EQ(t950.clock_ghz, 1.65);
  EXPECT_EQ(t950.cap(MemScope::L0C), 256 * 1024);
  EXPECT_EQ(t950.cap(MemScope::UB), 248 * 1024);
  EXPECT_EQ(t950.copy_pipe(MemScope::UB, MemScope::L1), Pipe::MTE3);
  EXPECT_EQ(t950.copy_pipe(MemScope::GM, MemScope::L0A), std::nullopt);
  EXPECT_EQ(default_target().copy_pipe(MemScope::UB, MemScope::L1), std::nullopt);
  EXPECT_EQ(default_target().copy_pipe(MemScope::L0C, MemScope::UB), std::nullopt);
  for (const auto& n : target_names()) {
    const Target& t = get_target(n);
    EXPECT_TRUE(t.hard_event_ok(Pipe::MTE2, Pipe::V)) << n;
    EXPECT_FALSE(t.hard_event_ok(Pipe::MTE3, Pipe::M)) << n;
    EXPECT_EQ(t.memory_core(MemScope::UB), CoreKind::Vector) << n;
    EXPECT_EQ(t.memory_core(MemScope::L0C), CoreKind::Cube) << n;
  }
  EXPECT_THROW(get_target("910C"), Error);
}

}  // namespace
}  // namespace tl
