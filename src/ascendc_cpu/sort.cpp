// The AscendC CPU model's gather, sort and index-generation calls and its atomic mode
// (ascendc_cpu/model_sort.h): each call is one virtual-NPU tile op of the same meaning over
// buffers at the bytes the call addresses, as ops.cpp does for the vector calls:
//   Gather -> tile.gather, GatherMask (built-in pattern) -> tile.gather_mask,
//   (ArithProgression / CreateVecIndex: progression.cpp), Sort32 -> tile.sort32 (the
//   prim of src/prims/sort32.cpp), MrgSort -> merge_sort, SetAtomicAdd -> the next copies to
//   GM are the VM's atomic_add (ops.cpp, copy_out).
// The parameters' meaning is the public AscendC documentation's (asc-devkit pages Gather,
// GatherMask, ArithProgression, CreateVecIndex, Sort32, MrgSort, SetAtomicAdd); what a call may
// not do there is an error here, named.
#include <fmt/format.h>

#include <cstring>

#include "ascendc_cpu/model_sort.h"
#include "internal.h"

namespace ascendc_cpu {

void gather(const Where& w, const LocalRef& dst, const LocalRef& src, const LocalRef& offsets,
            uint32_t base, int64_t count) {
  check_count(w, count);
  if (count == 0) return;
  if (offsets.dtype != DType::UInt32) fail(w, "srcOffset must be a LocalTensor<uint32_t>");
  if (dst.dtype != src.dtype) fail(w, "dst and src differ in dtype");
  check_fits(w, offsets, count, "srcOffset");
  // The chip reads only the addressed elements of src, which has no size of its own here: the
  // operand reaches the furthest one (read from UB as the instruction will read it), so the
  // trace records what is read and the VM's op checks every offset against it.
  CoreCtx& c = ctx(w);
  const auto& ub = c.launch->direct.memory(c.kind, c.vid, offsets.scope);
  int64_t furthest = 0;
  for (int64_t i = 0; i < count; ++i) {
    uint32_t off = 0;
    const int64_t at = offsets.offset + 4 * i;
    if (at + 4 > static_cast<int64_t>(ub.size())) fail(w, "srcOffset past the memory's end");
    std::memcpy(&off, ub.data() + at, 4);
    furthest = std::max<int64_t>(furthest, static_cast<int64_t>(base) + off);
  }
  const int64_t es = tl::dtype_bytes(src.dtype);
  const int64_t src_elems = std::min(furthest / es + 1, src.count);
  exec_op(w, "tile.gather",
          {flat(w, dst, count, "dst"), flat(w, src, std::max<int64_t>(src_elems, 1), "src"),
           flat(w, offsets, count, "srcOffset"), tl::Expr(static_cast<int64_t>(base))});
}

void gather_mask(const Where& w, const LocalRef& dst, const LocalRef& src, int pattern,
                 int64_t repeat, int64_t src_blk_stride, int64_t src_rep_stride) {
  static const char* patterns[] = {"",      "P0101", "P1010", "P0001",
                                   "P0010", "P0100", "P1000", "P1111"};
  if (pattern < 1 || pattern > 7)
    fail(w, fmt::format("src1Pattern {} is not a built-in pattern (1-7)", pattern));
  if (repeat < 0 || repeat > 255)
    fail(w, fmt::format("repeatTimes {} is outside [0, 255]", repeat));
  if (src_blk_stride != 1 || src_rep_stride != 8)
    fail(w, fmt::format("src0BlockStride {} / src0RepeatStride {}: only contiguous repeats (1, "
                        "8) are modelled",
                        src_blk_stride, src_rep_stride));
  if (dst.dtype != src.dtype) fail(w, "dst and src0 differ in dtype");
  if (repeat == 0) return;
  const int64_t es = tl::dtype_bytes(src.dtype), n = repeat * 256 / es;
  const int64_t per4 = pattern <= 2 ? 2 : pattern == 7 ? 4 : 1;  // kept of every four
  exec_op(w, "tile.gather_mask", {flat(w, dst, n / 4 * per4, "dst"), flat(w, src, n, "src0")},
          {{"pattern", std::string(patterns[pattern])}});
}

void sort32(const Where& w, const LocalRef& dst, const LocalRef& src, const LocalRef& index,
            int64_t repeat) {
  if (repeat < 0 || repeat > 255) fail(w, fmt::format("repeatTime {} is outside [0, 255]", repeat));
  if (src.dtype != DType::Float32 || dst.dtype != DType::Float32)
    fail(w, "only float scores are modelled (half entries keep 2 reserved bytes)");
  if (index.dtype != DType::UInt32) fail(w, "src1 must be a LocalTensor<uint32_t>");
  if (repeat == 0) return;
  exec_op(w, "tile.sort32",
          {flat(w, dst, repeat * 64, "dst"), flat(w, src, repeat * 32, "src0"),
           flat(w, index, repeat * 32, "src1"), tl::Expr(repeat)});
}

void mrg_sort(const Where& w, const LocalRef& dst, const LocalRef q[4], const uint16_t lens[4],
              int valid_bit, int64_t repeat, bool exhausted_suspension) {
  int queues = 0;
  if (valid_bit == 3)
    queues = 2;
  else if (valid_bit == 7)
    queues = 3;
  else if (valid_bit == 15)
    queues = 4;
  else
    fail(w, fmt::format("validBit {}: 3, 7 or 15 (two to four queues)", valid_bit));
  if (repeat != 1) fail(w, fmt::format("repeatTime {}: only 1 is modelled", repeat));
  if (exhausted_suspension)
    fail(w,
         "isExhaustedSuspension = true is not modelled (the merge stops at the first empty "
         "queue)");
  if (dst.dtype != DType::Float32) fail(w, "only float entries are modelled");
  std::vector<tl::TileArg> args;
  int64_t total = 0;
  for (int i = 0; i < queues; ++i) {
    if (lens[i] > 4095 || lens[i] == 0)
      fail(w, fmt::format("elementCountList[{}] = {}: 1 to 4095 entries are modelled", i, lens[i]));
    if (q[i].dtype != DType::Float32) fail(w, "only float entries are modelled");
    total += lens[i];
  }
  args.push_back(flat(w, dst, 2 * total, "dst"));
  static const char* names[] = {"src1", "src2", "src3", "src4"};
  for (int i = 0; i < queues; ++i) args.push_back(flat(w, q[i], 2 * int64_t{lens[i]}, names[i]));
  exec_op(w, "merge_sort", std::move(args));
}

void copy_masked(const Where& w, const LocalRef& dst, const LocalRef& src, uint64_t mask,
                 int64_t repeat, int64_t dst_blk, int64_t src_blk, int64_t dst_rep,
                 int64_t src_rep) {
  const int64_t es = tl::dtype_bytes(dst.dtype), lanes = 256 / es, per_block = 32 / es;
  if (dst.dtype != src.dtype) fail(w, "dst and src differ in dtype");
  if (repeat < 0 || repeat > 255) fail(w, fmt::format("repeatTime {} is outside [0, 255]", repeat));
  if (mask < 1 || mask > static_cast<uint64_t>(lanes))
    fail(w,
         fmt::format("mask {} is outside [1, {}] for {}", mask, lanes, tl::dtype_name(dst.dtype)));
  if (dst_blk != 1 || src_blk != 1)
    fail(w, fmt::format("dstStride {} / srcStride {}: only contiguous blocks (1) are modelled",
                        dst_blk, src_blk));
  // Each repeat: its first `mask` elements, one VM copy (UB -> UB) of that run.
  for (int64_t r = 0; r < repeat; ++r) {
    LocalRef d = dst, s = src;
    d.offset += r * dst_rep * 32;
    d.count -= r * dst_rep * per_block;
    s.offset += r * src_rep * 32;
    s.count -= r * src_rep * per_block;
    const auto n = static_cast<int64_t>(mask);
    exec_op(w, "copy", {flat(w, s, n, "src"), flat(w, d, n, "dst")});
  }
}

void set_atomic(const Where& w, bool on, DType dtype) {
  CoreCtx& c = ctx(w);
  c.atomic_add = on;
  c.atomic_dtype = dtype;
}

}  // namespace ascendc_cpu
