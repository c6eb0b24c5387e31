"""One versioned schema for disk, worker pipes and the Python API.

History:
    1: first release (runs, cases with raw samples, metrics, findings, errors, provenance).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1


def envelope(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Wrap a JSON payload with ``schema_version`` and ``kind`` so readers can check both."""
    return {"schema_version": SCHEMA_VERSION, "kind": kind, **payload}


def check_version(data: dict[str, Any], *, source: str) -> None:
    """Refuse a document written by a newer schema than this code understands."""
    from parity.model.errors import ParityError

    version = data.get("schema_version")
    if not isinstance(version, int):
        raise ParityError(f"{source}: no integer schema_version; is this a parity file?")
    if version > SCHEMA_VERSION:
        raise ParityError(
            f"{source}: schema_version {version} is newer than this parity ({SCHEMA_VERSION}); "
            "upgrade parity to read it"
        )


def json_default(value: Any) -> Any:
    """The fallback of every JSON encoder in parity (orjson's ``default``): paths as text,
    records through their ``to_dict``, numpy scalars through ``item``."""
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"cannot serialise {type(value).__name__} to JSON")
