"""Random single-cycle rings and the native chase: one cycle, every slot visited, every chase
checked against the ring's order, threads as blocks."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from parity.families.latency.chase import ChaseRings, native
from parity.device.pages import PagedBuffer, page_label, thp_unavailable_reason
from parity.families.latency.chase.permutation import is_single_cycle, links_of, random_order
from parity.model.errors import ParityError


def _native_unbuildable() -> bool:
    """True when the native chase is missing and no C compiler could have built it."""
    import importlib.util
    import shutil

    missing = importlib.util.find_spec("parity.families.latency.chase._chase") is None
    return missing and not any(shutil.which(cc) for cc in ("cc", "gcc", "clang"))


needs_native = pytest.mark.skipif(_native_unbuildable(), reason="no C compiler: the native chase is not built")


def walk_order(nxt: np.ndarray, *, start: int = 0) -> list[int]:
    """The slots a chase from ``start`` visits in one turn, by following ``nxt`` one step at a
    time (the slow, obvious way the vectorised checks are tested against); raises AssertionError
    unless ``nxt`` is one cycle through every slot."""
    seen, slot, order = set(), start, []
    for _ in range(nxt.size):
        assert slot not in seen, f"back at slot {slot} after {len(order)} of {nxt.size} steps"
        seen.add(slot)
        order.append(slot)
        slot = int(nxt[slot])
    assert slot == start, f"no return to slot {start} after {nxt.size} steps"
    return order


@pytest.mark.parametrize("n", [1, 2, 3, 17, 1000, 65536])
def test_ring_is_one_cycle_through_every_slot_in_its_order(n: int) -> None:
    order = random_order(n, seed=n)
    nxt = links_of(order)
    assert sorted(nxt.tolist()) == list(range(n))  # a permutation
    assert walk_order(nxt) == order.tolist()  # one cycle, visited in the drawn order
    assert is_single_cycle(nxt, order)
    if n > 1:
        assert not np.any(nxt == np.arange(n))  # no slot points at itself


def test_single_cycle_check_refuses_two_cycles_and_broken_orders() -> None:
    order = np.array([0, 1, 2, 3])
    assert is_single_cycle(np.array([1, 2, 3, 0]), order)
    assert not is_single_cycle(np.array([1, 0, 3, 2]), order)  # two 2-cycles
    assert not is_single_cycle(np.array([1, 2, 3, 0]), np.array([0, 1, 1, 3]))  # slot 2 missing


def test_every_single_cycle_of_four_slots_is_drawn_about_equally() -> None:
    """Uniform over the (n-1)! = 6 cycles of 4 slots, as Sattolo's algorithm is: 6000 draws
    give each cycle 1000 expected; a count off by more than 20% would be a biased shuffle."""
    counts: dict[tuple[int, ...], int] = {}
    for seed in range(6000):
        key = tuple(links_of(random_order(4, seed=seed)).tolist())
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 6 and all(800 < c < 1200 for c in counts.values())


def test_random_order_starts_at_slot_zero_and_refuses_no_slots() -> None:
    assert random_order(5, seed=1)[0] == 0
    with pytest.raises(ParityError, match="at least one slot"):
        random_order(0, seed=1)


@needs_native
def test_ring_follows_its_order_and_carries_on() -> None:
    with ChaseRings(region_bytes=64 * 64, stride_bytes=64, seed=5) as rings:
        order = random_order(64, seed=5)
        assert rings.chase(3) == int(order[3]) * 64
        assert rings.chase(2) == int(order[5]) * 64  # continues from where it stopped
        assert rings.chase(64 + 1) == int(order[6]) * 64  # a full turn and one more
        assert rings.verify() and rings.mismatches == 0


@needs_native
def test_threads_chase_their_own_rings() -> None:
    with ChaseRings(region_bytes=16 * 1024, stride_bytes=64, count=3, seed=2) as rings:
        ends = rings.chase_threads(1000)
        for k, end in enumerate(ends):
            assert k * 16 * 1024 <= end < (k + 1) * 16 * 1024
            assert end - k * 16 * 1024 == int(random_order(256, seed=2 + k)[1000 % 256]) * 64
        assert rings.verify()


@needs_native
def test_verify_catches_a_broken_ring_and_a_chase_that_went_astray() -> None:
    with ChaseRings(region_bytes=64 * 64, stride_bytes=64, seed=1) as rings:
        words = rings.memory.array(np.uint64)
        saved = int(words[8])
        words[8] = words[0]  # slot 1 now links where slot 0 does: two slots share a successor
        assert not rings.verify()
        words[8] = saved
        del words
        assert rings.verify()
        rings.positions[0] = 64  # the ring's state no longer matches where it stands
        rings.chase(1)
        assert rings.mismatches == 1 and not rings.verify()


@needs_native
def test_ring_refuses_bad_geometry() -> None:
    with pytest.raises(ParityError, match="multiple of the 64 B stride"):
        ChaseRings(region_bytes=100, stride_bytes=64)
    with pytest.raises(ParityError, match="stride 12 B"):
        ChaseRings(region_bytes=4096, stride_bytes=12)


def test_native_module_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "parity.families.latency.chase._chase", None)
    with pytest.raises(ParityError, match="C compiler"):
        native()


def test_base_pages_are_labelled_and_not_huge() -> None:
    with PagedBuffer(nbytes=4 * 1024 * 1024, page="base") as buf:
        buf.array()[:] = 1  # touch every page
        assert buf.huge_fraction() == 0.0
        assert buf.address % (2 * 1024 * 1024) == 0
    assert page_label("base").endswith("KiB")


@pytest.mark.skipif(thp_unavailable_reason() is not None, reason="transparent huge pages unavailable here")
def test_huge_pages_are_requested_and_measured() -> None:
    with PagedBuffer(nbytes=4 * 1024 * 1024, page="thp") as buf:
        buf.array()[:] = 1
        assert 0.0 <= buf.huge_fraction() <= 1.0
    assert page_label("thp").endswith("MiB-THP")
