"""A CPU version of torch_npu.npu_fusion_attention, for scripts that use it as their reference
(TileLang-Ascend's fa_opt/flash_attn_bhsd_ascendc.py); tl_ascend.torch_npu exports it.

It follows torch_npu's documented signature and formula,
    attention_out = Softmax(Mask(scale * query @ key^T, atten_mask)) @ value,
for the input layouts BNSD, BSND, BSH and SBH, grouped heads (key/value heads dividing the query
heads), and a boolean atten_mask (True = masked out) of shape [Sq, Skv], [1, 1, Sq, Skv],
[B, 1, Sq, Skv] or [B, N, Sq, Skv]. What it does not model (pse, padding_mask, dropout with
keep_prob < 1, band limits pre_tockens / next_tockens shorter than the sequences, prefix,
actual_seq_qlen / actual_seq_kvlen, sparse_mode other than 0) is a tl_ascend.Error naming the
argument, never a silently different result. It is a reference: plain torch in float32, by
chunks of heads so that a 4 x 32 x 4096 x 4096 score matrix is never held at once.
"""

from __future__ import annotations

from typing import Any

import torch

_LAYOUTS = ("BNSD", "BSND", "BSH", "SBH")
_NO_BAND = 2147483647


def _error(msg: str) -> Exception:
    from . import _core

    return _core.Error(f"torch_npu.npu_fusion_attention: {msg}")


