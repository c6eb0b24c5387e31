"""Reading sysfs for the settings readers (``parity.device.conditions`` for the host,
``amdgpu_sysfs`` and ``intel_sysfs`` for GPUs): a file's text, the recorded form of what could
not be read, a PCI device's PCIe link, and the wording of a clock range's lock."""

from __future__ import annotations

import re
from pathlib import Path


def not_readable(why: str) -> str:
    """The recorded form of a fact that could not be read."""
    return f"not readable: {why}"


def read_sysfs(path: Path) -> str | None:
    """A sysfs file's text, stripped; None when it is absent or unreadable."""
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


PCIE_GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}  # GT/s per lane -> generation


def pcie_generation(speed: str | None) -> int | None:
    """PCIe generation of a link speed as sysfs writes it (``32.0 GT/s PCIe``, ``8 GT/s``)."""
    match = re.match(r"\s*([\d.]+)\s*GT/s", speed or "")
    return PCIE_GENERATIONS.get(float(match.group(1))) if match else None


def pcie_link(folder: Path) -> dict[str, int | None]:
    """The PCIe link of the PCI device at ``folder``: current and maximum generation and width."""
    def width(name: str) -> int | None:
        text = read_sysfs(folder / name)
        return int(text) if text and text.isdigit() else None

    return {"generation": pcie_generation(read_sysfs(folder / "current_link_speed")), "width": width("current_link_width"),
            "max_generation": pcie_generation(read_sysfs(folder / "max_link_speed")), "max_width": width("max_link_width")}


def clock_lock(limits: set[tuple[int | None, ...]], *, units: str = "CPUs",
               missing: str = "no scaling_min_freq/scaling_max_freq") -> str:
    """``locked at 2400 MHz``, ``capped at 2000 MHz (hardware 3500 MHz)``, ``not locked
    (800-3500 MHz)``, or not readable (``missing`` says which files), from ``(min, max, hardware
    min, hardware max)`` in kHz; ``differs between CPUs`` (``units``) when they disagree."""
    if len(limits) > 1:
        return f"differs between {units}: " + "; ".join(clock_lock({one}, missing=missing)
                                                         for one in sorted(limits, key=repr))
    low, high, hw_low, hw_high = next(iter(limits)) if limits else (None,) * 4
    if low is None or high is None:
        return not_readable(missing)
    if low == high:
        return f"locked at {low / 1000:.0f} MHz"
    if hw_high is not None and high < hw_high:
        return f"capped at {high / 1000:.0f} MHz (hardware {hw_high / 1000:.0f} MHz)"
    return f"not locked ({low / 1000:.0f}-{high / 1000:.0f} MHz)"


def hwmon_watts(hwmon: Path, files: dict[str, str]) -> dict[str, float | str]:
    """Key -> W of each hwmon file named (µW as the kernel writes it), or not readable."""
    out: dict[str, float | str] = {}
    for key, name in files.items():
        text = read_sysfs(hwmon / name)
        out[key] = int(text) / 1e6 if text and text.isdigit() else not_readable(f"no {hwmon.name}/{name}")
    return out


CARD = re.compile(r"card\d+$")  # a card, not one of its connectors (card0-DP-1)


def drm_cards(vendor: str, *, sys_root: Path = Path("/sys")) -> list[tuple[str, Path]]:
    """``(PCI address, /sys/class/drm/cardN)`` of every card whose PCI vendor is ``vendor``
    (``0x1002`` AMD, ``0x8086`` Intel), in card order."""
    drm = sys_root / "class" / "drm"
    cards = sorted((p for p in drm.glob("card*") if CARD.match(p.name)),
                   key=lambda p: int(p.name[4:])) if drm.is_dir() else []
    return [((card / "device").resolve().name, card) for card in cards
            if read_sysfs(card / "device" / "vendor") == vendor]
