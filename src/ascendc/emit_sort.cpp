// The gather, sort and index-generation ops and the GM atomic add as AscendC calls. Each
// emitted sequence computes exactly what the virtual NPU's op computes (src/npu/exec_vector.cpp,
// exec_reduce_sort.cpp, exec_move.cpp); where AscendC cannot, the op is an error naming it
// (docs/ascendc.md, "Not emitted yet" says why):
//  - tile.gather: Gather (count form, byte offsets, "Gather" API page);
//  - tile.gather_mask with a fixed pattern: GatherMask, built-in pattern 1-7, whole 256-byte
//    repeats ("GatherMask" API page);
//  - tile.createvecindex: CreateVecIndex, only where every value is exact in the dtype (so the
//    chip's arithmetic cannot round; tile.arith_progression is emit_progression.cpp's);
//  - topk / sort (float32; float16 through a float32 sort and RINT casts, as the VM): the
//    positions as floats (ArithProgression 0, 1, 2, ...), Sort32 of
//    each 32 scores with them, MrgSort rounds of up to four queues, and a DataCopy of the
//    entries the op writes: the order of a stable sort by descending score with ties to the
//    smaller position, which is the VM's ("Sort32" page: equal scores in input order;
//    "MrgSort" page: queues merged by score; the lower queue first on a tie is the VM's model
//    of MrgSort, merge_sort in exec_reduce_sort.cpp, which the page does not state);
//  - merge_sort: one MrgSort;
//  - atomic_add UB -> GM and L0C -> GM (float32): SetAtomicAdd<T>, the copy (DataCopy /
//    DataCopyPad / Fixpipe), SetAtomicNone ("SetAtomicAdd" page: UB/L0C/L1 -> GM on A2).
// The API pages cited are asc-devkit's (docs/api/context/<Name>.md), the same as the
// hiascend.com atlasascendc_api pages of those names.
#include <cmath>

#include "emitter.h"
#include "tl/ir_ops.h"
#include "tl/ops.h"

