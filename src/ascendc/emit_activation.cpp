// The activations, bitwise ops, shifts and the 16 x 16 transpose as AscendC calls (operands in
// UB, pipe V), and scalar operands read from memory. Each op is emitted only in a form whose
// result on the chip is the virtual NPU's (src/npu/exec_vector.cpp, include/tl/vector_ops.def):
//  - one basic API with the op's meaning: Not, LeakyRelu, ShiftRight, ShiftLeft on unsigned
//    bits (a signed tile is reinterpreted: the API's signed left shift keeps the sign bit, the
//    VM's wraps), Transpose, and Cast float -> float CAST_RINT for T.tile.round;
//  - T.tile.div by a scalar: Duplicate of the scalar into the scratch, then Div (no Divs);
//  - T.tile.clamp: Maxs then Mins, the VM's min(max(x, lo), hi) with lo, hi rounded to the dtype;
//  - T.tile.sigmoid / silu: the VM's fp32 expression 1 / (1 + exp(-x)), x / (1 + exp(-x)) step
//    by step (Muls by -1, Exp, Adds 1, Div), each step rounded to fp32 as the expression is; a
//    half tile is widened first (Cast CAST_NONE, exact) and rounded once at the end (CAST_RINT).
//    AscendC's Sigmoid / Silu advanced APIs are not used: their pages do not state the steps,
//    and a Reciprocal (an approximation) would differ in the last bits;
//  - T.tile.bitwise_xor: (a | b) & ~(a & b) with And, Or, Not (exact). The Xor advanced API's
//    temporary buffer is sized only by a host call (GetXorMaxMinTmpSize), with no documented
//    rule the emitter could apply;
//  - T.tile.sin / cos / tanh stay errors: the VM computes glibc's correctly rounded sinf / cosf /
//    tanhf, AscendC's Sin / Cos / Tanh are their own approximations (and no sequence of basic
//    ops gives glibc's bits), so any call would differ on the chip.
// The sequences keep their intermediates in the emitter's UB scratch (above every planned
// buffer), in chunks that fit the UB left; every step that reads the previous one's result is
// preceded by PipeBarrier<PIPE_V> (the vector pipe's ordering rule, docs/hardware.md).
// The API pages cited are asc-devkit's (docs/api/context/<Name>.md); docs/ascendc.md lists the
// mapping.
#include <functional>

#include "emitter.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/ops.h"

