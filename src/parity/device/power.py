"""Power sensors a device can be read through, for energy over a timed window.

A source has a ``name`` (``rapl:package-0``, ``nvml:GPU-...``), a ``kind`` (``power``: ``read()``
returns watts now; ``energy``: ``read()`` returns a cumulative counter in joules, which wraps at
``wrap_j``) and returns None when it has nothing this time. ``parity.timing.energy`` stamps and
integrates the readings. Readers, by device:

- CPU: RAPL package domains, ``/sys/class/powercap/intel-rapl:N/energy_uj`` (µJ), wrapping at
  ``max_energy_range_uj``. Sub-domains (``intel-rapl:N:M``, inside the package) and ``psys``
  (the whole platform) are not summed, so nothing is counted twice.
- NVIDIA: NVML's total energy counter (mJ, Volta and later), else its power reading (mW).
- AMD: the amdgpu hwmon of the card (``power1_average`` or ``power1_input``, µW).
- Intel GPU: the i915 or xe hwmon's energy counter (``energy1_input``, µJ) of the only Intel card
  (torch.xpu reports no PCI address to choose among several).
- Ascend: ``npu-smi info -t power`` (W; a process per read, so readings are ~0.1 s apart).

``PowerSensors.unavailable`` says why a device has none. No figure is ever derived from a TDP or
a power limit.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from parity.device.sysfs import read_sysfs

log = logging.getLogger(__name__)

NPU_SMI_TIMEOUT_S = 5.0


class PowerSource(Protocol):
    """One sensor: ``read()`` is watts (``kind == "power"``) or a cumulative joule counter
    (``kind == "energy"``, wrapping at ``wrap_j``); None when nothing was read."""

    name: str
    kind: str
    wrap_j: float | None

    def read(self) -> float | None: ...


@dataclass(frozen=True)
class PowerSensors:
    """The sources of one device, or why there are none."""

    sources: tuple[Any, ...] = ()
    unavailable: str = ""

    def describe(self) -> str:
        """One line for provenance: what is read, or ``no power sensor readable: why``."""
        if self.sources:
            return "power read from " + ", ".join(f"{s.name} ({s.kind})" for s in self.sources)
        return f"no power sensor readable: {self.unavailable or 'no reader for this device'}"


class RaplDomain:
    """One RAPL package's energy counter (``energy_uj``, µJ) in joules."""

    kind = "energy"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = f"rapl:{read_sysfs(path / 'name') or path.name}"
        span = read_sysfs(path / "max_energy_range_uj")
        self.wrap_j: float | None = (int(span) + 1) * 1e-6 if span and span.isdigit() else None

    def read(self) -> float | None:
        text = read_sysfs(self.path / "energy_uj")
        return int(text) * 1e-6 if text and text.isdigit() else None


def rapl_sensors(*, sys_root: Path = Path("/sys")) -> PowerSensors:
    """The readable RAPL package domains under ``sys_root/class/powercap``, or why none."""
    powercap = sys_root / "class/powercap"
    if not powercap.is_dir():
        return PowerSensors(unavailable=f"no {powercap} (no RAPL powercap driver, or a VM that hides it)")
    tops = [p for p in sorted(powercap.glob("intel-rapl:*")) if p.name.count(":") == 1]
    tops = [p for p in tops if (read_sysfs(p / "name") or "") != "psys"]
    if not tops:
        return PowerSensors(unavailable=f"no RAPL package domain in {powercap}")
    domains = [RaplDomain(p) for p in tops]
    unreadable = [d.path.name for d in domains if d.read() is None]
    if unreadable:
        return PowerSensors(unavailable=(f"{powercap}/{unreadable[0]}/energy_uj is not readable by this user "
                                         "(root only since Linux 5.10); run as root or grant read access"))
    return PowerSensors(sources=tuple(domains))


class NvmlPower:
    """One NVIDIA GPU through NVML: the total energy counter (mJ) where the GPU has it, else
    the board power (mW)."""

    wrap_j: float | None = None

    def __init__(self, *, nvml: Any, handle: Any, label: str) -> None:
        self._nvml, self._handle = nvml, handle
        self.name = f"nvml:{label}"
        try:
            nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
            self.kind = "energy"
        except Exception:  # noqa: BLE001 - NVMLError_NotSupported before Volta
            self.kind = "power"

    def read(self) -> float | None:
        if self.kind == "energy":
            return float(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)) * 1e-3
        return float(self._nvml.nvmlDeviceGetPowerUsage(self._handle)) * 1e-3


def nvml_sensors(device: Any) -> PowerSensors:
    """NVML's energy or power reader for a torch CUDA device, or why none."""
    from parity.device.nvml import open_handle

    try:
        nvml, handle = open_handle(device)
    except ImportError:
        return PowerSensors(unavailable="pynvml is not installed; pip install nvidia-ml-py")
    except Exception as exc:  # noqa: BLE001 - NVMLError subclasses, missing driver
        return PowerSensors(unavailable=f"NVML unavailable: {exc}")
    source = NvmlPower(nvml=nvml, handle=handle, label=device.name)
    try:
        source.read()
    except Exception as exc:  # noqa: BLE001
        return PowerSensors(unavailable=f"NVML cannot read power of {device.name}: {exc}")
    return PowerSensors(sources=(source,))


