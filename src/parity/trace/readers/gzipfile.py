"""Open a trace file for reading bytes, inflating gzip by content rather than by name.

Traces arrive as ``.json`` or ``.json.gz`` (and sometimes gzip without the suffix), so the
magic bytes decide. Gzip is inflated by :class:`GzipReader` with zlib, or with ISA-L's zlib
twin when the optional ``fast`` extra is installed; both raise one of :data:`GZIP_ERRORS` on
corruption and ``EOFError`` on truncation.
"""

from __future__ import annotations

import zlib
from pathlib import Path

from parity.model.errors import ParityError

try:  # ISA-L inflates gzip about 4x faster than zlib (optional: pip install 'parity[fast]')
    from isal import isal_zlib as _inflate_lib

    GZIP_ERRORS: tuple[type[BaseException], ...] = (zlib.error, _inflate_lib.error)
except ImportError:  # pragma: no cover - depends on the environment
    _inflate_lib = zlib
    GZIP_ERRORS = (zlib.error,)

GZIP_MAGIC = b"\x1f\x8b"  # the first two bytes of every gzip member


def open_binary(path: Path):
    """Open ``path`` for reading bytes, transparently gunzipping by content (magic bytes)."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - returned to the caller
    except OSError as exc:
        raise ParityError(f"{path}: cannot open ({exc.strerror or exc}); check the path") from None
    magic = handle.read(2)
    handle.seek(0)
    if magic == GZIP_MAGIC:
        return GzipReader(handle)
    return handle


class GzipReader:
    """Read a gzip file (one member or several) with zlib (or ISA-L's zlib twin) directly.

    ``gzip.GzipFile`` inflates in small steps and checks the CRC in Python-level calls; one
    ``zlib`` decompressor fed 64 KB of compressed input at a time (it checks the CRC and
    length itself) reads a trace faster. Truncation raises ``EOFError`` and corruption
    one of :data:`GZIP_ERRORS`, as ``GzipFile`` does. ``fileobj`` is the compressed file, for progress.
    """

    CHUNK = 64 << 10  # compressed bytes read at a time: about 1 MB of JSON text
    # Decompressed bytes per step. Small pieces come from memory the allocator has already
    # mapped; a 1 MB piece is new memory each time, which the kernel maps in page by page
    # (with the reused read buffer of jsonstream, a 1.8 MB trace loads about 12% faster on a
    # 2-vCPU VM: 656 of its 795 page faults a load are gone).
    OUT = 64 << 10
    MIN_OUT = 4 << 10  # decompressed bytes per step at the least, however few are wanted

    def __init__(self, fileobj) -> None:
        self.fileobj = fileobj
        self._inflate = _inflate_lib.decompressobj(wbits=31)
        self._buf = b""  # decompressed bytes, returned from ``_pos`` on
        self._pos = 0
        self._done = False  # the last member is decompressed and the file read to its end

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` decompressed bytes (all that is left when ``size < 0``); b"" at EOF."""
        if size < 0:
            parts = []
            while part := self.read(1 << 20):
                parts.append(part)
            return b"".join(parts)
        buffer = bytearray(size)
        return bytes(memoryview(buffer)[: self.readinto(buffer)])

    def readinto(self, view) -> int:
        """Fill ``view`` (a writable buffer) with the next decompressed bytes; how many were
        written, fewer than ``len(view)`` only at the end of the file."""
        size, done = len(view), 0
        with memoryview(view) as out:
            while done < size:
                if self._pos >= len(self._buf):
                    if self._done:
                        break
                    self._buf, self._pos = self._more(size - done), 0
                    continue
                count = min(size - done, len(self._buf) - self._pos)
                out[done : done + count] = memoryview(self._buf)[self._pos : self._pos + count]
                self._pos += count
                done += count
        return done

    def _more(self, wanted: int) -> bytes:
        """The next output of the decompressor, fed :data:`CHUNK` compressed bytes when it has
        used up what it had; b"" and ``_done`` after the last member. At most :data:`OUT`
        bytes, and no more than ``wanted`` (at least :data:`MIN_OUT`): each inflating call
        costs more the more it makes, which a read of a file's first kilobytes notices."""
        limit = min(self.OUT, max(wanted, self.MIN_OUT))
        inflate = self._inflate
        if inflate.eof:  # a member ended: the next one, zero padding, or the file's end
            rest = inflate.unused_data.lstrip(b"\0")
            while not rest:
                chunk = self.fileobj.read(self.CHUNK)
                if not chunk:
                    self._done = True
                    return b""
                rest = chunk.lstrip(b"\0")
            self._inflate = _inflate_lib.decompressobj(wbits=31)
            return self._inflate.decompress(rest, limit)
        data = inflate.unconsumed_tail or self.fileobj.read(self.CHUNK)
        out = inflate.decompress(data, limit)  # no input left: what the decompressor holds
        if not data and not out and not inflate.eof:
            raise EOFError("compressed file ended before the end-of-stream marker was reached")
        return out

    def close(self) -> None:
        self.fileobj.close()

    def __enter__(self) -> GzipReader:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()
