// Records the instruction trace (tl/npu/trace.h) as the interpreter executes: one event per
// tile op, sync op and scalar memory access, with byte-exact access ranges.
#include "trace_record.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "exec.h"
#include "tl/ir_functor.h"
#include "tl/npu/layout.h"
#include "tl/op.h"
#include "tl/ops.h"
#include "tl/sync_rules.h"
#include "trace_stream.h"

namespace tl::npu {

namespace {
/// True if some run of `y` intersects the byte range [s, e). O(1): the union of y's runs is
/// one interval when its runs touch, otherwise only the first run ending after s can hit.
bool hits_run(const Access& y, uint64_t s, uint64_t e) {
  if (e <= y.start || s >= y.end()) return false;
  if (y.count == 1 || y.pitch <= y.len) return true;
  uint64_t j = s < y.start + y.len ? 0 : (s - y.start - y.len) / y.pitch + 1;
  return j < y.count && y.start + j * y.pitch < e;
}
/// Two strided accesses with one pitch p (rows of one buffer, the common case): run i of x
/// meets run j of y iff -y.len < d + k p < x.len, d = y.start - x.start, k = j - i in
/// [-(x.count - 1), y.count - 1]. d + k p grows with k, so only the smallest k past -y.len can
/// be below x.len: O(1) where walking the rows (the checker's hot loop on tiles of thousands
/// of rows) was O(rows).
bool same_pitch_hit(const Access& x, const Access& y) {
  const auto p = static_cast<int64_t>(x.pitch);
  const int64_t d = static_cast<int64_t>(y.start) - static_cast<int64_t>(x.start);
  const int64_t xl = static_cast<int64_t>(x.len), yl = static_cast<int64_t>(y.len);
  const int64_t num = -yl - d;  // k p > num: k >= floor(num / p) + 1
  const int64_t fl = num >= 0 ? num / p : -((-num + p - 1) / p);
  const int64_t k = std::max(fl + 1, -(static_cast<int64_t>(x.count) - 1));
  return k <= static_cast<int64_t>(y.count) - 1 && d + k * p < xl;
}
}  // namespace

std::string gm_elements(const std::string& name, const GmTensor& t, uint64_t start, uint64_t end) {
  auto coords = [&](uint64_t byte) -> std::string {
    int64_t off = static_cast<int64_t>((byte - t.base) / static_cast<uint64_t>(t.elem_bytes));
    std::string s;
    for (size_t d = 0; d < t.strides.size(); ++d) {
      int64_t st = std::max<int64_t>(t.strides[d], 1);
      s += fmt::format("{}{}", d ? ", " : "", off / st);
      off %= st;
    }
    return "[" + s + "]";
  };
  if (end <= start || start < t.base) return name;
  std::string first = coords(start), last = coords(end - 1);
  return first == last ? fmt::format("{} element {}", name, first)
                       : fmt::format("{} elements {} to {}", name, first, last);
}

bool overlaps(const Access& a, const Access& b) {
  if (!(a.mem == b.mem) || a.len == 0 || b.len == 0 || a.count == 0 || b.count == 0) return false;
  if (a.end() <= b.start || b.end() <= a.start) return false;
  // Walk the runs of the access with fewer runs against the other one: exact, with no cap on
  // the number of runs (a capped walk either misses hazards or reports false ones).
  const Access& x = a.count <= b.count ? a : b;
  const Access& y = a.count <= b.count ? b : a;
  if (x.count == 1 || x.pitch <= x.len) return hits_run(y, x.start, x.end());
  if (y.count == 1 || y.pitch <= y.len) return hits_run(x, y.start, y.end());
  if (x.pitch == y.pitch) return same_pitch_hit(x, y);
  for (uint64_t i = 0; i < x.count; ++i) {
    uint64_t s = x.start + i * x.pitch;
    if (hits_run(y, s, s + x.len)) return true;
  }
  return false;
}

namespace {
uint64_t rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}
/// A 64-bit finaliser (every input bit flips about half the output bits).
uint64_t fmix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  return k ^ (k >> 33);
}
}  // namespace

