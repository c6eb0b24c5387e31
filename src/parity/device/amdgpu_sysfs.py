"""An AMD GPU's settings that decide results, read from the amdgpu driver's sysfs files and the
KFD topology: the same facts NVML gives parity on NVIDIA (``parity.device.nvml_conditions``), no
subprocess and no library.

- card: the ``/sys/class/drm/cardN/device`` folder of the measured GPU, matched by PCI address
  where torch reports one, else the only AMD card;
- clocks: ``power_dpm_force_performance_level`` (``auto``, or a forced level: ``high``,
  ``manual``, ``profile_peak``, ``perf_determinism`` ...), the SCLK and MCLK levels of
  ``pp_dpm_sclk`` / ``pp_dpm_mclk``, and a user's SCLK range in ``pp_od_clk_voltage``
  (``OD_SCLK``) against the range the card allows (``OD_RANGE``);
- ECC: ``ras/features`` (``feature mask: 0x...``; bit 0 is the memory controllers, UMC) and
  the memory errors counted in ``ras/umc_err_count`` (``ue: N`` / ``ce: N``);
- partitioning: ``current_compute_partition`` (SPX, DPX, CPX ...) and
  ``current_memory_partition`` (NPS1, NPS4 ...) where the card has them;
- power cap: the hwmon's ``power1_cap`` against ``power1_cap_default`` (µW, written in W);
- interconnect: XGMI links of the card's KFD topology node (io link type 11) and the XGMI hive,
  and the PCIe link of its PCI device (``current_link_speed`` / ``current_link_width`` against
  the maximum).

A file that is absent or unreadable is recorded as ``not readable: ...``, never guessed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from parity.device.sysfs import drm_cards, hwmon_watts, not_readable, pcie_link, read_sysfs

SYS = Path("/sys")
AMD_VENDOR = "0x1002"
UMC_BIT = 1 << 0  # AMDGPU_RAS_BLOCK__UMC: ECC of the GPU's memory
XGMI_LINK_TYPE = 11  # CRAT_IOLINK_TYPE_XGMI in the KFD topology's io_links
LEVEL = re.compile(r"^\s*\d+:\s*(\d+)\s*mhz\s*(\*)?\s*$", re.IGNORECASE)
FORCED = {
    "auto": "not locked",
    "high": "forced to the highest clocks",
    "low": "forced to the lowest clocks",
    "manual": "levels chosen by hand",
    "profile_standard": "fixed profiling clocks (profile_standard)",
    "profile_peak": "fixed peak clocks (profile_peak)",
    "profile_min_sclk": "SCLK at its minimum (profile_min_sclk)",
    "profile_min_mclk": "MCLK at its minimum (profile_min_mclk)",
    "perf_determinism": "determinism mode: SCLK capped at a set frequency",
}


def amd_cards(*, sys_root: Path = SYS) -> list[tuple[str, Path]]:
    """``(PCI address, device folder)`` of every AMD card (vendor 0x1002), in card order."""
    return [(address, card / "device") for address, card in drm_cards(AMD_VENDOR, sys_root=sys_root)]


def pci_address(device: Any) -> str | None:
    """``bb:dd.0``, the end of the device's PCI address where torch reports its bus, else None."""
    try:
        import torch

        props = torch.cuda.get_device_properties(getattr(device, "index", 0) or 0)
    except Exception:  # noqa: BLE001 - no torch, no ROCm build, a device gone
        return None
    bus, dev = getattr(props, "pci_bus_id", None), getattr(props, "pci_device_id", None)
    return f"{int(bus):02x}:{int(dev):02x}.0" if bus is not None and dev is not None else None


