"""A TileLang GEMM, tuned by parity over a few tile configurations, where TileLang is installed.

The kernel is TileLang's blocked GEMM (shared-memory tiles of A and B, a pipelined K loop,
``T.gemm`` into an fp32 fragment). Tuning compiles each configuration of ``CONFIGS`` for the
shape, times it as declared Work through the harness (``parity.harness.measure.time_work``),
and keeps the fastest; the tuning time recorded is
all of that. Only GPU and NPU targets are tried; a CPU is reported as not supported here.
"""

from __future__ import annotations

from typing import Any

from parity.families.gemm.dtypes import GemmDtype
from parity.families.gemm.tuned import TunedBackend

# (block_M, block_N, block_K, num_stages, threads)
CONFIGS = ((128, 128, 32, 3, 128), (128, 256, 32, 3, 256), (64, 64, 64, 2, 128), (256, 128, 32, 3, 256))
# The timing protocol's own default: tuning is bounded by its budget, not by a sample count.
TUNING_MAX_SAMPLES = 10_000
TILELANG_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def _build(m: int, n: int, k: int, config: tuple[int, int, int, int, int], dtype: str) -> Any:
    import tilelang
    import tilelang.language as T

    block_m, block_n, block_k, stages, threads = config

    @tilelang.jit(out_idx=[2])
    def gemm() -> Any:
        @T.prim_func
        def main(A: T.Tensor((m, k), dtype), B: T.Tensor((k, n), dtype), C: T.Tensor((m, n), dtype)) -> None:  # noqa: N803
            with T.Kernel(T.ceildiv(n, block_n), T.ceildiv(m, block_m), threads=threads) as (bx, by):
                a_tile = T.alloc_shared((block_m, block_k), dtype)
                b_tile = T.alloc_shared((block_k, block_n), dtype)
                acc = T.alloc_fragment((block_m, block_n), "float")
                T.clear(acc)
                for ko in T.Pipelined(T.ceildiv(k, block_k), num_stages=stages):
                    T.copy(A[by * block_m, ko * block_k], a_tile)
                    T.copy(B[ko * block_k, bx * block_n], b_tile)
                    T.gemm(a_tile, b_tile, acc)
                T.copy(acc, C[by * block_m, bx * block_n])

        return main

    return gemm()


class TileLangMatmul(TunedBackend):
    """``C = A @ B`` by the fastest of ``CONFIGS`` compiled by TileLang for this shape."""

    name = "tilelang"

    def unavailable_reason(self, *, device: Any, dtype: GemmDtype) -> str | None:
        import importlib.util

        if importlib.util.find_spec("tilelang") is None:
            return "tilelang is not installed (see parity doctor)"
        if device.type not in ("cuda", "npu"):
            return f"the TileLang GEMM is built for GPU or NPU targets; selected {device.name}"
        if dtype.name not in TILELANG_DTYPES:
            return f"the TileLang GEMM takes bf16 or fp16 operands, not {dtype.name}"
        return None

    def prepare(self, a: Any, b: Any, *, dtype: GemmDtype) -> Any:
        m, k = a.shape
        n = b.shape[1]
        kernel = self.tuned((m, n, k, dtype.name), (m, n, k), lambda: self._tune(a, b, dtype))
        return kernel, a, b

    @staticmethod
    def _tune(a: Any, b: Any, dtype: GemmDtype) -> Any:
        from parity.device import get_device
        from parity.harness.measure import time_work
        from parity.harness.work import Work

        m, k = a.shape
        n = b.shape[1]
        device = get_device(str(a.device))
        best, best_s, failures = None, float("inf"), []
        for config in CONFIGS:
            try:
                kernel = _build(m, n, k, config, TILELANG_DTYPES[dtype.name])
                work = Work(call=lambda: kernel(a, b), check=lambda: {"passed": True, "method": "not checked: tuning"},
                            warmup_s=0.01, budget_s=0.05, min_samples=5, max_samples=TUNING_MAX_SAMPLES,
                            flush_cache=False)
                median_s = time_work(work, device=device).median_s
            except Exception as exc:  # noqa: BLE001 - a configuration that does not build is skipped
                failures.append(f"{config}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
                continue
            if median_s < best_s:
                best, best_s = kernel, median_s
        if best is None:
            raise RuntimeError("no TileLang configuration built for this shape: " + "; ".join(failures)[:250])
        return best

    def run(self, operands: Any) -> Any:
        kernel, a, b = operands
        return kernel(a, b)
