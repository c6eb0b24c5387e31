"""Provenance: where, on what and how a measurement was taken, collected automatically.

Everything a run records: host (CPU model, architecture, cores, NUMA, affinity and pinning,
the CPU flags that change results), OS, Python, torch and backend versions (CUDA, ROCm, CANN),
drivers where readable, the device with its properties, clocks and power limit, parity's version
and git revision, the command line, relevant environment variables, the UTC time, and the
machine's load at the start (``load.start``; the runner adds ``load.end`` when the run ends), and
the settings that decide results (``setup``: clock policy and locks, ECC, partitioning, power
caps, interconnect; ``parity.device.conditions``).
Works without torch (it then says so); nothing here raises for a missing fact.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import platform
import re
import subprocess
import sys
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parity.device import host
from parity.device.base import module_available
from parity.device.conditions import setup_conditions
from parity.device.load import load_now

if TYPE_CHECKING:  # pragma: no cover
    from parity.device.base import Device

log = logging.getLogger(__name__)

# Variables read by the communication libraries (NCCL/RCCL, HCCL, NVSHMEM, gloo, UCX/UCC,
# libfabric, MSCCL, MPI, DeepEP): one of them can change a collective's algorithm, protocol,
# transport or buffers, and so its figures. Recorded by the run and by every rank.
COMM_ENV_PREFIXES = (
    "NCCL_",
    "RCCL_",
    "HCCL_",
    "NVSHMEM_",
    "GLOO_",
    "TORCH_NCCL_",
    "TORCH_GLOO_",
    "UCX_",
    "UCC_",
    "TORCH_UCC_",
    "FI_",
    "MSCCL_",
    "MSCCLPP_",
    "OMPI_MCA_",
    "I_MPI_",
    "DEEP_EP_",
    "CCL_",
    "TORCH_XCCL_",
)
ENV_PREFIXES = (
    *COMM_ENV_PREFIXES,
    "PYTORCH_",
    "TORCH_",
    "TORCHINDUCTOR_",
    "CUDA_",
    "CUBLAS_",
    "CUDNN_",
    "NVIDIA_",
    "HIP_",
    "ROCR_",
    "ROCM_",
    "HSA_",
    "MIOPEN_",
    "ROCBLAS_",
    "HIPBLASLT_",
    "ZE_",
    "SYCL_",
    "ONEAPI_",
    "ASCEND_",
    "ACL_",
    "TASK_QUEUE_ENABLE",
    "CPU_AFFINITY_CONF",
    "OMP_",
    "MKL_",
    "KMP_",
    "GOMP_",
    "ONEDNN_",
    "DNNL_",
    "TRITON_",
    "VLLM_",
    "SGLANG_",
    "PARITY_",
    "MASTER_",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "RANK",
)
SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "KEY", "CREDENTIAL")
ASCEND_ROOTS = (Path("/usr/local/Ascend"),)


def collect_provenance(
    device: Device | None = None, *, argv: list[str] | None = None
) -> dict[str, Any]:
    """A JSON-ready record of the conditions of a run (see the module docstring)."""
    from parity import __version__

    return {
        "time_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": {"hostname": platform.node(), **host.host_summary()},
        "os": os_info(),
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "torch": torch_info(),
        "drivers": driver_versions(),
        "device": device_info(device),
        "parity": {"version": __version__, **git_revision()},
        "command_line": list(argv if argv is not None else sys.argv),
        "environment": relevant_environment(),
        "load": {"start": load_now()},
        "setup": setup_conditions(device),
    }


def os_info() -> dict[str, Any]:
    """Kernel, release and the distribution's pretty name from ``/etc/os-release``."""
    info: dict[str, Any] = {
        "system": platform.system(),
        "release": platform.release(),
        "version": platform.version(),
    }
    try:
        text = Path("/etc/os-release").read_text()
        match = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', text, flags=re.MULTILINE)
        if match:
            info["distribution"] = match.group(1)
    except OSError:
        pass
    return info


def torch_info() -> dict[str, Any]:
    """torch's version and the backend toolkits it was built with; says when torch is absent."""
    if not module_available("torch"):
        return {"installed": False, "reason": "torch is not installed; pip install 'parity[bench]'"}
    import torch

    info: dict[str, Any] = {
        "installed": True,
        "version": str(torch.__version__),
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "git_version": getattr(torch.version, "git_version", None),
        "threads": torch.get_num_threads(),
        "cpu_capability": _cpu_capability(torch),
    }
    if torch.version.cuda is not None and torch.backends.cudnn.is_available():
        info["cudnn"] = torch.backends.cudnn.version()
    nccl = _safe(lambda: ".".join(str(v) for v in torch.cuda.nccl.version()))
    if nccl and (torch.version.cuda or torch.version.hip):
        info["nccl"] = nccl
    info["torch_npu"] = distribution_version("torch_npu", "torch-npu")
    info["cann"] = cann_version()
    return info


