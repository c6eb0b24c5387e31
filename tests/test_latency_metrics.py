"""ns per load, plateau naming and knee detection on synthetic curves with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from parity.metrics.latency import find_knees, find_plateaus, name_plateaus, ns_per_load
from parity.model.errors import ParityError

KIB, MIB = 1024, 1024 * 1024
CACHES = [("L1", 32 * KIB), ("L2", 512 * KIB), ("L3", 32 * MIB)]


def test_slope_cancels_the_fixed_cost() -> None:
    # t(N) = 50 us + N * 80 ns: the slope between 1e5 and 3e5 loads is 80 ns whatever t0 is.
    t = lambda n: 50e-6 + n * 80e-9  # noqa: E731
    assert ns_per_load(short_s=t(1e5), long_s=t(3e5), short_loads=100_000, long_loads=300_000) == pytest.approx(80.0)
    with pytest.raises(ParityError):
        ns_per_load(short_s=1.0, long_s=2.0, short_loads=10, long_loads=10)


def _staircase(sizes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """1.2 ns to 32 KiB, 3.5 ns to 512 KiB, 12 ns to 32 MiB, 110 ns beyond, 3% noise."""
    lat = np.where(sizes <= 32 * KIB, 1.2, np.where(sizes <= 512 * KIB, 3.5, np.where(sizes <= 32 * MIB, 12.0, 110.0)))
    return lat * (1 + 0.03 * rng.standard_normal(sizes.size))


def test_plateaus_found_named_and_sized_on_a_synthetic_staircase() -> None:
    sizes = (2.0 ** np.arange(12, 29, 0.5)).astype(np.int64)  # 4 KiB .. 256 MiB, 2 per octave
    lat = _staircase(sizes, np.random.default_rng(3))
    plateaus = name_plateaus(find_plateaus(sizes, lat), caches=CACHES, memory_bytes=24 * 2**30)
    assert [p.level for p in plateaus] == ["L1", "L2", "L3", "DRAM"]
    for p, (_, reported) in zip(plateaus[:3], CACHES):
        assert p.reported_bytes == reported
        assert 0.5 <= p.size_ratio <= 2.0
    assert plateaus[0].latency_ns == pytest.approx(1.2, rel=0.05)
    assert plateaus[1].latency_ns == pytest.approx(3.5, rel=0.05)
    assert plateaus[2].latency_ns == pytest.approx(12.0, rel=0.05)
    assert plateaus[-1].latency_ns == pytest.approx(110, rel=0.05)
    assert plateaus[-1].start_bytes > 32 * MIB
    assert plateaus[-1].memory and plateaus[-1].size_ratio is None  # memory has no capacity here


def test_transition_points_between_levels_are_not_plateaus() -> None:
    sizes = [4 * KIB, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB, 128 * KIB, 256 * KIB]
    lat = [1.0, 1.0, 1.0, 2.0, 3.5, 3.5, 3.5]  # 32 KiB is half-way: a transition, not a level
    found = find_plateaus(sizes, lat)
    assert [(s, e) for s, e, _, _ in found] == [(4 * KIB, 16 * KIB), (64 * KIB, 256 * KIB)]


def test_naming_without_reported_caches_counts_levels() -> None:
    found = [(4096, 16384, 1.0, 3), (65536, 262144, 4.0, 3), (2**22, 2**24, 90.0, 3)]
    assert [p.level for p in name_plateaus(found, caches=[], memory_name="HBM")] == ["L1", "L2", "HBM"]


def test_published_blocks_curve_has_knees_at_18_and_56() -> None:
    """The Ascend 950PR test: ~134 ns to 18 blocks, 182 ns at 56, 391 ns at 64."""
    blocks = np.arange(1, 65)
    lat = np.where(blocks <= 18, 134.0, 134.0 + (blocks - 18) * (182.0 - 134.0) / 38)
    lat = np.where(blocks > 56, 182.0 + (blocks - 56) * (391.0 - 182.0) / 8, lat)
    lat = lat * (1 + 0.01 * np.random.default_rng(0).standard_normal(blocks.size))
    knees = find_knees(blocks, lat)
    assert len(knees) == 2
    assert abs(knees[0].blocks - 18) <= 1 and abs(knees[1].blocks - 56) <= 1  # 1% noise: +-1 block
    assert knees[0].slope_before_ns == pytest.approx(0.0, abs=0.3)
    assert knees[-1].slope_after_ns == pytest.approx(26.1, rel=0.1)


def test_cpu_threads_curve_bends_at_the_core_count() -> None:
    # 2 cores: 1 and 2 threads run side by side, 3 and 4 share the cores.
    knees = find_knees([1, 2, 3, 4], [1.0, 1.02, 1.5, 2.0])
    assert [k.blocks for k in knees] == [2]


def test_flat_noisy_curve_has_no_knee() -> None:
    rng = np.random.default_rng(5)
    lat = 100 * (1 + 0.02 * rng.standard_normal(32))
    assert find_knees(np.arange(1, 33), lat) == []


def test_extra_plateaus_leave_each_level_its_nearest_match() -> None:
    # A noisy curve with an extra step between L2 and L3: L2 still takes its nearest plateau.
    found = [(4 * KIB, 32 * KIB, 1.2, 3), (64 * KIB, 512 * KIB, 4.0, 4), (1 * MIB, 2 * MIB, 9.0, 2),
             (4 * MIB, 32 * MIB, 14.0, 4), (64 * MIB, 256 * MIB, 110.0, 3)]
    named = name_plateaus(found, caches=CACHES)
    assert [p.level for p in named] == ["L1", "L2", "cache-3", "L3", "DRAM"]
    assert named[2].reported_bytes is None and named[3].size_ratio == 1.0


def test_fewer_plateaus_than_levels_still_name_in_order() -> None:
    found = [(4 * KIB, 32 * KIB, 1.2, 3), (1 * MIB, 32 * MIB, 14.0, 5), (64 * MIB, 256 * MIB, 110.0, 3)]
    assert [p.level for p in name_plateaus(found, caches=CACHES)] == ["L1", "L3", "DRAM"]


def test_two_point_transitions_are_skipped_but_a_short_memory_tail_is_kept() -> None:
    sizes = [2**k for k in range(12, 24)]  # 4 KiB .. 8 MiB, one per octave
    lat = [1.0, 1.0, 1.0, 1.0, 2.2, 2.3, 4.0, 4.0, 4.1, 4.0, 90.0, 95.0]
    found = find_plateaus(sizes, lat)
    assert [(s, e) for s, e, _, _ in found] == [(4 * KIB, 32 * KIB), (256 * KIB, 2 * MIB), (4 * MIB, 8 * MIB)]


def _walk_curves() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Huge pages: the staircase of _staircase without noise. Base pages: the same plus page
    walks, +6 ns from 8 MiB (past a 2048-entry TLB of 4 KiB pages) to 32 MiB, +10 ns in memory
    to 128 MiB, +70 ns beyond (the page tables themselves no longer stay in cache)."""
    sizes = (2.0 ** np.arange(12, 30.01, 0.5)).astype(np.int64)  # 4 KiB .. 1 GiB, 2 per octave
    huge = np.where(sizes <= 32 * KIB, 1.2, np.where(sizes <= 512 * KIB, 3.5, np.where(sizes <= 32 * MIB, 12.0, 110.0)))
    walk = np.where(sizes <= 8 * MIB, 0.0, np.where(sizes <= 32 * MIB, 6.0, np.where(sizes <= 128 * MIB, 10.0, 70.0)))
    return sizes, huge, huge + walk


