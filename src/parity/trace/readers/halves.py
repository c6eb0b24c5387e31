"""Read a Chrome-trace JSON file in two processes: each parses half of the events.

Parsing (JSON decoding and the column scan) is most of the time of reading a large trace, and
it splits cleanly. The reading process forks one child for the call (:func:`read_halves`
joins it before returning: no process outlives a read), and both open the file and read it as
a stream. The reading process parses the text up to a guessed event boundary (the first ``}``
followed by ``, {`` after :data:`FIRST_SHARE` of the text, whose size the caller knows from
the gzip trailer or the file size); the child inflates and drops that text, finds the same
boundary (both read the same bytes in the same steps, so both find the same match) and parses
the rest. The child sends back its numpy columns, names and counts (:func:`.parallel.merge`
appends them after the reading process's, so rows, names and lanes come out in file order, as
one process would give them).

A guess inside a string makes the first half end inside that string, which never parses;
so when both halves parse, the cut was a boundary. Anything unexpected (a half that does not
parse, a bad event, the child failing) makes :func:`read_halves` return None and the caller
reads the file again in one process, which names the bad event precisely. A size that was
wrong only moves the cut (or, past the end, leaves the whole file to the reading process).
"""

from __future__ import annotations

import functools
import io
import logging
import multiprocessing
import re
import signal
from collections.abc import Callable
from pathlib import Path

from parity.model.errors import ParityError
from parity.trace.readers import parallel
from parity.trace.readers.columns import Columns
from parity.trace.readers.gzipfile import open_binary
from parity.trace.readers.jsonstream import NEXT_EVENT, TRACE_EVENTS, EventStream

log = logging.getLogger(__name__)
FIRST_SHARE = 0.5  # of the text, parsed by the reading process
# where the event array starts: what the first read of the first half must show
_EVENTS_START = re.compile(rb"\A\s*\[|" + TRACE_EVENTS.pattern)


class _Half:
    """One process's half of a file's text, as a binary file (``readinto``).

    The first half is the text up to the boundary's ``}`` and then ``]}``, which closes the
    event array and the object around it; the second is ``[`` and the text from the
    boundary's ``{`` to the end. When no boundary follows ``middle`` (the size was too
    large), the first half is the whole text and the second is empty (``found`` is False).
    """

    STEP = 64 << 10  # text read at a time while looking for the boundary, by both processes

    def __init__(self, handle, middle: int, *, first: bool) -> None:
        self.handle = handle
        self.fileobj = getattr(handle, "fileobj", handle)  # for progress: the file's position
        self.middle = middle
        self.first = first
        self.position = 0  # text read from ``handle``
        self.pending = memoryview(b"")  # text to hand out before reading ``handle`` again
        self.found: bool | None = None  # whether a boundary follows ``middle`` (None: not looked)
        if not first:
            self._skip_first_half()

    def _skip_first_half(self) -> None:
        if isinstance(self.handle, io.BufferedReader):  # plain text: straight to the middle
            self.handle.seek(self.middle)
            self.position = self.middle
        else:  # gzip: inflate and drop
            sink = _sink()
            while self.position < self.middle:
                count = self.handle.readinto(sink[: self.middle - self.position])
                if not count:
                    break
                self.position += count
        self._look_for_boundary()

    def _look_for_boundary(self) -> None:
        """Read from ``middle`` in :data:`STEP` pieces until a boundary shows or the file
        ends, and set ``pending`` to this half's share of what was read."""
        seen = bytearray()
        boundary = None
        while boundary is None:
            chunk = self.handle.read(self.STEP) if self.position >= self.middle else b""
            if not chunk:
                break
            self.position += len(chunk)
            seen += chunk
            boundary = NEXT_EVENT.search(seen)
        self.found = boundary is not None
        if self.first:
            text = bytes(seen[: boundary.start() + 1]) + b"]}" if boundary else bytes(seen)
        else:
            text = b"[" + bytes(seen[boundary.end() - 1 :]) if boundary else b""
        self.pending = memoryview(text)

    def readinto(self, view) -> int:
        """Fill ``view`` with the next text of this half; how many bytes (0 at its end)."""
        with memoryview(view) as out:
            if len(self.pending):
                count = min(len(out), len(self.pending))
                out[:count] = self.pending[:count]
                self.pending = self.pending[count:]
                return count
            if self.first and self.found is None:
                if self.position < self.middle:
                    count = self.handle.readinto(out[: self.middle - self.position])
                    if self.position == 0 and not _EVENTS_START.search(out[:count]):
                        raise ParityError("the event array does not start in the first half's first read")
                    self.position += count
                    if count:
                        return count
                self._look_for_boundary()
                return self.readinto(out) if len(self.pending) else 0
            if self.first or not self.found:
                return 0
            count = self.handle.readinto(out)
            self.position += count
            return count

    def close(self) -> None:
        self.handle.close()


