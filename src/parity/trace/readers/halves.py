"""Read a mid-sized Chrome-trace JSON file in two processes: each parses half of the events.

Parsing (JSON decoding and the column scan) is most of the time of reading a trace of tens
of MB, and it splits cleanly: the reading process inflates the whole file, cuts the event
array near its middle where ``}`` is followed by ``, {`` (a guess at an event boundary), and
forks one child, which parses the second half from the memory it inherits (nothing is
copied to it) while the parent parses the first. The child sends back its numpy columns,
names and counts (:func:`.parallel.merge` appends them after the parent's, so rows, names and
lanes come out in file order, as one process would give them).

A guess inside a string makes the parent's half end inside that string, which never parses;
so when both halves parse, the cut was a boundary. Anything unexpected (a half that does not
parse, a bad event, the child failing) makes :func:`read_halves` return None and the caller
reads the file again in one process, which names the bad event precisely.

Files too large to hold inflated in memory use :mod:`.parallel` instead, and small ones are
not worth a second process; :func:`worth_it` decides.
"""

from __future__ import annotations

import bisect
import logging
import multiprocessing
import os
import re
from collections.abc import Callable
from pathlib import Path

from parity.model.errors import ParityError
from parity.trace.readers import parallel
from parity.trace.readers.columns import Columns
from parity.trace.readers.gzipfile import GZIP_ERRORS, GzipReader, open_binary
from parity.trace.readers.jsonstream import NEXT_EVENT, TRACE_EVENTS, EventStream

log = logging.getLogger(__name__)
# Inflated text below this is read in one process: the fork (6-11 ms here), the pipe and
# the merge cost about what the second half saves. Measured on 2 vCPUs, load_trace and
# analyze(load_trace), alone and beside an idle HTA process, as the median of the ratios
# two processes / one process over pairs run alternately in one process: a 4.8 MB trace
# (HTA's mtia_inference) went from 0.86 to 1.44 over 13 runs of 11-41 pairs, median 0.97 (a
# wash, with losses when the CPU is fast); 9.8 MB (nccl_parser_config) 0.88-0.96 in 8 runs,
# 15-35 MB 0.73-0.92, 54 MB 0.70-0.83, 87 MB 0.64-0.88.
MIN_BYTES = 8 << 20
_OBJECT_START = re.compile(rb"\s*\{")


def worth_it(inflated: int | None) -> bool:
    """Whether to read a file of ``inflated`` text bytes (:func:`.parallel.inflated_bytes_estimate`)
    in two processes: between :data:`MIN_BYTES` and the parallel reader's threshold, fork
    available, two cores, and not every core already running something."""
    if inflated is None or not MIN_BYTES <= inflated < parallel.MIN_PARALLEL_BYTES:
        return False
    if not parallel.can_fork_workers():
        return False
    return _running_others() < parallel.worker_count()


def _running_others() -> float:
    """Processes running or ready to run now besides this one (``/proc/loadavg``), else the
    1-minute load average."""
    try:  # bare descriptor calls: a text-mode file object costs 2.5x as much
        fd = os.open("/proc/loadavg", os.O_RDONLY)
        try:
            running = int(os.read(fd, 256).split()[3].split(b"/")[0])
        finally:
            os.close(fd)
        return running - 1
    except (OSError, ValueError, IndexError):
        return parallel.worker_count() - parallel.idle_cores()


class _Parts:
    """A read-only binary file over byte strings (or memoryviews) laid end to end."""

    def __init__(self, *parts) -> None:
        self._parts = [memoryview(p) for p in parts]
        self._at = 0  # index of the current part
        self._offset = 0  # position within it
        self.position = 0

    def readinto(self, view) -> int:
        """Fill ``view`` from the parts; how many bytes were written (0 at the end)."""
        size, done = len(view), 0
        with memoryview(view) as out:
            while done < size and self._at < len(self._parts):
                part = self._parts[self._at]
                piece = part[self._offset : self._offset + size - done]
                out[done : done + len(piece)] = piece
                done += len(piece)
                self._offset += len(piece)
                if self._offset >= len(part):
                    self._at, self._offset = self._at + 1, 0
        self.position += done
        return done

    def tell(self) -> int:
        return self.position

    def close(self) -> None:
        self._parts = []


