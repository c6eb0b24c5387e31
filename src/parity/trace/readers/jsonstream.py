"""Stream the events of a Chrome-trace JSON file (plain or gzip) in bounded memory.

A 1 GB trace parsed whole becomes several GB of Python objects; instead the text is read into one
buffer a few MB at a time, the ``traceEvents`` array (or a top-level array, as Ascend's
``trace_view.json``) is found, and its events are handed out a block at a time; the keys around
the array (``distributedInfo``, ...) go to ``header``. A block ends at the last ``}`` followed by
``,`` or ``]`` and is decoded where it lies. A cut inside a string or a nested object never parses
(the string or object would not close), so a block that parses ends at an event boundary; one
that does not is retried at the previous candidate, and the buffer grows when none parses.

Gzip is told by its magic bytes and inflated by ISA-L's ``igzip`` when the ``fast`` extra is
installed (a 53 MB trace in 16 ms against 63 ms), else by the standard library; both raise
``EOFError`` on truncation and one of :data:`GZIP_ERRORS` on corruption.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from parity.model.errors import ParityError

try:
    from isal import igzip, isal_zlib

    GZIP_FILE: type[gzip.GzipFile] = igzip.IGzipFile
    GZIP_ERRORS: tuple[type[BaseException], ...] = (zlib.error, isal_zlib.error, gzip.BadGzipFile)
except ImportError:  # pragma: no cover - depends on the environment
    GZIP_FILE = gzip.GzipFile
    GZIP_ERRORS = (zlib.error, gzip.BadGzipFile)

GZIP_MAGIC = b"\x1f\x8b"  # the first two bytes of every gzip member
BLOCK_BYTES = 2 << 20  # text decoded at a time: its structs stay in the CPU caches while scanned
TRACE_EVENTS = re.compile(rb'"traceEvents"\s*:\s*\[')  # the start of the event array
_WS = b" \t\r\n"
_OPEN, _CLOSE = ord("["), ord("]")
_MAX_RETRIES = 32


def open_binary(path: Path):
    """``path`` opened for reading bytes, inflated when it is gzip (by its magic bytes); a
    gzip reader's ``fileobj`` is the compressed file, whose position is the progress made."""
    try:
        with open(path, "rb") as handle:
            if handle.read(2) == GZIP_MAGIC:
                return GZIP_FILE(path, "rb")
        return open(path, "rb")  # noqa: SIM115 - returned to the caller
    except OSError as exc:
        raise ParityError(f"{path}: cannot open ({exc.strerror or exc}); check the path") from None


