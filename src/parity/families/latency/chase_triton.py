"""Pointer chase on GPUs in Triton: one program (block) per ring, one dependent load per step.

Triton runs on NVIDIA and AMD GPUs, Intel XPU and, through triton-ascend, Ascend NPUs, so one
kernel serves every accelerator. The table is an int64 tensor: at the first element of each slot
(``stride_bytes`` apart) sits the element index of the next slot of the same ring. Program ``k``
starts at ring ``k``'s first slot, follows ``steps`` links and stores where it ended, which the
host checks, which keeps the compiler from discarding the loads, and from where the next
launch carries on: a chain shorter than its ring that restarted at the same slot every time
would revisit a few slots that then sit in cache.

This module imports triton at import time; import it only when a GPU chase is wanted. With
``TRITON_INTERPRET=1`` set before import, the kernel runs in Triton's interpreter on CPU tensors,
which is how its logic is tested without a GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import triton
import triton.language as tl

from parity.families.latency.chase.permutation import links_of, random_order
from parity.model.errors import ParityError

INDEX_BYTES = 8


@triton.jit
def chase_kernel(table_ptr, positions_ptr, steps):
    """Program ``pid`` follows ``steps`` links from ``positions[pid]`` and stores where it ended
    back in ``positions[pid]``, so the next launch carries on along the ring."""
    pid = tl.program_id(0)
    idx = tl.load(positions_ptr + pid)
    for _ in range(steps):
        idx = tl.load(table_ptr + idx)
    tl.store(positions_ptr + pid, idx)


def build_table(*, region_bytes: int, stride_bytes: int, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The int64 table of ``count`` random single-cycle rings and each ring's start index (elements).

    Ring ``k`` covers elements ``[k·R, (k+1)·R)`` with ``R = region_bytes / 8``; slot ``s`` of it
    is element ``k·R + s·stride/8`` and holds the element index of its successor. Elements
    between slot heads stay zero and are never read.
    """
    if stride_bytes < INDEX_BYTES or stride_bytes % INDEX_BYTES:
        raise ParityError(f"stride {stride_bytes} B must be a multiple of {INDEX_BYTES} B")
    if region_bytes < 2 * stride_bytes or region_bytes % stride_bytes:
        raise ParityError(f"working set {region_bytes} B must hold at least 2 slots of {stride_bytes} B")
    region = region_bytes // INDEX_BYTES
    per_slot = stride_bytes // INDEX_BYTES
    slots = region_bytes // stride_bytes
    table = np.zeros(region * count, dtype=np.int64)
    heads = np.arange(slots, dtype=np.int64) * per_slot
    for k in range(count):
        nxt = links_of(random_order(slots, seed=seed + k))
        table[k * region + heads] = k * region + nxt * per_slot
    starts = np.arange(count, dtype=np.int64) * region
    return table, starts


class TritonChase:
    """``count`` rings of ``region_bytes`` on a torch device, chased by one block each."""

    def __init__(self, *, device: Any, region_bytes: int, stride_bytes: int = 128, count: int = 1,
                 seed: int = 0) -> None:
        table, starts = build_table(region_bytes=region_bytes, stride_bytes=stride_bytes, count=count, seed=seed)
        where = device.torch_device if hasattr(device, "torch_device") else torch.device(device)
        self.table = torch.from_numpy(table).to(where)
        self.starts_np = starts
        self.positions = torch.from_numpy(starts.copy()).to(where)
        self.count = count
        self.slots = region_bytes // stride_bytes
        self.region_bytes = region_bytes
        self.stride_bytes = stride_bytes
        self.page_label = "device-default"

    def launch(self, steps: int, *, blocks: int | None = None) -> None:
        """Start the kernel with ``blocks`` programs (rings 0..blocks-1, all by default); does not
        wait, so the harness's device events time the kernel alone."""
        grid = (blocks or self.count,)
        chase_kernel[grid](self.table, self.positions, int(steps), num_warps=1)

    def chase(self, steps: int) -> int:
        """Ring 0 alone; returns its end index (waits for the device)."""
        self.launch(steps, blocks=1)
        return int(self.positions[0].item())

    def chase_threads(self, steps: int) -> tuple[int, ...]:
        """Every ring at once, one block each; returns the end indices (waits for the device)."""
        self.launch(steps)
        return tuple(int(v) for v in self.positions.cpu().tolist())

    def step(self, steps: int, *, many: bool) -> None:
        """What the harness times: one launch over ring 0 (``many`` false) or every ring."""
        self.launch(steps, blocks=None if many else 1)

    check_method = "one turn of every ring returns to its start"

    def verify(self) -> bool:
        """True when one full turn brings every ring back to where it was."""
        before = self.positions.cpu().tolist()
        return list(self.chase_threads(self.slots)) == before

    def close(self) -> None:
        del self.table, self.positions
