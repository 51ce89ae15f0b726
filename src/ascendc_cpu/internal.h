// Internal to the AscendC CPU model (src/ascendc_cpu): the launch and per-core context that
// model.cpp keeps and ops.cpp builds its tile ops against.
#pragma once

#include <string>
#include <vector>

#include "ascendc_cpu/model.h"
#include "tl/npu/direct.h"

namespace ascendc_cpu {

struct LaunchCtx {
  LaunchCtx(const LaunchConfig& c, tl::npu::Trace* trace)
      : cfg(c),
        direct(
            {.kernel = c.kernel, .target = c.target, .num_blocks = c.num_blocks, .trace = trace}) {}
  const LaunchConfig& cfg;
  tl::npu::DirectLaunch direct;
};

/// The core a host thread runs (set for the kernel function's duration).
struct CoreCtx {
  LaunchCtx* launch = nullptr;
  void* sched = nullptr;  // model.cpp's scheduler
  int64_t block = 0;
  int group = 0;  // the core group (physical block) it runs on
  tl::CoreKind kind = tl::CoreKind::Vector;
  int vid = 0;
  bool atomic_add = false;  // SetAtomicAdd in effect (model_sort.h): copies to GM add
  tl::DType atomic_dtype = tl::DType::Float32;
  std::string name() const;  // "block 3 AIV1"
};

/// The calling thread's core; an error naming `w` outside a launch.
CoreCtx& ctx(const Where& w);
tl::SourceLoc loc_of(const Where& w);
/// Executes a tile op or sync on the current core (waiting for other cores at a cross-core
/// wait); the VM's errors come back naming the AscendC call.
void run(const Where& w, const tl::Stmt& s);
/// The launch tensor holding `bytes` bytes from `addr` (an error naming `w` otherwise).
const GmArg& find_gm(const Where& w, const uint8_t* addr, int64_t bytes);
/// A GM buffer over `shape` elements with element `strides` from `addr` (bounds checked).
tl::Buffer gm_view(const Where& w, uint8_t* addr, DType dtype, const std::vector<int64_t>& shape,
                   const std::vector<int64_t>& strides);
/// Builds tile op `name` (every attribute at its default, then `set`) at the call's line and
/// runs it on the current core.
void exec_op(const Where& w, const char* name, std::vector<tl::TileArg> args,
             std::vector<tl::Attr> set = {});
/// An error naming `w` unless `elems` elements fit the tensor.
void check_fits(const Where& w, const LocalRef& t, int64_t elems, const char* what);
void check_count(const Where& w, int64_t count);
/// The tensor as a 1-D operand of `count` elements.
tl::TileArg flat(const Where& w, const LocalRef& t, int64_t count, const char* what);
/// The tensor as an operand of `shape` with element `strides` (UB).
tl::TileArg strided(const Where& w, const LocalRef& t, const std::vector<int64_t>& shape,
                    const std::vector<int64_t>& strides, const char* what);
/// An immediate of dtype t (the VM rounds a float scalar to the op's dtype).
tl::Expr scalar_expr(DType t, double v);
/// The name an on-chip buffer carries in messages: "UB[0x0c0]" (memory and byte offset).
std::string local_name(const LocalRef& t);

}  // namespace ascendc_cpu
