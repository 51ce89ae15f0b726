// The shared pieces of the expert softmax kernels (softmax_tree.h): the row tree.
#include "softmax_tree.h"

#include <utility>

namespace cann_ops_tilelang::softmax_tree {

using tl::Buffer;
using tl::Pipe;
namespace T = tl::T;

// Columns [c0, c0 + w) of every row of a [rM, ...] tile.
tl::TileArg cols(const Buffer& b, int rM, int c0, int w) {
  return b.region({0, c0}, {rM, w});
}

// The widths the tree's levels write after the first (which writes t0, t1 from the halves): a
// level halves the width while it is a multiple of 16 columns (halves of whole 32-byte blocks)
// above 128; the last width is red's.
std::vector<int> tree_widths(int q) {
  std::vector<int> ws;
  for (int w = q; w % 16 == 0 && w > 128; w /= 2) ws.push_back(w / 2);
  return ws;
}

int64_t tree_bytes(int rM, int q) {
  const auto ws = tree_widths(q);
  const int64_t wr = ws.empty() ? q : ws.back();
  return int64_t{rM} * (2 * q + 2 * (q / 2) + wr) * 4;
}

int64_t tree_reduce_cycles(int q) {
  const auto ws = tree_widths(q);
  const int64_t wr = ws.empty() ? q : ws.back();
  return 7 * ((wr * 4 + 255) / 256);
}

Tree alloc_tree(UbPlacer& place, int rM, int q) {
  const auto ws = tree_widths(q);
  const int o = q / 2, wr = ws.empty() ? q : ws.back();
  const auto f32 = tl::DType::Float32;
  Tree tr;
  tr.t0 = T::alloc_ub("t0_ub", {rM, q}, f32, place(int64_t{rM} * q * 4, 0));
  tr.t1 = T::alloc_ub("t1_ub", {rM, q}, f32, place(int64_t{rM} * q * 4, 256));
  tr.u0 = T::alloc_ub("u0_ub", {rM, o}, f32, place(int64_t{rM} * o * 4, 0));
  tr.u1 = T::alloc_ub("u1_ub", {rM, o}, f32, place(int64_t{rM} * o * 4, 256));
  tr.red = T::alloc_ub("red_ub", {rM, wr}, f32, place(int64_t{rM} * wr * 4, 0));
  return tr;
}

// The row max (or sum) of the tile whose column halves are a and b ([rM, h], 256 bytes apart)
// into out [rM]: a tree of elementwise ops, each level reading one pair of buffers at the same
// columns (so its two sources stay 256 bytes apart) and writing the other pair, then red, the
// last width as whole rows, and one reduction of red. Ends with the reduction issued.
void row_tree(bool is_max, const Buffer& a, const Buffer& b, const Tree& tr, int rM, int h,
              const Buffer& out) {
  row_tree_from(is_max, a, b, a, b, 0, h / 2, tr, rM, h / 2, out);
}

int tree_last_width(int q) {
  const auto ws = tree_widths(q);
  return ws.empty() ? q : ws.back();
}

namespace {

struct LastPair {
  const Buffer *c0, *c1;
  int w;
};

// The tree's levels down to its last pair (its buffers and width), the last level issued.
LastPair tree_levels(bool is_max, const Buffer& a_lo, const Buffer& b_lo, const Buffer& a_hi,
                     const Buffer& b_hi, int c_lo, int c_hi, const Tree& tr, int rM, int q) {
  auto op = [&](tl::TileArg d, tl::TileArg x, tl::TileArg y) {
    if (is_max)
      T::tile::max(d, x, y);
    else
      T::tile::add(d, x, y);
  };
  op(cols(tr.t0, rM, 0, q), cols(a_lo, rM, c_lo, q), cols(b_lo, rM, c_lo, q));
  op(cols(tr.t1, rM, 0, q), cols(a_hi, rM, c_hi, q), cols(b_hi, rM, c_hi, q));
  const Buffer *c0 = &tr.t0, *c1 = &tr.t1, *o0 = &tr.u0, *o1 = &tr.u1;
  int w = q;
  for (int hw : tree_widths(q)) {
    T::pipe_barrier(Pipe::V);
    op(cols(*o0, rM, 0, hw), cols(*c0, rM, 0, hw), cols(*c1, rM, 0, hw));
    op(cols(*o1, rM, 0, hw), cols(*c0, rM, hw, hw), cols(*c1, rM, hw, hw));
    std::swap(c0, o0);
    std::swap(c1, o1);
    w = hw;
  }
  return {c0, c1, w};
}

}  // namespace

void row_tree_acc(const Buffer& a, const Buffer& b, const Tree& tr, int rM, int h,
                  const Buffer& acc0, const Buffer& acc1) {
  const int q = h / 2;
  const LastPair l = tree_levels(false, a, b, a, b, 0, q, tr, rM, q);
  T::pipe_barrier(Pipe::V);
  T::tile::add(acc0, acc0, cols(*l.c0, rM, 0, l.w));
  T::tile::add(acc1, acc1, cols(*l.c1, rM, 0, l.w));
}

void row_tree_from(bool is_max, const Buffer& a_lo, const Buffer& b_lo, const Buffer& a_hi,
                   const Buffer& b_hi, int c_lo, int c_hi, const Tree& tr, int rM, int q,
                   const Buffer& out) {
  const LastPair l = tree_levels(is_max, a_lo, b_lo, a_hi, b_hi, c_lo, c_hi, tr, rM, q);
  const Buffer *c0 = l.c0, *c1 = l.c1;
  const int w = l.w;
  auto op = [&](tl::TileArg d, tl::TileArg x, tl::TileArg y) {
    if (is_max)
      T::tile::max(d, x, y);
    else
      T::tile::add(d, x, y);
  };
  T::pipe_barrier(Pipe::V);
  op(tr.red, cols(*c0, rM, 0, w), cols(*c1, rM, 0, w));
  T::pipe_barrier(Pipe::V);
  if (is_max)
    T::reduce_max(tr.red, out, -1);
  else
    T::reduce_sum(tr.red, out, -1);
}

}  // namespace cann_ops_tilelang::softmax_tree
