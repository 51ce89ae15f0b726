// T.tile.mul_add_dst (AscendC MulAddDst): dst = src0 * src1 + dst, element by element, on the
// AIV's V pipe; dst is both the accumulator read and the result written. TileLang-Ascend's
// causal_conv1d and gated-delta-rule kernels accumulate a filter tap per step with it. Half and
// float on A2/A3 ("MulAddDst" API page; the integer types it lists are the 200I/500 A2's). The
// three operands have one dtype and one element count; the op may run in place (dst the same
// region as a source) but no operand may partly overlap another, as for every vector op.
// The product and the sum are computed in fp32 and rounded once to the tile's dtype, as the
// virtual NPU's other float vector ops are (docs/virtual_npu.md).
//
// Everything about the primitive is in this file: its definition, verifier rule, virtual-NPU
// semantics and stale-data rule (docs/architecture.md, "The prims layer"), and its C++ DSL call
// T::tile::mul_add_dst (tl/lang.h); the Python T.tile.mul_add_dst is generated from the
// registry. The AscendC emitter writes AscendC::MulAddDst (src/ascendc/emit_vector.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "prim.h"
#include "tl/lang.h"
#include "tl/npu/numerics.h"

namespace tl {
namespace {

constexpr const char* kNames[] = {"dst", "src0", "src1"};

// ---- The verifier rule: what can be judged before the kernel runs --------------------------

void verify(const TileOpNode& n, VerifyContext& ctx) {
  const TileArg* ops[3];
  for (int i = 0; i < 3; ++i) {
    ops[i] = op_operand(n, kNames[i]);
    if (!ops[i] || !ops[i]->is_region()) return;
  }
  const DType dt = ops[0]->region.buffer->dtype;
  if (!prims::dtype_on_target(n, ctx, dt)) return;
  const auto nd = prims::const_elems(ops[0]->region);
  for (int i = 1; i < 3; ++i) {
    const DType st = ops[i]->region.buffer->dtype;
    if (st != dt) {
      ctx.error(
          n, kNames[i], "operand-dtype-mismatch",
          fmt::format("expected the dtype of 'dst' ({}), got {}", dtype_name(dt), dtype_name(st)));
      continue;
    }
    const auto ns = prims::const_elems(ops[i]->region);
    if (nd && ns && *nd != *ns)
      ctx.error(n, kNames[i], "operand-shape-mismatch",
                fmt::format("'{}' has {} elements, 'dst' {}: the op pairs them one to one",
                            kNames[i], *ns, *nd));
  }
}

// ---- The virtual NPU ------------------------------------------------------------------------

float load(DType t, const uint8_t* p) {
  if (t == DType::Float32) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return npu::f16_to_f32(h);
}

void store(DType t, uint8_t* p, float v) {
  if (t == DType::Float32) {
    std::memcpy(p, &v, 4);
    return;
  }
  const uint16_t h = npu::f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

/// Calls f(pd, pa, pb) for the element pointers of each flat index i, in order. The operands
/// pair by flat index but may differ in shape ([1, 64] and [64]), so they are walked in runs of
/// the gcd of their last extents: a run never crosses a row of any operand, so PrimTile::at (a
/// division per dimension) is taken once per run and the run steps by each last stride. In
/// fused_sigmoid_gating_delta_rule_varlen.py at() per element was 19 % of the process's samples
/// (docs/tla_corpus.md, corpus3 round).
template <class F>
void for_each_element(const npu::PrimTile& d, const npu::PrimTile& a, const npu::PrimTile& b,
                      F&& f) {
  const int64_t n = d.numel();
  if (n == 0) return;
  auto last = [](const npu::PrimTile& t) {
    return t.extent.empty() ? int64_t{1} : t.extent.back();
  };
  auto step = [](const npu::PrimTile& t) {
    return (t.strides.empty() ? int64_t{1} : t.strides.back()) * dtype_bytes(t.dtype);
  };
  const int64_t run = std::max<int64_t>(1, std::gcd(std::gcd(last(d), last(a)), last(b)));
  const int64_t sd = step(d), sa = step(a), sb = step(b);
  for (int64_t i0 = 0; i0 < n; i0 += run) {
    uint8_t* pd = d.at(i0);
    const uint8_t *pa = a.at(i0), *pb = b.at(i0);
    for (int64_t k = 0; k < run; ++k, pd += sd, pa += sa, pb += sb) f(pd, pa, pb);
  }
}

void check_shapes(npu::PrimCall& c, const npu::PrimTile& d, const npu::PrimTile& a,
                  const npu::PrimTile& b) {
  for (const npu::PrimTile* s : {&a, &b}) {
    if (s->numel() != d.numel())
      c.fail(fmt::format("T.tile.mul_add_dst: '{}' has {} elements, 'dst' {}",
                         s == &a ? "src0" : "src1", s->numel(), d.numel()));
    if (s->dtype != d.dtype)
      c.fail(fmt::format("T.tile.mul_add_dst: '{}' is {}, 'dst' {}; expected one dtype",
                         s == &a ? "src0" : "src1", dtype_name(s->dtype), dtype_name(d.dtype)));
  }
}

void exec(npu::PrimCall& c) {
  const npu::PrimTile d = c.tile("dst"), a = c.tile("src0"), b = c.tile("src1");
  check_shapes(c, d, a, b);
  if (d.dtype != DType::Float32 && d.dtype != DType::Float16)
    c.fail(fmt::format("T.tile.mul_add_dst: dtype {} (expected float16 or float32)",
                       dtype_name(d.dtype)));
  // Every source element is read before its destination element is written: in place (dst
  // the same region as a source) reads the old value, as the chip's one pass does.
  const DType t = d.dtype;
  for_each_element(d, a, b, [t](uint8_t* pd, const uint8_t* pa, const uint8_t* pb) {
    store(t, pd, load(t, pa) * load(t, pb) + load(t, pd));
  });
}

/// The stale-data rule: an element of dst is valid after the op only if it was valid before
/// and both source elements it pairs with are (shadow byte 0 = valid; otherwise the first
/// invalid origin, dst's own first, is kept).
void stale(npu::PrimCall& c) {
  const npu::PrimTile d = c.tile("dst"), a = c.tile("src0"), b = c.tile("src1");
  if (d.numel() != a.numel() || d.numel() != b.numel() || d.dtype != a.dtype || d.dtype != b.dtype)
    return;  // exec reports it
  const int64_t es = dtype_bytes(d.dtype);
  for_each_element(d, a, b, [es](uint8_t* pd, const uint8_t* pa, const uint8_t* pb) {
    for (int64_t k = 0; k < es; ++k)
      if (pd[k] == 0) pd[k] = pa[k] != 0 ? pa[k] : pb[k];
  });
}

prims::Prim definition() {
  OpDef d;
  d.name = "tile.mul_add_dst";
  d.unit = OpUnit::Vector;
  d.operands = {{"dst", OperandKind::Tile, Access::ReadWrite},
                {"src0", OperandKind::Tile, Access::Read},
                {"src1", OperandKind::Tile, Access::Read}};
  d.pipe = [](const TileOpNode&, const Target&) { return Pipe::V; };
  d.dtypes = only_dtypes({DType::Float16, DType::Float32});
  d.cost = CostClass::VecSimple;
  d.rows = RowMap::Elementwise;     // element i of each operand pairs with element i of dst
  d.overlap = Overlap::SameRegion;  // in place, or no overlap (ASCENDC_API.md, address overlap)
  // A stale tail of a source has no value that leaves dst unchanged for every dst (0 does only
  // for finite values), so no identity: mask_tails does not pad it.
  d.identity = std::nullopt;
  d.binop = std::nullopt;
  d.granular_count = false;
  d.flushes_subnormals = false;
  d.atomic = false;
  d.developer_only = false;
  d.summary = "dst = src0 * src1 + dst";
  npu::PrimSemantics sem;
  sem.exec = exec;
  sem.stale_kind = npu::PrimSemantics::Stale::Custom;
  sem.stale = stale;
  return {std::move(d), verify, sem};
}

const prims::Registrar registrar(definition());

}  // namespace

void T::tile::mul_add_dst(TileArg dst, TileArg src0, TileArg src1, const Loc& l) {
  emit(prims::handle("tile.mul_add_dst"), {std::move(dst), std::move(src0), std::move(src1)}, {},
       l);
}

}  // namespace tl
