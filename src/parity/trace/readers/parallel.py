"""Parse a large Chrome-trace JSON file in ``workers`` processes, one share of its text each.

The first ``}`` followed by ``, {`` at or after ``k * size / workers`` is a guessed event boundary
between shares ``k - 1`` and ``k``, the same in every process. This process parses share 0, a
child forked for each other share (joined before the call returns) seeks to its own, and their
columns are appended in file order. A guess inside a string or a nested object leaves a share
that does not parse, so when every share parses (share 0 holding the array's start) every cut
was a boundary; anything else makes :func:`read_shares` return None, and the caller reads in
one process, naming a bad event.
"""

from __future__ import annotations

import logging
import os
import re
import signal
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

from parity.model.errors import ParityError
from parity.trace.readers.jsonstream import BLOCK_BYTES, GZIP_MAGIC, open_binary

log = logging.getLogger(__name__)
GZIP_FLOOR_RATIO = 8  # inflated/compressed size assumed when the gzip trailer cannot be trusted
# Processes by text size alone, from timings on 2 vCPUs (ratio to one process: 1.8 MB 1.10-1.66,
# 4.8 MB a wash, 9.8 MB 0.88-0.96, 15-87 MB 0.64-0.92): two from 8 MB, four from 256 MB.
TWO_PROCESS_BYTES = 8 << 20
FOUR_PROCESS_BYTES = 256 << 20
NEXT_EVENT = re.compile(rb"\}\s*,\s*\{")  # a guessed boundary between two events
STEP_BYTES = 64 << 10  # text read at a time while looking for a boundary


def default_workers(inflated: int | None) -> int:
    """Processes for a file of ``inflated`` text bytes (:func:`inflated_bytes_estimate`): 1 below
    :data:`TWO_PROCESS_BYTES` (or when the size is unknown), 2 below :data:`FOUR_PROCESS_BYTES`,
    else 4."""
    if inflated is None or inflated < TWO_PROCESS_BYTES:
        return 1
    return 2 if inflated < FOUR_PROCESS_BYTES else 4


def inflated_bytes_estimate(path: Path) -> int | None:
    """The text size of a trace in bytes (None when unreadable): a plain file's size, or for gzip
    the larger of its trailer's ISIZE (the last member's inflated length mod 2**32, RFC 1952
    2.3.1: exact for one member under 4 GiB) and :data:`GZIP_FLOOR_RATIO` times the compressed
    size (Kineto JSON inflates 13-29x, so the trailer decides for the usual trace)."""
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


def read_shares(path: Path, *, size: int, workers: int, parse: Callable):
    """``(cols, state, header)`` of the whole file, or None to ask for the one-process reader;
    ``size`` is the text size (:func:`inflated_bytes_estimate`), ``parse(path, source)`` scans the
    text of ``source`` (a :class:`Share`) into ``(cols, state, stream)``."""
    import multiprocessing  # only when a file is read in shares: a small trace never pays its import

    if size < workers or "fork" not in multiprocessing.get_all_start_methods():
        return None
    offsets = [size * k // workers for k in range(workers)] + [None]
    context = multiprocessing.get_context("fork")
    children = []
    try:
        for k in range(1, workers):
            ours, theirs = context.Pipe(duplex=False)
            child = context.Process(target=_child, args=(theirs, path, offsets[k], offsets[k + 1], parse), daemon=True)
            child.start()
            theirs.close()
            children.append((child, ours))
        with closing(Share(path, 0, offsets[1])) as source:
            cols, state, stream = parse(path, source)
        if not stream.found_events:
            return None  # the event array starts after the first cut: the cuts are not in it
        header, count = stream.header, stream.count
        for _, ours in children:
            done = ours.recv()
            if done is None:
                return None
            cols.append(done[0])
            state.absorb(done[1], count)
            header.update(done[2])
            count += done[3]
    except (ParityError, EOFError, OSError, AssertionError) as exc:  # AssertionError: inside a daemon
        log.debug("read of %s in %d processes falls back to one process: %s", path, workers, exc)
        return None
    finally:
        for child, ours in children:
            ours.close()
            if child.is_alive():
                child.terminate()
            child.join()
    return cols, state, header


def _child(conn, path: Path, begin: int, end: int | None, parse: Callable) -> None:
    """A forked child: send its share's ``(cols, state, header, events)``, or None when it fails."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the reading process to handle
    try:
        with closing(Share(path, begin, end)) as source:
            cols, state, stream = parse(path, source)
        reply = (cols, state, stream.header, stream.count)
    except Exception:  # noqa: BLE001 - None asks the reading process to read alone
        reply = None
    try:
        conn.send(reply)
    finally:
        conn.close()


class Share:
    """The text of one share as a binary file (``readinto``, ``fileobj``), bracketed to parse alone:
    share 0 is the text up to the ``}`` of the boundary after ``end`` and ``]}`` (closing the
    array and the object around it); a later one ``[`` and the text from the ``{`` of the
    boundary after ``begin``. Without a boundary after ``end`` (or ``end`` None) a share runs to
    the end of the file; without one between ``begin`` and ``end`` it is empty (``[]``)."""

    def __init__(self, path: Path, begin: int, end: int | None) -> None:
        self.handle = open_binary(path)
        self.fileobj = getattr(self.handle, "fileobj", self.handle)  # its position is the progress made
        self.chunks = self._text(begin, end)
        self.pending = memoryview(b"")

    def _text(self, begin: int, end: int | None) -> Iterator[bytes]:
        start = self.handle.seek(begin)  # the position of the first byte of ``text``
        text = b""
        if begin:
            text, boundary = self._boundary(text, start, begin)
            if boundary is None or (end is not None and start + boundary.start() >= end):
                yield b"[]"  # no boundary inside the share: its text belongs to the next one
                return
            yield b"["
            start, text = start + boundary.end() - 1, text[boundary.end() - 1 :]
        buffer = bytearray(BLOCK_BYTES)  # reused: the reader copies each piece out before the next
        while end is None or start + len(text) <= end:  # all before ``end``: hand it on
            yield text
            start, text = start + len(text), memoryview(buffer)[: self.handle.readinto(buffer)]
            if not text:
                return
        text, boundary = self._boundary(bytes(text), start, end)
        yield text if boundary is None else text[: boundary.start() + 1] + (b"]" if begin else b"]}")

    def _boundary(self, text: bytes, start: int, offset: int) -> tuple[bytes, re.Match | None]:
        """Read on after ``text`` (the file's text from ``start``) until a boundary at or after
        ``offset`` shows: the text and the match (None at the end of the file)."""
        while not (boundary := NEXT_EVENT.search(text, offset - start)):
            more = self.handle.read(STEP_BYTES)
            if not more:
                return text, None
            text += more
        return text, boundary

    def readinto(self, view) -> int:
        """Fill ``view`` with the next text of the share; how many bytes (0 at its end)."""
        while not len(self.pending):
            chunk = next(self.chunks, None)
            if chunk is None:
                return 0
            self.pending = memoryview(chunk)
        count = min(len(view), len(self.pending))
        view[:count] = self.pending[:count]
        self.pending = self.pending[count:]
        return count

    def close(self) -> None:
        self.handle.close()
