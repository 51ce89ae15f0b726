// lower_cube_ops: turns the developer T::gemm into what the cube executes (docs/developer_mode.md):
// L1 -> L0A / L0B loads (MTE1, transposed for transpose_A / transpose_B) into two slots and one
// Mmad per K chunk (M), never gemm_v0 and its three PIPE_ALL barriers. The K chunk is the largest
// multiple of 16 whose two slots fit L0A and L0B, so the load of chunk c + 1 can overlap the Mmad
// of chunk c once insert_syncs has ordered them by slot; a fragment operand already in L0A / L0B
// is used directly. It also folds a T::clear of an accumulator into the gemm that follows it:
// `clear(c); for k ...: gemm(a, b, c)` becomes `init = (k == 0)` on the first gemm into c, since
// the cube has no instruction that writes L0C but the Mmad. Runs after infer_scopes (the operands
// are physical) and before plan_memory (it creates the L0A / L0B buffers).
#include <unordered_map>

#include "developer.h"
#include "tl/ir_functor.h"
#include "tl/ir_ops.h"
#include "tl/op.h"
#include "tl/pass.h"

namespace tl {
namespace {

bool touches(const Stmt& s, const BufferNode* b) {
  bool hit = false;
  pre_order_visit(
      s,
      [&](const Stmt& x) {
        if (auto* t = x.as<TileOpNode>())
          for (const auto& a : t->args)
            if (a.is_region() && a.region.buffer.get() == b) hit = true;
        if (auto* st = x.as<StoreNode>(); st && st->buffer.get() == b) hit = true;
      },
      [&](const Expr& e) {
        if (auto* l = e.as<LoadNode>(); l && l->buffer.get() == b) hit = true;
      });
  return hit;
}

std::vector<int64_t> const_extents(const BufferRegion& r, const TileOpNode& g, const char* operand) {
  std::vector<int64_t> out;
  for (const Expr& e : region_extents(r)) {
    auto v = as_const_int(e);
    if (!v)
      user_error(g.loc, "T.gemm: operand '{}' ({}) has a region extent that is not a constant; the cube "
                        "lowering needs constant tile shapes (M, N and K of a gemm are compile-time)",
                 operand, r.buffer->name);
    out.push_back(*v);
  }
  return out;
}

/// An int32 immediate (tile sizes and offsets are small; int64 would print as T.int64(...)).
Expr ci(int64_t v) {
  TL_ASSERT(v >= INT32_MIN && v <= INT32_MAX, "lower_cube_ops: tile size or offset {} beyond int32", v);
  return Expr(static_cast<int>(v));
}

/// The rows x cols view of an extents list (leading dimensions folded into rows).
std::pair<int64_t, int64_t> matrix(const std::vector<int64_t>& e) {
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < e.size(); ++i) rows *= e[i];
  return {rows, e.empty() ? 1 : e.back()};
}

class CubeLowering : public IRMutator {
 public:
  explicit CubeLowering(const Target& t) : target_(t) {}

 protected:
  Stmt mutate_(const SeqNode* n, const Stmt& self) override {
    std::vector<Stmt> out;
    bool changed = false;
    const auto& ss = n->stmts;
    for (size_t i = 0; i < ss.size(); ++i) {
      if (auto clear = as_accumulator_clear(ss[i])) {
        // Fold into the first later statement that touches the accumulator.
        const BufferNode* c = clear->args[0].region.buffer.get();
        size_t j = i + 1;
        while (j < ss.size() && !touches(ss[j], c)) ++j;
        if (j == ss.size())
          user_error(clear->loc, "T.clear of the accumulator '{}' is not followed by a T.gemm into it in the same "
                                 "block; the cube clears L0C only as part of a gemm (its init)", c->name);
        std::vector<Stmt> rest(ss.begin() + static_cast<long>(i) + 1, ss.end());
        rest[j - i - 1] = with_init(rest[j - i - 1], c, Expr(true), clear->loc);
        out.push_back(mutate(SeqNode::make(std::move(rest), n->loc)));
        return SeqNode::make(std::move(out), n->loc);
      }
      Stmt m = mutate(ss[i]);
      changed = changed || !m.same_as(ss[i]);
      out.push_back(m);
    }
    return changed ? SeqNode::make(std::move(out), n->loc) : self;
  }

  Stmt mutate_(const TileOpNode* n, const Stmt& self) override {
    if (n->op->name == "tile.fill" && as_accumulator_clear(self))
      user_error(n->loc, "T.clear of the accumulator '{}' must be directly followed (in its block) by the T.gemm "
                         "that accumulates into it",
                 n->args[0].region.buffer->name);
    if (n->op->name != "gemm") return IRMutator::mutate_(n, self);
    return expand(*n);
  }

