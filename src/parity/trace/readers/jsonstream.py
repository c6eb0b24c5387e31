"""Stream the events of a Chrome-trace JSON file in bounded memory.

A 1 GB trace parsed whole by ``orjson.loads`` becomes several GB of Python dicts. This module
instead reads the file (plain or gzip) in blocks, finds the ``traceEvents`` array (or a
top-level array of events, as Ascend's ``trace_view.json`` is), and hands out lists of event
dicts a few MB of text at a time, so peak memory is one block of dicts plus the
caller's numpy columns.

How a block is cut: the last ``}`` followed by ``,`` or ``]`` is a candidate end of an event;
``orjson`` parses ``[`` + text up to it + ``]``. A JSON parser reaches a cut inside a string
or a nested object in the same state as the real parse does, so a cut that parses is an event
boundary; one that does not is retried at the previous candidate. The keys around the array
(``distributedInfo``, ``baseTimeNanoseconds``, which Kineto writes after the events) are
parsed from the text before and after it and returned as ``header``.

Exact timestamps: microsecond floats such as ``1712195495519689.047`` (Kineto's
nanosecond-resolution traces) do not fit a float64 to the nanosecond. When the first block
shows such values, each ``"ts": I.F`` is rewritten to ``"ts": I, "ts_frac": 0.F`` before
parsing so the integer part stays exact and the fraction keeps its digits. This is decided per
block (``exact_ts`` says what the last block needed).
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
RAW_BLOCK_BYTES = 16 << 20  # text cut at a time for worker processes (fewer, larger messages)
TRACE_EVENTS = re.compile(rb'"traceEvents"\s*:\s*\[')  # the start of the event array
NEXT_EVENT = re.compile(rb"\}\s*,\s*\{")  # a guessed boundary between two events
_BIG_FRACTIONAL_TS = re.compile(rb'"ts"\s*:\s*(\d{13,})\.\d*[1-9]')
_POINTS_BY_FIND = 32  # decimal points looked at one by one before a regex search takes over
EXACT_PROBE_BYTES = 128 << 10  # of each block: ~500 events
FLOAT_EXACT_US = 2**42  # below this a float64 of microseconds still resolves 1 ns
_TS_SPLIT = re.compile(rb'"ts":(\s*)(\d+)\.(\d+)(?![\deE])')
_WS = b" \t\r\n"
_MAX_RETRIES = 32


@dataclass
class EventStream:
    """Iterate ``(first_index, events)`` blocks; ``header`` is complete after iteration.

    ``first_index`` is the position of the block's first event in the file's event array, so
    readers can name the index of a bad event. ``exact_ts`` says whether ``ts_frac`` keys were
    added (see the module docstring).

    With ``raw=True`` the blocks are not parsed here: they are yielded as ``bytes`` (the text of
    a run of events, cut where ``}`` is followed by ``, {``, a guess the parser of each block
    must confirm), except the last, parsed, block. Readers use this to parse blocks in
    parallel and fall back to the parsing stream when a guess fails.

    With a ``decoder`` (a ``msgspec.json.Decoder`` of a list of event structs) blocks are
    decoded into structs, which skips unneeded keys without building them: about 3x faster and
    far smaller than dicts. A block whose values do not fit the struct types (a generic or
    damaged trace) falls back to dicts; ``events`` then holds dicts, which callers tell apart
    by ``type``.
    """

    path: Path
    decoder: msgspec.json.Decoder | None = None
    exact_decoder: msgspec.json.Decoder | None = None  # see decode_block
    raw: bool = False
    source: object = None  # a binary file-like to read instead of opening ``path``
    block_bytes: int = 0  # 0: BLOCK_BYTES, or RAW_BLOCK_BYTES with ``raw``
    header: dict = field(default_factory=dict)
    exact_ts: bool = False
    bytes_read: int = 0
    total_bytes: int = 0

    def __iter__(self) -> Iterator[tuple[int, list]]:
        try:
            self.total_bytes = self.path.stat().st_size
        except OSError:
            self.total_bytes = 0
        handle = self.source if self.source is not None else open_binary(self.path)
        try:
            yield from self._blocks(handle)
        except (OSError, EOFError, *GZIP_ERRORS) as exc:
            raise ParityError(
                f"{self.path}: compressed stream is truncated or corrupt ({exc}); "
                "copy the trace again"
            ) from None
        finally:
            handle.close()

    def _read(self, handle) -> bytes:
        data = handle.read(self.block_bytes or (RAW_BLOCK_BYTES if self.raw else BLOCK_BYTES))
        raw = getattr(handle, "fileobj", None)
        self.bytes_read = raw.tell() if raw is not None else handle.tell()
        return data

    def _blocks(self, handle) -> Iterator[tuple[int, list]]:
        buf = self._read(handle)
        eof = not buf
        start = _first_nonspace(buf, 0)
        while start < 0 and not eof:
            more = self._read(handle)
            eof = not more
            buf += more
            start = _first_nonspace(buf, 0)
        if start < 0:
            raise ParityError(f"{self.path}: file is empty; profile again or pick another file")
        if buf[start : start + 1] == b"[":
            pos = start + 1
        elif buf[start : start + 1] == b"{":
            buf, pos, eof = self._find_events(handle, buf, start, eof)
            if pos < 0:
                return
        else:
            raise ParityError(f"{self.path}: not JSON (starts with {buf[start:start + 12]!r})")
        yield from self._array(handle, buf, pos, eof)

    def _find_events(self, handle, buf: bytes, start: int, eof: bool):
        """Locate ``"traceEvents": [``; parse the keys before it into ``header``."""
        while True:
            match = TRACE_EVENTS.search(buf, start)
            if match or eof:
                break
            more = self._read(handle)
            eof = not more
            buf += more
        if match is None:  # a JSON object without an event array: parse it whole
            self.header = _loads_or_raise(self.path, buf, "the file")
            if not isinstance(self.header, dict):
                raise ParityError(f"{self.path}: top-level JSON is not an object")
            return buf, -1, eof
        head = buf[start : match.start()] + b'"traceEvents":null}'
        try:
            self.header = orjson.loads(head)
        except orjson.JSONDecodeError:
            self.header = {}
        return buf, match.end(), eof

    def _array(self, handle, buf: bytes, pos: int, eof: bool) -> Iterator[tuple[int, list]]:
        index = 0
        opened = pos - 1  # the array's "[" while it is in ``buf``: see _cut
        while True:
            pos = _skip(buf, pos, b"," + _WS)
            if pos < len(buf) and buf[pos : pos + 1] == b"]":
                self._trailer(handle, buf[pos + 1 :], eof)
                return
            cut = _raw_cut(buf, pos) if self.raw else _cut(buf, pos, self.decoder, self.exact_decoder, opened)
            if cut is None:
                if eof:
                    events, end = self._last_events(buf, pos, index)
                    if events:
                        yield index, events
                    self._trailer(handle, buf[end:], eof)
                    return
                more = self._read(handle)
                eof = not more
                buf = buf[pos:] + more
                pos, opened = 0, -1
                continue
            end, events, self.exact_ts = cut
            if events:
                yield index, events
                index += len(events) if not self.raw else 0
            pos, opened = end, -1

    def _trailer(self, handle, rest: bytes, eof: bool) -> None:
        """Parse the keys after the event array (``, "k": v ... }``) into ``header``."""
        while not eof:
            more = self._read(handle)
            eof = not more
            rest += more
        text = rest.strip(_WS)
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

    def _last_events(self, buf: bytes, pos: int, index: int) -> tuple[list, int]:
        """At end of file, the entries before the array's closing ``]`` (which need not be
        objects) and where the trailer starts; a ParityError when the array never closes."""
        limit = len(buf)
        for _ in range(_MAX_RETRIES):
            close = buf.rfind(b"]", pos, limit)
            if close < 0:
                break
            text = buf[pos:close]
            self.exact_ts = _needs_exact_ts(text)
            if self.exact_ts:
                text = _split_ts(text)
            try:
                return orjson.loads(_bracketed(text)), close + 1
            except orjson.JSONDecodeError:
                limit = close
        try:
            orjson.loads(b"[" + buf[pos:] + b"]")
        except orjson.JSONDecodeError as exc:
            raise ParityError(
                f"{self.path}: invalid or truncated JSON at event {index} ({exc}); "
                "the file is cut short or corrupt, copy or export it again"
            ) from None
        raise ParityError(
            f"{self.path}: the event array never closes after event {index}; "
            "the file is cut short, copy or export it again"
        )


def _needs_exact_ts(text: bytes) -> bool:
    """Whether ``text`` has a fractional microsecond timestamp too large for a float64.

    Checked per block on its first :data:`EXACT_PROBE_BYTES` (a profiler formats every
    timestamp of a file alike), so a file whose first events are whole microseconds is still
    read exactly later on; ``.0`` fractions are exact in a float and do not count. The regex
    runs only where :func:`_may_need_exact` finds a point it could match at.
    """
    probe = bytes(text[:EXACT_PROBE_BYTES])
    if not _may_need_exact(probe):
        return False
    return any(int(m.group(1)) >= FLOAT_EXACT_US for m in _BIG_FRACTIONAL_TS.finditer(probe))


def _may_need_exact(probe: bytes) -> bool:
    """Whether some ``.`` in ``probe`` follows a run of digits worth at least
    :data:`FLOAT_EXACT_US`, which every match of ``_BIG_FRACTIONAL_TS`` has: where none
    does, the regex cannot match and is not run.

    The regex engine spends a step on every byte looking for ``"ts"`` (about 0.3 ms per
    128 kB); ``bytes.find`` jumps from point to point with ``memchr``, and most traces have a
    few dozen points in a probe (names, float ``args``). Past :data:`_POINTS_BY_FIND` of them
    a search for a point that ends such a run finishes the scan.
    """
    at = probe.find(b".")
    for _ in range(_POINTS_BY_FIND):
        if at < 0:
            return False
        if _BIG_POINT.match(probe, at):
            return True
        at = probe.find(b".", at + 1)
    return at >= 0 and _BIG_POINT.search(probe, at) is not None


def _at_least(number: bytes) -> bytes:
    """A regex of the digit strings as long as ``number`` and not below it: ``number`` itself,
    or its first ``k`` digits, a larger digit, then any digits."""
    larger = [
        re.escape(number[:k]) + b"[%c-9]" % (number[k] + 1) + rb"\d" * (len(number) - k - 1)
        for k in range(len(number))
        if number[k] < ord("9")
    ]
    return b"|".join([re.escape(number), *larger])


# A "." after 14 digits or more, or after 13 that are FLOAT_EXACT_US or more (both looked
# behind at, so the search stops only at points): what every match of _BIG_FRACTIONAL_TS has.
_BIG_POINT = re.compile(
    rb"\.(?:(?<=\d{14}\.)|(?<=(?:" + _at_least(b"%d" % FLOAT_EXACT_US) + rb")\.))"
)


def _split_ts(text) -> bytes:
    """``text`` with each ``"ts": I.F`` written as ``"ts": I, "ts_frac": 0.F`` (see the module
    docstring); ``text`` may be a memoryview, as ``re.sub`` takes none."""
    return _TS_SPLIT.sub(rb'"ts":\1\2,"ts_frac":0.\3', bytes(text))


def _first_nonspace(buf: bytes, pos: int) -> int:
    end = len(buf)
    while pos < end and buf[pos] in _WS:
        pos += 1
    return pos if pos < end else -1


def _skip(buf: bytes, pos: int, chars: bytes) -> int:
    end = len(buf)
    while pos < end and buf[pos] in chars:
        pos += 1
    return pos


RAW_TAIL_BYTES = 1 << 20


def _raw_cut(buf: bytes, pos: int):
    """Cut before the last ``}, {`` in the final MB of ``buf`` without parsing (see raw mode)."""
    lo = max(pos, len(buf) - RAW_TAIL_BYTES)
    last = None
    for last in NEXT_EVENT.finditer(buf, lo):
        pass
    if last is None:
        return None
    return last.start() + 1, buf[pos : last.start() + 1], False


def decode_block(text, decoder, exact_decoder=None, *, bracketed: bool = False) -> tuple[list | None, bool]:
    """Parse the text of a run of events (as :func:`_cut` does): ``(events or None, exact)``.

    ``text`` is the events between the array's brackets, or with ``bracketed`` the whole array
    brackets included (decoded where it lies, without a copy). Where timestamps need exact
    handling, ``exact_decoder`` (one that keeps ``ts`` as JSON text) is tried first; without
    it, or for values it does not fit, ``ts`` is rewritten as the module docstring says.
    """
    array = (lambda t: t) if bracketed else _bracketed
    exact = _needs_exact_ts(text)
    if exact and exact_decoder is not None:
        try:
            return exact_decoder.decode(array(text)), exact
        except msgspec.ValidationError:
            pass
        except msgspec.DecodeError:
            return None, exact
    if exact:
        text = _split_ts(text)
    return _decode(array(text), decoder), exact


def _cut(buf: bytes, pos: int, decoder, exact_decoder=None, opened: int = -1):
    """The largest parseable run of events from ``pos``: ``(end, events, exact)`` or None.

    ``opened`` is where the array's ``[`` is in ``buf`` (-1 when it is not): a run from there
    to the closing ``]`` (a whole small file) is decoded in place instead of copied."""
    limit = len(buf)
    for _ in range(_MAX_RETRIES):
        brace = buf.rfind(b"}", pos, limit)
        if brace < 0:
            return None
        after = _first_nonspace(buf, brace + 1)
        if after < 0 or buf[after : after + 1] not in (b",", b"]"):
            limit = brace
            continue
        if opened >= 0 and buf[after : after + 1] == b"]":
            events, exact = decode_block(memoryview(buf)[opened : after + 1], decoder, exact_decoder, bracketed=True)
        else:
            events, exact = decode_block(memoryview(buf)[pos : brace + 1], decoder, exact_decoder)
        if events is None:
            limit = brace
            continue
        return brace + 1, events, exact
    return None


def _bracketed(text) -> bytes:
    """``[`` + text + ``]`` in one copy (``text`` may be a memoryview into the read buffer)."""
    return b"".join((b"[", text, b"]"))


def _decode(text: bytes, decoder):
    """Events as structs (when they fit the decoder's types) or dicts; None if not JSON."""
    if decoder is not None:
        try:
            return decoder.decode(text)
        except msgspec.ValidationError:
            pass  # valid JSON of other types, or invalid JSON noticed late: try dicts
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
