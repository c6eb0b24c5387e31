"""The typed options of the ``kernels`` suite; ``None`` takes the mode's default."""

from __future__ import annotations

from dataclasses import dataclass

from parity.families.kernels.ops import OPS
from parity.harness.options import option
from parity.model.errors import ParityError


@dataclass(frozen=True, kw_only=True)
class KernelsOptions:
    """The options of the ``kernels`` suite."""

    ops: tuple[str, ...] = option(OPS, help="operations: " + ", ".join(OPS))
    libraries: bool = option(True, help="also time the installed library kernels on the same inputs")
    seed: int = option(0, help="seed of the inputs, group sizes and sequence lengths")
    ceiling_budget_s: float | None = option(None, help="compute-ceiling search, s of its timed calls, cache "
                                                       "flushes not counted (3 quick / 20 full on a CPU)",
                                            minimum=0.0, exclusive_minimum=True, aliases=("--ceiling-budget",))

    def __post_init__(self) -> None:
        unknown = [op for op in self.ops if op not in OPS]
        if unknown:
            raise ParityError(f"kernels.ops: unknown operation {unknown[0]!r}; use {', '.join(OPS)}")
        object.__setattr__(self, "ops", tuple(dict.fromkeys(self.ops)) or OPS)