def decode_json(text) -> list | None:
    """The JSON value of ``text`` (dicts and lists), or None when it is not JSON."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


@dataclass
class EventStream:
    """Iterate ``(first_index, events)`` blocks of the event array (``first_index``: the array
    position of the block's first event, so readers can name a bad one); after iteration
    ``header`` is complete, ``count`` is the number of entries and ``found_events`` whether the
    text held an event array. ``decode(text)`` makes a block's events from its text (a JSON
    array, maybe a view of the read buffer, valid until the next read) or returns None when it
    is not JSON. ``source``: a binary file (``readinto``, ``tell``) to read instead of ``path``.
    """

    path: Path
    decode: Callable = decode_json
    source: object = None
    block_bytes: int = 0  # 0: BLOCK_BYTES
    header: dict = field(default_factory=dict)
    found_events: bool = False
    count: int = 0
    bytes_read: int = 0
    total_bytes: int = 0

    def __iter__(self) -> Iterator[tuple[int, list]]:
        try:
            self.total_bytes = self.path.stat().st_size
        except OSError:
            self.total_bytes = 0
        handle = self.source if self.source is not None else open_binary(self.path)
        try:
            yield from self._blocks(_Window(handle, self.block_bytes or BLOCK_BYTES, self))
        except (OSError, EOFError, *GZIP_ERRORS) as exc:
            raise ParityError(
                f"{self.path}: compressed stream is truncated or corrupt ({exc}); copy the trace again"
            ) from None
        finally:
            handle.close()

    def _blocks(self, win: _Window) -> Iterator[tuple[int, list]]:
        win.fill(0)
        start = _first_nonspace(win.data, 0, win.hi)
        while start < 0 and not win.eof:
            win.fill(win.hi)  # all space so far: drop it
            start = _first_nonspace(win.data, 0, win.hi)
        if start < 0:
            raise ParityError(f"{self.path}: file is empty; profile again or pick another file")
        if win.data[start] == _OPEN:
            pos = start + 1
        elif win.data[start] == ord("{"):
            pos = self._find_events(win, start)
            if pos < 0:
                return
        else:
            raise ParityError(f"{self.path}: not JSON (starts with {bytes(win.data[start:start + 12])!r})")
        self.found_events = True
        yield from self._array(win, pos)

    def _find_events(self, win: _Window, start: int) -> int:
        """Where the events start after ``"traceEvents": [`` (-1 when the object has no event
        array: it is parsed whole into ``header``); the keys before it go to ``header``."""
        while not (match := TRACE_EVENTS.search(win.data, start, win.hi)) and not win.eof:
            win.fill(0, grow=True)
        if match is None:
            try:
                self.header = orjson.loads(win.data[start : win.hi])
            except orjson.JSONDecodeError as exc:
                raise ParityError(
                    f"{self.path}: invalid or truncated JSON in the file ({exc}); copy or export it again"
                ) from None
            if not isinstance(self.header, dict):
                raise ParityError(f"{self.path}: top-level JSON is not an object")
            return -1
        self.header = decode_json(bytes(win.data[start : match.start()]) + b'"traceEvents":null}') or {}
        return match.end()

    def _array(self, win: _Window, pos: int) -> Iterator[tuple[int, list]]:
        while True:
            pos = _skip(win.data, pos, win.hi, b"," + _WS)
            if pos < win.hi and win.data[pos] == _CLOSE:
                self._trailer(win, pos + 1)
                return
            cut = self._cut(win, pos)
            if cut is None:
                if win.eof:
                    yield from self._last_events(win, pos)
                    return
                pos -= win.fill(pos - 1)  # keep the byte before ``pos``: _cut brackets in place
                continue
            pos, events = cut
            if events:
                yield self.count, events
                self.count += len(events)

    def _cut(self, win: _Window, pos: int) -> tuple[int, list] | None:
        """``(end, events)`` of the largest parseable run of events from ``pos``, or None. The
        byte before the run (the array's ``[``, a comma or a space) and the one after its last
        ``}`` are overwritten with brackets for the decode, then put back."""
        buf, limit = win.data, win.hi
        for _ in range(_MAX_RETRIES):
            brace = buf.rfind(b"}", pos, limit)
            if brace < 0:
                return None
            limit = brace
            after = _first_nonspace(buf, brace + 1, win.hi)
            if after < 0 or buf[after] not in b",]":
                continue
            before, behind = buf[pos - 1], buf[brace + 1]
            buf[pos - 1], buf[brace + 1] = _OPEN, _CLOSE
            try:
                events = self.decode(memoryview(buf)[pos - 1 : brace + 2])
            finally:
                buf[pos - 1], buf[brace + 1] = before, behind
            if events is not None:
                return brace + 1, events
        return None

    def _last_events(self, win: _Window, pos: int) -> Iterator[tuple[int, list]]:
        """At the end of the file, the entries before the array's closing ``]`` (which need not
        be objects), then the trailer; a ParityError when the array never closes."""
        buf, limit = win.data, win.hi
        for _ in range(_MAX_RETRIES):
            close = buf.rfind(b"]", pos, limit)
            if close < 0:
                break
            events = self.decode(b"[" + buf[pos:close] + b"]")
            if events is not None:
                if events:
                    yield self.count, events
                    self.count += len(events)
                self._trailer(win, close + 1)
                return
            limit = close
        try:
            orjson.loads(b"[" + buf[pos : win.hi] + b"]")
        except orjson.JSONDecodeError as exc:
            raise ParityError(
                f"{self.path}: invalid or truncated JSON at event {self.count} ({exc}); "
                "the file is cut short or corrupt, copy or export it again"
            ) from None
        raise ParityError(
            f"{self.path}: the event array never closes after event {self.count}; "
            "the file is cut short, copy or export it again"
        )

    def _trailer(self, win: _Window, pos: int) -> None:
        """Parse the keys after the event array (``, "k": v ... }``) into ``header``."""
        while not win.eof:
            pos -= win.fill(pos, grow=True)
        text = bytes(win.data[pos : win.hi]).strip(_WS)
        body = text.lstrip(b"," + _WS)
        if text in (b"", b"}") or body == b"}":
            return
        try:
            tail = orjson.loads(b"{" + body)
        except orjson.JSONDecodeError as exc:
            raise ParityError(f"{self.path}: invalid JSON after the event array ({exc}); the file is corrupt") from None
        if isinstance(tail, dict):
            self.header.update(tail)


class _Window:
    """The text being parsed: ``data[:hi]`` of one ``bytearray``, read into in place (what follows
    the last parsed event moves to the front first). The buffer is replaced, never resized, so
    the views that decoded structs hold (``msgspec.Raw``) never block a read."""

    def __init__(self, handle, capacity: int, stream: EventStream) -> None:
        self.handle, self.stream = handle, stream
        self.capacity = capacity  # text held at most
        self.data = bytearray(capacity)
        self.hi = 0  # data[:hi] is text; data[hi:capacity] is room for the next read
        self.eof = False

    def fill(self, keep: int, *, grow: bool = False) -> int:
        """Keep ``data[keep:hi]`` (moved to the front) and read until ``capacity`` is reached or
        the file ends; returns ``keep``, the shift of every position. ``grow`` (or a kept run of
        more than half the capacity: an event larger than a block) doubles the capacity first."""
        rest = self.hi - keep
        if grow or 2 * rest > self.capacity:
            self.capacity *= 2
        if self.capacity > len(self.data):
            data = bytearray(self.capacity)
            data[:rest] = memoryview(self.data)[keep : self.hi]
            self.data = data
        elif keep:
            self.data[:rest] = self.data[keep : self.hi]  # a copy first: the two runs may overlap
        self.hi = rest
        with memoryview(self.data) as view:
            while self.hi < self.capacity:
                count = self.handle.readinto(view[self.hi : self.capacity])
                if not count:
                    self.eof = True
                    break
                self.hi += count
        self.stream.bytes_read = getattr(self.handle, "fileobj", self.handle).tell()
        return keep


def _skip(buf, pos: int, end: int, chars: bytes) -> int:
    while pos < end and buf[pos] in chars:
        pos += 1
    return pos


def _first_nonspace(buf, pos: int, end: int) -> int:
    pos = _skip(buf, pos, end, _WS)
    return pos if pos < end else -1
