"""A CPU version of torch_npu.npu_sparse_flash_attention, for scripts that use it as their reference
(TileLang-Ascend's sparse_flash_attention/bench_sfa/bench_sfa.py); tl_ascend.torch_npu exports it.

It follows the operator's public documentation (torch_npu / MindSpore `sparse_flash_attention`,
and the golden of op-plugin's test_npu_sparse_flash_attention.py):
    attention_out = softmax(scale_value * Q @ K~^T) @ V~,
where K~, V~ are the key / value tokens that `sparse_indices` selects for each query token: index i
picks tokens [i * sparse_block_size, (i + 1) * sparse_block_size) of its batch's sequence, clipped at
actual_seq_lengths_kv; the first -1 ends the list. With attention_mode=2 (MLA-absorb) the scores
use [query | query_rope] and [key | key_rope]. sparse_mode=3 (right-down causal) also drops key
tokens at or past actual_kv - actual_q + s1 + 1 for query row s1; sparse_mode=0 drops none.

Layouts: query BSND [B, S1, N1, D] or TND [T, N1, D]; key / value BSND [B, S2, N2, D], TND
[T2, N2, D] or PA_BSND [blocks, block_size, N2, D] through block_table [B, max_blocks]. In a TND
layout the actual_seq_lengths are cumulative ends (prefix sums), as in torch_npu's other TND
operators. What it does not model (return_softmax_lse=True, pre_tokens / next_tokens other than the
default, attention_mode other than 0 / 2, sparse_mode other than 0 / 3) is a tl_ascend.Error naming
the argument, never a silently different result. The two softmax outputs are empty tensors, as
torch_npu returns them without return_softmax_lse. It is a reference: plain torch in float32.
"""

from __future__ import annotations

from typing import Any

import torch

_NO_BAND = 2**63 - 1


def _error(msg: str) -> Exception:
    from . import _core

    return _core.Error(f"torch_npu.npu_sparse_flash_attention: {msg}")


