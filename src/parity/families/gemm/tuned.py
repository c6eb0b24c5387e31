"""Tuned GEMM backends: ``torch.compile(mode="max-autotune")``, and the tuning-time record
every tuned backend keeps.

A tuned backend compiles or searches once per shape, in ``prepare`` (outside the timed
calls), and records how long that took in ``tuning_s[(m, n, k)]``: the speedup it buys is
reported beside the time it cost. ``quick_shapes`` caps how many of the quick catalog's shapes
it is measured on, since tuning costs seconds per shape on a CPU.

Inductor's max-autotune benchmarks its GEMM choices (ATen's kernel, its C++ GEMM template on
the CPU, Triton templates on GPUs) and keeps the fastest; on the CPU it needs a C++ compiler.
Each shape gets a fresh Dynamo cache (``torch._dynamo.reset``) so the recompile limit never
sends a shape back to eager silently; a compile that fails raises, and the shape's row says why.
"""

from __future__ import annotations

import shutil
from typing import Any

from parity.families.gemm.dtypes import GemmDtype
from parity.harness.strategies import Stopwatch

COMPILE_QUICK_SHAPES = 8


class TunedBackend:
    """What tuned backends share: the per-shape tuning time and the once-per-shape cache."""

    name = "tuned"
    quick_shapes: int | None = COMPILE_QUICK_SHAPES

    def __init__(self) -> None:
        self.tuning_s: dict[tuple[int, int, int], float] = {}
        self._built: dict[tuple[Any, ...], Any] = {}

    def tuned(self, key: tuple[Any, ...], dims: tuple[int, int, int], build: Any) -> Any:
        """``build()`` once per ``key``; the first build of ``dims`` is its tuning time (later
        ones, such as a rebuild for the check's fresh inputs, find the tuning done)."""
        if key not in self._built:
            elapsed = Stopwatch()
            self._built[key] = build()
            self.tuning_s.setdefault(dims, elapsed())
        return self._built[key]


def _weight_module(b: Any) -> Any:
    """A module holding ``B`` as its frozen weight: ``forward(a) = a @ B``."""
    import torch

    class FrozenMatmul(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(b, requires_grad=False)

        def forward(self, a: Any) -> Any:
            return torch.matmul(a, self.weight)

    return FrozenMatmul().eval()


class TorchCompile(TunedBackend):
    """``torch.compile(mode="max-autotune")`` of ``a @ B`` with ``B`` a frozen weight, per shape.

    Inductor considers its C++ GEMM template on the CPU only for a constant ``B`` (it prepacks
    the weight), so ``B`` is held the way an inference model holds a linear layer's weight and
    compiled with ``freezing=True``: each distinct ``B`` is compiled once, one input set is timed
    (``max_input_sets = 1``; the cache is still flushed between calls), and the tuning time is
    the first compile of the shape, autotuning included."""

    name = "compile"
    max_input_sets = 1

    def unavailable_reason(self, *, device: Any, dtype: GemmDtype) -> str | None:
        if dtype.name == "fp8":
            return "torch.compile's GEMM templates take no fp8 operands here; use --backend matmul (scaled matmul)"
        if device.type == "cpu" and not (shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")):
            return "torch.compile on the CPU needs a C++ compiler (c++, g++ or clang++ on PATH); none found"
        return None

    def prepare(self, a: Any, b: Any, *, dtype: GemmDtype) -> Any:
        m, k = a.shape
        n = b.shape[1]
        key = (m, n, k, str(a.dtype), a.device.type, b.data_ptr())
        return self.tuned(key, (m, n, k), lambda: self._compile(a, b)), a

    @staticmethod
    def _compile(a: Any, b: Any) -> Any:
        import torch
        import torch._inductor.config as inductor

        torch._dynamo.reset()
        with torch.no_grad(), inductor.patch(freezing=True):
            fn = torch.compile(_weight_module(b), mode="max-autotune", dynamic=False, fullgraph=True)
            fn(a)  # compiling and autotuning happen on the first call
        return fn

    def run(self, operands: Any) -> Any:
        import torch

        fn, a = operands
        with torch.no_grad():
            return fn(a)
