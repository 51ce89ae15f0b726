// Internal: helpers shared by the op semantics (exec_*.cpp): region data in and out as float
// or integer arrays, and the registration table.
#pragma once

#include <vector>

#include "program.h"
#include "tl/npu/numerics.h"

namespace tl::npu {

/// One registered op semantics.
struct ExecEntry {
  const OpDef* op;  // its handle (tl/ops.h)
  ExecFn fn;
};
/// Each exec_*.cpp lists its ops; exec.cpp concatenates them.
std::vector<ExecEntry> move_execs();
std::vector<ExecEntry> cube_execs();
std::vector<ExecEntry> vector_execs();
std::vector<ExecEntry> reduce_sort_execs();
std::vector<ExecEntry> debug_execs();
/// The primitives of src/prims (prim_semantics.cpp, tl/npu/semantics.h).
std::vector<ExecEntry> prim_execs();

/// row_ptr of a region of rank other than 2.
uint8_t* row_ptr_nd(const TileRef& t, int64_t r);
/// Pointer to the first element of row `r` of the region viewed as rows x cols (ND buffers).
/// Inline for rank 2, nearly every tile: the ops call it once per row.
inline uint8_t* row_ptr(const TileRef& t, int64_t r) {
  if (t.extent.size() == 2)
    return t.base +
           ((t.start[0] + r) * t.strides[0] + t.start[1] * t.strides[1]) * dtype_bytes(t.dtype);
  return row_ptr_nd(t, r);
}
/// All region elements, row-major, widened to float (exact for every float dtype but fp64).
void load_f32(const TileRef& t, std::vector<float>& out);
/// Stores `in` into the region, rounding to the region's dtype with `m`.
void store_f32(const TileRef& t, const std::vector<float>& in, RoundMode m = RoundMode::Rint);
/// All region elements as integers (floats truncated).
void load_i64(const TileRef& t, std::vector<int64_t>& out);
/// Stores integers, wrapping to the region's integer dtype.
void store_i64(const TileRef& t, const std::vector<int64_t>& in);
/// Raw bytes of the region, row-major (for dtype-agnostic movement).
void load_bytes(const TileRef& t, std::vector<uint8_t>& out);
void store_bytes(const TileRef& t, const std::vector<uint8_t>& in);

RoundMode parse_round_mode(const std::string& s);

/// Builds the per-op tables (semantics, stale-data rules) and checks them against the
/// registry: a gap is a registration error (tl::InternalError) when the first kernel is built.
void check_op_tables();

/// Element offset of buffer element `idx` (absolute indices) in the storage layout of t's
/// memory (ND for GM/UB, NZ/ZZ/ZN fractals on the cube side). Defined in exec_move.cpp.
int64_t layout_offset(const TileRef& t, const std::vector<int64_t>& idx);
/// The same for `idx` of t's rank, and in `run` how many elements from there along the last
/// dimension are contiguous in storage.
int64_t storage_offset(const TileRef& t, const int64_t* idx, int64_t* run);
/// The separable parts of t's layout (a matrix: rank >= 2): out[i] = storage_offset of `base`
/// with its column (col) or row index advanced by i, minus that of `base`, for i < n. Every
/// layout is row part + column part + matrix part, so copies compute these tables once
/// instead of storage_offset per element or row.
void offset_parts(const TileRef& t, const int64_t* base, bool col, int64_t n, int64_t* out);

/// True when the environment variable TL_NPU_PLAIN_PATHS is set to anything but "" or "0" at
/// the start of the current launch: the op semantics then take their plain element-by-element
/// paths instead of the batched ones, so a test can compare the two bit for bit
/// (tests/npu/fast_paths_test.cpp). Read once per launch (refresh_plain_paths, launch.cpp).
bool plain_paths();
void refresh_plain_paths();

}  // namespace tl::npu