def _to_bnsd(x: torch.Tensor, name: str, layout: str, heads: int | None) -> torch.Tensor:
    """x as [B, N, S, D] (heads: N for the 3-D layouts, which fold N * D into H)."""
    want = 4 if layout in ("BNSD", "BSND") else 3
    if not isinstance(x, torch.Tensor) or x.dim() != want:
        got = f"shape {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__
        raise _error(f"argument '{name}' must be a {want}-D tensor for input_layout {layout!r}, got {got}")
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.permute(0, 2, 1, 3)
    assert heads is not None
    if x.shape[-1] % heads:
        raise _error(f"argument '{name}': its hidden size {x.shape[-1]} is not a multiple of the {heads} heads")
    b_s = x if layout == "BSH" else x.permute(1, 0, 2)
    b, s, h = b_s.shape
    return b_s.reshape(b, s, heads, h // heads).permute(0, 2, 1, 3)


def _from_bnsd(x: torch.Tensor, layout: str) -> torch.Tensor:
    if layout == "BNSD":
        return x
    if layout == "BSND":
        return x.permute(0, 2, 1, 3).contiguous()
    b, n, s, d = x.shape
    bsh = x.permute(0, 2, 1, 3).reshape(b, s, n * d)
    return bsh if layout == "BSH" else bsh.permute(1, 0, 2).contiguous()


def npu_fusion_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, head_num: int,
                         input_layout: str, pse: Any = None, padding_mask: Any = None, atten_mask: Any = None,
                         scale: float = 1.0, keep_prob: float = 1.0, pre_tockens: int = _NO_BAND,
                         next_tockens: int = _NO_BAND, inner_precise: int = 0, prefix: Any = None,
                         actual_seq_qlen: Any = None, actual_seq_kvlen: Any = None, sparse_mode: int = 0,
                         gen_mask_parallel: bool = True, sync: bool = False
                         ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, int, int, int]:
    """(attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels) as torch_npu
    returns them: softmax_max / softmax_sum are [B, N, Sq, 8] float32 (the row maximum of the
    scaled scores and the sum of exp(score - max), repeated 8 times as on the card), softmax_out
    is empty, and the dropout seed, offset and mask size are 0 (no dropout)."""
    if input_layout not in _LAYOUTS:
        raise _error(f"argument 'input_layout' must be one of {', '.join(_LAYOUTS)}, got {input_layout!r}")
    if isinstance(head_num, bool) or not isinstance(head_num, int) or head_num < 1:
        raise _error(f"argument 'head_num' must be a positive int, got {head_num!r}")
    unsupported = {"pse": pse is not None, "padding_mask": padding_mask is not None, "prefix": prefix is not None,
                   "actual_seq_qlen": actual_seq_qlen is not None, "actual_seq_kvlen": actual_seq_kvlen is not None,
                   "keep_prob": keep_prob != 1.0, "sparse_mode": sparse_mode != 0}
    for name, given in unsupported.items():
        if given:
            raise _error(f"argument '{name}' is not supported by tl-ascend's CPU version (it models no position "
                         f"encoding, padding, prefix, variable lengths, dropout or sparse modes), got "
                         f"{locals()[name]!r}")
    heads = head_num if input_layout in ("BSH", "SBH") else None
    q = _to_bnsd(query, "query", input_layout, heads)
    b, n, sq, d = q.shape
    kv_heads = None
    if heads is not None:  # the key/value heads of a 3-D layout: their hidden size over D
        if key.dim() != 3 or key.shape[-1] % d:
            raise _error(f"argument 'key': hidden size {key.shape[-1] if key.dim() else '?'} is not a multiple "
                         f"of the head size {d}")
        kv_heads = key.shape[-1] // d
    k = _to_bnsd(key, "key", input_layout, kv_heads)
    v = _to_bnsd(value, "value", input_layout, kv_heads)
    if heads is None and n != head_num:
        raise _error(f"argument 'head_num' is {head_num} but query has {n} heads (input_layout {input_layout!r})")
    if k.shape != v.shape or k.shape[0] != b or k.shape[3] != d or n % k.shape[1]:
        raise _error(f"key {tuple(key.shape)} and value {tuple(value.shape)} must match each other, the batch "
                     f"and head size of query {tuple(query.shape)}, and have a number of heads dividing {n}")
    skv = k.shape[2]
    for name, band in (("pre_tockens", pre_tockens), ("next_tockens", next_tockens)):
        if band < max(sq, skv):
            raise _error(f"argument '{name}' = {band} limits the attention band, which tl-ascend's CPU version "
                         f"does not model; expected at least the sequence length {max(sq, skv)}")
    mask = None
    if atten_mask is not None:
        if not isinstance(atten_mask, torch.Tensor) or atten_mask.dtype not in (torch.bool, torch.uint8):
            raise _error("argument 'atten_mask' must be a bool (or uint8) tensor, True = masked out")
        ok = atten_mask.dim() in (2, 4) and tuple(atten_mask.shape[-2:]) == (sq, skv) and (
            atten_mask.dim() == 2 or (atten_mask.shape[0] in (1, b) and atten_mask.shape[1] in (1, n)))
        if not ok:
            raise _error(f"argument 'atten_mask' must have shape [Sq, Skv], [1|B, 1|N, Sq, Skv] with Sq={sq}, "
                         f"Skv={skv}, got {tuple(atten_mask.shape)}")
        mask = atten_mask.bool()
        mask = mask.view(1, 1, sq, skv) if mask.dim() == 2 else mask
    rep = n // k.shape[1]
    out = torch.empty(b, n, sq, d, dtype=torch.float32, device=q.device)
    row_max = torch.empty(b, n, sq, dtype=torch.float32, device=q.device)
    row_sum = torch.empty_like(row_max)
    # One head at a time: the [Sq, Skv] float32 scores of one head at most.
    for bi in range(b):
        for hi in range(n):
            qh, kh, vh = q[bi, hi].float(), k[bi, hi // rep].float(), v[bi, hi // rep].float()
            s = (qh @ kh.transpose(0, 1)) * float(scale)
            if mask is not None:
                s = s.masked_fill(mask[bi if mask.shape[0] > 1 else 0, hi if mask.shape[1] > 1 else 0], float("-inf"))
            m = s.amax(dim=-1, keepdim=True)
            p = torch.exp(s - m)
            den = p.sum(dim=-1, keepdim=True)
            out[bi, hi] = (p @ vh) / den
            row_max[bi, hi], row_sum[bi, hi] = m.squeeze(-1), den.squeeze(-1)
    attention_out = _from_bnsd(out.to(query.dtype), input_layout)
    rep8 = lambda t: t.unsqueeze(-1).expand(b, n, sq, 8).contiguous()  # noqa: E731
    return attention_out, rep8(row_max), rep8(row_sum), torch.empty(0, dtype=query.dtype), 0, 0, 0
