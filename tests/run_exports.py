"""A small stored run and its export, written by tests of the import paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from parity.model.figure import Figure
from parity.model.result import CaseResult
from parity.model.samples import Samples
from parity.store import Store


def stored_run(store: Store) -> str:
    """A small complete run: one case with raw samples, a headline and a figure."""
    run = store.create_run(config={"device": "cpu", "suites": ["demo"], "quick": True},
                           provenance={"host": {"affinity": "0-1"}})
    store.add_case(run.run_id, CaseResult(
        suite="demo", key="case/1", params={"bytes": 4096},
        samples={"main": Samples(values_s=(0.002, 0.001, 0.003), method="host-clock")},
        metrics={"median_s": 0.002, "bytes_per_s": 2.048e6, "strategy": "host-clock", "ci95_s": [0.001, 0.003],
                 "headline_metric": "bytes_per_s"},
        check={"passed": True}))
    store.add_figures(run.run_id, "demo", [Figure(name="bandwidth", value=2.048e6, unit="B/s", method="median",
                                                  scope={"case": "case/1"})])
    store.finish_run(run.run_id, status="complete", summary={"ok": True})
    return run.run_id


def valid_document(tmp_path: Path) -> dict[str, Any]:
    """A run export as ``parity runs export --format json`` writes it."""
    with Store.open(tmp_path / "source.sqlite") as store:
        run_id = stored_run(store)
        path = store.export(run_id, "json", tmp_path / "run.json")
    return orjson.loads(path.read_bytes())
