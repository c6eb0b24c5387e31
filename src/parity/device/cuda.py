"""``cuda``: NVIDIA GPUs and AMD GPUs (ROCm builds of torch also answer to ``torch.cuda``)."""

from __future__ import annotations

import logging
from typing import Any

from parity.device.accelerator import TorchAcceleratorDevice, torch_version
from parity.device.base import DeviceProperties, register_backend

log = logging.getLogger(__name__)

# Captures of the work run on a side stream before a graph capture, as torch's docs advise,
# so lazy initialisation (cuBLAS handles, workspaces) happens outside the graph.
GRAPH_WARMUP_CALLS = 3


@register_backend
class CudaDevice(TorchAcceleratorDevice):
    """``cuda:N``: device events, CUDA graphs, NVML telemetry on NVIDIA; collectives through
    NCCL (RCCL on ROCm, registered under the same name)."""

    type = "cuda"
    supports_graphs = True

    @classmethod
    def unusable_reason(cls, index: int | None) -> str | None:
        version = torch_version()
        if version is None:
            return "PyTorch is not installed; pip install 'parity[bench]'"
        import torch

        if torch.version.cuda is None and torch.version.hip is None:
            return f"torch {version} has no CUDA or ROCm"
        if not torch.cuda.is_available():
            build = (
                f"CUDA {torch.version.cuda}" if torch.version.cuda else f"ROCm {torch.version.hip}"
            )
            return f"torch {version} ({build}) sees no GPU (driver missing or devices hidden)"
        count = torch.cuda.device_count()
        if index is not None and not 0 <= index < count:
            return f"torch {version} sees {count} GPU(s): cuda:0..cuda:{count - 1}"
        return None

    @property
    def is_rocm(self) -> bool:
        import torch

        return torch.version.hip is not None

    def architecture(self) -> str:
        """``gfx942``-style names on ROCm (with feature flags, as ``gcnArchName`` gives them),
        ``sm_90``-style names on NVIDIA."""
        import torch

        if self.is_rocm:
            props = torch.cuda.get_device_properties(self.index)
            return str(getattr(props, "gcnArchName", "") or "gfx-unknown")
        major, minor = torch.cuda.get_device_capability(self.index)
        return f"sm_{major}{minor}"

    def compute_capability(self) -> tuple[int, int] | None:
        """(major, minor) on NVIDIA; None on ROCm, whose capability numbers are not NVIDIA's."""
        import torch

        if self.is_rocm:
            return None
        major, minor = torch.cuda.get_device_capability(self.index)
        return int(major), int(minor)

    def reduced_fp32_matmul_reason(self) -> str | None:
        """TF32 needs compute capability 8.0 (Ampere) on NVIDIA; ROCm builds accept the switch."""
        capability = self.compute_capability()
        if capability is None or capability[0] >= 8:
            return None
        return f"tf32 needs compute capability 8.0 or newer; {self.name} has {capability[0]}.x"

    def properties(self) -> DeviceProperties:
        import torch

        props = torch.cuda.get_device_properties(self.index)
        extra: dict[str, Any] = {
            "capability": f"{props.major}.{props.minor}",
            "warp_size": getattr(props, "warp_size", None),
            "memory_bus_width_bits": getattr(props, "memory_bus_width", None),
            "shared_memory_per_multiprocessor_bytes": getattr(
                props, "shared_memory_per_multiprocessor", None
            ),
            "uuid": str(getattr(props, "uuid", "")) or None,
        }
        if self.is_rocm:
            extra["gcn_arch"] = getattr(props, "gcnArchName", None)
        clock_khz = getattr(props, "clock_rate", 0) or 0
        l2 = getattr(props, "L2_cache_size", 0) or None
        return DeviceProperties(
            name=props.name,
            vendor="AMD" if self.is_rocm else "NVIDIA",
            type=self.type,
            compute_units=props.multi_processor_count,
            compute_unit_kind="CUs" if self.is_rocm else "SMs",
            memory_bytes=props.total_memory,
            l2_bytes=l2,
            llc_bytes=l2,
            clock_max_mhz=clock_khz / 1000.0 if clock_khz else None,
            extra=extra,
        )

    def telemetry_sources(self) -> list[Any]:
        if self.is_rocm:
            from parity.device.amdgpu_sysfs import AmdgpuTelemetry

            return [AmdgpuTelemetry(device=self)]
        from parity.device.nvml import NvmlTelemetry

        return [NvmlTelemetry(device=self)]

    def power_sensors(self) -> Any:
        """NVML's energy counter or power (NVIDIA), the amdgpu hwmon power file (ROCm)."""
        from parity.device.power import amdgpu_sensors, nvml_sensors

        return amdgpu_sensors(self) if self.is_rocm else nvml_sensors(self)

    def graph_replay(self, fn: Any, *, calls: int) -> Any:
        """Capture ``calls`` invocations of ``fn()`` into one CUDA graph; return its ``replay``.

        Replaying launches all captured kernels with one host call, so per-call launch overhead
        disappears: the figure is the device's time per call, a lower bound on eager timing.
        """
        import torch

        side = torch.cuda.Stream(self.index)
        side.wait_stream(torch.cuda.current_stream(self.index))
        with torch.cuda.stream(side):
            for _ in range(GRAPH_WARMUP_CALLS):
                fn()
        torch.cuda.current_stream(self.index).wait_stream(side)
        self.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
        self.synchronize()
        return graph.replay
