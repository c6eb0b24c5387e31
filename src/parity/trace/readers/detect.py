"""Tell a trace's format ("kineto", "ascend-text", "ascend-db" or "nsys") from its content.

A folder holding or being ``ASCEND_PROFILER_OUTPUT`` is Ascend text when ``trace_view.json`` is
there, else the Ascend SQLite export in it (CSV tables alone are refused, with the profiler's own
step figures). SQLite (by its header) is Nsight Systems with ``CUPTI_ACTIVITY_KIND_*`` tables,
Ascend with ``TASK`` and ``STRING_IDS``. JSON (plain or gzip) is Ascend text when a top-level
array has string timestamps or an ``Ascend Hardware`` process, else a Chrome trace for the Kineto
reader. Anything else is a :class:`ParityError` naming the file and what was found.
"""

from __future__ import annotations

import re
from pathlib import Path

from parity.model.errors import ParityError
from parity.trace.readers import jsonstream
from parity.trace.readers.ascend_layout import KERNEL_DETAILS, OUTPUT, STEP_TRACE, TRACE_VIEW, output_dir
from parity.trace.readers.jsonstream import GZIP_ERRORS, GZIP_MAGIC

SQLITE_MAGIC = b"SQLite format 3\x00"
# how far to look, in turn (a Kineto header is usually under 4 kB, tens of kB with many devices)
HEAD_LOOKS = (4 << 10, 64 << 10, 1 << 20)
_ASCEND_DB = re.compile(r"ascend_pytorch_profiler(_\d+)?\.db$")
_STRING_TS = re.compile(rb'"ts"\s*:\s*"\s*-?\d')
_EVENT_KEY = re.compile(rb'\{\s*"(ph|name|pid|tid|ts|cat|dur|args)"\s*:')


def ascend_db_in(folder: Path) -> Path | None:
    """The ``ascend_pytorch_profiler_N.db`` inside an Ascend output folder, if any."""
    candidates = sorted(p for p in folder.glob("*.db") if _ASCEND_DB.search(p.name))
    return candidates[0] if candidates else None


def detect(path: Path) -> str:
    """The format of ``path`` (see the module docstring), or a ParityError."""
    if path.is_dir():
        return _detect_folder(path)
    if not path.is_file():
        raise ParityError(f"{path}: no such file or folder")
    if path.name in (KERNEL_DETAILS, STEP_TRACE):
        raise ParityError(_table_not_timeline(path))
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise ParityError(f"{path}: cannot open ({exc.strerror or exc}); check the path") from None
    with handle:
        head = handle.read(len(SQLITE_MAGIC))
        if head.startswith(SQLITE_MAGIC):
            return _detect_sqlite(path)
        handle.seek(0)
        reader = jsonstream.GZIP_FILE(fileobj=handle, mode="rb") if head[:2] == GZIP_MAGIC else handle
        text = b""
        for size in HEAD_LOOKS:
            try:
                text += reader.read(size - len(text))
            except (OSError, EOFError, *GZIP_ERRORS):
                text = b""  # a gzip cut short or corrupt
            if text.lstrip()[:1] == b"{" and b'"traceEvents"' in text:
                return "kineto"  # the common case, decided without inflating a whole MB
            if len(text) < size:
                break  # the whole file is read (or it could not be)
    if not text.strip():
        if head[:2] == GZIP_MAGIC:
            raise ParityError(f"{path}: gzip file is empty or truncated; copy the trace again")
        raise ParityError(f"{path}: file is empty; profile again or pick another file")
    stripped = text.lstrip()
    if stripped[:1] == b"[":
        if b'"Ascend Hardware"' in text or _STRING_TS.search(text) or path.name == TRACE_VIEW:
            return "ascend-text"
        if _EVENT_KEY.search(text):
            return "kineto"
    if stripped[:1] == b"{" and (b'"traceEvents"' in text or _EVENT_KEY.search(text)):
        return "kineto"
    hint = "; export Nsight Systems reports with 'nsys export --type sqlite'" if path.suffix in (
        ".nsys-rep", ".qdrep") else ""  # fmt: skip
    raise ParityError(f"{path}: not a trace this reader knows (Kineto/Chrome JSON, Ascend profiler output, "
                      f"Nsight Systems SQLite); it starts with {stripped[:24]!r}{hint}")  # fmt: skip


def _detect_folder(path: Path) -> str:
    output = output_dir(path)
    if (output / TRACE_VIEW).is_file():
        return "ascend-text"
    if ascend_db_in(output) is not None:
        return "ascend-db"
    if (output / KERNEL_DETAILS).is_file() or (output / STEP_TRACE).is_file():
        from parity.trace.readers.ascend_text import missing_timeline

        raise ParityError(missing_timeline(path, output))
    raise ParityError(f"{path}: folder holds no {OUTPUT}/{TRACE_VIEW} or ascend_pytorch_profiler_N.db; "
                      "pass the trace files themselves")  # fmt: skip


def _table_not_timeline(path: Path) -> str:
    """The refusal of an Ascend CSV table passed as a trace: what to pass instead."""
    head = f"{path}: {path.name} is one of the Ascend profiler's tables, not a timeline"
    if (path.parent / TRACE_VIEW).is_file():
        return f"{head}; pass {path.parent / TRACE_VIEW} or its *_ascend_pt folder"
    from parity.trace.readers.ascend_text import missing_timeline

    return f"{head}; " + missing_timeline(path.parent, path.parent)


def _detect_sqlite(path: Path) -> str:
    from parity.trace.readers.ascend_db import open_sqlite  # sqlite3 only for SQLite files

    db, tables = open_sqlite(path)
    db.close()
    if any(t.startswith("CUPTI_ACTIVITY_KIND") for t in tables):
        return "nsys"
    if {"TASK", "STRING_IDS"} <= tables:
        return "ascend-db"
    raise ParityError(f"{path}: SQLite file without Nsight (CUPTI_ACTIVITY_KIND_*) or Ascend (TASK, STRING_IDS) "
                      "tables; not a trace export")  # fmt: skip
