"""The compute kernels the overlap suite runs beside an exchange, each with its own check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from parity.model.errors import ParityError


@dataclass(frozen=True, kw_only=True)
class Kernel:
    """``call`` runs the kernel once; ``check`` compares its latest result with the one it gave
    before any overlap; ``metrics`` its FLOP or bytes per call."""

    name: str
    call: Callable[[], Any]
    check: Callable[[], dict[str, Any]]
    metrics: dict[str, Any]


def make_kernel(name: str, *, device: Any, gemm_n: int, copy_bytes: int) -> Kernel:
    """A GEMM (``n×n @ n×n``, fp32, ``2n³`` FLOP) or a copy (``copy_bytes`` read and written)."""
    import torch

    where = device.torch_device
    generator = torch.Generator().manual_seed(7)
    if name == "gemm":
        a = torch.randn(gemm_n, gemm_n, generator=generator).to(where)
        b = torch.randn(gemm_n, gemm_n, generator=generator).to(where)
        c = torch.empty(gemm_n, gemm_n, device=where)
        reference = a @ b

        def check_gemm() -> dict[str, Any]:
            return {"passed": bool(torch.allclose(c, reference, rtol=1e-4, atol=1e-3)),
                    "method": "C equals the product computed before the overlap (rtol 1e-4)"}

        return Kernel(name="gemm", call=lambda: torch.matmul(a, b, out=c), check=check_gemm,
                      metrics={"kernel_flop": 2.0 * gemm_n**3})
    if name == "copy":
        count = max(1, copy_bytes // 4)
        src = torch.randn(count, generator=generator).to(where)
        dst = torch.empty_like(src)
        return Kernel(name="copy", call=lambda: dst.copy_(src),
                      check=lambda: {"passed": bool(torch.equal(dst, src)), "method": "the copy equals its source"},
                      metrics={"kernel_bytes": 8.0 * count})
    raise ParityError(f"unknown overlap kernel {name!r}; use gemm or copy")
