"""Block-scaled fp8 GEMM: ``D[M,N] = (A·s_A) @ (B·s_B)^T`` in DeepGEMM's layout.

A is ``[M, K]`` in e4m3 (``torch.float8_e4m3fn``) with one fp32 scale per 1x128 group along K
(``s_A``: ``[M, ⌈K/128⌉]``); B is ``[N, K]`` (the "NT" layout: both operands K-major) with one
scale per 128x128 block (``s_B``: ``[⌈N/128⌉, ⌈K/128⌉]``); D is bf16. Quantization maps each
group's largest magnitude to e4m3's largest finite value, 448: ``s = max|x| / 448`` (at least
``1e-4 / 448`` so an all-zero group divides by something), ``q = e4m3(x / s)``.

The reference dequantizes (``q·s``, exact in fp32 since e4m3 has a 3-bit mantissa) and
multiplies; computed in float64 it is the check's ground truth.
"""

from __future__ import annotations

from typing import Any

from parity.metrics.kernels import FP8_GROUP, ceil_div

E4M3_MAX = 448.0
MIN_AMAX = 1e-4


def quantize_groups(x: Any, *, rows: int = 1, cols: int = FP8_GROUP) -> tuple[Any, Any]:
    """``(q, scales)``: ``x`` ``[R, C]`` quantized to e4m3 per ``rows x cols`` tile (1x128 for
    A, 128x128 for B); ``scales`` is ``[⌈R/rows⌉, ⌈C/cols⌉]`` fp32, edge tiles padded."""
    import torch

    r, c = x.shape
    pr, pc = ceil_div(r, rows) * rows, ceil_div(c, cols) * cols
    padded = torch.zeros((pr, pc), dtype=torch.float32, device=x.device)
    padded[:r, :c] = x.float()
    tiles = padded.view(pr // rows, rows, pc // cols, cols)
    amax = tiles.abs().amax(dim=(1, 3)).clamp(min=MIN_AMAX)
    scales = amax / E4M3_MAX
    q = (tiles / scales[:, None, :, None]).view(pr, pc)[:r, :c].to(torch.float8_e4m3fn)
    return q.contiguous(), scales.contiguous()


def dequantize(q: Any, scales: Any, *, rows: int, cols: int = FP8_GROUP, dtype: Any = None) -> Any:
    """``q·s`` with each scale spread over its tile, in ``dtype`` (default fp32)."""
    import torch

    dtype = dtype or torch.float32
    r, c = q.shape
    spread = scales.to(dtype).repeat_interleave(rows, dim=0)[:r].repeat_interleave(cols, dim=1)[:, :c]
    return q.to(dtype) * spread


def block_scaled_gemm(a: Any, sa: Any, b: Any, sb: Any, *, compute: Any = None) -> Any:
    """The reference: ``dequantize(A) @ dequantize(B)^T`` in ``compute`` (fp32 default; the
    check uses float64), A scaled per 1x128 group and B per 128x128 block."""
    return dequantize(a, sa, rows=1, dtype=compute) @ dequantize(b, sb, rows=FP8_GROUP, dtype=compute).T


def make_operands(m: int, n: int, k: int, *, device: Any, seed: int) -> dict[str, Any]:
    """Random normal A ``[M,K]`` and B ``[N,K]`` (never zeros), quantized, on ``device``."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    a, sa = quantize_groups(torch.randn(m, k, generator=generator), rows=1)
    b, sb = quantize_groups(torch.randn(n, k, generator=generator), rows=FP8_GROUP)
    return {name: t.to(device) for name, t in (("a", a), ("sa", sa), ("b", b), ("sb", sb))}


def torch_call(operands: dict[str, Any]) -> Any:
    """The timed torch reference: fp32 dequantize-and-multiply, D written in bf16."""
    import torch

    return block_scaled_gemm(operands["a"], operands["sa"], operands["b"], operands["sb"]).to(torch.bfloat16)


def float64_truth(operands: dict[str, Any]) -> Any:
    """The ground truth on the CPU in float64 (dequantized operands are exact there)."""
    import torch

    cpu = {name: t.cpu() for name, t in operands.items()}
    return block_scaled_gemm(cpu["a"], cpu["sa"], cpu["b"], cpu["sb"], compute=torch.float64)
