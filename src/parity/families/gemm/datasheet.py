"""The peak a GEMM ceiling is shown beside: given (``--peak-tflops``), a datasheet, or a CPU's ISA.

In that order: a peak the user gives (``gemm.peak_tflops``, ``parity gemm --peak-tflops``) wins,
labelled as given; else the device's datasheet entry (``device_specs.toml``); else, on a CPU,
the peak derived from its instruction set, cores and clock (``parity.metrics.cpu_peak``).
Each comes with its source, and none replaces the measured ceiling.
"""

from __future__ import annotations

from typing import Any

from parity.metrics.cpu_peak import isa_peak
from parity.metrics.specs import peak_flops

TERA = 1e12


def reference_peak(*, device: Any, dtype: str, given_tflops: float | None) -> dict[str, Any] | None:
    """``{"flops", "source", "derived"}`` for ``dtype`` on ``device`` (see module), or None."""
    if given_tflops:
        return {"flops": given_tflops * TERA, "source": "given with --peak (gemm.peak_tflops)", "derived": ""}
    props = device.properties()
    sheet = peak_flops(props.name, dtype)
    if sheet is not None or device.type != "cpu":
        return sheet
    from parity.device.host import cpu_flags, cpu_part

    physical = (props.extra or {}).get("physical_cores")
    cores = min(c for c in (physical, props.compute_units) if c) if (physical or props.compute_units) else None
    clock = props.clock_max_mhz * 1e6 if props.clock_max_mhz else None
    return isa_peak(flags=cpu_flags(), dtype=dtype, cores=cores, clock_hz=clock, cpu=cpu_part())


def with_given_peak(metrics: dict[str, Any], given_tflops: float | None) -> dict[str, Any]:
    """``metrics`` of a ceiling case with the datasheet fields replaced by a given peak."""
    if not given_tflops:
        return metrics
    return {**metrics, "datasheet_flops": given_tflops * TERA,
            "datasheet_source": "given with --peak (gemm.peak_tflops)", "datasheet_derived": ""}
