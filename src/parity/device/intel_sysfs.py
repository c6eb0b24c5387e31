"""An Intel GPU's settings that decide results, from the i915 or xe driver's sysfs files: no
subprocess and no library.

- card: the ``/sys/class/drm/cardN`` of an Intel GPU (vendor 0x8086). torch.xpu reports no PCI
  address, so the reading is the only Intel card's, or the one reading every Intel card of the
  host shares (``cards: all N alike``); cards set up otherwise are "not readable" rather than
  guessed;
- clocks, per GT (a tile's graphics engine): the frequency range the user set against the
  hardware's, as the CPU's clock policy reads (``locked at``, ``capped at``, ``not locked``):
  xe ``device/tileT/gtG/freq0/{min,max,rp0,rpn}_freq``, i915 ``gt/gtG/rps_{min,max,RP0,RPn}_freq_mhz``
  or, on a one-GT card, ``gt_{min,max,RP0,RPn}_freq_mhz``;
- ECC: neither driver exposes it (recorded as not readable);
- partitioning: the card's tiles (``ZE_FLAT_DEVICE_HIERARCHY``, recorded with the environment,
  decides whether ``xpu:N`` is one tile or the whole card);
- power cap: the hwmon's ``power1_max`` (the sustained limit) against ``power1_rated_max`` (the
  card's default), W;
- interconnect: the PCIe link of the card's PCI device.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parity.device.sysfs import clock_lock, drm_cards, hwmon_watts, not_readable, pcie_link, read_sysfs

SYS = Path("/sys")
INTEL_VENDOR = "0x8086"
XE_FREQ = ("min_freq", "max_freq", "rpn_freq", "rp0_freq")
I915_GT_FREQ = ("rps_min_freq_mhz", "rps_max_freq_mhz", "rps_RPn_freq_mhz", "rps_RP0_freq_mhz")
I915_CARD_FREQ = ("gt_min_freq_mhz", "gt_max_freq_mhz", "gt_RPn_freq_mhz", "gt_RP0_freq_mhz")


def intel_cards(*, sys_root: Path = SYS) -> list[tuple[str, Path]]:
    """``(PCI address, card folder)`` of every Intel GPU (vendor 0x8086), in card order."""
    return drm_cards(INTEL_VENDOR, sys_root=sys_root)


NO_CARD = "no Intel GPU (vendor 0x8086) under /sys/class/drm"


def only_intel_card(*, sys_root: Path = SYS) -> tuple[str, Path] | str:
    """``(PCI address, card folder)`` of the host's only Intel GPU, or why none is chosen (none,
    or several: torch.xpu reports no PCI address to tell which is measured). Telemetry and
    energy read this card; the settings also take several cards that agree."""
    cards = intel_cards(sys_root=sys_root)
    if len(cards) == 1:
        return cards[0]
    return NO_CARD if not cards else f"{len(cards)} Intel GPUs, and torch.xpu reports no PCI address to tell which is measured"


def _mhz(path: Path) -> int | None:
    text = read_sysfs(path)
    return int(text) if text and text.isdigit() else None


def gt_limits(card: Path) -> dict[str, tuple[int | None, ...]]:
    """GT name -> ``(min, max, hardware min, hardware max)`` in MHz, from whichever layout the
    driver writes (xe, i915 per GT, i915 one GT)."""
    found = {}
    for freq in sorted(card.glob("device/tile*/gt*/freq0")):
        found[f"{freq.parent.parent.name}/{freq.parent.name}"] = tuple(_mhz(freq / n) for n in XE_FREQ)
    if not found:
        for gt in sorted(card.glob("gt/gt*")):
            found[gt.name] = tuple(_mhz(gt / n) for n in I915_GT_FREQ)
    if not found and (card / I915_CARD_FREQ[1]).exists():
        found["gt0"] = tuple(_mhz(card / n) for n in I915_CARD_FREQ)
    return found


def clocks(card: Path) -> dict[str, Any] | str:
    """Each GT's frequency range and the lock they add up to (``clock_lock``'s wording)."""
    limits = gt_limits(card)
    if not limits:
        return not_readable(f"no GT frequency files under {card} (xe freq0/ or i915 gt_*_freq_mhz)")
    khz = {tuple(v * 1000 if v is not None else None for v in one) for one in limits.values()}
    return {"gt_mhz": {gt: dict(zip(("min", "max", "hardware_min", "hardware_max"), v, strict=True))
                       for gt, v in limits.items()},
            "lock": clock_lock(khz, units="GTs", missing="no GT min/max frequency file")}


def tiles(card: Path) -> str:
    """``2 tiles`` (xe ``device/tile*``, i915 ``gt/gt*``) or ``1 tile``."""
    count = len(list(card.glob("device/tile[0-9]*"))) or len(list(card.glob("gt/gt[0-9]*"))) or 1
    return f"{count} tile{'s' if count > 1 else ''} (ZE_FLAT_DEVICE_HIERARCHY decides whether xpu:N is one)"


def power_cap(card: Path) -> dict[str, float | str] | str:
    """The hwmon's sustained power limit and the card's default, W."""
    hwmon = next((h for h in sorted(card.glob("device/hwmon/hwmon*")) if (h / "power1_max").exists()), None)
    if hwmon is None:
        return not_readable(f"no hwmon power1_max under {card}/device")
    return hwmon_watts(hwmon, {"limit_w": "power1_max", "default_w": "power1_rated_max"})


def read_card(card: Path) -> dict[str, Any]:
    """The settings of one Intel card (its ``/sys/class/drm/cardN`` folder)."""
    return {"clocks": clocks(card), "ecc": not_readable("the i915 and xe drivers expose no ECC state in sysfs"),
            "partition": tiles(card), "power_cap": power_cap(card),
            "interconnect": {"pcie": pcie_link(card / "device")}}


def intel_conditions(device: Any, *, sys_root: Path = SYS) -> dict[str, Any] | str:
    """The settings of the Intel GPU measured: the only card's, or those every card shares."""
    cards = intel_cards(sys_root=sys_root)
    if not cards:
        return not_readable(NO_CARD)
    readings = [read_card(folder) for _, folder in cards]
    if len(cards) == 1:
        return {"card": cards[0][0], **readings[0]}
    if all(r == readings[0] for r in readings):
        return {"card": f"all {len(cards)} alike", **readings[0]}
    return not_readable(f"{len(cards)} Intel GPUs set up otherwise, and torch.xpu reports no PCI address to tell "
                        f"which is {getattr(device, 'name', device)}")


