"""Identifiers that may become file names: run ids, suite names, case keys' owners.

A run id names report files (``reports/<run id>.html``) and default export files
(``parity-<run id>.json``), so an id read from a file someone else wrote (an imported run, a
store copied from another host) must not be able to leave the folder it is joined to. An id is
letters, digits, ``.``, ``_`` and ``-``, starts with a letter or a digit (so never ``.`` or
``..``) and is at most :data:`MAX_ID_LENGTH` characters.
"""

from __future__ import annotations

import re
from pathlib import Path

MAX_ID_LENGTH = 128
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
ID_RULE = f"letters, digits, '.', '_' and '-', starting with a letter or digit, at most {MAX_ID_LENGTH} characters"


def is_id(value: object) -> bool:
    """True when ``value`` is a string that :data:`ID_PATTERN` matches whole, short enough."""
    return isinstance(value, str) and len(value) <= MAX_ID_LENGTH and ID_PATTERN.fullmatch(value) is not None


def file_in(folder: str | Path, stem: str, suffix: str) -> Path:
    """``folder / (stem + suffix)`` when ``stem`` is an id (:func:`is_id`); a ``ValueError``
    otherwise, so no file name made from stored text leaves ``folder``."""
    if not is_id(stem):
        raise ValueError(f"{stem!r} cannot name a file: an id is {ID_RULE}")
    return Path(folder) / f"{stem}{suffix}"
