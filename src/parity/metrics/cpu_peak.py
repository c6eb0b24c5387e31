"""A CPU's GEMM peak from its instruction set: ``peak = FLOP/cycle/core · cores · clock``.

CPUs have no datasheet GEMM figure. The FLOP per cycle per core of each instruction set (AMX,
AVX-512, AVX2 with FMA) are data with sources (``parity/data/cpu_isa.toml``); the flags come
from the device layer (``/proc/cpuinfo``), the cores and the clock from the device's properties.
The result is shown where a datasheet peak would be, labelled ``derived``, never instead of the
measured ceiling. A dtype no instruction set of the CPU has a figure for gets none (bf16 on an
AVX2-only CPU runs through conversions: there is no native peak to promise).
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from importlib import resources
from typing import Any

from parity.model.errors import ParityError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


@dataclass(frozen=True, kw_only=True)
class IsaEntry:
    """One instruction set: the flags it needs, FLOP per cycle per core by dtype, its source."""

    key: str
    name: str
    flags: tuple[str, ...]
    flop_per_cycle: dict[str, float]
    source: str
    vendor: str | None = None  # /proc/cpuinfo vendor_id the entry is for; None: any
    cpu_families: tuple[int, ...] = ()  # its "cpu family" values

    def applies(self, flags: set[str], cpu: tuple[str, int] | None) -> bool:
        """The CPU has every flag and, for a part-specific entry, is that part."""
        if not set(self.flags) <= flags:
            return False
        return self.vendor is None or (cpu is not None and cpu[0] == self.vendor and cpu[1] in self.cpu_families)


@functools.lru_cache(maxsize=1)
def load_isa_table() -> dict[str, IsaEntry]:
    """The bundled ``cpu_isa.toml``."""
    text = resources.files("parity").joinpath("data/cpu_isa.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    out = {}
    for key, entry in data.get("isa", {}).items():
        try:
            out[key] = IsaEntry(key=key, name=str(entry["name"]), flags=tuple(entry["flags"]),
                                flop_per_cycle={k: float(v) for k, v in entry["flop_per_cycle"].items()},
                                source=str(entry["source"]), vendor=entry.get("vendor"),
                                cpu_families=tuple(int(f) for f in entry.get("cpu_families", ())))
        except (KeyError, TypeError, ValueError) as exc:
            raise ParityError(f"cpu_isa.toml: isa.{key} is malformed ({exc}); it needs name, flags, "
                              "flop_per_cycle and source") from None
    return out


def cpu_peak_flops(*, flop_per_cycle: float, cores: int, clock_hz: float) -> float:
    """``FLOP/cycle/core · cores · clock_hz`` in FLOP/s. Example: AMX bf16 1024 x 2 cores x
    2.1 GHz = 4.3008e12 FLOP/s."""
    if flop_per_cycle <= 0 or cores < 1 or clock_hz <= 0:
        raise ParityError(f"cpu peak needs positive inputs, got {flop_per_cycle} FLOP/cycle, {cores} cores, "
                          f"{clock_hz} Hz")
    return flop_per_cycle * cores * clock_hz


def isa_peak(*, flags: set[str], dtype: str, cores: int | None, clock_hz: float | None,
             table: dict[str, IsaEntry] | None = None, cpu: tuple[str, int] | None = None) -> dict[str, Any] | None:
    """The derived peak of ``dtype`` on a CPU with ``flags`` (and ``cpu``: its vendor_id and cpu
    family): the best entry for that part where one applies, else the best generic entry whose
    flags are all present, as ``{"flops", "source", "derived"}``; None without an entry, cores or
    clock."""
    usable = [e for e in (table or load_isa_table()).values() if dtype in e.flop_per_cycle and e.applies(flags, cpu)]
    entries = [e for e in usable if e.vendor is not None] or usable
    if not entries or not cores or not clock_hz:
        return None
    best = max(entries, key=lambda e: e.flop_per_cycle[dtype])
    per_cycle = best.flop_per_cycle[dtype]
    return {"flops": cpu_peak_flops(flop_per_cycle=per_cycle, cores=cores, clock_hz=clock_hz),
            "source": best.source,
            "derived": (f"{best.name}: {per_cycle:g} FLOP/cycle/core x {cores} cores x "
                        f"{clock_hz / 1e9:.3g} GHz (the highest clock the CPU reports)")}
