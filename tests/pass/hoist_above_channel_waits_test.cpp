// hoist_above_channel_waits: tile ops that need nothing a channel brings move above its receiving
// copy (IR text in, text out), and in FlashAttention the cube's L0B load of V and the vector
// unit's rescaling of the accumulator end up before the waits for P and for P V. The developer
// examples' tests run the kernels against their references under the hazard checker.
#include "pass_test_util.h"
#include "tl/kernel_registry.h"

namespace tl {
namespace {

// The IR-text cases (what moves, what stays): tests/pass/hoist_above_channel_waits.tl.

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