 private:
  /// `s` as a clear of an L0C accumulator (tile.fill with 0), else nullptr.
  const TileOpNode* as_accumulator_clear(const Stmt& s) const {
    auto* t = s.as<TileOpNode>();
    if (!t || t->op->name != "tile.fill" || !t->args[0].is_region()) return nullptr;
    if (t->args[0].region.buffer->scope != MemScope::L0C) return nullptr;
    auto zero = t->args.size() > 1 && t->args[1].is_scalar() ? t->args[1].scalar : Expr();
    bool is_zero = zero.defined() && ((zero.as<IntImmNode>() && zero.as<IntImmNode>()->value == 0) ||
                                      (zero.as<FloatImmNode>() && zero.as<FloatImmNode>()->value == 0.0));
    if (!is_zero)
      user_error(t->loc, "T.fill of the accumulator '{}' with a value other than 0: the cube writes L0C only "
                         "through Mmad, so an accumulator can be cleared (T.clear) but not filled",
                 t->args[0].region.buffer->name);
    return t;
  }

  /// `s` (the first statement touching accumulator `c` after its clear) with `cond` or-ed into
  /// the init of the gemm that first writes c.
  Stmt with_init(const Stmt& s, const BufferNode* c, Expr cond, const SourceLoc& clear_loc) {
    if (auto* t = s.as<TileOpNode>(); t && t->op->name == "gemm" && t->args[2].region.buffer.get() == c) {
      std::vector<TileArg> args = t->args;
      Expr old = args.size() > 3 && args[3].is_scalar() ? args[3].scalar : Expr(false);
      Expr init = as_const_int(old) == 0 ? cond : (old || cond);
      if (args.size() > 3) args[3] = init;
      else args.push_back(init);
      return TileOpNode::make(t->op, std::move(args), t->attrs, t->loc);
    }
    if (auto* f = s.as<ForNode>()) {
      Expr first = f->var == f->min;
      Stmt body = first_touch_with_init(f->body, c, as_const_int(cond) == 1 ? first : (cond && first), clear_loc);
      return ForNode::make(f->var, f->min, f->extent, f->for_kind, f->num_stages, body, f->loc);
    }
    if (s.as<SeqNode>()) return first_touch_with_init(s, c, cond, clear_loc);
    user_error(clear_loc, "T.clear of the accumulator '{}': the first statement after it that uses '{}' is {}, "
                          "expected the T.gemm into it (possibly inside loops)",
               c->name, c->name, dev::describe(s));
  }
  Stmt first_touch_with_init(const Stmt& body, const BufferNode* c, Expr cond, const SourceLoc& clear_loc) {
    std::vector<Stmt> ss;
    if (auto* seq = body.as<SeqNode>()) ss = seq->stmts;
    else ss = {body};
    for (auto& s : ss)
      if (touches(s, c)) {
        s = with_init(s, c, cond, clear_loc);
        return SeqNode::make(std::move(ss), body->loc);
      }
    TL_ASSERT(false, "first_touch_with_init: no statement touches '{}'", c->name);
  }

