"""A benchmark family as parity finds it: its name, its suite and its views, by import path.

Every family, built in or from another package, is an entry point in the ``parity.families``
group whose value names a :class:`Family` (``gemm = "parity.families.gemm:FAMILY"``). The
harness loads ``suite`` to run it; the report and compare load ``view`` to draw it; neither
names a family in its own code. Standard library only: listing families imports no family.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from parity.model.errors import ParityError

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "parity.families"


@dataclass(frozen=True, kw_only=True)
class Family:
    """One family: ``suite`` and ``view`` are ``"module:attribute"`` paths, imported on first
    use (a class is instantiated with no arguments); an empty ``view`` means the generic view
    (figures and cases as tables). ``order`` sorts families in listings, then the name."""

    name: str
    suite: str
    view: str = ""
    description: str = ""
    order: int = 100


_registered: dict[str, Family] = {}


def register_family(family: Family) -> None:
    """Make ``family`` known in this process (tests; a script that defines one)."""
    _registered[family.name] = family


def unregister_family(name: str) -> None:
    _registered.pop(name, None)


def load_object(spec: str, *, label: str) -> Any:
    """The object a ``"module:attribute"`` path names (a class is instantiated), or ParityError."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ParityError(f"{label}: expected 'module:attribute', got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name in ("torch", "numpy"):
            raise ParityError(f"{label} needs {exc.name}: pip install 'parity[bench]'") from None
        raise ParityError(f"{label} cannot be imported: no module named {exc.name!r}") from None
    except ImportError as exc:
        raise ParityError(f"{label} cannot be imported: {exc}") from None
    try:
        target = getattr(module, attribute)
    except AttributeError:
        raise ParityError(f"{label}: module {module_name} has no {attribute!r}") from None
    return target() if isinstance(target, type) else target


def families() -> dict[str, Family]:
    """Every known family by name, sorted by ``order`` then name: entry points, then those
    registered in this process (which override an entry point of the same name)."""
    found: dict[str, Family] = {}
    try:
        points: Iterable[metadata.EntryPoint] = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception:  # noqa: BLE001 - a broken distribution must not hide the others
        log.warning("could not read %s entry points", ENTRY_POINT_GROUP, exc_info=True)
        points = ()
    for point in points:
        family = load_object(point.value, label=f"family entry point {point.name!r}")
        if not isinstance(family, Family):
            raise ParityError(f"family entry point {point.name!r} ({point.value}) is not a parity Family")
        if family.name != point.name:
            raise ParityError(f"family entry point {point.name!r} names the family {family.name!r}; make them agree")
        found[family.name] = family
    found.update(_registered)
    return dict(sorted(found.items(), key=lambda kv: (kv[1].order, kv[0])))
