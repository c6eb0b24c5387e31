"""Data steps of schema migrations: what a new table or column needs from the rows an older
parity wrote. Each runs inside the migration's transaction, after the step's statements."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import orjson

from parity.store.figures import INSERT_FIGURE, figure_row, summary_figures, with_case_findings
from parity.store.headlines import declared_before, declared_decode, declared_medians, medians_weights
from parity.store.rows import case_findings, dump_json


def _load(text: str | None) -> Any:
    """A column's JSON, or None where it does not parse (that row is left as it is)."""
    try:
        return orjson.loads(text) if text else None
    except orjson.JSONDecodeError:
        return None


def figures_from_summaries(conn: sqlite3.Connection) -> None:
    """Schema 4: every run's figures, read from its stored summary into the figures table (a
    figure of a case with the case's findings), and each case's headline as compare chose it
    then (``parity.store.headlines``)."""
    for run_id, updated, summary in conn.execute("SELECT id, updated_at, summary FROM runs").fetchall():
        figures = summary_figures(_load(summary))
        for suite in dict.fromkeys(f.suite for f in figures):
            of_suite = with_case_findings([f for f in figures if f.suite == suite], case_findings(conn, run_id, suite))
            conn.executemany(INSERT_FIGURE, [figure_row(run_id, f, updated, dump_json) for f in of_suite])
    _declare(conn, declared_before)


def decode_headlines(conn: sqlite3.Connection) -> None:
    """Schema 5: each offline decode case's headline, its tokens/s per card
    (``parity.store.headlines.declared_decode``), which cases stored before did not declare."""
    _declare(conn, declared_decode)


def sample_medians(conn: sqlite3.Connection) -> None:
    """Schema 6: the sample sets and weights a latency slope or a decode step is made of
    (``parity.store.headlines.declared_medians``), where the case's own samples give back its
    headline; compare resamples them for a within-run CI."""
    for case_id, metrics_text in conn.execute("SELECT id, metrics FROM cases").fetchall():
        metrics = _load(metrics_text)
        if not isinstance(metrics, dict) or not medians_weights(metrics):
            continue  # most cases: their samples are not read
        row = conn.execute("SELECT samples FROM cases WHERE id = ?", (case_id,)).fetchone()
        samples = _load(row[0]) if row else None
        if not isinstance(samples, dict):
            continue
        added = declared_medians(metrics, set_times(samples))
        if added:
            conn.execute("UPDATE cases SET metrics = ? WHERE id = ?", (dump_json({**metrics, **added}), case_id))


def set_times(samples: dict[str, Any]) -> dict[str, list[float]]:
    """Each stored sample set's raw times (``values_s``; sets without numbers left out)."""
    out = {}
    for name, data in samples.items():
        values = data.get("values_s") if isinstance(data, dict) else None
        if isinstance(values, list) and all(isinstance(v, (int, float)) for v in values):
            out[str(name)] = values
    return out


def _declare(conn: sqlite3.Connection, declared: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Add to each case's metrics what ``declared`` gives for them (nothing: the row is left)."""
    for case_id, metrics_text in conn.execute("SELECT id, metrics FROM cases").fetchall():
        metrics = _load(metrics_text)
        added = declared(metrics) if isinstance(metrics, dict) else {}
        if added:
            conn.execute("UPDATE cases SET metrics = ? WHERE id = ?", (dump_json({**metrics, **added}), case_id))


# After the statements of MIGRATIONS[n] (version n to n + 1): the data step, if any.
BACKFILLS: dict[int, Callable[[sqlite3.Connection], None]] = {3: figures_from_summaries, 4: decode_headlines,
                                                              5: sample_medians}
