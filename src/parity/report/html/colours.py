"""Colours that tell runs apart: each run of a chart gets its own hue, and its series shades of
that hue, so no colour is shared by two runs in one chart whatever the number of series.

A view names each series of a multi-run chart ``"<run label> · <series>"`` (or the bare run
label); :func:`colour_runs` reads those names from the chart's datasets and gives the colour
encoding an explicit domain and range. A chart whose colour field does not name runs (a trace's
categories, a convention) is left as its view drew it.
"""

from __future__ import annotations

import colorsys
from dataclasses import replace
from typing import Any

from parity.report.html.chart import Chart

SEPARATOR = " · "
# Base hues (0..1) of the first runs: blue, orange, green, purple, red, teal, gold, pink.
RUN_HUES = (0.60, 0.07, 0.33, 0.78, 0.99, 0.50, 0.13, 0.90)


def run_hue(index: int) -> float:
    """The hue of run ``index``: :data:`RUN_HUES`, then evenly between them."""
    if index < len(RUN_HUES):
        return RUN_HUES[index]
    return (RUN_HUES[index % len(RUN_HUES)] + 0.5 / (1 + index // len(RUN_HUES))) % 1.0


def run_shades(index: int, count: int) -> list[str]:
    """``count`` distinct colours of run ``index``'s hue, dark to light (``#rrggbb``)."""
    base = run_hue(index)
    out = []
    for j in range(count):
        t = j / (count - 1) if count > 1 else 0.4
        hue = (base + 0.05 * (t - 0.5)) % 1.0  # a small drift keeps neighbouring shades apart
        r, g, b = colorsys.hls_to_rgb(hue, 0.32 + 0.36 * t, 0.75 - 0.2 * t)
        out.append(f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}")
    return out


def owner(value: str, labels: list[str]) -> int | None:
    """The index of the run ``value`` names (``label`` or ``label · series``), the longest match."""
    best = None
    for i, label in enumerate(labels):
        if (value == label or value.startswith(label + SEPARATOR)) and (best is None or len(label) > len(labels[best])):
            best = i
    return best


def run_scale(values: list[str], labels: list[str]) -> dict[str, Any] | None:
    """The colour scale of series ``values``: grouped by run in the runs' order, shades of the
    run's hue; None when a value names no run or only one run is present."""
    owners = [owner(v, labels) for v in values]
    if not values or any(o is None for o in owners) or len(set(owners)) < 2:
        return None
    domain: list[str] = []
    colours: list[str] = []
    for index in range(len(labels)):
        mine = [v for v, o in zip(values, owners) if o == index]
        domain += mine
        colours += run_shades(index, len(mine))
    return {"domain": domain, "range": colours}


def _colour_fields(node: Any, data: str | None = None) -> list[tuple[dict[str, Any], str | None]]:
    """Every ``color`` encoding with a field and no scale of its own, anywhere in a spec (layers,
    concatenations, facets), with the name of the dataset it draws (None: not named)."""
    found: list[tuple[dict[str, Any], str | None]] = []
    if isinstance(node, dict):
        named = (node.get("data") or {}).get("name") if isinstance(node.get("data"), dict) else None
        data = named or data
        encoding = node.get("encoding")
        colour = encoding.get("color") if isinstance(encoding, dict) else None
        if isinstance(colour, dict) and colour.get("field") and "scale" not in colour:
            found.append((colour, data))
        for key, value in node.items():
            if key not in ("datasets", "encoding", "data"):
                found += _colour_fields(value, data)
    elif isinstance(node, list):
        for item in node:
            found += _colour_fields(item, data)
    return found


def colour_runs(chart: Chart, labels: list[str]) -> Chart:
    """``chart`` with each colour field whose values all name runs given the runs' shades (one
    scale per field, over every dataset drawn with it, so layers agree)."""
    if len(labels) < 2 or not chart.draw:
        return chart
    spec = _copy(chart.spec)
    datasets = spec.get("datasets", {})
    found = _colour_fields(spec)
    changed = False
    for name in dict.fromkeys(colour["field"] for colour, _ in found):
        drawn = {data for colour, data in found if colour["field"] == name}
        rows = [row for data, table in datasets.items() if None in drawn or data in drawn for row in table]
        values = list(dict.fromkeys(str(r[name]) for r in rows if isinstance(r, dict) and r.get(name) is not None))
        scale = run_scale(values, labels)
        if scale is None:
            continue
        for colour, _ in found:
            if colour["field"] == name:
                colour["scale"] = dict(scale)
                changed = True
    return replace(chart, spec=spec) if changed else chart


def _copy(node: Any) -> Any:
    """A copy of a spec's dicts and lists (datasets shared: they are not changed)."""
    if isinstance(node, dict):
        return {k: (v if k == "datasets" else _copy(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [_copy(v) for v in node]
    return node
