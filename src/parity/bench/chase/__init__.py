"""Native pointer chase on the CPU: rings of cache-line slots, one thread per block.

The chase itself is a small C extension (``_chase.c``, built at install, optional): Python's
interpreter costs tens of nanoseconds per step, more than an L1 or L2 hit, so only compiled code
can time a dependent load. Rings are laid out here with numpy in memory of a chosen page size
(``pages.py``) through a Sattolo permutation (``permutation.py``).
"""

from __future__ import annotations

import importlib
from types import ModuleType

import numpy as np

from parity.bench.chase.pages import PagedBuffer, page_label
from parity.bench.chase.permutation import sattolo_cycle
from parity.model.errors import ParityError

POINTER_BYTES = 8


def native() -> ModuleType:
    """The compiled chase module, or a ParityError saying how to build it."""
    try:
        return importlib.import_module("parity.bench.chase._chase")
    except ImportError:
        raise ParityError(
            "the native pointer chase (parity.bench.chase._chase) is not built: install a C "
            "compiler (gcc or clang) and reinstall parity (pip install -e . from the source tree)"
        ) from None


class ChaseRings:
    """``count`` independent rings of ``region_bytes`` each, at ``stride_bytes`` per slot.

    Ring ``k`` occupies bytes ``[k·region, (k+1)·region)`` of one buffer and visits each of its
    ``region/stride`` slots once per turn, in Sattolo order (seed ``seed + k``). Each slot's first
    8 bytes hold the address of the next slot.
    """

    def __init__(
        self, *, region_bytes: int, stride_bytes: int = 64, count: int = 1, page: str = "base", seed: int = 0
    ) -> None:
        if stride_bytes < POINTER_BYTES or stride_bytes % POINTER_BYTES:
            raise ParityError(f"stride {stride_bytes} B must be a multiple of {POINTER_BYTES} B")
        if region_bytes < 2 * stride_bytes or region_bytes % stride_bytes:
            raise ParityError(
                f"working set {region_bytes} B must be a multiple of the {stride_bytes} B stride "
                "holding at least 2 slots"
            )
        if count < 1:
            raise ParityError(f"need at least one ring, got {count}")
        self._native = native()
        self.region_bytes = region_bytes
        self.stride_bytes = stride_bytes
        self.count = count
        self.slots = region_bytes // stride_bytes
        self.page = page
        self.page_label = page_label(page)
        self.memory = PagedBuffer(nbytes=region_bytes * count, page=page)
        words = self.memory.array(np.uint64)
        slot_words = np.arange(self.slots, dtype=np.int64) * (stride_bytes // POINTER_BYTES)
        for k in range(count):
            nxt = sattolo_cycle(self.slots, seed=seed + k)
            base = k * region_bytes
            words[base // POINTER_BYTES + slot_words] = np.uint64(self.memory.address + base) + (
                nxt.astype(np.uint64) * np.uint64(stride_bytes)
            )
        del words
        self.starts = [k * region_bytes for k in range(count)]
        self.positions = list(self.starts)

    def chase(self, steps: int, *, ring: int = 0) -> int:
        """Follow ``steps`` links of one ring on this thread, from where the last call stopped.

        Carrying on from the last position matters: a chain shorter than its ring that always
        restarted at slot 0 would revisit the same few slots, which would then sit in cache.
        Returns the end offset.
        """
        end = int(self._native.chase(self.memory.view, self.positions[ring], int(steps)))
        self.positions[ring] = end
        return end

    def chase_threads(self, steps: int) -> tuple[int, ...]:
        """Follow ``steps`` links of every ring at once, one thread per ring, each carrying on
        from where it stopped; returns the end offsets."""
        ends = tuple(int(e) for e in self._native.chase_threads(self.memory.view, self.positions, int(steps)))
        self.positions = list(ends)
        return ends

    def step(self, steps: int, *, many: bool) -> None:
        """What the harness times: ring 0 on this thread, or every ring on its own thread."""
        if many:
            self.chase_threads(steps)
        else:
            self.chase(steps)

    def verify(self) -> bool:
        """True when one full turn of every ring returns to where it was (the rings are whole)."""
        before = list(self.positions)
        ends = self.chase_threads(self.slots) if self.count > 1 else (self.chase(self.slots),)
        return list(ends) == before

    def close(self) -> None:
        self.memory.close()

    def __enter__(self) -> ChaseRings:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
