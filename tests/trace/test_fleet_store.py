"""Fleet analyses in the results store and ``parity compare`` of two fleets: the stored headline
by hand, ids and ``fleet:latest``, the schema 2 -> 3 upgrade, the comparison's lines, the CLI
on stored ids and on folders, and no torch, device, timing or bench module on that path."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from parity.cli.main import main
from parity.compare import FleetInput, compare_fleets
from parity.model.errors import ParityError
from parity.store import STORE_VERSION, Store
from parity.cli.fleet_store import store_fleet
from parity.store.fleet_analyses import get_fleet_analysis, list_fleet_analyses
from parity.trace.fleet.folder import rank_paths
from parity.store.schema import MIGRATIONS
from parity.trace.fleet.folder import fleet_headline, read_fleet_folder, straggler_rows
from tests.fleet_report_rows import write_fleet_folder

pytest.importorskip("pyarrow")
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fleets(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two fleets of 4 ranks: ``a`` with rank 3 late by 10, 20, 30 us; ``b`` with rank 1 late by 20, 40, 60 us."""
    tmp = tmp_path_factory.mktemp("fleets")
    return write_fleet_folder(tmp / "a"), write_fleet_folder(tmp / "b", late=1, late_ns=20_000)


def parity(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def test_store_fleet_keeps_the_headline_queryable(fleets: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = fleets
    db = tmp_path / "r.sqlite"
    stored = store_fleet(db, a, label="job-a", paths=[str(tmp_path / "rank0.json")])
    assert stored.analysis_id.startswith("fleet-") and stored.label == "job-a" and stored.out_dir == str(a.resolve())
    assert stored.paths == (str(tmp_path / "rank0.json"),) and stored.ranks == 4 and stored.ranks_per_node == 2
    assert stored.headline["skew_median_ns"] == 20_000 and stored.headline["wait_total_ns"] == 359_820
    assert stored.stragglers[0]["rank"] == 3 and stored.stragglers[0]["step_cost_ns"] == 39_960
    assert stored.summary["findings"][0]["code"] == "straggler-by-arrival"
    with Store.open(db) as store:
        row = store.query("SELECT ranks, ranks_per_node, skew_median_ns, skew_p99_ns, wait_total_ns, straggler_ranks,"
                          " json_extract(ops, '$[1].busbw_median_bps') FROM fleet_analyses")
        assert row == [(4, 2, 20_000.0, 30_000.0, 359_820, "[3]", pytest.approx((1 << 20) / 50e-6 * 1.5))]
        again = store_fleet(db, a)  # default label: the folder's name; no map/ folder: no rank files known
        assert again.label == "a" and again.paths == ()
        assert get_fleet_analysis(store, "fleet:latest").analysis_id == again.analysis_id
        assert get_fleet_analysis(store, "fleet:latest~0").analysis_id == again.analysis_id
        assert get_fleet_analysis(store, "fleet:latest~1").analysis_id == stored.analysis_id  # as runs' latest~1
        with pytest.raises(ParityError, match="holds 2 fleet analyses; there is no fleet:latest~2"):
            get_fleet_analysis(store, "fleet:latest~2")
        with pytest.raises(ParityError, match="write fleet:latest~N with N a number"):
            get_fleet_analysis(store, "fleet:latest~x")
        assert get_fleet_analysis(store, stored.analysis_id).label == "job-a"
        assert [f.analysis_id for f in list_fleet_analyses(store)] == [again.analysis_id, stored.analysis_id]
        with pytest.raises(ParityError, match="no fleet analysis 'fleet-nope'") as info:
            get_fleet_analysis(store, "fleet-nope")
        assert "\n" not in str(info.value)
        with pytest.raises(ParityError, match="ambiguous"):
            get_fleet_analysis(store, "fleet-")
    with Store.open(tmp_path / "empty.sqlite") as store, pytest.raises(ParityError, match="no fleet analyses in"):
        get_fleet_analysis(store, "fleet:latest")


def test_rank_files_come_from_the_map_when_not_given(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = write_fleet_folder(tmp_path / "out")
    (out / "map" / "rank_info").mkdir(parents=True)
    for rank in (1, 0):
        pq.write_table(pa.table({"rank": [rank], "source": [f"/traces/rank{rank}.json.gz"]}),
                       out / "map" / "rank_info" / f"rank-{rank:06d}.parquet")
    assert rank_paths(out, {}) == ["/traces/rank0.json.gz", "/traces/rank1.json.gz"]
    assert rank_paths(out, {"paths": ["x.json"]}) == ["x.json"]
    assert store_fleet(tmp_path / "r.sqlite", out).paths == ("/traces/rank0.json.gz", "/traces/rank1.json.gz")


def test_a_version_2_store_gains_the_fleet_table_and_keeps_its_trace_analyses(tmp_path: Path) -> None:
    path = tmp_path / "v2.sqlite"
    conn = sqlite3.connect(path)
    for version in (0, 1):
        for statement in MIGRATIONS[version]:
            conn.execute(statement)
    conn.execute("INSERT INTO trace_analyses VALUES ('trace-1', '2026-01-01', 'l', '[]', 'ab', 'kineto', '{}', '{}',"
                 " '{}', '[]', '{}')")
    conn.execute("PRAGMA application_id = 1347572825")
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    with Store.open(path) as store:
        assert store.query("SELECT id FROM trace_analyses") == [("trace-1",)]
        assert store.query("SELECT count(*) FROM fleet_analyses") == [(0,)]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == STORE_VERSION >= 3
    conn.close()


def _input(folder: Path) -> FleetInput:
    f = read_fleet_folder(folder)
    return FleetInput(label=folder.name, headline=fleet_headline(f), stragglers=tuple(straggler_rows(f)),
                      out_dir=f.out_dir)


def test_compare_fleets_sets_skew_wait_busbw_and_stragglers_side_by_side(fleets: tuple[Path, Path]) -> None:
    doc = compare_fleets([_input(p) for p in fleets]).to_dict()
    assert doc["kind"] == "fleets" and [r["label"] for r in doc["runs"]] == ["a", "b"]
    rows = {(c["suite"], c["key"]): c for c in doc["cases"]}
    # b: late by 20, 40, 60 us at each op, so skews 20k..60k: median 40 us, twice a's 20 us
    assert rows[("fleet", "arrival skew, median")]["values"] == [pytest.approx(20e-6), pytest.approx(40e-6)]
    assert rows[("fleet", "arrival skew, median")]["ratio"] == pytest.approx(2.0)
    # b's waits per collective: rank 1 late by L, ranks 0, 2, 3 at +0, +20, +30 ns: 3L - 50
    wait_b = 2 * sum(3 * L - 50 for L in (20_000, 40_000, 60_000))
    assert rows[("fleet", "wait, all ranks")]["values"] == [pytest.approx(359_820e-9), pytest.approx(wait_b * 1e-9)]
    # 6 matched collectives each (2 ops x 3): the wait per collective is the total / 6
    assert rows[("fleet", "wait per collective")]["values"] == [pytest.approx(59_970e-9), pytest.approx(wait_b / 6e9)]
    assert rows[("op all_gather", "wait per collective")]["values"][0] == pytest.approx(179_910e-9 / 3)
    assert rows[("op all_reduce", "busbw, median")]["values"] == [pytest.approx((1 << 20) / 50e-6 * 1.5)] * 2
    assert rows[("op all_gather", "wait")]["values"][0] == pytest.approx(179_910e-9)
    assert rows[("straggler", "rank 3: times last")]["values"] == [6, 0]
    assert rows[("straggler", "rank 1: times last")]["values"] == [0, 6]
    assert rows[("straggler", "rank 1: step cost")]["values"][1] == pytest.approx(2 * (40_000 - 30) * 1e-9)
    # the time it kept its collectives waiting: its margin L - 30 ns at both ops of each step
    held = 2 * sum(L - 30 for L in (20_000, 40_000, 60_000))
    assert rows[("straggler", "rank 1: time held")]["values"] == [0, pytest.approx(held * 1e-9)]
    assert doc["audit"] == []  # same ranks, nodes, ops and method
    assert "a: 4 ranks, median skew 20 us, stragglers 3" in doc["claims"][0]
    with pytest.raises(ParityError, match="at least two fleet"):
        compare_fleets([_input(fleets[0])])


def test_fleets_of_other_collective_counts_are_audited_and_compared_per_collective(fleets: tuple[Path, Path]) -> None:
    # the same fleet with its traces holding a third of the collectives (one step where there were
    # three) and a third of the wait: the total reads 3x less, the wait per collective the same
    a = _input(fleets[0])
    head = dict(a.headline, collectives=2, wait_total_ns=a.headline["wait_total_ns"] / 3)
    doc = compare_fleets([a, FleetInput(label="short", headline=head, stragglers=a.stragglers)]).to_dict()
    rows = {(c["suite"], c["key"]): c for c in doc["cases"]}
    assert rows[("fleet", "wait, all ranks")]["ratio"] == pytest.approx(1 / 3)
    assert rows[("fleet", "wait per collective")]["ratio"] == pytest.approx(1.0)
    audit = next(e for e in doc["audit"] if e["condition"] == "matched collectives")
    assert audit["values"] == [6, 2] and "wait per collective" in audit["matters"]


def test_a_fleet_with_clock_suspect_ops_is_audited_and_its_doubted_straggler_marked(fleets: tuple[Path, Path]) -> None:
    a = _input(fleets[0])
    summary = dict(a.summary, findings={"clock_offset_suspected": {"count": 6, "ranks": 3, "examples": []}})
    head = dict(a.headline, straggler_ranks_in_doubt=[3])
    doc = compare_fleets([a, FleetInput(label="offset", headline=head, stragglers=a.stragglers,
                                        summary=summary)]).to_dict()
    audit = next(e for e in doc["audit"] if e["condition"] == "clock-suspect ops")
    assert audit["values"] == [0, 6] and "clock offset" in audit["matters"]
    assert "offset: 4 ranks, median skew 20 us, stragglers 3 (in doubt: clock offset)" in doc["claims"][0]
    # two fleets with the same offsets: still listed, as contention is for runs
    same = FleetInput(label="again", headline=head, stragglers=a.stragglers, summary=summary)
    doc = compare_fleets([same, same]).to_dict()
    assert [(e["condition"], e["values"]) for e in doc["audit"]] == [("clock-suspect ops", [6, 6])]


def test_wait_per_collective_hand_cases() -> None:
    from parity.compare.fleets import wait_per_collective

    assert wait_per_collective(359_820, 6) == 59_970.0
    assert wait_per_collective(0, 4) == 0.0
    assert wait_per_collective(None, 6) is None and wait_per_collective(100, 0) is None


def test_compare_cli_on_stored_fleets_and_on_folders(capsys: pytest.CaptureFixture[str], fleets: tuple[Path, Path],
                                                     db_path: Path, tmp_path: Path) -> None:
    first = store_fleet(db_path, fleets[0], label="before")
    store_fleet(db_path, fleets[1], label="after")
    js, md = tmp_path / "cmp.json", tmp_path / "cmp.md"
    status, out, err = parity(capsys, "compare", first.analysis_id, "fleet:latest", "--json", str(js), "--markdown", str(md))
    assert status == 0, err
    doc = orjson.loads(js.read_bytes())
    assert [r["label"] for r in doc["runs"]] == ["before", "after"] and doc["runs"][0]["id"] == first.analysis_id
    assert "arrival skew, median" in out and "4 ranks, 2 per node" in out
    assert "| before |" in md.read_text() and "4 ranks" in md.read_text()
    assert "each ratio is the figure of after over that of before, not a speed" in doc["claims"][0]
    status, out, err = parity(capsys, "compare", "fleet:latest~1", "fleet:latest", "--json", str(js))
    assert status == 0, err  # a fleet's latest~N is a fleet, not a run
    assert [r["id"] for r in orjson.loads(js.read_bytes())["runs"]][0] == first.analysis_id
    status, _, err = parity(capsys, "compare", str(fleets[0]), str(fleets[1]), "--json", str(js))
    assert status == 0, err
    assert [r["label"] for r in orjson.loads(js.read_bytes())["runs"]] == ["a", "b"]
    status, _, err = parity(capsys, "compare", first.analysis_id, "latest")
    assert status == 2 and "not a mix" in err and err.count("\n") == 1
    status, _, err = parity(capsys, "compare", first.analysis_id, "fleet:latest", "--rank", "1")
    assert status == 2 and "drop them to compare fleets" in err


def test_fleet_compare_store_and_report_load_no_torch_device_timing_or_bench(fleets: tuple[Path, Path]) -> None:
    code = f"""
import sys
from parity.cli import compare, report
from parity.compare import compare_fleets
from parity.report.html import report_data
from parity.report.html.fleet_charts import fleet_charts
from parity.cli.fleet_store import store_fleet
from parity.trace.fleet.folder import read_fleet_folder
report_data(fleets=[read_fleet_folder({str(fleets[0])!r})])
bad = sorted(m for m in sys.modules if m == "torch" or m.startswith(("torch.", "parity.device", "parity.timing", "parity.harness", "parity.families", "parity.ceilings")))
assert not bad, bad
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}, check=False)
    assert result.returncode == 0, result.stderr


def test_trace_fleet_store_keeps_the_fleet_for_compare(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                       db_path: Path) -> None:
    """``parity trace fleet ... --store`` on a synthetic job (rank 2 slower in compute), twice:
    the stored fleets carry their rank files and stragglers, and compare sets them side by side."""
    from parity.trace.fleet.synthetic import write_fleet

    truth = write_fleet(tmp_path / "ranks", ranks=4, steps=6, slow_rank=2, seed=5)
    js = tmp_path / "fleet.json"
    status, out, err = parity(capsys, "trace", "fleet", str(tmp_path / "ranks"), "--out", str(tmp_path / "out"),
                              "--workers", "1", "--ranks-per-node", "2", "--store", "--label", "job-a",
                              "--json", str(js))
    assert status == 0, err
    stored = orjson.loads(js.read_bytes())["stored"]
    assert stored["label"] == "job-a" and stored["ranks"] == 4 and f"stored as {stored['id']}" in out + err
    with Store.open(db_path) as store:
        kept = get_fleet_analysis(store, stored["id"])
    assert sorted(kept.paths) == sorted(str(Path(p).resolve()) for p in truth.paths)
    assert kept.ranks_per_node == 2 and 2 in kept.headline["straggler_ranks"]
    status, _, err = parity(capsys, "trace", "fleet", str(tmp_path / "ranks"), "--out", str(tmp_path / "out2"),
                            "--workers", "1", "--store")
    assert status == 0, err
    status, out, err = parity(capsys, "compare", stored["id"], "fleet:latest", "--json", str(tmp_path / "c.json"))
    assert status == 0, err
    doc = orjson.loads((tmp_path / "c.json").read_bytes())
    assert [r["label"] for r in doc["runs"]] == ["job-a", "out2"]
    assert any(a["condition"] == "ranks per node" for a in doc["audit"])  # 2 against not given