def _cpu_capability(torch: Any) -> str | None:
    """The SIMD level torch's CPU kernels dispatch to (``AVX512``, ``AVX2``, ``DEFAULT``...)."""
    return _safe(lambda: torch.backends.cpu.get_cpu_capability())


def _safe(fn: Any) -> Any:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - a fact we cannot read is recorded as missing
        log.debug("provenance fact unavailable: %s", exc)
        return None


def distribution_version(*names: str) -> str | None:
    """The installed version of the first distribution among ``names``; None when none is."""
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def cann_version() -> str | None:
    """The Ascend CANN toolkit version from its ``version.cfg``/``version.info``; None if absent."""
    roots = [
        Path(p)
        for p in (os.environ.get("ASCEND_TOOLKIT_HOME"), os.environ.get("ASCEND_HOME_PATH"))
        if p
    ]
    roots += [r / "ascend-toolkit" / "latest" for r in ASCEND_ROOTS]
    for root in roots:
        for name in (
            "version.cfg",
            "version.info",
            "compiler/version.info",
            "runtime/version.info",
        ):
            version = _version_from_file(root / name)
            if version:
                return version
    return None


def _version_from_file(path: Path) -> str | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    match = re.search(r"version\s*[=:]\s*\[?([\w.\-]+)", text, flags=re.IGNORECASE)
    return match.group(1) if match else None


def driver_versions() -> dict[str, str]:
    """Kernel driver versions readable without privileges (NVIDIA, AMD, Ascend)."""
    found: dict[str, str] = {}
    nvidia = _first_line(Path("/proc/driver/nvidia/version"))
    if nvidia:
        match = re.search(r"Kernel Module\s+(?:for \S+\s+)?([\d.]+)", nvidia)
        found["nvidia"] = match.group(1) if match else nvidia
    amd = _first_line(Path("/sys/module/amdgpu/version"))
    if amd:
        found["amdgpu"] = amd
    for root in ASCEND_ROOTS:
        version = _version_from_file(root / "driver" / "version.info")
        if version:
            found["ascend"] = version
    return found


def _first_line(path: Path) -> str | None:
    try:
        return path.read_text().splitlines()[0].strip()
    except (OSError, IndexError):
        return None


def device_info(device: Device | None) -> dict[str, Any]:
    """The selected device, its properties, how many of its type exist, clocks and power limit."""
    if device is None:
        return {"selected": None}
    info: dict[str, Any] = {"selected": device.name, "type": device.type}
    try:
        info["properties"] = device.properties().to_dict()
    except Exception as exc:  # noqa: BLE001
        info["properties"] = {"unavailable": f"{type(exc).__name__}: {exc}"}
    info["count"] = _device_count(device)
    info["power"] = _safe(lambda: device.power_sensors().describe())
    if device.type == "cuda" and not getattr(device, "is_rocm", False):
        from parity.device.nvml import static_info

        info["nvml"] = static_info(device)
    return info


def _device_count(device: Device) -> int | None:
    if device.type in ("cpu", "fake", "mps"):
        return 1
    module = _safe(lambda: device.module())  # type: ignore[attr-defined]
    return _safe(lambda: int(module.device_count())) if module is not None else None


def git_revision() -> dict[str, Any]:
    """parity's git commit and whether the tree is modified, when run from a git checkout."""
    package_dir = Path(__file__).resolve().parents[1]
    root = next((p for p in package_dir.parents if (p / ".git").exists()), None)
    if root is None:
        return {"git_revision": None, "git_reason": "not running from a git checkout"}
    try:
        revision = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return {"git_revision": None, "git_reason": f"git failed: {exc}"}
    if revision.returncode != 0:
        return {
            "git_revision": None,
            "git_reason": (revision.stderr.strip().splitlines() or ["git failed"])[0],
        }
    return {"git_revision": revision.stdout.strip(), "git_dirty": bool(status.stdout.strip())}


def relevant_environment(
    environ: Mapping[str, str] | None = None, *, prefixes: tuple[str, ...] = ENV_PREFIXES
) -> dict[str, str]:
    """Variables that change results (NCCL_*, HCCL_*, PYTORCH_*, CUDA_VISIBLE_DEVICES, OMP_*...;
    ``prefixes`` chooses them).

    Values of names that look like secrets (``*TOKEN*``, ``*KEY*``...) are replaced by
    ``<redacted>``.
    """
    env = os.environ if environ is None else environ
    out = {}
    for name in sorted(env):
        if name.startswith(prefixes):
            secret = any(word in name.upper() for word in SECRET_WORDS)
            out[name] = "<redacted>" if secret else env[name]
    return out