def card_of(address: str | None, cards: list[tuple[str, Path]], *, name: str) -> tuple[str, Path] | str:
    """The card at ``address`` (a suffix of its PCI address), else the only card, or why none is
    chosen."""
    if not cards:
        return "no AMD card (vendor 0x1002) under /sys/class/drm"
    chosen = [c for c in cards if address is not None and c[0].lower().endswith(address)]
    if chosen or len(cards) == 1:
        return (chosen or cards)[0]
    where = f"none at PCI address {address}" if address else "no PCI bus id"
    return f"{len(cards)} AMD cards and {where} to tell which is {name}"


def amdgpu_conditions(device: Any, *, sys_root: Path = SYS) -> dict[str, Any] | str:
    """The settings of the AMD GPU measured (see the module docstring), or why its card was not found."""
    card = card_of(pci_address(device), amd_cards(sys_root=sys_root), name=str(getattr(device, "name", device)))
    if isinstance(card, str):
        return not_readable(card)
    address, folder = card
    return read_card(folder, address=address, kfd=sys_root / "class" / "kfd" / "kfd" / "topology" / "nodes")


def read_card(folder: Path, *, address: str, kfd: Path) -> dict[str, Any]:
    """The settings of the card whose PCI device folder is ``folder``."""
    return {"card": address, "clocks": clocks(folder), "ecc": ecc(folder), "partition": partition(folder),
            "power_cap": power_cap(folder), "interconnect": interconnect(folder, address, kfd)}


def dpm_levels(text: str | None) -> tuple[list[int], int | None]:
    """The MHz of each level of a ``pp_dpm_*`` file and the current one (marked ``*``)."""
    levels, current = [], None
    for line in (text or "").splitlines():
        match = LEVEL.match(line)
        if match:
            levels.append(int(match.group(1)))
            if match.group(2):
                current = levels[-1]
    return levels, current


def od_sclk(text: str | None) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """The user's SCLK range (``OD_SCLK``) and the range allowed (``OD_RANGE``'s ``SCLK``), MHz."""
    section, chosen, allowed = "", [], None
    for line in (text or "").splitlines():
        stripped = line.strip()
        if stripped.endswith(":") and stripped[:-1].isupper():
            section = stripped[:-1]
            continue
        numbers = [int(n) for n in re.findall(r"(\d+)\s*mhz", stripped, re.IGNORECASE)]
        if section == "OD_SCLK" and len(numbers) == 1:
            chosen.append(numbers[0])
        elif section == "OD_RANGE" and stripped.upper().startswith("SCLK") and len(numbers) == 2:
            allowed = (numbers[0], numbers[1])
    return ((min(chosen), max(chosen)) if chosen else None), allowed


def clocks(folder: Path) -> dict[str, Any] | str:
    """The performance level, the SCLK and MCLK levels and the clock lock they add up to."""
    level = read_sysfs(folder / "power_dpm_force_performance_level")
    if level is None:
        return not_readable(f"no {folder}/power_dpm_force_performance_level")
    sclk, _ = dpm_levels(read_sysfs(folder / "pp_dpm_sclk"))
    mclk, _ = dpm_levels(read_sysfs(folder / "pp_dpm_mclk"))
    chosen, allowed = od_sclk(read_sysfs(folder / "pp_od_clk_voltage"))
    return {"performance_level": level, "sclk_levels_mhz": sclk, "mclk_levels_mhz": mclk,
            "od_sclk_mhz": list(chosen) if chosen else None, "lock": dpm_lock(level, sclk, chosen, allowed)}


def dpm_lock(level: str, sclk: list[int], chosen: tuple[int, int] | None,
             allowed: tuple[int, int] | None) -> str:
    """``not locked (SCLK 500-2100 MHz)``, ``SCLK capped at 1500 MHz (allowed 500-2100 MHz)``,
    ``fixed peak clocks (profile_peak)``, or the forced level as the driver names it."""
    text = FORCED.get(level, f"performance level {level}")
    if chosen and allowed and (chosen[1] < allowed[1] or chosen[0] > allowed[0]):
        cap = (f"SCLK capped at {chosen[1]} MHz" if chosen[0] <= allowed[0] else
               f"SCLK held at {chosen[0]}-{chosen[1]} MHz")
        return f"{cap} (allowed {allowed[0]}-{allowed[1]} MHz)" + ("" if level == "auto" else f"; {text}")
    if level == "auto":
        return f"not locked (SCLK {min(sclk)}-{max(sclk)} MHz)" if sclk else "not locked"
    return text


