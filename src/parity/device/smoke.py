"""Smoke tests of the accelerator software stack, each run in its own process.

``python -m parity.device.smoke CHECK DEVICE`` imports the library named by CHECK, runs a small
real piece of work on DEVICE, and prints one JSON line: ``{"importable": bool, "smoke":
"passed"|"failed"|"skipped", "reason": str, "kind": str}``. A crashing import or kernel kills
only this process; ``readiness.check_stack`` turns a crash or a timeout into a row.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from parity.device.library_smoke import (
    deep_gemm_smoke,
    flash_mla_smoke,
    relative_error,
    tilelang_smoke,
    vllm_platform_smoke,
)

# Relative Frobenius error allowed against a float64 reference for a 64x64x64 fp32 matmul.
MATMUL_TOLERANCE = 1e-3
GPU_TYPES = ("cuda", "xpu")


def _matmul(device: str) -> tuple[str, str]:
    import torch

    generator = torch.Generator().manual_seed(0)
    a = torch.randn(64, 64, generator=generator)
    b = torch.randn(64, 64, generator=generator)
    result = (a.to(device) @ b.to(device)).cpu()
    error = relative_error(result, a.double() @ b.double())
    if error > MATMUL_TOLERANCE:
        return "failed", f"64x64 fp32 matmul on {device}: relative error {error:.2e}"
    return "passed", f"64x64 fp32 matmul on {device} matches float64 (error {error:.1e})"


def _triton(device: str) -> tuple[str, str]:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):  # noqa: N803 - triton's style
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(
            out_ptr + offsets,
            tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
            mask=mask,
        )

    where = device if device.split(":")[0] in GPU_TYPES else "cpu"
    x = torch.arange(1000, dtype=torch.float32, device=where)
    y = torch.full_like(x, 2.0)
    out = torch.empty_like(x)
    add[(triton.cdiv(1000, 256),)](x, y, out, 1000, BLOCK=256)
    ok = bool(torch.equal(out.cpu(), (x + y).cpu()))
    how = "interpreter (TRITON_INTERPRET=1)" if where == "cpu" else f"compiled for {where}"
    return ("passed" if ok else "failed"), f"vector add kernel, {how}"


def _import_only(why: str) -> Callable[[str], tuple[str, str]]:
    return lambda device: ("skipped", why)


# check name -> (module to import, smoke function)
CHECKS: dict[str, tuple[str, Callable[[str], tuple[str, str]]]] = {
    "torch": ("torch", _matmul),
    "torch_npu": ("torch_npu", _matmul),
    "triton": ("triton", _triton),
    "tilelang": ("tilelang", tilelang_smoke),
    "deep_gemm": ("deep_gemm", deep_gemm_smoke),
    "deep_ep": (
        "deep_ep",
        _import_only("deep_ep's dispatch needs two or more ranks with NVSHMEM; import checked"),
    ),
    "tile_kernels": (
        "tile_kernels",
        _import_only("no tile_kernels entry point is checked against a torch reference yet; import checked"),
    ),
    "flash_mla": ("flash_mla", flash_mla_smoke),
    "deep_select": (
        "deep_select",
        _import_only("deep_select selects data, it has no kernel to time; import checked"),
    ),
    "vllm": ("vllm", vllm_platform_smoke),
    "vllm_ascend": ("vllm_ascend", vllm_platform_smoke),
    "sglang": ("sglang", _import_only("sglang needs a model to serve; import checked")),
}


def run_check(check: str, device: str) -> dict[str, Any]:
    """Import ``check``'s module, then run its smoke function on ``device``."""
    module_name, smoke = CHECKS[check]
    try:
        if check == "torch_npu" or device.startswith("npu"):
            importlib.import_module("torch_npu")
        importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is the answer
        return {"importable": False, "smoke": "skipped", "kind": "", "reason": _one_line(exc)}
    try:
        outcome, kind = smoke(device)
    except Exception as exc:  # noqa: BLE001
        return {"importable": True, "smoke": "failed", "kind": "", "reason": _one_line(exc)}
    return {
        "importable": True,
        "smoke": outcome,
        "kind": kind,
        "reason": "" if outcome == "passed" else kind,
    }


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in CHECKS:
        sys.stderr.write(f"usage: python -m parity.device.smoke {{{','.join(CHECKS)}}} DEVICE\n")
        return 2
    result = run_check(argv[0], argv[1])
    sys.stdout.write("PARITY-SMOKE " + json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: some stacks crash while unloading


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
