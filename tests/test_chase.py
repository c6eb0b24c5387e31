"""Sattolo rings and the native chase: one cycle, every slot visited, threads as blocks."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from parity.bench.chase import ChaseRings, native
from parity.bench.chase.pages import PagedBuffer, page_label, thp_unavailable_reason
from parity.bench.chase.permutation import _apply_swaps, cycle_order, sattolo_cycle, sattolo_draws
from parity.model.errors import ParityError


def _native_unbuildable() -> bool:
    """True when the native chase is missing and no C compiler could have built it."""
    import importlib.util
    import shutil

    missing = importlib.util.find_spec("parity.bench.chase._chase") is None
    return missing and not any(shutil.which(cc) for cc in ("cc", "gcc", "clang"))


needs_native = pytest.mark.skipif(_native_unbuildable(), reason="no C compiler: the native chase is not built")


@pytest.mark.parametrize("n", [1, 2, 3, 17, 1000, 65536])
def test_sattolo_is_one_cycle_through_every_slot(n: int) -> None:
    nxt = sattolo_cycle(n, seed=n)
    assert sorted(nxt.tolist()) == list(range(n))  # a permutation
    order = cycle_order(nxt)  # raises unless one cycle of length n
    assert len(set(order.tolist())) == n
    if n > 1:
        assert not np.any(nxt == np.arange(n))  # no slot points at itself


def test_native_and_python_swaps_agree_for_one_seed() -> None:
    draws = sattolo_draws(5000, seed=11)
    perm = np.arange(5000, dtype=np.int64)
    _apply_swaps(draws, perm)
    assert np.array_equal(perm, sattolo_cycle(5000, seed=11))


def test_sattolo_draws_stay_below_their_index() -> None:
    draws = sattolo_draws(100, seed=1)
    assert np.all(draws < np.arange(99, 0, -1)) and np.all(draws >= 0)


def test_cycle_order_refuses_two_cycles() -> None:
    with pytest.raises(ParityError, match="returns to slot 0 after 2 of 4"):
        cycle_order(np.array([1, 0, 3, 2]))


@needs_native
def test_ring_follows_the_permutation_and_carries_on() -> None:
    with ChaseRings(region_bytes=64 * 64, stride_bytes=64, seed=5) as rings:
        order = cycle_order(sattolo_cycle(64, seed=5))
        assert rings.chase(3) == int(order[3]) * 64
        assert rings.chase(2) == int(order[5]) * 64  # continues from where it stopped
        assert rings.verify()


@needs_native
def test_threads_chase_their_own_rings() -> None:
    with ChaseRings(region_bytes=16 * 1024, stride_bytes=64, count=3, seed=2) as rings:
        ends = rings.chase_threads(1000)
        for k, end in enumerate(ends):
            assert k * 16 * 1024 <= end < (k + 1) * 16 * 1024
            order = cycle_order(sattolo_cycle(256, seed=2 + k))
            assert end - k * 16 * 1024 == int(order[1000 % 256]) * 64
        assert rings.verify()


@needs_native
def test_ring_refuses_bad_geometry() -> None:
    with pytest.raises(ParityError, match="multiple of the 64 B stride"):
        ChaseRings(region_bytes=100, stride_bytes=64)
    with pytest.raises(ParityError, match="stride 12 B"):
        ChaseRings(region_bytes=4096, stride_bytes=12)


def test_native_module_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "parity.bench.chase._chase", None)
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