class HwmonSensor:
    """One hwmon file in micro-units: a card's power (``power1_average`` / ``power1_input``, µW,
    ``kind="power"``) or its energy counter (``energy1_input``, µJ, ``kind="energy"``; 64 bits,
    no wrap), read in W or J."""

    wrap_j: float | None = None

    def __init__(self, path: Path, *, name: str, kind: str) -> None:
        self.path, self.name, self.kind = path, name, kind

    def read(self) -> float | None:
        text = read_sysfs(self.path)
        return int(text) * 1e-6 if text and text.isdigit() else None


def amdgpu_sensors(device: Any, *, sys_root: Path = Path("/sys")) -> PowerSensors:
    """The amdgpu hwmon power file of a ROCm device's card (``parity.device.amdgpu_sysfs.card_of``:
    matched by PCI address where torch gives it, else the only AMD card); or why none."""
    from parity.device.amdgpu_sysfs import amd_cards, card_of, pci_address

    card = card_of(pci_address(device), amd_cards(sys_root=sys_root), name=str(device.name))
    if isinstance(card, str):
        return PowerSensors(unavailable=card)
    address, folder = card
    power = next((h / f for h in sorted(folder.glob("hwmon/hwmon*")) if read_sysfs(h / "name") == "amdgpu"
                  for f in ("power1_average", "power1_input") if (h / f).exists()), None)
    return _hwmon_sensors(power, missing=f"no amdgpu hwmon power file under {folder}",
                          name=f"amdgpu-hwmon:{address}", kind="power")


def intel_gpu_sensors(*, sys_root: Path = Path("/sys")) -> PowerSensors:
    """The energy counter of the only Intel GPU's hwmon, or why none."""
    from parity.device.intel_sysfs import only_intel_card

    chosen = only_intel_card(sys_root=sys_root)
    if isinstance(chosen, str):
        return PowerSensors(unavailable=chosen)
    address, card = chosen
    counter = next((h / "energy1_input" for h in sorted(card.glob("device/hwmon/hwmon*"))
                    if (h / "energy1_input").exists()), None)
    return _hwmon_sensors(counter, missing=f"no hwmon energy1_input under {card}/device",
                          name=f"intel-hwmon:{address}", kind="energy")


def _hwmon_sensors(path: Path | None, *, missing: str, name: str, kind: str) -> PowerSensors:
    """One hwmon file as the device's sensor, or why none: ``missing`` when it is absent."""
    if path is None:
        return PowerSensors(unavailable=missing)
    source = HwmonSensor(path, name=name, kind=kind)
    if source.read() is None:
        return PowerSensors(unavailable=f"{path} is not readable (some kernels let only root read it)")
    return PowerSensors(sources=(source,))


NPU_SMI_POWER = re.compile(r"^(npu\s*real-time\s*)?power(\s*dissipation)?\s*\(w\)\s*:\s*([0-9.]+)", re.I | re.M)


def parse_npu_smi_power(text: str) -> float | None:
    """Watts from ``npu-smi info -t power -i ID`` output (``Power Dissipation(W) : 72.3``, or
    ``NPU Real-time Power(W) : 72.3``); None when no such line."""
    match = NPU_SMI_POWER.search(text)
    return float(match.group(3)) if match else None


class NpuSmiPower:
    """One Ascend NPU's power (W) from ``npu-smi info -t power -i ID``."""

    kind = "power"
    wrap_j: float | None = None

    def __init__(self, *, tool: str, npu_id: int) -> None:
        self.tool, self.npu_id = tool, npu_id
        self.name = f"npu-smi:{npu_id}"

    def read(self) -> float | None:
        proc = subprocess.run([self.tool, "info", "-t", "power", "-i", str(self.npu_id)],
                              capture_output=True, text=True, timeout=NPU_SMI_TIMEOUT_S, check=False)
        return parse_npu_smi_power(proc.stdout)


def npu_smi_sensors(npu_id: int) -> PowerSensors:
    """``npu-smi``'s power reading for NPU ``npu_id``, or why none."""
    tool = shutil.which("npu-smi")
    if tool is None:
        return PowerSensors(unavailable="npu-smi is not on PATH")
    source = NpuSmiPower(tool=tool, npu_id=npu_id)
    try:
        if source.read() is None:
            return PowerSensors(unavailable=f"npu-smi reports no power for NPU {npu_id}")
    except (OSError, subprocess.SubprocessError) as exc:
        return PowerSensors(unavailable=f"npu-smi failed: {exc}")
    return PowerSensors(sources=(source,))


class ScriptedPower:
    """Readings from a script, for tests: each ``read()`` returns the next value (the last one
    repeats); a None in the script is a read that returned nothing, an exception instance is
    raised."""

    def __init__(self, script: list[Any], *, kind: str = "power", wrap_j: float | None = None,
                 name: str = "scripted") -> None:
        self.name, self.kind, self.wrap_j = name, kind, wrap_j
        self._script, self._next = script, 0

    def read(self) -> float | None:
        value = self._script[min(self._next, len(self._script) - 1)]
        self._next += 1
        if isinstance(value, BaseException):
            raise value
        return value