  /// gemm -> per K chunk: load A and B chunks into L0A / L0B slot (chunk % 2), then mma.
  Stmt expand(const TileOpNode& g) {
    const BufferRegion &A = g.args[0].region, &B = g.args[1].region, &C = g.args[2].region;
    const bool ta = g.attr_bool("transpose_A"), tb = g.attr_bool("transpose_B");
    Expr init = g.args.size() > 3 && g.args[3].is_scalar() ? g.args[3].scalar : Expr(false);
    for (const auto& [r, name] : {std::pair{&A, "A"}, {&B, "B"}, {&C, "C"}}) {
      size_t rank = r->ranges.empty() ? r->buffer->ndim() : r->ranges.size();
      if (rank != 2)
        user_error(g.loc, "T.gemm: operand '{}' ({}) is a {}-D region; gemm multiplies 2-D tiles", name,
                   r->buffer->name, rank);
    }
    auto [ar, ac] = matrix(const_extents(A, g, "A"));
    auto [br, bc] = matrix(const_extents(B, g, "B"));
    auto [cr, cc] = matrix(const_extents(C, g, "C"));
    const int64_t M = ta ? ac : ar, K = ta ? ar : ac, N = tb ? br : bc;
    if (M <= 0 || N <= 0 || K <= 0)
      user_error(g.loc, "T.gemm: M = {}, N = {}, K = {}; expected positive sizes", M, N, K);
    if ((tb ? bc : br) != K)
      user_error(g.loc, "T.gemm: A is {} x {} and B is {} x {}{}: their K dimensions disagree", M, K, br, bc,
                 tb ? " (transposed)" : "");
    if (cr != M || cc != N)
      user_error(g.loc, "T.gemm: A x B is {} x {} but the accumulator C ('{}') is {} x {}", M, N, C.buffer->name, cr,
                 cc);
    if (A.buffer->dtype != B.buffer->dtype)
      user_error(g.loc, "T.gemm: A is {} and B is {}; the cube multiplies operands of one dtype",
                 dtype_name(A.buffer->dtype), dtype_name(B.buffer->dtype));
    const DType dt = A.buffer->dtype;
    const int64_t es = dtype_bytes(dt);
    const int64_t k_step = std::max<int64_t>(16, target_.fractal_row_bytes / es);
    const bool a_in_l0 = A.buffer->scope == MemScope::L0A, b_in_l0 = B.buffer->scope == MemScope::L0B;
    // The largest K chunk (a multiple of the fractal K) whose two slots fit L0A and L0B.
    int64_t kc = K;
    auto fits = [&](int64_t k) {  // in double: M, N, K of a malformed kernel may be huge
      double a = 2.0 * static_cast<double>(M) * static_cast<double>(k) * static_cast<double>(es);
      double b = 2.0 * static_cast<double>(k) * static_cast<double>(N) * static_cast<double>(es);
      return (a_in_l0 || a <= static_cast<double>(target_.cap(MemScope::L0A))) &&
             (b_in_l0 || b <= static_cast<double>(target_.cap(MemScope::L0B)));
    };
    if (!(a_in_l0 && b_in_l0)) {
      kc = std::max<int64_t>(k_step, K / k_step * k_step);
      while (kc > k_step && !fits(kc)) kc -= k_step;
      kc = std::min(kc, K);
      if (!fits(kc))
        user_error(g.loc, "T.gemm: an M x K chunk of {} x {} and a K x N chunk of {} x {} ({}) do not fit L0A ({} B) "
                          "and L0B ({} B) twice; use smaller tiles",
                   M, kc, kc, N, dtype_name(dt), target_.cap(MemScope::L0A), target_.cap(MemScope::L0B));
    }
    if (a_in_l0 || b_in_l0) kc = K;  // an operand already in L0 is multiplied whole
    const int64_t chunks = (K + kc - 1) / kc;
    constexpr int64_t kMaxChunks = 256;  // each chunk is two loads and an mma, written out
    if (chunks > kMaxChunks)
      user_error(g.loc, "T.gemm: K = {} needs {} chunks of {} in L0A/L0B, more than {}; loop over K panels "
                        "around the gemm instead (as gemm_dev does)", K, chunks, kc, kMaxChunks);
    const int slots = chunks > 1 ? 2 : 1;

    std::vector<Stmt> out;
    Buffer a0, b0;
    if (!a_in_l0) {
      a0 = BufferNode::make(A.buffer->name + "_l0a", dt, {ci(slots * M), ci(kc)}, MemScope::L0A, {}, -1, g.loc,
                            fmt::format("L0A slots of '{}'", A.buffer->name));
      out.push_back(AllocateNode::make(a0, g.loc));
    }
    if (!b_in_l0) {
      b0 = BufferNode::make(B.buffer->name + "_l0b", dt, {ci(slots * kc), ci(N)}, MemScope::L0B, {}, -1, g.loc,
                            fmt::format("L0B slots of '{}'", B.buffer->name));
      out.push_back(AllocateNode::make(b0, g.loc));
    }
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t k0 = c * kc, kl = std::min(kc, K - k0);
      const int64_t slot = c % slots;
      TileArg a_op = A, b_op = B;
      if (!a_in_l0) {
        BufferRegion src = sub(A, ta ? 0 : 1, k0, kl);
        BufferRegion dst = a0.region({ci(slot * M), ci(0)}, {ci(M), ci(kl)});
        out.push_back(make_tile_op("copy", {src, dst}, {{"transpose", ta}}, g.loc));
        a_op = dst;
      }
      if (!b_in_l0) {
        BufferRegion src = sub(B, tb ? 1 : 0, k0, kl);
        BufferRegion dst = b0.region({ci(slot * kc), ci(0)}, {ci(kl), ci(N)});
        out.push_back(make_tile_op("copy", {src, dst}, {{"transpose", tb}}, g.loc));
        b_op = dst;
      }
      Expr chunk_init = c == 0 ? init : Expr(false);
      out.push_back(make_tile_op("mma", {a_op, b_op, C, chunk_init}, {}, g.loc));
    }
    return SeqNode::make(std::move(out), g.loc);
  }

  /// Region `r` restricted to [k0, k0 + kl) along its rows (dim 0 of a 2-D view) or columns.
  static BufferRegion sub(const BufferRegion& r, int along, int64_t k0, int64_t kl) {
    BufferRegion out = r;
    if (out.ranges.empty())
      for (const Expr& s : r.buffer->shape) out.ranges.push_back({Expr(0), s});
    const size_t d = along == 1 ? out.ranges.size() - 1 : 0;
    TL_ASSERT(out.ranges.size() == 2 || along == 1, "gemm operand '{}' of rank {} chunked along rows",
              r.buffer->name, out.ranges.size());
    out.ranges[d] = {out.ranges[d].min + ci(k0), ci(kl)};
    return out;
  }

  const Target& target_;
};

}  // namespace

PrimFunc lower_cube_ops(const PrimFunc& f, const Target& target) {
  if (!dev::is_developer(f)) return f;
  CubeLowering lower(target);
  Stmt body = lower.mutate(f->body);
  return body.same_as(f->body) ? f : with_body(f, body);
}

}  // namespace tl
