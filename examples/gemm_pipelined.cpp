// Expert-mode GEMM with the data movement overlapped with the cube (AscendC high-performance
// matmul structure): C[M, N] = A[M, K] x B[K, N], fp16 in, fp32 accumulation in L0C, fp16 (or fp32) out.
//
// `blocks` AICs are persistent over the (M / bM) x (N / bN) output tiles (tile cid,
// cid + blocks, ...). Each tile walks K in L1 panels of depth kL1 (A [bM, kL1], B [kL1, bN]),
// and each panel in bK-deep steps (A [bM, bK] -> L0A, B [bK, bN] -> L0B, one Mmad into L0C).
// Both levels are double-buffered, counted over the core's whole run (tile after tile), so
// the pipes never drain at a tile boundary:
//
//   MTE2  GM -> L1 panel g+1 (slot (g+1) % 2)  while MTE1 / M work on panel g
//   MTE1  L1 -> L0A/L0B step h+1 (slot (h+1) % 2) while M multiplies step h
//   M     Mmad step h, init on the first step of a tile
//   FIX   L0C -> GM after a tile's last step (fp32 -> fp16); the next tile's first Mmad
//         waits for it (L0C holds one [bM, bN] fp32 tile: 128 KB at 128 x 256 = all of it)
//
// Flags (event ids per pipe pair; slot = step % 2). Every set has exactly one wait: a
// "slot free" flag is waited for only from the third use of a slot on and set only if the
// slot is used again, so nothing is pending when the kernel ends.
//   MTE2 -> MTE1 id s   L1 slot s holds panel g          (set after its copies, waited before the L0 loads)
//   MTE1 -> MTE2 id s   L1 slot s has been read by MTE1  (panel g + 2 may overwrite it)
//   MTE1 -> M    id q   L0 slot q holds step h           (waited before the Mmad)
//   M    -> MTE1 id q   the Mmad of step h read L0 slot q (step h + 2 may overwrite it)
//   M    -> FIX  id 0   a tile's last Mmad wrote L0C     (before the fixpipe reads it)
//   FIX  -> M    id 0   the fixpipe read L0C             (before the next tile's init Mmad)
// MTE1 and M run their queues in order, so consecutive loads and Mmads need no barrier.
//
// Slots are laid out so each one is a contiguous byte range: L1 is NZ (column blocks of all
// rows), so the two L1 slots sit side by side in columns; L0A (ZZ) and L0B (ZN) are
// row-block-major, so their slots are stacked in rows.
//
// L0B: T::copy maps element (k, n) of the L1 [kL1, bN] panel (NZ of B) to element (k, n) of
// the L0B [bK, bN] tile (ZN of B). On hardware that is LoadData with ifTranspose (layout.h:
// "L1 NZ of B [K, N] -> L0B ZN of B: each fractal transposed"); in T::copy the layouts are
// implied by the scopes and `transpose` means the logical transpose dst(i, j) = src(j, i),
// which a row-major [K, N] B does not need.
#include "tl/kernel_registry.h"
#include "tl/lang.h"