class _Text:
    """The inflated file as the chunks the decompressor gave: joining them into one string
    would copy (and page-fault in) the whole text once more for nothing."""

    HEAD = 1 << 20  # bytes searched for the start of the event array

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = [c for c in chunks if c]
        self.offsets = [0]
        for chunk in self.chunks:
            self.offsets.append(self.offsets[-1] + len(chunk))

    def __len__(self) -> int:
        return self.offsets[-1]

    def _chunk_at(self, position: int) -> int:
        return max(bisect.bisect_right(self.offsets, position) - 1, 0)

    def window(self, lo: int, size: int) -> bytes:
        """``size`` bytes from ``lo`` (fewer at the end), joined: for searches only."""
        i = self._chunk_at(lo)
        parts, have = [], 0
        while i < len(self.chunks) and have < size:
            start = lo - self.offsets[i] if not parts else 0
            piece = memoryview(self.chunks[i])[start : start + size - have]
            parts.append(piece)
            have += len(piece)
            i += 1
        return b"".join(parts)

    def views(self, lo: int, hi: int) -> list[memoryview]:
        """Memoryviews over bytes ``lo:hi``, one per chunk they touch (no copy)."""
        out = []
        for i in range(self._chunk_at(lo), len(self.chunks)):
            start, end = self.offsets[i], self.offsets[i + 1]
            if start >= hi:
                break
            out.append(memoryview(self.chunks[i])[max(lo - start, 0) : min(hi, end) - start])
        return out


def _cut(text: _Text) -> tuple[int, int] | None:
    """``(end of the first half, start of the second)``: a guessed event boundary near the
    middle of the event array, or None (no object with ``traceEvents``, or no boundary)."""
    head = text.window(0, _Text.HEAD)
    start = TRACE_EVENTS.search(head)
    if start is None or not _OBJECT_START.match(head):  # the usual object form only
        return None
    middle = start.end() + (len(text) - start.end()) // 2
    for lo in range(middle, len(text), _Text.HEAD):
        near = text.window(lo, _Text.HEAD + 64)  # overlapping windows: no boundary missed
        boundary = NEXT_EVENT.search(near)
        if boundary is not None:
            return lo + boundary.start() + 1, lo + boundary.end() - 1
    return None


def _child(conn, path: Path, text: _Text, second: int, decoders: tuple, scan_stream, make_state) -> None:
    """Parse the second half and send its payload (None on any failure) to the parent."""
    payload = None
    try:
        state = make_state()
        stream = EventStream(path, decoder=decoders[0], exact_decoder=decoders[1],
                             source=_Parts(b"[", *text.views(second, len(text))))  # fmt: skip
        cols = Columns()
        count = scan_stream(stream, cols, state)
        payload = {"blocks": dict(cols.blocks), "names": list(cols.names), "rows": cols.rows,
                   "header": stream.header, "count": count, **state.payload()}  # fmt: skip
    except Exception:  # noqa: BLE001 - any failure means: read this file in one process
        payload = None
    conn.send(payload)
    conn.close()


def read_halves(path: Path, *, decoders: tuple, scan_stream: Callable, make_state: Callable,
                progress: Callable | None = None):  # fmt: skip
    """``(cols, state, header)`` of the whole file, or None to ask for the one-process reader.

    ``decoders`` is ``(decoder, exact_decoder)`` for :class:`EventStream`; ``make_state()``
    gives a fresh scan state; ``scan_stream(stream, cols, state)`` scans a whole stream into
    ``cols`` and returns its number of events.
    """
    try:
        with open_binary(path) as handle:
            text = _Text(handle.read_chunks() if isinstance(handle, GzipReader) else [handle.read()])
    except (OSError, EOFError, ParityError, *GZIP_ERRORS):
        return None
    cut = _cut(text)
    if cut is None:
        return None
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(send, path, text, cut[1], decoders, scan_stream, make_state),
                            daemon=True)  # fmt: skip
    try:
        child.start()
    except (AssertionError, OSError) as exc:  # a daemon process may not fork; out of processes
        log.debug("two-process read of %s not started: %s", path, exc)
        receive.close()
        send.close()
        return None
    send.close()
    payload = None
    try:
        state = make_state()
        stream = EventStream(path, decoder=decoders[0], exact_decoder=decoders[1],
                             source=_Parts(*text.views(0, cut[0]), b"]}"))  # fmt: skip
        cols = Columns()
        count = scan_stream(stream, cols, state)
        if progress is not None:
            progress(len(text) // 2, len(text), str(path))
        payload = receive.recv()
    except (ParityError, EOFError, OSError) as exc:
        log.debug("two-process read of %s falls back to one process: %s", path, exc)
    finally:
        receive.close()
        if payload is None:  # failed: do not wait for the child's half
            child.terminate()
        child.join()
    if payload is None:
        return None
    payload["marks"] = [(*mark[:6], mark[6] + count) for mark in payload["marks"]]
    parallel.merge(payload, cols, state)
    header = dict(stream.header)
    header.update(payload["header"])
    return cols, state, header
