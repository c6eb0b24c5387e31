"""The typed options of the ``collectives`` suite: nccl-tests' ``-b/-e/-f/-n/-w`` by name."""

from __future__ import annotations

from dataclasses import dataclass

from parity.families.collectives.ops import DTYPES, PLACEMENTS
from parity.harness.options import option
from parity.ranks.topology import DIMENSIONS


@dataclass(frozen=True, kw_only=True)
class CollectivesOptions:
    """The options of the ``collectives`` suite (sizes in bytes, times in seconds)."""

    ops: tuple[str, ...] = option(tuple(PLACEMENTS), help="collectives to sweep", choices=tuple(PLACEMENTS))
    dtypes: tuple[str, ...] = option(("fp32",), help="element types", choices=tuple(DTYPES))
    placement: str = option("both", help="in place, out of place, or both where torch has both",
                            choices=("both", "in-place", "out-of-place"))
    min_bytes: int = option(1024, help="smallest S, B (nccl-tests -b)", minimum=1)
    max_bytes: int | None = option(None, help="largest S, B (nccl-tests -e; 64 MiB, 1 MiB quick)", minimum=1)
    factor: float = option(4.0, help="size multiplier between cases (nccl-tests -f)", minimum=1.0,
                           exclusive_minimum=True)
    iterations: int = option(20, help="timed iterations per case (nccl-tests -n)", minimum=1,
                             aliases=("--iters",))
    warmup_s: float = option(0.02, help="untimed warm-up per case, s (nccl-tests -w, by time)", minimum=0.0)
    dimensions: tuple[str, ...] = option(DIMENSIONS, choices=DIMENSIONS,
                                         help="groups measured: every rank (world), the ranks of each node "
                                              "(intra), the i-th rank of every node (inter); where they apply")
    duration: float = option(0.0, help="repeat --size-bytes for this long, s, and report busbw drift per window "
                                       "(0: the size sweep)", minimum=0.0)
    size_bytes: int = option(16 * 2**20, help="the size --duration repeats, B", minimum=1)
    window: float = option(5.0, help="drift window of --duration, s of wall clock", minimum=0.0,
                           exclusive_minimum=True)
