"""Correctness of a GEMM backend: relative error against a higher-precision product.

Every performance row carries this check. Fresh random inputs (not the timed ones) are drawn,
the backend computes ``C``, and the reference is ``A @ B`` of the same stored inputs upcast to
fp64 on the CPU (fp32 with TF32 off on accelerators, where fp64 matmul may be slow or absent).
To bound the cost on huge shapes, only ``CHECK_ROWS`` rows of ``C`` are compared (a random
subset: any row can be wrong, so a sample of rows still catches layout and indexing bugs).

``relative_error = ||C_rows - R_rows||_F / ||R_rows||_F``; the row fails when it exceeds the
dtype's tolerance (``GemmDtype.tolerance(K)``) or when C holds NaN or infinity.
"""

from __future__ import annotations

import math
from typing import Any

from parity.families.gemm.dtypes import GemmDtype, precision_mode, storage_dtype
from parity.model.findings import Finding, Severity

CHECK_ROWS = 256
CHECK_SEED = 0xC0FFEE


def relative_error(result: Any, reference: Any) -> float:
    """``||result - reference||_F / ||reference||_F`` in fp64; inf when the reference is zero."""
    import torch

    diff = torch.linalg.vector_norm((result.double() - reference.double()).flatten())
    norm = torch.linalg.vector_norm(reference.double().flatten())
    if float(norm) == 0.0:
        return math.inf
    return float(diff / norm)


def check_backend(backend: Any, *, device: Any, dtype: GemmDtype, m: int, n: int, k: int) -> dict[str, Any]:
    """Run ``backend`` once on fresh inputs and compare; ``{"passed", "relative_error", ...}``."""
    import torch

    seed = CHECK_SEED + m * 7 + n * 13 + k * 17
    generator = torch.Generator(device="cpu").manual_seed(seed)
    on_device = _device_generator(device, seed)
    stored = storage_dtype(dtype, device)
    a = device.random_tensor((m, k), stored, generator=on_device)
    b = device.random_tensor((k, n), stored, generator=on_device)
    with precision_mode(dtype, device):
        result = backend.run(backend.prepare(a, b, dtype=dtype))
    device.synchronize()
    rows = _check_rows(m, generator)
    on_cpu = device.type == "cpu"
    ref_dtype = torch.float64 if on_cpu else torch.float32
    with precision_mode(_FP32_EXACT, device):
        reference = a[rows].to(ref_dtype) @ b.to(ref_dtype)
    got = result[rows]
    finite = bool(torch.isfinite(got.float()).all())
    error = relative_error(got, reference) if finite else math.inf
    tolerance = dtype.tolerance(k)
    return {
        "passed": finite and error <= tolerance,
        "relative_error": error,
        "tolerance": tolerance,
        "finite": finite,
        "reference": f"{'fp64' if on_cpu else 'fp32'} matmul of the same inputs",
        "rows_checked": len(rows),
    }


def _device_generator(device: Any, seed: int) -> Any:
    """A seeded generator on the device itself, so large inputs are drawn there (drawing a
    gigabyte on the host and copying it would dominate the sweep); None where the backend has
    no device generator (the device's default generator is used, unseeded)."""
    import torch

    try:
        return torch.Generator(device=device.torch_device).manual_seed(seed)
    except (RuntimeError, TypeError):
        return None


def _check_rows(m: int, generator: Any) -> list[int]:
    import torch

    if m <= CHECK_ROWS:
        return list(range(m))
    return sorted(torch.randperm(m, generator=generator)[:CHECK_ROWS].tolist())


def check_findings(check: dict[str, Any]) -> list[Finding]:
    """An error-severity ``wrong-result`` finding when the check failed."""
    if check.get("passed", True):
        return []
    if not check.get("finite", True):
        message = "the result holds NaN or infinity"
    else:
        message = (
            f"relative error {check['relative_error']:.3g} exceeds the tolerance "
            f"{check['tolerance']:.3g} against the {check['reference']}"
        )
    return [Finding(code="wrong-result", severity=Severity.ERROR, message=message,
                    hint="this backend computes a wrong product for this shape; do not use its timing")]


class _Fp32Exact:
    """A stand-in dtype that turns TF32 off for the reference product."""

    name = "fp32"


_FP32_EXACT = _Fp32Exact()