def _sink() -> memoryview:
    """Where the child inflates and drops the first half."""
    return memoryview(bytearray(1 << 20))


def _second_half(path: Path, middle: int, *, decoders: tuple, scan_stream: Callable, make_state: Callable):
    """The child's work: the second half's payload; ``"none"`` when there is no second half."""
    source = _Half(open_binary(path), middle, first=False)
    if not source.found:
        source.close()
        return "none"
    state = make_state(path)
    stream = EventStream(path, decoder=decoders[0], exact_decoder=decoders[1], source=source)
    cols = Columns()
    count = scan_stream(stream, cols, state)
    return {**cols.payload(), **state.payload(), "header": stream.header, "count": count}


def _child(conn, work: Callable, path: Path, middle: int) -> None:
    """The forked child: send ``work(path, middle)``, or None when it fails."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the reading process to handle
    try:
        reply = work(path, middle)
    except Exception:  # noqa: BLE001 - None asks the reading process to read alone
        reply = None
    try:
        conn.send(reply)
    finally:
        conn.close()


def read_halves(path: Path, *, size: int, decoders: tuple, scan_stream: Callable, make_state: Callable,
                progress: Callable | None = None):  # fmt: skip
    """``(cols, state, header)`` of the whole file, or None to ask for the one-process reader.

    ``size`` is the text size (:func:`.parallel.inflated_bytes_estimate`); ``decoders`` is
    ``(decoder, exact_decoder)`` for :class:`EventStream`; ``make_state(path)`` gives a fresh
    scan state; ``scan_stream(stream, cols, state)`` scans a whole stream into ``cols`` and
    returns its number of events. The second half is read by a child forked for this call and
    joined before it returns.
    """
    middle = int(size * FIRST_SHARE)
    work = functools.partial(_second_half, decoders=decoders, scan_stream=scan_stream, make_state=make_state)
    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(theirs, work, path, middle), daemon=True)
    try:
        child.start()
    except (OSError, AssertionError) as exc:  # out of processes, or inside a daemon process
        log.debug("two-process read of %s: no child (%s); one process", path, exc)
        ours.close()
        theirs.close()
        return None
    theirs.close()
    payload = source = None
    try:
        state = make_state(path)
        source = _Half(open_binary(path), middle, first=True)
        stream = EventStream(path, decoder=decoders[0], exact_decoder=decoders[1], source=source)
        cols = Columns()
        count = scan_stream(stream, cols, state)
        if progress is not None:
            progress(stream.bytes_read, stream.total_bytes, str(path))
        payload = ours.recv()
    except (ParityError, EOFError, OSError) as exc:
        log.debug("two-process read of %s falls back to one process: %s", path, exc)
    finally:
        ours.close()
        if payload is None and child.is_alive():
            child.terminate()
        child.join()
    if payload is None or (payload != "none") != source.found:  # failed, or the halves disagree
        return None
    if payload != "none":
        payload["marks"] = [(*mark[:6], mark[6] + count) for mark in payload["marks"]]
        parallel.merge(payload, cols, state)
        stream.header.update(payload["header"])
    return cols, state, stream.header
