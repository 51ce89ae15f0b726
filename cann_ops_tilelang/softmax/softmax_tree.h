// The pieces the expert softmax kernels share (softmax_resident.cpp, softmax_streamed.cpp): the
// row tree, the row max or sum of a tile held as two fp32 column halves, its buffers placed by
// the library's UbPlacer (a chosen residue modulo 512, cann_ops_tilelang/core.h). Private to
// cann_ops_tilelang/softmax/.
//
// A vector instruction whose two sources start in the same bank groups pays its repeats twice
// (docs/calibration.md, "UB bank conflicts"), so the two halves, and each pair of the tree's
// buffers, start 256 bytes apart modulo 512. The tree is elementwise max / add over the halves
// (2 cycles a repeat on half the columns, then a quarter, ...) and one reduction of the last 128
// columns or fewer: a reduction over the whole row costs 7 cycles a repeat (docs/calibration.md,
// `vec_reduce`). Its levels go back and forth between two pairs of buffers, so a level's two
// instructions read what the other does not write and run back to back under one barrier
// (docs/virtual_npu.md: V instructions overlap unless a barrier orders them).
#pragma once
#include <cstdint>
#include <vector>

#include "cann_ops_tilelang/core.h"
#include "tl/lang.h"

namespace cann_ops_tilelang::softmax_tree {

/// Columns [c0, c0 + w) of every row of a [rM, ...] tile.
tl::TileArg cols(const tl::Buffer& b, int rM, int c0, int w);

/// The tree's buffers: t0, t1 [rM, q], u0, u1 [rM, q / 2] and red [rM, w] (w the width the tree
/// stops at), each pair 256 bytes apart; q is a quarter of the tile's columns.
struct Tree {
  tl::Buffer t0, t1, u0, u1, red;
};

/// The widths the tree's levels write after the first (which writes t0, t1 from the halves): a
/// level halves the width while it is a multiple of 16 columns (halves of whole 32-byte blocks)
/// above 128; the last is red's width (q if there is none).
std::vector<int> tree_widths(int q);

/// The bytes of the tree's buffers for [rM, 4 q] tiles (without the placement's padding).
int64_t tree_bytes(int rM, int q);

/// The cycles the tree's final reduction costs per row (two trees a chunk: the figure a chunk
/// width is chosen by; docs/calibration.md, `vec_reduce` 7 cycles a repeat).
int64_t tree_reduce_cycles(int q);

/// Allocates the tree's buffers for [rM, 4 q] tiles (names t0_ub, t1_ub, u0_ub, u1_ub, red_ub).
Tree alloc_tree(UbPlacer& place, int rM, int q);

/// The row max (or sum) of the tile whose column halves are a and b ([rM, h], 256 bytes apart)
/// into out [rM]: the first level writes t0, t1; each later level reads one pair of buffers at
/// the same columns and writes the other pair; then red, and one reduction of red. Ends with the
/// reduction issued (a barrier before out is read is the caller's).
void row_tree(bool is_max, const tl::Buffer& a, const tl::Buffer& b, const Tree& tr, int rM, int h,
              const tl::Buffer& out);

/// row_tree with the first level's sources given: t0 = a_lo[:, c_lo + (0, q)] op b_lo[same],
/// t1 = a_hi[:, c_hi + (0, q)] op b_hi[same] (row_tree: a, b, a, b at columns 0 and q). Log-softmax
/// sums the exp of its four column quarters written into t0, p0, t1, p1 ([rM, q]), keeping x's
/// fp32 halves for its result.
void row_tree_from(bool is_max, const tl::Buffer& a_lo, const tl::Buffer& b_lo,
                   const tl::Buffer& a_hi, const tl::Buffer& b_hi, int c_lo, int c_hi,
                   const Tree& tr, int rM, int q, const tl::Buffer& out);

/// The width of the tree's last pair (red's width): q if the tree has no later level.
int tree_last_width(int q);

/// row_tree's levels on the halves a and b ([rM, h], 256 bytes apart), then the last pair added
/// into acc0 and acc1 ([rM, tree_last_width(h / 2)], each 256 bytes from the pair's buffer it
/// adds: acc0 at residue 256, acc1 at 0) instead of red and its reduction: the streamed forward
/// sums a row's chunks elementwise and reduces the sum once a row. Ends with the adds issued.
void row_tree_acc(const tl::Buffer& a, const tl::Buffer& b, const Tree& tr, int rM, int h,
                  const tl::Buffer& acc0, const tl::Buffer& acc1);

}  // namespace cann_ops_tilelang::softmax_tree
