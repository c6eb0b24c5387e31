"""The typed options of the ``preflight`` suite (sizes in bytes, times in seconds)."""

from __future__ import annotations

from dataclasses import dataclass

from parity.harness.options import option


@dataclass(frozen=True, kw_only=True)
class PreflightOptions:
    """The options of the ``preflight`` suite."""

    budget: float = option(20.0, help="timed s for the whole preflight, shared by every pair "
                                        "(5 s with --quick)", minimum=0.1)
    size_bytes: int = option(4 * 2**20, help="message of the bandwidth ping-pong, B (256 KiB with --quick)",
                             minimum=1)
    latency_bytes: int = option(8, help="message of the latency ping-pong, B", minimum=1)
    slow_fraction: float = option(0.5, help="a link is slow below this fraction of the median link's "
                                            "bandwidth", minimum=0.0, exclusive_minimum=True)
