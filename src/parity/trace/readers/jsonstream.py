"""Stream the events of a Chrome-trace JSON file (plain or gzip) in bounded memory.

A 1 GB trace parsed whole becomes several GB of Python objects; instead the text is read into one
buffer a few MB at a time and the ``traceEvents`` array (or a top-level array, as Ascend's
``trace_view.json``) is handed out a block of events at a time (:class:`EventStream`); the keys
around the array (``distributedInfo``, ...) go to ``header``. Gzip is told by its magic bytes and
inflated by ISA-L's ``igzip`` when the ``fast`` extra is installed (a 53 MB trace in 16 ms
against 63 ms), else by the standard library.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable, Iterator
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
_SPACE, _SPACE_OR_COMMA = re.compile(rb"[ \t\r\n]*"), re.compile(rb"[, \t\r\n]*")  # .match(...).end(): past them
_MAX_RETRIES = 32


def open_binary(path: Path):
    """``path`` opened for reading bytes, inflated when it is gzip (by its magic bytes); a gzip
    reader's ``fileobj`` is the compressed file, whose position is the progress made."""
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


class EventStream:
    """Iterate ``(first_index, events)`` blocks of the event array (``first_index``: the array
    position of the block's first event, so readers can name a bad one); after iteration
    ``header`` is complete, ``count`` counts the entries and ``found_events`` says whether there
    was an event array. ``decode(text)`` makes a block's events from a JSON array's text (a view
    of the buffer, valid until the next read), or None when it is not JSON. ``source``: a binary
    file (``readinto``, ``fileobj.tell``) to read instead of ``path``.

    The text is ``data[:hi]`` of one ``bytearray``, replaced when it grows (never resized: views
    held by decoded structs never block a read). A block ends at a ``}`` followed by ``,`` or
    ``]``; a cut inside a string or a nested object never parses, so a block that parses ends at
    an event boundary; one that does not is retried at the previous candidate, and the buffer
    grows when none parses.
    """

    def __init__(self, path: Path, *, decode: Callable = decode_json, source=None, block_bytes: int = 0) -> None:
        self.path, self.decode, self.source = path, decode, source
        self.block_bytes = block_bytes or BLOCK_BYTES
        self.header: dict = {}
        self.found_events, self.count, self.bytes_read, self.total_bytes = False, 0, 0, 0

    def __iter__(self) -> Iterator[tuple[int, list]]:
        try:
            self.total_bytes = self.path.stat().st_size
        except OSError:
            self.total_bytes = 0
        self.handle = self.source if self.source is not None else open_binary(self.path)
        self.data, self.hi, self.eof = bytearray(self.block_bytes), 0, False
        try:
            yield from self._blocks()
        except (OSError, EOFError, *GZIP_ERRORS) as exc:
            raise ParityError(f"{self.path}: compressed stream is truncated or corrupt ({exc}); "
                              "copy the trace again") from None  # fmt: skip
        finally:
            self.handle.close()

    def _fill(self, keep: int, *, grow: bool = False) -> int:
        """Keep ``data[keep:hi]`` (moved to the front) and read until ``data`` is full or the file
        ends; returns ``keep``, the shift of every position. ``grow`` (or a kept run of more than
        half of ``data``: an event larger than a block) first doubles ``data``, a new buffer."""
        rest = self.hi - keep
        if grow or 2 * rest > len(self.data):
            data = bytearray(2 * len(self.data))
            data[:rest] = memoryview(self.data)[keep : self.hi]
            self.data = data
        elif keep:
            self.data[:rest] = self.data[keep : self.hi]  # a copy first: the two runs may overlap
        self.hi = rest
        with memoryview(self.data) as view:
            while self.hi < len(self.data):
                count = self.handle.readinto(view[self.hi :])
                if not count:
                    self.eof = True
                    break
                self.hi += count
        self.bytes_read = getattr(self.handle, "fileobj", self.handle).tell()
        return keep

    def _blocks(self) -> Iterator[tuple[int, list]]:
        self._fill(0)
        while (start := _SPACE.match(self.data, 0, self.hi).end()) == self.hi and not self.eof:
            self._fill(self.hi)  # all space so far: drop it
        if start == self.hi:
            raise ParityError(f"{self.path}: file is empty; profile again or pick another file")
        if self.data[start] == ord("{"):
            start = self._find_events(start)
            if start < 0:
                return
        elif self.data[start] != ord("["):
            raise ParityError(f"{self.path}: not JSON (starts with {bytes(self.data[start:start + 12])!r})")
        self.found_events = True
        yield from self._array(start + 1)

    def _find_events(self, start: int) -> int:
        """The position of the event array's ``[`` (-1 when the object has none: it is parsed
        whole into ``header``); the keys before it go to ``header``."""
        while not (match := TRACE_EVENTS.search(self.data, start, self.hi)) and not self.eof:
            self._fill(0, grow=True)
        if match is None:
            try:
                self.header = orjson.loads(self.data[start : self.hi])
            except orjson.JSONDecodeError as exc:
                raise ParityError(f"{self.path}: invalid or truncated JSON in the file ({exc}); "
                                  "copy or export it again") from None  # fmt: skip
            if not isinstance(self.header, dict):
                raise ParityError(f"{self.path}: top-level JSON is not an object")
            return -1
        self.header = decode_json(bytes(self.data[start : match.start()]) + b'"traceEvents":null}') or {}
        return match.end() - 1

    def _array(self, pos: int) -> Iterator[tuple[int, list]]:
        while True:
            pos = _SPACE_OR_COMMA.match(self.data, pos, self.hi).end()
            if pos < self.hi and self.data[pos] == ord("]"):
                return self._trailer(pos + 1)
            cut = self._cut(pos) or (self._cut(pos, b"]") if self.eof else None)
            if cut is None and self.eof:
                self._refuse(pos)
            if cut is None:
                pos -= self._fill(pos - 1)  # keep the byte before ``pos``: _cut brackets in place
                continue
            pos, events = cut
            if events:
                yield self.count, events
                self.count += len(events)

    def _cut(self, pos: int, end: bytes = b"}") -> tuple[int, list] | None:
        """``(where the rest starts, entries)`` of the largest parseable run from ``pos`` (ending at
        an event's end, or with ``end`` ``]`` at the array's end), or None. It is decoded where it
        lies: the bytes before and after it are overwritten with brackets, then put back."""
        buf, limit = self.data, self.hi
        for _ in range(_MAX_RETRIES):
            at = buf.rfind(end, pos, limit)
            if at < 0:
                return None
            limit = at
            if end == b"}":
                after = _SPACE.match(buf, at + 1, self.hi).end()
                if after == self.hi or buf[after] not in b",]":
                    continue
                at += 1  # the run holds the brace
            before, behind = buf[pos - 1], buf[at]
            buf[pos - 1], buf[at] = ord("["), ord("]")
            try:
                events = self.decode(memoryview(buf)[pos - 1 : at + 1])
            finally:
                buf[pos - 1], buf[at] = before, behind
            if events is not None:
                return at, events
        return None

    def _refuse(self, pos: int) -> None:
        """The ParityError for an event array that does not parse to its end (cut short or corrupt)."""
        try:
            orjson.loads(b"[" + self.data[pos : self.hi] + b"]")
        except orjson.JSONDecodeError as exc:
            raise ParityError(f"{self.path}: invalid or truncated JSON at event {self.count} ({exc}); "
                              "the file is cut short or corrupt, copy or export it again") from None  # fmt: skip
        raise ParityError(f"{self.path}: the event array never closes after event {self.count}; "
                          "the file is cut short, copy or export it again")  # fmt: skip

    def _trailer(self, pos: int) -> None:
        """Parse the keys after the event array (``, "k": v ... }``) into ``header``."""
        while not self.eof:
            pos -= self._fill(pos, grow=True)
        text = bytes(self.data[pos : self.hi]).strip(_WS)
        body = text.lstrip(b"," + _WS)
        if text in (b"", b"}") or body == b"}":
            return
        try:
            tail = orjson.loads(b"{" + body)
        except orjson.JSONDecodeError as exc:
            raise ParityError(f"{self.path}: invalid JSON after the event array ({exc}); the file is corrupt") from None
        if isinstance(tail, dict):
            self.header.update(tail)

