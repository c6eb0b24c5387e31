"""Bytes of an expert-parallel MoE exchange (dispatch and combine), in four labelled conventions.

A rank holds ``T`` tokens; token ``t`` picks ``k`` experts ``e[t, 0..k-1]``; expert ``e`` lives
on rank ``e // experts_per_rank``. A row is one token's hidden vector as it travels: ``2·h``
bytes in bf16, ``h + 4·ceil(h/128)`` in fp8 e4m3 (one byte per value and one fp32 scale per 128
values, DeepEP's count without its per-token metadata). Per rank:

- DeepEP's **algorithm** bytes: every top-k copy, the rank's own included,
  ``T·k·row`` (``copies``);
- **logical** bytes, deduplicated per destination rank (a token goes once to each rank that
  holds any of its experts, this rank included): ``Σ_t |{rank(e[t, j])}|·row`` (``rank_copies``);
  this is what an ``all_to_all_single`` moves, parity's own exchange;
- **cross-rank** bytes: the logical rows whose destination is another rank (``remote_copies``);
  on one host they are all scale-up;
- the nccl-tests-style **bus** figure: ``busbw = (logical/t)·(n-1)/n``, all_to_all's factor.

Combine sends the same rows back in bf16, so its counts are dispatch's with a bf16 row.
Across ranks, parity reports the mean over ranks of each rank's bytes, over the max over ranks
of the time (DeepEP's Ascend port divides mean bytes by mean time; its CUDA tests average
per-rank rates: both are labelled where imported, never mixed with these).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from parity.metrics.collectives import bus_factor

SCALE_BLOCK = 128  # fp8 values per fp32 scale


def bf16_row_bytes(hidden: int) -> int:
    """Bytes of one bf16 token row: ``2·h``. Example: h = 7168 gives 14336."""
    return 2 * hidden


def fp8_row_bytes(hidden: int) -> int:
    """Bytes of one fp8 e4m3 row with its scales: ``h + 4·ceil(h/128)``. Example: h = 7168
    gives 7168 + 4·56 = 7392."""
    return hidden + 4 * math.ceil(hidden / SCALE_BLOCK)


@dataclass(frozen=True, kw_only=True)
class ExchangeCounts:
    """Rows one rank sends in a dispatch: ``copies`` (every top-k copy), ``rank_copies`` (one
    per destination rank, own included), ``remote_copies`` (to other ranks only)."""

    copies: int
    rank_copies: int
    remote_copies: int


def exchange_counts(experts: Sequence[Sequence[int]], *, source_rank: int, experts_per_rank: int) -> ExchangeCounts:
    """The rows rank ``source_rank`` sends for its tokens' top-k ``experts`` (one sequence of
    expert ids per token; a negative id is an unused slot, not counted).

    Example: experts per rank 2, rank 0 with tokens picking (0, 1), (1, 2), (2, 3): copies 6;
    destination ranks {0}, {0, 1}, {1}: rank_copies 4, remote_copies 2."""
    copies = rank_copies = remote = 0
    for chosen in experts:
        valid = [int(e) for e in chosen if int(e) >= 0]
        ranks = {e // experts_per_rank for e in valid}
        copies += len(valid)
        rank_copies += len(ranks)
        remote += len(ranks - {source_rank})
    return ExchangeCounts(copies=copies, rank_copies=rank_copies, remote_copies=remote)


def algorithm_bytes(counts: ExchangeCounts, *, row_bytes: int) -> int:
    """DeepEP's algorithm bytes: ``copies · row``."""
    return counts.copies * row_bytes


def logical_bytes(counts: ExchangeCounts, *, row_bytes: int) -> int:
    """Rank-deduplicated logical bytes: ``rank_copies · row``."""
    return counts.rank_copies * row_bytes


def cross_rank_bytes(counts: ExchangeCounts, *, row_bytes: int) -> int:
    """Bytes that leave the rank: ``remote_copies · row``."""
    return counts.remote_copies * row_bytes


def moe_busbw(logical: float, seconds: float, *, world_size: int) -> float | None:
    """The nccl-tests-style bus figure of an exchange: ``(logical / t) · (n-1)/n`` in B/s; None
    on one rank (nothing crosses a link) or when ``t`` is not positive.
    Example: 1e6 B in 1 ms on 4 ranks is 7.5e8 B/s."""
    if seconds is None or seconds <= 0 or world_size == 1:
        return None
    return logical / seconds * bus_factor("all_to_all", world_size)


def imbalance_ratio(tokens_per_expert: Sequence[int]) -> float | None:
    """Routing imbalance: ``max / mean`` tokens per expert (1 for perfectly even routing).
    Example: (4, 2, 2, 0) gives 4 / 2 = 2.0; None when no token is routed."""
    total = sum(tokens_per_expert)
    if not tokens_per_expert or total == 0:
        return None
    return max(tokens_per_expert) / (total / len(tokens_per_expert))
