"""MLA decode attention over a paged, compressed KV cache, in FlashMLA's layout.

- ``q`` ``[B, s_q, h_q, 576]``: ``s_q`` new tokens per sequence (1 for plain decode, 2 with
  one speculative token), ``h_q`` query heads; head dim 576 = 512 (the compressed latent, which
  is also the value) + 64 (the decoupled rotary part);
- ``kv_cache`` ``[blocks, page, 1, 576]``: one KV head, pages of ``page`` tokens (64 in
  FlashMLA), a sequence's pages found through ``block_table`` ``[B, max_blocks]`` (int32);
- ``seqlens`` ``[B]`` (int32): cached tokens per sequence, the new ones included;
- output ``[B, s_q, h_q, 512]`` and the fp32 log-sum-exp ``[B, h_q, s_q]``; scores are scaled
  by ``softmax_scale`` (``1/sqrt(576)`` by default) and causally masked: new token ``i`` of
  sequence ``b`` sees keys ``0 .. seqlens[b] - s_q + i``.

The reference gathers each sequence's pages (``kv_cache[block_table]``), so it runs on any
device; with ``compute=float64`` on the CPU it is the check's ground truth.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from parity.metrics.kernels import ceil_div

HEAD_DIM = 576
VALUE_DIM = 512
PAGE = 64
SPREAD = 0.3


def draw_seqlens(batch: int, mean: int, *, query_tokens: int, seed: int, spread: float = SPREAD) -> list[int]:
    """``batch`` cached lengths ``round(mean·u)``, ``u ~ U[1 - spread, 1 + spread]`` (seeded),
    each at least ``query_tokens``."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    u = 1.0 - spread + 2.0 * spread * torch.rand(batch, generator=generator, dtype=torch.float64)
    return [max(query_tokens, round(mean * float(x))) for x in u]


def block_table(seqlens: Sequence[int], *, page: int, seed: int) -> tuple[list[list[int]], int]:
    """A block table that scatters every sequence's pages over the cache in a seeded random
    order (so the reference really follows the table), and the number of blocks. Unused
    entries of a row point at block 0, as FlashMLA's tests leave them."""
    import torch

    need = [ceil_div(int(s), page) for s in seqlens]
    total, widest = sum(need), max(need)
    order = torch.randperm(total, generator=torch.Generator().manual_seed(seed)).tolist()
    rows, at = [], 0
    for count in need:
        rows.append(order[at:at + count] + [0] * (widest - count))
        at += count
    return rows, total


def mla_decode(q: Any, kv_cache: Any, table: Any, seqlens: Any, *, value_dim: int = VALUE_DIM,
               softmax_scale: float | None = None, causal: bool = True, compute: Any = None) -> tuple[Any, Any]:
    """``(out [B, s_q, h_q, value_dim], lse [B, h_q, s_q])`` of attention of ``q`` over each
    sequence's cached tokens (see the module docstring), computed in ``compute`` (fp32 when
    None). The value is the first ``value_dim`` channels of the same cached vectors."""
    import torch

    compute = compute or torch.float32
    batch, s_q, _, dim = q.shape
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(dim)
    keys = kv_cache[table.long()][:, :, :, 0].reshape(batch, -1, dim).to(compute)  # [B, T, d]
    scores = torch.einsum("bshd,btd->bsht", q.to(compute), keys) * scale
    lengths = seqlens.to(q.device).long()
    position = torch.arange(keys.shape[1], device=q.device)
    last = lengths[:, None] - s_q + torch.arange(s_q, device=q.device)[None, :]  # [B, s_q]
    if not causal:
        last = (lengths[:, None] - 1).expand(batch, s_q)
    hidden = position[None, None, :] > last[:, :, None]  # [B, s_q, T]
    scores = scores.masked_fill(hidden[:, :, None, :], float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)  # [B, s_q, h]
    out = torch.einsum("bsht,btd->bshd", torch.exp(scores - lse[..., None]), keys[..., :value_dim])
    return out, lse.transpose(1, 2)


def make_inputs(seqlens: Sequence[int], *, query_tokens: int, heads: int, page: int, device: Any,
                seed: int, dtype: Any, head_dim: int = HEAD_DIM) -> dict[str, Any]:
    """q, the paged cache, the block table and the lengths on ``device`` (random normal)."""
    import torch

    rows, blocks = block_table(seqlens, page=page, seed=seed)
    generator = torch.Generator().manual_seed(seed + 1)
    q = torch.randn(len(seqlens), query_tokens, heads, head_dim, generator=generator).to(dtype)
    cache = torch.randn(blocks, page, 1, head_dim, generator=generator).to(dtype)
    table = torch.tensor(rows, dtype=torch.int32)
    lengths = torch.tensor(list(seqlens), dtype=torch.int32)
    return {name: t.to(device) for name, t in (("q", q), ("kv_cache", cache), ("block_table", table),
                                               ("seqlens", lengths))}


def torch_call(inputs: dict[str, Any]) -> tuple[Any, Any]:
    """The timed torch reference: fp32 math, the output in the query's dtype."""
    out, lse = mla_decode(inputs["q"], inputs["kv_cache"], inputs["block_table"], inputs["seqlens"])
    return out.to(inputs["q"].dtype), lse


def float64_truth(inputs: dict[str, Any]) -> tuple[Any, Any]:
    """The ground truth on the CPU in float64."""
    import torch

    cpu = {name: t.cpu() for name, t in inputs.items()}
    return mla_decode(cpu["q"], cpu["kv_cache"], cpu["block_table"], cpu["seqlens"], compute=torch.float64)