def _actual_frequency_file(card: Path) -> Path | None:
    """The first GT's actual frequency (MHz) in whichever layout the driver writes."""
    found = [*sorted(card.glob("device/tile*/gt*/freq0/act_freq")), *sorted(card.glob("gt/gt*/rps_act_freq_mhz")),
             *([card / "gt_act_freq_mhz"] if (card / "gt_act_freq_mhz").exists() else [])]
    return found[0] if found else None


class IntelGpuTelemetry:
    """The compute clock of the card during a measurement: the actual frequency of its first GT
    (xe ``freq0/act_freq``, i915 ``rps_act_freq_mhz`` or ``gt_act_freq_mhz``), the only card's.
    Power, temperature and throttle reasons are not read."""

    name = "intel-sysfs"

    def __init__(self, *, sys_root: Path = SYS) -> None:
        from parity.device.telemetry import METRICS

        chosen = only_intel_card(sys_root=sys_root)
        self._reasons = {m: "not read on Intel GPUs" for m in METRICS if m != "clock_mhz"}
        self._file = None if isinstance(chosen, str) else _actual_frequency_file(chosen[1])
        if self._file is None:
            self._reasons["clock_mhz"] = (chosen if isinstance(chosen, str) else
                                          f"no actual-frequency file under {chosen[1]}")

    def read(self) -> dict[str, Any]:
        mhz = _mhz(self._file) if self._file is not None else None
        return {"clock_mhz": float(mhz)} if mhz is not None else {}

    def unavailable(self) -> dict[str, str]:
        return dict(self._reasons)
