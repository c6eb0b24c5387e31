"""The typed options of the ``overlap`` suite: the exchange's shape and the kernels' sizes."""

from __future__ import annotations

from dataclasses import dataclass

from parity.harness.options import option


@dataclass(frozen=True, kw_only=True)
class OverlapOptions:
    """The options of the ``overlap`` suite (the exchange's shape, the kernels' sizes)."""

    kernels: tuple[str, ...] = option(("gemm", "copy"), help="compute kernels to overlap with",
                                      choices=("gemm", "copy"))
    tokens: int = option(128, help="tokens per rank of the exchange", minimum=1)
    hidden: int = option(2048, help="hidden size of the exchange", minimum=1)
    top_k: int = option(8, help="experts per token", minimum=1)
    experts: int = option(64, help="experts in all, a multiple of the rank count", minimum=1)
    dispatch_dtype: str = option("bf16", help="dispatch row format", choices=("bf16", "fp8"))
    gemm_n: int = option(512, help="GEMM size: n x n times n x n", minimum=1)
    copy_bytes: int = option(32 * 2**20, help="bytes of the copy's source", minimum=4)
    iterations: int = option(10, help="timed iterations of each of the three runs", minimum=1,
                             aliases=("--iters",))
    seed: int = option(0, help="seed of routing and token values")
