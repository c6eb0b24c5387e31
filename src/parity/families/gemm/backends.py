"""GEMM backends as plugins: how ``C[M,N] = A[M,K] @ B[K,N]`` is computed.

A backend is any object with::

    name: str
    def unavailable_reason(self, *, device, dtype: GemmDtype) -> str | None: ...
    def prepare(self, a, b, *, dtype: GemmDtype): ...   # operands in the layout it wants
    def run(self, operands): ...                       # returns C as an [M, N] tensor

The harness draws ``a`` ([M, K]) and ``b`` ([K, N]) in the storage dtype, calls ``prepare``
once per input set (outside the timed region), times ``run`` and checks its output against a
higher-precision product of the same ``a`` and ``b``. So adding DeepGEMM, a TileLang or a Triton
kernel is one file holding one such class, selected by ``--backend package.module:Class`` or
registered under a short name through the ``parity.gemm_backends`` entry-point group.

Shipped: ``matmul`` (alias ``torch``: ``torch.matmul`` into a preallocated output, the way
mamf-finder times ``torch.mm``; fp8 through ``torch._scaled_mm`` with unit scales and a bf16
output), ``linear`` (``torch.nn.functional.linear`` with the weight stored ``[N, K]``, as a
model's linear layer holds it), and the tuned backends (``parity.families.gemm.tuned``):
``compile`` (``torch.compile`` max-autotune), ``triton`` (a ``triton.autotune`` matmul, CUDA
only) and ``tilelang`` (where TileLang is installed). With two or more backends the first is
the baseline the others' speedups are measured against (``parity.families.gemm.speedup``).
"""

from __future__ import annotations

import importlib
import logging
from importlib import metadata
from typing import Any, Protocol, runtime_checkable

from parity.families.gemm.dtypes import GemmDtype, output_dtype
from parity.model.errors import ParityError

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "parity.gemm_backends"


@runtime_checkable
class GemmBackend(Protocol):
    name: str

    def unavailable_reason(self, *, device: Any, dtype: GemmDtype) -> str | None: ...

    def prepare(self, a: Any, b: Any, *, dtype: GemmDtype) -> Any: ...

    def run(self, operands: Any) -> Any: ...


class TorchMatmul:
    """``torch.matmul(a, b, out=c)``; fp8: ``torch._scaled_mm(a, b_colmajor, scales=1, bf16)``."""

    name = "matmul"

    def unavailable_reason(self, *, device: Any, dtype: GemmDtype) -> str | None:
        return None

    def prepare(self, a: Any, b: Any, *, dtype: GemmDtype) -> Any:
        import torch

        if dtype.name == "fp8":
            # _scaled_mm wants B column-major: the transpose of a contiguous [N, K] tensor.
            scale = torch.ones((), dtype=torch.float32, device=a.device)
            return ("scaled", a, b.t().contiguous().t(), scale, output_dtype(dtype))
        out = torch.empty((a.shape[0], b.shape[1]), dtype=output_dtype(dtype), device=a.device)
        return ("plain", a, b, out)

    def run(self, operands: Any) -> Any:
        import torch

        if operands[0] == "scaled":
            _, a, b, scale, out_dtype = operands
            return torch._scaled_mm(a, b, scale_a=scale, scale_b=scale, out_dtype=out_dtype)
        _, a, b, out = operands
        return torch.matmul(a, b, out=out)


class TorchLinear:
    """``torch.nn.functional.linear(a, w)`` with ``w = b^T`` stored contiguous ``[N, K]``."""

    name = "linear"

    def unavailable_reason(self, *, device: Any, dtype: GemmDtype) -> str | None:
        if dtype.name == "fp8":
            return "torch.nn.functional.linear takes no fp8 inputs; use --backend matmul (scaled matmul)"
        return None

    def prepare(self, a: Any, b: Any, *, dtype: GemmDtype) -> Any:
        return a, b.t().contiguous()

    def run(self, operands: Any) -> Any:
        import torch.nn.functional as F

        a, w = operands
        return F.linear(a, w)


def _tuned(module: str, attribute: str) -> Any:
    """A tuned backend class, imported only when named (triton and tilelang stay unimported)."""
    return lambda: getattr(importlib.import_module(f"parity.families.gemm.{module}"), attribute)()


BUILTIN: dict[str, Any] = {
    "matmul": TorchMatmul, "torch": TorchMatmul, "linear": TorchLinear,
    "compile": _tuned("tuned", "TorchCompile"), "triton": _tuned("triton_matmul", "TritonMatmul"),
    "tilelang": _tuned("tilelang_matmul", "TileLangMatmul"),
}


def _entry_points() -> dict[str, str]:
    try:
        return {ep.name: ep.value for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}
    except Exception:  # a broken distribution must not hide the built-ins
        log.warning("could not read %s entry points", ENTRY_POINT_GROUP, exc_info=True)
        return {}


def backend_names() -> list[str]:
    """Built-in and installed backend names."""
    return list(BUILTIN) + sorted(set(_entry_points()) - set(BUILTIN))


def load_backend(spec: str) -> GemmBackend:
    """A backend by short name (``matmul``, ``linear``, an installed plugin) or ``module:Class``."""
    if spec in BUILTIN:
        return BUILTIN[spec]()
    target = _entry_points().get(spec, spec)
    module_name, _, attribute = target.partition(":")
    if not attribute:
        raise ParityError(
            f"unknown gemm backend {spec!r}; use one of {', '.join(backend_names())} or module:Class"
        )
    try:
        module = importlib.import_module(module_name)
        obj = getattr(module, attribute)
    except (ImportError, AttributeError) as exc:
        raise ParityError(f"gemm backend {spec!r} cannot be loaded: {exc}") from None
    backend = obj() if isinstance(obj, type) else obj
    if not isinstance(backend, GemmBackend) or not isinstance(getattr(backend, "name", None), str):
        raise ParityError(
            f"gemm backend {spec!r} lacks name, unavailable_reason, prepare or run; see parity.families.gemm.backends"
        )
    return backend
