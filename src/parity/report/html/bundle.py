"""The one chart library the report embeds (Vega, Vega-Lite and vega-embed, bundled offline by
``vl-convert-python``), and static SVG export of a chart through the same library.

Building the bundle takes a few seconds, so it is kept in the user cache directory, one file per
``vl-convert`` version: the report of a ``parity run`` is quick after the first. The library
comes with the ``report`` extra; without it the report is a one-line error saying so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from parity.model.errors import ParityError

INSTALL_HINT = "the HTML report needs the report extra: pip install 'parity[report]' (vl-convert-python)"


def _vl_convert() -> Any:
    try:
        import vl_convert
    except ImportError as exc:
        raise ParityError(INSTALL_HINT) from exc
    return vl_convert


def _cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(os.environ.get("PARITY_CACHE_DIR") or user_cache_dir("parity"))


def chart_library_js() -> str:
    """The offline JavaScript bundle (``vegaEmbed``, ``vega``, ``vegaLite`` as globals)."""
    vlc = _vl_convert()
    version = getattr(vlc, "__version__", "unknown")
    path = _cache_dir() / f"vega-bundle-{version}.js"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        pass
    text = vlc.javascript_bundle()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # an unwritable cache only costs the next report the same few seconds
    return text


def chart_svg(spec: dict[str, Any]) -> str:
    """The chart drawn as a standalone SVG document, without a browser."""
    return _vl_convert().vegalite_to_svg(spec)
