"""The memory operations the bandwidth suite times, each with its operands and its check.

An operation owns its tensors: ``prepare`` allocates random operands (never zeros), ``__call__``
does one transfer, ``check`` verifies the last result against an independent computation.
Host-device transfers use pinned (page-locked) or pageable host memory as named.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parity.model.errors import ParityError

DEVICE_OPS = ("copy", "read", "write", "triad")
HOST_OPS = ("h2d-pinned", "h2d-pageable", "d2h-pinned", "d2h-pageable")
OPERANDS = {"copy": 2, "read": 1, "write": 1, "triad": 3}
TRIAD_SCALAR = 3.0
FILL_VALUE = 1.5


def operand_count(op: str) -> int:
    """How many arrays of the case size ``op`` holds at once (for the free-memory bound)."""
    return OPERANDS.get(op, 1)


def base_op(op: str) -> str:
    """The byte-convention name of ``op``: ``h2d-pinned`` -> ``h2d``."""
    return op.split("-", 1)[0]


@dataclass
class MemoryOp:
    """One operation on arrays of ``nbytes`` bytes of ``dtype`` on ``device`` (a parity Device)."""

    op: str
    nbytes: int
    device: Any
    dtype: str = "float32"

    def prepare(self) -> None:
        import torch

        if self.op not in DEVICE_OPS + HOST_OPS:
            raise ParityError(f"unknown membw op {self.op!r}; known: {', '.join(DEVICE_OPS + HOST_OPS)}")
        dtype = getattr(torch, self.dtype)
        self.numel = max(1, self.nbytes // torch.empty((), dtype=dtype).element_size())
        dev = self.device
        if self.op in DEVICE_OPS:
            self.a = dev.random_tensor((self.numel,), dtype)
            if self.op in ("copy", "triad"):
                self.b = dev.random_tensor((self.numel,), dtype)
            if self.op == "triad":
                self.c = dev.random_tensor((self.numel,), dtype)
            self.result: Any = None
            return
        from parity.device.tensors import random_tensor

        pinned = self.op.endswith("pinned")
        host = random_tensor((self.numel,), dtype, device="cpu")
        if pinned:
            host = host.pin_memory()
        on_device = dev.random_tensor((self.numel,), dtype)
        self.src, self.dst = (host, on_device) if self.op.startswith("h2d") else (on_device, host)
        self.non_blocking = pinned

    def __call__(self) -> None:
        op = self.op
        if op == "copy":
            self.b.copy_(self.a)
        elif op == "read":
            self.result = self.a.sum()
        elif op == "write":
            self.a.fill_(FILL_VALUE)
        elif op == "triad":
            import torch

            torch.add(self.b, self.c, alpha=TRIAD_SCALAR, out=self.a)
        else:
            self.dst.copy_(self.src, non_blocking=self.non_blocking)

    def check(self) -> dict[str, Any]:
        """Verify the last call's result; ``{"passed": bool, "method": ...}``."""
        import torch

        op = self.op
        if op == "copy":
            return {"passed": bool(torch.equal(self.a, self.b)), "method": "dst == src"}
        if op == "read":
            want = self.a.double().sum()
            scale = self.a.double().abs().sum().clamp_min(1.0)
            err = float((self.result.double() - want).abs() / scale)
            return {"passed": err < 1e-4, "method": "float64 sum", "relative_error": err}
        if op == "write":
            return {"passed": bool((self.a == FILL_VALUE).all()), "method": f"every element == {FILL_VALUE}"}
        if op == "triad":
            want = self.b + TRIAD_SCALAR * self.c
            return {"passed": bool(torch.allclose(self.a, want, rtol=1e-5, atol=1e-6)), "method": "b + s*c"}
        self.device.synchronize()
        return {"passed": bool(torch.equal(self.dst.cpu(), self.src.cpu())), "method": "dst == src"}

    def release(self) -> None:
        for name in ("a", "b", "c", "src", "dst", "result"):
            if hasattr(self, name):
                delattr(self, name)
