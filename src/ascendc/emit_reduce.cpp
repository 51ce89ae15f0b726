// Reductions as AscendC calls (pipe V): T.reduce_sum / reduce_max / reduce_min of fp32 tiles.
//
// Over the last axis (one value per row) the emitter writes, per row, the level-2 count form
// `ReduceSum/ReduceMax/ReduceMin(slot, row, work, cols)` ("ReduceSum" / "ReduceMax" API pages,
// the "tensor first n" form): on A2 its sum is a binary tree inside each 256-byte repeat and
// the repeats' results added in order (the page's 方式二), which is the virtual NPU's reduce
// (src/npu/exec_reduce_sort.cpp), and it reads any count, so rows that are not whole 32-byte
// blocks need no mask. Each row's result goes to its own 32-byte aligned slot of UB scratch
// followed by its own work area of the documented minimum size (the pages' sharedTmpBuffer
// formula), so no two rows' calls touch the same bytes; one WholeReduceSum/Max/Min with a
// one-element mask then gathers the slots' values into dst, one per repeat (the "WholeReduceSum"
// / "WholeReduceMax" pages: dstRepStride 1 value, srcRepStride one slot): a reduction of one
// value is that value. The scratch is rows x (8 + work) floats, not the whole source: what made
// the resident norm kernels' reductions fit above their planned buffers (docs/ascendc.md).
// With clear=False (reduce_sum only) the gathered values are added to dst with Add.
//
// Over the first axis of a 2-D source: the ReduceSum/Max/Min "RA" pattern (its scratch is the
// conservative rows x cols x 4 + 256 bytes: GetReduceSumMaxMinTmpSize gives no formula).
#include "emitter.h"
#include "tl/ir_ops.h"
#include "tl/ops.h"

