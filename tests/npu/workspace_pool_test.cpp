// Launch workspaces (T.alloc_workspace) are Unwritten GM (tl/gm_fill.h), so a huge block a
// previous launch freed is recycled with its pages mapped (docs/virtual_npu.md, "Host speed",
// branch hostfa3). The launcher still fills every workspace with 0xFF (NaN) bytes, so a kernel
// reading what it never wrote sees NaN, never the previous launch's data: one kernel fills a
// 4.5 MB workspace (a pooled length) with 1.0, another kernel with a workspace of the same length
// reads it unwritten, with the poison of TL_GM_POISON off (it would hide a missing fill).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "common/scoped_env.h"
#include "tl/npu/npu.h"
#include "tl/parser.h"
#include "tl/runtime.h"

namespace tl {
namespace {

using tltest::ScopedEnv;

constexpr int64_t kTile = 16384;
constexpr int64_t kTiles = 69;  // 4.5 MB of fp32: a huge block, which the pool recycles

std::string kernel(bool write) {
  const std::string n = std::to_string(kTile * kTiles);
  std::string body = write ? "                T.tile.fill(x, 1.0)\n"
                             "                for i in T.serial(" +
                                 std::to_string(kTiles) +
                                 "):\n                    T.copy(x, ws[i * " +
                                 std::to_string(kTile) + ":i * " + std::to_string(kTile) + " + " +
                                 std::to_string(kTile) + "])\n"
                           : "                T.copy(ws[0:16], x[0:16])\n"
                             "                T.copy(x[0:16], Y[0:16])\n"
                             "                T.copy(ws[" +
                                 std::to_string(kTile * kTiles - 16) + ":" + n +
                                 "], x[0:16])\n"
                                 "                T.copy(x[0:16], Y[16:32])\n";
  return "@T.prim_func\ndef k(Y: T.Tensor((32,), \"float32\")):\n"
         "    ws = T.alloc_workspace((" +
         n +
         ",), \"float32\")\n"
         "    with T.Kernel(1, is_npu=True) as (cid, vid):\n"
         "        with T.Scope(\"Vector\"):\n"
         "            if vid == 0:\n"
         "                x = T.alloc_ub((" +
         std::to_string(kTile) + ",), \"float32\")\n" + body;
}

TEST(GmFill, RecycledWorkspacesStartAsNaN) {
  ScopedEnv poison("TL_GM_POISON", "0"), stale("TL_CHECK_STALE", "0");
  Device dev;
  auto writer = compile(parse(kernel(true)));
  auto reader = compile(parse(kernel(false)));
  Tensor y = Tensor::empty(dev, {32}, DType::Float32);
  for (int round = 0; round < 2; ++round) {
    writer.launch(dev, {y}, {.threads = 1});
    std::memset(y.data(), 0, static_cast<size_t>(y.nbytes()));
    reader.launch(dev, {y}, {.threads = 1});
    for (int64_t i = 0; i < y.nbytes(); ++i)
      ASSERT_EQ(y.data()[i], 0xFF) << "round " << round << ", byte " << i;
  }
  EXPECT_EQ(dev.gm_bytes_in_use(), y.nbytes());  // the workspaces were freed
}

}  // namespace
}  // namespace tl