namespace tl::examples {

PrimFunc gemm_pipelined(int M, int N, int K, int bM, int bN, int bK, int kL1, int blocks, DType dtype,
                        DType out_dtype) {
  auto fail = [](const std::string& m) { throw Error("gemm_pipelined: " + m); };
  if (M % bM != 0 || N % bN != 0) fail(fmt::format("M={} and N={} must be multiples of bM={} and bN={}", M, N, bM, bN));
  if (K % kL1 != 0 || kL1 % bK != 0) fail(fmt::format("K={} must be a multiple of kL1={}, kL1 of bK={}", K, kL1, bK));
  if (out_dtype != dtype && out_dtype != f32)
    fail(fmt::format("out_dtype must be dtype or float32, got {}", dtype_name(out_dtype)));
  const int64_t e = dtype_bytes(dtype);
  const int64_t l1 = 2 * (int64_t{bM} * kL1 + int64_t{kL1} * bN) * e;
  const int64_t l0a = 2 * int64_t{bM} * bK * e, l0b = 2 * int64_t{bK} * bN * e, l0c = int64_t{bM} * bN * 4;
  if (l1 > 524032 || l0a > 65536 || l0b > 65536 || l0c > 131072)
    fail(fmt::format("tiles do not fit A2: L1 {} / 524032 B, L0A {} / 65536 B, L0B {} / 65536 B, L0C {} / 131072 B",
                     l1, l0a, l0b, l0c));

  auto A = T::Tensor("A", {M, K}, dtype);
  auto B = T::Tensor("B", {K, N}, dtype);
  auto C = T::Tensor("C", {M, N}, out_dtype);
  const int n_tiles_n = N / bN, n_tiles = checked_product("gemm_pipelined: the tile count (M / bM) * (N / bN)",
                                                          {M / bM, n_tiles_n});
  const int panels = K / kL1, steps = kL1 / bK;  // per tile, per panel
  const int rounds = ceildiv(n_tiles, blocks);  // tiles of the busiest core

  return T::prim_func("gemm_pipelined", {A, B, C}, [&] {
    T::Kernel(std::min(blocks, n_tiles), [&](Expr cid, Expr) {
      T::Scope(Core::Cube, [&] {
        auto a_l1 = T::alloc_L1("A_L1", {bM, 2 * kL1}, dtype);  // slot s: columns [s kL1, (s+1) kL1)
        auto b_l1 = T::alloc_L1("B_L1", {kL1, 2 * bN}, dtype);  // slot s: columns [s bN, (s+1) bN)
        auto a_l0 = T::alloc_L0A("A_L0A", {2 * bM, bK}, dtype);  // slot q: rows [q bM, (q+1) bM)
        auto b_l0 = T::alloc_L0B("B_L0B", {2 * bK, bN}, dtype);  // slot q: rows [q bK, (q+1) bK)
        auto c_l0c = T::alloc_L0C("C_L0C", {bM, bN}, f32);
        const int nb = std::min(blocks, n_tiles);
        // Tiles of this core and its panel / step counts over the whole run.
        Var my_tiles = T::let("my_tiles", (n_tiles - cid + (nb - 1)) / nb);
        Var g_end = T::let("g_end", my_tiles * panels);
        Var h_end = T::let("h_end", g_end * steps);

        T::serial("t", rounds, [&](Expr t) {
          T::If(t < my_tiles, [&] {
            Var tile = T::let("tile", cid + t * nb);
            Var bx = T::let("bx", tile / n_tiles_n), by = T::let("by", tile % n_tiles_n);
            T::serial("p", panels, [&](Expr p) {
              Var g = T::let("g", t * panels + p);  // panel index over the core's run
              Var s = T::let("s", g % 2);
              // GM -> L1 (MTE2) into slot s once MTE1 has read panel g - 2 from it.
              T::If(g >= 2, [&] { T::wait_flag(Pipe::MTE1, Pipe::MTE2, s); });
              T::copy(A.at({bx * bM, p * kL1}), a_l1.region({0, s * kL1}, {bM, kL1}));
              T::copy(B.at({p * kL1, by * bN}), b_l1.region({0, s * bN}, {kL1, bN}));
              T::set_flag(Pipe::MTE2, Pipe::MTE1, s);
              T::wait_flag(Pipe::MTE2, Pipe::MTE1, s);
              T::serial("kk", steps, [&](Expr kk) {
                Var h = T::let("h", g * steps + kk);  // step index over the core's run
                Var q = T::let("q", h % 2);
                // L1 -> L0A/L0B (MTE1) into slot q once the Mmad of step h - 2 has read it.
                T::If(h >= 2, [&] { T::wait_flag(Pipe::M, Pipe::MTE1, q); });
                T::copy(a_l1.region({0, s * kL1 + kk * bK}, {bM, bK}), a_l0.region({q * bM, 0}, {bM, bK}));
                T::copy(b_l1.region({kk * bK, s * bN}, {bK, bN}), b_l0.region({q * bK, 0}, {bK, bN}));
                T::set_flag(Pipe::MTE1, Pipe::M, q);
                T::wait_flag(Pipe::MTE1, Pipe::M, q);
                T::mma(a_l0.region({q * bM, 0}, {bM, bK}), b_l0.region({q * bK, 0}, {bK, bN}), c_l0c,
                       p == 0 && kk == 0);
                T::If(h + 2 < h_end, [&] { T::set_flag(Pipe::M, Pipe::MTE1, q); });
              });
              T::If(g + 2 < g_end, [&] { T::set_flag(Pipe::MTE1, Pipe::MTE2, s); });
            });
            // The tile is complete in L0C: fixpipe it out (fp32 -> out_dtype).
            T::set_flag(Pipe::M, Pipe::FIX, 0);
            T::wait_flag(Pipe::M, Pipe::FIX, 0);
            T::copy(c_l0c, C.at({bx * bM, by * bN}));
            // The next tile's init Mmad overwrites L0C: after the fixpipe has read it. The M
            // pipe waits; MTE2/MTE1 already stream the next tile's panels.
            T::If(t + 1 < my_tiles, [&] {
              T::set_flag(Pipe::FIX, Pipe::M, 0);
              T::wait_flag(Pipe::FIX, Pipe::M, 0);
            });
          });
        });
      });
    });
  });
}

// Cube tiles are whole 16 x 16 fractals.
const ParamRule kFractal = ParamRule::tile(16);

TL_REGISTER_KERNEL({
    .name = "gemm_pipelined",
    .summary = "expert GEMM: persistent AICs, double-buffered L1 panels and L0A/L0B, flags instead of barriers",
    .params = {{"M", "1024", "rows of A and C"},
               {"N", "1024", "columns of B and C"},
               {"K", "1024", "columns of A, rows of B"},
               {"bM", "128", "tile rows (L0A / L0C)", kFractal},
               {"bN", "256", "tile columns (L0B / L0C)", kFractal},
               {"bK", "64", "K depth of one Mmad (L0A / L0B)", kFractal},
               {"kL1", "256", "K depth of an L1 panel (a multiple of bK)", kFractal},
               {"blocks", "24", "persistent AICs (A2: 24)", ParamRule::blocks()},
               {"dtype", "float16", "A and B dtype", {.one_of = {"float16", "bfloat16"}}},
               {"out_dtype", "", "C dtype: float32 or empty for dtype",
                {.one_of = {"", "float32", "float16", "bfloat16"}}}},
    .build = [](const KernelArgs& a) {
      return gemm_pipelined(a.get("M"), a.get("N"), a.get("K"), a.get("bM"), a.get("bN"), a.get("bK"), a.get("kL1"),
                            a.get("blocks"), a.get_dtype("dtype"),
                            a.get_str("out_dtype").empty() ? a.get_dtype("dtype") : a.get_dtype("out_dtype"));
    },
});

}  // namespace tl::examples
