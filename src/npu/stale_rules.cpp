// The stale-data checker's validity rules (stale.h) for the vector ops, the reductions, the
// sort family and the debug ops; the move and cube rules are beside their semantics
// (exec_move.cpp, exec_cube.cpp). Each rule runs before the op's semantics, reads the inputs'
// shadows (and, where the map depends on data, the inputs' values) and writes the shadow of
// every byte the semantics write, following the semantics in exec_vector.cpp and
// exec_reduce_sort.cpp:
//  - elementwise ops (and casts): per position, from the sources at that position and every
//    scalar operand;
//  - row-expand ops and broadcasts: by their index maps; reductions: per reduced line (and the
//    old destination when they accumulate);
//  - compare: each mask byte from the eight positions it holds (a partly valid byte keeps which
//    bits are valid, CoreShadow::mask_bits); select: from the mask bit and
//    the source it picks; gather: from the offset and the element it addresses (an invalid
//    offset is also an address finding); gather_mask by its map, or, with an invalid mask bit,
//    the whole destination (which positions are written depends on it);
//  - the sorts: conservatively, every entry written from every score read (an invalid score
//    moves every other entry);
//  - printf, dump_tensor: write nothing.
// A rule that meets inconsistent operands returns: the semantics report them.
#include <algorithm>
#include <cstring>

#include "broadcast_rows.h"
#include "stale.h"
#include "tl/ops.h"

