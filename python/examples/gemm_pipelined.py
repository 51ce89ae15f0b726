"""Expert-mode GEMM with the data movement overlapped with the cube (AscendC high-performance
matmul structure): the Python twin of examples/gemm_pipelined.cpp.

C[M, N] = A[M, K] x B[K, N], fp16 in, fp32 accumulation in L0C, fp16 (or fp32) out.
`num_blocks` AICs are persistent over the (M / block_M) x (N / block_N) output tiles (tile cid,
cid + num_blocks, ...). Each tile walks K in L1 panels of depth K_L1 (A [block_M, K_L1],
B [K_L1, block_N]), and each panel in block_K-deep steps (A [block_M, block_K] -> L0A,
B [block_K, block_N] -> L0B, one Mmad into L0C). Both levels are double-buffered, counted over
the core's whole run (tile after tile), so the pipes never drain at a tile boundary:

  MTE2  GM -> L1 panel g+1 (slot (g+1) % 2)  while MTE1 / M work on panel g
  MTE1  L1 -> L0A/L0B step h+1 (slot (h+1) % 2) while M multiplies step h
  M     Mmad step h, init on the first step of a tile
  FIX   L0C -> GM after a tile's last step; the next tile's first Mmad waits for it

Flags (event ids per pipe pair; slot = step % 2). Every set has exactly one wait: a "slot free"
flag is waited for only from the third use of a slot on and set only if the slot is used again,
so nothing is pending when the kernel ends.
  MTE2 -> MTE1 id s   L1 slot s holds panel g          (set after its copies, waited before the L0 loads)
  MTE1 -> MTE2 id s   L1 slot s has been read by MTE1  (panel g + 2 may overwrite it)
  MTE1 -> M    id q   L0 slot q holds step h           (waited before the Mmad)
  M    -> MTE1 id q   the Mmad of step h read L0 slot q (step h + 2 may overwrite it)
  M    -> FIX  id 0   a tile's last Mmad wrote L0C     (before the fixpipe reads it)
  FIX  -> M    id 0   the fixpipe read L0C             (before the next tile's init Mmad)

Slots are laid out so each one is a contiguous byte range: L1 is NZ (column blocks of all rows),
so the two L1 slots sit side by side in columns; L0A (ZZ) and L0B (ZN) are row-block-major, so
their slots are stacked in rows.
Run it: python python/examples/gemm_pipelined.py
"""

import tl_ascend as tilelang
import tl_ascend.language as T


@tilelang.jit(out_idx=[-1])
def matmul_pipelined(M, N, K, block_M=128, block_N=256, block_K=64, K_L1=256, num_blocks=24, dtype="float16",
                     out_dtype=None, accum_dtype="float"):
    out_dtype = out_dtype or dtype
    if M % block_M != 0 or N % block_N != 0:
        raise ValueError(f"gemm_pipelined: M={M} and N={N} must be multiples of block_M={block_M} and "
                         f"block_N={block_N}")
    if K % K_L1 != 0 or K_L1 % block_K != 0:
        raise ValueError(f"gemm_pipelined: K={K} must be a multiple of K_L1={K_L1}, K_L1 of block_K={block_K}")
    n_num = N // block_N
    n_tiles = M // block_M * n_num
    panels = K // K_L1  # L1 panels per tile
    steps = K_L1 // block_K  # Mmad steps per panel
    rounds = T.ceildiv(n_tiles, num_blocks)  # tiles of the busiest core
    nb = min(num_blocks, n_tiles)

    @T.prim_func
    def gemm_pipelined(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(nb, is_npu=True) as (cid, _):
            with T.Scope("C"):
                A_L1 = T.alloc_L1((block_M, 2 * K_L1), dtype)  # slot s: columns [s K_L1, (s+1) K_L1)
                B_L1 = T.alloc_L1((K_L1, 2 * block_N), dtype)  # slot s: columns [s block_N, (s+1) block_N)
                A_L0A = T.alloc_L0A((2 * block_M, block_K), dtype)  # slot q: rows [q block_M, (q+1) block_M)
                B_L0B = T.alloc_L0B((2 * block_K, block_N), dtype)  # slot q: rows [q block_K, (q+1) block_K)
                C_L0C = T.alloc_L0C((block_M, block_N), accum_dtype)
                # Tiles of this core and its panel / step counts over the whole run.
                my_tiles = (n_tiles - cid + (nb - 1)) // nb
                g_end = my_tiles * panels
                h_end = g_end * steps

                for t in T.serial(rounds):
                    if t < my_tiles:
                        tile = cid + t * nb
                        bx = tile // n_num
                        by = tile % n_num
                        for p in T.serial(panels):
                            g = t * panels + p  # panel index over the core's run
                            s = g % 2
                            # GM -> L1 (MTE2) into slot s once MTE1 has read panel g - 2 from it.
                            if g >= 2:
                                T.wait_flag("MTE1", "MTE2", s)
                            T.copy(A[bx * block_M, p * K_L1], A_L1[0:block_M, s * K_L1:s * K_L1 + K_L1])
                            T.copy(B[p * K_L1, by * block_N], B_L1[0:K_L1, s * block_N:s * block_N + block_N])
                            T.set_flag("MTE2", "MTE1", s)
                            T.wait_flag("MTE2", "MTE1", s)
                            for kk in T.serial(steps):
                                h = g * steps + kk  # step index over the core's run
                                q = h % 2
                                # L1 -> L0A/L0B (MTE1) into slot q once the Mmad of step h - 2 has read it.
                                if h >= 2:
                                    T.wait_flag("M", "MTE1", q)
                                T.copy(A_L1[0:block_M, s * K_L1 + kk * block_K:s * K_L1 + kk * block_K + block_K],
                                       A_L0A[q * block_M:q * block_M + block_M, 0:block_K])
                                T.copy(B_L1[kk * block_K:kk * block_K + block_K, s * block_N:s * block_N + block_N],
                                       B_L0B[q * block_K:q * block_K + block_K, 0:block_N])
                                T.set_flag("MTE1", "M", q)
                                T.wait_flag("MTE1", "M", q)
                                T.mma(A_L0A[q * block_M:q * block_M + block_M, 0:block_K],
                                      B_L0B[q * block_K:q * block_K + block_K, 0:block_N], C_L0C,
                                      p == 0 and kk == 0)
                                if h + 2 < h_end:
                                    T.set_flag("M", "MTE1", q)
                            if g + 2 < g_end:
                                T.set_flag("MTE1", "MTE2", s)
                        # The tile is complete in L0C: fixpipe it out (fp32 -> out_dtype).
                        T.set_flag("M", "FIX", 0)
                        T.wait_flag("M", "FIX", 0)
                        T.copy(C_L0C, C[bx * block_M, by * block_N])
                        # The next tile's init Mmad overwrites L0C: after the fixpipe has read it.
                        # The M pipe waits; MTE2/MTE1 already stream the next tile's panels.
                        if t + 1 < my_tiles:
                            T.set_flag("FIX", "M", 0)
                            T.wait_flag("FIX", "M", 0)

    return gemm_pipelined


def main(M=256, N=512, K=512):
    import torch

    torch.manual_seed(0)
    a = torch.randn(M, K).half()
    b = torch.randn(K, N).half()
    # 8 tiles on 3 persistent AICs: cores 0 and 1 take three tiles, core 2 two.
    c = matmul_pipelined(M, N, K, block_N=128, num_blocks=3)(a, b)
    ref = (a.float() @ b.float()).half()
    torch.testing.assert_close(c, ref, rtol=1e-2, atol=1e-2)
    print("Kernel Output Match!")


if __name__ == "__main__":
    main()
