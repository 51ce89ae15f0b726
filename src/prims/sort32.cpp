// T.tile.sort32 (AscendC Sort32): each of `repeat_times` repeats sorts the next 32 scores of src
// (float32) with the next 32 uint32 indices of `index` into 32 (score, index) entries of 8 bytes
// in dst: the score in the low 4 bytes, the index's bits in the high 4 ("Sort32" API page,
// atlasascendc_api_07_0231). Order: descending score; equal scores keep their input order
// (the page: "score[j] is selected first when i > j"); a NaN sorts first, as the sort family of
// src/npu/exec_reduce_sort.cpp orders it. Repeats are sorted independently ("data of different
// iterations is not sorted together"). The signature is TileLang-Ascend's
// T.tile.sort32(dst, src0, src1) with the repeat count explicit.
//
// It is the first step of every sort the AscendC backend emits (src/ascendc/emit_sort.cpp:
// ArithProgression of the positions, Sort32, MrgSort rounds), and the AscendC CPU model runs
// the emitted Sort32 through it. float16 scores (whose entries keep 2 reserved bytes) are not
// modelled: the tile-level sorts of fp16 sort in fp32 (exec_reduce_sort.cpp).
//
// Everything about the primitive is in this file: definition, verifier rule, virtual-NPU
// semantics and stale-data rule (docs/architecture.md, "The prims layer"). C++ kernels emit it
// by name, T::emit("tile.sort32", {dst, src, index, repeat_times}); Python's T.tile.sort32 is
// generated from the registry.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "prim.h"

