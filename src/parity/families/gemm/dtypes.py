"""GEMM precisions: element sizes, the torch dtypes behind each name, tolerances, TF32 mode.

``tf32`` is not a storage type: it is fp32 storage with the matrix unit allowed to round inputs
to a 10-bit mantissa (``torch.backends.cuda.matmul.allow_tf32``). ``fp8`` is e4m3 inputs
through torch's scaled matmul (``torch._scaled_mm``) with unit scales and a bf16 output; on
AMD CDNA3 the e4m3 variant is ``float8_e4m3fnuz``.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any

from parity.model.errors import ParityError

# Unit roundoff u = 2^-(mantissa bits + 1) of each storage format.
ACCUMULATE_ROUNDOFF = 2.0**-24
UNIT_ROUNDOFF = {"fp32": 2.0**-24, "tf32": 2.0**-11, "bf16": 2.0**-8, "fp16": 2.0**-11, "fp8": 2.0**-4}


@dataclass(frozen=True, kw_only=True)
class GemmDtype:
    """One precision: the name users type, storage names, element sizes in bytes."""

    name: str
    storage: str  # torch dtype name of A and B
    output: str  # torch dtype name of C
    in_bytes: int
    out_bytes: int
    input_roundoff: float  # unit roundoff applied to A and B inside the multiply (tf32), else 0

    def tolerance(self, k: int) -> float:
        """Largest relative (Frobenius) error accepted for a reduction of length ``k``.

        ``tol = 8·u_out + 8·u_in + 2·u_acc·sqrt(K)`` with ``u_acc = 2^-24`` (fp32 accumulation):
        output rounding (``u_out`` in norm; 8x slack for split reductions that round partial
        sums to the output type), input rounding done inside the multiply (tf32 only; the
        reference uses the same stored inputs otherwise), and the random-walk growth of
        accumulation error over a length-``K`` reduction relative to a random-sign sum
        (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., §3.1, §3.5).
        A wrong kernel misses this by orders of magnitude (a transposed or stale result has
        relative error near 1).
        """
        u_out = UNIT_ROUNDOFF[_output_format(self.output)]
        return 8.0 * u_out + 8.0 * self.input_roundoff + 2.0 * ACCUMULATE_ROUNDOFF * math.sqrt(max(k, 1))


def _output_format(torch_name: str) -> str:
    return {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}[torch_name]


DTYPES: dict[str, GemmDtype] = {
    "bf16": GemmDtype(name="bf16", storage="bfloat16", output="bfloat16", in_bytes=2, out_bytes=2,
                      input_roundoff=0.0),
    "fp16": GemmDtype(name="fp16", storage="float16", output="float16", in_bytes=2, out_bytes=2,
                      input_roundoff=0.0),
    "fp32": GemmDtype(name="fp32", storage="float32", output="float32", in_bytes=4, out_bytes=4,
                      input_roundoff=0.0),
    "tf32": GemmDtype(name="tf32", storage="float32", output="float32", in_bytes=4, out_bytes=4,
                      input_roundoff=2.0**-11),
    "fp8": GemmDtype(name="fp8", storage="float8_e4m3fn", output="bfloat16", in_bytes=1, out_bytes=2,
                     input_roundoff=0.0),
}


def resolve_dtype(name: str) -> GemmDtype:
    """The precision called ``name`` (bf16, fp16, fp32, tf32, fp8); ParityError otherwise."""
    key = str(name).lower().replace("fp8_e4m3", "fp8").replace("bfloat16", "bf16")
    key = {"float16": "fp16", "half": "fp16", "float32": "fp32", "e4m3": "fp8"}.get(key, key)
    if key not in DTYPES:
        raise ParityError(f"unknown gemm dtype {name!r}; use one of {', '.join(DTYPES)}")
    return DTYPES[key]


def storage_dtype(dtype: GemmDtype, device: Any) -> Any:
    """The torch dtype of A and B on ``device`` (e4m3fnuz on AMD CDNA3 for fp8)."""
    import torch

    if dtype.name == "fp8" and device.architecture().startswith("gfx94"):
        return torch.float8_e4m3fnuz
    return getattr(torch, dtype.storage)


def output_dtype(dtype: GemmDtype) -> Any:
    import torch

    return getattr(torch, dtype.output)


def unavailable_reason(dtype: GemmDtype, device: Any) -> str | None:
    """Why ``dtype`` cannot run on ``device``, or None. Never raises."""
    import torch

    if dtype.name == "tf32":
        return device.reduced_fp32_matmul_reason()
    if dtype.name == "fp8":
        if not hasattr(torch, "_scaled_mm"):
            return f"torch {torch.__version__} has no scaled matmul (torch._scaled_mm) for fp8"
        capability = device.compute_capability()
        if capability is not None and capability < (8, 9):
            major, minor = capability
            return f"fp8 matmul needs compute capability 8.9 or newer; {device.name} has {major}.{minor}"
    try:
        ok = device.supports_dtype(storage_dtype(dtype, device))
    except Exception as exc:  # noqa: BLE001 - a probe that fails means unsupported
        return f"{dtype.name} probe failed on {device.name}: {type(exc).__name__}: {exc}"
    return None if ok else f"{device.name} cannot create {dtype.storage} tensors"


# CPU instruction-set flags (/proc/cpuinfo) under which a dtype's products run natively.
NATIVE_CPU_FLAGS = {"bf16": ({"amx_bf16"}, {"avx512_bf16"}), "fp16": ({"amx_fp16"}, {"avx512_fp16"})}


def emulation_note(dtype: GemmDtype, device: Any) -> str | None:
    """Why ``dtype``'s rate on a CPU is that of a conversion path rather than of hardware: fp8
    always (no CPU instruction multiplies it), bf16 and fp16 without their instructions; None
    on accelerators and for native dtypes."""
    if device.type != "cpu" or dtype.name in ("fp32", "tf32"):
        return None
    if dtype.name == "fp8":
        return "fp8 on a CPU is emulated (no CPU instruction multiplies fp8): its rate says nothing of fp8 hardware"
    from parity.device.host import cpu_flags

    flags = cpu_flags()
    if any(group <= flags for group in NATIVE_CPU_FLAGS.get(dtype.name, ())):
        return None
    return (f"{dtype.name} on this CPU is emulated (none of its flags has native {dtype.name} products): "
            "its rate is a conversion path's")


def precision_mode(dtype: GemmDtype, device: Any) -> contextlib.AbstractContextManager[None]:
    """Inside: fp32 matmuls may use TF32 (HF32 on Ascend) when ``dtype`` is tf32; otherwise they
    must not (so fp32 means true fp32). The previous settings are restored on exit."""
    return device.fp32_matmul_mode(reduced=dtype.name == "tf32")