namespace tl::npu {
namespace {

/// A region operand's shadow, or nullopt when `name` is omitted or a scalar.
std::optional<TileRef> shadow_operand(const TileOpNode& n, Core& c, std::string_view name) {
  const TileArg* a = op_operand(n, name);
  if (!a || !a->is_region()) return std::nullopt;
  return shadow_of(c, c.resolve(a->region, n.op->name, name));
}

/// dst[i] from the tile operands `srcs` at position i (and dst's own element when the op
/// reads it) and from every scalar operand.
void elementwise(const TileOpNode& n, Core& c, std::initializer_list<const char*> srcs,
                 bool reads_dst = false) {
  TileRef sd = shadow_of(c, c.operand(n, "dst"));
  const uint8_t st = scalar_taints(n, c);
  std::vector<TileRef> ins;
  for (const char* name : srcs)
    if (auto s = shadow_operand(n, c, name)) {
      if (s->numel() != sd.numel()) return;
      ins.push_back(*s);
    }
  if (reads_dst) ins.push_back(sd);
  // In place (dst is exactly one source, `T.tile.mul(x, x, y)`): with every other input valid,
  // dst's shadow stays as it is; nothing is scanned or written for it.
  auto same = [&](const TileRef& s) {
    return s.base == sd.base && s.dtype == sd.dtype && s.start == sd.start && s.extent == sd.extent;
  };
  const bool in_place = std::any_of(ins.begin(), ins.end(), same);
  bool any = st != kValid;
  for (size_t i = 0; i < ins.size() && !any; ++i)
    if (!(in_place && same(ins[i]))) any = region_origin(ins[i]) != kValid;
  if (!any) {
    if (!in_place) region_fill(sd, kValid);
    return;
  }
  std::vector<uint8_t> out(sd.numel(), st), o;
  for (const auto& s : ins) {
    region_origins(s, o);
    for (size_t i = 0; i < out.size(); ++i) out[i] = first_of(out[i], o[i]);
  }
  region_store(sd, out);
}

void unary(const TileOpNode& n, Core& c) {
  elementwise(n, c, {"src"});
}
void binary(const TileOpNode& n, Core& c) {
  elementwise(n, c, {"src0", "src1"});
}
void axpy(const TileOpNode& n, Core& c) {
  elementwise(n, c, {"src"}, true);
}

/// dst[r, k] from src0[r, k] and src1[r].
void row_expand(const TileOpNode& n, Core& c) {
  TileRef sd = shadow_of(c, c.operand(n, "dst"));
  auto a = shadow_operand(n, c, "src0"), b = shadow_operand(n, c, "src1");
  if (!a || !b || a->numel() != sd.numel() || b->numel() != a->rows()) return;
  const bool in_place =
      a->base == sd.base && a->dtype == sd.dtype && a->start == sd.start && a->extent == sd.extent;
  if (region_origin(*b) == kValid) {
    if (in_place) return;  // dst's shadow stays as it is
    if (region_origin(*a) == kValid) return region_fill(sd, kValid);
  }
  std::vector<uint8_t> oa, ob;
  region_origins(*a, oa);
  region_origins(*b, ob);
  const int64_t C = a->cols();
  for (size_t i = 0; i < oa.size(); ++i) oa[i] = first_of(oa[i], ob[i / C]);
  region_store(sd, oa);
}

/// Each destination byte k < ceil(count / 8) holds the bits of positions 8k .. 8k + 7.
void compare(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst");
  auto a = shadow_operand(n, c, "src0"), b = shadow_operand(n, c, "src1");
  if (!a) return;
  const int64_t count = a->numel();
  if ((b && b->numel() != count) || d.numel() * dtype_bytes(d.dtype) * 8 < count) return;
  std::vector<uint8_t> oa, ob, bytes;
  region_origins(*a, oa);
  if (b)
    region_origins(*b, ob);
  else
    ob.assign(count, scalar_operand_taint(n, c, "src1"));
  TileRef sd = shadow_of(c, d);
  load_bytes(sd, bytes);
  const bool byte_mask = dtype_bytes(d.dtype) == 1;
  auto& side = c.shadow()->mask_bits;
  for (int64_t k = 0; k < (count + 7) / 8; ++k) {
    uint8_t o = kValid, bad = 0, all = 0;
    for (int64_t i = 8 * k; i < std::min(count, 8 * k + 8); ++i) {
      const uint8_t oi = first_of(oa[i], ob[i]);
      o = first_of(o, oi);
      all |= static_cast<uint8_t>(1u << (i - 8 * k));
      if (oi) bad |= static_cast<uint8_t>(1u << (i - 8 * k));
    }
    bytes[k] = o;
    if (byte_mask) {
      const uint8_t* at = sd.at_flat(k);
      if (o && bad != all)
        side[at] = {o, bad};  // partly valid: select reads the valid bits as valid
      else
        side.erase(at);
    }
  }
  store_bytes(sd, bytes);
}

/// dst[i] = the picked source's element, as valid as it and the mask bit that picked it.
void select(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst"), m = c.operand(n, "mask");
  auto a = shadow_operand(n, c, "src0"), b = shadow_operand(n, c, "src1");
  if (!a || a->numel() != d.numel() || (b && b->numel() != d.numel())) return;
  std::vector<uint8_t> bits, mb, oa, ob;
  load_bytes(m, bits);  // the mask's values: the semantics have not run yet
  load_bytes(shadow_of(c, m), mb);
  region_origins(*a, oa);
  if (b)
    region_origins(*b, ob);
  else
    ob.assign(oa.size(), scalar_operand_taint(n, c, "src1"));
  const int64_t mode = n.attr_int("mode"), per_repeat = 256 / dtype_bytes(d.dtype);
  // A mask byte compare left partly valid (CoreShadow::mask_bits): its valid bits are valid.
  const TileRef sm = shadow_of(c, m);
  const bool byte_mask = dtype_bytes(m.dtype) == 1;
  const auto& side = c.shadow()->mask_bits;
  std::vector<uint8_t> out(oa.size());
  for (size_t i = 0; i < oa.size(); ++i) {
    const int64_t bit = mode == 0 ? static_cast<int64_t>(i) % per_repeat : static_cast<int64_t>(i);
    if (bit / 8 >= static_cast<int64_t>(bits.size())) return;
    const bool pick = (bits[bit / 8] >> (bit % 8)) & 1;
    uint8_t mo = mb[bit / 8];
    if (mo && byte_mask && !side.empty()) {
      auto it = side.find(sm.at_flat(bit / 8));
      if (it != side.end() && it->second.first == mo && !((it->second.second >> (bit % 8)) & 1))
        mo = kValid;
    }
    out[i] = first_of(mo, pick ? oa[i] : ob[i]);
  }
  region_store(shadow_of(c, d), out);
}

void fill(const TileOpNode& n, Core& c) {
  region_fill(shadow_of(c, c.operand(n, "dst")), scalar_operand_taint(n, c, "value"));
}

/// The first `count` elements of dst, from the scalar operands.
void progression(const TileOpNode& n, Core& c) {
  TileRef sd = shadow_of(c, c.operand(n, "dst"));
  const uint8_t o = scalar_taints(n, c);
  int64_t count = sd.numel();
  if (const TileArg* a = op_operand(n, "count"); a && a->is_scalar()) count = c.eval_int(a->scalar);
  if (count < 0 || count > sd.numel()) return;
  const int64_t es = dtype_bytes(sd.dtype);
  for (int64_t i = 0; i < count; ++i) std::memset(sd.at_flat(i), o, es);
}

/// dst[i] = src[(base + offsets[i]) / size]: as valid as the offset, the base and the element;
/// an invalid offset or base is an address finding.
void gather(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst"), s = c.operand(n, "src"), o = c.operand(n, "offsets");
  const uint8_t bt = scalar_operand_taint(n, c, "base");
  const int64_t base = c.has_operand(n, "base") ? c.eval_int(op_operand(n, "base")->scalar) : 0;
  std::vector<int64_t> offs;
  std::vector<uint8_t> oo;
  load_i64(o, offs);
  region_origins(shadow_of(c, o), oo);
  const int64_t es = dtype_bytes(s.dtype);
  if (static_cast<int64_t>(offs.size()) < d.numel() || dtype_bytes(d.dtype) != es) return;
  TileRef ss = shadow_of(c, s);
  std::vector<uint8_t> out(d.numel());
  uint8_t address = kValid;
  for (int64_t i = 0; i < d.numel(); ++i) {
    int64_t byte;
    if (__builtin_add_overflow(base, offs[i] & 0xffffffff, &byte) || byte % es != 0 ||
        byte / es >= s.numel())
      return;
    const uint8_t a = first_of(bt, oo[i]);
    address = first_of(address, a);
    out[i] = first_of(a, first_nonzero(ss.at_flat(byte / es), es));
  }
  if (address) {
    StaleFinding f;
    f.kind = StaleFinding::Kind::Address;
    f.op = n.op->name;
    f.operand = "offsets";
    f.buffer = s.buffer->name;
    add_finding(c, std::move(f), address);
  }
  region_store(shadow_of(c, d), out);
}

/// The kept elements, packed; with an invalid mask bit every destination element (which
/// positions are written, and with what, depends on it).
void gather_mask(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst"), s = c.operand(n, "src");
  const std::string& pattern = n.attr_str("pattern");
  std::vector<uint8_t> bits, mb;
  if (c.has_operand(n, "mask")) {
    TileRef m = c.operand(n, "mask");
    load_bytes(m, bits);
    load_bytes(shadow_of(c, m), mb);
  } else if (pattern.empty()) {
    return;
  }
  TileRef sd = shadow_of(c, d), ss = shadow_of(c, s);
  uint8_t mo = kValid;
  for (size_t k = 0; k < mb.size() && static_cast<int64_t>(k) * 8 < s.numel(); ++k)
    mo = first_of(mo, mb[k]);
  if (mo) return region_fill(sd, mo);
  const int64_t es = dtype_bytes(s.dtype);
  int64_t kept = 0;
  for (int64_t i = 0; i < s.numel(); ++i) {
    const bool pick =
        !bits.empty() ? i / 8 < static_cast<int64_t>(bits.size()) && ((bits[i / 8] >> (i % 8)) & 1)
                      : pattern[4 - i % 4] == '1';
    if (!pick) continue;
    if (kept >= d.numel()) return;
    std::memcpy(sd.at_flat(kept++), ss.at_flat(i), es);
  }
}

/// The broadcast's index map (broadcast_rows.h, the one the semantics use), run on the shadows
/// (it only moves elements).
void broadcast(const TileOpNode& n, Core& c) {
  TileRef d = shadow_of(c, c.operand(n, "dst")), s = shadow_of(c, c.operand(n, "src"));
  if (dtype_bytes(d.dtype) != dtype_bytes(s.dtype)) return;
  const int64_t es = dtype_bytes(d.dtype), cols = d.cols();
  broadcast_rows(d, s, n.attr_int("axis"), [&](int64_t r, int64_t sflat, bool last_kept) {
    uint8_t* dst = row_ptr(d, r);
    for (int64_t k = 0; k < cols; ++k)
      std::memcpy(dst + k * es, s.at_flat(last_kept ? sflat + k : sflat), es);
  });
}

/// One 16 x 16 block transposed: the shadow moves with its elements.
void transpose(const TileOpNode& n, Core& c) {
  TileRef d = shadow_of(c, c.operand(n, "dst")), s = shadow_of(c, c.operand(n, "src"));
  if (s.numel() != 256 || d.numel() != 256 || dtype_bytes(s.dtype) != 2) return;
  std::vector<uint8_t> in, out(512);
  load_bytes(s, in);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) std::memcpy(&out[(j * 16 + i) * 2], &in[(i * 16 + j) * 2], 2);
  store_bytes(d, out);
}

/// Each output from its reduced line (and from itself when the op accumulates, clear=False).
void reduce(const TileOpNode& n, Core& c) {
  TileRef s = c.operand(n, "src"), d = c.operand(n, "dst");
  const int64_t nd = static_cast<int64_t>(s.extent.size());
  int64_t dim = n.attr_int("dim");
  if (dim < 0) dim += nd;
  if (dim < 0 || dim >= nd) return;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= s.extent[i];
  for (int64_t i = dim + 1; i < nd; ++i) inner *= s.extent[i];
  const int64_t R = s.extent[dim], outn = outer * inner;
  if (d.numel() != outn) return;
  const bool clear = n.attr_bool("clear");
  TileRef ss = shadow_of(c, s), sd = shadow_of(c, d);
  if (region_origin(ss) == kValid && (clear || region_origin(sd) == kValid))
    return region_fill(sd, kValid);
  std::vector<uint8_t> os, od;
  region_origins(ss, os);
  if (clear)
    od.assign(outn, kValid);
  else
    region_origins(sd, od);
  for (int64_t o = 0; o < outn; ++o) {
    // Output o = (outer index, inner index) reduces R values inner apart (inner = 1: a row).
    const int64_t first = (o / inner) * R * inner + o % inner;
    for (int64_t r = 0; r < R && !od[o]; ++r) od[o] = os[first + r * inner];
  }
  region_store(sd, od);
}

/// The first `entries` (score, index) entries of dst = origin. An entry is two lanes of dst's
/// dtype (exec_reduce_sort.cpp): 8 bytes in float32, 4 in float16.
void write_entries(Core& c, const TileRef& d, int64_t entries, uint8_t origin) {
  std::vector<uint8_t> bytes;
  TileRef sd = shadow_of(c, d);
  load_bytes(sd, bytes);
  const int64_t entry_bytes = 2 * dtype_bytes(d.dtype);
  entries = std::min(entries, static_cast<int64_t>(bytes.size()) / entry_bytes);
  if (entries < 0) return;
  std::memset(bytes.data(), origin, static_cast<size_t>(entries * entry_bytes));
  store_bytes(sd, bytes);
}

/// sort and topk: each written entry from every score read (actual_num of them) and the counts.
void sort(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst"), s = c.operand(n, "src");
  const int64_t actual = c.eval_int(op_operand(n, "actual_num")->scalar);
  if (actual < 0 || actual > s.numel()) return;
  uint8_t o = scalar_taints(n, c);
  std::vector<uint8_t> os;
  region_origins(shadow_of(c, s), os);
  for (int64_t i = 0; i < actual && !o; ++i) o = os[i];
  int64_t entries = (actual + 31) / 32 * 32;
  if (n.op == &ops::topk()) {  // k entries rounded up to whole 32-byte blocks, as the exec writes
    const int64_t per_block = 32 / dtype_bytes(d.dtype);
    entries =
        (2 * c.eval_int(op_operand(n, "k")->scalar) + per_block - 1) / per_block * per_block / 2;
  }
  write_entries(c, d, entries, o);
}

void merge_sort(const TileOpNode& n, Core& c) {
  TileRef d = c.operand(n, "dst");
  uint8_t o = kValid;
  int64_t entries = 0;
  for (const char* name : {"src0", "src1", "src2", "src3"}) {
    if (!c.has_operand(n, name)) continue;
    TileRef s = c.operand(n, name);
    o = first_of(o, region_origin(shadow_of(c, s)));
    entries += s.numel() * dtype_bytes(s.dtype) / 8;
  }
  write_entries(c, d, entries, o);
}

void init_sort_buf(const TileOpNode& n, Core& c) {
  write_entries(c, c.operand(n, "dst"), c.eval_int(op_operand(n, "num")->scalar),
                scalar_taints(n, c));
}

void writes_nothing(const TileOpNode&, Core&) {}

}  // namespace

