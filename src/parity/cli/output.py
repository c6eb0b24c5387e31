"""What every command shares: the ``--json PATH`` option and writing JSON with the schema version."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import orjson

from parity.model.errors import ParityError
from parity.model.schema import envelope, json_default


def json_option(function):
    """``--json PATH``: also write the command's result as JSON (``-`` for standard output); a
    PATH in a folder that does not exist is refused before the command does anything."""
    return click.option(
        "--json",
        "json_path",
        type=click.Path(dir_okay=False, allow_dash=True),
        default=None,
        callback=_existing_folder,
        help="Also write the result as JSON with a schema_version to FILE ('-' for stdout).",
    )(function)


def _existing_folder(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and value != "-" and not Path(value).parent.is_dir():
        raise click.BadParameter(f"folder {Path(value).parent} does not exist; create it first or choose another path")
    return value


def dumps(data: Any) -> bytes:
    """Serialise to indented JSON; numpy scalars and arrays, dataclasses and paths are handled."""
    return orjson.dumps(
        data,
        option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS,
        default=json_default,
    )


def write_json(path: str | None, kind: str, payload: dict[str, Any]) -> None:
    """Write ``payload`` wrapped with ``schema_version`` and ``kind`` to ``path`` if given; a
    folder that does not exist is a ParityError (no command creates one for its JSON)."""
    if path is None:
        return
    data = dumps(envelope(kind, payload)) + b"\n"
    if path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    target = Path(path)
    if not target.parent.is_dir():  # a command's JSON never creates folders
        raise ParityError(f"cannot write JSON to {path}: folder {target.parent} does not exist; "
                          "create it first or choose another path")
    try:
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(target)
    except OSError as exc:
        raise ParityError(f"cannot write JSON to {path}: {exc.strerror}; choose a writable path")


def write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path`` (``-``: stdout), making its folder; one-line error when it cannot."""
    if path == "-":
        click.echo(text, nl=False)
        return
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    except OSError as exc:
        raise ParityError(f"cannot write {path}: {exc.strerror}; choose a writable path") from None
