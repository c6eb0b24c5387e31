"""A paged KV cache: fixed-size blocks of token entries, a block table per sequence.

The cache of one layer is one tensor ``[blocks, block_size, *entry]`` (an entry is K and V for
GQA, ``[2, kv_heads, head_dim]``; the latent and the rope key for MLA, ``[kv_lora + rope]``).
Sequence ``b``'s token at position ``p`` lives in block ``block_table[b, p // block_size]`` at
offset ``p % block_size``. Blocks are handed out in a seeded random order, so no sequence's
blocks are contiguous, as in a serving engine after some churn.

Every sequence holds ``context - 1`` random cached tokens; the decode step writes its new token
at position ``context - 1`` and attends to all ``context`` (the same slot each call, so every
timed call does the same work). ``gather`` makes the contiguous view the attention reads by
indexing the block table (part of the timed step: torch has no paged attention kernel of its
own); ``walk`` rebuilds one sequence block by block, the reference the check compares with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class PagedCache:
    """One layer's paged cache for ``batch`` sequences of ``context`` tokens."""

    data: Any  # [blocks, block_size, *entry]
    block_table: Any  # int64 [batch, blocks_per_sequence]
    block_size: int
    context: int

    @property
    def batch(self) -> int:
        return int(self.block_table.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.data.numel() * self.data.element_size() + self.block_table.numel() * 8)

    def write(self, entry: Any) -> None:
        """Store each sequence's new token ``entry[b]`` at position ``context - 1``."""
        position = self.context - 1
        blocks = self.block_table[:, position // self.block_size]
        self.data[blocks, position % self.block_size] = entry.to(self.data.dtype)

    def gather(self) -> Any:
        """``[batch, context, *entry]``: every sequence's tokens in order, through the block table."""
        blocks = self.data[self.block_table]  # [batch, blocks_per_sequence, block_size, *entry]
        flat = blocks.reshape(self.batch, -1, *self.data.shape[2:])
        return flat[:, : self.context]

    def walk(self, sequence: int) -> Any:
        """``[context, *entry]`` of one sequence, block by block (the reference for ``gather``)."""
        table = self.block_table[sequence].tolist()
        parts = [self.data[block] for block in table]
        import torch

        return torch.cat(parts, dim=0)[: self.context]


def blocks_per_sequence(context: int, block_size: int) -> int:
    """``ceil(context / block_size)``: 4096 tokens in blocks of 16 -> 256."""
    return math.ceil(context / block_size)


def paged_cache(*, batch: int, context: int, block_size: int, entry: tuple[int, ...], dtype: Any,
                device: Any, generator: Any) -> PagedCache:
    """A cache of random entries (never zero) for ``batch`` sequences, blocks in seeded random order."""
    import torch

    if context < 1 or block_size < 1 or batch < 1:
        raise ValueError(f"batch {batch}, context {context} and block size {block_size} must be positive")
    per_sequence = blocks_per_sequence(context, block_size)
    total = batch * per_sequence
    data = device.random_tensor((total, block_size, *entry), dtype, generator=generator)
    order = torch.randperm(total, generator=generator, device=generator.device)
    table = order.reshape(batch, per_sequence).to(device=device.torch_device, dtype=torch.int64)
    return PagedCache(data=data, block_table=table, block_size=block_size, context=context)


def attend(query: Any, keys: Any, values: Any, *, scale: float) -> Any:
    """``softmax(q·kᵀ·scale)·v`` per sequence and query head, the softmax in float32.

    ``query`` ``[batch, groups, per_group, dim]``, ``keys`` ``[batch, groups, tokens, dim]``,
    ``values`` ``[batch, groups, tokens, dim_v]``: GQA has one group per KV head, MLA one group
    for all heads (every head reads the same latent). Returns ``[batch, groups, per_group, dim_v]``.
    """
    import torch

    scores = torch.matmul(query, keys.transpose(-1, -2)).float() * scale
    weights = torch.softmax(scores, dim=-1).to(values.dtype)
    return torch.matmul(weights, values)


def reference_attention(query: Any, keys: Any, values: Any, *, scale: float) -> Any:
    """The same attention for one sequence in float64, one head at a time: ``query``
    ``[heads, dim]``, ``keys`` ``[tokens, heads_kv, dim]``, ``values`` ``[tokens, heads_kv, dim_v]``,
    head ``h`` reading KV head ``h // (heads / heads_kv)``. Returns ``[heads, dim_v]``."""
    import torch

    heads, kv_heads = query.shape[0], keys.shape[1]
    rows = []
    for head in range(heads):
        kv = head // (heads // kv_heads)
        k, v = keys[:, kv].double(), values[:, kv].double()
        weights = torch.softmax((k @ query[head].double()) * scale, dim=0)
        rows.append(weights @ v)
    return torch.stack(rows)


def relative_error(got: Any, want: Any) -> float:
    """``‖got - want‖₂ / ‖want‖₂`` over all elements (float64)."""
    got, want = got.double(), want.double()
    return float((got - want).norm() / want.norm().clamp_min(1e-300))