std::array<uint64_t, 2> digest_bytes(const Access& a) {
  // Two 64-bit lanes over 16-byte blocks (the MurmurHash3 x64-128 construction); the run
  // geometry seeds them, so the same bytes in another shape digest differently.
  constexpr uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;
  uint64_t h1 = fmix(a.len ^ (a.count << 32)), h2 = fmix(a.pitch + 0x9e3779b97f4a7c15ULL);
  auto block = [&](uint64_t k1, uint64_t k2) {
    h1 ^= rotl(k1 * c1, 31) * c2;
    h1 = (rotl(h1, 27) + h2) * 5 + 0x52dce729;
    h2 ^= rotl(k2 * c2, 33) * c1;
    h2 = (rotl(h2, 31) + h1) * 5 + 0x38495ab5;
  };
  for (uint64_t r = 0; r < a.count; ++r) {
    const auto* p = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(a.start + r * a.pitch));
    uint64_t i = 0;
    for (; i + 16 <= a.len; i += 16) {
      uint64_t k[2];
      std::memcpy(k, p + i, 16);
      block(k[0], k[1]);
    }
    uint64_t k[2] = {0, 0};  // the row's tail, zero-padded; the lengths are in the seed
    std::memcpy(k, p + i, a.len - i);
    block(k[0], k[1] ^ r);
  }
  h1 += h2;
  h2 += h1;
  h1 = fmix(h1);
  h2 = fmix(h2);
  h1 += h2;
  h2 += h1;
  return {h1, h2};
}

bool stores_to_gm(const CoreTrace& ct, size_t first) {
  for (size_t i = first; i < ct.events.size(); ++i)
    for (const Access& a : ct.events[i].accesses)
      if (a.write && !a.atomic && a.mem.scope == MemScope::GM) return true;
  return false;
}

void digest_gm_stores(CoreTrace& ct, size_t first) {
  for (size_t i = first; i < ct.events.size(); ++i)
    for (Access& a : ct.events[i].accesses)
      if (a.write && !a.atomic && a.mem.scope == MemScope::GM) {
        a.digest = digest_bytes(a);
        a.digested = true;
      }
}

std::string CoreTrace::name() const {
  return kind == CoreKind::Cube ? fmt::format("block {} AIC", block)
                                : fmt::format("block {} AIV{}", block, vid);
}

namespace {

int slot_of(const Core& c) {
  return c.kind == CoreKind::Cube ? 0 : 1 + c.vid;
}

MemoryId memory_of(const Core& c, MemScope s) {
  if (s == MemScope::GM) return {};
  return {s, static_cast<int32_t>(c.block), slot_of(c)};
}

/// Appends the runs of `a` to `last` when together they are still evenly spaced runs of one
/// length (the leading dimensions of a region are usually contiguous), so a region of any
/// number of rows is a handful of accesses.
bool extend(Access& last, const Access& a) {
  if (a.len != last.len || a.write != last.write || a.start <= last.start) return false;
  uint64_t pitch = last.count > 1 ? last.pitch : a.count > 1 ? a.pitch : a.start - last.start;
  if ((a.count > 1 && a.pitch != pitch) || a.start != last.start + last.count * pitch) return false;
  last.pitch = pitch;
  last.count += a.count;
  return true;
}

/// The bytes a region touches: every element, whatever the number of rows.
}  // namespace

