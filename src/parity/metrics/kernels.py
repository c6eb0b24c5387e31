"""Work and minimum traffic of the kernel-library operations (``parity kernels``).

Each function counts one call, in FLOP and bytes (SI), with the convention in its docstring; no
torch here. Bytes are minimum traffic: every input read once and every output written once, as
a perfectly cached kernel would move them (the GEMM convention of ``parity.metrics.roofline``).

Sources of the layouts: DeepGEMM (block-scaled fp8 GEMM with A scaled per 1x128 group and B per
128x128 block; m-grouped GEMMs in the contiguous and masked layouts of MoE experts) and FlashMLA
(decode attention over a paged KV cache with head dim 576, the first 512 of which are the value).
"""

from __future__ import annotations

from collections.abc import Sequence

FP8_GROUP = 128  # A's scale group along K, B's scale block along N and K
SCALE_BYTES = 4  # fp32 scales
INDEX_BYTES = 4  # int32 indices, lengths and block-table entries


def ceil_div(a: int, b: int) -> int:
    """``⌈a/b⌉`` for non-negative ``a`` and positive ``b``."""
    return -(-a // b)


def block_scaled_gemm_flops(m: int, n: int, k: int) -> int:
    """``D[M,N] = (A·s_A) @ (B·s_B)^T``: ``F = 2·M·N·K`` FLOP; the scaling multiplies (one per
    output per K group) are not counted, as DeepGEMM's own figures do not count them.
    Example: 128x256x512 -> 33,554,432 FLOP."""
    return 2 * m * n * k


def block_scaled_gemm_bytes(m: int, n: int, k: int, *, in_bytes: float = 1.0, out_bytes: float = 2.0) -> float:
    """Minimum traffic: fp8 A ``[M,K]`` and B ``[N,K]`` (1 B per value), A's fp32 scales
    ``[M,⌈K/128⌉]``, B's ``[⌈N/128⌉,⌈K/128⌉]``, and D ``[M,N]`` written in bf16:
    ``Q = (M·K + N·K)·in + 4·(M·⌈K/128⌉ + ⌈N/128⌉·⌈K/128⌉) + M·N·out``.
    Example: 128x256x512 -> 65,536 + 131,072 + 4·(512 + 8) + 65,536 = 264,224 B."""
    groups = ceil_div(k, FP8_GROUP)
    scales = m * groups + ceil_div(n, FP8_GROUP) * groups
    return (m * k + n * k) * in_bytes + SCALE_BYTES * scales + m * n * out_bytes


def grouped_gemm_flops(group_m: Sequence[int], n: int, k: int) -> int:
    """m-grouped GEMM (group ``g``: ``D_g = A_g @ B_g^T``, ``A_g`` of ``m_g`` valid rows):
    ``F = 2·Σm_g·N·K`` FLOP. Padding rows (alignment in the contiguous layout, rows past
    ``masked_m`` in the masked one) are not work, whatever a kernel computes there.
    Example: m = (3, 5), N = 4, K = 2 -> 128 FLOP."""
    return 2 * sum(int(m) for m in group_m) * n * k


def grouped_gemm_bytes(group_m: Sequence[int], n: int, k: int, *, layout: str, rows: int,
                       elem_bytes: float = 2.0) -> float:
    """Minimum traffic of an m-grouped GEMM: the valid rows of A (``Σm_g·K``), every group's
    B (``G·N·K``), the valid rows of D (``Σm_g·N``), each ``elem_bytes``, plus the layout's
    index: ``contiguous`` reads one int32 group index per row of A (``rows``, padding
    included), ``masked`` one int32 count per group (``G``).
    Example: m = (3, 5), N = 4, K = 2, bf16, contiguous with 8 rows -> (16 + 16 + 32)·2 + 32 = 160 B."""
    valid = sum(int(m) for m in group_m)
    groups = len(group_m)
    if layout == "contiguous":
        index = INDEX_BYTES * rows
    elif layout == "masked":
        index = INDEX_BYTES * groups
    else:
        raise ValueError(f"unknown grouped layout {layout!r}; use contiguous or masked")
    return (valid * k + groups * n * k + valid * n) * elem_bytes + index


def attended_keys(seqlen: int, query_tokens: int, *, causal: bool) -> list[int]:
    """Keys each of the ``query_tokens`` newest tokens of a sequence of ``seqlen`` attends to.
    Causal: token ``i`` (0-based among them) sits at position ``seqlen - query_tokens + i`` and
    sees ``seqlen - query_tokens + i + 1`` keys; otherwise every token sees ``seqlen``.
    Example: seqlen 10, 2 tokens, causal -> [9, 10]."""
    if query_tokens > seqlen:
        raise ValueError(f"{query_tokens} query tokens do not fit a sequence of {seqlen}")
    if not causal:
        return [seqlen] * query_tokens
    return [seqlen - query_tokens + i + 1 for i in range(query_tokens)]


def mla_decode_flops(seqlens: Sequence[int], *, query_tokens: int, heads: int, head_dim: int = 576,
                     value_dim: int = 512, causal: bool = True) -> int:
    """MLA decode: per sequence ``b``, query token ``i`` and head, ``QK^T`` costs
    ``2·head_dim·n_bi`` and ``PV`` ``2·value_dim·n_bi`` FLOP over its ``n_bi`` attended keys
    (``attended_keys``): ``F = Σ_b Σ_i heads·2·(head_dim + value_dim)·n_bi``. With the causal
    mask counted honestly ``n_bi`` shrinks for the earlier tokens; ``causal=False`` gives the
    figure that counts every key for every token (FlashMLA's benchmark convention).
    Example: seqlens (10,), 2 tokens, 1 head, dims 3 and 2, causal -> 2·5·(9 + 10) = 190 FLOP."""
    keys = sum(sum(attended_keys(int(s), query_tokens, causal=causal)) for s in seqlens)
    return 2 * heads * (head_dim + value_dim) * keys


def mla_decode_bytes(seqlens: Sequence[int], *, query_tokens: int, heads: int, head_dim: int = 576,
                     value_dim: int = 512, kv_bytes: float = 2.0, q_bytes: float = 2.0,
                     out_bytes: float = 2.0, table_entries: int = 0) -> float:
    """Minimum traffic of MLA decode: each cached token's one compressed KV vector read once
    (``Σ L_b · head_dim · kv_bytes``: one KV head serves every query head, and the value is
    the first ``value_dim`` of those same bytes), Q read (``B·s_q·heads·head_dim``), O written
    (``B·s_q·heads·value_dim``), the fp32 log-sum-exp written (``4·B·s_q·heads``), and the int32
    block table (``table_entries``) and sequence lengths (``B``) read.
    Example: seqlens (10,), 2 tokens, 1 head, dims 3 and 2, all 2 B, 5 table entries ->
    60 + 12 + 8 + 8 + 20 + 4 = 112 B."""
    batch = len(seqlens)
    tokens = batch * query_tokens * heads
    kv = sum(int(s) for s in seqlens) * head_dim * kv_bytes
    return (kv + tokens * head_dim * q_bytes + tokens * value_dim * out_bytes + tokens * SCALE_BYTES
            + INDEX_BYTES * (table_entries + batch))
