"""Parse the blocks of a large Chrome-trace JSON file on several cores.

The reading process cuts the event array into blocks without parsing (``EventStream`` raw mode,
a guess at event boundaries) and worker processes parse and scan them into numpy columns,
which come back in file order and are merged (names re-encoded into one dictionary). A block
parses only if the guess was right, and the guess for block ``i + 1`` starts where block ``i``
ended, so when every block parses, every cut was a true boundary. Anything unexpected (a
block that does not parse, a bad event, a worker failure) makes :func:`read_parallel` return
None and the caller reads the file again in one process, which gives the precise error.

Memory stays bounded: at most ``2 * workers`` blocks are in flight. Workers are forked (so a
caller's script needs no ``__main__`` guard); they only parse and compute, never log or print,
so locks another thread held at fork time are never needed in them.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections import deque
from collections.abc import Callable
from pathlib import Path

import numpy as np

from parity.model.errors import ParityError
from parity.trace.readers.columns import Columns
from parity.trace.readers.gzipfile import GZIP_MAGIC
from parity.trace.readers.jsonstream import EventStream

log = logging.getLogger(__name__)
MIN_PARALLEL_BYTES = 96 << 20  # below this one process is faster than starting workers
MAX_WORKERS = 4


def worker_count() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return min(cpus, MAX_WORKERS)


def idle_cores() -> float:
    """Cores not busy with other work (available cores minus the 1-minute load average)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - no load average on this platform
        return float(worker_count())
    return worker_count() - load


def can_fork_workers() -> bool:
    """Whether worker processes can be forked and there are at least two cores for them."""
    return "fork" in multiprocessing.get_all_start_methods() and worker_count() >= 2


def inflated_bytes_estimate(path: Path) -> int | None:
    """The text size of a trace, estimated from its size on disk: gzip counts 8x (Kineto JSON
    compresses about that much). None when the file cannot be read."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            gz = handle.read(2) == GZIP_MAGIC
    except OSError:
        return None
    return size * (8 if gz else 1)


def worth_it(path: Path) -> bool:
    """Large enough (:func:`inflated_bytes_estimate`), more than one core, and a core idle.

    Workers spend about 20% more CPU than one process (blocks and columns cross process
    boundaries), so they pay off only when another core is free; on a machine already busy
    with other work one process finishes sooner. The table is the same either way.
    """
    inflated = inflated_bytes_estimate(path)
    if inflated is None or inflated < MIN_PARALLEL_BYTES or not can_fork_workers():
        return False
    return idle_cores() >= 1.0


def read_parallel(path: Path, scan_text: Callable, scan_events: Callable, state, progress=None):
    """Columns of every block of ``path``, or None to ask for the one-process reader.

    ``scan_text(path, text)`` runs in a worker and returns a payload (see :func:`merge`) or
    None; ``scan_events(events, cols, state)`` scans the last block, parsed here.
    """
    stream = EventStream(path, raw=True)
    cols = Columns()
    context = multiprocessing.get_context("fork")
    workers = worker_count()
    with context.Pool(workers) as pool:
        pending: deque = deque()
        try:
            for _first, block in stream:
                if isinstance(block, bytes):
                    pending.append(pool.apply_async(scan_text, (str(path), block)))
                    if len(pending) >= 2 * workers and not merge(pending.popleft().get(), cols, state):
                        return None
                else:
                    while pending:
                        if not merge(pending.popleft().get(), cols, state):
                            return None
                    scan_events(block, cols, state)
                if progress is not None:
                    progress(stream.bytes_read, stream.total_bytes, str(path))
            while pending:
                if not merge(pending.popleft().get(), cols, state):
                    return None
        except ParityError as exc:
            log.debug("parallel read of %s falls back to one process: %s", path, exc)
            return None
    return cols, stream.header


def merge(payload: dict | None, cols: Columns, state) -> bool:
    """Append a worker's columns to ``cols`` (names re-encoded) and its counts to ``state``."""
    if payload is None:
        return False
    names = payload["names"]
    mapping = np.array([cols.intern(n) for n in names] or [0], dtype=np.int32)
    blocks = payload["blocks"]
    for index, name_ids in enumerate(blocks.get("name_id", [])):
        blocks["name_id"][index] = mapping[name_ids] if len(name_ids) else name_ids
    for key, parts in blocks.items():
        cols.blocks[key].extend(parts)
    cols.rows += payload["rows"]
    state.absorb(payload)
    return True