def ecc(folder: Path) -> dict[str, Any] | str:
    """Whether RAS covers the memory (``ras/features`` bit 0, UMC) and its error counts."""
    features = read_sysfs(folder / "ras" / "features")
    match = re.search(r"0x([0-9a-f]+)", features or "", re.IGNORECASE)
    if match is None:
        return not_readable(f"no {folder}/ras/features (the driver exposes no RAS here; amdgpu.ras_enable=0 "
                            "or a card without it)")
    mask = int(match.group(1), 16)
    counts = dict(re.findall(r"^\s*(\w+):\s*(\d+)\s*$", read_sysfs(folder / "ras" / "umc_err_count") or "", re.MULTILINE))
    return {"source": "amdgpu ras", "memory": "on" if mask & UMC_BIT else "off", "feature_mask": f"0x{mask:x}",
            "uncorrected": int(counts["ue"]) if "ue" in counts else None,
            "corrected": int(counts["ce"]) if "ce" in counts else None}


def partition(folder: Path) -> str:
    """``compute SPX, memory NPS1``; ``not partitioned`` where the card has no partition files."""
    compute = read_sysfs(folder / "current_compute_partition")
    memory = read_sysfs(folder / "current_memory_partition")
    if compute is None and memory is None:
        return "not partitioned (no current_compute_partition or current_memory_partition)"
    return f"compute {compute or 'not readable'}, memory {memory or 'not readable'}"


def power_cap(folder: Path) -> dict[str, float | str] | str:
    """The hwmon's power cap and its default (W), and the highest the card allows."""
    hwmon = next((h for h in sorted(folder.glob("hwmon/hwmon*")) if (h / "power1_cap").exists()), None)
    if hwmon is None:
        return not_readable(f"no hwmon power1_cap under {folder}")
    return hwmon_watts(hwmon, {"limit_w": "power1_cap", "default_w": "power1_cap_default", "max_w": "power1_cap_max"})


def interconnect(folder: Path, address: str, kfd: Path) -> dict[str, Any]:
    """XGMI links and hive, and the PCIe link (current and maximum generation and width)."""
    pcie = pcie_link(folder)
    hive = read_sysfs(folder / "xgmi_hive_info" / "xgmi_hive_id")
    return {"xgmi_links": xgmi_links(kfd, address), "xgmi_hive": hive if hive and hive != "0" else None,
            "pcie": pcie}


def parse_properties(text: str | None) -> dict[str, str]:
    """A KFD ``properties`` file's text: one ``name value`` a line."""
    pairs = (line.split(None, 1) for line in (text or "").splitlines())
    return {p[0]: p[1].strip() for p in pairs if len(p) == 2}


def location_id(address: str) -> tuple[int, int] | None:
    """``(domain, location_id)`` of a PCI address ``dddd:bb:dd.f``: KFD's ``bus << 8 | dev << 3 | fn``."""
    match = re.fullmatch(r"(?:([0-9a-f]{4,}):)?([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])", address.lower())
    if match is None:
        return None
    domain, bus, dev, fn = (int(g, 16) if g else 0 for g in match.groups())
    return domain, bus << 8 | dev << 3 | fn


def xgmi_links(kfd: Path, address: str) -> int | str:
    """XGMI io links of the KFD topology node of the GPU at ``address`` (0: PCIe only)."""
    where = location_id(address)
    nodes = sorted(kfd.glob("*/properties")) if kfd.is_dir() else []
    if where is None or not nodes:
        return not_readable(f"no KFD topology node for {address} under {kfd}")
    for properties in nodes:
        node = parse_properties(read_sysfs(properties))
        if node.get("gpu_id", "0") == "0" or node.get("location_id") != str(where[1]):
            continue
        if node.get("domain", "0") != str(where[0]):
            continue
        links = sorted(properties.parent.glob("io_links/*/properties"))
        return sum(1 for link in links if parse_properties(read_sysfs(link)).get("type") == str(XGMI_LINK_TYPE))
    return not_readable(f"no KFD topology node for {address} under {kfd}")