def _tensor(x: Any, name: str, dims: int, layout: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or x.dim() != dims:
        got = f"shape {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__
        raise _error(f"argument '{name}' must be a {dims}-D tensor for layout {layout!r}, got {got}")
    return x


def _lengths(x: Any, name: str, batch: int, default: list[int], cumulative: bool) -> list[int]:
    """Per-batch lengths (a cumulative TND list turned into per-batch ones)."""
    if x is None:
        return default
    vals = [int(v) for v in (x.reshape(-1).tolist() if isinstance(x, torch.Tensor) else list(x))]
    if len(vals) != batch:
        raise _error(f"argument '{name}' must hold {batch} lengths (one per batch), got {len(vals)}")
    if cumulative:
        vals = [v - (vals[i - 1] if i else 0) for i, v in enumerate(vals)]
    if any(v < 0 for v in vals):
        raise _error(f"argument '{name}' must be non-negative{' and non-decreasing' if cumulative else ''}, got "
                     f"{x.reshape(-1).tolist() if isinstance(x, torch.Tensor) else x}")
    return vals


def npu_sparse_flash_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                               sparse_indices: torch.Tensor, scale_value: float, *,
                               block_table: torch.Tensor | None = None,
                               actual_seq_lengths_query: torch.Tensor | None = None,
                               actual_seq_lengths_kv: torch.Tensor | None = None,
                               query_rope: torch.Tensor | None = None, key_rope: torch.Tensor | None = None,
                               sparse_block_size: int = 1, layout_query: str = "BSND", layout_kv: str = "BSND",
                               sparse_mode: int = 3, pre_tokens: int = _NO_BAND, next_tokens: int = _NO_BAND,
                               attention_mode: int = 0,
                               return_softmax_lse: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """torch_npu.npu_sparse_flash_attention on the CPU (the module docstring says what it models)."""
    if layout_query not in ("BSND", "TND"):
        raise _error(f"argument 'layout_query' must be 'BSND' or 'TND', got {layout_query!r}")
    if layout_kv not in ("BSND", "TND", "PA_BSND"):
        raise _error(f"argument 'layout_kv' must be 'BSND', 'TND' or 'PA_BSND', got {layout_kv!r}")
    if layout_kv != "PA_BSND" and layout_kv != layout_query:
        raise _error(f"layout_kv {layout_kv!r} must equal layout_query {layout_query!r} unless it is 'PA_BSND'")
    if sparse_mode not in (0, 3):
        raise _error(f"argument 'sparse_mode' must be 0 (no mask) or 3 (right-down causal), got {sparse_mode!r}")
    if attention_mode not in (0, 2):
        raise _error(f"argument 'attention_mode' must be 0 or 2 (MLA-absorb), got {attention_mode!r}")
    if return_softmax_lse:
        raise _error("argument 'return_softmax_lse': True is not modelled (softmax_max / softmax_sum of "
                     "training), pass False")
    if pre_tokens != _NO_BAND or next_tokens != _NO_BAND:
        raise _error("arguments 'pre_tokens' / 'next_tokens': only the default (no band) is modelled")
    if isinstance(sparse_block_size, bool) or not isinstance(sparse_block_size, int) or sparse_block_size < 1:
        raise _error(f"argument 'sparse_block_size' must be an int >= 1, got {sparse_block_size!r}")
    if (query_rope is None) != (key_rope is None):
        raise _error("arguments 'query_rope' and 'key_rope' go together: give both or neither")
    if attention_mode == 2 and query_rope is None:
        raise _error("attention_mode=2 (MLA-absorb) needs 'query_rope' and 'key_rope'")

    q_dims = 4 if layout_query == "BSND" else 3
    q = _tensor(query, "query", q_dims, layout_query)
    idx = _tensor(sparse_indices, "sparse_indices", q_dims, layout_query)
    kv_dims = 3 if layout_kv == "TND" else 4
    k = _tensor(key, "key", kv_dims, layout_kv)
    v = _tensor(value, "value", kv_dims, layout_kv)
    if k.shape[:-1] != v.shape[:-1]:
        raise _error(f"'key' {tuple(k.shape)} and 'value' {tuple(v.shape)} must agree but for the last dimension")
    qr = kr = None
    if query_rope is not None:
        qr = _tensor(query_rope, "query_rope", q_dims, layout_query)
        kr = _tensor(key_rope, "key_rope", kv_dims, layout_kv)
        if qr.shape[:-1] != q.shape[:-1] or kr.shape[:-1] != k.shape[:-1]:
            raise _error(f"'query_rope' {tuple(qr.shape)} / 'key_rope' {tuple(kr.shape)} must match 'query' "
                         f"{tuple(q.shape)} / 'key' {tuple(k.shape)} but for the last dimension")
    heads, kv_heads = q.shape[-2], k.shape[-2]
    if heads % kv_heads:
        raise _error(f"the {heads} query heads are not a multiple of the {kv_heads} key/value heads")
    if idx.shape[:-2] != q.shape[:-2] or idx.shape[-2] != kv_heads:
        raise _error(f"argument 'sparse_indices' {tuple(idx.shape)} must be {tuple(q.shape[:-2])} x "
                     f"{kv_heads} (key/value heads) x K")

    # Query rows per batch: (batch, first row, count) over a flat [rows, N1, D] view.
    if layout_query == "BSND":
        batch, s1 = q.shape[0], q.shape[1]
        q_len = _lengths(actual_seq_lengths_query, "actual_seq_lengths_query", batch, [s1] * batch, False)
        if any(n > s1 for n in q_len):
            raise _error(f"argument 'actual_seq_lengths_query' {q_len} exceeds the query's S1 = {s1}")
        q_start = [b * s1 for b in range(batch)]
    else:
        if actual_seq_lengths_query is None:
            raise _error("layout_query 'TND' needs 'actual_seq_lengths_query' (cumulative ends per batch)")
        batch = int(actual_seq_lengths_query.numel()) if isinstance(actual_seq_lengths_query, torch.Tensor) \
            else len(actual_seq_lengths_query)
        q_len = _lengths(actual_seq_lengths_query, "actual_seq_lengths_query", batch, [], True)
        q_start = [sum(q_len[:b]) for b in range(batch)]
        if q_start[-1] + q_len[-1] > q.shape[0]:
            raise _error(f"argument 'actual_seq_lengths_query' ends at {q_start[-1] + q_len[-1]}, past T = {q.shape[0]}")
    flat = lambda x: x.reshape(-1, *x.shape[-2:])  # noqa: E731
    qf, idxf = flat(q).float(), flat(idx)
    qrf = flat(qr).float() if qr is not None else None

    # Each batch's key/value sequence as [S2, N2, D] (gathered through block_table for PA_BSND).
    def seq(x: torch.Tensor, b: int) -> torch.Tensor:
        if layout_kv == "BSND":
            return x[b]
        if layout_kv == "TND":
            return x[kv_start[b]:kv_start[b] + kv_cap[b]]
        return x[block_table[b].long()].reshape(-1, *x.shape[-2:])

    if layout_kv == "BSND":
        if k.shape[0] != batch:
            raise _error(f"'key' has batch {k.shape[0]}, the query {batch}")
        kv_cap = [k.shape[1]] * batch
    elif layout_kv == "TND":
        kv_cap = _lengths(actual_seq_lengths_kv, "actual_seq_lengths_kv", batch, [], True) \
            if actual_seq_lengths_kv is not None else None
        if kv_cap is None:
            raise _error("layout_kv 'TND' needs 'actual_seq_lengths_kv' (cumulative ends per batch)")
        kv_start = [sum(kv_cap[:b]) for b in range(batch)]
    else:
        if not isinstance(block_table, torch.Tensor) or block_table.dim() != 2 or block_table.shape[0] != batch:
            got = tuple(block_table.shape) if isinstance(block_table, torch.Tensor) else type(block_table).__name__
            raise _error(f"layout_kv 'PA_BSND' needs 'block_table' of shape [{batch}, max_blocks], got {got}")
        if block_table.numel() and (int(block_table.min()) < 0 or int(block_table.max()) >= k.shape[0]):
            raise _error(f"argument 'block_table' holds block ids outside [0, {k.shape[0]})")
        kv_cap = [block_table.shape[1] * k.shape[1]] * batch
    kv_len = _lengths(actual_seq_lengths_kv, "actual_seq_lengths_kv", batch, kv_cap,
                      layout_kv == "TND") if layout_kv != "TND" else kv_cap
    if any(n > c for n, c in zip(kv_len, kv_cap)):
        raise _error(f"argument 'actual_seq_lengths_kv' {kv_len} exceeds the key/value tokens {kv_cap}")

    group = heads // kv_heads
    out = torch.zeros(qf.shape[0], heads, v.shape[-1], dtype=torch.float32)
    for b in range(batch):
        kb, vb = seq(k, b).float(), seq(v, b).float()
        krb = seq(kr, b).float() if kr is not None else None
        for r in range(q_len[b]):
            row = q_start[b] + r
            limit = kv_len[b]
            if sparse_mode == 3:
                limit = min(limit, kv_len[b] - q_len[b] + r + 1)
            for g in range(kv_heads):
                ids = idxf[row, g].tolist()
                tokens: list[int] = []
                for i in ids:
                    if i == -1:
                        break
                    if i < -1:
                        raise _error(f"argument 'sparse_indices' holds {int(i)} at row {row}, head {g}: "
                                     "expected a block index >= 0, or -1 to end the list")
                    begin = int(i) * sparse_block_size
                    tokens.extend(range(begin, min(begin + sparse_block_size, limit)))
                if not tokens:
                    continue  # no key token: the row stays 0
                t = torch.tensor(tokens, dtype=torch.long)
                hs = slice(g * group, (g + 1) * group)
                s = qf[row, hs] @ kb[t, g].T
                if qrf is not None:
                    s = s + qrf[row, hs] @ krb[t, g].T
                p = torch.softmax(s * scale_value, dim=-1)
                out[row, hs] = p @ vb[t, g]
    result = out.to(query.dtype).reshape(*q.shape[:-1], v.shape[-1])
    empty = torch.empty(0, dtype=torch.float32)
    return result, empty, empty