std::vector<Access> accesses_of(const Core& c, const TileRef& t, bool write, CoreTrace* ct) {
  std::vector<Access> out;
  int64_t es = dtype_bytes(t.dtype);
  size_t n = t.extent.size();
  if (t.numel() == 0) return out;
  if (t.scope == MemScope::GM && ct)
    ct->gm.try_emplace(t.buffer->name,
                       GmTensor{reinterpret_cast<uintptr_t>(t.base), es,
                                std::vector<int64_t>(t.shape.begin(), t.shape.end()),
                                std::vector<int64_t>(t.strides.begin(), t.strides.end())});
  if (t.scope == MemScope::GM || t.scope == MemScope::UB) {
    // Runs along the last dimension, one strided access per combination of the indices
    // above the second-to-last dimension.
    uint64_t base =
        t.scope == MemScope::GM
            ? reinterpret_cast<uintptr_t>(t.base)
            : static_cast<uint64_t>(t.base - c.mem[static_cast<size_t>(MemScope::UB)].data());
    int64_t lead = 1;
    for (size_t d = 0; d + 2 < n; ++d) lead *= t.extent[d];
    std::vector<int64_t> idx(t.start);
    for (int64_t l = 0; l < lead; ++l) {
      int64_t rem = l;
      for (size_t d = n >= 2 ? n - 2 : 0; d-- > 0;) {
        idx[d] = t.start[d] + rem % t.extent[d];
        rem /= t.extent[d];
      }
      int64_t off = 0;
      for (size_t d = 0; d < n; ++d) off += idx[d] * t.strides[d];
      Access a;
      a.mem = memory_of(c, t.scope);
      a.start = base + off * es;
      a.len = t.strides[n - 1] == 1 ? t.extent[n - 1] * es
                                    : ((t.extent[n - 1] - 1) * t.strides[n - 1] + 1) * es;
      a.count = n >= 2 ? t.extent[n - 2] : 1;
      a.pitch = n >= 2 ? t.strides[n - 2] * es : 0;
      a.write = write;
      a.buffer = t.buffer->name;
      if (out.empty() || !extend(out.back(), a)) out.push_back(a);
    }
    return out;
  }
  // Fractal memories: the layouts are monotonic in every index, so the first and the last
  // element of the region bound it.
  std::vector<int64_t> last(t.start);
  for (size_t d = 0; d < n; ++d) last[d] += t.extent[d] - 1;
  uint64_t mem_base = static_cast<uint64_t>(t.base - c.mem[static_cast<size_t>(t.scope)].data());
  Access a;
  a.mem = memory_of(c, t.scope);
  a.start = mem_base + layout_offset(t, t.start) * es;
  a.len = (layout_offset(t, last) - layout_offset(t, t.start) + 1) * es;
  a.write = write;
  a.buffer = t.buffer->name;
  out.push_back(a);
  return out;
}

namespace {

/// Scalar memory reads inside an expression (the S pipe reads UB/GM).
void scalar_reads(Core& c, const Expr& e, std::vector<Access>& out, CoreTrace& ct) {
  if (!e.defined()) return;
  struct V : IRVisitor {
    Core& c;
    std::vector<Access>& out;
    CoreTrace& ct;
    V(Core& core, std::vector<Access>& o, CoreTrace& t) : c(core), out(o), ct(t) {}
    void visit_(const LoadNode* n) override {
      IRVisitor::visit_(n);
      if (n->buffer->scope == MemScope::Var) return;
      BufferRegion r{n->buffer, {}};
      for (const auto& i : n->indices) r.ranges.push_back({i, Expr(1)});
      TileRef t = c.resolve(r, "load", n->buffer->name);
      for (auto& a : accesses_of(c, t, false, &ct)) out.push_back(a);
    }
  } v(c, out, ct);
  v.visit(e);
}

}  // namespace