def test_page_walk_excess_is_the_share_above_huge_pages() -> None:
    from parity.metrics.page_walks import page_walk_excess

    assert page_walk_excess(base_ns=180.0, huge_ns=120.0) == pytest.approx(0.5)
    with pytest.raises(ParityError):
        page_walk_excess(base_ns=1.0, huge_ns=0.0)


def test_page_walk_steps_are_named_after_the_huge_page_levels() -> None:
    from parity.metrics.page_walks import label_page_walks

    sizes, huge_lat, base_lat = _walk_curves()
    huge = name_plateaus(find_plateaus(sizes, huge_lat), caches=CACHES)
    base_alone = name_plateaus(find_plateaus(sizes, base_lat), caches=CACHES)
    # On its own, the base curve has six flat stretches and calls page-walk steps cache levels.
    assert [p.level for p in huge] == ["L1", "L2", "L3", "DRAM"] and huge[2].size_bytes == 32 * MIB
    assert len(base_alone) == 6 and [p.level for p in base_alone] != ["L1", "L2", "L3", "DRAM"]
    named = label_page_walks(base_alone, huge, sizes, huge_lat)
    assert [p.level for p in named] == ["L1", "L2", "L3", "L3+page-walks", "DRAM", "DRAM+page-walks"]
    assert [p.page_walk for p in named] == [False, False, False, True, False, True]
    assert named[2].size_bytes == 8 * MIB and named[3].start_bytes > 8 * MIB  # the TLB's reach
    assert named[3].page_walk_ns == pytest.approx(6.0) and named[5].page_walk_ns == pytest.approx(70.0)
    assert named[4].memory and named[5].memory and named[3].reported_bytes == 32 * MIB


def test_size_agreement_is_a_factor_of_two_either_way() -> None:
    from parity.metrics.latency import size_agrees

    assert size_agrees(0.5) and size_agrees(2.0) and size_agrees(1.0)
    assert not size_agrees(0.49) and not size_agrees(32 * MIB / (3 * MIB) / 4)
    assert not size_agrees(3 * MIB / (32 * MIB))


