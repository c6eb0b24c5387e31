"""Benchmark suites by name, imported only when selected.

Three sources, later ones overriding earlier ones:

1. the families (:func:`parity.model.family.families`: entry points in the ``parity.families``
   group, parity's own and any other package's), each naming its suite as ``"module:attribute"``,
   imported lazily so listing names never imports torch;
2. bare suites, with no view of their own: entry points in the ``parity.suites`` group, each
   naming a suite class or instance;
3. ``$PARITY_PLUGINS``: a comma-separated list of ``module:attribute`` (handy for a suite in a
   local file on ``PYTHONPATH``), and suites passed to :func:`register` in this process.

A suite given as a class is instantiated with no arguments on first use.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from importlib import metadata
from typing import Any

from parity.harness.suite import Suite
from parity.model.errors import ParityError
from parity.model.family import load_object

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "parity.suites"
PLUGINS_ENV = "PARITY_PLUGINS"

_registered: dict[str, Any] = {}  # name -> Suite instance or class
_loaded: dict[Any, Suite] = {}  # "module:attribute" or class -> its instance, made once


def register(suite: Suite | type, *, name: str | None = None) -> None:
    """Make ``suite`` (an instance or a class with a ``name``) selectable by its name."""
    suite_name = name or getattr(suite, "name", None)
    if not isinstance(suite_name, str) or not suite_name:
        raise ParityError(f"cannot register {suite!r}: it has no string 'name' attribute")
    _registered[suite_name] = suite


def unregister(name: str) -> None:
    """Forget a suite registered in this process (tests use it to clean up)."""
    _registered.pop(name, None)


def _sources() -> dict[str, Any]:
    """Every known suite name mapped to what provides it, in override order."""
    found: dict[str, Any] = _family_suites()
    try:
        entry_points: Iterable[metadata.EntryPoint] = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception:  # noqa: BLE001 - a broken distribution must not hide the built-ins
        log.warning("could not read %s entry points", ENTRY_POINT_GROUP, exc_info=True)
        entry_points = ()
    for ep in entry_points:
        found[ep.name] = ep.value
    for spec in filter(None, (s.strip() for s in os.environ.get(PLUGINS_ENV, "").split(","))):
        found[_plugin_name(spec)] = spec
    found.update(_registered)
    return found


def _family_suites() -> dict[str, str]:
    """Each family's suite path by family name, in the families' order."""
    from parity.model.family import families

    return {name: family.suite for name, family in families().items()}


def _plugin_name(spec: str) -> str:
    """The suite name a ``$PARITY_PLUGINS`` entry provides (imports it to read ``name``)."""
    if spec not in _loaded:
        _loaded[spec] = _load(spec, label=f"{PLUGINS_ENV} entry {spec!r}")
    name = getattr(_loaded[spec], "name", None)
    if not isinstance(name, str) or not name:
        raise ParityError(f"{PLUGINS_ENV} entry {spec!r} has no string 'name'; give the suite one")
    return name


def names() -> list[str]:
    """All selectable suite names: the families first in their order, then the rest sorted."""
    known = _sources()
    ordered = [n for n in _family_suites() if n in known]
    return ordered + sorted(n for n in known if n not in ordered)


def _load(spec: str, *, label: str) -> Suite:
    """The suite a ``"module:attribute"`` path names (``parity.model.family.load_object``)."""
    suite = load_object(spec, label=label)
    if not isinstance(suite, Suite):
        raise ParityError(f"{label}: {spec} is not a suite (needs name, cases, measure, summarize)")
    return suite


def get_suite(name: str) -> Suite:
    """The suite called ``name``; unknown names and unloadable suites raise ParityError."""
    known = _sources()
    if name not in known:
        raise ParityError(f"unknown suite {name!r}; known suites: {', '.join(names()) or 'none'}")
    source = known[name]
    if not isinstance(source, (str, type)):
        return source  # a registered instance
    if source not in _loaded:
        if isinstance(source, str):
            _loaded[source] = _load(source, label=f"suite {name!r}")
        else:
            _loaded[source] = _instantiate(source, name=name)
    suite = _loaded[source]
    if getattr(suite, "name", name) != name:
        raise ParityError(f"suite {name!r} reports the name {suite.name!r}; make them agree")
    return suite


def _instantiate(cls: type, *, name: str) -> Suite:
    suite = cls()
    if not isinstance(suite, Suite):
        raise ParityError(f"suite {name!r}: {cls.__name__} is not a suite")
    return suite


def resolve(selection: list[str] | None) -> list[Suite]:
    """Suites for ``--suite`` values (each may be a comma list); all known ones when empty."""
    wanted: list[str] = []
    for item in selection or []:
        for part in item.split(","):
            part = part.strip()
            if part and part not in wanted:
                wanted.append(part)
    if not wanted:
        wanted = names()
    unknown = [n for n in wanted if n not in set(names())]
    if unknown:
        raise ParityError(
            f"unknown suite {unknown[0]!r}; known suites: {', '.join(names()) or 'none'}"
        )
    return [get_suite(n) for n in wanted]