namespace {

/// The bytes a vector instruction's repeats cover for region `t`: its bytes when its rows are
/// contiguous, else a whole number of 256-byte repeats per row (a repeat's blocks are evenly
/// strided, so one cannot span a row's end and the next row's start; a [64, 16] fp32 slice of a
/// wider tile takes 64 repeats, not 16).
int64_t repeat_bytes(const TileRef& t) {
  const int64_t es = dtype_bytes(t.dtype), row = t.cols() * es;
  const bool contiguous = t.extent.size() < 2 || t.rows() <= 1 || t.row_stride() * es == row;
  if (contiguous || t.scope != MemScope::UB) return t.numel() * es;
  return t.rows() * ((row + 255) / 256) * 256;
}

/// GM operands whose L2 cache mode is "disable", GM copy rows off the 512-byte request grid
/// (offsets from the tensor's base, which the runtime aligns), and vector instructions whose two
/// sources read the same UB bank groups in a beat: a repeat reads 8 consecutive 32-byte blocks of
/// each source, one row per bank group per beat, so two sources only share a beat when their blocks
/// fall in complementary halves of the 16 groups (starts 8 blocks apart, modulo 16).
void set_cost_flags(TraceEvent& ev, const Core& core, const CoreTrace& ct,
                    const std::vector<std::optional<TileRef>>& refs, const InstrSpec& spec) {
  const CostTable& c = core.program.target->costs;
  for (const auto& r : refs)
    if (r && r->scope == MemScope::GM && r->buffer && r->buffer->l2_cache == L2CacheMode::Disable)
      ev.l2_bypass = true;
  if (ev.cost == CostClass::Copy) {
    const auto a = static_cast<uint64_t>(c.gm_burst_align_bytes);
    for (const auto& x : ev.accesses) {
      if (x.mem.scope != MemScope::GM) continue;
      auto t = ct.gm.find(x.buffer);  // accesses_of registered every GM tensor it met
      TL_ASSERT(t != ct.gm.end(), "GM access to '{}' without its tensor in the trace", x.buffer);
      const uint64_t off = x.start - t->second.base;
      const bool one_run = x.count == 1 || x.pitch == x.len;  // rows back to back: one burst
      if (off % a != 0 || (!one_run && x.pitch % a != 0)) ev.gm_unaligned = true;
    }
    return;
  }
  if (!is_vector_cost(ev.cost) || c.bank_conflict_factor == 1) return;
  std::vector<uint64_t> sources;  // the first UB byte of each distinct source operand
  const uint8_t* ub = core.mem[static_cast<size_t>(MemScope::UB)].data();
  for (const auto& t : spec.touches) {
    if (t.operand < 0 || t.access != tl::Access::Read ||
        static_cast<size_t>(t.operand) >= refs.size())
      continue;
    const auto& r = refs[t.operand];
    if (!r || r->scope != MemScope::UB || r->numel() == 0) continue;
    const auto start = static_cast<uint64_t>(r->at_flat(0) - ub);
    if (std::find(sources.begin(), sources.end(), start) == sources.end()) sources.push_back(start);
  }
  const auto block = static_cast<uint64_t>(c.ub_bank_bytes),
             groups = static_cast<uint64_t>(c.ub_bank_groups);
  for (size_t i = 0; i < sources.size(); ++i)
    for (size_t j = i + 1; j < sources.size(); ++j) {
      const uint64_t d =
          (sources[j] / block % groups + groups - sources[i] / block % groups) % groups;
      if (d != groups / 2) ev.bank_conflict = true;
    }
}

/// The cost-model inputs of one instruction, from its cost class and the op's operands.
void set_cost_inputs(TraceEvent& ev, const TileOpNode& n,
                     const std::vector<std::optional<TileRef>>& refs, const InstrSpec& spec) {
  const TileRef* first = nullptr;
  for (const auto& r : refs)
    if (r) {
      first = &*r;
      break;
    }
  if (first) ev.dtype = first->dtype;
  switch (spec.cost) {
    case CostClass::Copy: {
      // The source is the operand the instruction reads, the destination the one it writes.
      const TileRef *src = nullptr, *dst = nullptr;
      for (const auto& t : spec.touches) {
        if (t.operand < 0 || !refs[t.operand]) continue;
        if (t.access == tl::Access::Read)
          src = &*refs[t.operand];
        else
          dst = &*refs[t.operand];
      }
      TL_ASSERT(src && dst, "T.{}: a copy instruction without a source and a destination",
                n.op->name);
      ev.src_scope = src->scope;
      ev.dst_scope = dst->scope;
      ev.dtype = src->dtype;
      ev.bytes = src->numel() * dtype_bytes(src->dtype);
      return;
    }
    case CostClass::CubeLoad:
      ev.src_scope = MemScope::L1;
      ev.dst_scope = MemScope::L0A;
      for (const auto& a : ev.accesses)
        if (a.write) ev.bytes += static_cast<int64_t>(a.len * a.count);
      return;
    case CostClass::Mmad: {
      TL_ASSERT(refs.size() >= 2 && refs[0] && refs[1], "T.{}: a cube instruction without A and B",
                n.op->name);
      const auto* ta = n.attr("transpose_A");
      const auto* tb = n.attr("transpose_B");
      bool trans_a = ta && std::get<bool>(*ta), trans_b = tb && std::get<bool>(*tb);
      ev.m = trans_a ? refs[0]->cols() : refs[0]->rows();
      ev.k = trans_a ? refs[0]->rows() : refs[0]->cols();
      ev.n = trans_b ? refs[1]->rows() : refs[1]->cols();
      return;  // (accumulates: set by record_op, which can evaluate `init`)
    }
    default:
      // Vector instructions count repeats by their widest operand (AscendC Cast: "当源操作数和
      // 目的操作数位数不同时，计算输入参数以数据类型的字节较大的为准"): a compare by its sources,
      // not its bitmask; a narrowing cast by its source, a widening one by its destination.
      for (const auto& r : refs)
        if (r) ev.bytes = std::max<int64_t>(ev.bytes, repeat_bytes(*r));
      // A reduction over the last dimension ends each row with one whole-repeat reduce (m: the
      // rows); over another dimension it only folds rows element-wise (m = 0). The cost model
      // charges the two at their rates (CostModel::cost).
      if (spec.cost == CostClass::VecReduce && !refs.empty() && refs[0]) {
        const auto nd = static_cast<int64_t>(refs[0]->extent.size());
        int64_t d = n.attr_int("dim");
        if (d < 0) d += nd;
        ev.m = d == nd - 1 ? refs[0]->rows() : 0;
      }
      return;
  }
}

}  // namespace

