"""parity: fair, controlled, reproducible measurements of AI accelerators.

The package is layered (see docs/architecture.md): ``model`` and ``stats`` are pure Python and numpy,
``trace`` never imports torch, and only ``device`` touches device APIs.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
