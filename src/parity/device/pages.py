"""Anonymous memory with a chosen page size: 4 KiB pages or transparent huge pages (THP).

Page size changes pointer-chase latency: with 4 KiB pages a random walk over a large working
set misses the TLB on almost every load and pays a page walk on top of the memory access; with
2 MiB pages the TLB covers gigabytes. So every figure is labelled with the page size it used,
and THP is checked, not assumed: the kernel may refuse or only partly grant it, so the share of
the buffer backed by huge pages is read back from ``/proc/self/smaps``.
"""

from __future__ import annotations

import logging
import mmap
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from parity.model.errors import ParityError

log = logging.getLogger(__name__)

THP_ENABLED = Path("/sys/kernel/mm/transparent_hugepage/enabled")
THP_SIZE = Path("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
DEFAULT_HUGE_BYTES = 2 * 1024 * 1024


def base_page_bytes() -> int:
    """The OS's base page size in bytes (4096 on x86-64 Linux)."""
    return int(os.sysconf("SC_PAGE_SIZE")) if hasattr(os, "sysconf") else mmap.PAGESIZE


def huge_page_bytes() -> int:
    """The transparent huge page size in bytes (2 MiB on x86-64)."""
    try:
        return int(THP_SIZE.read_text().strip())
    except (OSError, ValueError):
        return DEFAULT_HUGE_BYTES


def available_memory_bytes(*, meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """Memory a new buffer can take without swapping, in bytes: ``MemAvailable`` of
    ``/proc/meminfo`` (KiB there), else free physical pages times the page size, else None."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        log.debug("%s unreadable; falling back to sysconf", meminfo)
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * base_page_bytes()
    except (AttributeError, ValueError, OSError):
        return None


def thp_unavailable_reason() -> str | None:
    """Why THP cannot be requested here, or None when ``madvise(MADV_HUGEPAGE)`` may work."""
    if not sys.platform.startswith("linux") or not hasattr(mmap, "MADV_HUGEPAGE"):
        return "transparent huge pages are a Linux feature; this OS has none"
    try:
        mode = THP_ENABLED.read_text()
    except OSError:
        return f"{THP_ENABLED} is unreadable: the kernel has no transparent huge pages"
    if "[never]" in mode:
        return f"transparent huge pages are disabled ({THP_ENABLED} is 'never')"
    return None


def page_label(page: str) -> str:
    """The human label of a page-size choice: ``4KiB`` or ``2MiB-THP``."""
    if page == "base":
        return f"{base_page_bytes() // 1024}KiB"
    if page == "thp":
        return f"{huge_page_bytes() // (1024 * 1024)}MiB-THP"
    raise ParityError(f"unknown page size {page!r}; use 'base' or 'thp'")


@dataclass
class PagedBuffer:
    """``nbytes`` of zeroed anonymous memory, aligned to the huge page size.

    ``page`` is ``"base"`` (huge pages refused with MADV_NOHUGEPAGE) or ``"thp"`` (requested with
    MADV_HUGEPAGE). ``view`` is a writable memoryview of exactly ``nbytes``; ``address`` its
    first byte. Call :meth:`close` (or use ``with``) to unmap.
    """

    nbytes: int
    page: str

    def __post_init__(self) -> None:
        if self.nbytes <= 0:
            raise ParityError(f"buffer size {self.nbytes} B must be positive")
        if self.page == "thp" and (reason := thp_unavailable_reason()):
            raise ParityError(reason + "; measure with base pages only")
        align = huge_page_bytes()
        # Whole huge pages around the buffer, so even a 4 KiB working set can sit in one.
        span = -(-self.nbytes // align) * align
        self._map = mmap.mmap(-1, span + align, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        advice = mmap.MADV_HUGEPAGE if self.page == "thp" else getattr(mmap, "MADV_NOHUGEPAGE", None)
        if advice is not None:
            self._map.madvise(advice)
        raw = np.frombuffer(self._map, dtype=np.uint8)
        self._offset = (-raw.ctypes.data) % align
        self.view = memoryview(self._map)[self._offset : self._offset + self.nbytes]
        self.address = raw.ctypes.data + self._offset
        del raw

    def array(self, dtype: type = np.uint64) -> np.ndarray:
        """The buffer as a numpy array of ``dtype`` (shares memory)."""
        return np.frombuffer(self.view, dtype=dtype)

    def huge_fraction(self) -> float:
        """Share of the mapping backed by huge pages now (0..1), from ``/proc/self/smaps``."""
        if not sys.platform.startswith("linux"):
            return 0.0
        return min(1.0, _anon_huge_bytes(self.address) / self.nbytes)

    def close(self) -> None:
        self.view.release()
        try:
            self._map.close()
        except BufferError:  # a numpy view is still alive; the map goes with it
            log.debug("buffer still exported; unmapped when the last view dies")

    def __enter__(self) -> PagedBuffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _anon_huge_bytes(address: int) -> int:
    """``AnonHugePages`` of the mapping containing ``address``, in bytes (0 when unreadable)."""
    try:
        lines = Path("/proc/self/smaps").read_text().splitlines()
    except OSError:
        return 0
    inside = False
    for line in lines:
        head = line.split(" ", 1)[0]
        if "-" in head and ":" not in head:
            lo, hi = (int(v, 16) for v in head.split("-"))
            inside = lo <= address < hi
        elif inside and line.startswith("AnonHugePages:"):
            return int(line.split()[1]) * 1024
    return 0
