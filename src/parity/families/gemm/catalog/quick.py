"""The ``--quick`` selection: the catalog's family mix at sizes a 2-core CPU sweeps in minutes.

Every family keeps a share of ``QUICK_COUNT`` proportional to its share of the catalog (at
least ``QUICK_MIN_PER_FAMILY`` shapes). Within a family, only shapes of at most ``QUICK_MAX_FLOP`` are eligible, and
the picks are spread evenly over them in order of work, so small decode-like and larger shapes
both appear; a family with no eligible shape contributes its smallest one.

Those shapes are all memory-bound on an accelerator (and mostly on a CPU with matrix units),
so the median efficiency over compute-bound shapes would have no shape, or one, to stand on.
The compute tier adds the ``QUICK_COMPUTE_COUNT`` catalog shapes of least work whose bf16
intensity is at least ``QUICK_COMPUTE_AI``: above the ridge of every datasheet in
``device_specs.toml`` for every dtype it lists (checked by a test), so every device class has
enough compute-bound shapes for a CI. The selection depends on the catalog alone, never on the
device, so quick runs of two devices compare.
"""

from __future__ import annotations

from parity.families.gemm.catalog.shapes import Shape

QUICK_COUNT = 40
QUICK_MIN_PER_FAMILY = 2
# 2^24 FLOP (16.8 MFLOP): about a quarter of a second per call even where bf16 runs at
# 0.07 GFLOP/s (matrix-vector shapes on a CPU without native bf16, measured on a 2-core EPYC).
QUICK_MAX_FLOP = float(2**24)
# The compute tier: shapes of bf16 intensity >= 560 FLOP/B (the highest bf16 datasheet ridge,
# Gaudi 3's 1835 TFLOP/s over 3.7 TB/s, is 496; fp8's intensity is ~1.5x bf16's, over the
# highest fp8 ridge, 756 on H100 PCIe). Six: a CI of the median needs five.
QUICK_COMPUTE_COUNT = 6
QUICK_COMPUTE_AI = 560.0


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
    chosen.update(s.dims for s in compute_tier(shapes))
    return [s for s in shapes if s.dims in chosen]


def compute_tier(shapes: list[Shape], *, count: int = QUICK_COMPUTE_COUNT, min_ai: float = QUICK_COMPUTE_AI) -> list[Shape]:
    """The ``count`` shapes of least work whose bf16 intensity ``2MNK / (2(MK + KN + MN))`` is at
    least ``min_ai`` FLOP/B (ties by dims)."""
    heavy = [s for s in shapes if s.flops / (2 * (s.m * s.k + s.k * s.n + s.m * s.n)) >= min_ai]
    return sorted(heavy, key=lambda s: (s.flops, s.dims))[:count]
