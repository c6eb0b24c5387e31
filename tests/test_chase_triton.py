"""The Triton pointer-chase kernel's logic, run on the CPU by Triton's interpreter."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

from parity.bench.chase.permutation import cycle_order

pytest.importorskip("triton", reason="the GPU chase needs triton: pip install triton")
pytestmark = pytest.mark.torch


@pytest.fixture()
def interpreted(monkeypatch: pytest.MonkeyPatch):
    """chase_triton imported with TRITON_INTERPRET=1 (the kernel is decorated at import)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    sys.modules.pop("parity.bench.chase_triton", None)
    module = importlib.import_module("parity.bench.chase_triton")
    yield module
    sys.modules.pop("parity.bench.chase_triton", None)


def test_table_holds_one_ring_per_block_at_the_stride() -> None:
    from parity.bench.chase_triton import build_table

    table, starts = build_table(region_bytes=1024, stride_bytes=128, count=3, seed=7)
    assert starts.tolist() == [0, 128, 256]
    for k in range(3):
        region = table[k * 128 : (k + 1) * 128]
        heads = region[::16] - k * 128  # successor element index within the region
        assert np.all(heads % 16 == 0)
        cycle_order(heads // 16)  # raises unless it is one cycle through all 8 slots
        assert np.all(np.delete(region, np.arange(0, 128, 16)) == 0)


def test_interpreted_kernel_walks_each_ring(interpreted) -> None:
    import torch

    chase = interpreted.TritonChase(device=torch.device("cpu"), region_bytes=1024, stride_bytes=128, count=2, seed=3)
    assert chase.verify()  # 8 steps bring both rings back to their starts
    steps = 5
    ends = chase.chase_threads(steps)
    table = chase.table.numpy()
    for start, end in zip(chase.starts_np.tolist(), ends):
        idx = start
        for _ in range(steps):
            idx = int(table[idx])
        assert end == idx
    assert chase.chase(steps) == ends[0]
