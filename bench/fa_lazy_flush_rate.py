# How often a lazily rescaled FlashAttention forward (FlashAttention-4's conditional rescale)
# would have to drain its P V accumulator from L0C (docs/ops.md, FlashAttention forward, the
# cubeflag round). The reference maximum m_ref of a q tile's rows moves only when some row's
# maximum in a kv tile exceeds it by more than tau; with P V accumulated in L0C across kv steps,
# every such move makes the cube drain its whole 128-row accumulator to the vector cores, which
# rescale it. Counts, per (q tile, kv step after the first), the steps that drain, for 128 x 128
# tiles at S = 4096, D = 128, on score distributions from the tests' (q, k ~ N(0, 1)) to wider and
# drifting ones. numpy only; prints one line per case. python3 bench/fa_lazy_flush_rate.py
import numpy as np
def rate(S=4096, D=128, H=4, bM=128, bN=128, tau=8*np.log(2), causal=False, gen=None, seed=0):
    rng = np.random.default_rng(seed)
    steps = flushes = 0
    for h in range(H):
        s = gen(rng, S, D)  # scaled scores [S, S]
        for qx in range(S // bM):
            rows = s[qx*bM:(qx+1)*bM]
            nkv = (qx + 1) if causal else S // bN
            mref = None
            for kv in range(nkv):
                t = rows[:, kv*bN:(kv+1)*bN].copy()
                if causal and kv == qx:
                    i = np.arange(bM)[:, None]; c = np.arange(bN)[None, :]
                    t[c > i] = -np.inf
                mx = t.max(axis=1)
                if mref is None:
                    mref = mx.copy(); continue
                steps += 1
                if np.any(mx > mref + tau):
                    flushes += 1
                    mref = np.maximum(mref, mx)
    return flushes, steps
def randn(scale):
    def g(rng, S, D):
        q = rng.standard_normal((S, D)) * scale; k = rng.standard_normal((S, D)) * scale
        return q @ k.T / np.sqrt(D)
    return g
def drift(slope):  # later keys score higher: slope per 128 keys (natural units)
    def g(rng, S, D):
        q = rng.standard_normal((S, D)); k = rng.standard_normal((S, D))
        return q @ k.T / np.sqrt(D) + slope * np.arange(S)[None, :] / 128
    return g
# tau in log2 units: 8 (P <= 256) and 15 (P <= 32768, still inside float16's range).
for tau2 in (8, 15):
    for name, gen in [("randn (scores ~N(0,1))", randn(1)), ("randn x2 (std 4)", randn(2)),
                      ("randn x3 (std 9)", randn(3)), ("drift 0.5/tile", drift(0.5)),
                      ("drift 2/tile", drift(2.0)), ("drift 8/tile", drift(8.0))]:
        for causal in (False, True):
            f, n = rate(gen=gen, causal=causal, H=2, tau=tau2 * np.log(2))
            print(f"tau {tau2:2d}  {name:24s} causal={int(causal)}  drains {f}/{n} steps = {100 * f / max(n, 1):.2f} %")
