// hoist_above_channel_waits: tile ops that need nothing a channel brings move above its receiving
// copy (IR text in, text out), and in FlashAttention the cube's L0B load of V and the vector
// unit's rescaling of the accumulator end up before the waits for P and for P V. The developer
// examples' tests run the kernels against their references under the hazard checker.
#include "pass_test_util.h"
#include "tl/kernel_registry.h"

namespace tl {
namespace {

std::string hoisted(std::string_view text) {
  return print(hoist_above_channel_waits(parse(text), default_target()), {.locations = false});
}

TEST(HoistAboveChannelWaits, MovesWhatCommutesWithEverythingItPassesAndStopsAtTheNextChannelCopy) {
  constexpr std::string_view in = R"(@T.prim_func
def f():
    with T.Kernel(1, is_npu=True) as (cid, vid):
        ws = T.alloc_workspace((1, 2, 16, 16), "float32")
        with T.Scope("Vector"):
            u = T.alloc_ub((16, 16), "float32")
            a = T.alloc_ub((16, 16), "float32")
            b = T.alloc_ub((16, 16), "float32")
            T.tile.exp(a, a)
            T.copy(ws[0:1, 0:1, 0:16, 0:16], u)
            T.tile.add(b, u, u)
            T.tile.mul(a, a, a)
            T.tile.add(b, b, a)
            T.tile.exp(a, a)
            T.copy(b, ws[0:1, 1:2, 0:16, 0:16])
            T.tile.exp(a, a)
)";
  constexpr std::string_view out = R"(@T.prim_func
def f():
    with T.Kernel(1, is_npu=True) as (cid, vid):
        ws = T.alloc_workspace((1, 2, 16, 16), "float32")
        with T.Scope("Vector"):
            u = T.alloc_ub((16, 16), "float32")
            a = T.alloc_ub((16, 16), "float32")
            b = T.alloc_ub((16, 16), "float32")
            T.tile.exp(a, a)
            T.tile.mul(a, a, a)
            T.copy(ws[0:1, 0:1, 0:16, 0:16], u)
            T.tile.add(b, u, u)
            T.tile.add(b, b, a)
            T.tile.exp(a, a)
            T.copy(b, ws[0:1, 1:2, 0:16, 0:16])
            T.tile.exp(a, a)
)";
  EXPECT_EQ(hoisted(in), out);
}

// Nothing moves past a statement that is not a tile op or past a debug print, and a kernel whose
// receives are followed only by their consumers comes back unchanged.
TEST(HoistAboveChannelWaits, StopsAtLoopsAndBranchesAndLeavesDependentWorkAlone) {
  constexpr std::string_view text = R"(@T.prim_func
def f():
    with T.Kernel(1, is_npu=True) as (cid, vid):
        ws = T.alloc_workspace((1, 2, 16, 16), "float32")
        with T.Scope("Vector"):
            u = T.alloc_ub((16, 16), "float32")
            a = T.alloc_ub((16, 16), "float32")
            T.copy(ws[0:1, 0:1, 0:16, 0:16], u)
            T.tile.exp(u, u)
            if vid == 0:
                T.tile.exp(a, a)
            T.copy(ws[0:1, 1:2, 0:16, 0:16], u)
            for i in T.serial(2):
                T.tile.exp(a, a)
            T.copy(ws[0:1, 0:1, 0:16, 0:16], u)
            T.printf(cid, fmt="cid=%d")
            T.tile.exp(a, a)
)";
  PrimFunc f = parse(text);
  EXPECT_EQ(hoist_above_channel_waits(f, default_target()), f);
}

/// Index of the first line of `text` at or after `from` that contains `what`.
size_t line_with(const std::string& text, const std::string& what, size_t from = 0) {
  size_t at = text.find(what, from);
  return at == std::string::npos ? at : text.rfind('\n', at);
}

TEST(HoistAboveChannelWaits, FlashAttentionLoadsVAndRescalesWhileItWaits) {
  PrimFunc dev = build_kernel(find_kernel("flash_attention_dev"), {{"S", "512"}, {"D", "64"}});
  const std::string ir = print(lower(dev, default_target()), {.locations = false});
  // The steady state's first receive of P on the cube: V's L0B load of that tile comes first.
  const size_t cube_loop = line_with(ir, "for j_o in");
  const size_t p_wait = line_with(ir, "T.wait_cross_flag(2", cube_loop);
  const size_t v_load = line_with(ir, "T.copy(v_0, v_l0b_0", cube_loop);
  ASSERT_NE(p_wait, std::string::npos) << ir;
  EXPECT_LT(v_load, p_wait) << ir;
  // The vector unit scales the accumulator before it waits for P V.
  const size_t vector_loop = line_with(ir, "for j_o", line_with(ir, "T.Scope(\"Vector\")"));
  const size_t pv_wait = line_with(ir, "T.wait_cross_flag(4", vector_loop);
  const size_t rescale = line_with(ir, "T.tile.row_expand_mul(acc", vector_loop);
  ASSERT_NE(pv_wait, std::string::npos) << ir;
  EXPECT_LT(rescale, pv_wait) << ir;
}

}  // namespace
}  // namespace tl
