"""Library kernels of each operation, on the same inputs as its torch reference.

``LIBRARY_KERNELS`` maps an operation to the libraries that implement it: the module, the entry
point, and an adapter that calls it on the reference's inputs (anything built beside them, such
as FlashMLA's tile-scheduler metadata, is built outside the timed call). ``library_reason``
says why a library kernel cannot run here: not installed, no fitting device, an import error
(one line), or an entry point this version lacks; ``None`` when it can. TileKernels is listed
for every operation, but parity checks none of its entry points against a reference yet, so an
installed copy is reported as such rather than guessed at. The Ascend ports are looked up under
the same module names, on ``npu`` devices.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

LIBRARY_DEVICES = ("cuda", "npu")


@dataclass(frozen=True)
class LibraryKernel:
    """One library's kernel for one operation: ``prepare(module, inputs, params)`` returns
    what ``call`` times; ``call(prepared)`` returns the output compared with the truth."""

    library: str
    module: str
    entry: str | None  # None: parity maps no entry point of this library to the operation
    prepare: Callable[[Any, dict[str, Any], dict[str, Any]], Any] | None = None
    call: Callable[[Any], Any] | None = None


def _prepare_fp8(module: Any, inputs: dict[str, Any], params: dict[str, Any]) -> Any:
    import torch

    out = torch.empty((inputs["a"].shape[0], inputs["b"].shape[0]), dtype=torch.bfloat16, device=inputs["a"].device)
    return module.fp8_gemm_nt, (inputs["a"], inputs["sa"]), (inputs["b"], inputs["sb"]), out


def _call_pair(prepared: Any) -> Any:
    entry, a, b, out = prepared
    entry(a, b, out)
    return out


def _prepare_contiguous(module: Any, inputs: dict[str, Any], params: dict[str, Any]) -> Any:
    import torch

    a, b = inputs["a"], inputs["b"]
    out = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    return module.m_grouped_bf16_gemm_nt_contiguous, a, b, out, inputs["m_indices"]


def _call_contiguous(prepared: Any) -> Any:
    entry, a, b, out, m_indices = prepared
    entry(a, b, out, m_indices)
    return out


def _prepare_masked(module: Any, inputs: dict[str, Any], params: dict[str, Any]) -> Any:
    import torch

    a, b = inputs["a"], inputs["b"]
    out = torch.empty((a.shape[0], a.shape[1], b.shape[1]), dtype=a.dtype, device=a.device)
    return module.m_grouped_bf16_gemm_nt_masked, a, b, out, inputs["masked_m"], int(params["expected_m"])


def _call_masked(prepared: Any) -> Any:
    entry, a, b, out, masked_m, expected_m = prepared
    entry(a, b, out, masked_m, expected_m)
    return out


def _prepare_mla(module: Any, inputs: dict[str, Any], params: dict[str, Any]) -> Any:
    q = inputs["q"]
    metadata, splits = module.get_mla_metadata(inputs["seqlens"], q.shape[1] * q.shape[2], 1)
    return module.flash_mla_with_kvcache, inputs, metadata, splits, int(params["value_dim"])


def _call_mla(prepared: Any) -> Any:
    entry, inputs, metadata, splits, value_dim = prepared
    out, _ = entry(inputs["q"], inputs["kv_cache"], inputs["block_table"], inputs["seqlens"], value_dim,
                   metadata, splits, causal=True)
    return out


TILE_KERNELS = LibraryKernel("tile_kernels", "tile_kernels", None)
LIBRARY_KERNELS: dict[str, tuple[LibraryKernel, ...]] = {
    "fp8_gemm": (LibraryKernel("deep_gemm", "deep_gemm", "fp8_gemm_nt", _prepare_fp8, _call_pair), TILE_KERNELS),
    "grouped_contiguous": (LibraryKernel("deep_gemm", "deep_gemm", "m_grouped_bf16_gemm_nt_contiguous",
                                         _prepare_contiguous, _call_contiguous), TILE_KERNELS),
    "grouped_masked": (LibraryKernel("deep_gemm", "deep_gemm", "m_grouped_bf16_gemm_nt_masked",
                                     _prepare_masked, _call_masked), TILE_KERNELS),
    "mla_decode": (LibraryKernel("flash_mla", "flash_mla", "flash_mla_with_kvcache", _prepare_mla, _call_mla),
                   TILE_KERNELS),
}


def library_reason(kernel: LibraryKernel, *, device_type: str, device_name: str) -> str | None:
    """Why ``kernel`` cannot run on this device, in one line; None when it can."""
    misfit = (f"{kernel.library} runs on NVIDIA GPUs or Ascend NPUs (its Ascend port); selected {device_name}"
              if device_type not in LIBRARY_DEVICES else "")
    if importlib.util.find_spec(kernel.module) is None:
        return f"not installed: no module {kernel.module!r}" + (f"; {misfit}" if misfit else "")
    if misfit:
        return misfit
    try:
        module = importlib.import_module(kernel.module)
    except Exception as exc:  # noqa: BLE001 - any import failure is the reason
        first = (str(exc).strip().splitlines() or [""])[0]
        return f"import failed: {type(exc).__name__}: {first}"[:300]
    if kernel.entry is None:
        return f"{kernel.library} is installed, but parity checks none of its entry points against this operation yet"
    if not hasattr(module, kernel.entry):
        version = getattr(module, "__version__", "?")
        return f"this {kernel.module} ({version}) has no {kernel.entry}"
    return None


def library_kernel(op: str, library: str) -> LibraryKernel:
    """The registered kernel of ``library`` for ``op``."""
    for kernel in LIBRARY_KERNELS[op]:
        if kernel.library == library:
            return kernel
    raise KeyError(f"no {library} kernel registered for {op}")