namespace tl {
namespace {

constexpr int64_t kPerRepeat = 32;   // scores per repeat
constexpr int64_t kMaxRepeat = 255;  // repeatTimes in [0, 255]

/// "src has 40 elements; 2 repeats read 64", or empty: what each operand must hold.
std::string size_error(std::string_view operand, int64_t have, int64_t repeat) {
  const int64_t need = (operand == "dst" ? 2 : 1) * repeat * kPerRepeat;
  if (have >= need) return {};
  return fmt::format("{} repeats {} {} elements of {}, which has {}", repeat,
                     operand == "dst" ? "write" : "read", need, operand, have);
}

// ---- The verifier rule ------------------------------------------------------------------------

void verify(const TileOpNode& n, VerifyContext& ctx) {
  const TileArg* dst = op_operand(n, "dst");
  const TileArg* src = op_operand(n, "src");
  const TileArg* idx = op_operand(n, "index");
  if (!dst || !src || !idx || !dst->is_region() || !src->is_region() || !idx->is_region()) return;
  for (const auto& [name, a, want] :
       {std::tuple{"dst", dst, DType::Float32}, std::tuple{"src", src, DType::Float32},
        std::tuple{"index", idx, DType::UInt32}})
    if (a->region.buffer->dtype != want) {
      ctx.error(n, name, "sort32-dtype",
                fmt::format("T.tile.sort32 takes {} {}, got {}", dtype_name(want), name,
                            dtype_name(a->region.buffer->dtype)));
      return;
    }
  const auto repeat = prims::const_of(n, "repeat_times");
  if (!repeat) return;
  if (*repeat < 0 || *repeat > kMaxRepeat) {
    ctx.error(n, "repeat_times", "sort32-argument",
              fmt::format("repeat_times must be in [0, {}], got {}", kMaxRepeat, *repeat));
    return;
  }
  for (const auto& [name, a] :
       {std::pair{"dst", dst}, std::pair{"src", src}, std::pair{"index", idx}})
    if (auto have = prims::const_elems(a->region))
      if (auto e = size_error(name, *have, *repeat); !e.empty())
        ctx.error(n, name, "sort32-size", e);
}

// ---- The virtual NPU ------------------------------------------------------------------------

struct Entry {
  float score;
  uint32_t index;
  int64_t order;  // position in the repeat: equal scores keep it
};

bool before(const Entry& a, const Entry& b) {
  const bool an = std::isnan(a.score), bn = std::isnan(b.score);
  if (an != bn) return an;
  if (!an && a.score != b.score) return a.score > b.score;
  return a.order < b.order;
}

/// Checks the operands as the verifier does, for hand-built IR and dynamic repeat counts.
int64_t checked_repeat(npu::PrimCall& c, const npu::PrimTile& d, const npu::PrimTile& s,
                       const npu::PrimTile& i) {
  const int64_t repeat = c.scalar("repeat_times");
  if (repeat < 0 || repeat > kMaxRepeat)
    c.fail(
        fmt::format("T.tile.sort32: repeat_times must be in [0, {}], got {}", kMaxRepeat, repeat));
  if (d.dtype != DType::Float32 || s.dtype != DType::Float32 || i.dtype != DType::UInt32)
    c.fail(fmt::format("T.tile.sort32 takes float32 dst and src and uint32 index, got {}, {}, {}",
                       dtype_name(d.dtype), dtype_name(s.dtype), dtype_name(i.dtype)));
  for (const auto& [name, t] :
       {std::pair{"dst", &d}, std::pair{"src", &s}, std::pair{"index", &i}}) {
    if (!t->contiguous())
      c.fail(
          fmt::format("T.tile.sort32: operand '{}' ('{}') is not one contiguous run of its "
                      "buffer; Sort32 addresses its operands by offsets from their start",
                      name, t->buffer));
    if (auto e = size_error(name, t->numel(), repeat); !e.empty()) c.fail("T.tile.sort32: " + e);
  }
  return repeat;
}

void exec(npu::PrimCall& c) {
  const npu::PrimTile d = c.tile("dst"), s = c.tile("src"), ix = c.tile("index");
  const int64_t repeat = checked_repeat(c, d, s, ix);
  std::vector<Entry> e(kPerRepeat);
  std::vector<uint8_t> out(static_cast<size_t>(kPerRepeat * 8));
  for (int64_t r = 0; r < repeat; ++r) {
    for (int64_t j = 0; j < kPerRepeat; ++j) {
      std::memcpy(&e[j].score, s.at(r * kPerRepeat + j), 4);
      std::memcpy(&e[j].index, ix.at(r * kPerRepeat + j), 4);
      e[j].order = j;
    }
    std::stable_sort(e.begin(), e.end(), before);
    for (int64_t j = 0; j < kPerRepeat; ++j) {
      std::memcpy(d.at(r * 2 * kPerRepeat + 2 * j), &e[j].score, 4);
      std::memcpy(d.at(r * 2 * kPerRepeat + 2 * j + 1), &e[j].index, 4);
    }
  }
}

/// The stale-data rule (on the shadow memory): every entry of a repeat may come from any score
/// and index of the repeat, so each is as valid as the first invalid byte among them.
void stale(npu::PrimCall& c) {
  const npu::PrimTile d = c.tile("dst"), s = c.tile("src"), ix = c.tile("index");
  const int64_t repeat = c.scalar("repeat_times");
  if (repeat < 0 || repeat > kMaxRepeat || d.numel() < 2 * repeat * kPerRepeat ||
      s.numel() < repeat * kPerRepeat || ix.numel() < repeat * kPerRepeat)
    return;  // the semantics report it
  for (int64_t r = 0; r < repeat; ++r) {
    uint8_t o = 0;
    for (int64_t j = 0; j < kPerRepeat && !o; ++j)
      for (int64_t b = 0; b < 4 && !o; ++b)
        o = s.at(r * kPerRepeat + j)[b] ? s.at(r * kPerRepeat + j)[b]
                                        : ix.at(r * kPerRepeat + j)[b];
    for (int64_t k = 0; k < 2 * kPerRepeat; ++k) std::memset(d.at(r * 2 * kPerRepeat + k), o, 4);
  }
}

prims::Prim definition() {
  OpDef d;
  d.name = "tile.sort32";
  d.unit = OpUnit::Vector;
  d.operands = {{"dst", OperandKind::Tile, Access::Write},
                {"src", OperandKind::Tile, Access::Read},
                {"index", OperandKind::Tile, Access::Read},
                {"repeat_times", OperandKind::Scalar, Access::Read}};
  d.pipe = [](const TileOpNode&, const Target&) { return Pipe::V; };
  // The dtype of the scores (and dst); the index is uint32 (the rule checks it).
  d.dtypes = only_dtypes({DType::Float32});
  d.cost = CostClass::VecSort;
  d.rows = RowMap::Whole;     // position-dependent: never split by rows
  d.overlap = Overlap::None;  // dst is twice the size of its sources and laid out differently
  d.identity = std::nullopt;
  d.binop = std::nullopt;
  d.granular_count = false;
  d.flushes_subnormals = false;
  d.atomic = false;
  d.developer_only = false;
  d.summary =
      "each repeat sorts 32 scores of src with their uint32 indices into 8-byte (score, index) "
      "entries of dst, descending (equal scores in input order)";
  npu::PrimSemantics sem;
  sem.exec = exec;
  sem.stale_kind = npu::PrimSemantics::Stale::Custom;
  sem.stale = stale;
  return {std::move(d), verify, sem};
}

const prims::Registrar registrar(definition());

}  // namespace

}  // namespace tl
