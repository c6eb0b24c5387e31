"""The ``--quick`` selection: the catalog's family mix at sizes a 2-core CPU sweeps in minutes.

Every family keeps a share of ``QUICK_COUNT`` proportional to its share of the catalog (at
least ``QUICK_MIN_PER_FAMILY`` shapes). Within a family, only shapes of at most ``QUICK_MAX_FLOP`` are eligible, and
the picks are spread evenly over them in order of work, so small decode-like and larger shapes
both appear; a family with no eligible shape contributes its smallest one. The selection
depends on the catalog alone, never on the device, so quick runs of two devices compare.
"""

from __future__ import annotations

from parity.bench.catalog.shapes import Shape

QUICK_COUNT = 40
QUICK_MIN_PER_FAMILY = 2
# 2^24 FLOP (16.8 MFLOP): about a quarter of a second per call even where bf16 runs at
# 0.07 GFLOP/s (matrix-vector shapes on a CPU without native bf16, measured on a 2-core EPYC).
QUICK_MAX_FLOP = float(2**24)


def family_quota(sizes: dict[str, int], *, total: int, minimum: int = QUICK_MIN_PER_FAMILY) -> dict[str, int]:
    """Shapes per family: ``max(minimum, round(total · size_f / Σ size))``."""
    whole = sum(sizes.values())
    return {family: max(minimum, round(total * size / whole)) for family, size in sizes.items()}


def spread(items: list[Shape], count: int) -> list[Shape]:
    """``count`` items evenly spaced over ``items`` (first and last included when count >= 2)."""
    if count >= len(items):
        return list(items)
    if count == 1:
        return [items[0]]
    step = (len(items) - 1) / (count - 1)
    return [items[round(i * step)] for i in range(count)]


def quick_selection(shapes: list[Shape], *, count: int = QUICK_COUNT, max_flop: float = QUICK_MAX_FLOP) -> list[Shape]:
    """The quick subset of ``shapes``, in the catalog's order."""
    families: dict[str, list[Shape]] = {}
    for shape in shapes:
        families.setdefault(shape.family, []).append(shape)
    quota = family_quota({f: len(v) for f, v in families.items()}, total=count)
    chosen: set[tuple[int, int, int]] = set()
    for family, members in families.items():
        by_work = sorted(members, key=lambda s: (s.flops, s.dims))
        eligible = [s for s in by_work if s.flops <= max_flop] or by_work[:1]
        chosen.update(s.dims for s in spread(eligible, quota[family]))
    return [s for s in shapes if s.dims in chosen]