def test_a_last_plateau_past_twice_the_largest_cache_is_memory() -> None:
    # A machine whose last-level cache holds 2 MiB in practice of a reported 32 MiB, measured
    # with no L3 plateau at all: the flat stretch from 1 MiB to 128 MiB is memory, not L3.
    found = [(4 * KIB, 32 * KIB, 1.2, 4), (64 * KIB, 256 * KIB, 4.0, 3), (1 * MIB, 128 * MIB, 150.0, 8)]
    assert [p.level for p in name_plateaus(found, caches=CACHES)] == ["L1", "L2", "DRAM"]
    short = [(4 * KIB, 32 * KIB, 1.2, 4), (64 * KIB, 256 * KIB, 4.0, 3), (1 * MIB, 32 * MIB, 15.0, 6)]
    assert [p.level for p in name_plateaus(short, caches=CACHES)][-1] == "L3"  # the sweep stopped in L3


def test_level_capacity_is_where_the_curve_crosses_half_way_on_a_log_scale() -> None:
    from parity.metrics.latency import level_capacity_bytes

    sizes = [128 * KIB, 256 * KIB, 512 * KIB, 1 * MIB, 2 * MIB]
    lat = [4.0, 4.0, 6.0, 12.0, 16.0]
    # Threshold sqrt(4 * 16) = 8 ns, first reached at 1 MiB (12 ns) after 512 KiB (6 ns):
    # a third of the way in latency, so 512 KiB * 2^(1/3).
    got = level_capacity_bytes(sizes, lat, end_bytes=256 * KIB, next_start_bytes=1 * MIB, level_ns=4.0, next_ns=16.0)
    assert got == pytest.approx(512 * KIB * 2 ** (1 / 3), abs=1)
    # A clean step: the crossing lies between the last point on and the first point off.
    step = level_capacity_bytes([32 * KIB, 64 * KIB], [1.0, 4.0], end_bytes=32 * KIB, next_start_bytes=64 * KIB,
                                level_ns=1.0, next_ns=4.0)
    assert step == pytest.approx(32 * KIB * 2 ** (1 / 3), abs=1)
    # A noisy transition that dips back under the threshold crosses where it leaves for good:
    # 10 ns at 512 KiB, back to 5 at 1 MiB, then 11 at 2 MiB: half of 5 -> 11 past 1 MiB.
    noisy = level_capacity_bytes([256 * KIB, 512 * KIB, 1 * MIB, 2 * MIB, 4 * MIB], [4.0, 10.0, 5.0, 11.0, 16.0],
                                 end_bytes=256 * KIB, next_start_bytes=2 * MIB, level_ns=4.0, next_ns=16.0)
    assert noisy == pytest.approx(1 * MIB * 2 ** 0.5, abs=1)


def test_a_partly_evicted_tail_on_a_dense_grid_is_a_transition() -> None:
    from parity.metrics.latency import plateau_capacities

    sizes = (2.0 ** np.arange(12, 28.01, 0.25)).astype(np.int64)  # 4 KiB .. 256 MiB, 4 per octave
    lat = np.where(sizes <= 32 * KIB, 1.2, np.where(sizes <= 256 * KIB, 3.5, np.where(
        sizes <= 512 * KIB, 5.0, np.where(sizes <= 32 * MIB, 12.0, 110.0))))
    found = find_plateaus(sizes, lat)
    # 304..512 KiB at 5 ns (an L2 partly evicted) is flat but spans less than an octave.
    assert len(find_plateaus(sizes, lat, min_span=1.0)) == 5 and len(found) == 4
    named = name_plateaus(found, caches=CACHES, capacities=plateau_capacities(sizes, lat, found))
    assert [p.level for p in named] == ["L1", "L2", "L3", "DRAM"]
    assert named[1].size_bytes == 256 * KIB and named[1].capacity_bytes > 512 * KIB
    assert all(0.9 <= p.size_ratio <= 1.5 for p in named[:3])
    assert named[-1].capacity_bytes is None


def test_a_base_plateau_where_huge_pages_are_in_transition_is_no_level() -> None:
    from parity.metrics.page_walks import label_page_walks

    huge = name_plateaus([(4 * KIB, 16 * KIB, 1.3, 3), (32 * KIB, 256 * KIB, 4.2, 4), (1 * MIB, 2 * MIB, 16.0, 2),
                          (4 * MIB, 64 * MIB, 170.0, 5)], caches=CACHES)
    sizes = [2**k for k in range(12, 27)]
    lat = [1.3, 1.3, 1.3, 4.2, 4.2, 4.2, 4.2, 8.0, 13.0, 16.0, 16.0, 170.0, 170.0, 170.0, 170.0]
    # Base pages: a flat 256..1024 KiB stretch at 8 ns, where the huge-page curve climbs.
    base = name_plateaus([(4 * KIB, 16 * KIB, 1.3, 3), (32 * KIB, 128 * KIB, 4.3, 3), (256 * KIB, 1 * MIB, 8.1, 3),
                          (2 * MIB, 64 * MIB, 180.0, 6)], caches=CACHES)
    named = label_page_walks(base, huge, sizes, lat)
    assert [p.level for p in named] == ["L1", "L2", "DRAM"]
