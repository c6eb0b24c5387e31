"""A derived figure: the one record compare and report read, whatever family made it.

A figure is a number a user may quote: its ``name`` (stable, dotted: ``gemm.ceiling``,
``membw.fixed_cost.warm``), its ``value`` in SI units (FLOP/s, B/s, s, a fraction), the
``unit`` that value is in, the ``method`` or convention that produced it (``median of rounds``,
``bytes read + written (STREAM)``), the ``scope`` it is over (which cases, which dtype, which
op), and a 95% confidence interval where there is one. Humans' units (TFLOP/s, GB/s, us) are
made at the edge by :func:`format_value`, never stored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from parity.model.findings import Finding

# SI units a figure may carry, and how a human reads each one.
UNITS: dict[str, tuple[str, float]] = {
    "FLOP/s": ("TFLOP/s", 1e12),
    "B/s": ("GB/s", 1e9),
    "s": ("us", 1e-6),
    "B": ("MiB", 2**20),
    "1": ("%", 0.01),
    "count": ("", 1.0),
    "tok/s": ("tok/s", 1.0),
    "x": ("x", 1.0),  # a ratio of two runs' figures (compare)
    "J/FLOP": ("J/TFLOP", 1e-12),  # energy per unit of work (parity.harness.energy)
    "J/B": ("J/GB", 1e-9),
    "J/tok": ("J/tok", 1.0),
}


@dataclass(frozen=True, kw_only=True)
class Figure:
    """One derived figure with its method and scope.

    ``scope`` maps what the figure is over to JSON values (``{"dtype": "bf16", "cases": 12,
    "subset": "compute-bound"}``); ``ci95`` is ``(low, high)`` in the figure's unit, or None
    when there is no interval ("too few for a CI" goes in ``note``). ``best`` is the best
    observation beside a median value, where the figure has one. ``findings`` judge the
    figure itself (an ``invalid`` finding when it cannot be true: an overlap above 1, a
    fraction of a measured ceiling above 1 beyond its CI; see ``parity.metrics.validity``).
    """

    name: str
    value: float | None
    unit: str
    method: str
    scope: dict[str, Any] = field(default_factory=dict)
    ci95: tuple[float, float] | None = None
    best: float | None = None
    note: str = ""
    findings: tuple[Finding, ...] = ()

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(f"figure {self.name!r}: unit {self.unit!r} is not one of {', '.join(UNITS)}")
        if self.value is not None:
            object.__setattr__(self, "value", float(self.value))
            if not math.isfinite(self.value):
                raise ValueError(f"figure {self.name!r}: value {self.value!r} is not finite")
        if self.ci95 is not None:
            low, high = (float(v) for v in self.ci95)
            if low > high:
                raise ValueError(f"figure {self.name!r}: CI ({low}, {high}) is reversed")
            object.__setattr__(self, "ci95", (low, high))
        object.__setattr__(self, "findings", tuple(self.findings))

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "method": self.method,
            "scope": dict(self.scope),
            "ci95": list(self.ci95) if self.ci95 is not None else None,
            "best": self.best,
            "note": self.note,
            "findings": [f.to_dict() for f in self.findings],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Figure:
        ci = data.get("ci95")
        return cls(
            name=str(data["name"]),
            value=data.get("value"),
            unit=str(data["unit"]),
            method=str(data.get("method", "")),
            scope=dict(data.get("scope", {})),
            ci95=(float(ci[0]), float(ci[1])) if ci else None,
            best=data.get("best"),
            note=str(data.get("note", "")),
            findings=tuple(Finding.from_dict(f) for f in data.get("findings") or []),
        )


def format_value(value: float | None, unit: str) -> str:
    """``value`` (SI) in the human unit of ``unit``: 1.2e12 FLOP/s -> ``1.20 TFLOP/s``, a rate
    under 1 of it in a smaller unit (:data:`SMALLER_RATES`: ``38.1 GFLOP/s``); a time at its
    scale (``1.08 ns``, ``17.1 us``, ``5.7 ms``: :func:`format_seconds`); a ratio (``x``) as
    :func:`ratio_number` writes it."""
    if value is None:
        return "n/a"
    if unit == "s":
        return format_seconds(value)
    human, scale = UNITS[unit]
    shown = value / scale
    for smaller, smaller_scale in SMALLER_RATES.get(unit, ()):  # 0.0381 TFLOP/s reads 38.1 GFLOP/s
        if 0 < abs(shown) < 1:
            human, scale = smaller, smaller_scale
            shown = value / scale
    if unit == "x" and abs(shown) < 1000:
        text = ratio_number(shown)
    else:
        text = f"{shown:.3g}" if abs(shown) < 1000 else f"{shown:,.0f}"
    return f"{text}{human}" if human == "%" else f"{text} {human}".rstrip()


# A rate under 1 of its usual unit is written in the next smaller one, in turn (never for a
# value of zero): a CPU's 0.0381 TFLOP/s is 38.1 GFLOP/s, a slow link's 0.06 GB/s 60 MB/s.
SMALLER_RATES: dict[str, tuple[tuple[str, float], ...]] = {
    "FLOP/s": (("GFLOP/s", 1e9), ("MFLOP/s", 1e6), ("FLOP/s", 1.0)),
    "B/s": (("MB/s", 1e6), ("kB/s", 1e3), ("B/s", 1.0)),
}

RATIO_DIGITS = 3  # significant digits of a ratio or a CI bound
RATIO_MAX_DIGITS = 6


def ratio_number(value: float) -> str:
    """A ratio or a ratio's CI bound to 3 significant digits, with more (up to 6) when 3 would
    print a value that is not 1 as ``1``: a bound of 1.0004 reads ``1.0004``, so a reader can tell
    an interval that excludes 1 (``[1.0004, 1.03]``, a difference) from one that holds it
    (``[0.9996, 1.03]``, none), which ``[1, 1.03]`` would hide."""
    digits = RATIO_DIGITS
    text = f"{value:.{digits}g}"
    while value != 1 and float(text) == 1 and digits < RATIO_MAX_DIGITS:
        digits += 1
        text = f"{value:.{digits}g}"
    return text


def ratio_text(ratio: float, ci: tuple[float, float] | list[float] | None) -> str:
    """``1.31x [1.22, 1.40]`` (``1.31x`` with no CI), each number by :func:`ratio_number`."""
    return f"{ratio_number(ratio)}x" + (f" [{ratio_number(ci[0])}, {ratio_number(ci[1])}]" if ci else "")


def format_bytes(n: float | None) -> str:
    """``1 KiB``, ``1.5 MiB``, ``4 GiB`` (binary prefixes, as cache and buffer sizes are)."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.3g} {unit}"
        value /= 1024
    return f"{value:.3g} TiB"


def format_seconds(s: float | None) -> str:
    """Seconds at a readable scale: ``3.2 us``, ``15.1 ms``, ``12.9 s`` (and ``1,234 s``, never a
    power of ten), ``-`` for None."""
    if s is None:
        return "-"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if abs(s) >= scale or unit == "ns":
            shown = s / scale
            return f"{shown:.3g} {unit}" if abs(shown) < 1000 else f"{shown:,.0f} {unit}"
    return f"{s:.3g} s"


def told_apart(*values: float, decimals: int = 3, most: int = 7) -> list[str]:
    """``values`` with a shared number of decimals, ``decimals`` or more (up to ``most``) so that
    values that differ print differently: a first-order speedup of 1.00025 beside bounds of
    1.00028 reads ``1.00025 outside [1.00028, 1.00028]``, not ``1.000 outside [1.000, 1.000]``."""
    places = decimals
    while places < most and any(a != b and f"{a:.{places}f}" == f"{b:.{places}f}"
                                for i, a in enumerate(values) for b in values[i + 1:]):
        places += 1
    return [f"{v:.{places}f}" for v in values]
