"""The readiness matrix: is each part of the accelerator software stack installed, importable,
and does a small real job pass on the selected device, with the reason whenever not.

Rows cover torch's backends (cpu, cuda, rocm, npu, xpu, mps), DeepSeek's six kernel and data
libraries (TileLang, DeepGEMM, DeepEP, TileKernels, FlashMLA, DeepSelect, each also published for
Ascend) and the rest of the stack benchmarks lean on (torch_npu, vLLM, vLLM-Ascend, SGLang,
Triton). A library that is absent, or present where it cannot run, says what it needs
(``LIBRARY_NEEDS``: device kinds and host architecture) beside what this machine has.
Imports and smoke tests run in child processes (``parity.device.smoke``) with a timeout, so a
library that crashes on import cannot take parity down with it.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING, Any

from parity.device.provenance import distribution_version

if TYPE_CHECKING:  # pragma: no cover
    from parity.device.base import Device

log = logging.getLogger(__name__)

CHILD_TIMEOUT_S = 180.0
PARALLEL_CHILDREN = 4
BACKENDS = ("cpu", "cuda", "rocm", "npu", "xpu", "mps")
# library row -> distribution names to look for (the first installed one gives the version)
LIBRARIES: dict[str, tuple[str, ...]] = {
    "tilelang": ("tilelang",),
    "deep_gemm": ("deep_gemm", "deep-gemm"),
    "deep_ep": ("deep_ep", "deep-ep"),
    "tile_kernels": ("tile_kernels", "tile-kernels", "tilekernels"),
    "flash_mla": ("flash_mla", "flash-mla"),
    "deep_select": ("deep_select", "deep-select", "deepselect"),
    "torch_npu": ("torch_npu", "torch-npu"),
    "vllm": ("vllm",),
    "vllm_ascend": ("vllm_ascend", "vllm-ascend"),
    "sglang": ("sglang",),
    "triton": ("triton", "pytorch-triton", "pytorch-triton-rocm", "pytorch-triton-xpu"),
}
# DeepSeek's six libraries, the rows `parity doctor` must always show.
DEEPSEEK_LIBRARIES = ("tilelang", "deep_gemm", "deep_ep", "tile_kernels", "flash_mla", "deep_select")
# library -> (device kinds its kernels run on, what it needs in words).
LIBRARY_NEEDS: dict[str, tuple[tuple[str, ...], str]] = {
    "tilelang": (("cuda", "npu", "cpu"), "a CUDA or ROCm GPU, an Ascend NPU, or a CPU target"),
    "deep_gemm": (("cuda", "npu"), "an NVIDIA sm90/sm100 GPU, or an Ascend NPU on an arm64 host"),
    "deep_ep": (("cuda", "npu"), "two or more NVIDIA GPUs with NVSHMEM, or Ascend NPUs"),
    "tile_kernels": (("cuda", "npu"), "an NVIDIA GPU or an Ascend NPU"),
    "flash_mla": (("cuda", "npu"), "an NVIDIA sm90/sm100 GPU or an Ascend NPU"),
    "deep_select": (("cuda", "npu", "cpu"), "torch on any device"),
    "torch_npu": (("npu",), "an Ascend NPU with CANN"),
    "vllm_ascend": (("npu",), "an Ascend NPU with torch_npu and CANN"),
}
# Ascend ports that build only for arm64 hosts: vLLM-Ascend's DeepGEMM was reported missing on
# x86 hosts, a dependency having its headers hard-coded for ARM.
ASCEND_ARM_ONLY = ("deep_gemm",)


def row(name: str, kind: str, **fields: Any) -> dict[str, Any]:
    """One matrix row with every key present, so tables and JSON readers need no guessing."""
    base: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "installed": False,
        "version": None,
        "importable": None,
        "smoke": "skipped",
        "smoke_kind": "",
        "reason": "",
    }
    base.update(fields)
    base["status"] = row_status(base)
    return base


def row_status(entry: dict[str, Any]) -> str:
    """One word per row: ``not-installed``; ``import-failed`` (the import raised); ``check-died``
    (the child process crashed or timed out); ``ready`` (the smoke test passed);
    ``smoke-failed``; ``not-run`` (imported, but the smoke test cannot run here: the reason
    says why, such as no fitting accelerator)."""
    if not entry["installed"]:
        return "not-installed"
    if entry["importable"] is False:
        return "import-failed"
    if entry["importable"] is None:
        return "check-died"
    return {"passed": "ready", "failed": "smoke-failed"}.get(entry["smoke"], "not-run")


def check_stack(
    device: Device | None,
    *,
    timeout_s: float = CHILD_TIMEOUT_S,
    progress: Callable[[dict[str, Any], int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """The readiness matrix for ``device`` (None: the CPU), one dict per row, in fixed order.

    ``progress(row, done, total)`` is called as each row finishes (in completion order).
    """
    target = device.name if device is not None else "cpu"
    jobs = [(name, "backend") for name in BACKENDS] + [(name, "library") for name in LIBRARIES]
    with ThreadPoolExecutor(max_workers=PARALLEL_CHILDREN) as pool:
        futures = [
            pool.submit(backend_row if kind == "backend" else library_row, name, target, timeout_s)
            for name, kind in jobs
        ]
        if progress is not None:
            for done, future in enumerate(as_completed(futures), start=1):
                progress(future.result(), done, len(futures))
        return [f.result() for f in futures]


def torch_version() -> str | None:
    return distribution_version("torch")


def backend_row(name: str, target: str, timeout_s: float) -> dict[str, Any]:
    """A torch backend: built into this torch? usable here? a matmul on it matches float64?"""
    version = torch_version()
    if version is None:
        return row(name, "backend", reason="torch is not installed; pip install 'parity[bench]'")
    from parity.device import backend

    built, built_version, why_not = _backend_build(name, version)
    if not built:
        return row(name, "backend", reason=why_not)
    device_type = "cuda" if name == "rocm" else name
    reason = backend(device_type).unusable_reason(None)
    fields = {"installed": True, "version": built_version}
    if reason is not None:
        return row(name, "backend", importable=True, reason=reason, **fields)
    device_name = target if target.split(":")[0] == device_type else device_type
    result = run_child("torch_npu" if name == "npu" else "torch", device_name, timeout_s=timeout_s)
    return row(name, "backend", **fields, **result)


def _backend_build(name: str, version: str) -> tuple[bool, str | None, str]:
    """Whether this torch was built with backend ``name``: ``(built, version, reason if not)``."""
    import torch

    if name == "cpu":
        return True, version, ""
    if name == "cuda":
        if torch.version.cuda:
            return True, f"CUDA {torch.version.cuda}", ""
        return False, None, f"torch {version} was built without CUDA"
    if name == "rocm":
        if getattr(torch.version, "hip", None):
            return True, f"ROCm/HIP {torch.version.hip}", ""
        return False, None, f"torch {version} was built without ROCm"
    if name == "npu":
        npu = distribution_version(*LIBRARIES["torch_npu"])
        if npu:
            return True, f"torch_npu {npu}", ""
        return (
            False,
            None,
            "torch_npu is not installed (Ascend support comes from the torch-npu package)",
        )
    if name == "xpu":
        compiled = hasattr(torch, "xpu") and bool(
            getattr(torch.xpu, "_is_compiled", lambda: False)()
        )
        return (
            compiled,
            version if compiled else None,
            "" if compiled else f"torch {version} was built without XPU",
        )
    if name == "mps":
        built = torch.backends.mps.is_built()
        return (
            built,
            version if built else None,
            "" if built else f"torch {version} was built without MPS",
        )
    raise ValueError(f"unknown backend row {name!r}")


def library_row(name: str, target: str, timeout_s: float) -> dict[str, Any]:
    """A library: its version from the package metadata, then import and smoke in a child.

    Absent: the distributions looked for, and what the library needs against what is here.
    Present where it cannot run (no fitting device, wrong host architecture): the import is
    still checked, and the smoke test's reason says why it did not run."""
    dists = LIBRARIES[name]
    version = distribution_version(*dists)
    misfit = fit_reason(name, target, host_architecture())
    if version is None:
        shown = " or ".join(repr(d) for d in dists)
        reason = f"not installed: no distribution named {shown}"
        return row(name, "library", reason=f"{reason}; {misfit}" if misfit else reason)
    result = run_child(name, target, timeout_s=timeout_s)
    if misfit and result.get("smoke") == "skipped" and result.get("importable"):
        result = {**result, "reason": f"{misfit}; {result['reason']}" if result.get("reason") else misfit}
    return row(name, "library", installed=True, version=version, **result)


