"""The text of a PDF that Chromium prints (Skia's writer), page by page, with no PDF library.

Skia writes each page's content as a Flate stream that shows text with ``<hex glyph ids> Tj``
(and ``[...] TJ``) in Type0 fonts whose ``/ToUnicode`` CMap maps glyph ids to characters; form
XObjects (drawn with ``Do``) may hold more text. This reads exactly that, which is all a test
needs to see what a printout shows; a PDF from another writer may hold text it does not read.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

STREAM = re.compile(rb"stream\r?\n(.*?)\r?\nendstream", re.S)
SHOW = re.compile(rb"/(\S+)\s+[\d.]+\s+Tf|<([0-9A-Fa-f]*)>\s*Tj|\[((?:[^\]\\]|\\.)*)\]\s*TJ|/(\S+)\s+Do|(T\*|Td|TD|Tm|ET)")


START = re.compile(rb"(\d+) 0 obj\s*")
LENGTH = re.compile(rb"/Length (\d+)(?! \d+ R)")


def _objects(data: bytes) -> dict[int, bytes]:
    """Object number to its body; a stream body is cut at its ``/Length``, so bytes inside the
    stream that spell ``endobj`` cannot end it early."""
    out: dict[int, bytes] = {}
    pos = 0
    while (m := START.search(data, pos)) is not None:
        begin = m.end()
        head_end = data.find(b"stream", begin)
        end_obj = data.find(b"endobj", begin)
        length = LENGTH.search(data, begin, head_end) if 0 <= head_end < end_obj else None
        if length is not None:
            start = head_end + len(b"stream") + (2 if data[head_end + 6:head_end + 8] == b"\r\n" else 1)
            end_obj = data.find(b"endobj", start + int(length.group(1)))
        out[int(m.group(1))] = data[begin:end_obj]
        pos = end_obj + len(b"endobj")
    return out


def _stream(body: bytes) -> bytes:
    head_end = body.find(b"stream")
    length = LENGTH.search(body, 0, head_end) if head_end >= 0 else None
    if length is None:
        match = STREAM.search(body)
        raw = match.group(1) if match else b""
    else:
        start = head_end + len(b"stream") + (2 if body[head_end + 6:head_end + 8] == b"\r\n" else 1)
        raw = body[start:start + int(length.group(1))]
    return zlib.decompress(raw) if b"/FlateDecode" in body[:max(head_end, 0)] else raw


def _named_refs(body: bytes, key: bytes) -> dict[bytes, int]:
    """``/Key <</Name n 0 R ...>>`` of a dictionary as ``{name: object number}``."""
    match = re.search(rb"/" + key + rb"\s*<<(.*?)>>", body, re.S)
    return {m.group(1): int(m.group(2)) for m in re.finditer(rb"/(\S+?)\s+(\d+) 0 R", match.group(1))} if match else {}


def _cmap(text: bytes) -> dict[int, str]:
    """Glyph id to text from a ToUnicode CMap (``bfchar`` and ``bfrange`` sections)."""
    out: dict[int, str] = {}
    for block in re.findall(rb"beginbfchar(.*?)endbfchar", text, re.S):
        for src, dst in re.findall(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", block):
            out[int(src, 16)] = bytes.fromhex(dst.decode()).decode("utf-16-be", "replace")
    for block in re.findall(rb"beginbfrange(.*?)endbfrange", text, re.S):
        for lo, hi, dst in re.findall(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", block):
            start = int.from_bytes(bytes.fromhex(dst.decode()), "big")
            for i, glyph in enumerate(range(int(lo, 16), int(hi, 16) + 1)):
                out[glyph] = chr(start + i)
    return out


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.objects = _objects(data)
        self.cmaps: dict[int, dict[int, str]] = {}

    def cmap(self, font: int) -> dict[int, str]:
        if font not in self.cmaps:
            ref = re.search(rb"/ToUnicode (\d+) 0 R", self.objects.get(font, b""))
            self.cmaps[font] = _cmap(_stream(self.objects[int(ref.group(1))])) if ref else {}
        return self.cmaps[font]

    def text(self, content: bytes, resources: bytes, depth: int = 0) -> str:
        fonts, forms = _named_refs(resources, b"Font"), _named_refs(resources, b"XObject")
        cmap: dict[int, str] = {}
        out: list[str] = []
        for m in SHOW.finditer(content):
            font, hexes, array, form, move = m.groups()
            if font is not None:
                cmap = self.cmap(fonts[font]) if font in fonts else {}
            elif hexes is not None:
                out.append(self._decode(hexes, cmap))
            elif array is not None:
                out.append("".join(self._decode(h, cmap) for h in re.findall(rb"<([0-9A-Fa-f]*)>", array)))
            elif form is not None and form in forms and depth < 8:
                body = self.objects.get(forms[form], b"")
                if b"/Subtype /Form" in body:
                    out.append(self.text(_stream(body), body, depth + 1))
            elif move is not None:
                out.append("\n" if move in (b"ET", b"T*", b"Tm") else " ")
        return "".join(out)

    @staticmethod
    def _decode(hexes: bytes, cmap: dict[int, str]) -> str:
        return "".join(cmap.get(int(hexes[i:i + 4], 16), "") for i in range(0, len(hexes) - 3, 4))

    def pages(self) -> list[str]:
        out = []
        for number, body in sorted(self.objects.items()):
            if re.search(rb"/Type\s*/Page\b(?!s)", body) is None:
                continue
            contents = re.search(rb"/Contents\s*(?:(\d+) 0 R|\[([^\]]*)\])", body)
            refs = [int(contents.group(1))] if contents and contents.group(1) else \
                [int(n) for n in re.findall(rb"(\d+) 0 R", contents.group(2))] if contents else []
            out.append("".join(self.text(_stream(self.objects[r]), body) for r in refs))
        return out


def pdf_pages(path: str | Path) -> list[str]:
    """The text of each page of a PDF Chromium printed, in drawing order (lines from text objects)."""
    return _Reader(Path(path).read_bytes()).pages()