namespace tl::ascendc {
namespace {

int operand_index(const TileOpNode& n, std::string_view name) {
  for (size_t i = 0; i < n.op->operands.size(); ++i)
    if (n.op->operands[i].name == name) return static_cast<int>(i);
  TL_ASSERT(false, "op {} has no operand {}", n.op->name, name);
  return -1;
}

/// The count form's sharedTmpBuffer minimum in fp32 elements ("ReduceSum" page: the first
/// pass's one value per repeat, rounded up to whole blocks; "ReduceMax" page, calIndex false:
/// a value and an index per repeat). A partial last repeat counts as one (never less than the
/// page's count / elementsPerRepeat).
int64_t count_form_work(int64_t cols, bool max_min) {
  const int64_t repeats = std::max<int64_t>(1, (cols + 63) / 64);
  const int64_t first = max_min ? 2 * repeats : repeats;
  return (first + 7) / 8 * 8;
}

}  // namespace

bool Emitter::emit_reduce(const TileOpNode& n) {
  struct Api {
    const OpDef* op;
    const char* count_form;  // ReduceSum
    const char* whole;       // WholeReduceSum
    bool max_min;
  };
  static const Api apis[] = {{&ops::reduce_sum(), "ReduceSum", "WholeReduceSum", false},
                             {&ops::reduce_max(), "ReduceMax", "WholeReduceMax", true},
                             {&ops::reduce_min(), "ReduceMin", "WholeReduceMin", true}};
  const Api* api = nullptr;
  for (const auto& a : apis)
    if (n.op == a.op) api = &a;
  if (!api) return false;
  const SourceLoc& loc = n.loc;
  const std::string what = "T." + n.op->name;
  Operand src = operand(n, operand_index(n, "src")), dst = operand(n, operand_index(n, "dst"));
  const int64_t nd = static_cast<int64_t>(src.extents.size());
  int64_t dim = n.attr_int("dim");
  if (dim < 0) dim += nd;
  if (dim != nd - 1 && !(nd == 2 && dim == 0))
    unsupported(loc, what + " over a dimension other than the last (or the first of two)");
  const bool clear = n.attr_bool("clear");
  if (src.buf->dtype != DType::Float32 || dst.buf->dtype != DType::Float32)
    unsupported(loc, fmt::format("{} of {} into {} (the emitted forms reduce fp32)", what,
                                 dtype_name(src.buf->dtype), dtype_name(dst.buf->dtype)));
  auto rows = as_const_int(src.rows), cols = as_const_int(src.cols);
  if (!rows || !cols) unsupported(loc, what + " of dynamic shape");

  if (dim != nd - 1) {
    // The RA pattern ("ReduceSum" advanced API page): one result per column of [rows, cols].
    if (!clear) unsupported(loc, what + " over the first axis with clear=False");
    if (!src.contiguous || !dst.contiguous || (*cols * 4) % 32 != 0 ||
        !aligned(src, src.offset, 32) || !aligned(dst, dst.offset, 32))
      unsupported(loc, what + " of a source that is not whole, 32-byte aligned rows");
    const std::string tmp = ub_scratch(DType::UInt8, *rows * *cols * 4 + 256, loc);
    const std::string shape = fresh("tl_shape", true);
    line("AscendC::PipeBarrier<PIPE_V>();", loc);
    open("", loc);
    line(fmt::format("uint32_t {}[2] = {{{}, {}}};", shape, *rows, *cols), loc);
    line(fmt::format("AscendC::{}<float, AscendC::Pattern::Reduce::RA>({}, {}, {}, {}, true);",
                     api->count_form, at(dst), at(src), tmp, shape),
         loc);
    close();
    return true;
  }

  if (!clear && api->max_min) unsupported(loc, what + " with clear=False");
  // Each row starts on a 32-byte boundary (the count form's src rule); dst's values are
  // consecutive from a 32-byte boundary (the gathering WholeReduce writes them, and the
  // virtual NPU's operands start on 32 bytes).
  if (!aligned(src, src.offset, 32) ||
      (*rows > 1 && (!src.pitch.defined() || !aligned(src, src.pitch, 32))))
    unsupported(loc, fmt::format("{} over rows of '{}' that do not start on 32-byte boundaries",
                                 what, src.buf->name));
  if (!dst.contiguous || !aligned(dst, dst.offset, 32))
    unsupported(loc, fmt::format("{} into '{}', not one 32-byte aligned run", what, dst.buf->name));
  const int64_t work = count_form_work(*cols, api->max_min);
  const int64_t slot = 8 + work;  // the row's value (one 32-byte block), then its work area
  if (slot / 8 > 255) unsupported(loc, what + " over rows too long for one gathering repeat");
  const int64_t res = clear ? 0 : (*rows + 7) / 8 * 8;  // clear=False: the values, then Add
  const std::string tmp = ub_scratch(DType::Float32, (res + *rows * slot) * 4, loc);
  // The scratch's previous user (a row broadcast, another reduction) and the calls below all
  // run on V: a barrier first, and one between the rows' calls and the gathering call, which
  // reads their slots (RAW on pipe V).
  line("AscendC::PipeBarrier<PIPE_V>();", loc);
  if (*rows == 1 && clear && !api->max_min) {
    // One row: ReduceSum writes its one value straight into dst.
    line(fmt::format("AscendC::ReduceSum<float>({}, {}, {}, {});", at(dst), at(src),
                     sub(tmp, ci(8), loc), *cols),
         loc);
    return true;
  }
  const std::string rv = fresh("tl_r", true);
  open(fmt::format("for (int32_t {0} = 0; {0} < {1}; ++{0})", rv, *rows), loc);
  Var rvar(rv, DType::Int32);
  bind_row(rvar, rv, src.rows);
  auto in_slot = [&](int64_t at_elem) {  // tmp[at_elem + r * slot]
    return at_elem == 0 ? fmt::format("{}[{} * {}]", tmp, rv, slot)
                        : fmt::format("{}[{} + {} * {}]", tmp, at_elem, rv, slot);
  };
  line(fmt::format("AscendC::{}<float>({}, {}, {}, {});", api->count_form, in_slot(res),
                   at(src, *rows > 1 ? rvar * src.pitch : Expr()), in_slot(res + 8), *cols),
       loc);
  close();
  vars_.erase(rvar.node());
  line("AscendC::PipeBarrier<PIPE_V>();", loc);
  const std::string order = api->max_min ? ", AscendC::ReduceOrder::ORDER_ONLY_VALUE" : "";
  for (int64_t r0 = 0; r0 < *rows; r0 += 255) {
    const int64_t reps = std::min<int64_t>(255, *rows - r0);
    const std::string to = clear ? at(dst, ci(r0)) : sub(tmp, ci(r0), loc);
    line(fmt::format("AscendC::{}<float>({}, {}, 1, {}, 1, 1, {}{});", api->whole, to,
                     sub(tmp, ci(res + r0 * slot), loc), reps, slot / 8, order),
         loc);
  }
  if (!clear) {
    // dst += the row values: Add ("Add" API page), count form; the VM's sum then adds dst.
    line("AscendC::PipeBarrier<PIPE_V>();", loc);
    line(fmt::format("AscendC::Add({}, {}, {}, {});", at(dst), tmp, at(dst), *rows), loc);
  }
  return true;
}

}  // namespace tl::ascendc