std::vector<StaleEntry> vector_stale_rules() {
  return {
#define TL_VECTOR_BINARY(NAME, ...) {&ops::tile::NAME(), binary},
#define TL_VECTOR_UNARY(NAME, ...) {&ops::tile::NAME(), unary},
#define TL_VECTOR_ROW_EXPAND(NAME, ...) {&ops::tile::row_expand_##NAME(), row_expand},
#include "tl/vector_ops.def"
      {&ops::tile::bitwise_and(), binary},
      {&ops::tile::bitwise_or(), binary},
      {&ops::tile::bitwise_xor(), binary},
      {&ops::tile::bitwise_not(), unary},
      {&ops::tile::shift_left(), unary},
      {&ops::tile::shift_right(), unary},
      {&ops::tile::relu(), unary},
      {&ops::tile::axpy(), axpy},
      {&ops::tile::leaky_relu(), unary},
      {&ops::tile::clamp(), unary},
      {&ops::tile::cast(), unary},
      {&ops::tile::compare(), compare},
      {&ops::tile::select(), select},
      {&ops::tile::fill(), fill},
      {&ops::tile::createvecindex(), progression},
      {&ops::tile::arith_progression(), progression},
      {&ops::tile::gather(), gather},
      {&ops::tile::gather_mask(), gather_mask},
      {&ops::tile::broadcast(), broadcast},
      {&ops::tile::transpose(), transpose},
  };
}

std::vector<StaleEntry> reduce_sort_stale_rules() {
  return {{&ops::reduce_sum(), reduce},
          {&ops::reduce_max(), reduce},
          {&ops::reduce_min(), reduce},
          {&ops::sort(), sort},
          {&ops::topk(), sort},
          {&ops::merge_sort(), merge_sort},
          {&ops::init_sort_buf(), init_sort_buf}};
}

std::vector<StaleEntry> debug_stale_rules() {
  return {{&ops::printf(), writes_nothing}, {&ops::dump_tensor(), writes_nothing}};
}

}  // namespace tl::npu