class AmdgpuTelemetry:
    """The card's clocks, power and temperature during a measurement, from its amdgpu hwmon:
    ``freq1_input`` / ``freq2_input`` (Hz; SCLK and MCLK; else the current ``pp_dpm_sclk`` /
    ``pp_dpm_mclk`` level), ``power1_average`` or ``power1_input`` (µW) and the ``junction``
    temperature (else ``edge``, else ``temp1``; m°C). Throttle reasons are not read: the driver
    gives them only inside its binary ``gpu_metrics`` table."""

    name = "amdgpu-sysfs"

    def __init__(self, *, device: Any, sys_root: Path = SYS) -> None:
        from parity.device.telemetry import METRICS

        card = card_of(pci_address(device), amd_cards(sys_root=sys_root), name=str(getattr(device, "name", device)))
        self._reasons: dict[str, str] = {"throttle_reasons": "amdgpu gives throttle status only in its binary "
                                                             "gpu_metrics table, which parity does not read"}
        self._folder: Path | None = None
        self._hwmon: Path | None = None
        self._temperature: Path | None = None
        if isinstance(card, str):
            self._reasons = {metric: card for metric in METRICS}
            return
        self._folder = card[1]
        self._hwmon = next((h for h in sorted(self._folder.glob("hwmon/hwmon*")) if read_sysfs(h / "name") == "amdgpu"),
                           None)
        self._temperature = self._temperature_file()

    def _temperature_file(self) -> Path | None:
        if self._hwmon is None:
            return None
        labels = {read_sysfs(p): p.with_name(p.name.replace("_label", "_input")) for p in self._hwmon.glob("temp*_label")}
        for label in ("junction", "edge"):
            if label in labels:
                return labels[label]
        first = self._hwmon / "temp1_input"
        return first if first.exists() else None

    def read(self) -> dict[str, Any]:
        if self._folder is None:
            return {}
        out: dict[str, Any] = {}
        for metric, hz_file, levels in (("clock_mhz", "freq1_input", "pp_dpm_sclk"),
                                        ("memory_clock_mhz", "freq2_input", "pp_dpm_mclk")):
            hz = read_sysfs(self._hwmon / hz_file) if self._hwmon is not None else None
            mhz = int(hz) / 1e6 if hz and hz.isdigit() else dpm_levels(read_sysfs(self._folder / levels))[1]
            if mhz is not None:
                out[metric] = float(mhz)
        hwmon = self._hwmon
        power = next((read_sysfs(hwmon / f) for f in ("power1_average", "power1_input") if (hwmon / f).exists()),
                     None) if hwmon is not None else None
        if power and power.isdigit():
            out["power_w"] = int(power) / 1e6
        temperature = read_sysfs(self._temperature) if self._temperature is not None else None
        if temperature and temperature.lstrip("-").isdigit():
            out["temperature_c"] = int(temperature) / 1000.0
        return out

    def unavailable(self) -> dict[str, str]:
        reasons = dict(self._reasons)
        if self._folder is not None:
            where = self._hwmon or self._folder
            reasons.setdefault("power_w", f"no readable power1_average or power1_input under {where}")
            reasons.setdefault("temperature_c", f"no readable junction, edge or temp1 temperature under {where}")
            reasons.setdefault("clock_mhz", f"no readable freq1_input or current pp_dpm_sclk level under {where}")
            reasons.setdefault("memory_clock_mhz", f"no readable freq2_input or current pp_dpm_mclk level under {where}")
        return reasons