int64_t scalar_ops_of(const Expr& e) {
  if (!e.defined()) return 0;
  switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::StringImm:
    case ExprKind::Var:
      return 0;
    case ExprKind::Binary: {
      auto* b = static_cast<const BinaryNode*>(e.get());
      return 1 + scalar_ops_of(b->a) + scalar_ops_of(b->b);
    }
    case ExprKind::Not:
      return 1 + scalar_ops_of(static_cast<const NotNode*>(e.get())->a);
    case ExprKind::Select: {
      auto* n = static_cast<const SelectNode*>(e.get());
      return 1 + scalar_ops_of(n->cond) + scalar_ops_of(n->t) + scalar_ops_of(n->f);
    }
    case ExprKind::Cast:
      return 1 + scalar_ops_of(static_cast<const CastNode*>(e.get())->value);
    case ExprKind::Load: {
      int64_t n = 0;  // the load itself is a scalar-pipe event (record_scalar)
      for (const auto& i : static_cast<const LoadNode*>(e.get())->indices) n += scalar_ops_of(i);
      return n;
    }
    case ExprKind::Call: {
      int64_t n = 1;
      for (const auto& a : static_cast<const CallNode*>(e.get())->args) n += scalar_ops_of(a);
      return n;
    }
  }
  return 0;
}

void push_event(CoreTrace& ct, TraceEvent&& ev) {
  ev.scalar_ops = ct.pending_scalar_ops;
  ct.pending_scalar_ops = 0;
  // Kept until the checkers run: no growth slack (docs/virtual_npu.md, "Trace memory").
  if (ev.accesses.capacity() > ev.accesses.size()) ev.accesses.shrink_to_fit();
  ct.events.push_back(std::move(ev));
  if (ct.stream && ct.events.size() >= ct.stream->chunk)
    ct.stream->publish(ct, /*finished=*/false, /*blocked=*/false);
}

