// T.tile.brcb (AscendC Brcb): each of `repeat_times` repeats takes the next 8 elements of src and
// fills 8 32-byte blocks of dst, one element broadcast to each block (16 copies of an fp16
// element, 8 of an fp32 one). Block k of repeat r starts at block r * dst_repeat_stride +
// k * dst_blk_stride of dst (strides in 32-byte blocks; a block stride of 0 is taken as 1, as
// AscendC's BrcbRepeatParams does); blocks not reached keep their contents. The usual use turns a
// column of per-row values into one 32-byte block per row, for ops that take a block-aligned
// row operand. It is position-dependent: which dst elements an src element reaches depends on its
// position, so developer mode never splits its tiles by rows (RowMap::Whole). The signature is
// TileLang-Ascend's T.tile.brcb(dst, src, repeat_times, dst_blk_stride, dst_repeat_stride).
//
// Everything about the primitive is in this file: its definition, verifier rule, virtual-NPU
// semantics (and so its stale-data rule: it moves bytes) and its C++ DSL call, declared in
// tl/lang.h (docs/architecture.md, "The prims layer").
#include <fmt/format.h>

#include <cstring>

#include "prim.h"
#include "tl/lang.h"

namespace tl {
namespace {

constexpr int64_t kBlockBytes = 32;    // one datablock
constexpr int64_t kPerRepeat = 8;      // src elements (and dst blocks) per repeat
constexpr int64_t kMaxRepeat = 255;    // repeat_times is a uint8_t
constexpr int64_t kMaxStride = 65535;  // the strides are uint16_t

const OpDef& brcb_op() {
  static const OpDef& d = prims::handle("tile.brcb");
  return d;
}

/// Elements of dst the op reaches: up to the end of its last block (0 for no repeat). The
/// arguments are in range, so nothing overflows.
int64_t dst_elems_needed(int64_t repeat, int64_t blk_stride, int64_t rep_stride, int64_t es) {
  if (repeat == 0) return 0;
  const int64_t blk = blk_stride == 0 ? 1 : blk_stride;
  const int64_t last_block = (repeat - 1) * rep_stride + (kPerRepeat - 1) * blk;
  return (last_block + 1) * (kBlockBytes / es);
}

/// "repeat_times must be in [0, 255], got 300", or empty.
std::string range_error(std::string_view name, int64_t v) {
  const int64_t hi = name == "repeat_times" ? kMaxRepeat : kMaxStride;
  if (v >= 0 && v <= hi) return {};
  return fmt::format("{} must be in [0, {}], got {}", name, hi, v);
}

// ---- The verifier rule: what can be judged before the kernel runs --------------------------

void verify(const TileOpNode& n, VerifyContext& ctx) {
  const TileArg* dst = op_operand(n, "dst");
  const TileArg* src = op_operand(n, "src");
  if (!dst || !src || !dst->is_region() || !src->is_region()) return;
  const DType dt = dst->region.buffer->dtype, st = src->region.buffer->dtype;
  if (!prims::dtype_on_target(n, ctx, dt)) return;
  if (st != dt) {
    ctx.error(
        n, "src", "operand-dtype-mismatch",
        fmt::format("expected the dtype of 'dst' ({}), got {}", dtype_name(dt), dtype_name(st)));
    return;
  }
  const auto repeat = prims::const_of(n, "repeat_times"),
             blk = prims::const_of(n, "dst_blk_stride"),
             rep = prims::const_of(n, "dst_repeat_stride");
  bool in_range = true;
  for (const auto& [name, v] : {std::pair{"repeat_times", repeat}, std::pair{"dst_blk_stride", blk},
                                std::pair{"dst_repeat_stride", rep}})
    if (v && !range_error(name, *v).empty()) {
      ctx.error(n, name, "brcb-argument", range_error(name, *v));
      in_range = false;
    }
  if (!in_range || !repeat) return;
  if (auto ns = prims::const_elems(src->region); ns && *ns < *repeat * kPerRepeat)
    ctx.error(n, "src", "brcb-src-size",
              fmt::format("{} repeats read {} elements of src, which has {}", *repeat,
                          *repeat * kPerRepeat, *ns));
  if (!blk || !rep) return;
  const int64_t need = dst_elems_needed(*repeat, *blk, *rep, dtype_bytes(dt));
  if (auto nd = prims::const_elems(dst->region); nd && *nd < need)
    ctx.error(n, "dst", "brcb-dst-size",
              fmt::format("{} repeats with dst_blk_stride {} and dst_repeat_stride {} write up "
                          "to element {} of dst, which has {}",
                          *repeat, *blk, *rep, need, *nd));
}

// ---- The virtual NPU ------------------------------------------------------------------------

/// Also the stale-data rule (PrimSemantics::Stale::MovesBytes): on the shadow memory the same
/// moves carry validity, so a dst block is as valid as the src element broadcast into it.
void exec(npu::PrimCall& c) {
  const npu::PrimTile d = c.tile("dst"), s = c.tile("src");
  const int64_t repeat = c.scalar("repeat_times"), blk = c.scalar("dst_blk_stride"),
                rep = c.scalar("dst_repeat_stride");
  for (const auto& [name, v] : {std::pair{"repeat_times", repeat}, std::pair{"dst_blk_stride", blk},
                                std::pair{"dst_repeat_stride", rep}})
    if (auto e = range_error(name, v); !e.empty()) c.fail("T.tile.brcb: " + e);
  if (d.dtype != s.dtype)
    c.fail(fmt::format("T.tile.brcb: dst is {} and src {}; expected one dtype", dtype_name(d.dtype),
                       dtype_name(s.dtype)));
  for (const npu::PrimTile* t : {&d, &s})
    if (!t->contiguous())
      c.fail(
          fmt::format("T.tile.brcb: operand '{}' ('{}') is not one contiguous run of its "
                      "buffer; brcb addresses its operands by offsets from their start",
                      t == &d ? "dst" : "src", t->buffer));
  const int64_t es = dtype_bytes(d.dtype), per_block = kBlockBytes / es;
  if (s.numel() < repeat * kPerRepeat)
    c.fail(fmt::format("T.tile.brcb: {} repeats read {} elements of src, which has {}", repeat,
                       repeat * kPerRepeat, s.numel()));
  const int64_t need = dst_elems_needed(repeat, blk, rep, es);
  if (d.numel() < need)
    c.fail(
        fmt::format("T.tile.brcb: {} repeats with dst_blk_stride {} and dst_repeat_stride {} "
                    "write up to element {} of dst, which has {}",
                    repeat, blk, rep, need, d.numel()));
  const int64_t stride = blk == 0 ? 1 : blk;
  for (int64_t r = 0; r < repeat; ++r)
    for (int64_t k = 0; k < kPerRepeat; ++k) {
      const uint8_t* v = s.at(r * kPerRepeat + k);
      const int64_t first = (r * rep + k * stride) * per_block;
      for (int64_t e = 0; e < per_block; ++e) std::memcpy(d.at(first + e), v, es);
    }
}

prims::Prim definition() {
  OpDef d;
  d.name = "tile.brcb";
  d.unit = OpUnit::Vector;
  d.operands = {{"dst", OperandKind::Tile, Access::Write},
                {"src", OperandKind::Tile, Access::Read},
                {"repeat_times", OperandKind::Scalar, Access::Read},
                {"dst_blk_stride", OperandKind::Scalar, Access::Read},
                {"dst_repeat_stride", OperandKind::Scalar, Access::Read}};
  d.pipe = [](const TileOpNode&, const Target&) { return Pipe::V; };
  // AscendC Brcb's types on A2/A3; the 3510 (Ascend 950) adds the 1- and 8-byte ones.
  d.dtypes = only_dtypes({DType::Int16, DType::UInt16, DType::Int32, DType::UInt32, DType::Float16,
                          DType::BFloat16, DType::Float32});
  d.dtypes.per_arch = {
      {Arch::Npu3510,
       {DType::Int8, DType::UInt8, DType::Int16, DType::UInt16, DType::Int32, DType::UInt32,
        DType::Float16, DType::BFloat16, DType::Float32, DType::Int64, DType::UInt64}}};
  d.cost = CostClass::VecSimple;
  d.rows = RowMap::Whole;     // position-dependent: never split by rows
  d.overlap = Overlap::None;  // AscendC: src and dst must not share an address
  // It moves elements: no element math, no reduction identity, no partial counts.
  d.identity = std::nullopt;
  d.binop = std::nullopt;
  d.granular_count = false;
  d.flushes_subnormals = false;
  d.atomic = false;
  d.developer_only = false;
  d.summary =
      "each of 8 * repeat_times src elements broadcast to one 32-byte block of dst (block "
      "stride dst_blk_stride, repeat stride dst_repeat_stride)";
  npu::PrimSemantics sem;
  sem.exec = exec;
  sem.stale_kind = npu::PrimSemantics::Stale::MovesBytes;
  return {std::move(d), verify, sem};
}

const prims::Registrar registrar(definition());

}  // namespace

void T::tile::brcb(TileArg dst, TileArg src, Expr repeat_times, Expr dst_blk_stride,
                   Expr dst_repeat_stride, const Loc& l) {
  emit(brcb_op(), {std::move(dst), std::move(src), repeat_times, dst_blk_stride, dst_repeat_stride},
       {}, l);
}

}  // namespace tl
