"""Findings the timing core adds to the sample checks of ``parity.stats``: throttling and clock
changes seen in telemetry, inputs that stay in cache, graph replay that was not available."""

from __future__ import annotations

from typing import Any

from parity.device.base import Device
from parity.model.figure import format_bytes
from parity.model.findings import Finding, Severity
from parity.timing.rotation import InputRotation

# Warn when the compute clock's lowest reading is this far below its highest.
CLOCK_DROP_WARNING = 0.10


def clock_drop(*, min_mhz: float, max_mhz: float) -> float:
    """Fractional drop of the clock below its peak during a measurement: ``1 - min / max``.

    Example: readings between 1410 and 1980 MHz give ``1 - 1410/1980 = 0.288``.
    """
    if max_mhz <= 0:
        return 0.0
    return 1.0 - min_mhz / max_mhz


def telemetry_findings(telemetry: dict[str, Any]) -> list[Finding]:
    """``throttled`` when power or heat limited the clocks; ``clock-varied`` when the compute
    clock dropped more than 10% below its peak during the timed calls."""
    from parity.device.telemetry import throttling

    findings = []
    reasons = throttling(telemetry.get("throttle_reasons", []))
    if reasons:
        findings.append(
            Finding(
                code="throttled",
                severity=Severity.WARNING,
                message=f"clocks were limited during the measurement: {', '.join(reasons)}",
                hint="cool the device, check the power limit, or pause between cases",
            )
        )
    clock = telemetry.get("clock_mhz")
    if clock:
        drop = clock_drop(min_mhz=clock["min"], max_mhz=clock["max"])
        if drop > CLOCK_DROP_WARNING:
            findings.append(
                Finding(
                    code="clock-varied",
                    severity=Severity.WARNING,
                    message=(
                        f"compute clock ranged {clock['min']:.0f}-{clock['max']:.0f} MHz "
                        f"({drop:.0%} below its peak) during the measurement"
                    ),
                    hint="pin clocks or the frequency governor for stable numbers",
                )
            )
    return findings


def rotation_findings(inputs: InputRotation, flush: bool) -> list[Finding]:
    """``inputs-fit-in-cache`` when the rotated sets fit in the cache and nothing flushes it."""
    if inputs.exceeds_cache or flush or inputs.cache_bytes == 0:
        return []
    return [
        Finding(
            code="inputs-fit-in-cache",
            severity=Severity.WARNING,
            message=(
                f"{len(inputs)} input sets of {format_bytes(inputs.bytes_per_set)} fit in the "
                f"{format_bytes(inputs.cache_bytes)} cache and the cache is not flushed"
            ),
            hint="raise max_sets or enable the cache flush; inputs are likely served from cache",
        )
    ]


def graph_unavailable(device: Device) -> Finding:
    """``graph-unavailable``: graph replay was asked for on a device that cannot capture."""
    return Finding(
        code="graph-unavailable",
        severity=Severity.INFO,
        message=f"graph replay was asked for but {device.name} has no graph capture",
        hint="timed eagerly with per-call events instead",
    )
