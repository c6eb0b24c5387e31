"""``npu``: Huawei Ascend through ``torch_npu``, with telemetry from ``npu-smi``."""

from __future__ import annotations

import contextlib
import logging
import re
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

from parity.device.accelerator import TorchAcceleratorDevice, torch_version
from parity.device.base import DeviceProperties, module_available, register_backend

log = logging.getLogger(__name__)

NPU_SMI_TIMEOUT_S = 5.0


def import_torch_npu() -> str | None:
    """Import torch_npu (it registers ``torch.npu``); the reason as text when that fails."""
    if not module_available("torch_npu"):
        return "torch_npu is not installed; install the torch-npu build matching torch and CANN"
    try:
        import torch_npu  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - a broken CANN install raises anything
        first = (str(exc).splitlines() or [""])[0]
        return f"import torch_npu failed: {type(exc).__name__}: {first}"
    return None


@register_backend
class NpuDevice(TorchAcceleratorDevice):
    """``npu:N``: device events from ``torch.npu``, collectives through HCCL; no graph replay
    here."""

    type = "npu"

    @classmethod
    def unusable_reason(cls, index: int | None) -> str | None:
        version = torch_version()
        if version is None:
            return "PyTorch is not installed; pip install 'parity[bench]'"
        problem = import_torch_npu()
        if problem:
            return f"torch {version}: {problem}"
        import torch

        if not torch.npu.is_available():  # type: ignore[attr-defined]
            return (
                f"torch {version} with torch_npu sees no NPU (driver or CANN environment missing)"
            )
        count = torch.npu.device_count()  # type: ignore[attr-defined]
        if index is not None and not 0 <= index < count:
            return f"torch_npu sees {count} NPU(s): npu:0..npu:{count - 1}"
        return None

    def architecture(self) -> str:
        """The Ascend chip name torch_npu reports (``Ascend910B3``); CANN builds kernels per
        chip."""
        import torch

        return str(torch.npu.get_device_name(self.index))  # type: ignore[attr-defined]

    def reduced_fp32_matmul_reason(self) -> str | None:
        """HF32 (Ascend's TF32) needs torch_npu's ``matmul.allow_hf32`` switch."""
        if _hf32_switch() is None:
            return "this torch_npu has no matmul.allow_hf32 switch"
        return None

    @contextlib.contextmanager
    def fp32_matmul_mode(self, *, reduced: bool) -> Iterator[None]:
        """``torch.npu.matmul.allow_hf32`` set to ``reduced`` inside, restored on exit; nothing
        changes where this torch_npu has no such switch."""
        switch = _hf32_switch()
        if switch is None:
            yield
            return
        previous = switch.allow_hf32
        switch.allow_hf32 = reduced
        try:
            yield
        finally:
            switch.allow_hf32 = previous

    def properties(self) -> DeviceProperties:
        import torch

        props = torch.npu.get_device_properties(self.index)  # type: ignore[attr-defined]
        cube = getattr(props, "cube_core_num", None)
        vector = getattr(props, "vector_core_num", None)
        l2 = getattr(props, "L2_cache_size", None) or None
        return DeviceProperties(
            name=str(props.name),
            vendor="Huawei",
            type=self.type,
            compute_units=cube,
            compute_unit_kind="AI cores (Cube)",
            memory_bytes=getattr(props, "total_memory", None),
            l2_bytes=l2,
            llc_bytes=l2,
            extra={"vector_cores": vector},
        )

    def telemetry_sources(self) -> list[Any]:
        return [NpuSmiTelemetry(npu_id=self.index or 0)]

    def power_sensors(self) -> Any:
        """``npu-smi info -t power`` for this NPU."""
        from parity.device.power import npu_smi_sensors

        return npu_smi_sensors(self.index or 0)


def _hf32_switch() -> Any:
    """``torch.npu.matmul`` when it has ``allow_hf32``, else None."""
    import torch

    switch = getattr(getattr(torch, "npu", None), "matmul", None)
    return switch if hasattr(switch, "allow_hf32") else None


# npu-smi "Key(unit) : value" lines -> our metric names.
NPU_SMI_KEYS = (
    (re.compile(r"^aicore\s*cur\s*freq", re.I), "clock_mhz"),
    (re.compile(r"^aicore\s*freq", re.I), "clock_mhz"),
    (re.compile(r"^(npu\s*real-time\s*)?power(\s*dissipation)?\s*\(w\)", re.I), "power_w"),
    (re.compile(r"^temperature", re.I), "temperature_c"),
)


def parse_npu_smi(text: str) -> dict[str, float]:
    """Metrics from ``npu-smi info -t ... -i ID`` output (one ``key : value`` pair a line).

    Patterns are tried in order, so the current AI-core clock wins over the nominal one.
    """
    pairs = []
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            pairs.append((key.strip(), value.strip()))
    out: dict[str, float] = {}
    for pattern, metric in NPU_SMI_KEYS:
        if metric in out:
            continue
        for key, value in pairs:
            if pattern.search(key):
                try:
                    out[metric] = float(value.split()[0])
                    break
                except (ValueError, IndexError):
                    continue
    return out


class NpuSmiTelemetry:
    """Ascend clocks, power and temperature from ``npu-smi`` (chip 0 of NPU ``npu_id``).

    Assumes torch's ``npu:N`` is npu-smi's NPU N, which holds unless ASCEND_RT_VISIBLE_DEVICES
    renumbers devices. npu-smi does not report throttle reasons.
    """

    name = "npu-smi"

    def __init__(self, *, npu_id: int) -> None:
        self.npu_id = npu_id
        self._tool = shutil.which("npu-smi")

    def read(self) -> dict[str, Any]:
        if self._tool is None:
            return {}
        out: dict[str, Any] = {}
        for kind in ("common", "power"):
            try:
                proc = subprocess.run(
                    [self._tool, "info", "-t", kind, "-i", str(self.npu_id)],
                    capture_output=True,
                    text=True,
                    timeout=NPU_SMI_TIMEOUT_S,
                )
            except (OSError, subprocess.SubprocessError) as exc:
                log.debug("npu-smi failed: %s", exc)
                continue
            for key, value in parse_npu_smi(proc.stdout).items():
                out.setdefault(key, value)
        return out

    def unavailable(self) -> dict[str, str]:
        if self._tool is None:
            from parity.device.telemetry import METRICS

            return {m: "npu-smi is not on PATH" for m in METRICS}
        return {
            "throttle_reasons": "npu-smi does not report throttle reasons",
            "memory_clock_mhz": "not read from npu-smi",
        }
