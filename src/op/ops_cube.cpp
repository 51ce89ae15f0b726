// Cube primitives: T.gemm_v0 (A, B in L1 -> C in L0C, loads L0A/L0B itself) and T.mma
// (L0A x L0B -> L0C, one Mmad). Their dtypes come from the target's Mmad table (rule_gemm_v0,
// rule_mma); gemm_v0's expansion is TileLang-Ascend's template, as data.
#include "op_families.h"
#include "op_rules.h"

namespace tl::ops {
namespace {

/// M, K of A and K, N of B as gemm_v0 reads them (transpose flags applied).
struct GemmDims {
  int64_t m, k, n;
};
GemmDims gemm_dims(const TileOpNode& n, const std::vector<std::vector<int64_t>>& ext) {
  auto rows = [](const std::vector<int64_t>& e) {
    int64_t r = 1;
    for (size_t i = 0; i + 1 < e.size(); ++i) r *= e[i];
    return r;
  };
  auto cols = [](const std::vector<int64_t>& e) { return e.empty() ? int64_t{1} : e.back(); };
  bool ta = n.attr_bool("transpose_A"), tb = n.attr_bool("transpose_B");
  return {ta ? cols(ext[0]) : rows(ext[0]), ta ? rows(ext[0]) : cols(ext[0]),
          tb ? rows(ext[1]) : cols(ext[1])};
}
int64_t align_up(int64_t v, int64_t a) {
  return (v + a - 1) / a * a;
}
int64_t elem_bytes(const TileOpNode& n) {
  return dtype_bytes(n.args[0].region.buffer->dtype);
}
/// A in L0A: M padded to 16 rows, K to whole 32-byte fractal rows (zZ fractals).
int64_t l0a_bytes(const TileOpNode& n, const std::vector<std::vector<int64_t>>& ext) {
  GemmDims d = gemm_dims(n, ext);
  int64_t es = elem_bytes(n);
  return align_up(d.m, 16) * align_up(d.k, 32 / es) * es;
}
/// B in L0B: K padded to whole 32-byte fractal rows, N to 16 (nZ fractals).
int64_t l0b_bytes(const TileOpNode& n, const std::vector<std::vector<int64_t>>& ext) {
  GemmDims d = gemm_dims(n, ext);
  int64_t es = elem_bytes(n);
  return align_up(d.k, 32 / es) * align_up(d.n, 16) * es;
}

/// TileLang-Ascend's gemm_v0 template: PipeBarrier<PIPE_ALL>; LoadData A -> L0A and B -> L0B
/// at offset 0 (MTE1); PipeBarrier<PIPE_ALL>; Mmad (M); PipeBarrier<PIPE_ALL>.
std::vector<InstrSpec> gemm_v0_expansion() {
  using T = InstrSpec::Touch;
  InstrSpec barrier{.kind = InstrSpec::Kind::BarrierAll, .name = "gemm_v0.barrier"};
  InstrSpec load{
      .name = "gemm_v0.load",
      .pipe = Pipe::MTE1,
      .cost = CostClass::CubeLoad,
      .touches = {T{.operand = 0}, T{.operand = 1},
                  T{.access = Access::Write, .scratch = MemScope::L0A, .bytes = l0a_bytes},
                  T{.access = Access::Write, .scratch = MemScope::L0B, .bytes = l0b_bytes},
                  T{.operand = 3}}};  // the scalar unit evaluates `init` before issuing
  InstrSpec mmad{.name = "gemm_v0.mmad",
                 .pipe = Pipe::M,
                 .cost = CostClass::Mmad,
                 .touches = {T{.scratch = MemScope::L0A, .bytes = l0a_bytes},
                             T{.scratch = MemScope::L0B, .bytes = l0b_bytes},
                             T{.operand = 2, .access = Access::ReadWrite}}};
  return {barrier, load, barrier, mmad, barrier};
}

}  // namespace

void register_cube_ops(OpList& ops) {
  ops.push_back(no_element_math({
      .name = "gemm_v0",
      .unit = OpUnit::Cube,
      .operands = {in("A"), in("B"), inout("C"), optional(scalar("init"))},
      .attrs = {{"transpose_A", false, {}}, {"transpose_B", false, {}}},
      .pipe = on(Pipe::M),
      .verify = rules::rule_gemm_v0,
      .dtypes = dtypes_from_target("mma_dtypes"),
      .cost = CostClass::Mmad,
      .rows = RowMap::Whole,
      .expansion = gemm_v0_expansion(),
      .atomic = false,
      .developer_only = false,
      .summary = "C (L0C) = [C +] op(A) x op(B), A and B in L1; init clears C first",
  }));
  ops.push_back(no_element_math({
      .name = "gemm",
      .unit = OpUnit::Cube,
      .operands = {in("A"), in("B"), inout("C"), optional(scalar("init"))},
      .attrs = {{"transpose_A", false, {}}, {"transpose_B", false, {}}},
      .pipe = on(Pipe::M),
      .verify = rules::rule_gemm_v0,
      .dtypes = dtypes_from_target("mma_dtypes"),
      .cost = CostClass::Mmad,
      .rows = RowMap::Whole,
      .atomic = false,
      .developer_only = true,
      .summary =
          "developer mode: C [+]= op(A) x op(B) on compiler-placed tiles (lowered to L1 -> L0A/L0B "
          "loads and Mmads, never gemm_v0)",
  }));
  ops.push_back(no_element_math({
      .name = "mma",
      .unit = OpUnit::Cube,
      .operands = {in("A"), in("B"), inout("C"), optional(scalar("init"))},
      .attrs = {},
      .pipe = on(Pipe::M),
      .verify = rules::rule_mma,
      .dtypes = dtypes_from_target("mma_dtypes"),
      .cost = CostClass::Mmad,
      .rows = RowMap::Whole,
      .atomic = false,
      .developer_only = false,
      .summary = "C (L0C) = [C +] A (L0A) x B (L0B); init clears C first",
  }));
  // AscendC InitConstValue (atlasascendc_api_07_0236): fills A1/B1 (L1) or A2/B2 (L0A/L0B)
  // with a constant, issued on MTE2 on A2. A whole tile here: the chip fills whole 32 B (L1)
  // or 512 B (L0A/L0B) blocks from an aligned start, which a whole planned tile is.
  ops.push_back(no_element_math({
      .name = "init_const",
      .unit = OpUnit::Cube,
      .operands = {out("dst"), scalar("value")},
      .attrs = {},
      .pipe = on(Pipe::MTE2),
      .verify = rules::rule_init_const,
      .dtypes = only_dtypes({DType::Float16, DType::BFloat16, DType::Int16, DType::UInt16,
                             DType::Float32, DType::Int32, DType::UInt32}),
      // No published timing: costed as an on-chip write of the tile's bytes (the MTE1 load rate).
      .cost = CostClass::CubeLoad,
      .rows = RowMap::Whole,
      .atomic = false,
      .developer_only = false,
      .summary = "dst (a whole L1 / L0A / L0B tile) = value (InitConstValue; clears a partial "
                 "tile's stale tail)",
  }));
}

}  // namespace tl::ops
