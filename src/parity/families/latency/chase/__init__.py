"""Native pointer chase on the CPU: rings of cache-line slots, one thread per block.

The chase itself is a small C extension (``_chase.c``, built at install, optional): Python's
interpreter costs tens of nanoseconds per step, more than an L1 or L2 hit, so only compiled code
can time a dependent load. Rings are laid out here with numpy in memory of a chosen page size
(``pages.py``) as random single cycles with a known visiting order (``permutation.py``), which
is what lets every chase be checked without chasing a whole turn.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import numpy as np

from parity.device.pages import PagedBuffer, page_label
from parity.families.latency.chase.permutation import links_of, random_order
from parity.model.errors import ParityError

POINTER_BYTES = 8


def native() -> ModuleType:
    """The compiled chase module, or a ParityError saying how to build it."""
    try:
        return importlib.import_module("parity.families.latency.chase._chase")
    except ImportError:
        raise ParityError(
            "the native pointer chase (parity.families.latency.chase._chase) is not built: install a C "
            "compiler (gcc or clang) and reinstall parity (pip install -e . from the source tree)"
        ) from None


class ChaseRings:
    """``count`` independent rings of ``region_bytes`` each, at ``stride_bytes`` per slot.

    Ring ``k`` occupies bytes ``[k·region, (k+1)·region)`` of one buffer and visits each of its
    ``region/stride`` slots once per turn, in the random order ``random_order(slots, seed + k)``.
    Each slot's first 8 bytes hold the address of the next slot. Every chase is checked as it
    returns: it must end on the slot the order says, ``steps`` after where the ring stood
    (``mismatches`` counts those that did not).
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
        self.orders = [random_order(self.slots, seed=seed + k) for k in range(count)]
        self._write_rings()
        self.starts = [k * region_bytes for k in range(count)]
        self.positions = list(self.starts)
        self.taken = [0] * count  # steps taken so far on each ring, modulo its slots
        self.mismatches = 0

    def _slot_words(self, ring: int) -> slice:
        """The words that begin ring ``ring``'s slots, as a strided slice of the buffer's words."""
        first = ring * self.region_bytes // POINTER_BYTES
        return slice(first, first + self.slots * (self.stride_bytes // POINTER_BYTES), self.stride_bytes // POINTER_BYTES)

    def _expected(self, ring: int) -> np.ndarray:
        """The address each slot of ring ``ring`` must hold: its successor's."""
        base = np.uint64(self.memory.address + ring * self.region_bytes)
        return base + links_of(self.orders[ring]).astype(np.uint64) * np.uint64(self.stride_bytes)

    def _write_rings(self) -> None:
        words = self.memory.array(np.uint64)
        for k in range(self.count):
            words[self._slot_words(k)] = self._expected(k)
        del words

    def _record(self, ring: int, steps: int, end: int) -> None:
        """Check one chase's end against the ring's order, then move the ring on."""
        self.taken[ring] = (self.taken[ring] + steps) % self.slots
        want = ring * self.region_bytes + int(self.orders[ring][self.taken[ring]]) * self.stride_bytes
        self.mismatches += end != want
        self.positions[ring] = end

    def chase(self, steps: int, *, ring: int = 0) -> int:
        """Follow ``steps`` links of one ring on this thread, from where the last call stopped.

        Carrying on from the last position matters: a chain shorter than its ring that always
        restarted at slot 0 would revisit the same few slots, which would then sit in cache.
        Returns the end offset.
        """
        end = int(self._native.chase(self.memory.view, self.positions[ring], int(steps)))
        self._record(ring, int(steps), end)
        return end

    def chase_threads(self, steps: int) -> tuple[int, ...]:
        """Follow ``steps`` links of every ring at once, one thread per ring, each carrying on
        from where it stopped; returns the end offsets."""
        ends = tuple(int(e) for e in self._native.chase_threads(self.memory.view, self.positions, int(steps)))
        for k, end in enumerate(ends):
            self._record(k, int(steps), end)
        return ends

    def step(self, steps: int, *, many: bool) -> None:
        """What the harness times: ring 0 on this thread, or every ring on its own thread."""
        if many:
            self.chase_threads(steps)
        else:
            self.chase(steps)

    check_method = "every slot holds its successor in the ring's order and every chase ended where the order says"

    def verify(self) -> bool:
        """True when every ring in memory is whole and every chase so far followed it.

        Whole: each slot holds its successor's address in the ring's order (a vectorised pass
        over the slots, no chase), which makes each ring one cycle through all its slots. Followed:
        every chase ended on the slot the order predicts (``mismatches`` is zero).
        """
        words = self.memory.array(np.uint64)
        whole = all(np.array_equal(words[self._slot_words(k)], self._expected(k)) for k in range(self.count))
        del words
        return whole and self.mismatches == 0

    def close(self) -> None:
        self.memory.close()

    def __enter__(self) -> ChaseRings:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