namespace tl::ascendc {
namespace {

int idx(const TileOpNode& n, std::string_view name) {
  return n.op->operand_index(name);
}

/// The GatherMask built-in pattern of a VM pattern "Pb3b2b1b0" ("GatherMask" page: 1 even
/// elements, 2 odd, 3-6 the first to the fourth of every four, 7 all).
int gather_mask_code(const std::string& p) {
  static const std::pair<const char*, int> codes[] = {{"P0101", 1}, {"P1010", 2}, {"P0001", 3},
                                                      {"P0010", 4}, {"P0100", 5}, {"P1000", 6},
                                                      {"P1111", 7}};
  for (const auto& [s, c] : codes)
    if (p == s) return c;
  return 0;
}

/// Largest magnitude at which every integer is exact in float dtype t.
double exact_int_limit(DType t) {
  return t == DType::Float32 ? 16777216.0 : t == DType::Float16 ? 2048.0 : 256.0;
}

}  // namespace

bool Emitter::emit_sort(const TileOpNode& n) {
  using namespace ops::tile;
  const SourceLoc& loc = n.loc;
  const std::string what = "T." + n.op->name;
  auto need_run = [&](const Operand& o, const char* role) {
    if (!o.contiguous || !aligned(o, o.offset, 32))
      unsupported(loc, fmt::format("{}: '{}' ({}) is not one 32-byte aligned run", what,
                                   o.buf->name, role));
  };

  if (n.op == &gather()) {
    Operand dst = operand(n, idx(n, "dst")), src = operand(n, idx(n, "src")),
            off = operand(n, idx(n, "offsets"));
    need_run(dst, "dst");
    need_run(off, "offsets");
    if (!aligned(src, src.offset, 32))
      unsupported(loc, what + ": 'src' does not start on a 32-byte boundary");
    const DType t = dst.buf->dtype;
    if (t != DType::Float32 && t != DType::Float16 && t != DType::BFloat16 && t != DType::Int32 &&
        t != DType::UInt32 && t != DType::Int16 && t != DType::UInt16)
      unsupported(loc, fmt::format("{} of {} (Gather on A2 takes 16- and 32-bit types)", what,
                                   dtype_name(t)));
    if (dtype_bytes(off.buf->dtype) != 4)
      unsupported(loc, what + " with offsets that are not 32-bit");
    std::string offs = at(off);
    if (off.buf->dtype != DType::UInt32) offs += ".ReinterpretCast<uint32_t>()";
    const TileArg* base = op_operand(n, "base");
    std::string b = "0";
    if (base && base->is_scalar())
      b = as_const_int(base->scalar) ? std::to_string(*as_const_int(base->scalar))
                                     : scalar(base->scalar, DType::UInt32, loc);
    // Gather ("Gather" API page, tensor前n个数据计算): dst[i] = src at byte
    // srcBaseAddr + srcOffset[i], for the first count elements.
    line(fmt::format("AscendC::Gather({}, {}, {}, {}, {});", at(dst), at(src), offs, b,
                     expr(dst.rows * dst.cols, loc)),
         loc);
    return true;
  }
  if (n.op == &gather_mask()) {
    if (op_operand(n, "mask") && op_operand(n, "mask")->is_region())
      unsupported(loc, what + " with a mask tile (only the fixed patterns are emitted)");
    Operand dst = operand(n, idx(n, "dst")), src = operand(n, idx(n, "src"));
    need_run(dst, "dst");
    need_run(src, "src");
    const int code = gather_mask_code(n.attr_str("pattern"));
    if (code == 0) unsupported(loc, what + " without a pattern");
    const DType t = src.buf->dtype;
    if (dtype_bytes(t) != 2 && dtype_bytes(t) != 4)
      unsupported(loc, fmt::format("{} of {} (GatherMask on A2 takes 16- and 32-bit types)", what,
                                   dtype_name(t)));
    auto numel = const_product(src.extents);
    // Normal mode runs whole 256-byte repeats; a partial last repeat would read past src and
    // write the elements it selects there past dst, which the VM's op does not.
    if (!numel || (*numel * dtype_bytes(t)) % 256 != 0 || *numel * dtype_bytes(t) / 256 > 255)
      unsupported(loc, fmt::format("{} over '{}': not whole 256-byte repeats (at most 255)", what,
                                   src.buf->name));
    // GatherMask ("GatherMask" API page, 内置固定模式): reduceMode false (normal mode, mask
    // unused), GatherMaskParams{src0BlockStride 1, repeatTimes, src0RepeatStride 8 blocks,
    // src1RepeatStride 0}; rsvdCnt receives the count kept.
    open("", loc);
    line("uint64_t tl_kept = 0;", loc);
    line(fmt::format("AscendC::GatherMask({}, {}, static_cast<uint8_t>({}), false, 0, "
                     "AscendC::GatherMaskParams{{1, {}, 8, 0}}, tl_kept);",
                     at(dst), at(src), code, *numel * dtype_bytes(t) / 256),
         loc);
    close();
    return true;
  }
  if (n.op == &createvecindex()) {  // (arith_progression: emit_progression.cpp, dispatched first)
    Operand dst = operand(n, idx(n, "dst"));
    need_run(dst, "dst");
    const DType t = dst.buf->dtype;
    auto numel = const_product(dst.extents);
    if (!numel) unsupported(loc, what + " of a dynamic size");
    const TileArg* first = op_operand(n, "first");
    const int64_t count = *numel;
    // The chip computes the values in the dtype; they are the VM's (first + i rounded once) when
    // every value is exact: an integer-valued constant first within the dtype's exact range.
    std::optional<double> f;
    if (first && first->is_scalar()) {
      if (auto i = as_const_int(first->scalar)) f = static_cast<double>(*i);
      if (auto* fl = first->scalar.as<FloatImmNode>()) f = fl->value;
    }
    if (!f || *f != std::floor(*f))
      unsupported(loc, what + " with a first value that is not an integer constant");
    const double lo = std::min(*f, *f + (count - 1)), hi = std::max(*f, *f + (count - 1));
    const bool exact = is_float(t) ? std::max(-lo, hi) <= exact_int_limit(t)
                                   : (t == DType::Int32 && lo >= INT32_MIN && hi <= INT32_MAX) ||
                                         (t == DType::Int16 && lo >= -32768 && hi <= 32767);
    if (!exact ||
        (t != DType::Float32 && t != DType::Float16 && t != DType::Int32 && t != DType::Int16))
      unsupported(loc, fmt::format("{} of {} whose values are not all exact in the dtype", what,
                                   dtype_name(t)));
    if (count <= 0) return true;
    // CreateVecIndex ("CreateVecIndex" API page).
    const std::string T = ctype(t, loc);
    line(
        fmt::format("AscendC::CreateVecIndex({}, static_cast<{}>({}), {});", at(dst), T, *f, count),
        loc);
    return true;
  }
  if (n.op == &ops::topk() || n.op == &ops::sort()) {
    emit_full_sort(n);
    return true;
  }
  if (n.op == &ops::merge_sort()) {
    Operand dst = operand(n, idx(n, "dst"));
    need_run(dst, "dst");
    std::vector<Operand> qs;
    for (const char* q : {"src0", "src1", "src2", "src3"}) {
      const TileArg* a = op_operand(n, q);
      if (!a || !a->is_region()) continue;
      qs.push_back(operand(n, idx(n, q)));
      need_run(qs.back(), q);
    }
    std::vector<int64_t> lens;
    for (const auto& q : qs) {
      auto e = const_product(q.extents);
      if (!e || *e % 2 != 0 || *e / 2 > 4095)
        unsupported(loc, fmt::format("{}: queue '{}' is not a constant count of at most 4095 "
                                     "(score, index) entries",
                                     what, q.buf->name));
      lens.push_back(*e / 2);
    }
    emit_mrgsort(loc, at(dst),
                 {at(qs[0]), at(qs[1]), qs.size() > 2 ? at(qs[2]) : at(qs[0]),
                  qs.size() > 3 ? at(qs[3]) : at(qs[0])},
                 lens);
    return true;
  }
  if (n.op == &ops::atomic_add()) {
    Operand dst = operand(n, idx(n, "dst")), src = operand(n, idx(n, "src"));
    const MemScope S = src.buf->scope;
    if (dst.buf->scope != MemScope::GM || (S != MemScope::UB && S != MemScope::L0C))
      unsupported(loc, fmt::format("{} from {} to {} (UB -> GM and L0C -> GM are emitted)", what,
                                   scope_name(S), scope_name(dst.buf->scope)));
    const DType t = dst.buf->dtype;
    // From L0C the Fixpipe converts the float32 sum to dst's dtype before the atomic unit adds:
    // two roundings into float16 / bfloat16, where the VM's atomic_add rounds the float32 sum
    // once. Only a float32 destination is the same value.
    if (S == MemScope::L0C && t != DType::Float32)
      unsupported(loc, fmt::format("{} from L0C into {} (the Fixpipe's conversion, then the "
                                   "add: two roundings where the VM rounds once)",
                                   what, dtype_name(t)));
    if (t != DType::Float32 && t != DType::Float16 && t != DType::BFloat16 && t != DType::Int32 &&
        t != DType::Int16 && t != DType::Int8)
      unsupported(loc, fmt::format("{} of {} (SetAtomicAdd on A2 takes int8/int16/int32/half/"
                                   "bfloat16/float)",
                                   what, dtype_name(t)));
    // SetAtomicAdd<T> ("SetAtomicAdd" API page): the next transfers UB -> GM add to GM;
    // SetAtomicNone ends it. The transfer itself is the copy's (emit_move.cpp).
    line(fmt::format("AscendC::SetAtomicAdd<{}>();", ctype(t, loc)), loc);
    std::vector<Attr> attrs;  // the copy's, at their defaults (no ReLU, no transpose)
    for (const auto& a : ops::copy().attrs) attrs.push_back({a.name, a.default_value});
    Stmt copy = TileOpNode::make(
        &ops::copy(),
        {n.args[static_cast<size_t>(idx(n, "src"))], n.args[static_cast<size_t>(idx(n, "dst"))]},
        attrs, loc);
    emit_copy(*copy.as<TileOpNode>());
    line("AscendC::SetAtomicNone();", loc);
    return true;
  }
  return false;
}

void Emitter::emit_mrgsort(const SourceLoc& loc, const std::string& dst,
                           const std::vector<std::string>& queues,
                           const std::vector<int64_t>& lens) {
  // MrgSort ("MrgSort" API page): 2-4 sorted queues of 8-byte entries, elementCountList their
  // lengths, validBit one bit per queue used (3, 7, 15), repeat 1; isExhaustedSuspension false
  // (the template default): merges until every queue is exhausted.
  open("", loc);
  line(fmt::format("AscendC::MrgSortSrcList<float> tl_queues{{{}, {}, {}, {}}};", queues[0],
                   queues[1], queues[2], queues[3]),
       loc);
  std::string l;
  for (size_t i = 0; i < 4; ++i)
    l += fmt::format("{}{}", i ? ", " : "", i < lens.size() ? lens[i] : 0);
  line(fmt::format("const uint16_t tl_lengths[4] = {{{}}};", l), loc);
  line("uint32_t tl_sorted[4] = {0, 0, 0, 0};", loc);
  line(fmt::format("AscendC::MrgSort({}, tl_queues, tl_lengths, tl_sorted, {}, 1);", dst,
                   (1 << lens.size()) - 1),
       loc);
  close();
}

void Emitter::emit_full_sort(const TileOpNode& n) {
  const SourceLoc& loc = n.loc;
  const bool topk = n.op == &ops::topk();
  const std::string what = "T." + n.op->name;
  Operand dst = operand(n, idx(n, "dst")), src = operand(n, idx(n, "src"));
  // float16: the VM sorts in float32 and casts each entry's two lanes to half with RINT
  // (exec_reduce_sort.cpp, write_sorted); so does the sequence: Cast in (exact), the float32
  // sort, Cast of the entries out.
  const DType t = src.buf->dtype;
  if ((t != DType::Float32 && t != DType::Float16) || dst.buf->dtype != t)
    unsupported(loc,
                fmt::format("{} of {} into {}", what, dtype_name(t), dtype_name(dst.buf->dtype)));
  const bool half = t == DType::Float16;
  for (const Operand* o : {&dst, &src})
    if (!o->contiguous || !aligned(*o, o->offset, 32))
      unsupported(loc, fmt::format("{}: '{}' is not one 32-byte aligned run", what, o->buf->name));
  auto actual_c = as_const_int(op_operand(n, "actual_num")->scalar);
  if (!actual_c) unsupported(loc, what + " with an actual_num that is not a constant");
  const int64_t actual = *actual_c;
  auto src_n = const_product(src.extents), dst_n = const_product(dst.extents);
  if (!src_n || !dst_n || actual < 0 || actual > *src_n)
    unsupported(loc, what + ": actual_num outside the source (the VM's error)");
  const int64_t padded = (actual + 31) / 32 * 32, blocks = padded / 32;
  if (blocks > 255) unsupported(loc, what + " of more than 8160 scores (Sort32's 255 repeats)");
  int64_t lanes = 2 * padded;  // what the op writes: every entry (sort), 2k lanes in blocks (topk)
  if (topk) {
    auto k = as_const_int(op_operand(n, "k")->scalar);
    if (!k) unsupported(loc, what + " with a k that is not a constant");
    if (*k < 0 || *k > padded) unsupported(loc, what + ": k outside the sorted entries");
    const int64_t per_block = half ? 16 : 8;
    lanes = (2 * *k + per_block - 1) / per_block * per_block;
  }
  if (lanes > *dst_n)
    unsupported(loc, fmt::format("{}: 'dst' holds {} lanes, the copy of the entries writes {} "
                                 "(whole 32-byte blocks)",
                                 what, *dst_n, lanes));
  if (blocks == 0) return;
  // UB scratch: the positions [padded] (uint32 view of floats), the -inf padded scores when
  // actual is not whole repeats [padded], and two buffers of entries [2 * padded] each.
  const bool pad = padded != actual || half;
  const int64_t aligned = actual / 8 * 8;  // whole 32-byte blocks of float scores
  const int64_t a_at = padded * (pad ? 2 : 1), b_at = a_at + 2 * padded, total = b_at + 2 * padded;
  const std::string tmp = ub_scratch(DType::Float32, total * 4, loc);
  auto sc = [&](int64_t off) { return off ? fmt::format("{}[{}]", tmp, off) : tmp; };
  // Every user of the UB scratch starts with a barrier (emit_vector.cpp says why).
  line("AscendC::PipeBarrier<PIPE_V>();", loc);
  // The positions 0.0, 1.0, ... as the entries' index lanes: the VM's sort family stores the
  // position as a float (src/npu/exec_reduce_sort.cpp), so the float bits go to Sort32 as its
  // uint32 indices ("ArithProgression" API page).
  line(fmt::format("AscendC::ArithProgression<float>({}, 0.0f, 1.0f, {});", tmp, padded), loc);
  std::string scores = at(src);
  if (pad) {
    // The scores, then -inf up to whole repeats: the VM sorts -inf entries at the positions
    // past actual_num (exec_reduce_sort.cpp, sorted_source).
    // -inf from the last whole block of scores on, then the scores over it: a Cast (count form:
    // exactly `actual` elements) from half, or whole blocks by DataCopy and the last partial
    // block by Copy with a mask of its first lanes ("Copy" API page, mask 连续模式), which
    // leaves the block's other lanes -inf.
    scores = sc(padded);
    if (padded > aligned) {
      line(fmt::format("AscendC::Duplicate({}, -__builtin_inff(), {});", sc(padded + aligned),
                       padded - aligned),
           loc);
      if (actual > 0) line("AscendC::PipeBarrier<PIPE_V>();", loc);
    }
    if (actual > 0 && half) {
      line(fmt::format("AscendC::Cast({}, {}, AscendC::RoundMode::CAST_NONE, {});", scores, at(src),
                       actual),
           loc);
    } else if (actual > 0) {
      if (aligned > 0)
        line(fmt::format("AscendC::DataCopy({}, {}, {});", scores, at(src), aligned), loc);
      if (actual > aligned)
        line(fmt::format("AscendC::Copy({}, {}, {}, 1, AscendC::CopyRepeatParams(1, 1, 8, 8));",
                         sc(padded + aligned), at(src, ci(aligned)), actual - aligned),
             loc);
    }
  }
  line("AscendC::PipeBarrier<PIPE_V>();", loc);
  // Sort32 ("Sort32" API page): each repeat sorts 32 scores into 8-byte (score, index) entries.
  line(fmt::format("AscendC::Sort32({}, {}, {}.ReinterpretCast<uint32_t>(), {});", sc(a_at), scores,
                   tmp, blocks),
       loc);
  // Merge rounds: groups of up to four consecutive sorted segments, ping-pong between the two
  // entry buffers; a lone segment is copied. Segments are in position order, so MrgSort's
  // lower-queue-first tie rule keeps the smaller position first, as the VM's stable sort.
  std::vector<int64_t> seg(static_cast<size_t>(blocks), 32);  // segment lengths in entries
  int64_t from = a_at, to = b_at;
  while (seg.size() > 1) {
    line("AscendC::PipeBarrier<PIPE_V>();", loc);
    std::vector<int64_t> next;
    int64_t off = 0;
    for (size_t g = 0; g < seg.size(); g += 4) {
      const size_t cnt = std::min<size_t>(4, seg.size() - g);
      int64_t sum = 0;
      std::vector<std::string> q;
      std::vector<int64_t> lens;
      for (size_t i = 0; i < cnt; ++i) {
        q.push_back(sc(from + 2 * (off + sum)));
        lens.push_back(seg[g + i]);
        sum += seg[g + i];
      }
      if (cnt == 1) {
        line(fmt::format("AscendC::DataCopy({}, {}, {});", sc(to + 2 * off), q[0], 2 * sum), loc);
      } else {
        while (q.size() < 4) q.push_back(q[0]);
        emit_mrgsort(loc, sc(to + 2 * off), q, lens);
      }
      next.push_back(sum);
      off += sum;
    }
    seg = next;
    std::swap(from, to);
  }
  line("AscendC::PipeBarrier<PIPE_V>();", loc);
  // The entries the op writes: every one (sort), or the first k in whole 32-byte blocks (topk:
  // the VM writes the entries up to that boundary too).
  if (half)
    line(fmt::format("AscendC::Cast({}, {}, AscendC::RoundMode::CAST_RINT, {});", at(dst), sc(from),
                     lanes),
         loc);
  else
    line(fmt::format("AscendC::DataCopy({}, {}, {});", at(dst), sc(from), lanes), loc);
}

}  // namespace tl::ascendc