def host_architecture() -> str:
    """``x86-64``, ``arm64``, ... as provenance names them."""
    from parity.device.host import architecture

    return architecture()


def fit_reason(name: str, target: str, architecture: str) -> str:
    """Why library ``name`` cannot run on device ``target`` of a host of ``architecture``;
    empty when it can (or when parity knows nothing of its needs)."""
    if name not in LIBRARY_NEEDS:
        return ""
    kinds, needs = LIBRARY_NEEDS[name]
    kind = target.split(":")[0]
    if kind not in kinds:
        what = "no accelerator" if kind == "cpu" else f"device {target}"
        return f"it needs {needs}; {what} selected here"
    if kind == "npu" and name in ASCEND_ARM_ONLY and architecture != "arm64":
        return f"its Ascend build needs an arm64 host; this host is {architecture}"
    return ""


def run_child(check: str, device: str, *, timeout_s: float) -> dict[str, Any]:
    """Run ``python -m parity.device.smoke CHECK DEVICE``; crashes and timeouts become reasons."""
    env = dict(os.environ)
    if check == "triton" and device.split(":")[0] not in ("cuda", "xpu"):
        env["TRITON_INTERPRET"] = "1"
    command = [sys.executable, "-m", "parity.device.smoke", check, device]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return {
            "importable": None,
            "smoke": "failed",
            "reason": f"timed out after {timeout_s:.0f} s",
        }
    for line in proc.stdout.splitlines():
        if line.startswith("PARITY-SMOKE "):
            result = json.loads(line.removeprefix("PARITY-SMOKE "))
            return {
                "importable": result["importable"],
                "smoke": result["smoke"],
                "smoke_kind": result.get("kind", ""),
                "reason": result.get("reason", ""),
            }
    tail = (proc.stderr.strip().splitlines() or [""])[-1][:300]
    return {
        "importable": None,
        "smoke": "failed",
        "reason": f"check process died with status {proc.returncode}: {tail}",
    }
