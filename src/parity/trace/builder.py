"""Build an :class:`ActivityTable` from plain rows: for tests, synthetic cases and small tools.

Readers build tables from columns directly; this is the readable way to write a handful of
activities by hand (``build_table([dict(stream=7, name="gemm", start_ns=0, end_ns=10)])``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from parity.trace.table import NO_ID, ActivityTable, Kind


def build_table(rows: Iterable[Mapping[str, Any]], *, meta: dict | None = None) -> ActivityTable:
    """One table row per mapping with keys ``name``, ``start_ns``, ``end_ns`` and optionally
    ``stream`` (0), ``kind`` (``Kind.KERNEL``), ``rank`` (0), ``device`` (0 for device kinds,
    -1 otherwise), ``correlation`` and ``step`` (-1), plus any extra column names (filled with
    ``None`` where a row lacks them)."""
    rows = list(rows)
    names: dict[str, int] = {}
    base = set(ActivityTable.COLUMNS) | {"name"}
    extra_keys = sorted({k for r in rows for k in r} - base)
    cols: dict[str, list] = {c: [] for c in ActivityTable.COLUMNS}
    extra: dict[str, list] = {k: [] for k in extra_keys}
    for r in rows:
        kind = Kind(r.get("kind", Kind.KERNEL))
        cols["rank"].append(r.get("rank", 0))
        cols["device"].append(r.get("device", 0 if kind.on_device else -1))
        cols["stream"].append(r.get("stream", 0))
        cols["kind"].append(int(kind))
        cols["name_id"].append(names.setdefault(r["name"], len(names)))
        cols["start_ns"].append(r["start_ns"])
        cols["end_ns"].append(r["end_ns"])
        cols["correlation"].append(r.get("correlation", NO_ID))
        cols["step"].append(r.get("step", -1))
        for k in extra_keys:
            extra[k].append(r.get(k))
    dtypes = dict(rank=np.int32, device=np.int32, stream=np.int64, kind=np.int8, name_id=np.int32,
                  start_ns=np.int64, end_ns=np.int64, correlation=np.int64, step=np.int32)
    return ActivityTable(
        **{c: np.array(v, dtype=dtypes[c]) for c, v in cols.items()},
        names=tuple(names),
        extra={k: _extra_array(v) for k, v in extra.items()},
        meta=dict(meta or {"format": "synthetic", "source": "<built>"}),
    )


def _extra_array(values: list) -> np.ndarray:
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        return np.array(values, dtype=np.int64)
    return np.array(values, dtype=object)
