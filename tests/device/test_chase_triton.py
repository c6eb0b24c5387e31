"""The Triton pointer-chase kernel's logic, run on the CPU by Triton's interpreter."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

from parity.families.latency.chase.permutation import is_single_cycle, links_of, random_order

pytest.importorskip("triton", reason="the GPU chase needs triton: pip install triton")
pytestmark = pytest.mark.torch


@pytest.fixture()
def interpreted(monkeypatch: pytest.MonkeyPatch):
    """chase_triton imported with TRITON_INTERPRET=1 (the kernel is decorated at import)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    sys.modules.pop("parity.families.latency.chase_triton", None)
    module = importlib.import_module("parity.families.latency.chase_triton")
    yield module
    sys.modules.pop("parity.families.latency.chase_triton", None)


def test_table_holds_one_ring_per_block_at_the_stride() -> None:
    from parity.families.latency.chase_triton import build_table

    table, starts = build_table(region_bytes=1024, stride_bytes=128, count=3, seed=7)
    assert starts.tolist() == [0, 128, 256]
    for k in range(3):
        region = table[k * 128 : (k + 1) * 128]
        heads = region[::16] - k * 128  # successor element index within the region
        assert np.all(heads % 16 == 0)
        order = random_order(8, seed=7 + k)
        assert np.array_equal(heads // 16, links_of(order)) and is_single_cycle(heads // 16, order)
        assert np.all(np.delete(region, np.arange(0, 128, 16)) == 0)


def test_interpreted_kernel_walks_each_ring_and_carries_on(interpreted) -> None:
    import torch

    chase = interpreted.TritonChase(device=torch.device("cpu"), region_bytes=1024, stride_bytes=128, count=2, seed=3)
    assert chase.verify()  # 8 steps bring both rings back to where they were
    table = chase.table.numpy()

    def walk(idx: int, steps: int) -> int:
        for _ in range(steps):
            idx = int(table[idx])
        return idx

    ends = chase.chase_threads(5)
    assert list(ends) == [walk(s, 5) for s in chase.starts_np.tolist()]
    assert chase.chase(2) == walk(ends[0], 2)  # ring 0 carries on; ring 1 stays put
    assert int(chase.positions[1]) == ends[1]
    chase.step(1, many=True)
    assert chase.positions.tolist() == [walk(walk(ends[0], 2), 1), walk(ends[1], 1)]
