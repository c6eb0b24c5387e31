"""``parity compare`` on a store written by schema 3 (figures inside the run summaries, cases
without a declared headline) gives, after the store is migrated, exactly what it gave before:
the same cases, values, units, ratios and CIs, the same summary figures and claims, the same
terminal and Markdown text. ``tests/golden/`` holds the output of the code before the change
(regenerate with ``PARITY_UPDATE_GOLDEN=1`` only when a change of output is intended)."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from legacy_store import write_v3_store

from parity.cli.main import main

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PARITY_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


def test_compare_of_runs_stored_before_the_figures_table_is_unchanged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    db = tmp_path / "v3.sqlite"
    a, b = write_v3_store(db)
    js, md = tmp_path / "cmp.json", tmp_path / "cmp.md"
    with pytest.raises(SystemExit) as info:
        main(["compare", a, b, "--db", str(db), "--json", str(js), "--markdown", str(md)])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    document = orjson.loads(js.read_bytes())
    _check("compare_v3.json", orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n")
    _check("compare_v3.md", md.read_text())
    _check("compare_v3.txt", out)
