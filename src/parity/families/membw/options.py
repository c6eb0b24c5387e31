"""The typed options of the ``membw`` suite; ``None`` takes the mode's default."""

from __future__ import annotations

from dataclasses import dataclass

from parity.families.membw.ops import DEVICE_OPS, HOST_OPS
from parity.harness.options import option


@dataclass(frozen=True, kw_only=True)
class MembwOptions:
    """The options of the ``membw`` suite."""

    ops: tuple[str, ...] = option((), help="operations (default: all that apply to the device)",
                                  choices=DEVICE_OPS + HOST_OPS)
    min_bytes: int | None = option(None, help="smallest operand, B (1 KiB)", minimum=4,
                                  aliases=("--min-size",))
    max_bytes: int | None = option(None, help="largest operand, B (4 GiB; 64 MiB quick; capped by free memory)",
                                   minimum=0, aliases=("--max-size",))
    per_octave: int | None = option(None, help="sizes per doubling (2; 1 quick)", minimum=1)
    dtype: str = option("float32", help="element type of the operands", choices=("float32", "float16", "bfloat16"))
    flush: bool = option(True, help="flush the cache before every timed call")
    threads: int | None = option(None, help="CPU only: torch intra-op threads (torch's choice)", minimum=1)
    warmup_s: float = option(0.02, help="warm-up per case, s", minimum=0.0)
    budget_s: float | None = option(None, help="timed calls per case, s (0.1; 0.04 quick)",
                                    minimum=0.0, exclusive_minimum=True)
    min_samples: int = option(5, help="fewest timed calls per case", minimum=1)
    max_samples: int = option(2000, help="most timed calls per case", minimum=1)
