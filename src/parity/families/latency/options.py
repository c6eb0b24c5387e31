"""The typed options of the ``latency`` suite; ``None`` takes the mode's default."""

from __future__ import annotations

from dataclasses import dataclass

from parity.harness.options import option


@dataclass(frozen=True, kw_only=True)
class LatencyOptions:
    """The options of the ``latency`` suite."""

    max_bytes: int | None = option(None, help="largest working set, B (past the last-level cache)", minimum=4096,
                                    aliases=("--max-size",))
    stride_bytes: int | None = option(None, help="slot stride, B (64 on a CPU, 128 on a GPU)", minimum=8,
                                       aliases=("--stride",))
    pages: tuple[str, ...] = option(("base", "thp"), help="CPU page sizes: base (4 KiB) and thp (huge pages)",
                                    choices=("base", "thp"))
    per_octave: int = option(2, help="working-set sizes per doubling", minimum=1)
    target_s: float | None = option(None, help="time of the long chain, s (by mode and curve)",
                                    minimum=0.0, exclusive_minimum=True)
    warmup_s: float = option(0.01, help="warm-up per chain, s", minimum=0.0)
    budget_s: float | None = option(None, help="timing budget per chain, s (1.5 x samples x target)",
                                    minimum=0.0, exclusive_minimum=True)
    min_samples: int | None = option(None, help="fewest timed chains (15; 51 past the last cache; 7 for concurrent blocks)", minimum=1)
    max_samples: int = option(200, help="most timed chains", minimum=1)
    estimator: str = option("min", help="statistic of the summary's latencies", choices=("min", "median"))
