// The cube unit's tile ops and the copies around it as AscendC calls: GM -> L1 with ND -> NZ
// (DataCopy with Nd2NzParams), L1 -> L0A/L0B (LoadData with LoadData2DParams, one call per row
// of fractals), the matrix multiply (Mmad with MmadParams), L0C -> GM (Fixpipe with
// FixpipeParamsV220, NZ -> ND) and InitConstValue. The layouts are the virtual NPU's
// (include/tl/npu/layout.h; docs/hardware.md section 5): L1 NZ (column blocks of 16 x c0
// fractals, c0 = 32 B / sizeof), L0A ZZ (fractal rows), L0B ZN (fractal rows over K, each
// fractal n-major), L0C NZ with 16 x 16 fractals. A LoadData repeat moves one 512-byte fractal;
// the fractal orders above give the strides (docs/ascendc.md, "Cube").
#include <fmt/ranges.h>

#include "emitter.h"
#include "tl/ir_ops.h"
#include "tl/ops.h"
#include "tl/storage.h"

namespace tl::ascendc {
namespace {

int64_t align_up(int64_t x, int64_t a) {
  return (x + a - 1) / a * a;
}

/// A matrix operand in a fractal memory: its buffer's padded height (the NZ column-block
/// height / ZZ row count), padded width, the region's rows x cols and start (constants where
/// the emitter needs them) and the leading-dimension (multi-buffer stage) element offset.
struct Frac {
  Operand o;
  int64_t R = 0, C = 0;        // the buffer's last two dimensions
  int64_t rows = 0, cols = 0;  // the region's (upper bounds when the extents are expressions)
  Expr erows, ecols;           // the region's extents as written (constants or run-time values)
  int64_t rows_lo = 0, cols_lo = 0;  // lower bounds of those
  Expr r0, c0;                       // the region's start in the last two dimensions
  Expr lead;                         // element offset of the region's matrix (leading dimensions)
};

}  // namespace

bool Emitter::emit_cube(const TileOpNode& n) {
  const SourceLoc& loc = n.loc;
  const bool gemm_v0 = n.op == &ops::gemm_v0(), mma = n.op == &ops::mma();
  const bool copy = n.op == &ops::copy(), init = n.op == &ops::init_const();
  if (!gemm_v0 && !mma && !copy && !init) {
    if (n.op->unit == OpUnit::Cube)
      unsupported(loc, fmt::format("T.{} (the cube unit)", n.op->name));
    return false;
  }
  // `dynamic`: the region's extents may be expressions (a copy clipped at a tensor's end, GM
  // -> L1 or L0C -> GM, whose AscendC parameters take run-time values); rows/cols are then
  // their upper bounds over the loop ranges, which must lie inside the buffer.
  auto frac = [&](int index, const char* what, bool dynamic = false) {
    Frac f;
    f.o = operand(n, index);
    const Buffer& b = f.o.buf;
    const size_t nd = b->shape.size();
    std::vector<int64_t> shape;
    for (const auto& d : b->shape)
      if (auto c = as_const_int(d)) shape.push_back(*c);
    f.ecols = f.o.extents.back();
    f.erows = nd >= 2 ? f.o.extents[nd - 2] : Expr(1);
    auto extent = [&](const Expr& e, int64_t limit, int64_t* lo) -> std::optional<int64_t> {
      if (auto c = as_const_int(e)) {
        *lo = *c;
        return c;
      }
      if (!dynamic) return std::nullopt;
      const auto iv = arith::bound(e, ivs_);
      if (iv.hi > limit) return std::nullopt;  // not provably inside the buffer
      *lo = iv.lo;
      return iv.hi;
    };
    std::optional<int64_t> rows, lead_rows;
    if (shape.size() == nd) {
      rows = extent(f.ecols, shape[nd - 1], &f.cols_lo);
      lead_rows = extent(f.erows, nd >= 2 ? shape[nd - 2] : 1, &f.rows_lo);
    }
    if (shape.size() != nd || !rows || !lead_rows)
      unsupported(
          loc, fmt::format("T.{}: the {} operand '{}' of dynamic shape{}", n.op->name, what,
                           b->name, dynamic ? " (an extent not provably within the buffer)" : ""));
    for (size_t d = 0; d + 2 < nd; ++d)
      if (!as_const_int(f.o.extents[d]) || *as_const_int(f.o.extents[d]) != 1)
        unsupported(loc, fmt::format("T.{}: '{}' is not a matrix (leading extents 1)", n.op->name,
                                     b->name));
    f.R = nd >= 2 ? shape[nd - 2] : 1;
    f.C = shape[nd - 1];
    f.rows = *lead_rows;
    f.cols = *rows;
    f.r0 = nd >= 2 ? f.o.starts[nd - 2] : Expr(0);
    f.c0 = f.o.starts[nd - 1];
    // Leading dimensions index whole matrices of storage_bytes(last two dims).
    const int64_t mat = storage_bytes(b->scope, b->dtype, {f.R, f.C}) / dtype_bytes(b->dtype);
    Expr lead = 0;
    for (size_t d = 0; d + 2 < nd; ++d) lead = lead * b->shape[d] + f.o.starts[d];
    f.lead = lead * ci(mat);
    return f;
  };
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) unsupported(loc, fmt::format("T.{} {}", n.op->name, what));
  };
  auto multiple = [&](const Frac&, const Expr& e, int64_t m) {
    return known_multiple(e) % m == 0;  // a known multiple of m elements
  };
  // A run-time value `e` for a parameter field that takes [lo, hi]. When the loop ranges prove
  // it inside, nothing; else (a dynamic size, e.g. the row pitch M of a transposed operand)
  // `if (e out of range) { AscendC::Trap(); }` before the call ("Trap" API page: stops the AI
  // Core; the CPU model fails naming the line): the narrow field never wraps silently.
  auto field_guard = [&](const Expr& e, int64_t lo, int64_t hi, const char* field) {
    const auto iv = arith::bound(e, ivs_);
    if (iv.lo >= lo && iv.hi <= hi) return;
    const std::string v = expr(e, loc);
    std::vector<std::string> out;  // only the sides the value's dtype can reach
    if (iv.lo < lo) out.push_back(fmt::format("{} < {}", v, lo));
    if (iv.hi > hi) out.push_back(fmt::format("{} > {}", v, hi));
    line(fmt::format("// {} takes [{}, {}]: stop rather than wrap", field, lo, hi));
    open(fmt::format("if ({})", fmt::join(out, " || ")), loc);
    line("AscendC::Trap();", loc);
    close();
  };
  // `if (rows > 0 && cols > 0)` for a clipped region whose extents the loop ranges do not
  // prove within the fields (the bounds ignore enclosing conditions, e.g. a persistent worker's
  // `if (tile < tiles)`); empty when they do. An empty region moves nothing on the virtual NPU
  // either, and Fixpipe's mSize / nSize start at 1.
  // `least`: the smallest extent the fields take (Nd2Nz nValue / dValue start at 0, Fixpipe
  // mSize / nSize at 1).
  auto positive = [&](const Frac& f, int64_t least) {
    std::vector<std::string> g;
    if (f.rows_lo < least) g.push_back(fmt::format("{} > 0", expr(f.erows, loc)));
    if (f.cols_lo < least) g.push_back(fmt::format("{} > 0", expr(f.ecols, loc)));
    return g.empty() ? std::string() : fmt::format("if ({})", fmt::join(g, " && "));
  };
  // Two extents of a copy's sides: the same value for every value of the variables.
  auto same = [&](const Expr& a, const Expr& b) {
    auto d = arith::constant_difference(a, b, ivs_);
    return d && *d == 0;
  };
  const std::string T = [&] {
    return ctype(n.args[0].is_region() ? n.args[0].region.buffer->dtype : DType::Float32, loc);
  }();

  // LoadData of the matrix `f` (in L1, NZ) into the L0 tensor `dst` (element offset `dst_off`):
  // A into L0A (ZZ) or B into L0B (ZN), `transpose`: the L1 matrix is the operand's transpose.
  auto load = [&](const Frac& f, MemScope l0, bool transpose, const std::string& dst,
                  const Expr& dst_off) {
    const DType t = f.o.buf->dtype;
    const int64_t es = dtype_bytes(t), c0 = 32 / es, fr = 512 / es;
    const int64_t rp = align_up(f.R, 16);
    need(f.o.buf->scope == MemScope::L1, "loading from outside L1");
    need(multiple(f, f.r0, 16) && multiple(f, f.c0, c0),
         fmt::format("loading '{}' from a start off the fractal grid", f.o.buf->name));
    // L1 source start: fractal (r0/16, c0/c0) of the NZ matrix.
    Expr src = f.lead + f.c0 / ci(c0) * ci(rp * c0) + f.r0 * ci(c0);
    const int64_t rb = align_up(f.rows, 16) / 16, cb = align_up(f.cols, c0) / c0;
    std::string loop, body;
    // LoadData ("LoadData" API page, LoadData2DParams{startIndex, repeatTimes, srcStride, sid,
    // dstGap, ifTranspose, addrMode}): repeatTimes fractals, the source stepping srcStride
    // fractals, the destination one after the other. Fields set by name.
    std::string p = fresh("tl_ld", true);
    open("", loc);
    line(fmt::format("AscendC::LoadData2DParams {};", p), loc);
    const std::string rv = fresh("tl_i", true);
    Var iv(rv, DType::Int32);
    if (l0 == MemScope::L0A && !transpose) {
      // ZZ row of fractals i = the NZ fractals (i, 0..cb) rp/16 apart; same fractal layout.
      need(cb <= 255, "loading more than 255 fractals a row");
      line(fmt::format("{}.repeatTimes = {};", p, cb), loc);
      line(fmt::format("{}.srcStride = {};", p, rp / 16), loc);
      line(fmt::format("{}.ifTranspose = false;", p), loc);
      bind_row(iv, rv, rb);
      open(fmt::format("for (int32_t {0} = 0; {0} < {1}; ++{0})", rv, rb), loc);
      line(fmt::format("AscendC::LoadData({}, {}, {});", sub(dst, dst_off + iv * ci(cb * fr), loc),
                       sub(name(f.o.buf), src + iv * ci(fr), loc), p),
           loc);
    } else if (l0 == MemScope::L0B && transpose) {
      // B^T [N, K] in NZ: fractal (nb, kb) holds [n][k] as ZN does; ZN row kb = NZ column
      // block kb, consecutive fractals.
      const int64_t nb = rb, kb = cb;
      need(nb <= 255, "loading more than 255 fractals a row");
      line(fmt::format("{}.repeatTimes = {};", p, nb), loc);
      line(fmt::format("{}.srcStride = 1;", p), loc);
      line(fmt::format("{}.ifTranspose = false;", p), loc);
      bind_row(iv, rv, kb);
      open(fmt::format("for (int32_t {0} = 0; {0} < {1}; ++{0})", rv, kb), loc);
      line(fmt::format("AscendC::LoadData({}, {}, {});", sub(dst, dst_off + iv * ci(nb * fr), loc),
                       sub(name(f.o.buf), src + iv * ci(rp * c0), loc), p),
           loc);
    } else {
      // The two transposing cases turn each 16 x 16 fractal: 16-bit types only (LoadData
      // "ifTranspose").
      need(es == 2, fmt::format("loading {} '{}' {} into {} (LoadData transposes 16-bit types "
                                "only)",
                                dtype_name(t), f.o.buf->name,
                                transpose ? "transposed" : "untransposed", scope_name(l0)));
      if (l0 == MemScope::L0B) {
        // B [K, N] in NZ: ZN row kb = the NZ fractals (kb, 0..nb) rp/16 apart, transposed.
        const int64_t kb = rb, nb = cb;
        need(nb <= 255, "loading more than 255 fractals a row");
        line(fmt::format("{}.repeatTimes = {};", p, nb), loc);
        line(fmt::format("{}.srcStride = {};", p, rp / 16), loc);
        line(fmt::format("{}.ifTranspose = true;", p), loc);
        bind_row(iv, rv, kb);
        open(fmt::format("for (int32_t {0} = 0; {0} < {1}; ++{0})", rv, kb), loc);
        line(
            fmt::format("AscendC::LoadData({}, {}, {});", sub(dst, dst_off + iv * ci(nb * fr), loc),
                        sub(name(f.o.buf), src + iv * ci(fr), loc), p),
            loc);
      } else {
        // A^T [K, M] in NZ: ZZ row mb = NZ column block mb (consecutive fractals), transposed.
        const int64_t kb = rb, mb = cb;
        need(kb <= 255, "loading more than 255 fractals a row");
        line(fmt::format("{}.repeatTimes = {};", p, kb), loc);
        line(fmt::format("{}.srcStride = 1;", p), loc);
        line(fmt::format("{}.ifTranspose = true;", p), loc);
        bind_row(iv, rv, mb);
        open(fmt::format("for (int32_t {0} = 0; {0} < {1}; ++{0})", rv, mb), loc);
        line(
            fmt::format("AscendC::LoadData({}, {}, {});", sub(dst, dst_off + iv * ci(kb * fr), loc),
                        sub(name(f.o.buf), src + iv * ci(rp * c0), loc), p),
            loc);
      }
    }
    close();
    close();
    vars_.erase(iv.node());
  };

  // Mmad ("Mmad" API page, MmadParams{m, n, k, cmatrixInitVal, cmatrixSource, ...}).
  auto mmad = [&](const std::string& c, const std::string& a, const std::string& b, int64_t M,
                  int64_t N, int64_t K) {
    need(M > 1, "with m = 1 (Mmad's GEMV mode reads A as ND)");
    need(M <= 4095 && N <= 4095 && K <= 4095, "with m, n or k above 4095");
    const int ii = n.op->operands.size() > 3 ? 3 : -1;
    std::string initv = "true";
    if (ii >= 0 && static_cast<size_t>(ii) < n.args.size() && n.args[3].is_scalar())
      initv = expr(n.args[3].scalar, loc);
    const std::string p = fresh("tl_mm", true);
    open("", loc);
    line(fmt::format("AscendC::MmadParams {};", p), loc);
    line(fmt::format("{}.m = {};", p, M), loc);
    line(fmt::format("{}.n = {};", p, N), loc);
    line(fmt::format("{}.k = {};", p, K), loc);
    line(fmt::format("{}.cmatrixInitVal = {};", p, initv), loc);
    line(fmt::format("{}.cmatrixSource = false;", p), loc);
    line(fmt::format("AscendC::Mmad({}, {}, {}, {});", c, a, b, p), loc);
    close();
  };
  auto whole_l0c = [&](const Frac& c) {
    need(c.o.buf->scope == MemScope::L0C && is_const_zero(c.r0) && is_const_zero(c.c0) &&
             c.rows == c.R && c.cols == c.C,
         fmt::format("accumulating into part of '{}' (Mmad writes a whole L0C matrix)",
                     c.o.buf->name));
  };

  if (gemm_v0) {
    Frac A = frac(0, "A"), B = frac(1, "B"), C = frac(2, "C");
    const bool ta = n.attr_bool("transpose_A"), tb = n.attr_bool("transpose_B");
    const int64_t M = ta ? A.cols : A.rows, K = ta ? A.rows : A.cols;
    const int64_t N = tb ? B.rows : B.cols;
    whole_l0c(C);
    need(C.R == M && C.C == N, "with C's shape other than [M, N]");
    const DType t = A.o.buf->dtype;
    const int64_t c0 = 32 / dtype_bytes(t);
    // The op's expansion (tl/op.h, gemm_v0): barriers around the loads into L0A/L0B at offset
    // 0 and around the Mmad, as TileLang-Ascend's template issues them.
    line("AscendC::PipeBarrier<PIPE_ALL>();", loc);
    const std::string la = fresh("tl_a", true), lb = fresh("tl_b", true);
    open("", loc);
    line(fmt::format("AscendC::LocalTensor<{0}> {1} = tl_l0a.GetWithOffset<{0}>({2}, 0);", T, la,
                     align_up(M, 16) * align_up(K, c0)),
         loc);
    line(fmt::format("AscendC::LocalTensor<{0}> {1} = tl_l0b.GetWithOffset<{0}>({2}, 0);", T, lb,
                     align_up(K, c0) * align_up(N, 16)),
         loc);
    scopes_.insert(MemScope::L0A);
    scopes_.insert(MemScope::L0B);
    load(A, MemScope::L0A, ta, la, Expr(0));
    load(B, MemScope::L0B, tb, lb, Expr(0));
    line("AscendC::PipeBarrier<PIPE_ALL>();", loc);
    mmad(at(C.o), la, lb, M, N, K);
    close();
    line("AscendC::PipeBarrier<PIPE_ALL>();", loc);
    return true;
  }
  if (mma) {
    Frac A = frac(0, "A"), B = frac(1, "B"), C = frac(2, "C");
    const int64_t c0 = 32 / dtype_bytes(A.o.buf->dtype);
    whole_l0c(C);
    // Mmad reads A as ZZ rows of ceil(k / c0) fractals and B as ZN rows of ceil(n / 16): the
    // regions must be whole fractal rows of their buffers.
    need(A.o.buf->scope == MemScope::L0A && is_const_zero(A.c0) && A.cols == A.C &&
             multiple(A, A.r0, 16),
         "with A other than whole rows of an L0A matrix");
    need(B.o.buf->scope == MemScope::L0B && is_const_zero(B.c0) && B.cols == B.C &&
             multiple(B, B.r0, c0),
         "with B other than whole K-rows of an L0B matrix");
    need(C.R == A.rows && C.C == B.cols, "with C's shape other than [M, N]");
    const std::string a = sub(name(A.o.buf), A.lead + A.r0 * ci(align_up(A.C, c0)), loc);
    const std::string b = sub(name(B.o.buf), B.lead + B.r0 * ci(align_up(B.C, 16)), loc);
    mmad(at(C.o), a, b, A.rows, B.cols, A.cols);
    return true;
  }
  if (init) {
    Operand d = operand(n, 0);
    std::vector<int64_t> shape;
    for (const auto& x : d.buf->shape)
      if (auto c = as_const_int(x)) shape.push_back(*c);
    need(shape.size() == d.buf->shape.size() && is_const_zero(d.offset) &&
             const_product(d.extents) == const_product(d.buf->shape),
         "on part of a buffer");
    const int64_t blocks = storage_bytes(d.buf->scope, d.buf->dtype, shape) / 32;
    need(blocks <= 32767, "over more than 32767 blocks");
    // InitConstValue ("InitConstValue" API page): InitConstValueParams<T>{repeatTimes,
    // blockNum, dstGap, initValue}: one repeat of every 32-byte block of the tile's storage.
    const std::string p = fresh("tl_ic", true), t = ctype(d.buf->dtype, loc);
    open("", loc);
    line(fmt::format("AscendC::InitConstValueParams<{}> {};", t, p), loc);
    line(fmt::format("{}.repeatTimes = 1;", p), loc);
    line(fmt::format("{}.blockNum = {};", p, blocks), loc);
    line(fmt::format("{}.dstGap = 0;", p), loc);
    line(fmt::format("{}.initValue = {};", p, scalar(n.args[1].scalar, d.buf->dtype, loc)), loc);
    line(fmt::format("AscendC::InitConstValue({}, {});", name(d.buf), p), loc);
    close();
    return true;
  }
  // T.copy on a cube path.
  Operand src = operand(n, 0), dst = operand(n, 1);
  const MemScope S = src.buf->scope, D = dst.buf->scope;
  const bool relu = n.attr_bool("enable_relu"), transpose = n.attr_bool("transpose");
  if (S == MemScope::GM && D == MemScope::L1) {
    need(n.attr_bool("nd2nz") && !transpose && !relu, "GM -> L1 without ND -> NZ");
    Frac d = frac(1, "dst", /*dynamic=*/true);
    const int64_t c0 = 32 / dtype_bytes(d.o.buf->dtype), rp = align_up(d.R, 16);
    need(multiple(d, d.c0, c0), "into L1 at a column off the c0 grid");
    need(multiple(d, d.r0, 16), "into L1 at a row off the 16-row fractal grid");
    need(src.pitch.defined() && same(src.cols, d.ecols) && same(src.rows, d.erows),
         "from GM rows that do not match the L1 region");
    // DataCopy with Nd2NzParams{ndNum, nValue, dValue, srcNdMatrixStride, srcDValue,
    // dstNzC0Stride, dstNzNStride, dstNzMatrixStride} ("DataCopy" API page, 随路格式转换,
    // Nd2NzParams): nValue in [0, 16384] rows, dValue in [0, 65535] elements, srcDValue (the GM
    // row pitch, elements) in [1, 65535], dstNzC0Stride (the L1 column-block height, in 32-byte
    // blocks) in [1, 16384]. nValue / dValue / srcDValue may be run-time values (a copy clipped
    // at the tensor's end, a dynamic size): their bounds over the loop ranges must fit the
    // fields, else the copy is not emitted (a uint16_t field would silently wrap).
    need(d.rows <= 16384, "of possibly more than 16384 rows (Nd2Nz nValue)");
    need(d.cols <= 65535, "of possibly more than 65535 columns (Nd2Nz dValue)");
    need(rp <= 16384, "into an L1 matrix of more than 16384 rows (Nd2Nz dstNzC0Stride)");
    field_guard(src.pitch, 1, 65535, "Nd2NzParams srcDValue");
    Expr off = d.lead + d.c0 / ci(c0) * ci(rp * c0) + d.r0 * ci(c0);
    const std::string guard = positive(d, 0);
    if (!guard.empty()) open(guard, loc);
    line(fmt::format("AscendC::DataCopy({}, {}, AscendC::Nd2NzParams(1, {}, {}, 0, {}, {}, 1, 0));",
                     sub(name(d.o.buf), off, loc), at(src), expr(src.rows, loc), expr(d.ecols, loc),
                     expr(src.pitch, loc), rp),
         loc);
    if (!guard.empty()) close();
    return true;
  }
  if (S == MemScope::L1 && (D == MemScope::L0A || D == MemScope::L0B)) {
    need(!relu, "with enable_relu");
    Frac s = frac(0, "src"), d = frac(1, "dst");
    const int64_t c0 = 32 / dtype_bytes(d.o.buf->dtype);
    // The destination rows must be whole fractal rows of the L0 matrix.
    if (D == MemScope::L0A) {
      need(is_const_zero(d.c0) && d.cols == d.C && multiple(d, d.r0, 16),
           "into part of an L0A row of fractals");
      load(s, D, transpose, name(d.o.buf), d.lead + d.r0 * ci(align_up(d.C, c0)));
    } else {
      need(is_const_zero(d.c0) && d.cols == d.C && multiple(d, d.r0, c0),
           "into part of an L0B row of fractals");
      load(s, D, transpose, name(d.o.buf), d.lead + d.r0 * ci(align_up(d.C, 16)));
    }
    return true;
  }
  if (S == MemScope::L0C && D == MemScope::GM) {
    Frac s = frac(0, "src", /*dynamic=*/true);
    need(!transpose, "with transpose");
    need(multiple(s, s.r0, 16) && multiple(s, s.c0, 16), "from L0C off the fractal grid");
    need(dst.pitch.defined() && same(dst.cols, s.ecols) && same(dst.rows, s.erows),
         "into GM rows that do not match");
    const int64_t rp = align_up(s.R, 16);
    const DType from = s.o.buf->dtype, to = dst.buf->dtype;
    std::string quant = "NoQuant";
    if (from == DType::Float32 && to == DType::Float16) quant = "F322F16";
    if (from == DType::Float32 && to == DType::BFloat16) quant = "F322BF16";
    need(from == to || quant != "NoQuant",
         fmt::format("converting {} -> {}", dtype_name(from), dtype_name(to)));
    // Fixpipe ("Fixpipe" API page, FixpipeParamsV220{nSize, mSize, srcStride, dstStride,
    // quantPre, reluEn, ...}), row-major output (CFG_ROW_MAJOR: NZ -> ND). With NZ -> ND,
    // nSize (columns) is any value in [1, 4095] (a multiple of 16 only without NZ2ND), mSize
    // (rows) in [1, 65535], srcStride the L0C column-block height in 16-element units ([0,
    // 65535], whole fractals here), dstStride the GM row pitch in elements (>= nSize).
    // nSize / mSize / dstStride may be run-time values; a clipped copy whose extent can be 0
    // (a worker past the last tile) runs under `if (extent > 0)`, as nSize/mSize start at 1.
    need(s.cols <= 4095, "of a width possibly above 4095 (Fixpipe nSize)");
    need(s.rows <= 65535, "of possibly more than 65535 rows (Fixpipe mSize)");
    need(rp <= 65535, "from an L0C matrix of more than 65535 rows (Fixpipe srcStride)");
    field_guard(dst.pitch, 1, UINT32_MAX, "FixpipeParamsV220 dstStride");
    const std::string p = fresh("tl_fp", true);
    Expr off = s.lead + s.c0 / 16 * ci(rp * 16) + s.r0 * 16;
    open(positive(s, 1), loc);
    line(fmt::format("AscendC::FixpipeParamsV220 {};", p), loc);
    line(fmt::format("{}.nSize = {};", p, expr(s.ecols, loc)), loc);
    line(fmt::format("{}.mSize = {};", p, expr(dst.rows, loc)), loc);
    line(fmt::format("{}.srcStride = {};", p, rp), loc);
    line(fmt::format("{}.dstStride = {};", p, expr(dst.pitch, loc)), loc);
    line(fmt::format("{}.quantPre = QuantMode_t::{};", p, quant), loc);
    line(fmt::format("{}.reluEn = {};", p, relu ? "true" : "false"), loc);
    line(fmt::format("AscendC::Fixpipe<{}, {}, AscendC::CFG_ROW_MAJOR>({}, {}, {});",
                     ctype(to, loc), ctype(from, loc), at(dst), sub(name(s.o.buf), off, loc), p),
         loc);
    close();
    return true;
  }
  return false;
}

}  // namespace tl::ascendc
