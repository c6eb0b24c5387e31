"""A package's names loaded with their module on first use (a module-level ``__getattr__``).

``__getattr__ = lazy_names(__name__, {"Name": "module", ...})`` in a package's ``__init__`` makes
``package.Name`` import ``package.module`` only when asked for, so importing one module of the
package does not import the others. Standard library only.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, home: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that finds ``name`` in ``package.<home[name]>``.
    Example: with home {"ParityError": "errors"}, ``parity.model.ParityError`` imports
    ``parity.model.errors`` and returns its ``ParityError``; any other name is an AttributeError."""

    def __getattr__(name: str) -> Any:
        if name in home:
            return getattr(importlib.import_module(f"{package}.{home[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
