"""Developer-mode FlashAttention forward, O = softmax(scale * Q K^T) V for Q, K, V, O of shape
[B, H, S, D] (BHSD): the Python twin of examples/flash_attention_dev.cpp.

The online-softmax dataflow with none of the hardware work. Per kv-tile the cube computes
S = Q K^T, the vector unit turns S into P and updates the running max, denominator and output,
and the cube computes P V. The compiler places q, k, v in L1 and s, o in L0C; s and o cross to
the vector unit (UB twins) and p to the cube (an L1 twin) through GM workspaces it allocates,
once per iteration, with cross-core flags and credits (docs/developer_mode.md, "Data that
crosses cores"). The kv loop is T.Pipelined: with 2 stages the cube computes the next tile's
scores while the vector unit works on this one's softmax (pipeline_loops).

The exps are T.tile.exp on developer tiles (the chip's approximation, chosen explicitly), and
the running max T.tile.max (the chip's, where a NaN wins, as in the expert kernel). Any S:
the compiler clips the copies of the last q- and kv-tiles and zero-fills their L1 padding; the
kernel masks the keys past S, as TileLang kernels do.
Run it: python python/examples/flash_attention_dev.py
"""

import math
import struct

import tl_ascend as tilelang
import tl_ascend.language as T


def round_to_float32(value):
    """`value` rounded to the nearest float32 (tl's arith::round_float)."""
    return struct.unpack("f", struct.pack("f", value))[0]


@tilelang.jit(out_idx=[-1])
def flash_attention(B, H, S, D, block_M=64, block_N=64, dtype="float16", num_stages=2):
    q_tiles = T.ceildiv(S, block_M)
    blocks = B * H * q_tiles
    scale = round_to_float32(1.0 / math.sqrt(D))
    shape = (B, H, S, D)
    accum_dtype = "float32"

    @T.prim_func
    def flash_attention_dev(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
                            O: T.Tensor(shape, dtype)):  # noqa: E741
        with T.Kernel(blocks, threads=2) as cid:
            bx = cid % q_tiles
            by = cid // q_tiles % H
            bz = cid // (q_tiles * H)
            q = T.alloc_shared((block_M, D), dtype)
            k = T.alloc_shared((block_N, D), dtype)
            v = T.alloc_shared((block_N, D), dtype)
            s = T.alloc_fragment((block_M, block_N), accum_dtype)  # scores, then P in fp32
            p = T.alloc_shared((block_M, block_N), dtype)  # P for the cube
            o = T.alloc_fragment((block_M, D), accum_dtype)  # this tile's P V
            acc = T.alloc_fragment((block_M, D), accum_dtype)
            m = T.alloc_fragment((block_M,), accum_dtype)
            mj = T.alloc_fragment((block_M,), accum_dtype)
            alpha = T.alloc_fragment((block_M,), accum_dtype)
            rs = T.alloc_fragment((block_M,), accum_dtype)
            l = T.alloc_fragment((block_M,), accum_dtype)  # noqa: E741
            key_mask = T.alloc_fragment((block_N,), accum_dtype)
            out = T.alloc_shared((block_M, D), dtype)
            T.copy(Q[bz, by, bx * block_M, 0], q)
            T.clear(acc)
            T.fill(m, -T.infinity(accum_dtype))
            T.clear(l)
            # The element loops are named as the C++ builder names them (the IR is the C++ twin's):
            # i, j over a 2-D tile, p over a row vector. Inside them j and p shadow the kv index j
            # and the tile p, which those loops do not use.
            for j in T.Pipelined(T.ceildiv(S, block_N), num_stages=num_stages):
                T.copy(K[bz, by, j * block_N, 0], k)
                T.copy(V[bz, by, j * block_N, 0], v)
                T.gemm(q, k, s, transpose_B=True, init=True)
                for i, j in T.Parallel(block_M, block_N):
                    s[i, j] = s[i, j] * scale
                if S % block_N != 0:  # keys past S (the last tile's padding) get no weight
                    for p in T.Parallel(block_N):
                        key_mask[p] = T.if_then_else(p < S - j * block_N, 0.0, -T.infinity(accum_dtype))
                    for i, j in T.Parallel(block_M, block_N):
                        s[i, j] = s[i, j] + key_mask[j]
                T.reduce_max(s, mj, dim=-1)
                T.tile.max(mj, mj, m)  # the chip's max, as the expert's (a NaN wins)
                for i, j in T.Parallel(block_M, block_N):
                    s[i, j] = s[i, j] - mj[i]
                for p in T.Parallel(block_M):
                    alpha[p] = m[p] - mj[p]
                T.tile.exp(s, s)
                T.tile.exp(alpha, alpha)
                for p in T.Parallel(block_M):
                    m[p] = mj[p]
                T.reduce_sum(s, rs, dim=-1)
                for i, j in T.Parallel(block_M, block_N):
                    p[i, j] = T.cast(s[i, j], dtype)
                T.gemm(p, v, o, init=True)
                for p in T.Parallel(block_M):
                    l[p] = l[p] * alpha[p] + rs[p]
                for i, j in T.Parallel(block_M, D):
                    acc[i, j] = acc[i, j] * alpha[i] + o[i, j]
            for i, j in T.Parallel(block_M, D):
                out[i, j] = T.cast(acc[i, j] / l[i], dtype)
            T.copy(out, O[bz, by, bx * block_M, 0])

    return flash_attention_dev


def ref_program(q, k, v):
    """The fp32 torch reference, cast to the inputs' dtype."""
    import torch

    scores = q.float() @ k.float().transpose(-1, -2) / math.sqrt(q.shape[-1])
    return (torch.softmax(scores, dim=-1) @ v.float()).to(q.dtype)


def main(B=1, H=1, S=256, D=128):
    import torch

    torch.manual_seed(0)
    q, k, v = (torch.randn(B, H, S, D).half() for _ in range(3))
    o = flash_attention(B, H, S, D)(q, k, v)
    torch.testing.assert_close(o, ref_program(q, k, v), rtol=1e-2, atol=1e-2)
    print("Kernel Output Match!")


if __name__ == "__main__":
    main()
