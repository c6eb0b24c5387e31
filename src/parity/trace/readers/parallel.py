"""Parse the blocks of a large Chrome-trace JSON file on several cores.

The reading process cuts the event array into blocks without parsing (``EventStream`` raw mode,
a guess at event boundaries) and worker processes parse and scan them into numpy columns,
which come back in file order and are merged (names re-encoded into one dictionary). A block
parses only if the guess was right, and the guess for block ``i + 1`` starts where block ``i``
ended, so when every block parses, every cut was a true boundary. Anything unexpected (a
block that does not parse, a bad event, a worker failure) makes :func:`read_parallel` return
None and the caller reads the file again in one process, which gives the precise error.

Memory stays bounded: at most ``2 * workers`` blocks are in flight. Workers are forked for the
call (so a caller's script needs no ``__main__`` guard) and the pool is closed before it
returns; they only parse and compute, never log or print, so locks another thread held at
fork time are never needed in them. :func:`default_workers` picks how many processes a read
uses from the file's size alone.
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
GZIP_FLOOR_RATIO = 8  # inflated/compressed size assumed when the gzip trailer cannot be trusted
# The default number of processes by text size alone (the same on every machine and whatever
# else runs on it), from timings on 2 vCPUs (median ratios to one process over pairs run
# alternately): a child forked per file made 1.8 MB take 1.10 to 1.66 of one process and
# 4.8 MB a wash, 9.8 MB 0.88 to 0.96, 15 to 87 MB 0.64 to 0.92; so two processes from 8 MB.
# From 256 MB a pool of four (bounded memory: at most 2 * workers blocks in flight); below
# it the two-process read was faster than a pool (35, 54, 87 MB: 0.83 / 0.70 / 0.79 against
# 1.38 / 1.29 / 2.14).
TWO_PROCESS_BYTES = 8 << 20
POOL_BYTES = 256 << 20
POOL_WORKERS = 4


def default_workers(inflated: int | None) -> int:
    """Processes for a file of ``inflated`` text bytes (:func:`inflated_bytes_estimate`): 1 below
    :data:`TWO_PROCESS_BYTES` (or when the size is unknown), 2 below :data:`POOL_BYTES`, else
    :data:`POOL_WORKERS`."""
    if inflated is None or inflated < TWO_PROCESS_BYTES:
        return 1
    return 2 if inflated < POOL_BYTES else POOL_WORKERS


def can_fork() -> bool:
    """Whether worker processes can be forked on this platform."""
    return "fork" in multiprocessing.get_all_start_methods()


def inflated_bytes_estimate(path: Path) -> int | None:
    """The text size of a trace in bytes, from one open of the file; None when it cannot be read.

    A plain file is its size. A gzip file is the larger of its trailer's ISIZE field (the
    inflated length mod 2**32 of its last member: exact for one member under 4 GiB, RFC 1952
    section 2.3.1) and :data:`GZIP_FLOOR_RATIO` times its compressed size, a floor for the
    files whose trailer says less (several members, 4 GiB or more). Kineto JSON inflates
    13-29x, so the trailer decides for the usual trace.
    """
    try:  # bare descriptor calls: a buffered file object costs 3x as much here
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            if os.read(fd, 2) != GZIP_MAGIC:
                return size
            trailer = 0
            if size >= 6:
                os.lseek(fd, -4, os.SEEK_END)
                trailer = int.from_bytes(os.read(fd, 4), "little")
        finally:
            os.close(fd)
    except OSError:
        return None
    return max(trailer, GZIP_FLOOR_RATIO * size)


def read_parallel(path: Path, scan_text: Callable, scan_events: Callable, state, progress=None, *,
                  workers: int = POOL_WORKERS):
    """Columns of every block of ``path``, or None to ask for the one-process reader.

    ``scan_text(path, text)`` runs in one of ``workers`` processes (a pool forked for this call
    and closed before it returns) and returns a payload (see :func:`merge`) or None;
    ``scan_events(events, cols, state)`` scans the last block, parsed here.
    """
    stream = EventStream(path, raw=True)
    cols = Columns()
    context = multiprocessing.get_context("fork")
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
