"""Parse a large Chrome-trace JSON file in ``workers`` processes, one share of its text each.

The text is cut into shares at guessed event boundaries: the first ``}`` followed by ``, {`` at
or after ``k * size / workers`` ends share ``k - 1`` and starts share ``k``. This process parses
share 0; a child forked per other share (joined before the call returns) opens the file, drops
the text before its share (seeks a plain file, inflates a gzip one), finds the same boundary and
parses its share. :func:`merge` appends the children's columns in file order, so the table is
the one a single process builds.

A guess inside a string leaves a share that never parses, so when every share parses every cut
was a boundary. Anything unexpected (a share that does not parse, a bad event, a failing child,
shares that disagree about a boundary) makes :func:`read_shares` return None, and the caller
reads the file in one process, which names the bad event.
"""

from __future__ import annotations

import io
import logging
import multiprocessing
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path

import numpy as np

from parity.model.errors import ParityError
from parity.trace.readers.columns import Columns
from parity.trace.readers.gzipfile import GZIP_MAGIC, open_binary
from parity.trace.readers.jsonstream import TRACE_EVENTS

log = logging.getLogger(__name__)
GZIP_FLOOR_RATIO = 8  # inflated/compressed size assumed when the gzip trailer cannot be trusted
# Processes by text size alone, from timings on 2 vCPUs (ratio to one process: 1.8 MB 1.10-1.66,
# 4.8 MB a wash, 9.8 MB 0.88-0.96, 15-87 MB 0.64-0.92): two from 8 MB, four from 256 MB.
TWO_PROCESS_BYTES = 8 << 20
FOUR_PROCESS_BYTES = 256 << 20
NEXT_EVENT = re.compile(rb"\}\s*,\s*\{")  # a guessed boundary between two events
_EVENTS_START = re.compile(rb"\A\s*\[|" + TRACE_EVENTS.pattern)  # what share 0's first read shows


def default_workers(inflated: int | None) -> int:
    """Processes for a file of ``inflated`` text bytes (:func:`inflated_bytes_estimate`): 1 below
    :data:`TWO_PROCESS_BYTES` (or when the size is unknown), 2 below :data:`FOUR_PROCESS_BYTES`,
    else 4."""
    if inflated is None or inflated < TWO_PROCESS_BYTES:
        return 1
    return 2 if inflated < FOUR_PROCESS_BYTES else 4


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


class Share:
    """The text from the boundary after ``begin`` to the boundary after ``end`` as a binary file
    (``readinto``), bracketed so it parses alone: share 0 (``begin == 0``) is the text up to the
    end boundary's ``}`` and then ``]}`` (closing the event array and the object around it);
    a later share is ``[`` and the text from its begin boundary's ``{``; the last share
    (``end`` None) runs to the end of the file. ``empty``: no boundary follows ``begin`` (the
    previous share runs to the end); ``cut``: a boundary follows ``end`` (the next share is
    not empty).
    """

    STEP = 64 << 10  # text read at a time while looking for a boundary, by every process

    def __init__(self, path: Path, begin: int, end: int | None) -> None:
        self.handle = open_binary(path)
        self.fileobj = getattr(self.handle, "fileobj", self.handle)  # for progress: the file's position
        self.begin, self.end = begin, end
        self.position = 0  # text read from ``handle``
        self.pending = memoryview(b"")  # text to hand out before reading ``handle`` again
        self.empty = False
        self.cut: bool | None = None  # whether a boundary follows ``end`` (None: not looked yet)
        if begin:
            self._skip_to(begin)
            boundary, seen = self._boundary()
            self.empty = boundary is None
            self.pending = memoryview(b"[" + seen[boundary.end() - 1 :] if boundary else b"")
            if end is not None and self.position > end:
                raise ParityError(f"{path}: a share of {end - begin} bytes is shorter than one event")

    def _skip_to(self, offset: int) -> None:
        if isinstance(self.handle, io.BufferedReader):  # plain text: straight there
            self.position = self.handle.seek(offset)
            return
        with memoryview(bytearray(1 << 20)) as sink:  # gzip: inflate and drop
            while self.position < offset:
                count = self.handle.readinto(sink[: offset - self.position])
                if not count:
                    break
                self.position += count

    def _boundary(self) -> tuple[re.Match | None, bytes]:
        """Read in :data:`STEP` pieces until a boundary shows or the file ends: the match and
        the text read."""
        seen = bytearray()
        while chunk := self.handle.read(self.STEP):
            self.position += len(chunk)
            seen += chunk
            if boundary := NEXT_EVENT.search(seen):
                return boundary, bytes(seen)
        return None, bytes(seen)

    def readinto(self, view) -> int:
        """Fill ``view`` with the next text of this share; how many bytes (0 at its end)."""
        with memoryview(view) as out:
            if len(self.pending):
                count = min(len(out), len(self.pending))
                out[:count] = self.pending[:count]
                self.pending = self.pending[count:]
                return count
            if self.empty or self.cut is not None:
                return 0
            wanted = out if self.end is None else out[: self.end - self.position]
            count = self.handle.readinto(wanted) if len(wanted) else 0
            if self.position == 0 and count and not _EVENTS_START.search(out[:count]):
                raise ParityError("the event array does not start in the first share's first read")
            self.position += count
            if count or self.end is None:
                return count
            boundary, seen = self._boundary()
            self.cut = boundary is not None
            self.pending = memoryview(seen[: boundary.start() + 1] + (b"]}" if self.begin == 0 else b"]")
                                      if boundary else seen)  # fmt: skip
            return self.readinto(out) if len(self.pending) else 0

    def close(self) -> None:
        self.handle.close()


