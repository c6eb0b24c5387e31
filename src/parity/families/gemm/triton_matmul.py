"""A Triton matmul tuned by ``triton.autotune`` over tile configurations, for CUDA GPUs.

The kernel is the classic blocked GEMM (a ``BLOCK_M x BLOCK_N`` tile of C per program, K
walked in ``BLOCK_K`` steps, fp32 accumulation, grouped launch order for L2 reuse);
``triton.autotune`` times every configuration on the first call of each (M, N, K) and keeps
the fastest, which is the tuning time recorded. It runs only where Triton compiles for the
device (CUDA); elsewhere the backend says so, since Triton's CPU interpreter is far too slow to
time.
"""

from __future__ import annotations

from typing import Any

from parity.families.gemm.dtypes import GemmDtype
from parity.families.gemm.tuned import TunedBackend

# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)
CONFIGS = ((128, 256, 64, 8, 8, 3), (256, 128, 64, 8, 8, 3), (128, 128, 64, 8, 4, 4), (128, 64, 64, 8, 4, 4),
           (64, 128, 64, 8, 4, 4), (64, 64, 64, 8, 4, 4), (128, 128, 32, 8, 4, 4), (32, 64, 32, 8, 2, 5))
_KERNEL: list[Any] = []


def _kernel() -> Any:
    """The autotuned kernel, built on first use so importing parity never imports triton."""
    if _KERNEL:
        return _KERNEL[0]
    import triton
    import triton.language as tl

    configs = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g}, num_warps=w, num_stages=s)
               for bm, bn, bk, g, w, s in CONFIGS]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,  # noqa: N803
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):  # noqa: N803
        pid = tl.program_id(0)
        tiles_m = tl.cdiv(M, BLOCK_M)
        tiles_n = tl.cdiv(N, BLOCK_N)
        per_group = GROUP_M * tiles_n
        first_m = (pid // per_group) * GROUP_M
        group_size = min(tiles_m - first_m, GROUP_M)
        pid_m = first_m + (pid % per_group) % group_size
        pid_n = (pid % per_group) // group_size
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        steps = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            ks = k0 + steps
            a = tl.load(a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak,
                        mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
            b = tl.load(b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn,
                        mask=(ks[:, None] < K) & (cols[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
                 mask=(rows[:, None] < M) & (cols[None, :] < N))

    _KERNEL.append(matmul)
    return matmul


class TritonMatmul(TunedBackend):
    """``C = A @ B`` by the autotuned Triton kernel above."""

    name = "triton"

    def unavailable_reason(self, *, device: Any, dtype: GemmDtype) -> str | None:
        if device.type != "cuda":
            return f"the Triton matmul is compiled for CUDA GPUs; selected {device.name}"
        if dtype.name not in ("bf16", "fp16", "fp32", "tf32"):
            return f"the Triton matmul takes bf16, fp16 or fp32 operands, not {dtype.name}"
        try:
            import triton  # noqa: F401
        except ImportError as exc:
            return f"triton cannot be imported: {exc}"
        return None

    def prepare(self, a: Any, b: Any, *, dtype: GemmDtype) -> Any:
        import torch

        m, k = a.shape
        n = b.shape[1]
        out = torch.empty((m, n), dtype=a.dtype, device=a.device)
        operands = (a, b, out)
        self.tuned((m, n, k, str(a.dtype)), (m, n, k), lambda: self.run(operands))
        return operands

    def run(self, operands: Any) -> Any:
        import triton

        a, b, out = operands
        m, k = a.shape
        n = b.shape[1]

        def grid(meta: dict[str, int]) -> tuple[int]:
            return (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)

        _kernel()[grid](a, b, out, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        out.stride(0), out.stride(1))
        return out
