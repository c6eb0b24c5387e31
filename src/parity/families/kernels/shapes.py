"""The shapes ``parity kernels`` measures: CPU-sized with ``--quick``, model-sized otherwise.

The full shapes are DeepSeek-V3's: its GEMMs' (N, K) pairs (2112x7168, 24576x1536, 7168x2048,
4096x7168), 256 routed experts' GEMMs per rank at 8 or 16 experts, MLA with 128 query heads
(16 per rank at 8-way tensor parallelism) over 4K-token contexts, one and two new tokens. The
quick shapes keep the same layouts (1x128 and 128x128 scale groups, 64-token pages, head dim
576/512) at sizes a 2-core CPU runs in seconds.
"""

from __future__ import annotations

from typing import Any

QUICK: dict[str, list[dict[str, Any]]] = {
    "fp8_gemm": [{"m": 128, "n": 256, "k": 512}, {"m": 1, "n": 512, "k": 1024}],
    "grouped_contiguous": [{"groups": 4, "expected_m": 96, "n": 256, "k": 256, "align": 128}],
    "grouped_masked": [{"groups": 4, "expected_m": 48, "max_m": 96, "n": 256, "k": 256}],
    "mla_decode": [{"batch": 4, "mean_seqlen": 256, "query_tokens": 1, "heads": 16, "page": 64},
                   {"batch": 4, "mean_seqlen": 256, "query_tokens": 2, "heads": 16, "page": 64}],
}
FULL: dict[str, list[dict[str, Any]]] = {
    "fp8_gemm": [{"m": m, "n": n, "k": k} for m in (64, 4096)
                 for n, k in ((2112, 7168), (24576, 1536), (7168, 2048), (4096, 7168))],
    "grouped_contiguous": [{"groups": 4, "expected_m": 8192, "n": 4096, "k": 7168, "align": 128},
                           {"groups": 8, "expected_m": 4096, "n": 7168, "k": 2048, "align": 128}],
    "grouped_masked": [{"groups": 16, "expected_m": 256, "max_m": 1024, "n": 4096, "k": 7168},
                       {"groups": 16, "expected_m": 256, "max_m": 1024, "n": 7168, "k": 2048}],
    "mla_decode": [{"batch": b, "mean_seqlen": 4096, "query_tokens": s, "heads": h, "page": 64}
                   for b in (64, 128) for s in (1, 2) for h in (16, 128)],
}


def shape_tag(op: str, shape: dict[str, Any]) -> str:
    """A stable, readable key part: ``128x256x512``, ``g4-m96-n256-k256``, ``b4-L256-s1-h16``."""
    if op == "fp8_gemm":
        return f"{shape['m']}x{shape['n']}x{shape['k']}"
    if op.startswith("grouped_"):
        extra = f"-max{shape['max_m']}" if "max_m" in shape else ""
        return f"g{shape['groups']}-m{shape['expected_m']}{extra}-n{shape['n']}-k{shape['k']}"
    return f"b{shape['batch']}-L{shape['mean_seqlen']}-s{shape['query_tokens']}-h{shape['heads']}"