def _parse_share(path: Path, begin: int, end: int | None, parse: Callable):
    """``(cols, state, header, events, cut)`` of one share, or None when it is empty."""
    source = Share(path, begin, end)
    try:
        return None if source.empty else (*parse(path, source), bool(source.cut))
    finally:
        source.close()


def _child(conn, path: Path, begin: int, end: int | None, parse: Callable) -> None:
    """A forked child: send its share's payload, ``"empty"``, or None when it fails."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the reading process to handle
    try:
        done = _parse_share(path, begin, end, parse)
        reply = "empty" if done is None else {
            **done[0].payload(), **done[1].payload(), "header": done[2], "count": done[3], "cut": done[4]}
    except Exception:  # noqa: BLE001 - None asks the reading process to read alone
        reply = None
    try:
        conn.send(reply)
    finally:
        conn.close()


def read_shares(path: Path, *, size: int, workers: int, parse: Callable, progress: Callable | None = None):
    """``(cols, state, header)`` of the whole file, or None to ask for the one-process reader.

    ``size`` is the text size (:func:`inflated_bytes_estimate`); ``parse(path, source)`` scans
    the text of ``source`` (a :class:`Share`) into ``(cols, state, header, number of events)``.
    """
    if size < workers:
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
    except (OSError, AssertionError) as exc:  # out of processes, or inside a daemon process
        log.debug("read of %s in %d processes: no child (%s); one process", path, workers, exc)
        _end(children)
        return None
    try:
        cols, state, header, count, cut = _parse_share(path, 0, offsets[1], parse)
        if progress is not None:
            progress(1, 1, str(path))
        for child, ours in children:
            payload = ours.recv()
            if payload is None or (payload != "empty") != cut:  # failed, or the shares disagree
                return None
            if payload == "empty":
                continue
            payload["marks"] = [(*mark[:6], mark[6] + count) for mark in payload["marks"]]
            merge(payload, cols, state)
            header.update(payload["header"])
            count, cut = count + payload["count"], payload["cut"]
    except (ParityError, EOFError, OSError) as exc:
        log.debug("read of %s in %d processes falls back to one process: %s", path, workers, exc)
        return None
    finally:
        _end(children)
    return cols, state, header


def _end(children: list) -> None:
    """Close the pipes and join the children (terminating any still working)."""
    for child, ours in children:
        ours.close()
        if child.is_alive():
            child.terminate()
        child.join()


def merge(payload: dict, cols: Columns, state) -> None:
    """Append a child's columns to ``cols`` (names re-encoded) and its counts to ``state``."""
    names = payload["names"]
    mapping = np.array([cols.intern(n) for n in names] or [0], dtype=np.int32)
    blocks = payload["blocks"]
    for index, name_ids in enumerate(blocks.get("name_id", [])):
        blocks["name_id"][index] = mapping[name_ids] if len(name_ids) else name_ids
    for key, parts in blocks.items():
        cols.blocks[key].extend(parts)
    cols.rows += payload["rows"]
    state.absorb(payload)