void record_op(Core& c, CoreTrace& ct, const TileOpNode& n) {
  const OpDef& op = *n.op;
  // Resolve every region operand once (the variadic last operand spec covers trailing args).
  std::vector<std::optional<TileRef>> refs(n.args.size());
  std::vector<std::vector<int64_t>> extents(n.args.size());
  for (size_t i = 0; i < n.args.size(); ++i) {
    if (!n.args[i].is_region()) continue;
    const auto& spec = op.operands[std::min(i, op.operands.size() - 1)];
    refs[i] = c.resolve(n.args[i].region, op.name, spec.name);
    extents[i] = refs[i]->extent;
  }
  // The operands a touch of operand `k` means: k itself, or every trailing arg of a variadic one.
  auto args_of = [&](int k) {
    size_t last = op.operands[k].variadic ? n.args.size() : std::min<size_t>(k + 1, n.args.size());
    return std::pair<size_t, size_t>{static_cast<size_t>(k), last};
  };
  // The scalar unit computes each operand's address (one operation, plus its index arithmetic)
  // and the instruction's scalar parameters before it can issue the instruction.
  for (const auto& a : n.args) {
    if (!a.is_region()) {
      ct.pending_scalar_ops += scalar_ops_of(a.scalar);
      continue;
    }
    ct.pending_scalar_ops += 1;
    for (const auto& r : a.region.ranges)
      ct.pending_scalar_ops += scalar_ops_of(r.min) + scalar_ops_of(r.extent);
  }
  bool first_event = true;
  for (const InstrSpec& spec : op.expansion) {
    TraceEvent ev;
    ev.loc = n.loc;
    ev.continues = !first_event;
    first_event = false;
    ev.name = spec.name.empty() ? op.name : spec.name;
    if (spec.kind == InstrSpec::Kind::BarrierAll) {
      ev.kind = EventKind::Barrier;
      ev.pipe = Pipe::ALL;
      ev.expanded = true;
      push_event(ct, std::move(ev));
      continue;
    }
    ev.kind = EventKind::Op;
    ev.pipe = instr_pipe(n, spec, *c.program.target);
    ev.cost = spec.cost;
    for (const auto& t : spec.touches) {
      if (t.operand < 0) {
        auto bytes = static_cast<uint64_t>(t.bytes(n, extents));
        bool write = t.access != tl::Access::Read;
        if (t.access != tl::Access::Write)
          ev.accesses.push_back({.mem = memory_of(c, t.scratch),
                                 .len = bytes,
                                 .write = false,
                                 .buffer = scope_name(t.scratch)});
        if (write)
          ev.accesses.push_back({.mem = memory_of(c, t.scratch),
                                 .len = bytes,
                                 .write = true,
                                 .buffer = scope_name(t.scratch)});
        continue;
      }
      auto [lo, hi] = args_of(t.operand);
      for (size_t i = lo; i < hi; ++i) {
        if (!refs[i]) {
          scalar_reads(c, n.args[i].scalar, ev.accesses, ct);
          continue;
        }
        // An atomic op's read-modify-write of its destination (SetAtomicAdd + DataCopy /
        // Fixpipe: the accumulation happens in the memory system, AscendC "SetAtomicAdd").
        const bool atomic = op.atomic && t.access == tl::Access::ReadWrite;
        if (t.access != tl::Access::Write)
          for (auto& x : accesses_of(c, *refs[i], false, &ct)) {
            x.atomic = atomic;
            ev.accesses.push_back(x);
          }
        if (t.access != tl::Access::Read)
          for (auto& x : accesses_of(c, *refs[i], true, &ct)) {
            x.atomic = atomic;
            ev.accesses.push_back(x);
          }
      }
    }
    set_cost_inputs(ev, n, refs, spec);
    set_cost_flags(ev, c, ct, refs, spec);
    if (&op == &ops::dcci()) ev.mode = n.attr_bool("entire") ? 1 : 0;  // the whole cache
    if (&op == &ops::mma()) {
      const TileArg* init = op_operand(n, "init");
      ev.accumulates = !init || c.eval_int(init->scalar) == 0;
    }
    if (spec.cost == CostClass::VecSort) {
      // A full sort (sort, topk: an `actual_num` operand) is Sort32 over the sorted length and
      // the MrgSort passes that length needs (timing_costs.cpp); a merge_sort is one MrgSort
      // over its bytes. m = elements entering Sort32, k = entries a merged list keeps.
      const TileArg* num = op_operand(n, "actual_num");
      const TileArg* keep = op_operand(n, "k");
      if (num) ev.m = std::max<int64_t>(0, c.eval_int(num->scalar));
      ev.k = keep ? std::max<int64_t>(1, c.eval_int(keep->scalar)) : ev.m;
    }
    push_event(ct, std::move(ev));
  }
}