namespace tl::ascendc {
namespace {

int arg_at(const TileOpNode& n, std::string_view operand) {
  for (size_t i = 0; i < n.op->operands.size(); ++i)
    if (n.op->operands[i].name == operand) return static_cast<int>(i);
  TL_ASSERT(false, "op {} has no operand {}", n.op->name, operand);
  return -1;
}

const Expr& scalar_arg(const TileOpNode& n, std::string_view operand) {
  return n.args[static_cast<size_t>(arg_at(n, operand))].scalar;
}

bool reads_memory(const Expr& e) {
  bool hit = false;
  struct V : IRVisitor {
    bool& hit;
    explicit V(bool& h) : hit(h) {}
    void visit_(const LoadNode* l) override {
      if (l->buffer->scope != MemScope::Var) hit = true;
      IRVisitor::visit_(l);
    }
  } v(hit);
  if (e.defined()) v.visit(e);
  return hit;
}

Expr plus(const Expr& a, const Expr& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return a + b;
}

constexpr const char* kBarrierV = "AscendC::PipeBarrier<PIPE_V>();";

/// `body(extra, count)` once per run of the operands' elements: one run when every operand is
/// contiguous, else one per row (an emitted loop; every row 32-byte aligned). `extra[i]` is the
/// element offset of the run in operand i from the operand's start (undefined: 0).
void for_runs(Emitter& e, const std::vector<Operand>& tiles, const std::string& what,
              const SourceLoc& loc,
              const std::function<void(const std::vector<Expr>&, const Expr&)>& body) {
  for (const auto& t : tiles)
    if (!e.aligned(t, t.offset, 32))
      e.unsupported(
          loc, fmt::format("{} with '{}' at an offset not 32-byte aligned", what, t.buf->name));
  bool one_run = true;
  for (const auto& t : tiles) one_run = one_run && t.contiguous;
  const Operand& d = tiles[0];
  if (one_run) {
    body(std::vector<Expr>(tiles.size()), d.rows * d.cols);
    return;
  }
  for (const auto& t : tiles)
    if (!t.pitch.defined() || !e.aligned(t, t.pitch, 32))
      e.unsupported(
          loc, fmt::format("{} over '{}' whose rows are not 32-byte aligned", what, t.buf->name));
  const std::string rv = e.fresh("tl_r", true);
  e.open(fmt::format("for (int32_t {0} = 0; {0} < {1}; ++{0})", rv, e.expr(d.rows, loc)), loc);
  Var rvar(rv, DType::Int32);
  e.bind_row(rvar, rv, d.rows);
  std::vector<Expr> extra;
  for (const auto& t : tiles) extra.push_back(rvar * t.pitch);
  body(extra, d.cols);
  e.close();
  e.var_names().erase(rvar.node());
}

/// `body(offset, count)` per chunk of at most `k` elements (k a multiple of 64, so every chunk
/// starts 256 bytes after the previous one and stays 32-byte aligned): one chunk (offset
/// undefined) when `count` is a constant of at most k, else an emitted loop.
void for_chunks(Emitter& e, const Expr& count, int64_t k, const SourceLoc& loc,
                const std::function<void(const Expr&, const std::string&)>& body) {
  auto c = as_const_int(count);
  if (c && *c <= k) {
    body(Expr(), e.expr(count, loc));
    return;
  }
  const std::string cv = e.fresh("tl_c", true), nv = e.fresh("tl_n", true);
  const std::string total = e.expr(count, loc);
  e.open(fmt::format("for (int32_t {0} = 0; {0} < {1}; {0} += {2})", cv, total, k), loc);
  e.line(fmt::format("const int32_t {} = tl_min<int32_t>({}, {} - {});", nv, k, total, cv), loc);
  Var v(cv, DType::Int32);
  e.bind_row(v, cv, count);
  body(v, nv);
  e.close();
  e.var_names().erase(v.node());
}

/// Elements per chunk for a sequence keeping `per_elem` bytes of scratch per element of
/// `count`: as many as the UB left above the planned buffers holds (a multiple of 64).
int64_t chunk_elems(Emitter& e, const Expr& count, int64_t per_elem, const std::string& what,
                    const SourceLoc& loc) {
  const int64_t free = e.ub_free();
  int64_t k = std::min<int64_t>(free / per_elem / 64 * 64, 16384);
  if (auto c = as_const_int(count)) k = std::min(k, (*c + 63) / 64 * 64);
  if (k < 64)
    e.unsupported(loc, fmt::format("{}: its steps need {} bytes of UB scratch per 64 elements; the "
                                   "planned buffers leave {} bytes of UB",
                                   what, per_elem * 64, free));
  return k;
}

}  // namespace

std::string Emitter::memory_scalar(const Expr& s, DType t, const SourceLoc& loc) {
  // The scalar unit reads the element (GetValue: the LocalTensor / GlobalTensor "GetValue"
  // pages) before it issues the vector call that uses it. The virtual NPU counts the read as
  // the vector op's, so the IR's flags order the element's writer before the op only: a
  // barrier over every pipe makes each earlier write land before the scalar unit reads.
  if (!reads_memory(s)) return scalar(s, t, loc);  // local variables only
  line("AscendC::PipeBarrier<PIPE_ALL>();", loc);
  const std::string v = fresh("tl_s", true);
  auto* l = s.as<LoadNode>();
  if (l && (l->buffer->scope == MemScope::UB || l->buffer->scope == MemScope::GM)) {
    const Buffer& b = l->buffer;
    Expr off = 0, stride = 1;
    for (size_t d = l->indices.size(); d-- > 0;) {
      off = off + l->indices[d] * (b->strides.empty() ? stride : b->strides[d]);
      stride = stride * b->shape[d];
    }
    // The element in its own type; the call takes it in the op's (the VM rounds the value to
    // the op's dtype: a conversion of the same value here).
    line(fmt::format("const {} {} = {}.GetValue({});", ctype(b->dtype, loc), v, name(b),
                     expr(off, loc)),
         loc);
    return b->dtype == t ? v : fmt::format("static_cast<{}>({})", ctype(t, loc), v);
  }
  line(fmt::format("const {} {} = {};", ctype(t, loc), v, scalar(s, t, loc)), loc);
  return v;
}

bool Emitter::emit_activation(const TileOpNode& n) {
  using namespace ops::tile;
  const SourceLoc& loc = n.loc;
  const std::string what = "T." + n.op->name;
  auto scalar_of = [&](std::string_view operand, DType t) {
    const Expr& s = scalar_arg(n, operand);
    return reads_memory(s) ? memory_scalar(s, t, loc) : scalar(s, t, loc);
  };

  if (n.op == &div() && !n.args[static_cast<size_t>(arg_at(n, "src1"))].is_region()) {
    // AscendC has no Divs, and a * (1 / s) rounds twice: the scalar is spread over a scratch
    // tile (Duplicate, "Duplicate" page) and the tile form divides ("Div" page): a / s per
    // element with s in the dtype, the VM's division exactly.
    Operand dst = operand(n, 0), s0 = operand(n, arg_at(n, "src0"));
    const DType t = dst.buf->dtype;
    const std::string value = scalar_of("src1", t);
    const int64_t es = dtype_bytes(t);
    const int64_t k = chunk_elems(*this, dst.rows * dst.cols, es, what, loc);
    const std::string tmp = ub_scratch(t, es * k, loc);
    for_runs(*this, {dst, s0}, what, loc, [&](const std::vector<Expr>& extra, const Expr& count) {
      for_chunks(*this, count, k, loc, [&](const Expr& c, const std::string& m) {
        line(kBarrierV, loc);
        line(fmt::format("AscendC::Duplicate({}, {}, {});", tmp, value, m), loc);
        line(kBarrierV, loc);
        line(fmt::format("AscendC::Div({}, {}, {}, {});", at(dst, plus(extra[0], c)),
                         at(s0, plus(extra[1], c)), tmp, m),
             loc);
      });
    });
    return true;
  }

  if (n.op == &sin() || n.op == &cos() || n.op == &tanh())
    unsupported(loc,
                fmt::format("{} (the virtual NPU computes glibc's {}f; AscendC's {} is its own "
                            "approximation, and no sequence of basic vector ops gives "
                            "glibc's bits)",
                            what, n.op->name.substr(5),
                            n.op == &sin()   ? "Sin"
                            : n.op == &cos() ? "Cos"
                                             : "Tanh"));

  if (n.op == &sigmoid() || n.op == &silu()) {
    const bool silu_op = n.op == &silu();
    Operand dst = operand(n, 0), src = operand(n, arg_at(n, "src"));
    const DType ts = src.buf->dtype, td = dst.buf->dtype;
    for (DType t : {ts, td})
      if (t != DType::Float32 && t != DType::Float16)
        unsupported(loc, fmt::format("{} of {}", what, dtype_name(t)));
    const bool widen = ts != DType::Float32, narrow = td != DType::Float32;
    // Scratch per element: e (fp32), the widened x for a half source, the ones of sigmoid.
    const int64_t per = 4 + (widen ? 4 : 0) + (silu_op ? 0 : 4);
    const int64_t k = chunk_elems(*this, dst.rows * dst.cols, per, what, loc);
    const std::string s = ub_scratch(DType::Float32, per * k, loc);
    const std::string ev = s, xf = sub(s, ci(k), loc), ones = sub(s, ci(widen ? 2 * k : k), loc);
    for_runs(*this, {dst, src}, what, loc, [&](const std::vector<Expr>& extra, const Expr& count) {
      for_chunks(*this, count, k, loc, [&](const Expr& c, const std::string& m) {
        const std::string D = at(dst, plus(extra[0], c)), S = at(src, plus(extra[1], c));
        line(kBarrierV, loc);  // the scratch's previous reader ran on V
        // Duplicate ("Duplicate" page): the numerator 1 of sigmoid.
        if (!silu_op) line(fmt::format("AscendC::Duplicate({}, 1.0f, {});", ones, m), loc);
        std::string x = S;
        if (widen) {  // Cast ("Cast" page): half -> float, CAST_NONE (exact)
          line(fmt::format("AscendC::Cast({}, {}, AscendC::RoundMode::CAST_NONE, {});", xf, S, m),
               loc);
          line(kBarrierV, loc);
          x = xf;
        }
        // e = 1 + exp(-x): Muls ("Muls" page; -x exactly), Exp ("Exp"), Adds ("Adds").
        line(fmt::format("AscendC::Muls({}, {}, -1.0f, {});", ev, x, m), loc);
        line(kBarrierV, loc);
        line(fmt::format("AscendC::Exp({}, {}, {});", ev, ev, m), loc);
        line(kBarrierV, loc);
        line(fmt::format("AscendC::Adds({}, {}, 1.0f, {});", ev, ev, m), loc);
        line(kBarrierV, loc);
        // Div ("Div" page): (sigmoid 1, silu x) / e, rounded once to fp32.
        const std::string num = silu_op ? x : ones;
        if (!narrow) {
          line(fmt::format("AscendC::Div({}, {}, {}, {});", D, num, ev, m), loc);
        } else {
          line(fmt::format("AscendC::Div({}, {}, {}, {});", ev, num, ev, m), loc);
          line(kBarrierV, loc);
          line(fmt::format("AscendC::Cast({}, {}, AscendC::RoundMode::CAST_RINT, {});", D, ev, m),
               loc);
        }
      });
    });
    return true;
  }

  if (n.op == &round()) {
    // Cast float -> float with CAST_RINT ("Cast" page, table 1: rounds to an integral value,
    // kept as float; ties to even, as std::nearbyint). A half tile goes through fp32: widened
    // exactly, rounded, narrowed exactly (an integral half value is a half).
    Operand dst = operand(n, 0), src = operand(n, arg_at(n, "src"));
    const DType t = src.buf->dtype;
    if ((t != DType::Float32 && t != DType::Float16) || dst.buf->dtype != t)
      unsupported(loc,
                  fmt::format("{} of {} into {}", what, dtype_name(t), dtype_name(dst.buf->dtype)));
    if (t == DType::Float32) {
      for_runs(*this, {dst, src}, what, loc,
               [&](const std::vector<Expr>& extra, const Expr& count) {
                 line(fmt::format("AscendC::Cast({}, {}, AscendC::RoundMode::CAST_RINT, {});",
                                  at(dst, extra[0]), at(src, extra[1]), expr(count, loc)),
                      loc);
               });
      return true;
    }
    const int64_t k = chunk_elems(*this, dst.rows * dst.cols, 4, what, loc);
    const std::string tmp = ub_scratch(DType::Float32, 4 * k, loc);
    for_runs(*this, {dst, src}, what, loc, [&](const std::vector<Expr>& extra, const Expr& count) {
      for_chunks(*this, count, k, loc, [&](const Expr& c, const std::string& m) {
        const std::string D = at(dst, plus(extra[0], c)), S = at(src, plus(extra[1], c));
        line(kBarrierV, loc);
        line(fmt::format("AscendC::Cast({}, {}, AscendC::RoundMode::CAST_NONE, {});", tmp, S, m),
             loc);
        line(kBarrierV, loc);
        line(fmt::format("AscendC::Cast({}, {}, AscendC::RoundMode::CAST_RINT, {});", tmp, tmp, m),
             loc);
        line(kBarrierV, loc);
        line(fmt::format("AscendC::Cast({}, {}, AscendC::RoundMode::CAST_RINT, {});", D, tmp, m),
             loc);
      });
    });
    return true;
  }

  if (n.op == &clamp()) {
    // Maxs then Mins ("Maxs", "Mins" pages): min(max(x, lo), hi) with lo and hi in the tile's
    // dtype, as the VM rounds them; each step exact on a value of the dtype.
    Operand dst = operand(n, 0), src = operand(n, arg_at(n, "src"));
    const DType t = dst.buf->dtype;
    const std::string lo = scalar_of("lo", t), hi = scalar_of("hi", t);
    for_runs(*this, {dst, src}, what, loc, [&](const std::vector<Expr>& extra, const Expr& count) {
      const std::string D = at(dst, extra[0]), m = expr(count, loc);
      line(fmt::format("AscendC::Maxs({}, {}, {}, {});", D, at(src, extra[1]), lo, m), loc);
      line(kBarrierV, loc);
      line(fmt::format("AscendC::Mins({}, {}, {}, {});", D, D, hi, m), loc);
    });
    return true;
  }

  if (n.op == &leaky_relu()) {
    // LeakyRelu ("LeakyRelu" page): dst = src >= 0 ? src : src * alpha, alpha in the dtype.
    Operand dst = operand(n, 0), src = operand(n, arg_at(n, "src"));
    const std::string alpha = scalar_of("alpha", dst.buf->dtype);
    for_runs(*this, {dst, src}, what, loc, [&](const std::vector<Expr>& extra, const Expr& count) {
      line(fmt::format("AscendC::LeakyRelu({}, {}, {}, {});", at(dst, extra[0]), at(src, extra[1]),
                       alpha, expr(count, loc)),
           loc);
    });
    return true;
  }

  if (n.op == &bitwise_not()) {
    // Not ("Not" page): int16 / uint16, dst = ~src.
    Operand dst = operand(n, 0), src = operand(n, arg_at(n, "src"));
    for_runs(*this, {dst, src}, what, loc, [&](const std::vector<Expr>& extra, const Expr& count) {
      line(fmt::format("AscendC::Not({}, {}, {});", at(dst, extra[0]), at(src, extra[1]),
                       expr(count, loc)),
           loc);
    });
    return true;
  }

  if (n.op == &shift_left() || n.op == &shift_right()) {
    const bool left = n.op == &shift_left();
    Operand dst = operand(n, 0), src = operand(n, arg_at(n, "src"));
    const DType t = dst.buf->dtype;
    const int64_t width = 8 * dtype_bytes(t);
    auto bits = as_const_int(scalar_arg(n, "bits"));
    // The AscendC pages give no result for a distance past the element's width (the VM wraps
    // it): a constant within the width only.
    if (!bits || *bits < 0 || *bits >= width)
      unsupported(loc,
                  fmt::format("{} by a distance that is not a constant in [0, {})", what, width));
    // ShiftLeft ("ShiftLeft" page) shifts unsigned types logically but signed ones
    // arithmetically, keeping the sign bit; the VM's shift wraps: the bits as unsigned.
    const bool as_unsigned = left && !is_unsigned_int(t);
    const std::string ut = t == DType::Int16 ? "uint16_t" : "uint32_t";
    const std::string ty = as_unsigned ? ut : ctype(t, loc);
    auto view = [&](const std::string& x) {
      return as_unsigned ? fmt::format("{}.ReinterpretCast<{}>()", x, ut) : x;
    };
    for_runs(*this, {dst, src}, what, loc, [&](const std::vector<Expr>& extra, const Expr& count) {
      // ShiftRight ("ShiftRight" page): logical for unsigned, arithmetic for signed types.
      line(fmt::format("AscendC::{}({}, {}, {}({}), {});", left ? "ShiftLeft" : "ShiftRight",
                       view(at(dst, extra[0])), view(at(src, extra[1])), ty, *bits,
                       expr(count, loc)),
           loc);
    });
    return true;
  }

  if (n.op == &bitwise_xor()) {
    // a ^ b = (a | b) & ~(a & b): And, Or, Not ("And", "Or", "Not" pages), exact on the bits.
    Operand dst = operand(n, 0), a = operand(n, arg_at(n, "src0")),
            b = operand(n, arg_at(n, "src1"));
    const DType t = dst.buf->dtype;
    const int64_t es = dtype_bytes(t);
    const int64_t k = chunk_elems(*this, dst.rows * dst.cols, es, what, loc);
    const std::string tmp = ub_scratch(t, es * k, loc);
    for_runs(*this, {dst, a, b}, what, loc, [&](const std::vector<Expr>& extra, const Expr& count) {
      for_chunks(*this, count, k, loc, [&](const Expr& c, const std::string& m) {
        const std::string D = at(dst, plus(extra[0], c)), A = at(a, plus(extra[1], c)),
                          B = at(b, plus(extra[2], c));
        line(kBarrierV, loc);
        line(fmt::format("AscendC::And({}, {}, {}, {});", tmp, A, B, m), loc);
        line(kBarrierV, loc);
        line(fmt::format("AscendC::Not({}, {}, {});", tmp, tmp, m), loc);
        line(fmt::format("AscendC::Or({}, {}, {}, {});", D, A, B, m), loc);
        line(kBarrierV, loc);
        line(fmt::format("AscendC::And({}, {}, {}, {});", D, D, tmp, m), loc);
      });
    });
    return true;
  }

  if (n.op == &transpose()) {
    // Transpose ("Transpose" page, the basic form): one 16 x 16 matrix of a 2-byte type,
    // both operands one 32-byte aligned run of 256 elements.
    Operand dst = operand(n, 0), src = operand(n, arg_at(n, "src"));
    for (const Operand* o : {&dst, &src}) {
      auto numel = const_product(o->extents);
      if (!o->contiguous || !numel || *numel != 256 || !aligned(*o, o->offset, 32))
        unsupported(loc, fmt::format("{} of '{}', not one 32-byte aligned run of 16 x 16", what,
                                     o->buf->name));
    }
    line(fmt::format("AscendC::Transpose({}, {});", at(dst), at(src)), loc);
    return true;
  }
  return false;
}

}  // namespace tl::ascendc
