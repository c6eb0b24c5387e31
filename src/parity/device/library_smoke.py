"""Smoke tests of the kernel libraries (TileLang, DeepGEMM, FlashMLA, vLLM's platform), one
small real kernel each against a torch reference, run by ``parity.device.smoke`` in a child.

Each function takes the device name and returns ``(outcome, what)``: ``passed``/``failed`` with
what was compared, or ``skipped`` with the reason it could not run here (no fitting device, an
entry point this version lacks). Any exception is the smoke test's failure, quoted in one line
by the caller.
"""

from __future__ import annotations

import math
from typing import Any

# Relative Frobenius error allowed for bf16 kernels against an fp32 reference (DeepGEMM's and
# FlashMLA's own tests compare bf16 outputs at about this level).
BF16_TOLERANCE = 1e-2


def relative_error(result: Any, reference: Any) -> float:
    """``||result - reference||_F / ||reference||_F`` computed in float64."""
    diff = (result.double() - reference.double()).norm()
    return float(diff / reference.double().norm())


def _verdict(error: float, what: str) -> tuple[str, str]:
    return ("passed" if error < BF16_TOLERANCE else "failed"), f"{what}, relative error {error:.1e}"


def deep_gemm_smoke(device: str) -> tuple[str, str]:
    """``deep_gemm.bf16_gemm_nt`` on 256^3 against an fp32 ``A @ B^T``."""
    import deep_gemm
    import torch

    if not device.startswith(("cuda", "npu")):
        return "skipped", f"deep_gemm runs on NVIDIA Hopper/Blackwell GPUs or Ascend NPUs; selected {device}"
    if not hasattr(deep_gemm, "bf16_gemm_nt"):
        return "skipped", "this deep_gemm has no bf16_gemm_nt; only its import was checked"
    a = torch.randn(256, 256, device=device, dtype=torch.bfloat16)
    b = torch.randn(256, 256, device=device, dtype=torch.bfloat16)
    out = torch.empty(256, 256, device=device, dtype=torch.bfloat16)
    deep_gemm.bf16_gemm_nt(a, b, out)
    return _verdict(relative_error(out, a.float() @ b.float().T), "256^3 bf16 gemm_nt")


def flash_mla_smoke(device: str) -> tuple[str, str]:
    """``flash_mla_with_kvcache`` on one 64-token page per sequence (head dim 576, 512 of them
    value, one KV head, one query token) against an fp32 softmax attention."""
    import torch
    from flash_mla import flash_mla_with_kvcache, get_mla_metadata

    if not device.startswith(("cuda", "npu")):
        return "skipped", f"flash_mla runs on NVIDIA sm90/sm100 GPUs or Ascend NPUs; selected {device}"
    batch, heads, dim, dim_v, page = 2, 16, 576, 512, 64
    q = torch.randn(batch, 1, heads, dim, device=device, dtype=torch.bfloat16)
    cache = torch.randn(batch, page, 1, dim, device=device, dtype=torch.bfloat16)
    table = torch.arange(batch, device=device, dtype=torch.int32).view(batch, 1)
    lengths = torch.full((batch,), page, device=device, dtype=torch.int32)
    metadata, splits = get_mla_metadata(lengths, heads, 1)
    out, _ = flash_mla_with_kvcache(q, cache, table, lengths, dim_v, metadata, splits, causal=True)
    keys = cache[:, :, 0].float()  # [batch, page, dim]
    scores = torch.einsum("bqhd,bkd->bqhk", q.float(), keys) / math.sqrt(dim)
    reference = torch.einsum("bqhk,bkd->bqhd", scores.softmax(-1), keys[..., :dim_v])
    return _verdict(relative_error(out, reference), "MLA decode, 2 sequences of one 64-token page, 16 heads")


def tilelang_smoke(device: str) -> tuple[str, str]:
    """A TileLang element-wise add of 1,024 floats, compiled for the device, against torch."""
    import tilelang
    import tilelang.language as T
    import torch

    if not device.startswith(("cuda", "npu")):
        return "skipped", f"this smoke test compiles TileLang for a GPU or an NPU; selected {device}"
    n, block = 1024, 128

    @tilelang.jit(out_idx=[-1])
    def build(length: int, width: int) -> Any:
        @T.prim_func
        def add(x: T.Tensor((length,), "float32"), y: T.Tensor((length,), "float32"),
                out: T.Tensor((length,), "float32")) -> None:
            with T.Kernel(T.ceildiv(length, width), threads=width) as bx:
                for i in T.Parallel(width):
                    out[bx * width + i] = x[bx * width + i] + y[bx * width + i]

        return add

    x = torch.randn(n, device=device)
    y = torch.randn(n, device=device)
    out = build(n, block)(x, y)
    ok = bool(torch.allclose(out, x + y))
    return ("passed" if ok else "failed"), f"1,024-float add kernel compiled by tilelang {tilelang.__version__}"


def vllm_platform_smoke(device: str) -> tuple[str, str]:
    """vLLM's platform detection picks the selected device's kind."""
    from vllm.platforms import current_platform

    found = str(getattr(current_platform, "device_type", "") or "")
    wanted = device.split(":")[0]
    if found == wanted:
        return "passed", f"vllm's platform detection picks {found}"
    return "failed", f"vllm's platform detection picks {found or 'nothing'}, not {wanted}"