void record_sync(Core& c, CoreTrace& ct, const SyncNode& s) {
  TraceEvent ev;
  ev.loc = s.loc;
  ev.name = std::string(sync_name(s.sync_kind));
  ev.pipe = s.src;
  ev.dst = s.dst;
  ev.mode = s.mode;
  ev.origin = s.origin;
  if (s.event_id.defined()) ev.id = static_cast<int>(c.eval_int(s.event_id));
  switch (s.sync_kind) {
    case SyncKind::SetFlag:
      ev.kind = EventKind::SetFlag;
      break;
    case SyncKind::WaitFlag:
      ev.kind = EventKind::WaitFlag;
      break;
    case SyncKind::PipeBarrier:
      ev.kind = EventKind::Barrier;
      break;
    case SyncKind::BarrierAll:
      ev.kind = EventKind::Barrier;
      ev.pipe = Pipe::ALL;
      break;
    case SyncKind::SetCrossFlag:
      ev.kind = EventKind::SetCross;
      break;
    case SyncKind::WaitCrossFlag:
      ev.kind = EventKind::WaitCross;
      break;
    case SyncKind::SyncAll:
      ev.kind = EventKind::SyncAll;
      ev.pipe = Pipe::ALL;
      break;
  }
  push_event(ct, std::move(ev));
}

void record_scalar(Core& c, CoreTrace& ct, const StmtNode& s) {
  TraceEvent ev;
  ev.kind = EventKind::Op;
  ev.pipe = Pipe::S;
  ev.loc = s.loc;
  if (auto* st = dynamic_cast<const StoreNode*>(&s)) {
    ev.name = "store";
    ct.pending_scalar_ops += scalar_ops_of(st->value);
    for (const auto& i : st->indices) ct.pending_scalar_ops += scalar_ops_of(i);
    scalar_reads(c, st->value, ev.accesses, ct);
    for (const auto& i : st->indices) scalar_reads(c, i, ev.accesses, ct);
    if (st->buffer->scope != MemScope::Var) {
      BufferRegion r{st->buffer, {}};
      for (const auto& i : st->indices) r.ranges.push_back({i, Expr(1)});
      TileRef t = c.resolve(r, "store", st->buffer->name);
      for (auto& a : accesses_of(c, t, true, &ct)) ev.accesses.push_back(a);
    } else if (ev.accesses.empty()) {
      ct.pending_scalar_ops += 1;  // a register move
    }
  } else if (auto* l = dynamic_cast<const LetNode*>(&s)) {
    ev.name = "let";
    ct.pending_scalar_ops += std::max<int64_t>(1, scalar_ops_of(l->value));
    scalar_reads(c, l->value, ev.accesses, ct);
  }
  // Memory traffic is an event of the S pipe (a scalar load or store); pure arithmetic waits
  // for the next event.
  if (!ev.accesses.empty()) push_event(ct, std::move(ev));
}

}  // namespace tl::npu
