// The SwiGLU kernel generators of cann_ops_tilelang (the tile-kernel layer, docs/ops.md).
// Developer mode: SwiGLU is elementwise on [bM, bN] tiles, which developer mode expresses whole,
// and the compiler's pipelining (the next tile loads while this one computes and the last one
// stores) and AIV split give the overlap an expert kernel would write by hand. Their Python
// twins, python/cann_ops_tilelang/kernels/swiglu.py, build the identical IR
// (python/tests/test_opslib_twin.py).
//
// Work split: the tiles are (row tile, column chunk) pairs, ceil(M / bM) * (H / bN) of them,
// M the dynamic token count; block cid takes tiles cid, cid + nb, ... in a T.Pipelined loop.
// The last row tile's copies are clipped by the compiler (legalize_copies), so rows past M are
// never stored. The backward's dweight needs a sum over all H / bN chunks of a row: each tile
// stores its [bM] row sums into DWP[chunk], and swiglu_dw_reduce_kernel sums the chunks in order.
#include <optional>

#include "cann_ops_tilelang/activation.h"
#include "tl/lang.h"

namespace cann_ops_tilelang {
namespace {

using tl::Buffer;
using tl::DType;
using tl::Expr;
namespace T = tl::T;
constexpr DType f32 = DType::Float32;

/// The tensors and tile loop both kernels share.
struct Io {
  std::optional<Buffer> x, a, b;  // X [M, 2H] (columns) or A, B [M, H] (rows)
};

/// a's and b's [bM, bN] tiles at (row, col) from X or A / B; `opt` pads rows past M.
void load_ab(const Io& io, int H, Expr row, Expr col, const Buffer& ta, const Buffer& tb,
             T::CopyOptions opt = {}) {
  if (io.x) {
    T::copy(io.x->at({row, col}), ta, opt);
    T::copy(io.x->at({row, H + col}), tb, opt);
  } else {
    T::copy(io.a->at({row, col}), ta, opt);
    T::copy(io.b->at({row, col}), tb, opt);
  }
}

/// The tile loop: block cid's tiles (row tile, chunk), pipelined `stages` deep.
void tile_loop(const SwigluKey& k, Expr M, int stages,
               const std::function<void(Expr, Expr, Expr)>& body) {
  const int bM = ir_size(k.rows_per_tile, "rows_per_tile"), bN = ir_size(k.chunk, "chunk"),
            chunks = ir_size(k.hidden / k.chunk, "chunks"), blocks = ir_size(k.blocks, "blocks");
  Expr total = ceildiv(M, bM) * chunks;
  Expr nb = min(Expr(blocks), total);
  T::Kernel(nb,
            [&](Expr cid) {
              T::Pipelined("p", ceildiv(total - cid, nb), stages, [&](Expr p) {
                auto tile = T::let("tile", cid + p * nb);
                auto c = T::let("c", tile % chunks);
                // One let per statement: C++ leaves the order of argument evaluation open,
                // and the twin's IR must have the same order.
                auto row = T::let("row", tile / chunks * bM);
                auto col = T::let("col", c * bN);
                body(row, col, c);
              });
            },
            {.threads = 2});
}

/// In place: a <= L, b in [-L, L].
void clamp_ab(const Buffer& af, const Buffer& bf, Expr limit) {
  T::tile::min(af, af, limit);
  T::tile::clamp(bf, bf, 0.0 - limit, limit);
}

}  // namespace

tl::PrimFunc swiglu_fwd_kernel(const SwigluKey& k) {
  const DType dt = k.dtype;
  const bool wide = dt != f32;
  const int H = ir_size(k.hidden, "hidden"), bM = ir_size(k.rows_per_tile, "rows_per_tile"),
            bN = ir_size(k.chunk, "chunk");
  auto M = T::dynamic("M");
  Io io;
  std::vector<tl::ParamRef> params;
  if (k.rows) {
    io.a = T::Tensor("A", {M, H}, dt);
    io.b = T::Tensor("B", {M, H}, dt);
    params = {*io.a, *io.b};
  } else {
    io.x = T::Tensor("X", {M, 2 * H}, dt);
    params = {*io.x};
  }
  std::optional<Buffer> W;
  if (k.weight) params.push_back(*(W = T::Tensor("W", {M}, f32)));
  auto Y = T::Tensor("Y", {M, H}, dt);
  params.push_back(Y);
  std::optional<tl::Var> limit;
  if (k.clamp) params.push_back(*(limit = T::Scalar("limit", f32)));

  return T::prim_func("swiglu_fwd", params, [&] {
    tile_loop(k, M, 2, [&](Expr row, Expr col, Expr) {
      auto ta = T::alloc_shared("a", {bM, bN}, dt), tb = T::alloc_shared("b", {bM, bN}, dt);
      load_ab(io, H, row, col, ta, tb);
      Buffer af = ta, bf = tb;
      if (wide) {  // 16-bit I/O: compute in fp32
        af = T::alloc_shared("af", {bM, bN}, f32);
        bf = T::alloc_shared("bf", {bM, bN}, f32);
        T::tile::cast(af, ta);
        T::tile::cast(bf, tb);
      }
      if (limit) clamp_ab(af, bf, *limit);
      T::tile::silu(af, af);
      T::tile::mul(af, af, bf);
      if (W) {
        auto tw = T::alloc_shared("w", {bM}, f32);
        T::copy(W->at({row}), tw);
        T::tile::row_expand_mul(af, af, tw);
      }
      auto ty = T::alloc_shared("y", {bM, bN}, dt);
      if (wide)
        T::tile::cast(ty, af, "CAST_RINT");
      else
        T::tile::add(ty, af, 0.0f);
      T::copy(ty, Y.at({row, col}));
    });
  });
}

tl::PrimFunc swiglu_bwd_kernel(const SwigluKey& k) {
  const DType dt = k.dtype;
  const bool wide = dt != f32;
  const int H = ir_size(k.hidden, "hidden"), bM = ir_size(k.rows_per_tile, "rows_per_tile"),
            bN = ir_size(k.chunk, "chunk"), chunks = ir_size(k.hidden / k.chunk, "chunks");
  auto M = T::dynamic("M");
  auto DY = T::Tensor("DY", {M, H}, dt);
  std::vector<tl::ParamRef> params{DY};
  Io in, out;
  if (k.rows) {
    in.a = T::Tensor("A", {M, H}, dt);
    in.b = T::Tensor("B", {M, H}, dt);
    params.insert(params.end(), {*in.a, *in.b});
  } else {
    in.x = T::Tensor("X", {M, 2 * H}, dt);
    params.push_back(*in.x);
  }
  std::optional<Buffer> W, DWP;
  if (k.weight) params.push_back(*(W = T::Tensor("W", {M}, f32)));
  if (k.rows) {
    out.a = T::Tensor("DA", {M, H}, dt);
    out.b = T::Tensor("DB", {M, H}, dt);
    params.insert(params.end(), {*out.a, *out.b});
  } else {
    out.x = T::Tensor("DX", {M, 2 * H}, dt);
    params.push_back(*out.x);
  }
  if (k.weight) params.push_back(*(DWP = T::Tensor("DWP", {chunks, M}, f32)));
  std::optional<tl::Var> limit;
  if (k.clamp) params.push_back(*(limit = T::Scalar("limit", f32)));

  return T::prim_func("swiglu_bwd", params, [&] {
    // Three stages: the loads of tile p + 1 refill the buffers of p - 2, whose results were
    // stored while p - 1 computed; with two they refilled p - 1's, just handed to MTE3, and
    // MTE2 waited for V and MTE3 every tile (docs/ops.md, "SwiGLU").
    tile_loop(k, M, kSwigluBwdStages, [&](Expr row, Expr col, Expr c) {
      auto ta = T::alloc_shared("a", {bM, bN}, dt), tb = T::alloc_shared("b", {bM, bN}, dt);
      auto tg = T::alloc_shared("g", {bM, bN}, dt);
      load_ab(in, H, row, col, ta, tb);
      T::copy(DY.at({row, col}), tg);
      // fp32 working tiles (16-bit I/O widens into its own; fp32 I/O works in the loaded
      // tiles). Each is overwritten once its value is no longer needed, so the tile holds six
      // fp32 values an element at most (seven with a weight) and the chunk can be wide
      // (docs/ops.md, "SwiGLU").
      //
      // UB bank groups (docs/calibration.md, "UB bank conflicts"): a two-source instruction
      // pays its repeats twice unless its sources lie 256 bytes apart modulo 512. The values
      // are spread over five tiles so that every two-source op of the body reads one of each
      // group: X holds a' (then silu, then g - db), b' and db; Y holds b (then s) and g (then
      // s (g - db), then da); they are declared in that alternating order (a, then with the
      // clamp b, b', g or without g, b, s; then db), and plan_memory places the groups
      // (docs/compiler.md, "plan_memory"; SwigluEdges.BackwardTwoSourceOpsAvoidBankConflicts).
      Buffer af = ta, bf = tb, gf = tg, bc = tb;  // bc: b', clamped
      auto widen = [&](Buffer& t, const char* name) {
        if (wide) t = T::alloc_shared(name, {bM, bN}, f32);
      };
      widen(af, "af");
      if (limit) {
        widen(bf, "bf");
        bc = T::alloc_shared("bc", {bM, bN}, f32);
        widen(gf, "gf");
      } else {
        widen(gf, "gf");
        widen(bf, "bf");
        bc = bf;
      }
      if (wide) {
        T::tile::cast(af, ta);
        if (limit)
          T::tile::cast(bf, tb);
        else
          T::tile::cast(gf, tg);
      }
      std::optional<Buffer> ma, mb;  // bitmasks: the element was not clamped
      if (limit) {
        // compare + select: one pass to make each mask, one to apply it. The bits pair with
        // the tile's rows, so the tail tile's rows past M stay known to the compiler
        // (docs/developer_mode.md, "Tails"). A NaN input compares false: its own gradient
        // through the clamp is 0, as torch's clamp backward gives (the NaN still reaches the
        // other half's gradient: silu(NaN), or b' = NaN in da).
        ma = T::alloc_shared("ma", {bM, bN / 8}, DType::UInt8);
        mb = T::alloc_shared("mb", {bM, bN / 8}, DType::UInt8);
        T::tile::compare(*ma, af, *limit, "LE");  // a <= L
        T::tile::min(af, af, *limit);
        T::tile::clamp(bc, bf, 0.0 - *limit, *limit);
        T::tile::compare(*mb, bf, bc, "EQ");  // -L <= b <= L
        if (wide) T::tile::cast(gf, tg);
      } else if (wide) {
        T::tile::cast(bf, tb);
      }
      // s = sigmoid(a'): with the clamp in b's fp32 tile, which the mask was the last to read.
      Buffer s = limit && wide ? bf : T::alloc_shared("s", {bM, bN}, f32);
      T::tile::sigmoid(s, af);
      T::tile::mul(af, af, s);  // silu(a')
      if (W) {                  // dweight partial: sum over this chunk of dy silu(a') b'
        auto u = T::alloc_shared("u", {bM, bN}, f32);
        auto rs = T::alloc_shared("rs", {bM}, f32), tw = T::alloc_shared("w", {bM}, f32);
        T::tile::mul(u, af, bc);
        T::tile::mul(u, u, gf);
        T::reduce_sum(u, rs, -1);
        T::copy(rs, DWP->at({c, row}));
        T::copy(W->at({row}), tw);
        T::tile::row_expand_mul(gf, gf, tw);
      }
      // db = g silu(a'); da = g b' silu'(a') with silu' = s + silu (1 - s), written
      // da = b' (db + s (g - db)): four passes after db.
      auto db = T::alloc_shared("db", {bM, bN}, f32);
      T::tile::mul(db, gf, af);
      T::tile::sub(af, gf, db);  // g - db
      T::tile::mul(gf, s, af);
      T::tile::add(gf, db, gf);
      T::tile::mul(gf, bc, gf);  // da
      if (limit) {
        T::tile::select(gf, *ma, gf, 0.0f, 1);
        T::tile::select(db, *mb, db, 0.0f, 1);
      }
      // The results go back over the loaded tiles (16-bit: rounded; fp32: da in g's tile).
      Buffer oa = gf, ob = db;
      if (wide) {
        oa = ta;
        ob = tb;
        T::tile::cast(oa, gf, "CAST_RINT");
        T::tile::cast(ob, db, "CAST_RINT");
      }
      if (out.x) {
        T::copy(oa, out.x->at({row, col}));
        T::copy(ob, out.x->at({row, H + col}));
      } else {
        T::copy(oa, out.a->at({row, col}));
        T::copy(ob, out.b->at({row, col}));
      }
    });
  });
}

tl::PrimFunc swiglu_dw_reduce_kernel(const SwigluKey& k, int64_t partials) {
  const int P = ir_size(partials, "partials"), blocks = ir_size(k.blocks, "blocks"),
            bR = swiglu_dw_reduce_rows(partials);
  auto M = T::dynamic("M");
  auto DWP = T::Tensor("DWP", {P, M}, f32);
  auto DW = T::Tensor("DW", {M}, f32);
  return T::prim_func("swiglu_dw_reduce", {DWP, DW}, [&] {
    Expr tiles = ceildiv(M, bR);
    Expr nb = min(Expr(blocks), tiles);
    T::Kernel(nb,
              [&](Expr cid) {
                T::Pipelined("p", ceildiv(tiles - cid, nb), 2, [&](Expr p) {
                  auto row = T::let("row", (cid + p * nb) * bR);
                  auto acc = T::alloc_shared("acc", {bR}, f32);
                  T::copy(DWP.at({0, row}), acc);
                  if (P > 1) {
                    // Partials 1 .. P-1 in one strided copy: a copy per partial paid the GM
                    // latency P times (docs/calibration.md); the sum keeps the order 0 .. P-1.
                    // The tail tile's rows past M: zeros, never stored.
                    auto part = T::alloc_shared("part", {P - 1, bR}, f32);
                    T::copy(DWP.at({1, row}), part, {.pad_value = 0.0});
                    T::serial("j", P - 1, [&](Expr j) {
                      T::tile::add(acc, acc, part.region({j, 0}, {1, bR}));
                    });
                  }
                  T::copy(acc, DW.at({row}));
                });
              },
              {.threads = 1});  // [bR] tiles: no rows for split_aiv, and the kernel is tiny
  });
}

}  // namespace cann_ops_tilelang
