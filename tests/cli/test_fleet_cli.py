"""``parity trace fleet``: the map then the reduce, progress on stderr, --json, one-line errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from parity.cli.main import cli, main

pytest.importorskip("pyarrow")
RANKS = "kineto/hta/trace_filter"


@pytest.fixture()
def reduce_calls(monkeypatch) -> list[tuple]:
    """The real reduce, its calls recorded."""
    from parity.trace.fleet import reduce as reduce_module

    calls: list[tuple] = []
    real = reduce_module.reduce_fleet

    def recorded(out, *, ranks_per_node=None):
        calls.append((out, ranks_per_node))
        return real(out, ranks_per_node=ranks_per_node)

    monkeypatch.setattr(reduce_module, "reduce_fleet", recorded)
    return calls


def _run(*args: str):
    return CliRunner().invoke(cli, ["trace", "fleet", *args])


def _error(capsys, *args: str) -> str:
    """What the installed command prints for an error (``main``: one line, status 2)."""
    with pytest.raises(SystemExit) as exited:
        main(["trace", "fleet", *args])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    return err


def test_maps_every_rank_then_reduces(traces_dir: Path, tmp_path: Path, reduce_calls) -> None:
    out, doc = tmp_path / "fleet", tmp_path / "fleet.json"
    result = _run(str(traces_dir / RANKS), "--out", str(out), "--workers", "2", "--ranks-per-node", "8",
                  "--json", str(doc))
    assert result.exit_code == 0, result.output
    assert reduce_calls == [(str(out), 8)]
    document = json.loads(doc.read_text())
    assert document["kind"] == "trace-fleet" and "schema_version" in document
    assert [r["rank"] for r in document["ranks"]] == [0, 1] and document["summary"]["ranks"] == 2
    assert document["summary"] == json.loads((out / "fleet.json").read_text())
    assert len(list((out / "map" / "collectives").glob("rank-*.parquet"))) == 2
    assert "mapped 2 ranks" in result.output
    assert "2 ranks, 10 matched collectives" in result.output and "stragglers by arrival order" in result.output


@pytest.mark.parametrize("setup, message", [
    (lambda tmp: tmp / "missing", "no such file or folder"),
    (lambda tmp: tmp, "folder holds no trace files"),
])  # fmt: skip
def test_bad_paths_are_one_line_errors(tmp_path: Path, setup, message: str, reduce_calls, capsys) -> None:
    assert message in _error(capsys, str(setup(tmp_path)), "--out", str(tmp_path / "out"))


def test_missing_extras_name_the_extra(traces_dir: Path, tmp_path: Path, monkeypatch, reduce_calls, capsys) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    assert "parity[fleet]" in _error(capsys, str(traces_dir / RANKS), "--out", str(tmp_path / "out"), "--dask", "local")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    err = _error(capsys, str(traces_dir / RANKS), "--out", str(tmp_path / "out"))
    assert "pyarrow" in err and "parity[fleet]" in err


def test_a_synthetic_job_through_the_command_local_and_dask(tmp_path: Path) -> None:
    """Eight Kineto rank files with a slow rank (2) and a rank late every third step (5): the
    command names both, and a LocalCluster run writes the same files, fleet.json included."""
    from parity.trace.fleet.synthetic import write_fleet

    truth = write_fleet(tmp_path / "traces", ranks=8, steps=60, segments=1, slow_rank=2, late_rank=5,
                        late_every=3, seed=3)
    outs = {}
    for name, extra in (("local", []), ("dask", ["--dask", "local"])):
        outs[name] = tmp_path / name
        result = _run(str(tmp_path / "traces"), "--out", str(outs[name]), "--workers", "2", *extra)
        assert result.exit_code == 0, result.output
    summary = json.loads((outs["local"] / "fleet.json").read_text())
    assert tuple(summary["stragglers"]) == truth.stragglers == (2, 5)
    files = {name: {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
             for name, out in outs.items()}
    assert "fleet.json" in files["local"] and "stragglers.parquet" in files["local"]
    assert files["local"] == files["dask"]
