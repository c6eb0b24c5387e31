"""Stream the events of a Chrome-trace JSON file (plain or gzip) in bounded memory.

A 1 GB trace parsed whole becomes several GB of Python dicts; instead the file is read in
blocks, the ``traceEvents`` array (or a top-level array, as Ascend's ``trace_view.json``) is
found, and its events are handed out a few MB of text at a time.

How a block is cut: the last ``}`` followed by ``,`` or ``]`` is a candidate end of an event,
and the text up to it is parsed as an array in place in the read buffer (:class:`_Window`). A
cut inside a string or a nested object never parses, so a cut that parses is an event
boundary; one that does not is retried at the previous candidate. The keys around the array
(``distributedInfo``, ``baseTimeNanoseconds``) are parsed into ``header``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import orjson

from parity.model.errors import ParityError
from parity.trace.readers.gzipfile import GZIP_ERRORS, open_binary

BLOCK_BYTES = 2 << 20  # text parsed at a time: its structs stay in the CPU caches while scanned
TRACE_EVENTS = re.compile(rb'"traceEvents"\s*:\s*\[')  # the start of the event array
_WS = b" \t\r\n"
_SEPARATORS = b"," + _WS
_AFTER_EVENT = b",]"
_OPEN, _CLOSE = ord("["), ord("]")
_MAX_RETRIES = 32


@dataclass
class EventStream:
    """Iterate ``(first_index, events)`` blocks; ``header`` is complete after iteration.

    ``first_index`` is the position of the block's first event in the file's event array, so
    readers can name the index of a bad event.

    With a ``decoder`` (a ``msgspec.json.Decoder`` of a list of event structs) blocks are
    decoded into structs, which skips unneeded keys without building them: about 3x faster and
    far smaller than dicts. A block whose values do not fit the struct types (a generic or
    damaged trace) is decoded by ``fallback`` (dicts, by orjson, without one); callers tell
    the two apart by ``type``. Structs may hold views (``msgspec.Raw``) of the text, valid
    until the next block is read.

    ``size_hint`` (the text size, when known) keeps the buffer of a small file small.
    """

    path: Path
    decoder: msgspec.json.Decoder | None = None
    fallback: msgspec.json.Decoder | None = None  # for blocks that do not fit ``decoder``
    source: object = None  # a binary file-like (with ``readinto``) to read instead of ``path``
    block_bytes: int = 0  # 0: BLOCK_BYTES
    size_hint: int | None = None
    header: dict = field(default_factory=dict)
    bytes_read: int = 0
    total_bytes: int = 0

    def __iter__(self) -> Iterator[tuple[int, list]]:
        try:
            self.total_bytes = self.path.stat().st_size
        except OSError:
            self.total_bytes = 0
        handle = self.source if self.source is not None else open_binary(self.path)
        block = self.block_bytes or BLOCK_BYTES
        if self.size_hint is not None:
            block = max(min(block, self.size_hint + 1), 1)
        window = _Window(handle, block, self)
        try:
            yield from self._blocks(window)
        except (OSError, EOFError, *GZIP_ERRORS) as exc:
            raise ParityError(
                f"{self.path}: compressed stream is truncated or corrupt ({exc}); "
                "copy the trace again"
            ) from None
        finally:
            handle.close()
            window.release()

    def note_position(self, handle) -> None:
        """Set ``bytes_read`` from the file's position (the compressed file's, for gzip)."""
        raw = getattr(handle, "fileobj", None)
        self.bytes_read = raw.tell() if raw is not None else handle.tell()

    def _blocks(self, win: _Window) -> Iterator[tuple[int, list]]:
        win.fill(0)
        start = _first_nonspace(win.data, 0, win.hi)
        while start < 0 and not win.eof:
            win.fill(win.hi)  # all space so far: drop it
            start = _first_nonspace(win.data, 0, win.hi)
        if start < 0:
            raise ParityError(f"{self.path}: file is empty; profile again or pick another file")
        first = win.data[start]
        if first == _OPEN:
            pos = start + 1
        elif first == ord("{"):
            pos = self._find_events(win, start)
            if pos < 0:
                return
        else:
            raise ParityError(f"{self.path}: not JSON (starts with {bytes(win.data[start:start + 12])!r})")
        yield from self._array(win, pos)

    def _find_events(self, win: _Window, start: int) -> int:
        """Locate ``"traceEvents": [``; parse the keys before it into ``header``."""
        while True:
            match = TRACE_EVENTS.search(win.data, start, win.hi)
            if match or win.eof:
                break
            start -= win.fill(0, grow=True)
        if match is None:  # a JSON object without an event array: parse it whole
            self.header = _loads_or_raise(self.path, bytes(win.data[start : win.hi]), "the file")
            if not isinstance(self.header, dict):
                raise ParityError(f"{self.path}: top-level JSON is not an object")
            return -1
        head = bytes(win.data[start : match.start()]) + b'"traceEvents":null}'
        try:
            self.header = orjson.loads(head)
        except orjson.JSONDecodeError:
            self.header = {}
        return match.end()

    def _array(self, win: _Window, pos: int) -> Iterator[tuple[int, list]]:
        index = 0
        while True:
            pos = _skip(win.data, pos, win.hi, _SEPARATORS)
            if pos < win.hi and win.data[pos] == _CLOSE:
                self._trailer(win, pos + 1)
                return
            cut = _cut(win, pos, self.decoder, self.fallback)
            if cut is None:
                if win.eof:
                    events, end = self._last_events(win, pos, index)
                    if events:
                        yield index, events
                    self._trailer(win, end)
                    return
                pos -= win.fill(pos - 1)  # keep the byte before ``pos``: _cut brackets in place
                continue
            end, events = cut
            if events:
                yield index, events
                index += len(events)
            pos = end

    def _trailer(self, win: _Window, pos: int) -> None:
        """Parse the keys after the event array (``, "k": v ... }``) into ``header``."""
        while not win.eof:
            pos -= win.fill(pos, grow=True)
        text = bytes(win.data[pos : win.hi]).strip(_WS)
        if text in (b"", b"}"):
            return
        body = text.lstrip(b"," + _WS)
        try:
            tail = orjson.loads(b"{" + body) if body != b"}" else {}
        except orjson.JSONDecodeError as exc:
            raise ParityError(
                f"{self.path}: invalid JSON after the event array ({exc}); the file is corrupt"
            ) from None
        if isinstance(tail, dict):
            self.header.update(tail)

    def _last_events(self, win: _Window, pos: int, index: int) -> tuple[list, int]:
        """At end of file, the entries before the array's closing ``]`` (which need not be
        objects) and where the trailer starts; a ParityError when the array never closes."""
        buf, limit = win.data, win.hi
        for _ in range(_MAX_RETRIES):
            close = buf.rfind(b"]", pos, limit)
            if close < 0:
                break
            events = _decode(_bracketed(buf[pos:close]), self.fallback)
            if events is not None:
                return events, close + 1
            limit = close
        try:
            orjson.loads(_bracketed(bytes(buf[pos : win.hi])))
        except orjson.JSONDecodeError as exc:
            raise ParityError(
                f"{self.path}: invalid or truncated JSON at event {index} ({exc}); "
                "the file is cut short or corrupt, copy or export it again"
            ) from None
        raise ParityError(
            f"{self.path}: the event array never closes after event {index}; "
            "the file is cut short, copy or export it again"
        )


class _Window:
    """The text being parsed: ``data[:hi]`` of one ``bytearray`` that is refilled in place.

    Reading goes straight into the buffer (``readinto``); a block is decoded where it lies
    (:func:`_cut` writes its brackets over the bytes around it); before the next read, what
    follows the last parsed event moves to the front. Each byte of text is copied into the
    buffer once, where slicing and joining ``bytes`` copied it three times, each time into
    fresh memory that the kernel had to map in page by page. The buffer is replaced, never
    resized, so the views that decoded structs hold (``msgspec.Raw``) never block a read.
    """

    def __init__(self, handle, block: int, stream: EventStream) -> None:
        self.handle = handle
        self.stream = stream
        self.capacity = block  # text held at most; ``data`` may be longer (a reused buffer)
        self.data = _spare_buffer(block)
        self.hi = 0  # data[:hi] is text; data[hi:capacity] is room for the next read
        self.eof = False

    def fill(self, keep: int, *, grow: bool = False) -> int:
        """Keep ``data[keep:hi]`` (moved to the front) and read until ``capacity`` is reached
        or the file ends; returns ``keep``, the shift of every position. ``grow`` (or a kept
        run of more than half the capacity: an event larger than a block) doubles it first."""
        rest = self.hi - keep
        if grow or 2 * rest > self.capacity:
            self.capacity *= 2
        if self.capacity > len(self.data):
            data = bytearray(self.capacity)
            data[:rest] = memoryview(self.data)[keep : self.hi]
            self.data = data
        elif keep:
            self.data[:rest] = self.data[keep : self.hi]
        self.hi = rest
        with memoryview(self.data) as view:
            while self.hi < self.capacity:
                count = self.handle.readinto(view[self.hi : self.capacity])
                if not count:
                    self.eof = True
                    break
                self.hi += count
        self.stream.note_position(self.handle)
        return keep

    def release(self) -> None:
        """Keep the buffer for the next stream (see :func:`_spare_buffer`)."""
        if len(self.data) <= _SPARE_MAX and (not _SPARE or len(_SPARE[0]) < len(self.data)):
            _SPARE[:] = [self.data]


_SPARE: list[bytearray] = []  # the largest buffer a finished stream left, for the next one
_SPARE_MAX = 64 << 20


def _spare_buffer(size: int) -> bytearray:
    """A buffer of at least ``size`` bytes: the spare one when it is large enough and no view
    of it is alive, else a new one.

    Reading a trace into memory that is already mapped saves the kernel mapping in a new
    buffer page by page, which costs as much as inflating the text on a VM. A buffer that
    decoded structs still view (``msgspec.Raw``) is never handed out again: a resize is
    refused while any view exists, and a one-byte append and pop is that test.
    """
    spare = _SPARE.pop() if _SPARE else None
    if spare is None or len(spare) < size:
        return bytearray(size)
    try:
        spare.append(0)
    except BufferError:
        return bytearray(size)
    spare.pop()
    return spare


def _skip(buf, pos: int, end: int, chars: bytes) -> int:
    while pos < end and buf[pos] in chars:
        pos += 1
    return pos


def _first_nonspace(buf, pos: int, end: int) -> int:
    pos = _skip(buf, pos, end, _WS)
    return pos if pos < end else -1


def _cut(win: _Window, pos: int, decoder, fallback=None):
    """The largest parseable run of events from ``pos``: ``(end, events)`` or None.

    The run is decoded where it lies: the byte before it (the array's ``[``, a comma or a
    space) and the one after its last ``}`` (a comma, a space or the array's ``]``) are
    overwritten with brackets for the decode and then put back."""
    buf, limit = win.data, win.hi
    for _ in range(_MAX_RETRIES):
        brace = buf.rfind(b"}", pos, limit)
        if brace < 0:
            return None
        after = _first_nonspace(buf, brace + 1, win.hi)
        if after < 0 or buf[after] not in _AFTER_EVENT:
            limit = brace
            continue
        before, behind = buf[pos - 1], buf[brace + 1]
        buf[pos - 1], buf[brace + 1] = _OPEN, _CLOSE
        try:
            events = _decode(memoryview(buf)[pos - 1 : brace + 2], decoder, fallback)
        finally:
            buf[pos - 1], buf[brace + 1] = before, behind
        if events is None:
            limit = brace
            continue
        return brace + 1, events
    return None


def _bracketed(text) -> bytes:
    """``[`` + text + ``]`` in one copy (``text`` may be a memoryview into the read buffer)."""
    return b"".join((b"[", text, b"]"))


def _decode(text, decoder, fallback=None):
    """Events as ``decoder`` makes them when they fit its types, else as ``fallback`` (or orjson,
    without one) makes them; None if not JSON."""
    for each in (decoder, fallback):
        if each is not None:
            try:
                return each.decode(text)
            except msgspec.ValidationError:
                continue  # valid JSON of other types, or invalid JSON noticed late
            except msgspec.DecodeError:
                return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _loads_or_raise(path: Path, data: bytes, what: str):
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ParityError(
            f"{path}: invalid or truncated JSON in {what} ({exc}); copy or export it again"
        ) from None
