"""The SHA-256 digest that identifies a trace on disk, so a stored analysis says which bytes it
was made from: a file renamed or copied keeps its digest, a file changed in place does not."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

CHUNK_BYTES = 1 << 20


def trace_files(paths: Sequence[str | os.PathLike[str]]) -> list[tuple[str, Path]]:
    """Every file the trace is made of as ``(name, path)``, sorted by name: a file given
    directly is named by its file name, a folder's files by their path inside the folder
    (hidden files skipped)."""
    files: list[tuple[str, Path]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                relative = child.relative_to(path)
                if child.is_file() and not any(part.startswith(".") for part in relative.parts):
                    files.append((relative.as_posix(), child))
        else:
            files.append((path.name, path))
    return sorted(files, key=lambda item: item[0])


def _update(digest: "hashlib._Hash", path: Path) -> None:
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK_BYTES), b""):
            digest.update(block)


def trace_digest(paths: Sequence[str | os.PathLike[str]]) -> str:
    """Hex SHA-256 of the trace.

    One plain file: the SHA-256 of its bytes (what ``sha256sum`` prints). A folder or several
    paths: the SHA-256 over the files of :func:`trace_files` in name order, each contributing its
    name, a NUL, its size in decimal, a NUL, then its bytes.
    """
    digest = hashlib.sha256()
    if len(paths) == 1 and Path(paths[0]).is_file():
        _update(digest, Path(paths[0]))
        return digest.hexdigest()
    for name, path in trace_files(paths):
        digest.update(name.encode() + b"\0" + str(path.stat().st_size).encode() + b"\0")
        _update(digest, path)
    return digest.hexdigest()
